//! `kendall_candidate_pairs(pairs, matrix [, right])`: only the listed
//! pairs — the enhancer–gene candidates near each gene, a curated
//! interaction list — within one matrix or between two (`gene_i` from
//! `matrix`, `gene_j` from `right`, samples matched by name as in
//! `kendall_cross_pairs`).
//!
//! The list is any source (table, view, file) whose first two columns hold
//! the ids of `gene_i` and `gene_j` ([`PairListSpec`] says how unknown ids,
//! repeated pairs and empty lists are treated). The matrices are planned,
//! loaded and ranked as `kendall_all_pairs` and `kendall_cross_pairs` do;
//! the listed pairs, sorted by their first gene, are split over the
//! partitions in equal runs, so each gene is scored once for its run of
//! partners (see [`crate::kernel::binary`]). Everything else — kernels,
//! options, p-values, pushed-down filters — is theirs; the q-values' family
//! is the listed pairs.
//!
//! [`PairListSpec`]: crate::input::PairListSpec

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use super::args::Args;
use super::scan::{plan_scan, require_sample_names};
use super::{Call, KendallFunction, PlannedCall, table_function_impl};
use crate::input::{self, PairListSpec};
use crate::options::KendallOptions;
use crate::schema::{self, CANDIDATE_PAIRS};

/// The table function `kendall_candidate_pairs(pairs, matrix [, right])`:
/// one row per listed pair, with the columns of `kendall_cross_pairs`.
///
/// ```sql
/// SELECT * FROM kendall_candidate_pairs('candidates.csv', 'rna.parquet', 'atac.parquet')
/// WHERE q_value < 0.05;
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct KendallCandidatePairs;

table_function_impl!(KendallCandidatePairs);

#[async_trait]
impl KendallFunction for KendallCandidatePairs {
    fn name(&self) -> &'static str {
        CANDIDATE_PAIRS
    }

    fn usage(&self) -> &'static str {
        "(pairs, matrix [, right]) takes string literals: the candidate list (a table, view, \
         file or URL whose first two columns are the ids of gene_i and gene_j), then one \
         matrix, or two whose samples are matched by name (gene_i from the first, gene_j \
         from the second)"
    }

    fn call(&self, exprs: &[Expr], options: &KendallOptions) -> Result<Call> {
        candidates_call(self, exprs, options)
    }

    fn schema(&self, call: &Call) -> SchemaRef {
        schema::pair_schema(call.gene_ids)
    }

    async fn plan(
        &self,
        call: &Call,
        state: &dyn Session,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<PlannedCall> {
        plan_candidates(call, state, filters, limit).await
    }
}

/// The call `(pairs, matrix [, right])` of `function`, one of the
/// candidate-list functions: the list, then one or two matrices.
pub(super) fn candidates_call(
    function: &dyn KendallFunction,
    exprs: &[Expr],
    options: &KendallOptions,
) -> Result<Call> {
    let args = Args::new(function, exprs, [2, 3])?;
    let mut sources = vec![
        args.string(0, "the candidate list")?,
        args.string(1, "the matrix")?,
    ];
    if args.len() == 3 {
        sources.push(args.string(2, "the right matrix")?);
    }
    Ok(Call {
        function: function.name(),
        names: vec![Vec::new(); sources.len()],
        sources,
        k: None,
        gene_ids: options.gene_ids,
        groups: None,
    })
}

/// The scan of a candidate-list call: the list's id columns, the matrix
/// (with the pushed-down `filters` and `limit`) and the right matrix.
pub(super) async fn plan_candidates(
    call: &Call,
    state: &dyn Session,
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<PlannedCall> {
    let options = KendallOptions::from_config(state.config_options())?;
    let list = input::resolve(state, &call.sources[0], options.format).await?;
    let list_spec = PairListSpec::inspect(&list.what, &list.provider.schema())?;
    let list_scan = list
        .provider
        .scan(state, Some(&vec![0, 1]), &[], None)
        .await?;
    let left = plan_scan(call.function, state, &call.sources[1], &[], filters, limit).await?;
    let right = match call.sources.get(2) {
        Some(source) => Some(plan_scan(call.function, state, source, &[], &[], None).await?),
        None => None,
    };
    let mut config = left.config;
    config.gene_ids = call.gene_ids;
    // The listed pairs are walked as listed (no gene-targeted walk).
    config.kernel.anchors = None;
    if let Some(right) = &right {
        require_sample_names([&left.spec, &right.spec])?;
        // The shape of the two matrices together is known once both
        // are loaded (the shared samples).
        config.planned_kernel = None;
    }
    Ok(PlannedCall {
        spec: left.spec,
        input: left.input,
        right: right.map(|r| (r.spec, r.input)),
        pair_list: Some((Arc::new(list_spec), list_scan)),
        config,
        groups: None,
    })
}

//! `kendall_candidate_taus(pairs, matrix [, right])`: a candidate list's
//! taus line by line, in the list's order — the form a pipeline step that
//! hands back one value per listed pair wants (scE2G's Kendall step).
//!
//! The list, the matrices and the pairs are `kendall_candidate_pairs`'
//! (the same ids, the same kernels, the same taus, bit for bit); only the
//! rows differ: one per line of the list, `line` (from 1) and `tau`, NULL
//! where the line names no pair of the matrices (an unknown or NULL id, a
//! gene with itself), the same tau for a pair listed twice. The rows come
//! in line order from one partition (`ORDER BY line` sorts nothing), while
//! the pairs are computed on every core (see [`crate::exec::KendallExec`]).

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use super::candidate_pairs::{candidates_call, plan_candidates};
use super::{Call, KendallFunction, PlannedCall, table_function_impl};
use crate::options::KendallOptions;
use crate::schema::{self, CANDIDATE_TAUS};

/// The table function `kendall_candidate_taus(pairs, matrix [, right])`:
/// one row per line of the candidate list, in its order: `line`, `tau`.
///
/// ```sql
/// COPY (SELECT tau FROM kendall_candidate_taus('pairs.tsv', 'rna', 'atac') ORDER BY line)
/// TO 'tau.csv';
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct KendallCandidateTaus;

table_function_impl!(KendallCandidateTaus);

#[async_trait]
impl KendallFunction for KendallCandidateTaus {
    fn name(&self) -> &'static str {
        CANDIDATE_TAUS
    }

    fn usage(&self) -> &'static str {
        "(pairs, matrix [, right]) takes string literals: the candidate list (a table, view, \
         file or URL whose first two columns are the ids of gene_i and gene_j; one row out \
         per row of it, in its order), then one matrix, or two whose samples are matched by \
         name (gene_i from the first, gene_j from the second)"
    }

    fn call(&self, exprs: &[Expr], options: &KendallOptions) -> Result<Call> {
        candidates_call(self, exprs, options)
    }

    fn schema(&self, _call: &Call) -> SchemaRef {
        schema::candidate_taus_schema()
    }

    /// A filter on tau would drop lines: the query filters the rows.
    fn pushes_down_filters(&self) -> bool {
        false
    }

    async fn plan(
        &self,
        call: &Call,
        state: &dyn Session,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<PlannedCall> {
        if call.groups.is_some() {
            return plan_err!(
                "{CANDIDATE_TAUS} gives one row per line of the list and takes no groups: \
                 unset kendall.groups, or use kendall_candidate_pairs"
            );
        }
        let mut planned = plan_candidates(call, state, &[], None).await?;
        planned.config.in_list_order = true;
        Ok(planned)
    }
}

//! `kendall_cross_pairs(left, right [, left_gene_column, right_gene_column])`:
//! every pair of a gene of one matrix with a gene of another (RNA × ATAC
//! peaks, microbiome × metabolome), on the samples both have, matched by
//! name.
//!
//! Both sources are resolved, inspected and scanned as `kendall_all_pairs`
//! does it (any input, layout and option), and read by the same load: the
//! right matrix's genes are stacked below the left one's, each on the
//! shared samples in the left matrix's order (`input::stack`), and the work
//! is the rectangle of left × right pairs ([`WorkSplit::cross`]), split over
//! the partitions by pair count, or, under a gene filter that bounds the
//! genes a pair touches, only those of its pairs ([`WorkSplit::anchors`]).
//! Everything else — kernels, missing values,
//! p-values, q-values (whose family is then the left × right pairs),
//! filters — is `kendall_all_pairs`'s own. A gene id may appear on both
//! sides (the same gene measured twice); it must be unique within a side.
//!
//! [`WorkSplit::cross`]: crate::work::WorkSplit::cross
//! [`WorkSplit::anchors`]: crate::work::WorkSplit::anchors

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use super::args::Args;
use super::scan::{plan_scan, require_sample_names};
use super::{Call, KendallFunction, PlannedCall, table_function_impl};
use crate::options::KendallOptions;
use crate::schema::{self, CROSS_PAIRS};

/// The table function `kendall_cross_pairs(left, right [, left_gene_column,
/// right_gene_column])`: one row per (left gene, right gene), with the
/// columns of `kendall_all_pairs` (`gene_i` from the left source, `gene_j`
/// from the right).
///
/// ```sql
/// SELECT * FROM kendall_cross_pairs('rna.parquet', 'atac.parquet')
/// WHERE p_value < 1e-8;
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct KendallCrossPairs;

table_function_impl!(KendallCrossPairs);

#[async_trait]
impl KendallFunction for KendallCrossPairs {
    fn name(&self) -> &'static str {
        CROSS_PAIRS
    }

    fn usage(&self) -> &'static str {
        "(left, right [, left_gene_column, right_gene_column]) takes string \
         literals: two sources (tables, views, files, directories or URLs), then optionally \
         the gene column of each (layout 'genes_as_rows')"
    }

    fn call(&self, exprs: &[Expr], options: &KendallOptions) -> Result<Call> {
        let args = Args::new(self, exprs, [2, 4])?;
        let left = args.string(0, "the left source")?;
        let right = args.string(1, "the right source")?;
        let names = args.strings_from(2, "a gene column name")?;
        let (left_names, right_names) = match names.as_slice() {
            [l, r] => (vec![l.clone()], vec![r.clone()]),
            _ => (Vec::new(), Vec::new()),
        };
        Ok(Call {
            function: CROSS_PAIRS,
            sources: vec![left, right],
            names: vec![left_names, right_names],
            k: None,
            gene_ids: options.gene_ids,
            groups: None,
        })
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
        let [left, right] = [0, 1].map(|i| (&call.sources[i], &call.names[i]));
        let left = plan_scan(CROSS_PAIRS, state, left.0, left.1, filters, limit).await?;
        let right = plan_scan(CROSS_PAIRS, state, right.0, right.1, &[], None).await?;
        require_sample_names([&left.spec, &right.spec])?;
        let mut config = left.config;
        config.gene_ids = call.gene_ids;
        // The shape of the two matrices together is known once both are
        // loaded (the shared samples). Gene filters that bound the genes a
        // pair touches walk only those pairs, as for all pairs.
        config.planned_kernel = None;
        Ok(PlannedCall {
            spec: left.spec,
            input: left.input,
            right: Some((right.spec, right.input)),
            pair_list: None,
            config,
            groups: None,
        })
    }
}

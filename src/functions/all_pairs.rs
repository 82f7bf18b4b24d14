//! `kendall_all_pairs(source [, column names])`: every pair of genes of one
//! expression matrix.

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use super::args::Args;
use super::scan::plan_scan;
use super::{Call, KendallFunction, PlannedCall, table_function_impl};
use crate::options::KendallOptions;
use crate::schema::{self, ALL_PAIRS};

/// The table function `kendall_all_pairs(source [, gene_column])`.
///
/// `source` names a table or view registered in the session, or else a
/// location DataFusion can list: a file, directory, glob or URL in Parquet,
/// CSV or TSV, plain or compressed (`kendall.format`). With the
/// default layout (`kendall.layout = 'genes_as_rows'`) it holds one row per
/// gene; `gene_column` names the gene-id column (default: the first string
/// column) and every other column is a sample. With `'genes_as_columns'`
/// every numeric column is a gene; with `'long'` the arguments after the
/// source name the gene, sample and value columns (default `gene`, `sample`,
/// `value`). The result has one row per unordered pair of distinct genes,
/// with the columns of [`schema::pair_schema`].
///
/// ```sql
/// SELECT gene_i, gene_j, tau
/// FROM kendall_all_pairs('data/demo_expression.parquet')
/// WHERE abs(tau) >= 0.8;
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct KendallAllPairs;

table_function_impl!(KendallAllPairs);

#[async_trait]
impl KendallFunction for KendallAllPairs {
    fn name(&self) -> &'static str {
        ALL_PAIRS
    }

    fn usage(&self) -> &'static str {
        "(source [, column names]) takes string literals: the source (a table, view, \
         file, directory or URL), then the gene column \
         (layout 'genes_as_rows') or the gene, sample and value columns (layout 'long')"
    }

    fn call(&self, exprs: &[Expr], options: &KendallOptions) -> Result<Call> {
        let args = Args::new(self, exprs, 1..=4)?;
        // The source is resolved and its schema checked when the query is
        // planned, where DataFusion can await a catalog or an object store.
        Ok(Call {
            function: ALL_PAIRS,
            sources: vec![args.string(0, "the source")?],
            names: vec![args.strings_from(1, "a column name")?],
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
        let planned = plan_scan(
            ALL_PAIRS,
            state,
            &call.sources[0],
            &call.names[0],
            filters,
            limit,
        )
        .await?;
        let mut config = planned.config;
        config.gene_ids = call.gene_ids;
        Ok(PlannedCall {
            spec: planned.spec,
            input: planned.input,
            right: None,
            pair_list: None,
            config,
            groups: None,
        })
    }
}

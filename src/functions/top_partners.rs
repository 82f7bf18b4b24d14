//! `kendall_top_partners(source, k [, column names])`: each gene's `k`
//! strongest partners by |tau| (the state is [`crate::exec::top_k`]).

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use super::args::Args;
use super::scan::plan_scan;
use super::{Call, KendallFunction, PlannedCall, table_function_impl};
use crate::options::KendallOptions;
use crate::schema::{self, GeneIds, TOP_PARTNERS};

/// The table function `kendall_top_partners(source, k [, column names])`:
/// one row per (gene, partner) for each gene's `k` largest |tau|, with the
/// columns of [`schema::top_partners_schema`].
///
/// `source` and the column names are as for
/// [`KendallAllPairs`](crate::KendallAllPairs), and so are all `kendall.*`
/// options; `k` is a positive integer literal.
///
/// ```sql
/// SELECT * FROM kendall_top_partners('data/demo_expression.parquet', 10);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct KendallTopPartners;

table_function_impl!(KendallTopPartners);

#[async_trait]
impl KendallFunction for KendallTopPartners {
    fn name(&self) -> &'static str {
        TOP_PARTNERS
    }

    fn usage(&self) -> &'static str {
        "(source, k [, column names]) takes the source (a string: a table, \
         view, file, directory or URL), k (a positive integer), then the column names as for \
         kendall_all_pairs"
    }

    fn call(&self, exprs: &[Expr], _options: &KendallOptions) -> Result<Call> {
        let args = Args::new(self, exprs, 2..=5)?;
        Ok(Call {
            function: TOP_PARTNERS,
            sources: vec![args.string(0, "the source")?],
            k: Some(args.positive(1, "k")?),
            names: vec![args.strings_from(2, "a column name")?],
            // Top partners' gene columns are always strings.
            gene_ids: GeneIds::String,
            groups: None,
        })
    }

    fn schema(&self, _call: &Call) -> SchemaRef {
        schema::top_partners_schema()
    }

    /// No filter is pushed down (a filter on tau would change which
    /// partners are the top k), nor a limit (rows come at the end).
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
        let planned = plan_scan(
            TOP_PARTNERS,
            state,
            &call.sources[0],
            &call.names[0],
            &[],
            None,
        )
        .await?;
        let mut config = planned.config;
        config.top_k = call.k;
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

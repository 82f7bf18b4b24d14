//! The SQL entry point: `kendall_all_pairs(source [, gene_column])`.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;

use crate::input::FN_NAME;
use crate::options::KendallOptions;
use crate::table::KendallTable;

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
/// `value`). The result has one row per
/// unordered pair of distinct genes: `(gene_i, gene_j, tau, p_value, n)`.
///
/// ```sql
/// SELECT gene_i, gene_j, tau
/// FROM kendall_all_pairs('data/demo_expression.parquet')
/// WHERE abs(tau) >= 0.8;
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct KendallAllPairs;

impl TableFunctionImpl for KendallAllPairs {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if exprs.is_empty() || exprs.len() > 4 {
            return Err(usage(format!("got {} arguments", exprs.len())));
        }
        let source = string_arg(&exprs[0], "the source", usage)?;
        let names = exprs[1..]
            .iter()
            .map(|e| string_arg(e, "a column name", usage))
            .collect::<Result<Vec<_>>>()?;
        // The source is resolved and its schema checked when the query is
        // planned (`KendallTable::scan`), where DataFusion can await a
        // catalog or an object store.
        // The gene columns' type is part of the schema, fixed now.
        let options = KendallOptions::from_config(args.session().config_options())?;
        Ok(Arc::new(
            KendallTable::new(source, names).with_gene_ids(options.gene_ids),
        ))
    }
}

fn usage(problem: String) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{FN_NAME}(source [, column names]) takes string literals: the source (a table, view, \
         file, directory or URL), then the gene column \
         (layout 'genes_as_rows') or the gene, sample and value columns (layout 'long'): {problem}"
    ))
}

/// A table function's constant string argument `name`; what is wrong with
/// it goes through `usage` (the function's own usage message).
pub(crate) fn string_arg(
    expr: &Expr,
    name: &str,
    usage: impl Fn(String) -> DataFusionError,
) -> Result<String> {
    match expr {
        Expr::Literal(value, _) => match value.try_as_str() {
            Some(Some(s)) => Ok(s.to_string()),
            Some(None) => Err(usage(format!("{name} is NULL"))),
            None => Err(usage(format!(
                "{name} must be a string, got {} {value}",
                value.data_type()
            ))),
        },
        other => Err(usage(format!(
            "{name} must be a constant string, got the expression {other}"
        ))),
    }
}

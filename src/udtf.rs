//! The SQL entry point: `kendall_all_pairs(path [, gene_column])`.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;

use crate::input::{self, FN_NAME};
use crate::table::KendallTable;

/// The table function `kendall_all_pairs(path [, gene_column])`.
///
/// `path` is a Parquet file or a directory of Parquet files holding one row
/// per gene; `gene_column` names the gene-id column (default: the first
/// string column). Every other column is a sample. The result has one row per
/// unordered pair of distinct genes: `(gene_i, gene_j, tau)`.
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
        if exprs.is_empty() || exprs.len() > 2 {
            return Err(usage(format!("got {} arguments", exprs.len())));
        }
        let path = string_arg(&exprs[0], "path")?;
        let gene_column = exprs
            .get(1)
            .map(|e| string_arg(e, "gene_column"))
            .transpose()?;
        let spec = input::inspect(&path, gene_column.as_deref())?;
        Ok(Arc::new(KendallTable::new(spec)))
    }
}

fn usage(problem: String) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{FN_NAME}(path [, gene_column]) takes 1 or 2 string literals: {problem}"
    ))
}

fn string_arg(expr: &Expr, name: &str) -> Result<String> {
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

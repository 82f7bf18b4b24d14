//! `kendall_cross_pairs(left, right [, left_gene_column, right_gene_column])`:
//! every pair of a gene of one matrix with a gene of another (RNA × ATAC
//! peaks, microbiome × metabolome), on the samples both have, matched by
//! name.
//!
//! Both sources are resolved, inspected and scanned as `kendall_all_pairs`
//! does it (any input, layout and option), and read by the same load: the
//! right matrix's genes are stacked below the left one's, each on the
//! shared samples in the left matrix's order, and the work is the
//! rectangle of left × right pairs ([`WorkSplit::cross`]), split over the
//! partitions by pair count. Everything else — kernels, missing values,
//! p-values, q-values (whose family is then the left × right pairs),
//! filters — is `kendall_all_pairs`'s own. A gene id may appear on both
//! sides (the same gene measured twice); it must be unique within a side.
//!
//! [`WorkSplit::cross`]: crate::work::WorkSplit::cross

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;

use crate::exec::KendallExec;
use crate::input::{ExpressionMatrix, InputSpec};
use crate::memory::QueryMemory;
use crate::options::KendallOptions;
use crate::table::{GeneIds, guard_panics, output_schema_for, plan_scan, pushdown};
use crate::udtf::string_arg;

/// The SQL name of the cross-matrix table function.
pub const CROSS_NAME: &str = "kendall_cross_pairs";

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

impl TableFunctionImpl for KendallCrossPairs {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if exprs.len() != 2 && exprs.len() != 4 {
            return Err(usage(format!("got {} arguments", exprs.len())));
        }
        let left = string_arg(&exprs[0], "the left source", usage)?;
        let right = string_arg(&exprs[1], "the right source", usage)?;
        let names = exprs[2..]
            .iter()
            .map(|e| string_arg(e, "a gene column name", usage))
            .collect::<Result<Vec<_>>>()?;
        // The gene columns' type is part of the schema, fixed now.
        let gene_ids = KendallOptions::from_config(args.session().config_options())?.gene_ids;
        let (left_names, right_names) = match names.as_slice() {
            [l, r] => (vec![l.clone()], vec![r.clone()]),
            _ => (Vec::new(), Vec::new()),
        };
        Ok(Arc::new(KendallCrossTable::new(
            left,
            right,
            left_names,
            right_names,
            gene_ids,
        )))
    }
}

fn usage(problem: String) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{CROSS_NAME}(left, right [, left_gene_column, right_gene_column]) takes string \
         literals: two sources (tables, views, files, directories or URLs), then optionally \
         the gene column of each (layout 'genes_as_rows'): {problem}"
    ))
}

/// Every (left gene, right gene) pair of two expression matrices.
#[derive(Debug)]
pub struct KendallCrossTable {
    pub(crate) left: String,
    pub(crate) right: String,
    pub(crate) left_names: Vec<String>,
    pub(crate) right_names: Vec<String>,
    /// Fixed when the function is called (the schema depends on it).
    pub(crate) gene_ids: GeneIds,
    schema: SchemaRef,
}

impl KendallCrossTable {
    /// The pairs of `left`'s genes with `right`'s, the gene columns named
    /// by `left_names` and `right_names` (one each, or none).
    pub(crate) fn new(
        left: String,
        right: String,
        left_names: Vec<String>,
        right_names: Vec<String>,
        gene_ids: GeneIds,
    ) -> Self {
        Self {
            left,
            right,
            left_names,
            right_names,
            gene_ids,
            schema: output_schema_for(gene_ids),
        }
    }
}

#[async_trait]
impl TableProvider for KendallCrossTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(pushdown(filters))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let left = guard_panics(
            CROSS_NAME,
            &self.left,
            plan_scan(state, &self.left, &self.left_names, filters, limit),
        )
        .await?;
        let right = guard_panics(
            CROSS_NAME,
            &self.right,
            plan_scan(state, &self.right, &self.right_names, &[], None),
        )
        .await?;
        for spec in [&left.spec, &right.spec] {
            if !spec.names_samples() {
                return plan_err!(
                    "{CROSS_NAME}: {} has layout 'genes_as_columns', whose samples (rows) have no \
                     names; samples are matched by name: use layout 'genes_as_rows' or 'long'",
                    spec.what
                );
            }
        }
        let mut config = left.config;
        config.gene_ids = self.gene_ids;
        // The shapes of the two matrices together are known once loaded;
        // gene filters are applied to each pair (no gene-targeted walk).
        config.planned_kernel = None;
        config.kernel.anchors = None;
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        Ok(Arc::new(
            KendallExec::try_new(left.spec, left.input, config, projection)?
                .with_right(right.spec, right.input),
        ))
    }
}

/// The left matrix's genes, then the right one's, on the samples both have
/// (by name, in the left matrix's order). An error when fewer than 2
/// samples are shared.
pub(crate) fn stack(
    left: ExpressionMatrix,
    left_spec: &InputSpec,
    right: ExpressionMatrix,
    right_spec: &InputSpec,
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    let right_index: HashMap<&str, usize> = right
        .sample_ids
        .iter()
        .enumerate()
        .map(|(k, s)| (s.as_str(), k))
        .collect();
    // (left column, right column) of each shared sample.
    let shared: Vec<(usize, usize)> = left
        .sample_ids
        .iter()
        .enumerate()
        .filter_map(|(k, s)| right_index.get(s.as_str()).map(|&r| (k, r)))
        .collect();
    if shared.len() < 2 {
        return Err(DataFusionError::Execution(format!(
            "{CROSS_NAME}: {} and {} share {} sample name(s) ({} and {} samples); \
             at least 2 are needed (samples are matched by column name, or by sample id with \
             layout 'long')",
            left_spec.what,
            right_spec.what,
            shared.len(),
            left.samples,
            right.samples
        )));
    }
    let n = shared.len();
    let genes = left.genes.len() + right.genes.len();
    let exact = left.residuals.is_empty() && right.residuals.is_empty();
    let per_value = if exact { 8 } else { 10 };
    let mut reservation = memory.reserve(
        &format!("stacked input values ({genes} genes x {n} shared samples)"),
        0,
    )?;
    reservation.try_grow(genes * n * per_value)?;
    let mut values = crate::memory::try_with_capacity::<f64>(genes * n, "stacked input values")?;
    let mut residuals = if exact {
        Vec::new()
    } else {
        crate::memory::try_with_capacity::<i16>(genes * n, "stacked input values")?
    };
    let left_columns: Vec<usize> = shared.iter().map(|&(l, _)| l).collect();
    let right_columns: Vec<usize> = shared.iter().map(|&(_, r)| r).collect();
    for (matrix, columns) in [(&left, &left_columns), (&right, &right_columns)] {
        for g in 0..matrix.genes.len() {
            let row = g * matrix.samples;
            for &column in columns {
                values.push(matrix.values[row + column]);
                if !exact {
                    residuals.push(matrix.residuals.get(row + column).copied().unwrap_or(0));
                }
            }
        }
    }
    let ids = StringArray::from_iter_values(
        (0..left.genes.len())
            .map(|g| left.genes.value(g))
            .chain((0..right.genes.len()).map(|g| right.genes.value(g))),
    );
    let sample_ids = shared
        .iter()
        .map(|&(k, _)| left.sample_ids[k].clone())
        .collect();
    // The two matrices' own values are released when they are dropped here.
    Ok(ExpressionMatrix::from_parts(
        ids,
        sample_ids,
        values,
        residuals,
        reservation,
    ))
}

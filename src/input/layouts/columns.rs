//! Genes as columns: one column per gene, one row per sample (AnnData,
//! machine-learning tables).

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;

use super::grow;
use crate::error::{data_error, plan_error};
use crate::input::matrix::ExpressionMatrix;
use crate::input::missing::MissingValues;
use crate::input::names::is_text;
use crate::input::read::InputBatches;
use crate::input::spec::{Columns, InputSpec, too_few_samples};
use crate::input::values::{Exact, NumericColumn, ValueBuffer};
use crate::memory::Reservation;

/// Checks a genes_as_columns input: numeric columns are genes, string
/// columns (sample labels) are skipped, rows are samples.
pub(in crate::input) fn inspect_columns(
    what: &str,
    schema: &SchemaRef,
    names: &[String],
    missing: MissingValues,
) -> Result<InputSpec> {
    if !names.is_empty() {
        return Err(plan_error(format!(
            "layout 'genes_as_columns' takes only the source (gene ids are the column names), got {} more argument(s)",
            names.len()
        )));
    }
    let mut genes: Vec<String> = Vec::new();
    let mut projection = Vec::new();
    for (index, field) in schema.fields().iter().enumerate() {
        let dt = field.data_type();
        if dt.is_integer() || dt.is_floating() {
            if genes.contains(field.name()) {
                return Err(plan_error(format!(
                    "duplicate gene column '{}' in {what}",
                    field.name()
                )));
            }
            genes.push(field.name().clone());
            projection.push(index);
        } else if !is_text(dt) {
            return Err(plan_error(format!(
                "column '{}' in {what} has type {dt}; with layout 'genes_as_columns' every column is a gene \
                 (integer or floating-point) or a string sample label",
                field.name()
            )));
        }
    }
    Ok(InputSpec {
        what: what.to_string(),
        genes: Some(genes.len()),
        samples: None,
        columns: Columns::GenesAsColumns { genes },
        projection,
        missing,
    })
}

/// Reads a genes_as_columns input into `values`: its rows, in source order,
/// are the samples.
pub(in crate::input) fn load_columns(
    spec: &InputSpec,
    batches: InputBatches,
    genes: &[String],
    mut values: ValueBuffer,
    mut scratch: Reservation,
) -> Result<ExpressionMatrix> {
    let what = spec.what.as_str();
    let m = genes.len();
    // Row-major as read (sample after sample), transposed once all are in.
    let mut read: Vec<Exact> = Vec::new();
    let mut rows = 0usize;
    for batch in batches {
        let batch = batch?;
        let batch_rows = batch.num_rows();
        grow(
            &mut read,
            batch_rows * m,
            &mut scratch,
            "input values as read",
        )?;
        let base = read.len();
        read.resize(base + batch_rows * m, Exact::MISSING);
        for (g, gene) in genes.iter().enumerate() {
            let column = NumericColumn::read(&batch, gene, what)?;
            for r in 0..batch_rows {
                read[base + r * m + g] = column.value(r, spec.missing, || {
                    format!("gene '{gene}' in row {} of {what}", rows + r + 1)
                })?;
            }
        }
        rows += batch_rows;
    }
    if let Some(problem) = too_few_samples(what, rows) {
        return Err(data_error(problem));
    }
    let n = rows;
    values.grow_to(m * n)?;
    for (s, row) in read.chunks_exact(m.max(1)).enumerate() {
        for (g, &x) in row.iter().enumerate() {
            values.set(g * n + s, x)?;
        }
    }
    Ok(ExpressionMatrix::new(
        StringArray::from_iter_values(genes),
        n,
        values,
        Vec::new(),
    ))
}

//! Genes as rows: one row per gene, its id in the gene column, one column
//! per sample (the default layout).

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::Result;

use crate::error::{data_error, plan_error};
use crate::input::matrix::ExpressionMatrix;
use crate::input::names::{ID_OVERHEAD, column_as, column_list, is_text};
use crate::input::read::InputBatches;
use crate::input::spec::InputSpec;
use crate::input::values::{NumericColumn, ValueBuffer};
use crate::memory::Reservation;
use std::collections::hash_map::Entry;

/// Whether `dt` can hold gene ids: strings, or integers (Entrez ids) when
/// the gene column is named.
fn is_id(dt: &DataType) -> bool {
    is_text(dt) || dt.is_integer()
}

/// The gene column and sample columns of the genes_as_rows layout.
pub(in crate::input) fn rows_columns(
    what: &str,
    schema: &SchemaRef,
    gene_column: Option<&str>,
) -> Result<(String, Vec<String>)> {
    let column_list = || column_list(schema);
    let gene_field = match gene_column {
        Some(name) => {
            let field = schema.field_with_name(name).map_err(|_| {
                plan_error(format!(
                    "gene column '{name}' not found in {what} (columns: {})",
                    column_list()
                ))
            })?;
            if !is_id(field.data_type()) {
                return Err(plan_error(format!(
                    "gene column '{name}' in {what} has type {}; gene ids must be strings or integers",
                    field.data_type()
                )));
            }
            field
        }
        None => schema
            .fields()
            .iter()
            .find(|f| is_text(f.data_type()))
            .ok_or_else(|| {
                plan_error(format!(
                    "{what} has no string column to use as gene ids (columns: {}); \
                     name one (an integer column of Entrez ids, say) with \
                     the argument after the source: (source, 'gene_column')",
                    column_list()
                ))
            })?,
    };
    let mut samples = Vec::new();
    for field in schema.fields() {
        if field.name() == gene_field.name() {
            continue;
        }
        let dt = field.data_type();
        if !(dt.is_integer() || dt.is_floating()) {
            return Err(plan_error(format!(
                "sample column '{}' in {what} has type {dt}; every column except the gene column '{}' \
                 must be an integer or floating-point number (leave other columns out with a view: \
                 CREATE VIEW v AS SELECT * EXCLUDE ({}) FROM ...){}",
                field.name(),
                gene_field.name(),
                field.name(),
                if is_text(dt) {
                    "; in a CSV or TSV file one value that is not a number (NA, say) makes its \
                     column text: write missing values as empty fields"
                } else {
                    ""
                }
            )));
        }
        samples.push(field.name().clone());
    }
    if samples.len() < 2 {
        return Err(plan_error(format!(
            "{what} has {} sample column(s) besides the gene column '{}'; Kendall's tau needs at least 2 samples",
            samples.len(),
            gene_field.name()
        )));
    }
    Ok((gene_field.name().clone(), samples))
}

/// Bytes the ids of `ids` take where the genes_as_rows load keeps them (each
/// twice: in the genes' array and as a key of the index of ids seen).
fn id_bytes(ids: &StringArray) -> usize {
    let offsets = ids.value_offsets();
    let text = (offsets[ids.len()] - offsets[0]).max(0) as usize;
    text.saturating_mul(2)
        .saturating_add(ids.len().saturating_mul(ID_OVERHEAD))
}

/// Gene ids of a batch as strings (integer ids in decimal).
fn gene_ids(batch: &RecordBatch, column: &str, what: &str) -> Result<StringArray> {
    Ok(column_as(batch, column, what, &DataType::Utf8)?
        .as_string::<i32>()
        .clone())
}

/// [`load`] for the genes_as_rows layout.
pub(in crate::input) fn load_rows(
    spec: &InputSpec,
    batches: InputBatches,
    gene_column: &str,
    sample_columns: &[String],
    mut values: ValueBuffer,
    mut ids_memory: Reservation,
) -> Result<ExpressionMatrix> {
    let what = spec.what.as_str();
    let n = sample_columns.len();
    let mut genes = StringBuilder::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut row0 = 0usize;
    for batch in batches {
        let batch = batch?;
        let rows = batch.num_rows();
        let ids = gene_ids(&batch, gene_column, what)?;
        ids_memory.try_grow(id_bytes(&ids))?;
        let base = values.values.len();
        values.grow_to(base + rows * n)?;
        for r in 0..rows {
            let row = row0 + r + 1;
            if ids.is_null(r) {
                return Err(data_error(format!(
                    "gene id is null in row {row} of {what} (column '{gene_column}')"
                )));
            }
            let id = ids.value(r);
            match seen.entry(id.to_string()) {
                Entry::Occupied(first) => {
                    return Err(data_error(format!(
                        "duplicate gene id '{id}': row {} and row {row} of {what}",
                        first.get()
                    )));
                }
                Entry::Vacant(slot) => {
                    slot.insert(row);
                }
            }
            genes.append_value(id);
        }
        for (s, sample) in sample_columns.iter().enumerate() {
            let col = NumericColumn::read(&batch, sample, what)?;
            for r in 0..rows {
                let x = col.value(r, spec.missing, || {
                    format!(
                        "gene '{}' (row {} of {what}) in sample column '{sample}'",
                        ids.value(r),
                        row0 + r + 1
                    )
                })?;
                values.set(base + r * n + s, x)?;
            }
        }
        row0 += rows;
    }
    Ok(ExpressionMatrix::new(
        genes.finish(),
        n,
        values,
        sample_columns.to_vec(),
    ))
}

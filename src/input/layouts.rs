//! The other matrix layouts: one column per gene, and long (tidy) triples.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};

use super::values::{NumericColumn, ValueBuffer};
use super::{
    Columns, ExpressionMatrix, InputSpec, MissingValues, changed_error, column_as, column_list,
    data_error, is_string, plan_error,
};
use crate::memory::try_filled;

/// How the expression matrix is laid out (`SET kendall.layout = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One row per gene, one column per sample (the default).
    #[default]
    GenesAsRows,
    /// One row per sample, one column per gene (AnnData / machine learning).
    GenesAsColumns,
    /// One row per value: gene, sample, value columns (tidy data).
    Long,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::GenesAsRows => "genes_as_rows",
            Layout::GenesAsColumns => "genes_as_columns",
            Layout::Long => "long",
        })
    }
}

impl FromStr for Layout {
    type Err = DataFusionError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "genes_as_rows" => Ok(Layout::GenesAsRows),
            "genes_as_columns" => Ok(Layout::GenesAsColumns),
            "long" => Ok(Layout::Long),
            other => Err(DataFusionError::Configuration(format!(
                "kendall.layout must be one of 'genes_as_rows', 'genes_as_columns', 'long', got '{other}'"
            ))),
        }
    }
}

enum_config_field!(Layout);

/// Default column names of the long layout: gene, sample, value.
const LONG_DEFAULTS: [&str; 3] = ["gene", "sample", "value"];

/// Checks a genes_as_columns input: numeric columns are genes, string
/// columns (sample labels) are skipped, rows are samples.
pub(super) fn inspect_columns(
    path: &str,
    files: Vec<PathBuf>,
    schema: &SchemaRef,
    rows: usize,
    names: &[String],
    missing: MissingValues,
) -> Result<InputSpec> {
    let file = files[0].display().to_string();
    if !names.is_empty() {
        return Err(plan_error(format!(
            "layout 'genes_as_columns' takes only the path (gene ids are the column names), got {} more argument(s)",
            names.len()
        )));
    }
    let mut genes: Vec<String> = Vec::new();
    for field in schema.fields() {
        let dt = field.data_type();
        if dt.is_integer() || dt.is_floating() {
            if genes.contains(field.name()) {
                return Err(plan_error(format!(
                    "duplicate gene column '{}' in '{file}'",
                    field.name()
                )));
            }
            genes.push(field.name().clone());
        } else if !is_string(dt) {
            return Err(plan_error(format!(
                "column '{}' in '{file}' has type {dt}; with layout 'genes_as_columns' every column is a gene \
                 (integer or floating-point) or a string sample label",
                field.name()
            )));
        }
    }
    if rows < 2 {
        return Err(plan_error(format!(
            "'{file}' has {rows} row(s); with layout 'genes_as_columns' rows are samples and Kendall's tau needs at least 2"
        )));
    }
    Ok(InputSpec {
        path: path.to_string(),
        files,
        genes: genes.len(),
        samples: rows,
        columns: Columns::GenesAsColumns { genes },
        missing,
    })
}

/// Reads a genes_as_columns input into `values`; the rows read must be the
/// samples the query was planned with (footer row counts), never fewer.
pub(super) fn load_columns(
    spec: &InputSpec,
    genes: &[String],
    mut values: ValueBuffer,
) -> Result<ExpressionMatrix> {
    let n = spec.samples;
    values.grow_to(genes.len() * n)?;
    let mut row0 = 0usize;
    for file in &spec.files {
        let name = file.display();
        for batch in super::batches(file)? {
            let batch = batch?;
            if row0 + batch.num_rows() > n {
                return Err(changed_error(
                    spec,
                    format!("more than {n} rows (samples)"),
                    n.to_string(),
                ));
            }
            for (g, gene) in genes.iter().enumerate() {
                let column = NumericColumn::read(&batch, gene, file)?;
                for r in 0..batch.num_rows() {
                    let x = column.value(r, spec.missing, || {
                        format!("gene '{gene}' in row {} of '{name}'", row0 + r + 1)
                    })?;
                    values.set(g * n + row0 + r, x)?;
                }
            }
            row0 += batch.num_rows();
        }
    }
    // Fewer rows than planned would leave samples at 0.0 as if measured.
    if row0 != n {
        return Err(changed_error(
            spec,
            format!("{row0} rows (samples)"),
            n.to_string(),
        ));
    }
    Ok(ExpressionMatrix::new(
        StringArray::from_iter_values(genes),
        n,
        values,
    ))
}

/// Checks a long input: gene, sample and value columns, named by `names`
/// or by default `gene`, `sample`, `value`; counts its genes and samples,
/// and checks that there is one row for every (gene, sample), so that the
/// genes × samples matrix is only ever allocated at the size of the data.
pub(super) fn inspect_long(
    path: &str,
    files: Vec<PathBuf>,
    schema: &SchemaRef,
    names: &[String],
    missing: MissingValues,
) -> Result<InputSpec> {
    let file = files[0].display().to_string();
    if names.len() > 3 {
        return Err(plan_error(format!(
            "layout 'long' takes (path [, gene_column [, sample_column [, value_column]]]), got {} column names",
            names.len()
        )));
    }
    let name = |k: usize| {
        names
            .get(k)
            .map_or(LONG_DEFAULTS[k], String::as_str)
            .to_string()
    };
    let (gene, sample, value) = (name(0), name(1), name(2));
    for (role, column) in [("gene", &gene), ("sample", &sample), ("value", &value)] {
        let field = schema.field_with_name(column).map_err(|_| {
            plan_error(format!(
                "{role} column '{column}' not found in '{file}' (columns: {}); with layout 'long' name them \
                 with {}('{path}', 'gene_column', 'sample_column', 'value_column')",
                column_list(schema),
                super::FN_NAME
            ))
        })?;
        let dt = field.data_type();
        let ok = match role {
            "gene" => is_string(dt),
            "sample" => is_string(dt) || dt.is_integer(),
            _ => dt.is_integer() || dt.is_floating(),
        };
        if !ok {
            let want = match role {
                "gene" => "a string",
                "sample" => "a string or an integer",
                _ => "an integer or floating-point number",
            };
            return Err(plan_error(format!(
                "{role} column '{column}' in '{file}' has type {dt}; it must be {want}"
            )));
        }
    }
    // Only the ids are read now (the values when the query runs): how many
    // genes and samples, and how many rows each gene has.
    let ids = LongIds::count(&files, &gene, &sample)?;
    let (genes, samples) = (ids.genes.len(), ids.samples.len());
    if samples < 2 {
        return Err(plan_error(format!(
            "'{file}' has {samples} distinct sample(s) in column '{sample}'; Kendall's tau needs at least 2"
        )));
    }
    // Every gene must have every sample once: rows = genes × samples. A
    // sparse file (a few samples per gene) fails here, before any matrix.
    if let Some(g) = ids.rows_per_gene.iter().position(|&r| r != samples as u64) {
        let problem = gene_problem(
            &files,
            path,
            [&gene, &sample],
            &ids.genes.names[g],
            &ids.samples,
        )?;
        return Err(data_error(format!(
            "{problem}; with layout 'long' every gene needs one row for every sample (a null \
             value marks it missing), and '{path}' has {} rows for {genes} genes x {samples} \
             samples ({} values)",
            ids.rows,
            genes as u128 * samples as u128
        )));
    }
    Ok(InputSpec {
        path: path.to_string(),
        files,
        genes,
        samples,
        columns: Columns::Long {
            gene,
            sample,
            value,
        },
        missing,
    })
}

/// Distinct ids of a long input, numbered in order of first appearance.
#[derive(Debug, Default)]
struct IdIndex {
    index: HashMap<String, usize>,
    names: Vec<String>,
}

impl IdIndex {
    /// The number of `key`, given to it now if it is new.
    fn number(&mut self, key: &str) -> usize {
        if let Some(&k) = self.index.get(key) {
            return k;
        }
        self.names.push(key.to_string());
        self.index.insert(key.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    fn len(&self) -> usize {
        self.names.len()
    }
}

/// The ids of a long input and the rows of each gene.
#[derive(Debug, Default)]
struct LongIds {
    genes: IdIndex,
    samples: IdIndex,
    rows: u64,
    rows_per_gene: Vec<u64>,
}

impl LongIds {
    /// Reads the gene and sample columns of `files` (not the values).
    fn count(files: &[PathBuf], gene: &str, sample: &str) -> Result<Self> {
        let mut ids = LongIds::default();
        for file in files {
            let mut row0 = 0usize;
            for batch in super::batches_of(file, &[gene, sample])? {
                let batch = batch?;
                let (genes, samples) = id_columns(&batch, file, [gene, sample], row0)?;
                for r in 0..batch.num_rows() {
                    let g = ids.genes.number(genes.value(r));
                    ids.samples.number(samples.value(r));
                    if g == ids.rows_per_gene.len() {
                        ids.rows_per_gene.push(0);
                    }
                    ids.rows_per_gene[g] += 1;
                }
                ids.rows += batch.num_rows() as u64;
                row0 += batch.num_rows();
            }
        }
        Ok(ids)
    }
}

/// The gene and sample id columns of a batch of a long input, as strings;
/// a null id is an error naming its row (`row0` rows of the file precede
/// the batch).
fn id_columns(
    batch: &RecordBatch,
    file: &Path,
    [gene, sample]: [&str; 2],
    row0: usize,
) -> Result<(StringArray, StringArray)> {
    let genes = column_as(batch, gene, file, &DataType::Utf8)?
        .as_string::<i32>()
        .clone();
    let samples = column_as(batch, sample, file, &DataType::Utf8)?
        .as_string::<i32>()
        .clone();
    for (column, name) in [(&genes, gene), (&samples, sample)] {
        if let Some(r) = (0..batch.num_rows()).find(|&r| column.is_null(r)) {
            return Err(data_error(format!(
                "null in column '{name}' in row {} of '{}'",
                row0 + r + 1,
                file.display()
            )));
        }
    }
    Ok((genes, samples))
}

/// What is wrong with gene `name` of a long input, whose rows are not one
/// per sample: a sample given twice (both rows named), else a sample
/// without a row. Reads the id columns again (only on this error path).
fn gene_problem(
    files: &[PathBuf],
    path: &str,
    [gene, sample]: [&str; 2],
    name: &str,
    samples: &IdIndex,
) -> Result<String> {
    let mut first: HashMap<usize, (usize, usize)> = HashMap::new();
    for (f, file) in files.iter().enumerate() {
        let mut row0 = 0usize;
        for batch in super::batches_of(file, &[gene, sample])? {
            let batch = batch?;
            let (genes, sample_ids) = id_columns(&batch, file, [gene, sample], row0)?;
            for r in 0..batch.num_rows() {
                if genes.value(r) != name {
                    continue;
                }
                let Some(&s) = samples.index.get(sample_ids.value(r)) else {
                    continue;
                };
                let row = row0 + r + 1;
                match first.entry(s) {
                    Entry::Occupied(seen) => {
                        let (f0, row_0) = *seen.get();
                        return Ok(format!(
                            "gene '{name}' has two values for sample '{}': row {row_0} of '{}' and row {row} of '{}'",
                            samples.names[s],
                            files[f0].display(),
                            file.display()
                        ));
                    }
                    Entry::Vacant(slot) => {
                        slot.insert((f, row));
                    }
                }
            }
            row0 += batch.num_rows();
        }
    }
    Ok(match (0..samples.len()).find(|s| !first.contains_key(s)) {
        Some(s) => format!(
            "gene '{name}' has no value for sample '{}' in '{path}'",
            samples.names[s]
        ),
        None => format!("gene '{name}' has not one row per sample in '{path}'"),
    })
}

/// Reads a long input into `values`: genes and samples numbered as when the
/// query was planned, one value per (gene, sample). A (gene, sample) given
/// twice, or data of another shape than planned, is an error; since the
/// rows then equal genes × samples, every value is set.
pub(super) fn load_long(
    spec: &InputSpec,
    [gene, sample, value]: [&str; 3],
    mut values: ValueBuffer,
) -> Result<ExpressionMatrix> {
    let (m, n) = (spec.genes, spec.samples);
    let cells = m * n;
    values.grow_to(cells)?;
    // One bit per (gene, sample): set when its row is read.
    let words = cells.div_ceil(64);
    values.reservation.try_grow(words * 8)?;
    let mut seen = try_filled(words, 0u64, "bitmap of (gene, sample) rows")?;
    let (mut genes, mut samples) = (IdIndex::default(), IdIndex::default());
    let mut rows = 0usize;
    let shape = |genes: usize, samples: usize, rows: usize| {
        format!("{genes} genes x {samples} samples in {rows} rows")
    };
    for file in &spec.files {
        let name = file.display();
        let mut row0 = 0usize;
        for batch in super::batches_of(file, &[gene, sample, value])? {
            let batch = batch?;
            let (gene_ids, sample_ids) = id_columns(&batch, file, [gene, sample], row0)?;
            let column = NumericColumn::read(&batch, value, file)?;
            for r in 0..batch.num_rows() {
                let (g, s) = (
                    genes.number(gene_ids.value(r)),
                    samples.number(sample_ids.value(r)),
                );
                if g >= m || s >= n {
                    return Err(changed_error(
                        spec,
                        format!("more than {m} genes x {n} samples"),
                        format!("{m} genes x {n} samples"),
                    ));
                }
                let cell = g * n + s;
                if seen[cell / 64] >> (cell % 64) & 1 == 1 {
                    let problem = gene_problem(
                        &spec.files,
                        &spec.path,
                        [gene, sample],
                        &genes.names[g],
                        &samples,
                    )?;
                    return Err(data_error(format!(
                        "{problem}; with layout 'long' every gene needs one row for every sample"
                    )));
                }
                seen[cell / 64] |= 1 << (cell % 64);
                let x = column.value(r, spec.missing, || {
                    format!(
                        "gene '{}', sample '{}' (row {} of '{name}')",
                        gene_ids.value(r),
                        sample_ids.value(r),
                        row0 + r + 1
                    )
                })?;
                values.set(cell, x)?;
            }
            rows += batch.num_rows();
            row0 += batch.num_rows();
        }
    }
    if (genes.len(), samples.len(), rows) != (m, n, cells) {
        return Err(changed_error(
            spec,
            shape(genes.len(), samples.len(), rows),
            format!("{m} genes x {n} samples"),
        ));
    }
    drop(seen);
    let kept = values.reservation.size() - words * 8;
    values.reservation.shrink_to(kept);
    Ok(ExpressionMatrix::new(
        StringArray::from_iter_values(&genes.names),
        n,
        values,
    ))
}

//! Input: a gene-expression matrix in Parquet, checked and loaded.
//!
//! Layout: one row per gene; a string gene-id column (named by the caller,
//! else the first string column) and every other column one sample of any
//! integer or floating-point type. `path` is one Parquet file or a directory
//! of Parquet files with one schema (read in file-name order).
//!
//! The schema is checked when the query is planned ([`inspect`]); the values
//! are read and checked once per query, when it runs ([`load`]). Every problem
//! is a `DataFusionError` naming the file, column or gene.

mod layouts;
mod missing;
mod rank;
mod values;

pub use layouts::Layout;
pub use missing::MissingValues;
use missing::checked_value;
use values::{NumericColumn, ValueBuffer};

pub use rank::{MISSING_RANK, PairStats, RankedMatrix, VarianceTerms};

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::memory::{QueryMemory, Reservation};

/// Prefix of every user-facing error of this crate.
pub(crate) const FN_NAME: &str = "kendall_all_pairs";

fn plan_error(msg: String) -> DataFusionError {
    DataFusionError::Plan(format!("{FN_NAME}: {msg}"))
}

fn data_error(msg: String) -> DataFusionError {
    DataFusionError::Execution(format!("{FN_NAME}: {msg}"))
}

/// A checked description of the input: its files and how to read them.
#[derive(Debug, Clone)]
pub struct InputSpec {
    /// The path as the user gave it.
    pub path: String,
    /// The Parquet files, in reading order.
    pub files: Vec<PathBuf>,
    /// Which columns hold what.
    pub columns: Columns,
    /// Number of genes.
    pub genes: usize,
    /// Number of samples per gene.
    pub samples: usize,
    /// What a null or NaN value means.
    pub missing: MissingValues,
}

/// The columns of each layout (`SET kendall.layout = ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Columns {
    /// One row per gene: a gene-id column and one column per sample.
    GenesAsRows {
        /// The gene-id column.
        gene: String,
        /// The sample columns, in file order.
        samples: Vec<String>,
    },
    /// One row per sample, one numeric column per gene (gene ids are the
    /// column names); string columns (sample labels) are ignored.
    GenesAsColumns {
        /// The gene columns, in file order.
        genes: Vec<String>,
    },
    /// One row per (gene, sample) value.
    Long {
        /// The gene-id column.
        gene: String,
        /// The sample-id column.
        sample: String,
        /// The value column.
        value: String,
    },
}

/// Checks `path` and its schema for `layout`, naming columns with `names`
/// (genes_as_rows: `[gene_column]`; long: `[gene, sample, value]` columns;
/// genes_as_columns: none); null and NaN values are treated as `missing` says.
pub fn inspect(
    path: &str,
    layout: Layout,
    names: &[String],
    missing: MissingValues,
) -> Result<InputSpec> {
    let files = list_files(Path::new(path))?;
    let (schema, rows) = read_footers(&files)?;
    match layout {
        Layout::GenesAsRows => {
            if names.len() > 1 {
                return Err(plan_error(format!(
                    "layout 'genes_as_rows' takes (path [, gene_column]), got {} column names",
                    names.len()
                )));
            }
            let (gene, samples) =
                rows_columns(path, &files[0], &schema, names.first().map(String::as_str))?;
            Ok(InputSpec {
                path: path.to_string(),
                files,
                samples: samples.len(),
                columns: Columns::GenesAsRows { gene, samples },
                genes: rows,
                missing,
            })
        }
        Layout::GenesAsColumns => {
            layouts::inspect_columns(path, files, &schema, rows, names, missing)
        }
        Layout::Long => layouts::inspect_long(path, files, &schema, names, missing),
    }
}

/// Whether `dt` is a string type.
fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// How many names an error message lists before "and N more".
const LISTED_NAMES: usize = 8;

/// `a, b, c`, or `a, b, …, h and 19,992 more` past [`LISTED_NAMES`]: a
/// single-cell matrix has tens of thousands of columns, and an error message
/// that lists them all buries the message itself.
pub(crate) fn short_list<I>(names: I) -> String
where
    I: IntoIterator,
    I::Item: std::fmt::Display,
{
    let mut shown = Vec::with_capacity(LISTED_NAMES);
    let mut rest = 0usize;
    for name in names {
        if shown.len() < LISTED_NAMES {
            shown.push(name.to_string());
        } else {
            rest += 1;
        }
    }
    let mut list = shown.join(", ");
    if rest > 0 {
        list.push_str(&format!(" and {rest} more"));
    }
    list
}

/// The column names of `schema`, shortened by [`short_list`].
fn column_list(schema: &SchemaRef) -> String {
    short_list(schema.fields().iter().map(|f| f.name()))
}

/// Where two schemas first differ (`None` if they do not), for an error
/// message short enough to read when a schema has tens of thousands of columns.
fn schema_difference(a: &SchemaRef, b: &SchemaRef) -> Option<String> {
    let describe =
        |f: &datafusion::arrow::datatypes::FieldRef| format!("{}: {}", f.name(), f.data_type());
    let (fa, fb) = (a.fields(), b.fields());
    match fa
        .iter()
        .zip(fb.iter())
        .position(|(x, y)| describe(x) != describe(y))
    {
        Some(i) => Some(format!(
            "column {} is ({}) in the first and ({}) in the other",
            i + 1,
            describe(&fa[i]),
            describe(&fb[i])
        )),
        None if fa.len() != fb.len() => Some(format!("{} columns vs {}", fa.len(), fb.len())),
        None => None,
    }
}

/// The schema of `files` and their total rows, each footer read once;
/// refuses a directory whose files do not share the first file's schema.
fn read_footers(files: &[PathBuf]) -> Result<(SchemaRef, usize)> {
    let mut first: Option<SchemaRef> = None;
    let mut rows = 0usize;
    for file in files {
        let reader = open_parquet(file)?;
        rows += usize::try_from(reader.metadata().file_metadata().num_rows()).unwrap_or(0);
        let schema = reader.schema();
        match &first {
            None => first = Some(Arc::clone(schema)),
            Some(expected) => {
                if let Some(difference) = schema_difference(expected, schema) {
                    return Err(plan_error(format!(
                        "'{}' and '{}' have different schemas ({difference}); all files of a \
                         directory must share one schema",
                        files[0].display(),
                        file.display(),
                    )));
                }
            }
        }
    }
    let schema = first.ok_or_else(|| plan_error("no Parquet file to read".to_string()))?;
    Ok((schema, rows))
}

/// The gene column and sample columns of the genes_as_rows layout.
fn rows_columns(
    path: &str,
    first: &Path,
    schema: &SchemaRef,
    gene_column: Option<&str>,
) -> Result<(String, Vec<String>)> {
    let file = first.display().to_string();
    let column_list = || column_list(schema);
    let gene_field = match gene_column {
        Some(name) => {
            let field = schema.field_with_name(name).map_err(|_| {
                plan_error(format!(
                    "gene column '{name}' not found in '{file}' (columns: {})",
                    column_list()
                ))
            })?;
            if !is_string(field.data_type()) {
                return Err(plan_error(format!(
                    "gene column '{name}' in '{file}' has type {}; gene ids must be strings",
                    field.data_type()
                )));
            }
            field
        }
        None => schema
            .fields()
            .iter()
            .find(|f| is_string(f.data_type()))
            .ok_or_else(|| {
                plan_error(format!(
                    "'{file}' has no string column to use as gene ids (columns: {}); \
                     name one with {FN_NAME}('{path}', 'gene_column')",
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
                "sample column '{}' in '{file}' has type {dt}; every column except the gene column '{}' must be an integer or floating-point number",
                field.name(),
                gene_field.name()
            )));
        }
        samples.push(field.name().clone());
    }
    if samples.len() < 2 {
        return Err(plan_error(format!(
            "'{file}' has {} sample column(s) besides the gene column '{}'; Kendall's tau needs at least 2 samples",
            samples.len(),
            gene_field.name()
        )));
    }
    Ok((gene_field.name().clone(), samples))
}

/// The Parquet files at `path`: the file itself, or the `.parquet` files of a
/// directory (hidden and `_`-prefixed names skipped) in name order.
fn list_files(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path)
        .map_err(|e| plan_error(format!("cannot open '{}': {e}", path.display())))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| plan_error(format!("cannot list directory '{}': {e}", path.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry
            .map_err(|e| plan_error(format!("cannot list directory '{}': {e}", path.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_parquet = Path::new(&name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
        if is_parquet && !name.starts_with('.') && !name.starts_with('_') {
            files.push(entry.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(plan_error(format!(
            "directory '{}' holds no .parquet files",
            path.display()
        )));
    }
    Ok(files)
}

fn open_parquet(file: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let handle = File::open(file)
        .map_err(|e| plan_error(format!("cannot open '{}': {e}", file.display())))?;
    ParquetRecordBatchReaderBuilder::try_new(handle).map_err(|e| {
        plan_error(format!(
            "'{}' is not a readable Parquet file: {e}",
            file.display()
        ))
    })
}

/// The record batches of `file`, with read errors naming it; an error when
/// the load is asked to stop ([`crate::load::checkpoint`]).
fn batches(file: &Path) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    read_batches(file, None)
}

/// The record batches of `file` with only the (top-level) `columns`.
fn batches_of(file: &Path, columns: &[&str]) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    read_batches(file, Some(columns))
}

fn read_batches(
    file: &Path,
    columns: Option<&[&str]>,
) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    let name = file.display().to_string();
    let mut builder = open_parquet(file)?.with_batch_size(8192);
    if let Some(columns) = columns {
        // By root index: names may contain '.', which `columns` would split.
        let schema = Arc::clone(builder.schema());
        let roots = columns.iter().filter_map(|c| schema.index_of(c).ok());
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
    }
    let reader = builder
        .build()
        .map_err(|e| data_error(format!("cannot read '{name}': {e}")))?;
    // A query cancelled meanwhile stops the read between batches.
    Ok(reader.map(move |b| {
        crate::load::checkpoint()?;
        b.map_err(|e| data_error(format!("cannot read '{name}': {e}")))
    }))
}

/// Column `name` of `batch` (read from `file`), cast to `to`.
fn column_as(batch: &RecordBatch, name: &str, file: &Path, to: &DataType) -> Result<ArrayRef> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| data_error(format!("column '{name}' missing from '{}'", file.display())))?;
    Ok(cast(column, to)?)
}

/// A loaded and validated expression matrix.
#[derive(Debug)]
pub struct ExpressionMatrix {
    /// Gene ids, in input order; unique and non-null.
    pub genes: StringArray,
    /// Number of samples per gene.
    pub samples: usize,
    /// genes × samples values, row-major; finite, or NaN where missing.
    pub values: Vec<f64>,
    /// Per value, what a 64-bit integer loses as f64 (`integer - value`, see
    /// [`RankedMatrix::from_exact`]); empty when every value is exact.
    pub residuals: Vec<i16>,
    /// The memory pool reservation of `values` and `residuals`, released
    /// with them.
    _reservation: Reservation,
}

impl ExpressionMatrix {
    fn new(genes: StringArray, samples: usize, buffer: ValueBuffer) -> Self {
        Self {
            genes,
            samples,
            values: buffer.values,
            residuals: buffer.residuals,
            _reservation: buffer.reservation,
        }
    }
}

/// Reads every file of `spec`, checking gene ids (non-null, unique), values
/// (finite, or missing as `spec.missing` allows) and that the data has the
/// shape the query was planned with. The values are reserved in `memory`
/// before they are allocated.
pub fn load(spec: &InputSpec, memory: &QueryMemory) -> Result<ExpressionMatrix> {
    // The planned size, from Parquet footers or (long layout) a count of the
    // ids: reserved before anything is allocated, checked against the data.
    let planned = spec.genes.checked_mul(spec.samples).ok_or_else(|| {
        data_error(format!(
            "'{}' would have {} genes x {} samples, more values than memory can address",
            spec.path, spec.genes, spec.samples
        ))
    })?;
    let reservation = memory.reserve(
        &format!(
            "input values ({} genes x {} samples)",
            spec.genes, spec.samples
        ),
        planned.saturating_mul(8),
    )?;
    let buffer = ValueBuffer::new(reservation);
    match &spec.columns {
        Columns::GenesAsRows { gene, samples } => load_rows(spec, gene, samples, buffer),
        Columns::GenesAsColumns { genes } => layouts::load_columns(spec, genes, buffer),
        Columns::Long {
            gene,
            sample,
            value,
        } => layouts::load_long(spec, [gene, sample, value], buffer),
    }
}

/// The error for data whose shape differs from the plan (a file rewritten
/// after the query or view was planned, or a footer that disagrees with its
/// row groups).
fn changed_error(spec: &InputSpec, found: String, planned: String) -> DataFusionError {
    data_error(format!(
        "'{}' has {found} but had {planned} when the query was planned; the file changed \
         since (plan the query again) or its Parquet metadata disagrees with its data",
        spec.path
    ))
}

/// [`load`] for the genes_as_rows layout.
fn load_rows(
    spec: &InputSpec,
    gene_column: &str,
    sample_columns: &[String],
    mut values: ValueBuffer,
) -> Result<ExpressionMatrix> {
    let n = sample_columns.len();
    let mut genes = StringBuilder::new();
    let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
    for (file_index, file) in spec.files.iter().enumerate() {
        let name = file.display();
        let mut row0 = 0usize;
        for batch in batches(file)? {
            let batch = batch?;
            let rows = batch.num_rows();
            let ids = column_as(&batch, gene_column, file, &DataType::Utf8)?;
            let ids = ids.as_string::<i32>();
            let base = values.values.len();
            if base / n + rows > spec.genes {
                return Err(changed_error(
                    spec,
                    format!("more than {} rows (genes)", spec.genes),
                    spec.genes.to_string(),
                ));
            }
            values.grow_to(base + rows * n)?;
            for r in 0..rows {
                let row = row0 + r + 1;
                if ids.is_null(r) {
                    return Err(data_error(format!(
                        "gene id is null in row {row} of '{name}' (column '{gene_column}')"
                    )));
                }
                let id = ids.value(r);
                match seen.entry(id.to_string()) {
                    Entry::Occupied(first) => {
                        let (f, first_row) = *first.get();
                        return Err(data_error(format!(
                            "duplicate gene id '{id}': row {first_row} of '{}' and row {row} of '{name}'",
                            spec.files[f].display()
                        )));
                    }
                    Entry::Vacant(slot) => {
                        slot.insert((file_index, row));
                    }
                }
                genes.append_value(id);
            }
            for (s, sample) in sample_columns.iter().enumerate() {
                let col = NumericColumn::read(&batch, sample, file)?;
                for r in 0..rows {
                    let x = col.value(r, spec.missing, || {
                        format!(
                            "gene '{}' (row {} of '{name}') in sample column '{sample}'",
                            ids.value(r),
                            row0 + r + 1
                        )
                    })?;
                    values.set(base + r * n + s, x)?;
                }
            }
            row0 += rows;
        }
    }
    let genes = genes.finish();
    if genes.len() != spec.genes {
        return Err(changed_error(
            spec,
            format!("{} rows (genes)", genes.len()),
            spec.genes.to_string(),
        ));
    }
    Ok(ExpressionMatrix::new(genes, n, values))
}

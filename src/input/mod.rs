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

mod rank;

pub use rank::RankedMatrix;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray, StringArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

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
    /// Name of the gene-id column.
    pub gene_column: String,
    /// Names of the sample columns, in file order.
    pub samples: Vec<String>,
    /// Number of genes (rows), from the Parquet metadata.
    pub genes: usize,
}

/// Checks `path` and its schema; picks the gene column and the sample columns.
pub fn inspect(path: &str, gene_column: Option<&str>) -> Result<InputSpec> {
    let files = list_files(Path::new(path))?;
    let schema = read_schema(&files[0])?;
    for other in &files[1..] {
        let s = read_schema(other)?;
        let describe = |s: &SchemaRef| {
            s.fields()
                .iter()
                .map(|f| format!("{}: {}", f.name(), f.data_type()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if describe(&s) != describe(&schema) {
            return Err(plan_error(format!(
                "'{}' and '{}' have different schemas ({}) vs ({}); all files of a directory must share one schema",
                files[0].display(),
                other.display(),
                describe(&schema),
                describe(&s)
            )));
        }
    }
    let mut genes = 0usize;
    for f in &files {
        genes +=
            usize::try_from(open_parquet(f)?.metadata().file_metadata().num_rows()).unwrap_or(0);
    }
    let file = files[0].display().to_string();
    let is_string = |dt: &DataType| {
        matches!(
            dt,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
    };
    let column_list = || {
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
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
    Ok(InputSpec {
        path: path.to_string(),
        files,
        gene_column: gene_field.name().clone(),
        samples,
        genes,
    })
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

fn read_schema(file: &Path) -> Result<SchemaRef> {
    Ok(open_parquet(file)?.schema().clone())
}

/// A loaded and validated expression matrix.
#[derive(Debug, Clone)]
pub struct ExpressionMatrix {
    /// Gene ids, in input order; unique and non-null.
    pub genes: StringArray,
    /// Sample column names.
    pub samples: Vec<String>,
    /// genes × samples values, row-major; all finite.
    pub values: Vec<f64>,
}

/// Reads every file of `spec`, checking gene ids (non-null, unique) and
/// values (non-null, finite).
pub fn load(spec: &InputSpec) -> Result<ExpressionMatrix> {
    let n = spec.samples.len();
    let mut genes = StringBuilder::new();
    let mut values: Vec<f64> = Vec::new();
    let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
    for (file_index, file) in spec.files.iter().enumerate() {
        let name = file.display();
        let reader = open_parquet(file)?
            .with_batch_size(8192)
            .build()
            .map_err(|e| data_error(format!("cannot read '{name}': {e}")))?;
        let mut row0 = 0usize;
        for batch in reader {
            let batch = batch.map_err(|e| data_error(format!("cannot read '{name}': {e}")))?;
            let rows = batch.num_rows();
            let column = |col: &str| {
                batch
                    .column_by_name(col)
                    .ok_or_else(|| data_error(format!("column '{col}' missing from '{name}'")))
            };
            let ids = cast(column(&spec.gene_column)?, &DataType::Utf8)?;
            let ids = ids.as_string::<i32>();
            let base = values.len();
            values.resize(base + rows * n, 0.0);
            for r in 0..rows {
                let row = row0 + r + 1;
                if ids.is_null(r) {
                    return Err(data_error(format!(
                        "gene id is null in row {row} of '{name}' (column '{}')",
                        spec.gene_column
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
            for (s, sample) in spec.samples.iter().enumerate() {
                let col = cast(column(sample)?, &DataType::Float64)?;
                let col = col.as_primitive::<Float64Type>();
                for r in 0..rows {
                    let problem = if col.is_null(r) {
                        "a null"
                    } else if col.value(r).is_nan() {
                        "a NaN"
                    } else if col.value(r).is_infinite() {
                        "an infinite"
                    } else {
                        values[base + r * n + s] = col.value(r);
                        continue;
                    };
                    return Err(data_error(format!(
                        "gene '{}' (row {} of '{name}') has {problem} value in sample column '{sample}'; \
                         missing values are not supported yet",
                        ids.value(r),
                        row0 + r + 1
                    )));
                }
            }
            row0 += rows;
        }
    }
    Ok(ExpressionMatrix {
        genes: genes.finish(),
        samples: spec.samples.clone(),
        values,
    })
}

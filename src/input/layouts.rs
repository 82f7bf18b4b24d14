//! The other matrix layouts: one column per gene, and long (tidy) triples.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, SchemaRef};
use datafusion::error::{DataFusionError, Result};

use super::{
    Columns, ExpressionMatrix, InputSpec, MissingValues, checked_value, column_as, column_list,
    data_error, is_string, plan_error,
};

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
        prefetched: None,
    })
}

/// Reads a genes_as_columns input.
pub(super) fn load_columns(spec: &InputSpec, genes: &[String]) -> Result<ExpressionMatrix> {
    let n = spec.samples;
    let mut values = vec![0.0f64; genes.len() * n];
    let mut row0 = 0usize;
    for file in &spec.files {
        let name = file.display();
        for batch in super::batches(file)? {
            let batch = batch?;
            if row0 + batch.num_rows() > n {
                return Err(data_error(format!(
                    "'{name}' has more rows than its metadata says"
                )));
            }
            for (g, gene) in genes.iter().enumerate() {
                let column = column_as(&batch, gene, file, &DataType::Float64)?;
                let column = column.as_primitive::<Float64Type>();
                for r in 0..batch.num_rows() {
                    values[g * n + row0 + r] = checked_value(column, r, spec.missing, || {
                        format!("gene '{gene}' in row {} of '{name}'", row0 + r + 1)
                    })?;
                }
            }
            row0 += batch.num_rows();
        }
    }
    Ok(ExpressionMatrix {
        genes: StringArray::from_iter_values(genes),
        samples: n,
        values,
    })
}

/// Checks a long input: gene, sample and value columns, named by `names`
/// or by default `gene`, `sample`, `value`; counts its genes and samples.
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
    // The gene and sample counts are only known after reading everything, so
    // the matrix is built now and kept for execution: the file is read once.
    let long = read_long(&files, [&gene, &sample, &value], missing)?;
    if long.samples.len() < 2 {
        return Err(plan_error(format!(
            "'{file}' has {} distinct sample(s) in column '{sample}'; Kendall's tau needs at least 2",
            long.samples.len()
        )));
    }
    let matrix = long_matrix(&files, path, long)?;
    Ok(InputSpec {
        path: path.to_string(),
        files,
        genes: matrix.genes.len(),
        samples: matrix.samples,
        columns: Columns::Long {
            gene,
            sample,
            value,
        },
        missing,
        prefetched: Some(Arc::new(matrix)),
    })
}

/// A long input, read and indexed.
struct LongInput {
    genes: Vec<String>,
    samples: Vec<String>,
    /// (gene index, sample index, value, file index, row in file)
    values: Vec<(usize, usize, f64, usize, usize)>,
}

fn read_long(
    files: &[PathBuf],
    [gene, sample, value]: [&str; 3],
    missing: MissingValues,
) -> Result<LongInput> {
    let mut out = LongInput {
        genes: Vec::new(),
        samples: Vec::new(),
        values: Vec::new(),
    };
    let mut gene_index: HashMap<String, usize> = HashMap::new();
    let mut sample_index: HashMap<String, usize> = HashMap::new();
    for (f, file) in files.iter().enumerate() {
        let name = file.display();
        let mut row0 = 0usize;
        for batch in super::batches(file)? {
            let batch = batch?;
            let column = |c: &str, to: &DataType| column_as(&batch, c, file, to);
            let genes = column(gene, &DataType::Utf8)?;
            let genes = genes.as_string::<i32>();
            let samples = column(sample, &DataType::Utf8)?;
            let samples = samples.as_string::<i32>();
            let values = column(value, &DataType::Float64)?;
            let values = values.as_primitive::<Float64Type>();
            for r in 0..batch.num_rows() {
                let row = row0 + r + 1;
                if genes.is_null(r) || samples.is_null(r) {
                    let which = if genes.is_null(r) { gene } else { sample };
                    return Err(data_error(format!(
                        "null in column '{which}' in row {row} of '{name}'"
                    )));
                }
                let index =
                    |map: &mut HashMap<String, usize>, list: &mut Vec<String>, key: &str| {
                        *map.entry(key.to_string()).or_insert_with(|| {
                            list.push(key.to_string());
                            list.len() - 1
                        })
                    };
                let g = index(&mut gene_index, &mut out.genes, genes.value(r));
                let s = index(&mut sample_index, &mut out.samples, samples.value(r));
                let x = checked_value(values, r, missing, || {
                    format!(
                        "gene '{}', sample '{}' (row {row} of '{name}')",
                        genes.value(r),
                        samples.value(r)
                    )
                })?;
                out.values.push((g, s, x, f, row));
            }
            row0 += batch.num_rows();
        }
    }
    Ok(out)
}

/// Turns the triples of a long input into a genes × samples matrix; every
/// gene must have exactly one value for every sample.
fn long_matrix(files: &[PathBuf], path: &str, long: LongInput) -> Result<ExpressionMatrix> {
    let n = long.samples.len();
    let mut values = vec![0.0f64; long.genes.len() * n];
    let mut seen: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    for &(g, s, x, f, row) in &long.values {
        match seen.entry((g, s)) {
            Entry::Occupied(first) => {
                let (f0, row0) = *first.get();
                return Err(data_error(format!(
                    "gene '{}' has two values for sample '{}': row {row0} of '{}' and row {row} of '{}'",
                    long.genes[g],
                    long.samples[s],
                    files[f0].display(),
                    files[f].display()
                )));
            }
            Entry::Vacant(slot) => {
                slot.insert((f, row));
            }
        }
        values[g * n + s] = x;
    }
    if seen.len() < values.len() {
        for g in 0..long.genes.len() {
            for s in 0..n {
                if !seen.contains_key(&(g, s)) {
                    return Err(data_error(format!(
                        "gene '{}' has no value for sample '{}' in '{}'; with layout 'long' every gene needs \
                         a row for every sample (a null value marks it missing)",
                        long.genes[g], long.samples[s], path
                    )));
                }
            }
        }
    }
    Ok(ExpressionMatrix {
        genes: StringArray::from_iter_values(&long.genes),
        samples: n,
        values,
    })
}

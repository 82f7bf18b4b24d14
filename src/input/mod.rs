//! Input: a gene-expression matrix from anything DataFusion can scan,
//! checked and loaded.
//!
//! The source is a table or view registered in the session, or a location
//! (file, directory, glob or URL) in Parquet, CSV or TSV ([`source`]); a URL's
//! object store is set up on first use (`stores`; cloud stores need the
//! `cloud` feature); a 10x Genomics directory, or an AnnData `.h5ad` or 10x
//! `.h5` file (`h5`, feature `hdf5`), is a sparse matrix. With
//! the default layout it holds one row per gene: a gene-id column (named by
//! the caller, else the first string column) and every other column one
//! sample of any integer or floating-point type.
//!
//! The schema is checked when the query is planned ([`inspect`]); the values
//! are read from the DataFusion plan of the source and checked once per
//! query, when it runs ([`load`]). Every problem is a `DataFusionError`
//! naming the source, column or gene.

#[cfg(feature = "hdf5")]
mod h5;
mod h5_kind;
mod layouts;
mod missing;
mod own_scan;
pub mod pair_list;
mod rank;
mod read;
pub mod source;
pub mod sparse;
pub mod sparse_table;
pub(crate) mod stack;
mod stores;
pub mod tenx;
mod values;

pub use layouts::{Absent, Layout};
pub use missing::MissingValues;
use missing::checked_value;
pub use pair_list::{ListedPairs, PairListSpec};
pub use read::InputBatches;
pub use source::InputFormat;
pub use stores::OnDemandStores;
use values::ValueBuffer;

pub use rank::{DensePair, MISSING_RANK, PairStats, RankedMatrix, SparseGene, VarianceTerms};

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};

use crate::memory::{QueryMemory, Reservation};

/// An error found while planning an input; named after the table function
/// the user called where the call's work begins (see [`crate::error`]).
fn plan_error(msg: String) -> DataFusionError {
    DataFusionError::Plan(msg)
}

/// An error in an input's data, found while reading it; named after the
/// table function the user called where the call's work begins.
fn data_error(msg: String) -> DataFusionError {
    DataFusionError::Execution(msg)
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// A checked description of the input: which columns to read and what they
/// hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// How messages name the source: `'data/expr.tsv.gz'` or `table 'expr'`.
    pub what: String,
    /// Which columns hold what.
    pub columns: Columns,
    /// The columns of the source's schema the scan reads (indices).
    pub projection: Vec<usize>,
    /// Number of genes, when known before reading (exact row counts from
    /// Parquet footers or a memory table; the columns of genes_as_columns).
    pub genes: Option<usize>,
    /// Number of samples per gene, when known before reading.
    pub samples: Option<usize>,
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
        /// The sample columns, in source order.
        samples: Vec<String>,
    },
    /// One row per sample, one numeric column per gene (gene ids are the
    /// column names); string columns (sample labels) are ignored.
    GenesAsColumns {
        /// The gene columns, in source order.
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
        /// What a (gene, sample) without a row means.
        absent: Absent,
    },
}

/// Checks the schema of the source `what` for `layout`, naming columns with
/// `names` (genes_as_rows: `[gene_column]`; long: `[gene, sample, value]`
/// columns; genes_as_columns: none). Null and NaN values are treated as
/// `missing` says, a (gene, sample) without a row of a long input as
/// `absent` says.
pub fn inspect(
    what: &str,
    schema: &SchemaRef,
    layout: Layout,
    names: &[String],
    missing: MissingValues,
    absent: Absent,
) -> Result<InputSpec> {
    match layout {
        Layout::GenesAsRows => {
            if names.len() > 1 {
                return Err(plan_error(format!(
                    "layout 'genes_as_rows' takes (source [, gene_column]), got {} column names",
                    names.len()
                )));
            }
            let (gene, samples) =
                layouts::rows_columns(what, schema, names.first().map(String::as_str))?;
            let projection = std::iter::once(&gene)
                .chain(&samples)
                .map(|c| schema.index_of(c))
                .collect::<std::result::Result<_, _>>()?;
            Ok(InputSpec {
                what: what.to_string(),
                samples: Some(samples.len()),
                columns: Columns::GenesAsRows { gene, samples },
                projection,
                genes: None,
                missing,
            })
        }
        Layout::GenesAsColumns => layouts::inspect_columns(what, schema, names, missing),
        Layout::Long => layouts::inspect_long(what, schema, names, missing, absent),
    }
}

impl InputSpec {
    /// Whether the layout names the samples (every layout but
    /// `genes_as_columns`, whose samples are unnamed rows).
    pub fn names_samples(&self) -> bool {
        !matches!(self.columns, Columns::GenesAsColumns { .. })
    }

    /// The spec with the source's row count, when it is known exactly
    /// before reading (from Parquet footers or a memory table, say): the
    /// genes of genes_as_rows, the samples of genes_as_columns.
    pub fn with_rows(mut self, rows: Option<usize>) -> Result<Self> {
        match self.columns {
            Columns::GenesAsRows { .. } => self.genes = rows,
            Columns::GenesAsColumns { .. } => {
                if let Some(problem) = rows.and_then(|r| layouts::too_few_samples(&self.what, r)) {
                    return Err(plan_error(problem));
                }
                self.samples = rows;
            }
            Columns::Long { .. } => {}
        }
        Ok(self)
    }
}

/// Whether `dt` is a string type.
fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Whether `dt` holds text: a string type, or a dictionary of strings (a
/// pandas categorical, a Parquet column written with its dictionary).
fn is_text(dt: &DataType) -> bool {
    is_string(dt) || matches!(dt, DataType::Dictionary(_, v) if is_string(v))
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

/// Column `name` of `batch` (read from the source `what`), cast to `to`.
fn column_as(batch: &RecordBatch, name: &str, what: &str, to: &DataType) -> Result<ArrayRef> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| data_error(format!("column '{name}' missing from {what}")))?;
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
    /// Empty when the matrix is `sparse`.
    pub values: Vec<f64>,
    /// Per value, what a 64-bit integer loses as f64 (`integer - value`, see
    /// [`RankedMatrix::from_exact`]); empty when every value is exact.
    pub residuals: Vec<i16>,
    /// Sample ids, in column order of `values`, where the layout names its
    /// samples (`genes_as_rows`: the column names; `long`: the sample ids);
    /// empty for `genes_as_columns`, whose samples are rows without names.
    pub sample_ids: Vec<String>,
    /// The non-zero values, for an input read with absent entries as zeros
    /// that is mostly zeros (`values` and `residuals` are then empty).
    pub sparse: Option<sparse::SparseValues>,
    /// The memory pool reservation of `values` and `residuals` (or of
    /// `sparse`), released with them.
    _reservation: Reservation,
}

impl ExpressionMatrix {
    fn new(
        genes: StringArray,
        samples: usize,
        buffer: ValueBuffer,
        sample_ids: Vec<String>,
    ) -> Self {
        Self {
            genes,
            samples,
            values: buffer.values,
            residuals: buffer.residuals,
            sample_ids,
            sparse: None,
            _reservation: buffer.reservation,
        }
    }

    /// A matrix from its parts, `values` (and `residuals`) reserved in
    /// `reservation`.
    pub(crate) fn from_parts(
        genes: StringArray,
        sample_ids: Vec<String>,
        values: Vec<f64>,
        residuals: Vec<i16>,
        reservation: Reservation,
    ) -> Self {
        Self {
            genes,
            samples: sample_ids.len(),
            values,
            residuals,
            sample_ids,
            sparse: None,
            _reservation: reservation,
        }
    }

    /// A sparse matrix (see [`sparse`]), reserved in `reservation`.
    pub(crate) fn from_sparse(
        genes: StringArray,
        sample_ids: Vec<String>,
        values: sparse::SparseValues,
        reservation: Reservation,
    ) -> Self {
        Self {
            genes,
            samples: sample_ids.len(),
            values: Vec::new(),
            residuals: Vec::new(),
            sample_ids,
            sparse: Some(values),
            _reservation: reservation,
        }
    }

    /// A sparse matrix kept sparse up to [`sparse::SPARSE_MAX_DENSITY`]
    /// non-zero values, expanded above it (as the long layout holds one);
    /// a dense one as it is.
    pub(crate) fn dense_above_max_density(self, memory: &QueryMemory) -> Result<Self> {
        let cells = self.genes.len() as f64 * self.samples as f64;
        match &self.sparse {
            Some(s) if s.len() as f64 > sparse::SPARSE_MAX_DENSITY * cells => {
                self.into_dense(memory)
            }
            _ => Ok(self),
        }
    }

    /// The matrix with its values dense (a sparse one expanded, its
    /// values reserved in `memory` first); a dense one as it is.
    pub(crate) fn into_dense(self, memory: &QueryMemory) -> Result<Self> {
        let Some(sparse) = &self.sparse else {
            return Ok(self);
        };
        let cells = self.genes.len().saturating_mul(self.samples);
        let per_value = if sparse.is_exact() { 8 } else { 10 };
        let mut reservation = memory.reserve(
            &format!(
                "input values ({} genes x {} samples)",
                self.genes.len(),
                self.samples
            ),
            0,
        )?;
        reservation.try_grow(cells.saturating_mul(per_value))?;
        let (values, residuals) = sparse.to_dense(self.samples)?;
        Ok(Self::from_parts(
            self.genes,
            self.sample_ids,
            values,
            residuals,
            reservation,
        ))
    }
}

/// Reads the source's `batches`, checking gene ids (non-null, unique) and
/// values (finite, or missing as `spec.missing` allows). The values are
/// reserved in `memory` before they are allocated.
///
/// A panic while reading (a reader of a corrupt file: parquet's RLE decoder
/// shifting past 64 bits, say) is an error naming the source, as it is when
/// the query is planned (`table::guard_panics`), not one that says only that
/// the load panicked.
pub fn load(
    spec: &InputSpec,
    batches: InputBatches,
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load_unguarded(spec, batches, memory)
    }))
    .unwrap_or_else(|panic| {
        Err(data_error(format!(
            "cannot read {}: reading it panicked ({}); is it a valid file?",
            spec.what,
            panic_message(&*panic)
        )))
    })
}

/// [`load`] without its guard against panics.
fn load_unguarded(
    spec: &InputSpec,
    mut batches: InputBatches,
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    let shape = match (spec.genes, spec.samples) {
        (Some(genes), Some(samples)) => format!(" ({genes} genes x {samples} samples)"),
        _ => String::new(),
    };
    let reservation = memory.reserve(&format!("input values{shape}"), 0)?;
    let mut buffer = ValueBuffer::new(reservation);
    // The values of a shape known before reading first, then what the
    // reader holds: both are reserved before anything is read.
    if let (Columns::GenesAsRows { .. }, Some(genes), Some(samples)) =
        (&spec.columns, spec.genes, spec.samples)
    {
        buffer.reserve_values(genes.saturating_mul(samples))?;
    }
    // An in-memory sparse table is read in place, a 10x directory without
    // triples.
    if let Columns::Long { absent, .. } = &spec.columns
        && *absent == layouts::Absent::Zero
    {
        if let Some(table) = batches.sparse_table() {
            batches.read_in_place();
            return table.matrix(memory, &spec.what);
        }
        if let Some(files) = batches.tenx_files() {
            batches.read_in_place();
            return tenx::read_matrix(&files, memory);
        }
    }
    batches.reserve_reader(memory)?;
    // What the other layouts hold while reading, before the matrix is built.
    let scratch = || memory.reserve("input as read", 0);
    match &spec.columns {
        Columns::GenesAsRows { gene, samples } => {
            let ids = memory.reserve("gene ids and their index", 0)?;
            layouts::load_rows(spec, batches, gene, samples, buffer, ids)
        }
        Columns::GenesAsColumns { genes } => {
            layouts::load_columns(spec, batches, genes, buffer, scratch()?)
        }
        Columns::Long {
            gene,
            sample,
            value,
            absent,
        } => layouts::load_long(
            spec,
            batches,
            [gene, sample, value],
            *absent,
            buffer,
            scratch()?,
        ),
    }
}

/// Bytes an id takes besides its text where a load keeps it (an id of the
/// genes' `StringArray` and the key of a `HashMap<String, _>`): the map's
/// slot and control byte at its load factor, doubled while it grows, the
/// key's `String` and its allocation's rounding and header, an offset.
pub(super) const ID_OVERHEAD: usize = 128;

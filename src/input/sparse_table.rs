//! A genes × samples sparse matrix as a table ([`SparseTable`]): its
//! stored entries, by gene (one [`SparseValues`]), with the ids of its
//! genes and samples. Every sparse source becomes one, and every one is
//! scanned by the same leaf plan ([`SparseTableExec`]):
//! - held in memory: scipy's CSC form of a cells × genes matrix (AnnData's
//!   `.X`) handed over from Python without copying, or an `.h5ad` / 10x
//!   `.h5` file read when the query is planned;
//! - kept in files (a `MatrixFile`): a 10x directory, its shape checked
//!   when the table is made and its entries read each time a query reads
//!   the table, into that query's memory pool.
//!
//! As a table it is `(gene, sample, value)` triples of its stored entries:
//! with the `long` layout and absent entries 0 (both implied). A Kendall
//! query whose input is the table itself does not read those triples: its
//! load takes the entries straight from the arrays (or the file),
//! `SparseTable::matrix`: one pass, no ids to look up and nothing to
//! sort. Other queries (`SELECT *`) read the triples.
//!
//! How the load knows: the plan it reads is this table's own scan, found by
//! what the plan *is* (`own_scan`, also through the FFI, where this
//! library's own plans come back as themselves). A table derived from it
//! (a view, a filter, a `CREATE TABLE AS` copy) is not its scan: it is read
//! as its rows, like any table.
//!
//! Arrays handed over are the caller's (Arrow buffers shared, not copied)
//! and are checked when the table is made: ids unique and non-null, offsets
//! ascending from 0 to the number of entries, each gene's sample indices
//! in range and strictly ascending, values finite. Being the caller's memory,
//! they are not reserved in a query's memory pool (as a memory table's
//! batches are not); what a query builds from them is.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, Float64Array, RecordBatch, StringArray, UInt32Array,
};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, Float64Type, Int32Type, Int64Type, Schema, SchemaRef, UInt32Type,
};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use rayon::prelude::*;

use super::matrix::ExpressionMatrix;
use super::own_scan::{own_scan, own_table};
use super::sparse::{SparseValues, Zeros};
use crate::memory::{QueryMemory, Reservation};

/// Rows per batch of triples.
const BATCH_ROWS: usize = 1 << 16;

/// A genes × samples matrix as its stored entries, gene by gene, as a
/// table (see the [module](self)).
#[derive(Debug, Clone)]
pub struct SparseTable(Arc<Source>);

/// Where a [`SparseTable`]'s entries are.
#[derive(Debug)]
enum Source {
    /// In memory, checked.
    Held(Arc<Entries>),
    /// In files, read when a query reads the table.
    File(Box<dyn MatrixFile>),
}

/// A sparse matrix kept in files (a 10x directory: a MatrixMarket file and
/// its two name files), a [`SparseTable`]'s source: its shape checked when
/// the table is made, its entries read each time a query reads the table.
pub(crate) trait MatrixFile: fmt::Debug + Send + Sync {
    /// How messages name it: `10x directory 'x'`.
    fn name(&self) -> String;
    /// What `EXPLAIN` shows of it besides its shape: its name and files.
    fn describe(&self) -> String;
    /// Genes, samples and stored entries, as checked when it was opened.
    fn shape(&self) -> (usize, usize, usize);
    /// Its ids and stored entries grouped by gene (by
    /// [`SparseValues::group`]), stored zeros kept or dropped as `zeros`
    /// says, reserved in `memory` before they are read.
    fn read(&self, memory: &QueryMemory, zeros: Zeros) -> Result<FileEntries>;
}

/// What a [`MatrixFile`] reads.
pub(crate) struct FileEntries {
    /// Gene and sample ids, unique.
    pub genes: Vec<String>,
    pub samples: Vec<String>,
    /// The stored entries, by gene.
    pub stored: SparseValues,
    /// Their memory and the ids'.
    pub memory: Reservation,
}

/// The checked arrays of a [`SparseTable`].
#[derive(Debug)]
struct Entries {
    genes: StringArray,
    samples: StringArray,
    /// The stored entries by gene (its stored zeros included).
    stored: SparseValues,
    /// Samples without any entry (each read as one explicit zero of the
    /// first gene, so that the triples name every sample).
    empty_samples: Vec<u32>,
    /// The arrays' memory, when this library allocated them (a file it
    /// read): reserved in a session's pool as long as the table lives.
    _memory: Option<Reservation>,
}

/// Entries read in order, at most, before the rest are read on rayon's
/// threads ([`empty_samples`]).
const EMPTY_SAMPLES_IN_ORDER: usize = 1 << 20;

/// The samples of `0..n` that no entry of `indices` (each in `0..n`) names,
/// ascending. Most matrices name every sample within their first entries
/// (a sample of 20,000 cells is met within a few hundred thousand), so
/// entries are read in order until every sample is met, for at most
/// [`EMPTY_SAMPLES_IN_ORDER`] entries; the rest, when some sample is still
/// unmet, on rayon's threads.
fn empty_samples(indices: &[u32], n: usize) -> Vec<u32> {
    let mut seen = vec![false; n];
    let mut unseen = n;
    let head = indices.len().min(EMPTY_SAMPLES_IN_ORDER);
    for chunk in indices[..head].chunks(1 << 12) {
        for &s in chunk {
            let s = s as usize;
            unseen -= usize::from(!seen[s]);
            seen[s] = true;
        }
        if unseen == 0 {
            return Vec::new();
        }
    }
    let rest = indices[head..]
        .par_chunks(1 << 20)
        .fold(
            || vec![false; n],
            |mut seen, chunk| {
                for &s in chunk {
                    seen[s as usize] = true;
                }
                seen
            },
        )
        .reduce(
            || vec![false; n],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                a
            },
        );
    (0..n as u32)
        .filter(|&s| !seen[s as usize] && !rest[s as usize])
        .collect()
}

/// Whether a gene's sample indices ascend strictly within `0..n` (one
/// branch-free pass: vectorised), as a sparse table's genes must.
pub(crate) fn ascending_within(indices: &[i32], n: usize) -> bool {
    let ascending = indices
        .iter()
        .zip(&indices[indices.len().min(1)..])
        .fold(true, |ok, (s, t)| ok & (s < t));
    ascending
        && indices.first().is_none_or(|&s| s >= 0)
        && indices.last().is_none_or(|&s| (s as i64) < n as i64)
}

fn error(msg: String) -> DataFusionError {
    DataFusionError::Plan(format!("sparse matrix: {msg}"))
}

/// Unique non-null ids, as a `StringArray`.
fn ids(array: &dyn Array, role: &str) -> Result<StringArray> {
    let strings = cast(array, &DataType::Utf8)
        .map_err(|e| error(format!("{role} ids must be strings: {e}")))?;
    let strings = strings.as_string::<i32>().clone();
    if strings.null_count() > 0 {
        return Err(error(format!("a {role} id is null")));
    }
    let mut seen = HashSet::with_capacity(strings.len());
    for id in strings.iter().flatten() {
        if !seen.insert(id) {
            return Err(error(format!("{role} id '{id}' is given twice")));
        }
    }
    Ok(strings)
}

/// The offsets (as 64-bit integers), sample indices (32-bit) and values
/// (64-bit floats) of a sparse table's arrays, each checked to hold no
/// null and to be of a type that converts.
fn typed_arrays(
    offsets: &dyn Array,
    indices: &dyn Array,
    data: &dyn Array,
) -> Result<(ScalarBuffer<i64>, ScalarBuffer<i32>, ScalarBuffer<f64>)> {
    let no_nulls = |a: &dyn Array, what: &str| {
        if a.null_count() > 0 {
            Err(error(format!("the {what} hold a null")))
        } else {
            Ok(())
        }
    };
    no_nulls(offsets, "offsets")?;
    no_nulls(indices, "sample indices")?;
    no_nulls(data, "values")?;
    let offsets = match offsets.data_type() {
        DataType::Int32 | DataType::Int64 => cast(offsets, &DataType::Int64)?,
        t => return Err(error(format!("offsets must be integers, got {t}"))),
    };
    let offsets = offsets.as_primitive::<Int64Type>().values().clone();
    let indices = match indices.data_type() {
        DataType::Int32 => indices.as_primitive::<Int32Type>().values().clone(),
        DataType::Int64 => cast(indices, &DataType::Int32)
            .map_err(|e| error(format!("sample indices beyond 32 bits: {e}")))?
            .as_primitive::<Int32Type>()
            .values()
            .clone(),
        t => {
            return Err(error(format!(
                "sample indices must be 32- or 64-bit integers, got {t}"
            )));
        }
    };
    let values: ScalarBuffer<f64> = match data.data_type() {
        DataType::Float64 => data.as_primitive::<Float64Type>().values().clone(),
        DataType::Float32 => cast(data, &DataType::Float64)?
            .as_primitive::<Float64Type>()
            .values()
            .clone(),
        t => {
            return Err(error(format!(
                "values must be 64- or 32-bit floats, got {t} (convert integers to floats)"
            )));
        }
    };
    Ok((offsets, indices, values))
}

/// Checks the offsets of `genes`: one per gene and one more, running from 0
/// to `entries` (as many as the `values`) without decreasing, so every
/// gene's entries are in range before any gene's are read.
fn check_offsets(
    offsets: &[i64],
    entries: usize,
    values: usize,
    genes: &StringArray,
) -> Result<()> {
    let m = genes.len();
    if offsets.len() != m + 1 {
        return Err(error(format!(
            "{m} genes need {} offsets, got {}",
            m + 1,
            offsets.len()
        )));
    }
    if values != entries {
        return Err(error(format!(
            "{entries} sample indices but {values} values"
        )));
    }
    if offsets[0] != 0 || offsets[m] != entries as i64 {
        return Err(error(format!(
            "offsets must run from 0 to the number of entries ({entries}), got {} .. {}",
            offsets[0], offsets[m]
        )));
    }
    if let Some(g) = (0..m).find(|&g| offsets[g + 1] < offsets[g]) {
        return Err(error(format!(
            "offsets decrease at gene '{}' ({} then {})",
            genes.value(g),
            offsets[g],
            offsets[g + 1]
        )));
    }
    Ok(())
}

/// Gene `g`'s non-zero values, its entries checked: sample indices in
/// range and strictly ascending, values finite; an error names the gene
/// and the sample (ids `(genes, samples)`) at fault.
fn gene_nonzero(
    g: usize,
    offsets: &[i64],
    indices: &[i32],
    values: &[f64],
    (genes, samples): (&StringArray, &StringArray),
) -> Result<usize> {
    let n = samples.len();
    let (a, b) = (offsets[g] as usize, offsets[g + 1] as usize);
    // One pass without branches (vectorised) for a gene that is
    // right; the loop below finds what is wrong with one that is not.
    let (gene_indices, gene_values) = (&indices[a..b], &values[a..b]);
    let in_order = ascending_within(gene_indices, n);
    let (finite, nonzero) = gene_values.iter().fold((true, 0usize), |(ok, count), &x| {
        (ok & x.is_finite(), count + usize::from(x != 0.0))
    });
    if in_order && finite {
        return Ok(nonzero);
    }
    let (mut last, mut nonzero) = (-1i64, 0usize);
    for k in a..b {
        let s = indices[k] as i64;
        if s < 0 || s >= n as i64 {
            return Err(error(format!(
                "gene '{}' has an entry at sample index {s}, outside 0..{n}",
                genes.value(g)
            )));
        }
        if s <= last {
            return Err(error(format!(
                "gene '{}' lists sample '{}' {} (each gene's sample indices must be \
                 strictly ascending; scipy: sort_indices() and sum_duplicates())",
                genes.value(g),
                samples.value(s as usize),
                if s == last { "twice" } else { "out of order" }
            )));
        }
        last = s;
        let x = values[k];
        if !x.is_finite() {
            return Err(error(format!(
                "gene '{}', sample '{}' has the value {x}; the values must be finite",
                genes.value(g),
                samples.value(s as usize)
            )));
        }
        nonzero += usize::from(x != 0.0);
    }
    Ok(nonzero)
}

impl SparseTable {
    /// The matrix of genes `genes` × samples `samples` (ids: strings, or
    /// anything that casts to them) whose gene `g` holds the values
    /// `data[offsets[g]..offsets[g + 1]]` at samples
    /// `indices[offsets[g]..offsets[g + 1]]` (positions in `samples`,
    /// ascending); the others are 0. `offsets` are 32- or 64-bit integers,
    /// `indices` 32-bit (64-bit ones are narrowed), `data` 64-bit floats
    /// (32-bit floats are widened). The arrays are checked here (see the
    /// [module](self)); an error names the gene, sample or entry at fault.
    pub fn try_new(
        genes: &dyn Array,
        samples: &dyn Array,
        offsets: &dyn Array,
        indices: &dyn Array,
        data: &dyn Array,
    ) -> Result<Self> {
        Self::build(genes, samples, offsets, indices, data, None)
    }

    /// [`SparseTable::try_new`] over arrays this library allocated (read
    /// from a file), whose memory `memory` holds in a session's pool for as
    /// long as the table lives.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn try_new_reserved(
        genes: &dyn Array,
        samples: &dyn Array,
        offsets: &dyn Array,
        indices: &dyn Array,
        data: &dyn Array,
        memory: Reservation,
    ) -> Result<Self> {
        Self::build(genes, samples, offsets, indices, data, Some(memory))
    }

    /// The table of the matrix in `file`, read each time a query reads it.
    pub(crate) fn from_file(file: Box<dyn MatrixFile>) -> Self {
        Self(Arc::new(Source::File(file)))
    }

    /// The checklist of [`SparseTable::try_new`], in order: the ids and
    /// the shape, the arrays' nulls and types ([`typed_arrays`]), the
    /// offsets ([`check_offsets`]), then each gene's entries on rayon's
    /// threads ([`gene_nonzero`]: an error names one bad gene).
    fn build(
        genes: &dyn Array,
        samples: &dyn Array,
        offsets: &dyn Array,
        indices: &dyn Array,
        data: &dyn Array,
        memory: Option<Reservation>,
    ) -> Result<Self> {
        let genes = ids(genes, "gene")?;
        let samples = ids(samples, "sample")?;
        let (m, n) = (genes.len(), samples.len());
        if n > u32::MAX as usize || m > u32::MAX as usize {
            return Err(error(format!("{m} genes x {n} samples is too large")));
        }
        let (offsets, indices, values) = typed_arrays(offsets, indices, data)?;
        check_offsets(&offsets, indices.len(), values.len(), &genes)?;
        let nonzero = (0..m)
            .into_par_iter()
            .map(|g| gene_nonzero(g, &offsets, &indices, &values, (&genes, &samples)))
            .try_reduce(|| 0, |x, y| Ok(x + y))?;
        let start: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
        // All indices are in range now, so non-negative: their bits are
        // the same as u32's.
        let cells = ScalarBuffer::<u32>::new(indices.inner().clone(), 0, indices.len());
        let zeros = values.len() - nonzero;
        let stored = SparseValues::shared(start, cells, values, zeros);
        Ok(Self(Arc::new(Source::Held(Arc::new(Entries::new(
            genes, samples, stored, memory,
        ))))))
    }

    /// `provider` as a sparse table, when it is one (also one that went
    /// through the FFI and came back); `None` for any other table, a view
    /// or a copy of one included.
    pub fn of_provider(provider: &dyn TableProvider) -> Option<Self> {
        own_table::<Self>(provider).cloned()
    }

    /// The sparse table `plan` scans, when `plan` is its own scan (see
    /// [`own_scan`]); `None` for a plan that filters, projects or copies
    /// its rows.
    pub(crate) fn of_scan(plan: &dyn ExecutionPlan) -> Option<Self> {
        own_scan::<SparseTableExec>(plan).map(|scan| scan.table.clone())
    }

    /// Genes, samples and stored entries.
    fn shape(&self) -> (usize, usize, usize) {
        match &*self.0 {
            Source::Held(t) => (t.genes.len(), t.samples.len(), t.stored.len()),
            Source::File(file) => file.shape(),
        }
    }

    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.shape().0
    }

    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.shape().1
    }

    /// Number of stored entries.
    pub fn entries(&self) -> usize {
        self.shape().2
    }

    /// The expression matrix a Kendall query reads: the non-zero entries
    /// (reserved in `memory`), or, when more than
    /// [`SPARSE_MAX_DENSITY`](super::sparse::SPARSE_MAX_DENSITY) of the
    /// values are non-zero, the dense matrix (as a long input with absent
    /// zeros is read). Held arrays are read in place (copied only to drop
    /// stored zeros); a file's entries are read now, straight into the
    /// matrix. `what` names the source in errors.
    pub(crate) fn matrix(&self, memory: &QueryMemory, what: &str) -> Result<ExpressionMatrix> {
        let (m, n, _) = self.shape();
        let too_few = |name: &str, unit: &str| {
            DataFusionError::Execution(format!(
                "{name} has {n} {unit}(s); Kendall's tau needs at least 2"
            ))
        };
        let matrix = match &*self.0 {
            Source::Held(t) => {
                if n < 2 {
                    return Err(too_few(what, "sample"));
                }
                let mut reservation =
                    memory.reserve(&format!("non-zero values ({m} genes x {n} samples)"), 0)?;
                let sparse = t.stored.without_zeros(&mut reservation)?;
                reservation.shrink_to(sparse.heap_bytes());
                let sample_ids = t.samples.iter().flatten().map(str::to_string).collect();
                ExpressionMatrix::from_sparse(t.genes.clone(), sample_ids, sparse, reservation)
            }
            Source::File(file) => {
                if n < 2 {
                    return Err(too_few(&file.name(), "cell"));
                }
                let read = file.read(memory, Zeros::Drop)?;
                let genes = StringArray::from(read.genes);
                ExpressionMatrix::from_sparse(genes, read.samples, read.stored, read.memory)
            }
        };
        matrix.dense_above_max_density(memory)
    }

    /// The table's entries: its own, or its file's, read now (zeros kept,
    /// reserved in `memory`).
    fn read_entries(&self, memory: &QueryMemory) -> Result<Arc<Entries>> {
        match &*self.0 {
            Source::Held(t) => Ok(Arc::clone(t)),
            Source::File(file) => {
                let read = file.read(memory, Zeros::Keep)?;
                let (genes, samples) = (
                    StringArray::from(read.genes),
                    StringArray::from(read.samples),
                );
                Ok(Arc::new(Entries::new(
                    genes,
                    samples,
                    read.stored,
                    Some(read.memory),
                )))
            }
        }
    }
}

impl Entries {
    /// The entries `stored` of genes `genes` × samples `samples`, their
    /// empty samples found.
    fn new(
        genes: StringArray,
        samples: StringArray,
        stored: SparseValues,
        memory: Option<Reservation>,
    ) -> Self {
        let n = samples.len();
        let empty_samples = match stored.cell_arrays().as_slice() {
            [] => (0..n as u32).collect(),
            [(cells, _)] => empty_samples(cells, n),
            blocks => {
                let cells: Vec<u32> = blocks.iter().flat_map(|(c, _)| c.iter().copied()).collect();
                empty_samples(&cells, n)
            }
        };
        Self {
            genes,
            samples,
            stored,
            empty_samples,
            _memory: memory,
        }
    }
}

/// The type of the id columns: keys into the genes' or the samples' ids.
fn id_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

/// The schema of a sparse table's triples: `gene`, `sample` (the long
/// layout's default column names, dictionary-keyed ids) and `value`.
pub(crate) fn schema() -> SchemaRef {
    let fields = vec![
        Field::new("gene", id_type(), false),
        Field::new("sample", id_type(), false),
        Field::new("value", DataType::Float64, false),
    ];
    Arc::new(Schema::new(fields))
}

#[async_trait]
impl TableProvider for SparseTable {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        match &*self.0 {
            Source::Held(_) => TableType::Temporary,
            Source::File(_) => TableType::Base,
        }
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection.cloned().unwrap_or_else(|| vec![0, 1, 2]);
        let schema = Arc::new(schema().project(&projection)?);
        // A file's triples come once it is read whole.
        let emission = match &*self.0 {
            Source::Held(_) => EmissionType::Incremental,
            Source::File(_) => EmissionType::Final,
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(1),
            emission,
            Boundedness::Bounded,
        );
        Ok(Arc::new(SparseTableExec {
            table: self.clone(),
            projection,
            schema,
            properties: Arc::new(properties),
        }))
    }
}

/// The scan of a [`SparseTable`], whatever its source: its triples, in
/// gene order (a Kendall query's load reads the table itself when its
/// input is this scan, see `SparseTable::of_scan`).
#[derive(Debug)]
pub struct SparseTableExec {
    table: SparseTable,
    projection: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for SparseTableExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let (m, n, entries) = self.table.shape();
        write!(f, "SparseTableExec: ")?;
        if let Source::File(file) = &*self.table.0 {
            write!(f, "{}, ", file.describe())?;
        }
        write!(f, "{m} genes x {n} samples, {entries} entries")
    }
}

impl ExecutionPlan for SparseTableExec {
    fn name(&self) -> &str {
        "SparseTableExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    /// The triples: at once for a table held in memory; for a file's, once
    /// its entries are read, on a blocking thread, into the memory pool of
    /// `context`.
    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let projection = self.projection.clone();
        let stream = match &*self.table.0 {
            Source::Held(entries) => {
                futures::stream::iter(Triples::new(Arc::clone(entries), projection)).boxed()
            }
            Source::File(file) => {
                let (name, table) = (file.name(), self.table.clone());
                let memory = QueryMemory::new(
                    Arc::clone(context.memory_pool()),
                    "sparse table reader",
                    &name,
                );
                let read = async move {
                    let entries = tokio::task::spawn_blocking(move || table.read_entries(&memory))
                        .await
                        .map_err(|e| {
                            DataFusionError::Execution(format!("reading {name} failed: {e}"))
                        })??;
                    Ok::<_, DataFusionError>(futures::stream::iter(Triples::new(
                        entries, projection,
                    )))
                };
                futures::TryStreamExt::try_flatten(futures::stream::once(read)).boxed()
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }
}

/// The triples of a table, batch by batch: gene after gene, its entries
/// (or one zero), then a zero of the first gene for each sample without
/// any entry.
struct Triples {
    table: Arc<Entries>,
    projection: Vec<usize>,
    /// The next gene, and the next of its entries.
    gene: usize,
    entry: usize,
    /// The next of the samples without any entry.
    empty_sample: usize,
}

impl Triples {
    fn new(table: Arc<Entries>, projection: Vec<usize>) -> Self {
        Self {
            table,
            projection,
            gene: 0,
            entry: 0,
            empty_sample: 0,
        }
    }

    fn batch(&mut self) -> Result<RecordBatch> {
        let t = &self.table;
        let mut genes = Vec::with_capacity(BATCH_ROWS);
        let mut samples = Vec::with_capacity(BATCH_ROWS);
        let mut values = Vec::with_capacity(BATCH_ROWS);
        while genes.len() < BATCH_ROWS && self.gene < t.genes.len() {
            let g = self.gene;
            let gene = t.stored.gene(g);
            if gene.is_empty() {
                genes.push(g as u32);
                samples.push(0);
                values.push(0.0);
                self.gene += 1;
                continue;
            }
            let take = (gene.len() - self.entry).min(BATCH_ROWS - genes.len());
            let taken = self.entry..self.entry + take;
            genes.extend(std::iter::repeat_n(g as u32, take));
            samples.extend_from_slice(&gene.cells[taken.clone()]);
            values.extend_from_slice(&gene.values[taken]);
            self.entry += take;
            if self.entry == gene.len() {
                self.gene += 1;
                self.entry = 0;
            }
        }
        while genes.len() < BATCH_ROWS && self.empty_sample < t.empty_samples.len() {
            genes.push(0);
            samples.push(t.empty_samples[self.empty_sample]);
            values.push(0.0);
            self.empty_sample += 1;
        }
        let keyed = |keys: Vec<u32>, ids: &StringArray| -> Result<ArrayRef> {
            Ok(Arc::new(DictionaryArray::<UInt32Type>::try_new(
                UInt32Array::from(keys),
                Arc::new(ids.clone()),
            )?))
        };
        let columns = vec![
            keyed(genes, &t.genes)?,
            keyed(samples, &t.samples)?,
            Arc::new(Float64Array::from(values)) as ArrayRef,
        ];
        Ok(RecordBatch::try_new(schema(), columns)?.project(&self.projection)?)
    }

    fn done(&self) -> bool {
        self.gene >= self.table.genes.len() && self.empty_sample >= self.table.empty_samples.len()
    }
}

impl Iterator for Triples {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        (!self.done()).then(|| self.batch())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The samples no index names, plainly.
    fn plain(indices: &[u32], n: usize) -> Vec<u32> {
        (0..n as u32).filter(|s| !indices.contains(s)).collect()
    }

    #[test]
    fn empty_samples_are_those_no_entry_names() {
        assert_eq!(empty_samples(&[], 3), vec![0, 1, 2]);
        assert_eq!(empty_samples(&[], 0), Vec::<u32>::new());
        assert_eq!(empty_samples(&[2, 0, 1, 0], 3), Vec::<u32>::new());
        assert_eq!(empty_samples(&[4, 0, 4, 2], 5), vec![1, 3]);
        // Past the entries read in order: sample 7 is met only after them,
        // sample 9 never; the others within the first few.
        let n = 12;
        let mut indices: Vec<u32> = (0..EMPTY_SAMPLES_IN_ORDER + 5000)
            .map(|k| [0, 1, 2, 3, 4, 5, 6, 8, 10, 11][k % 10])
            .collect();
        indices.push(7);
        indices.extend([3, 7, 0]);
        assert_eq!(empty_samples(&indices, n), vec![9]);
        assert_eq!(empty_samples(&indices, n), plain(&indices, n));
        // Every sample met past the entries read in order.
        indices.push(9);
        assert_eq!(empty_samples(&indices, n), Vec::<u32>::new());
    }
}

//! A genes × samples matrix held in memory as its stored entries, compressed
//! by gene ([`SparseTable`]): scipy's CSC form of a cells × genes matrix
//! (AnnData's `.X`), handed over from Python without copying.
//!
//! As a table it is `(gene, sample, value)` triples of its stored entries,
//! read like a 10x directory: with the `long` layout and absent entries 0
//! (both implied). A Kendall query does not read those triples: its load
//! takes the entries straight from the arrays (`SparseTable::matrix`), one
//! pass, no ids to look up and nothing to sort. Other queries (`SELECT *`)
//! read the triples.
//!
//! Through the FFI (a table registered in a Python `SessionContext`) the
//! table comes back to this library as itself, so it is still read in
//! place, by this library. A table derived from it (a view, a filter, a
//! `CREATE TABLE AS` copy) is not: it is read as its rows, like any table
//! (see `own_scan` in the input module).
//!
//! The arrays are the caller's (Arrow buffers shared, not copied) and are
//! checked when the table is made: ids unique and non-null, offsets
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
use rayon::prelude::*;

use super::matrix::ExpressionMatrix;
use super::own_scan::{own_scan, own_table};
use super::sparse::SparseValues;
use crate::memory::{QueryMemory, Reservation, try_with_capacity};

/// Rows per batch of triples.
const BATCH_ROWS: usize = 1 << 16;

/// A genes × samples matrix as its stored entries, gene by gene, as a
/// table (see the [module](self)).
#[derive(Debug, Clone)]
pub struct SparseTable(Arc<Entries>);

/// The checked arrays of a [`SparseTable`].
#[derive(Debug)]
struct Entries {
    genes: StringArray,
    samples: StringArray,
    /// Gene `g`'s entries are `offsets[g]..offsets[g + 1]`.
    offsets: Vec<usize>,
    /// Each entry's sample (its position in `samples`).
    indices: ScalarBuffer<i32>,
    /// Each entry's value.
    values: ScalarBuffer<f64>,
    /// Samples without any entry (each read as one explicit zero of the
    /// first gene, so that the triples name every sample).
    empty_samples: Vec<u32>,
    /// Stored entries whose value is not 0.
    nonzero: usize,
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
fn empty_samples(indices: &[i32], n: usize) -> Vec<u32> {
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
        let starts: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
        // All indices are in range now.
        let empty_samples = empty_samples(&indices, n);
        let entries = Arc::new(Entries {
            genes,
            samples,
            offsets: starts,
            indices,
            values,
            empty_samples,
            nonzero,
            _memory: memory,
        });
        Ok(Self(entries))
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
        own_scan::<SparseTableExec>(plan).map(|scan| Self(Arc::clone(&scan.table)))
    }

    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.0.genes()
    }

    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.0.samples()
    }

    /// Number of stored entries.
    pub fn entries(&self) -> usize {
        self.0.indices.len()
    }

    /// The expression matrix a Kendall query reads: the non-zero entries
    /// (reserved in `memory`), or, when more than
    /// [`SPARSE_MAX_DENSITY`](super::sparse::SPARSE_MAX_DENSITY) of the
    /// values are non-zero, the dense matrix
    /// (as a long input with absent zeros is read). `what` names the source
    /// in errors.
    pub(crate) fn matrix(&self, memory: &QueryMemory, what: &str) -> Result<ExpressionMatrix> {
        let t = &*self.0;
        let (m, n) = (t.genes(), t.samples());
        if n < 2 {
            return Err(DataFusionError::Execution(format!(
                "{what} has {n} sample(s); Kendall's tau needs at least 2"
            )));
        }
        let mut reservation =
            memory.reserve(&format!("non-zero values ({m} genes x {n} samples)"), 0)?;
        let sparse = if t.nonzero == t.values.len() {
            // No stored zeros: the arrays read in place (sample indices are
            // checked non-negative, so their bits are the same as u32).
            let cells = ScalarBuffer::<u32>::new(t.indices.inner().clone(), 0, t.indices.len());
            SparseValues::shared(t.offsets.clone(), cells, t.values.clone())
        } else {
            reservation.try_grow(SparseValues::bytes_for(m, t.nonzero, true))?;
            let mut start = Vec::with_capacity(m + 1);
            let mut cells = try_with_capacity(t.nonzero, "non-zero values")?;
            let mut values = try_with_capacity(t.nonzero, "non-zero values")?;
            start.push(0);
            for g in 0..m {
                for k in t.offsets[g]..t.offsets[g + 1] {
                    let x = t.values[k];
                    if x != 0.0 {
                        // In range (checked when made).
                        cells.push(t.indices[k] as u32);
                        values.push(x);
                    }
                }
                start.push(cells.len());
            }
            SparseValues::from_vecs(start, cells, values, Vec::new())
        };
        reservation.shrink_to(sparse.heap_bytes());
        let sample_ids = t.samples.iter().flatten().map(str::to_string).collect();
        ExpressionMatrix::from_sparse(t.genes.clone(), sample_ids, sparse, reservation)
            .dense_above_max_density(memory)
    }
}

impl Entries {
    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.genes.len()
    }

    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.samples.len()
    }
}

/// The type of the id columns: keys into the genes' or the samples' ids.
fn id_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

/// The schema of a sparse matrix's triples (a sparse table's, a 10x
/// directory's): `gene`, `sample` (the long layout's default column names,
/// dictionary-keyed ids) and `value`.
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
        TableType::Temporary
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
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Arc::new(SparseTableExec {
            table: Arc::clone(&self.0),
            projection,
            schema,
            properties: Arc::new(properties),
        }))
    }
}

/// The scan of a [`SparseTable`]: its triples, in gene order (a Kendall
/// query's load reads the table itself when its input is this scan, see
/// `SparseTable::of_scan`).
#[derive(Debug)]
pub struct SparseTableExec {
    table: Arc<Entries>,
    projection: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for SparseTableExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "SparseTableExec: {} genes x {} samples, {} entries",
            self.table.genes(),
            self.table.samples(),
            self.table.indices.len()
        )
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

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let triples = Triples {
            table: Arc::clone(&self.table),
            projection: self.projection.clone(),
            gene: 0,
            entry: 0,
            empty_sample: 0,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            futures::stream::iter(triples),
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
    fn batch(&mut self) -> Result<RecordBatch> {
        let t = &self.table;
        let mut genes = Vec::with_capacity(BATCH_ROWS);
        let mut samples = Vec::with_capacity(BATCH_ROWS);
        let mut values = Vec::with_capacity(BATCH_ROWS);
        while genes.len() < BATCH_ROWS && self.gene < t.genes() {
            let g = self.gene;
            let end = t.offsets[g + 1];
            if t.offsets[g] == end {
                genes.push(g as u32);
                samples.push(0);
                values.push(0.0);
                self.gene += 1;
                continue;
            }
            self.entry = self.entry.max(t.offsets[g]);
            let take = (end - self.entry).min(BATCH_ROWS - genes.len());
            for k in self.entry..self.entry + take {
                genes.push(g as u32);
                samples.push(t.indices[k] as u32);
                values.push(t.values[k]);
            }
            self.entry += take;
            if self.entry == end {
                self.gene += 1;
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
        self.gene >= self.table.genes() && self.empty_sample >= self.table.empty_samples.len()
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
    fn plain(indices: &[i32], n: usize) -> Vec<u32> {
        (0..n as u32)
            .filter(|&s| !indices.contains(&(s as i32)))
            .collect()
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
        let mut indices: Vec<i32> = (0..EMPTY_SAMPLES_IN_ORDER + 5000)
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

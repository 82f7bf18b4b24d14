//! A matrix read with absent entries as zero (`kendall.absent = 'zero'`:
//! sparse counts, 10x directories, AnnData from Python), kept as its
//! non-zero values only: memory that follows the non-zeros.
//!
//! A long input whose absent rows are zeros is held this way when no value
//! is missing and at most half of its genes × samples values are non-zero
//! ([`SPARSE_MAX_DENSITY`]); nothing of size genes × samples is allocated
//! for it. Its ranks are then sparse too (see
//! [`RankedMatrix::try_build_sparse`](crate::rank::RankedMatrix::try_build_sparse)).

use std::mem::size_of;
use std::ops::Range;

use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::common::internal_err;
use datafusion::error::Result;

use super::values::Exact;
use rayon::prelude::*;

use crate::memory::{Reservation, try_filled, try_with_capacity, try_zeroed};
use crate::sort::{balanced_bounds, split_mut};

/// Up to this share of non-zero values a long input with absent zeros is
/// kept sparse; above it, dense (a dense row takes 8 bytes a value, an
/// entry 12).
pub const SPARSE_MAX_DENSITY: f64 = 0.5;

/// The non-zero values of a genes × samples matrix, gene by gene: the
/// one by-gene form of a sparse matrix. Long triples, a 10x directory,
/// an `.h5ad` file and Python's sparse matrices all become one
/// ([`SparseValues::from_triples`] groups triples by gene; a
/// [`SparseTable`](super::sparse_table::SparseTable) holds its stored
/// entries as one).
///
/// Every matrix a query reads holds non-zero values only. A sparse table's
/// stored entries may also hold explicit zeros (a file or an array may
/// list them, and its triples show them): [`SparseValues::stored_zeros`]
/// counts them, `SparseValues::without_zeros` drops them.
///
/// The entries are held in blocks of consecutive genes: one block for a
/// matrix read here, two for a stacked pair of inputs (each side's block as
/// it was, not copied into one). A block's arrays are Arrow buffers, either
/// built here or shared with their owner (a sparse table's arrays, read in
/// place); only the former count as memory this matrix holds.
#[derive(Debug, Default, Clone)]
pub struct SparseValues {
    /// Gene `g`'s entries are `start[g]..start[g + 1]`, the entries of all
    /// blocks numbered end to end (one offset per gene, and one more).
    start: Vec<usize>,
    /// Blocks of consecutive genes, in gene order.
    blocks: Vec<Block>,
    /// Entries whose value is 0 (a table's stored zeros); 0 in a matrix
    /// a query reads.
    zeros: usize,
}

/// Whether grouping triples by gene keeps their explicit zeros (a table's
/// stored entries) or drops them (a matrix a query reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zeros {
    Keep,
    Drop,
}

/// The entries of consecutive genes.
#[derive(Debug, Clone)]
struct Block {
    /// Its first gene; its entries are numbered from `start[first_gene]`.
    first_gene: usize,
    /// The sample of each entry, ascending within a gene.
    cells: ScalarBuffer<u32>,
    /// Each entry's value: finite (and non-zero, but for a table's
    /// stored zeros). When `constant`, the one value of every entry, as
    /// many times as the block's longest gene has entries (a binarised
    /// matrix's 1s: 8 bytes a gene's entry no longer take).
    values: ScalarBuffer<f64>,
    /// Whether every entry has one value (see `values`).
    constant: bool,
    /// Per entry, what a 64-bit integer loses as f64 (see
    /// [`RankedMatrix::from_exact`](crate::rank::RankedMatrix::from_exact)); empty
    /// when every value is exact.
    residuals: ScalarBuffer<i16>,
    /// Whether the arrays belong to someone else (not held here).
    shared: bool,
}

impl Block {
    fn heap_bytes(&self) -> usize {
        if self.shared {
            return 0;
        }
        self.cells.inner().capacity()
            + self.values.inner().capacity()
            + self.residuals.inner().capacity()
    }
}

/// One gene's entries, in sample order.
#[derive(Debug, Clone, Copy)]
pub struct GeneEntries<'a> {
    /// The samples, ascending.
    pub cells: &'a [u32],
    /// Their values: finite and non-zero.
    pub values: &'a [f64],
    /// Their residuals; empty when every value is exact.
    pub residuals: &'a [i16],
}

impl GeneEntries<'_> {
    /// Number of non-zero values.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether the gene has no non-zero value.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Entry `q`'s value, exactly.
    #[inline]
    pub fn exact(&self, q: usize) -> Exact {
        Exact {
            value: self.values[q],
            residual: self.residuals.get(q).copied().unwrap_or(0),
        }
    }
}

/// What [`SparseValues::from_triples`] found wrong: gene `gene` has two
/// values for one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatedSample {
    /// The gene's number.
    pub gene: u32,
}

impl SparseValues {
    /// The matrix whose gene `g` has the entries `start[g]..start[g + 1]`
    /// of `cells` (ascending within a gene), `values` (finite, non-zero)
    /// and `residuals` (empty when every value is exact); `start` begins
    /// at 0 and ends at the number of entries. Panics when the lengths
    /// disagree.
    pub fn from_vecs(
        start: Vec<usize>,
        cells: Vec<u32>,
        values: Vec<f64>,
        residuals: Vec<i16>,
    ) -> Self {
        Self::from_block(
            start,
            cells.into(),
            values.into(),
            residuals.into(),
            false,
            false,
        )
    }

    /// The matrix whose gene `g` has the entries `start[g]..start[g + 1]`
    /// of `cells` (ascending within a gene), every one of them of the
    /// value `value` (finite, non-zero, exact), held once per entry of
    /// the longest gene rather than once per entry.
    fn from_constant(start: Vec<usize>, cells: Vec<u32>, value: f64) -> Self {
        let longest = start.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let values = vec![value; longest].into();
        Self::from_block(start, cells.into(), values, Vec::new().into(), false, true)
    }

    /// The stored entries of a sparse table, over someone else's arrays
    /// (read in place, not held here): like [`SparseValues::from_vecs`],
    /// but `zeros` of the values may be 0.
    pub(crate) fn shared(
        start: Vec<usize>,
        cells: ScalarBuffer<u32>,
        values: ScalarBuffer<f64>,
        zeros: usize,
    ) -> Self {
        let mut stored = Self::from_block(start, cells, values, Vec::new().into(), true, false);
        stored.zeros = zeros;
        stored
    }

    /// The matrix of one block; `constant` as in [`Block`] (`values` then
    /// the longest gene's entries' worth, no residuals).
    fn from_block(
        start: Vec<usize>,
        cells: ScalarBuffer<u32>,
        values: ScalarBuffer<f64>,
        residuals: ScalarBuffer<i16>,
        shared: bool,
        constant: bool,
    ) -> Self {
        let entries = start.last().copied().unwrap_or(0);
        assert!(start.first().is_none_or(|&s| s == 0), "entries start at 0");
        assert_eq!(cells.len(), entries, "one sample per entry");
        if constant {
            let longest = start.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            assert_eq!(values.len(), longest, "the value for the longest gene");
            assert!(residuals.is_empty(), "residuals");
        } else {
            assert_eq!(values.len(), entries, "one value per entry");
            assert!(
                residuals.is_empty() || residuals.len() == entries,
                "residuals"
            );
        }
        let blocks = if start.len() > 1 {
            vec![Block {
                first_gene: 0,
                cells,
                values,
                residuals,
                shared,
                constant,
            }]
        } else {
            Vec::new()
        };
        Self {
            start,
            blocks,
            zeros: 0,
        }
    }

    /// The matrix of `genes` rows of `samples` finite values (row-major),
    /// its zeros dropped. Panics on a value that is not finite.
    pub fn from_dense_rows(genes: usize, samples: usize, rows: &[f64]) -> Self {
        assert_eq!(rows.len(), genes * samples, "matrix shape");
        let (mut start, mut cells, mut values) = (vec![0], Vec::new(), Vec::new());
        for g in 0..genes {
            for (a, &x) in rows[g * samples..(g + 1) * samples].iter().enumerate() {
                assert!(x.is_finite(), "finite values");
                if x != 0.0 {
                    cells.push(a as u32);
                    values.push(x);
                }
            }
            start.push(cells.len());
        }
        Self::from_vecs(start, cells, values, Vec::new())
    }

    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Each gene's first entry, and one past the last entry (see
    /// [`SparseValues::entries`]).
    pub fn start(&self) -> &[usize] {
        &self.start
    }

    /// Gene `g`'s entries, numbered across the whole matrix.
    #[inline]
    pub fn entries(&self, g: usize) -> Range<usize> {
        self.start[g]..self.start[g + 1]
    }

    /// Gene `g`'s entries.
    #[inline]
    pub fn gene(&self, g: usize) -> GeneEntries<'_> {
        let b = &self.blocks[self.blocks.partition_point(|b| b.first_gene <= g) - 1];
        let base = self.start[b.first_gene];
        let range = self.start[g] - base..self.start[g + 1] - base;
        GeneEntries {
            cells: &b.cells[range.clone()],
            values: if b.constant {
                &b.values[..range.len()]
            } else {
                &b.values[range.clone()]
            },
            residuals: if b.residuals.is_empty() {
                &[]
            } else {
                &b.residuals[range]
            },
        }
    }

    /// Where gene `g`'s samples are: the number of its block (see
    /// [`SparseValues::cell_arrays`]) and their range in that block's array.
    #[inline]
    pub(crate) fn cells_place(&self, g: usize) -> (usize, Range<usize>) {
        let b = self.blocks.partition_point(|b| b.first_gene <= g) - 1;
        let base = self.start[self.blocks[b].first_gene];
        (b, self.start[g] - base..self.start[g + 1] - base)
    }

    /// Each block's array of samples (a handle: cloning it copies nothing)
    /// and the bytes it holds that are not shared with an owner (0 for a
    /// table's arrays read in place).
    pub(crate) fn cell_arrays(&self) -> Vec<(ScalarBuffer<u32>, usize)> {
        self.blocks
            .iter()
            .map(|b| {
                let held = if b.shared {
                    0
                } else {
                    b.cells.inner().capacity()
                };
                (b.cells.clone(), held)
            })
            .collect()
    }

    /// Number of non-zero values.
    pub fn len(&self) -> usize {
        self.start.last().copied().unwrap_or(0)
    }

    /// Whether no value is non-zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stored entries whose value is 0 (see the [type](SparseValues)).
    pub fn stored_zeros(&self) -> usize {
        self.zeros
    }

    /// The matrix without its stored zeros: itself (its arrays shared,
    /// not copied) when it has none, else its non-zero entries copied,
    /// reserved in `reservation` first.
    pub(crate) fn without_zeros(&self, reservation: &mut Reservation) -> Result<Self> {
        if self.zeros == 0 {
            return Ok(self.clone());
        }
        let kept = self.len() - self.zeros;
        reservation.try_grow(Self::bytes_for(self.genes(), kept, self.is_exact()))?;
        let mut start = Vec::with_capacity(self.start.len());
        let mut cells = try_with_capacity(kept, "non-zero values")?;
        let mut values = try_with_capacity(kept, "non-zero values")?;
        let mut residuals = if self.is_exact() {
            Vec::new()
        } else {
            try_with_capacity(kept, "non-zero values")?
        };
        start.push(0);
        for g in 0..self.genes() {
            let gene = self.gene(g);
            for q in 0..gene.len() {
                let x = gene.exact(q);
                if x.value != 0.0 || x.residual != 0 {
                    cells.push(gene.cells[q]);
                    values.push(x.value);
                    if !self.is_exact() {
                        residuals.push(x.residual);
                    }
                }
            }
            start.push(cells.len());
        }
        Ok(Self::from_vecs(start, cells, values, residuals))
    }

    /// Whether every value is exact (no residuals).
    pub fn is_exact(&self) -> bool {
        self.blocks.iter().all(|b| b.residuals.is_empty())
    }

    /// Heap bytes held (arrays shared with their owner are not).
    pub fn heap_bytes(&self) -> usize {
        self.start.capacity() * size_of::<usize>()
            + self.blocks.iter().map(Block::heap_bytes).sum::<usize>()
    }

    /// Bytes `entries` non-zero values of `genes` genes take.
    pub fn bytes_for(genes: usize, entries: usize, exact: bool) -> usize {
        let per_entry = size_of::<u32>() + size_of::<f64>() + if exact { 0 } else { 2 };
        (genes + 1)
            .saturating_mul(size_of::<usize>())
            .saturating_add(entries.saturating_mul(per_entry))
    }

    /// The matrix of `genes` genes × `samples` samples whose rows are
    /// `(gene, sample)` numbers `cells` with values `values` (and
    /// `residuals`, empty when all are 0), in any order, none missing:
    /// exact zeros are dropped, each gene's entries come in sample order.
    /// Reserved in `reservation` before it is allocated. `Ok(Err(..))`
    /// names a gene with two rows for one sample.
    ///
    /// The one grouping of triples by gene: long inputs and 10x
    /// directories (their tables' stored entries too, zeros kept, through
    /// `SparseValues::group`) all come through here.
    pub fn from_triples(
        shape: (usize, usize),
        cells: &[(u32, u32)],
        values: &[f64],
        residuals: &[i16],
        reservation: &mut Reservation,
    ) -> Result<std::result::Result<Self, RepeatedSample>> {
        Self::group(shape, cells, values, residuals, Zeros::Drop, reservation)
    }

    /// [`SparseValues::from_triples`], explicit zeros kept or dropped as
    /// `zeros` says: a stable counting sort by gene straight into the
    /// entries (12 bytes each, 14 with residuals, 4 when every row has one
    /// value, held once per entry of the longest gene), then each gene checked
    /// for a sample given twice and its zeros dropped. Rows in sample order
    /// (a 10x or MatrixMarket file, cell by cell) or in (gene, sample)
    /// order come out in sample order within each gene; rows in any other
    /// order are first put in sample order by a counting sort of their
    /// numbers (4 bytes each, the only other memory of the rows' size).
    /// O(rows + genes + samples), on rayon's threads: the rows are counted
    /// by gene in chunks, then each thread takes a range of genes of about
    /// equal entries, reads every row and writes its genes' own part of the
    /// entries (fresh memory, first touched there), and checks it. On
    /// return `reservation` holds [`SparseValues::heap_bytes`].
    pub(crate) fn group(
        shape: (usize, usize),
        cells: &[(u32, u32)],
        values: &[f64],
        residuals: &[i16],
        zeros: Zeros,
        reservation: &mut Reservation,
    ) -> Result<std::result::Result<Self, RepeatedSample>> {
        let rows = Triples {
            cells,
            values: RunValues::Each(values),
            residuals,
        };
        Self::group_runs(shape, &[rows], zeros, reservation)
    }

    /// [`SparseValues::group`] of the rows of `runs`, one after the other,
    /// read where they are (a file's blocks as parsed: no array of all
    /// rows is made).
    pub(crate) fn group_runs(
        (genes, samples): (usize, usize),
        runs: &[Triples<'_>],
        zeros: Zeros,
        reservation: &mut Reservation,
    ) -> Result<std::result::Result<Self, RepeatedSample>> {
        debug_assert!(runs.iter().all(|run| {
            let values = match run.values {
                RunValues::All(_) => run.cells.len(),
                RunValues::Each(values) => values.len(),
            };
            values == run.cells.len()
                && (run.residuals.is_empty() || run.residuals.len() == run.cells.len())
                && run
                    .cells
                    .iter()
                    .all(|&(g, s)| (g as usize) < genes && (s as usize) < samples)
        }));
        let len = runs.iter().map(|run| run.cells.len()).sum::<usize>();
        let exact = runs
            .par_iter()
            .all(|run| run.residuals.par_iter().all(|&r| r == 0));
        // Every row of one non-zero value (a binarised matrix): the value
        // is held once per entry of the longest gene, not once per entry.
        let constant = match runs.first().map(|run| run.values) {
            Some(RunValues::All(value)) if exact && value != 0.0 => runs
                .iter()
                .all(
                    |run| matches!(run.values, RunValues::All(v) if v.to_bits() == value.to_bits()),
                )
                .then_some(value),
            _ => None,
        };
        let parts = rayon::current_num_threads().clamp(1, genes.max(1));
        // The entries (their values at most `samples` of them when
        // constant), `start`, and each thread's counts by gene (and its
        // genes' next free slots).
        let entries = match constant {
            Some(_) => Self::bytes_for(genes, len, exact)
                .saturating_sub(len.saturating_mul(size_of::<f64>()))
                .saturating_add(samples.min(len).saturating_mul(size_of::<f64>())),
            None => Self::bytes_for(genes, len, exact),
        };
        reservation.try_grow(
            entries.saturating_add((parts + 1).saturating_mul((genes + 1) * size_of::<usize>())),
        )?;
        let mut start = gene_starts(genes, runs);
        let in_sample_order =
            all_in_order(runs, |a, b| a.1 <= b.1) || all_in_order(runs, |a, b| a <= b);
        let by_sample = if in_sample_order {
            None
        } else {
            reservation.try_grow(len * size_of::<u32>() + (samples + 1) * size_of::<usize>())?;
            Some(in_sample_order_numbers(samples, runs, len)?)
        };
        let bounds = balanced_bounds(&start, parts);
        let rows = Rows {
            runs,
            starts: runs
                .iter()
                .scan(0, |at, run| {
                    *at += run.cells.len();
                    Some(*at - run.cells.len())
                })
                .collect(),
            len,
            exact,
            constant,
            order: by_sample.as_deref(),
        };
        let mut by_gene = rows.scatter(&start, &bounds)?;
        drop(by_sample);
        let stored_zeros = match by_gene.check(&start, &bounds) {
            Err(gene) => return Ok(Err(RepeatedSample { gene })),
            Ok(0) => 0,
            Ok(found) if zeros == Zeros::Keep => found,
            // Zeros to drop: the entries after them move up.
            Ok(_) => match by_gene.compact(&mut start, zeros) {
                Ok(kept) => kept,
                Err(gene) => return Ok(Err(RepeatedSample { gene })),
            },
        };
        let ByGene {
            mut cells,
            mut values,
            mut residuals,
            constant,
        } = by_gene;
        cells.shrink_to_fit();
        values.shrink_to_fit();
        residuals.shrink_to_fit();
        let mut matrix = match constant {
            Some(value) => Self::from_constant(start, cells, value),
            None => Self::from_vecs(start, cells, values, residuals),
        };
        matrix.zeros = stored_zeros;
        reservation.shrink_to(matrix.heap_bytes());
        Ok(Ok(matrix))
    }

    /// [`SparseValues::from_triples`] of rows in strictly ascending
    /// `(gene, sample)` order (so no sample twice), taking their arrays: the
    /// non-zero rows are moved to the front (nothing moves when none is 0),
    /// the samples taken out of `cells` where they are, so nothing of the
    /// rows' size is allocated (giving back their spare room may move
    /// them). On return `reservation` holds [`SparseValues::heap_bytes`]:
    /// the caller releases what it had reserved for the arrays. Rows out
    /// of order are an internal error: the caller checks the order
    /// ([`SparseValues::from_triples`] takes any).
    pub fn from_sorted_triples(
        genes: usize,
        mut cells: Vec<(u32, u32)>,
        mut values: Vec<f64>,
        mut residuals: Vec<i16>,
        reservation: &mut Reservation,
    ) -> Result<Self> {
        let shaped = values.len() == cells.len()
            && (residuals.is_empty() || residuals.len() == cells.len())
            && cells.last().is_none_or(|&(g, _)| (g as usize) < genes);
        if !shaped || !cells.is_sorted_by(|a, b| a < b) {
            return internal_err!(
                "sorted triples: arrays of different lengths, or rows out of (gene, sample) order"
            );
        }
        if residuals.iter().all(|&r| r == 0) {
            residuals = Vec::new();
        }
        let all_nonzero = values.iter().all(|&x| x != 0.0);
        if !all_nonzero {
            let mut kept = 0;
            for k in 0..cells.len() {
                let residual = residuals.get(k).copied().unwrap_or(0);
                if values[k] != 0.0 || residual != 0 {
                    cells[kept] = cells[k];
                    values[kept] = values[k];
                    if !residuals.is_empty() {
                        residuals[kept] = residual;
                    }
                    kept += 1;
                }
            }
            cells.truncate(kept);
            values.truncate(kept);
            residuals.truncate(kept);
        }
        reservation.try_grow((genes + 1).saturating_mul(size_of::<usize>()))?;
        let mut start = try_filled(genes + 1, 0usize, "non-zero values")?;
        for &(g, _) in &cells {
            start[g as usize + 1] += 1;
        }
        for g in 0..genes {
            start[g + 1] += start[g];
        }
        // In place (a u32 where each (u32, u32) was), then the room of the
        // genes given back.
        let mut samples: Vec<u32> = cells.into_iter().map(|(_, s)| s).collect();
        samples.shrink_to_fit();
        values.shrink_to_fit();
        residuals.shrink_to_fit();
        let matrix = Self::from_vecs(start, samples, values, residuals);
        let held = matrix.heap_bytes();
        reservation.try_grow(held.saturating_sub(reservation.size()))?;
        reservation.shrink_to(held);
        Ok(matrix)
    }

    /// The dense genes × `samples` values (row-major) and their residuals
    /// (empty when every value is exact).
    pub fn to_dense(&self, samples: usize) -> Result<(Vec<f64>, Vec<i16>)> {
        let genes = self.genes();
        let mut values = try_filled(genes * samples, 0f64, "input values")?;
        let mut residuals = if self.is_exact() {
            Vec::new()
        } else {
            try_filled(genes * samples, 0i16, "input values")?
        };
        for g in 0..genes {
            let gene = self.gene(g);
            for q in 0..gene.len() {
                let cell = g * samples + gene.cells[q] as usize;
                let x = gene.exact(q);
                values[cell] = x.value;
                if !residuals.is_empty() {
                    residuals[cell] = x.residual;
                }
            }
        }
        Ok((values, residuals))
    }

    /// The matrix on the samples `keep` maps to (`keep[s]` = the new number
    /// of sample `s`, or `u32::MAX` to drop it), entries re-sorted by their
    /// new numbers (`keep`'s kept numbers are `0..k`).
    pub fn remap_samples(&self, keep: &[u32]) -> Result<SparseValues> {
        let exact = self.is_exact();
        let numbers = keep.iter().filter(|&&to| to != u32::MAX);
        let in_order = numbers.clone().zip(numbers.skip(1)).all(|(a, b)| a < b);
        let kept_samples = keep.iter().filter(|&&to| to != u32::MAX).count();
        let (mut start, mut cells, mut values) =
            (Vec::with_capacity(self.start.len()), Vec::new(), Vec::new());
        let mut residuals = Vec::new();
        start.push(0);
        let mut gene_entries: Vec<(u32, f64, i16)> = Vec::new();
        for g in 0..self.genes() {
            let gene = self.gene(g);
            gene_entries.clear();
            gene_entries.extend((0..gene.len()).filter_map(|q| {
                let to = keep[gene.cells[q] as usize];
                let x = gene.exact(q);
                (to != u32::MAX).then_some((to, x.value, x.residual))
            }));
            if !in_order {
                // New numbers in another order: the gene's entries re-sorted
                // by them (distinct samples: distinct numbers).
                gene_entries.sort_unstable_by_key(|&(to, _, _)| to);
            }
            debug_assert!(
                gene_entries
                    .iter()
                    .all(|&(to, _, _)| (to as usize) < kept_samples)
            );
            for &(to, x, r) in &gene_entries {
                cells.push(to);
                values.push(x);
                if !exact {
                    residuals.push(r);
                }
            }
            start.push(cells.len());
        }
        Ok(Self::from_vecs(start, cells, values, residuals))
    }

    /// Gene rows of `self` then of `other` (on the same samples): `other`'s
    /// block(s) are kept as they are, not copied.
    pub fn append(&mut self, other: SparseValues) {
        let genes = self.genes();
        let base = self.len();
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.start
            .extend(other.start.iter().skip(1).map(|&s| base + s));
        self.blocks.extend(other.blocks.into_iter().map(|b| Block {
            first_gene: genes + b.first_gene,
            ..b
        }));
        self.zeros += other.zeros;
    }
}

/// A run of rows to group by gene ([`SparseValues::group_runs`]):
/// `(gene, sample)` numbers, their values, and their residuals (empty when
/// every value is exact).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Triples<'a> {
    /// Each row's `(gene, sample)`.
    pub cells: &'a [(u32, u32)],
    /// Each row's value.
    pub values: RunValues<'a>,
    /// Each row's residual, or none (all 0).
    pub residuals: &'a [i16],
}

/// The values of a run of rows: one per row, or one for all of them (a
/// binarised matrix's 1s, held once).
#[derive(Debug, Clone, Copy)]
pub(crate) enum RunValues<'a> {
    /// Row `k`'s value at `k`.
    Each(&'a [f64]),
    /// Every row's value.
    All(f64),
}

impl RunValues<'_> {
    /// Row `k`'s value.
    #[inline]
    fn get(&self, k: usize) -> f64 {
        match self {
            RunValues::Each(values) => values[k],
            RunValues::All(value) => *value,
        }
    }
}

/// Whether every two rows of `runs` that follow each other (within a run
/// and from one run to the next) are `in_order`.
fn all_in_order(
    runs: &[Triples<'_>],
    in_order: impl Fn(&(u32, u32), &(u32, u32)) -> bool + Sync,
) -> bool {
    let within = runs
        .par_iter()
        .all(|run| run.cells.par_windows(2).all(|w| in_order(&w[0], &w[1])));
    let ends: Vec<(u32, u32)> = runs
        .iter()
        .filter_map(|run| Some([*run.cells.first()?, *run.cells.last()?]))
        .flatten()
        .collect();
    // (first, last) of each non-empty run: each last with the next first.
    let links = ends.get(1..).unwrap_or_default();
    within
        && links
            .chunks(2)
            .all(|w| w.len() < 2 || in_order(&w[0], &w[1]))
}

/// The numbers `0..len` of the rows of `runs` (`len` of them, samples
/// below `samples`), numbered one run after the other, in sample order: a
/// stable counting sort.
fn in_sample_order_numbers(samples: usize, runs: &[Triples<'_>], len: usize) -> Result<Vec<u32>> {
    let cells = || runs.iter().flat_map(|run| run.cells.iter());
    let mut next = vec![0usize; samples + 1];
    for &(_, s) in cells() {
        next[s as usize + 1] += 1;
    }
    for s in 0..samples {
        next[s + 1] += next[s];
    }
    let mut order = try_filled(len, 0u32, "rows in sample order")?;
    for (k, &(_, s)) in cells().enumerate() {
        order[next[s as usize]] = k as u32;
        next[s as usize] += 1;
    }
    Ok(order)
}

/// Where each gene's entries start (`start[g]..start[g + 1]` gene `g`'s,
/// `genes + 1` offsets) among the rows of `runs` grouped by gene: the rows
/// counted by gene in chunks on rayon's threads, the counts summed.
fn gene_starts(genes: usize, runs: &[Triples<'_>]) -> Vec<usize> {
    let zeros = || vec![0usize; genes + 1];
    let mut start = runs
        .par_iter()
        .flat_map(|run| run.cells.par_chunks(1 << 20))
        .fold(zeros, |mut counts, chunk| {
            for &(g, _) in chunk {
                counts[g as usize + 1] += 1;
            }
            counts
        })
        .reduce(zeros, |mut a, b| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            a
        });
    for g in 0..genes {
        start[g + 1] += start[g];
    }
    start
}

/// The rows [`SparseValues::group_runs`] groups: runs of `(gene, sample)`
/// numbers, values and residuals, read in sample order (`order`, numbers
/// of the rows one run after the other, when they are not in it already).
struct Rows<'a> {
    runs: &'a [Triples<'a>],
    /// Where each run starts among the rows.
    starts: Vec<usize>,
    /// Rows in all.
    len: usize,
    /// Whether every residual is 0 (none is stored).
    exact: bool,
    /// Every row's value, when all have one (no values are stored).
    constant: Option<f64>,
    order: Option<&'a [u32]>,
}

impl Rows<'_> {
    /// Row `k` (numbered one run after the other): `(gene, sample)`, value
    /// and residual.
    #[inline]
    fn row(&self, k: usize) -> ((u32, u32), f64, i16) {
        let r = self.starts.partition_point(|&s| s <= k) - 1;
        let (run, at) = (&self.runs[r], k - self.starts[r]);
        let residual = run.residuals.get(at).copied().unwrap_or(0);
        (run.cells[at], run.values.get(at), residual)
    }
}

impl Rows<'_> {
    /// The rows grouped by gene (`start`), each gene's in sample order: on
    /// rayon's threads, thread `k` taking genes `bounds[k]..bounds[k + 1]`,
    /// reading every row and writing its genes' entries, a range of the
    /// arrays no other thread writes. The arrays are fresh zeroed memory
    /// (no pass writes the zeros): their pages are first touched here.
    fn scatter(&self, start: &[usize], bounds: &[usize]) -> Result<ByGene> {
        let (len, exact, constant) = (self.len, self.exact, self.constant.is_some());
        let mut by_gene = ByGene {
            cells: try_zeroed(len, "non-zero values")?,
            values: if constant {
                Vec::new()
            } else {
                try_zeroed(len, "non-zero values")?
            },
            residuals: if exact {
                Vec::new()
            } else {
                try_zeroed(len, "non-zero values")?
            },
            constant: self.constant,
        };
        let ranges = entry_ranges(start, bounds);
        let residuals: Vec<&mut [i16]> = if exact {
            ranges.iter().map(|_| <&mut [i16]>::default()).collect()
        } else {
            split_mut(&mut by_gene.residuals, &ranges)
        };
        let values: Vec<&mut [f64]> = if constant {
            ranges.iter().map(|_| <&mut [f64]>::default()).collect()
        } else {
            split_mut(&mut by_gene.values, &ranges)
        };
        split_mut(&mut by_gene.cells, &ranges)
            .into_par_iter()
            .zip(values)
            .zip(residuals)
            .zip(bounds.par_windows(2))
            .for_each(|(((cells, values), residuals), w)| {
                let (first, end) = (w[0], w[1]);
                let base = start[first];
                let mut next: Vec<usize> = start[first..end].iter().map(|&s| s - base).collect();
                let mut put = |(g, s): (u32, u32), value: f64, residual: i16| {
                    let g = g as usize;
                    if (first..end).contains(&g) {
                        let at = &mut next[g - first];
                        cells[*at] = s;
                        if !constant {
                            values[*at] = value;
                        }
                        if !exact {
                            residuals[*at] = residual;
                        }
                        *at += 1;
                    }
                };
                match self.order {
                    None => {
                        for run in self.runs {
                            let residual = |k: usize| match exact {
                                true => 0,
                                false => run.residuals.get(k).copied().unwrap_or(0),
                            };
                            match run.values {
                                RunValues::Each(values) => {
                                    for (k, (&cell, &value)) in
                                        run.cells.iter().zip(values).enumerate()
                                    {
                                        put(cell, value, residual(k));
                                    }
                                }
                                RunValues::All(value) => {
                                    for (k, &cell) in run.cells.iter().enumerate() {
                                        put(cell, value, residual(k));
                                    }
                                }
                            }
                        }
                    }
                    Some(order) => order.iter().for_each(|&k| {
                        let (cell, value, residual) = self.row(k as usize);
                        put(cell, value, residual);
                    }),
                }
            });
        Ok(by_gene)
    }
}

/// The entries of each range of genes `bounds` (as
/// [`balanced_bounds`](crate::sort::balanced_bounds) gives them).
fn entry_ranges(start: &[usize], bounds: &[usize]) -> Vec<Range<usize>> {
    bounds
        .windows(2)
        .map(|w| start[w[0]]..start[w[1]])
        .collect()
}

/// Entries grouped by gene, as [`SparseValues::group`] builds them.
struct ByGene {
    cells: Vec<u32>,
    /// Empty when `constant` gives every entry's value.
    values: Vec<f64>,
    /// Empty when every value is exact.
    residuals: Vec<i16>,
    /// Every entry's value, when all have one.
    constant: Option<f64>,
}

impl ByGene {
    #[inline]
    fn set(&mut self, at: usize, (cell, value, residual): (u32, f64, i16)) {
        self.cells[at] = cell;
        if self.constant.is_none() {
            self.values[at] = value;
        }
        if !self.residuals.is_empty() {
            self.residuals[at] = residual;
        }
    }

    #[inline]
    fn get(&self, k: usize) -> (u32, f64, i16) {
        let residual = self.residuals.get(k).copied().unwrap_or(0);
        (self.cells[k], self.value(k), residual)
    }

    /// Entry `k`'s value.
    #[inline]
    fn value(&self, k: usize) -> f64 {
        self.constant.unwrap_or_else(|| self.values[k])
    }

    /// Each gene's entries (gene `g`'s are `start[g]..start[g + 1]`, in
    /// sample order) checked for a sample given twice, on rayon's threads
    /// (a range of genes `bounds` each): the number of zero values, or
    /// `Err(g)` for the first gene `g` with a sample given twice.
    fn check(&self, start: &[usize], bounds: &[usize]) -> Result<usize, u32> {
        bounds
            .par_windows(2)
            .map(|w| {
                let mut zeros = 0;
                for g in w[0]..w[1] {
                    let range = start[g]..start[g + 1];
                    let cells = &self.cells[range.clone()];
                    debug_assert!(cells.is_sorted());
                    if cells.windows(2).any(|p| p[0] == p[1]) {
                        return Err(g as u32);
                    }
                    zeros += range
                        .filter(|&k| self.value(k) == 0.0 && self.residual(k) == 0)
                        .count();
                }
                Ok(zeros)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .sum()
    }

    #[inline]
    fn residual(&self, k: usize) -> i16 {
        self.residuals.get(k).copied().unwrap_or(0)
    }

    /// Each gene's entries (gene `g`'s are `start[g]..start[g + 1]`, in
    /// sample order) checked for a sample given twice, its zeros dropped
    /// unless `zeros` keeps them, the entries moved up and `start` made to
    /// say where they are now. The number of zeros kept; `Err(g)` for gene
    /// `g` with a sample given twice.
    fn compact(&mut self, start: &mut [usize], zeros: Zeros) -> Result<usize, u32> {
        let genes = start.len() - 1;
        let (mut kept, mut kept_zeros) = (0usize, 0usize);
        for g in 0..genes {
            let range = start[g]..start[g + 1];
            // Read before it is written: gene g's entries move up to here.
            start[g] = kept;
            debug_assert!(self.cells[range.clone()].is_sorted());
            let mut last = None;
            for k in range {
                let (cell, value, residual) = self.get(k);
                if last == Some(cell) {
                    return Err(g as u32);
                }
                last = Some(cell);
                let zero = value == 0.0 && residual == 0;
                if !zero || zeros == Zeros::Keep {
                    // k >= kept: an entry not yet read is never written.
                    self.set(kept, (cell, value, residual));
                    kept += 1;
                    kept_zeros += usize::from(zero);
                }
            }
        }
        start[genes] = kept;
        self.cells.truncate(kept);
        self.values.truncate(kept);
        self.residuals.truncate(kept);
        Ok(kept_zeros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::QueryMemory;

    /// Gene `g`'s samples and values.
    fn row(m: &SparseValues, g: usize) -> (Vec<u32>, Vec<f64>) {
        let gene = m.gene(g);
        (gene.cells.to_vec(), gene.values.to_vec())
    }

    #[test]
    fn triples_become_sorted_entries_without_zeros() {
        let cells = [(1, 3), (0, 2), (1, 0), (0, 0), (1, 1)];
        let read = [5.0, -1.0, 2.0, 0.0, 7.0];
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let m = SparseValues::from_triples((2, 4), &cells, &read, &[], &mut r)
            .unwrap()
            .unwrap();
        assert_eq!(m.start(), &[0, 1, 4]);
        assert_eq!(row(&m, 0), (vec![2], vec![-1.0]));
        assert_eq!(row(&m, 1), (vec![0, 1, 3], vec![2.0, 7.0, 5.0]));
        let (dense, residuals) = m.to_dense(4).unwrap();
        assert_eq!(dense, vec![0.0, 0.0, -1.0, 0.0, 2.0, 7.0, 0.0, 5.0]);
        assert!(residuals.is_empty());
        assert!(r.size() >= SparseValues::bytes_for(2, 4, true));
        // The middle sample dropped; gene 1 on samples (0, 2, 3) -> (0, 1, 2).
        let kept = m.remap_samples(&[0, u32::MAX, 1, 2]).unwrap();
        // Reordered: samples (3, 0, 1, 2) -> (0, 1, 2, 3).
        let turned = m.remap_samples(&[1, 2, 3, 0]).unwrap();
        assert_eq!(turned.start(), &[0, 1, 4]);
        assert_eq!(row(&turned, 0), (vec![3], vec![-1.0]));
        assert_eq!(row(&turned, 1), (vec![0, 1, 2], vec![5.0, 2.0, 7.0]));
        assert_eq!(kept.start(), &[0, 1, 3]);
        assert_eq!(row(&kept, 0), (vec![1], vec![-1.0]));
        assert_eq!(row(&kept, 1), (vec![0, 2], vec![2.0, 5.0]));
    }

    /// Rows in (gene, sample) order taken whole equal the general path:
    /// all non-zero, some zero (moved up), residuals, genes without rows.
    #[test]
    fn sorted_triples_taken_whole_equal_the_general_path() {
        let mut rng = crate::test_rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut next = |k: u64| rng.below(k);
        for (zeros, with_residuals) in [(0, false), (30, false), (30, true), (100, false)] {
            let (genes, samples) = (9usize, 40usize);
            let (mut cells, mut read, mut residuals) = (Vec::new(), Vec::new(), Vec::new());
            for g in 0..genes as u32 {
                for s in 0..samples as u32 {
                    // Gene 4 has no rows; others about half the samples.
                    if g == 4 || next(2) == 0 {
                        continue;
                    }
                    cells.push((g, s));
                    let zero = next(100) < zeros;
                    read.push(if zero { 0.0 } else { next(7) as f64 - 3.0 });
                    residuals.push(if with_residuals {
                        next(3) as i16 - 1
                    } else {
                        0
                    });
                }
            }
            let memory = QueryMemory::unbounded("x");
            let mut r = memory.reserve("v", 0).unwrap();
            let expected =
                SparseValues::from_triples((genes, samples), &cells, &read, &residuals, &mut r)
                    .unwrap()
                    .unwrap();
            let mut r2 = memory.reserve("w", 0).unwrap();
            let got =
                SparseValues::from_sorted_triples(genes, cells, read, residuals, &mut r2).unwrap();
            let what = format!("zeros {zeros}, residuals {with_residuals}");
            assert_eq!(got.start(), expected.start(), "{what}");
            assert_eq!(got.is_exact(), expected.is_exact(), "{what}");
            assert_eq!(
                got.to_dense(samples).unwrap(),
                expected.to_dense(samples).unwrap()
            );
            assert_eq!(r2.size(), got.heap_bytes(), "{what}");
        }
        // Out of order, or a sample twice: refused.
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        for cells in [vec![(1, 0), (0, 1)], vec![(0, 1), (0, 1)]] {
            let refused = SparseValues::from_sorted_triples(2, cells, vec![1.0; 2], vec![], &mut r);
            assert!(refused.is_err());
        }
    }

    #[test]
    fn a_sample_given_twice_is_found_among_values_and_zeros() {
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let mut twice = |cells: &[(u32, u32)], read: &[f64]| {
            SparseValues::from_triples((2, 2), cells, read, &[], &mut r)
                .unwrap()
                .err()
        };
        let found = Some(RepeatedSample { gene: 1 });
        assert_eq!(twice(&[(1, 0), (0, 0), (1, 0)], &[1.0, 1.0, 2.0]), found);
        assert_eq!(twice(&[(1, 0), (1, 0)], &[0.0, 0.0]), found);
        assert_eq!(twice(&[(1, 0), (1, 0)], &[3.0, 0.0]), found);
        assert_eq!(twice(&[(1, 0), (1, 1)], &[3.0, 0.0]), None);
    }

    #[test]
    fn appended_blocks_keep_their_genes_and_residuals() {
        let mut a = SparseValues::from_vecs(vec![0, 1], vec![0], vec![1.0], Vec::new());
        let b = SparseValues::from_vecs(vec![0, 0, 2], vec![0, 1], vec![2.0, 3.0], vec![0, -1]);
        let owned = a.heap_bytes() + b.heap_bytes();
        a.append(b);
        assert_eq!(a.genes(), 3);
        assert_eq!(a.start(), &[0, 1, 1, 3]);
        assert!(!a.is_exact());
        assert_eq!(row(&a, 0), (vec![0], vec![1.0]));
        assert!(a.gene(0).residuals.is_empty());
        assert!(a.gene(1).is_empty());
        assert_eq!(row(&a, 2), (vec![0, 1], vec![2.0, 3.0]));
        assert_eq!(a.gene(2).exact(1).residual, -1);
        // Blocks are moved, not copied (only the offsets grew).
        assert!(a.heap_bytes() <= owned + 4 * size_of::<usize>());
        let (dense, residuals) = a.to_dense(2).unwrap();
        assert_eq!(dense, vec![1.0, 0.0, 0.0, 0.0, 2.0, 3.0]);
        assert_eq!(residuals, vec![0, 0, 0, 0, 0, -1]);
        // Remapped across both blocks: one block, the same entries.
        let turned = a.remap_samples(&[1, 0]).unwrap();
        assert_eq!(row(&turned, 0), (vec![1], vec![1.0]));
        assert_eq!(row(&turned, 2), (vec![0, 1], vec![3.0, 2.0]));
        assert_eq!(turned.gene(2).residuals, &[-1, 0]);
    }

    #[test]
    fn shared_arrays_are_not_held() {
        let cells = ScalarBuffer::from(vec![0u32, 2, 1]);
        let values = ScalarBuffer::from(vec![1.0, 2.0, 3.0]);
        let m = SparseValues::shared(vec![0, 2, 3], cells, values, 0);
        assert_eq!(m.heap_bytes(), 3 * size_of::<usize>());
        assert_eq!(row(&m, 1), (vec![1], vec![3.0]));
        // A stored zero: dropped into a matrix of its own, reserved.
        let cells = ScalarBuffer::from(vec![0u32, 2, 1]);
        let values = ScalarBuffer::from(vec![1.0, 0.0, 3.0]);
        let stored = SparseValues::shared(vec![0, 2, 3], cells, values, 1);
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let m = stored.without_zeros(&mut r).unwrap();
        assert_eq!((m.stored_zeros(), m.start()), (0, &[0, 1, 2][..]));
        assert_eq!(row(&m, 0), (vec![0], vec![1.0]));
        assert!(r.size() >= m.heap_bytes());
    }

    /// A rayon pool of `threads` threads.
    fn on_threads(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Grouping on any number of threads (each a range of genes) gives
    /// what a stable sort of the rows by gene gives, for rows in any order,
    /// in sample order and in (gene, sample) order, with zeros kept or
    /// dropped and with residuals; of two genes with a sample given twice,
    /// the first is named.
    #[test]
    fn grouping_on_threads_equals_a_stable_sort_by_gene() {
        let mut rng = crate::test_rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let (genes, samples) = (23usize, 50usize);
        let mut rows: Vec<(u32, u32, f64, i16)> = Vec::new();
        for g in 0..genes as u32 {
            for s in 0..samples as u32 {
                // Gene 5 has no rows; genes 0-3 many, the others few.
                if g == 5 || rng.below(if g < 4 { 2 } else { 6 }) != 0 {
                    continue;
                }
                let x = if rng.below(5) == 0 {
                    0.0
                } else {
                    rng.below(9) as f64 - 4.0
                };
                rows.push((g, s, x, rng.below(3) as i16 - 1));
            }
        }
        // (gene, sample) order, sample order, and shuffled.
        let by_gene = rows.clone();
        let mut by_sample = rows.clone();
        by_sample.sort_by_key(|&(g, s, _, _)| (s, g));
        let mut shuffled = rows.clone();
        for k in (1..shuffled.len()).rev() {
            shuffled.swap(k, rng.below(k as u64 + 1) as usize);
        }
        for order in [by_gene, by_sample, shuffled] {
            let cells: Vec<(u32, u32)> = order.iter().map(|&(g, s, _, _)| (g, s)).collect();
            let values: Vec<f64> = order.iter().map(|r| r.2).collect();
            let residuals: Vec<i16> = order.iter().map(|r| r.3).collect();
            for (zeros, res) in [
                (Zeros::Drop, &[][..]),
                (Zeros::Keep, &[][..]),
                (Zeros::Drop, &residuals[..]),
            ] {
                // What a stable sort by (gene, sample) gives.
                let mut expected: Vec<(u32, u32, f64, i16)> = order
                    .iter()
                    .map(|&(g, s, x, r)| (g, s, x, if res.is_empty() { 0 } else { r }))
                    .filter(|&(_, _, x, r)| zeros == Zeros::Keep || x != 0.0 || r != 0)
                    .collect();
                expected.sort_by_key(|&(g, s, _, _)| (g, s));
                // In one run, or cut into runs (empty ones among them), as
                // a file's parsed blocks are grouped.
                let len = cells.len();
                let cut = |ends: &[usize]| -> Vec<Triples> {
                    ends.windows(2)
                        .map(|w| Triples {
                            cells: &cells[w[0]..w[1]],
                            values: RunValues::Each(&values[w[0]..w[1]]),
                            residuals: res.get(w[0]..w[1]).unwrap_or_default(),
                        })
                        .collect()
                };
                let one = cut(&[0, len]);
                let runs = cut(&[0, 0, 1, 7, 7, len / 2, len - 1, len]);
                for (threads, runs) in [1, 2, 3, 7]
                    .into_iter()
                    .flat_map(|t| [(t, &one), (t, &runs)])
                {
                    let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
                    let m = on_threads(threads)
                        .install(|| SparseValues::group_runs((genes, samples), runs, zeros, &mut r))
                        .unwrap()
                        .unwrap();
                    let mut got = Vec::new();
                    for g in 0..genes {
                        let gene = m.gene(g);
                        for q in 0..gene.len() {
                            let x = gene.exact(q);
                            got.push((g as u32, gene.cells[q], x.value, x.residual));
                        }
                    }
                    assert_eq!(
                        got,
                        expected,
                        "{zeros:?}, residuals {}, {threads} threads, {} runs",
                        !res.is_empty(),
                        runs.len()
                    );
                    let kept_zeros = expected
                        .iter()
                        .filter(|&&(_, _, x, r)| x == 0.0 && r == 0)
                        .count();
                    assert_eq!(m.stored_zeros(), kept_zeros);
                    assert_eq!(r.size(), m.heap_bytes());
                }
            }
        }
        // Genes 3 and 17 each have a sample twice: gene 3 is named, however
        // the genes are shared among threads.
        let cells = [(17, 4), (3, 1), (17, 4), (9, 0), (3, 1), (20, 2)];
        for threads in [1, 2, 3, 7] {
            let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
            let twice = on_threads(threads)
                .install(|| SparseValues::from_triples((23, 5), &cells, &[1.0; 6], &[], &mut r));
            assert_eq!(
                twice.unwrap().err(),
                Some(RepeatedSample { gene: 3 }),
                "{threads} threads"
            );
        }
    }

    /// Case: a run whose rows share one value (held once, as a binarised
    /// matrix's blocks are) groups as the same rows with the value given
    /// for each, in sample order or not, on any number of threads.
    #[test]
    fn runs_of_one_value_group_as_their_rows() {
        // Gene k % 7, sample k / 7: every (gene, sample) once.
        let mut cells: Vec<(u32, u32)> = (0..40u32).map(|k| (k % 7, k / 7)).collect();
        let values: Vec<f64> = (0..40)
            .map(|k| if k < 25 { 2.0 } else { k as f64 })
            .collect();
        for shuffled in [false, true] {
            if shuffled {
                cells[..25].reverse();
            }
            let each = [Triples {
                cells: &cells,
                values: RunValues::Each(&values),
                residuals: &[],
            }];
            let held_once = [
                Triples {
                    cells: &cells[..25],
                    values: RunValues::All(2.0),
                    residuals: &[],
                },
                Triples {
                    cells: &cells[25..],
                    values: RunValues::Each(&values[25..]),
                    residuals: &[],
                },
            ];
            for threads in [1, 3] {
                let group = |runs: &[Triples]| {
                    let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
                    let m = on_threads(threads)
                        .install(|| SparseValues::group_runs((7, 6), runs, Zeros::Drop, &mut r))
                        .unwrap()
                        .unwrap();
                    (0..7)
                        .map(|g| {
                            let gene = m.gene(g);
                            let values: Vec<f64> =
                                (0..gene.len()).map(|q| gene.exact(q).value).collect();
                            (gene.cells.to_vec(), values)
                        })
                        .collect::<Vec<_>>()
                };
                let want = group(&each);
                assert_eq!(want.iter().map(|g| g.0.len()).sum::<usize>(), 40);
                assert_eq!(
                    group(&held_once),
                    want,
                    "shuffled {shuffled}, {threads} threads"
                );
            }
        }
    }

    /// Runs whose rows all have one non-zero value (a binarised matrix's
    /// blocks) hold it once per entry of the longest gene: the same entries
    /// as with the value given for each row, 8 bytes an entry less, and
    /// that much less reserved. Runs of two values are held per entry.
    #[test]
    fn runs_all_of_one_value_hold_it_once() {
        // Gene k % 7, sample k / 7: genes 0..5 have 6 entries, 5 and 6 have 5.
        let cells: Vec<(u32, u32)> = (0..40u32).map(|k| (k % 7, k / 7)).collect();
        let ones = vec![1.0; 40];
        let twos: Vec<f64> = (0..40).map(|k| if k < 10 { 1.0 } else { 2.0 }).collect();
        for shuffled in [false, true] {
            let mut cells = cells.clone();
            if shuffled {
                cells.reverse();
            }
            for threads in [1, 3] {
                let group = |runs: &[Triples]| {
                    let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
                    let m = on_threads(threads)
                        .install(|| SparseValues::group_runs((7, 6), runs, Zeros::Drop, &mut r))
                        .unwrap()
                        .unwrap();
                    assert_eq!(r.size(), m.heap_bytes());
                    let genes: Vec<_> = (0..7).map(|g| row(&m, g)).collect();
                    (genes, m.heap_bytes())
                };
                let run = |at: std::ops::Range<usize>, values| Triples {
                    cells: &cells[at],
                    values,
                    residuals: &[],
                };
                let (each, each_bytes) = group(&[run(0..40, RunValues::Each(&ones))]);
                let (once, once_bytes) = group(&[
                    run(0..10, RunValues::All(1.0)),
                    run(10..40, RunValues::All(1.0)),
                ]);
                assert_eq!(once, each, "shuffled {shuffled}, {threads} threads");
                assert_eq!(each.iter().map(|g| g.0.len()).max(), Some(6));
                assert_eq!(once_bytes, each_bytes - (40 - 6) * 8);
                let (mixed, mixed_bytes) = group(&[
                    run(0..10, RunValues::All(1.0)),
                    run(10..40, RunValues::All(2.0)),
                ]);
                let (want, want_bytes) = group(&[run(0..40, RunValues::Each(&twos))]);
                assert_eq!(mixed, want);
                assert_eq!(mixed_bytes, want_bytes);
            }
        }
    }

    /// Zeros kept (a table's stored entries): in sample order with the
    /// others, counted; a repeat found among them too.
    #[test]
    fn grouped_triples_may_keep_their_zeros() {
        let cells = [(1, 3), (0, 2), (1, 0), (0, 0), (1, 1)];
        let read = [5.0, -1.0, 0.0, 0.0, 7.0];
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let m = SparseValues::group((2, 4), &cells, &read, &[], Zeros::Keep, &mut r)
            .unwrap()
            .unwrap();
        assert_eq!((m.start(), m.stored_zeros()), (&[0, 2, 5][..], 2));
        assert_eq!(row(&m, 0), (vec![0, 2], vec![0.0, -1.0]));
        assert_eq!(row(&m, 1), (vec![0, 1, 3], vec![0.0, 7.0, 5.0]));
        assert_eq!(r.size(), m.heap_bytes());
        let twice = SparseValues::group(
            (1, 2),
            &[(0, 1), (0, 1)],
            &[0.0, 0.0],
            &[],
            Zeros::Keep,
            &mut r,
        );
        assert_eq!(twice.unwrap().err(), Some(RepeatedSample { gene: 0 }));
    }
}

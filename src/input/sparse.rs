//! A matrix read with absent entries as zero (`kendall.absent = 'zero'`:
//! sparse counts, 10x directories, AnnData from Python), kept as its
//! non-zero values only: memory that follows the non-zeros.
//!
//! A long input whose absent rows are zeros is held this way when no value
//! is missing and at most half of its genes × samples values are non-zero
//! ([`SPARSE_MAX_DENSITY`]); nothing of size genes × samples is allocated
//! for it. Its ranks are then sparse too (see
//! [`RankedMatrix::try_build_sparse`](super::RankedMatrix::try_build_sparse)).

use std::mem::size_of;
use std::ops::Range;

use datafusion::error::Result;

use super::values::Exact;
use crate::memory::{Reservation, try_filled, try_with_capacity};

/// Up to this share of non-zero values a long input with absent zeros is
/// kept sparse; above it, dense (a dense row takes 8 bytes a value, an
/// entry 12).
pub const SPARSE_MAX_DENSITY: f64 = 0.5;

/// The non-zero values of a genes × samples matrix, gene by gene.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SparseValues {
    /// Gene `g`'s entries are `start[g]..start[g + 1]` (one offset per gene,
    /// and one more).
    pub start: Vec<usize>,
    /// The sample of each entry, ascending within a gene.
    pub cells: Vec<u32>,
    /// Each entry's value: finite and non-zero.
    pub values: Vec<f64>,
    /// Per entry, what a 64-bit integer loses as f64 (see
    /// [`RankedMatrix::from_exact`](super::RankedMatrix::from_exact)); empty
    /// when every value is exact.
    pub residuals: Vec<i16>,
}

/// What [`SparseValues::from_triples`] found wrong: gene `gene` has two
/// values for one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatedSample {
    /// The gene's number.
    pub gene: u32,
}

impl SparseValues {
    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Gene `g`'s entries (indices into `cells`, `values`, `residuals`).
    #[inline]
    pub fn entries(&self, g: usize) -> Range<usize> {
        self.start[g]..self.start[g + 1]
    }

    /// Number of non-zero values.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether no value is non-zero.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Entry `k`'s value, exactly.
    #[inline]
    pub fn exact(&self, k: usize) -> Exact {
        Exact {
            value: self.values[k],
            residual: self.residuals.get(k).copied().unwrap_or(0),
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.start.capacity() * size_of::<usize>()
            + self.cells.capacity() * size_of::<u32>()
            + self.values.capacity() * size_of::<f64>()
            + self.residuals.capacity() * size_of::<i16>()
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
    pub fn from_triples(
        (genes, samples): (usize, usize),
        cells: &[(u32, u32)],
        values: &[f64],
        residuals: &[i16],
        reservation: &mut Reservation,
    ) -> Result<std::result::Result<Self, RepeatedSample>> {
        let residual = |k: usize| residuals.get(k).copied().unwrap_or(0);
        let nonzero = |k: usize| values[k] != 0.0 || residual(k) != 0;
        reservation.try_grow(cells.len().saturating_mul(2 * size_of::<u32>()))?;
        let order = if cells.is_sorted_by(|a, b| a < b) {
            // Already by gene, then sample (as a 10x directory's and
            // Python's triples come): no sort.
            let mut start = vec![0usize; genes + 1];
            for &(g, _) in cells {
                start[g as usize + 1] += 1;
            }
            for g in 0..genes {
                start[g + 1] += start[g];
            }
            Gathered {
                start,
                rows: (0..cells.len() as u32).collect(),
            }
        } else {
            gather(genes, samples, cells.len(), |k| cells[k])?
        };
        let entries = (0..cells.len()).filter(|&k| nonzero(k)).count();
        let exact = residuals.iter().all(|&r| r == 0);
        reservation.try_grow(Self::bytes_for(genes, entries, exact))?;
        let mut matrix = SparseValues {
            start: Vec::with_capacity(genes + 1),
            cells: try_with_capacity(entries, "non-zero values")?,
            values: try_with_capacity(entries, "non-zero values")?,
            residuals: if exact {
                Vec::new()
            } else {
                try_with_capacity(entries, "non-zero values")?
            },
        };
        matrix.start.push(0);
        for g in 0..genes {
            let mut last = None;
            for &k in &order.rows[order.start[g]..order.start[g + 1]] {
                let (k, cell) = (k as usize, cells[k as usize].1);
                if last == Some(cell) {
                    return Ok(Err(RepeatedSample { gene: g as u32 }));
                }
                last = Some(cell);
                if nonzero(k) {
                    matrix.cells.push(cell);
                    matrix.values.push(values[k]);
                    if !exact {
                        matrix.residuals.push(residual(k));
                    }
                }
            }
            matrix.start.push(matrix.cells.len());
        }
        drop(order);
        reservation.shrink_to(matrix.heap_bytes());
        Ok(Ok(matrix))
    }

    /// The dense genes × `samples` values (row-major) and their residuals
    /// (empty when every value is exact).
    pub fn to_dense(&self, samples: usize) -> Result<(Vec<f64>, Vec<i16>)> {
        let genes = self.genes();
        let mut values = try_filled(genes * samples, 0f64, "input values")?;
        let mut residuals = if self.residuals.is_empty() {
            Vec::new()
        } else {
            try_filled(genes * samples, 0i16, "input values")?
        };
        for g in 0..genes {
            for k in self.entries(g) {
                let cell = g * samples + self.cells[k] as usize;
                values[cell] = self.values[k];
                if !residuals.is_empty() {
                    residuals[cell] = self.residuals[k];
                }
            }
        }
        Ok((values, residuals))
    }

    /// The matrix on the samples `keep` maps to (`keep[s]` = the new number
    /// of sample `s`, or `u32::MAX` to drop it), entries re-sorted by their
    /// new numbers (`keep`'s kept numbers are `0..k`).
    pub fn remap_samples(&self, keep: &[u32]) -> Result<SparseValues> {
        let exact = self.residuals.is_empty();
        let mut out = SparseValues {
            start: Vec::with_capacity(self.start.len()),
            ..SparseValues::default()
        };
        out.start.push(0);
        let kept: Vec<u32> = (0..self.len() as u32)
            .filter(|&k| keep[self.cells[k as usize] as usize] != u32::MAX)
            .collect();
        let numbers = keep.iter().filter(|&&to| to != u32::MAX);
        let in_order = numbers.clone().zip(numbers.skip(1)).all(|(a, b)| a < b);
        let order = if in_order {
            // Kept samples in their old order: each gene's entries stay sorted.
            let mut start = Vec::with_capacity(self.start.len());
            start.push(0);
            let mut at = 0;
            for g in 0..self.genes() {
                let end = self.start[g + 1] as u32;
                at += kept[at..].partition_point(|&k| k < end);
                start.push(at);
            }
            Gathered { start, rows: kept }
        } else {
            let mut gene_of = vec![0u32; self.len()];
            for g in 0..self.genes() {
                gene_of[self.entries(g)].fill(g as u32);
            }
            let samples = keep.iter().filter(|&&to| to != u32::MAX).count();
            let order = gather(self.genes(), samples, kept.len(), |i| {
                let k = kept[i] as usize;
                (gene_of[k], keep[self.cells[k] as usize])
            })?;
            // Rows of `gather` index `kept`.
            Gathered {
                rows: order.rows.iter().map(|&i| kept[i as usize]).collect(),
                start: order.start,
            }
        };
        for g in 0..self.genes() {
            for &k in &order.rows[order.start[g]..order.start[g + 1]] {
                let k = k as usize;
                out.cells.push(keep[self.cells[k] as usize]);
                out.values.push(self.values[k]);
                if !exact {
                    out.residuals.push(self.residuals[k]);
                }
            }
            out.start.push(out.cells.len());
        }
        Ok(out)
    }
    /// Gene rows of `self` then of `other` (on the same samples).
    pub fn append(&mut self, other: &SparseValues) {
        if self.residuals.is_empty() && !other.residuals.is_empty() {
            self.residuals = vec![0; self.cells.len()];
        }
        let base = self.cells.len();
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.start
            .extend(other.start.iter().skip(1).map(|&s| base + s));
        self.cells.extend_from_slice(&other.cells);
        self.values.extend_from_slice(&other.values);
        if !self.residuals.is_empty() {
            if other.residuals.is_empty() {
                self.residuals
                    .extend(std::iter::repeat_n(0, other.cells.len()));
            } else {
                self.residuals.extend_from_slice(&other.residuals);
            }
        }
    }
}

/// Rows grouped by gene, each gene's in ascending sample order.
struct Gathered {
    /// Gene `g`'s rows are `rows[start[g]..start[g + 1]]`.
    start: Vec<usize>,
    rows: Vec<u32>,
}

/// Rows `0..len` whose (gene, sample) is `at(k)` (below `genes` and
/// `samples`) grouped by gene and sorted by sample within a gene: two
/// stable counting sorts, by sample then by gene, O(len + genes + samples).
fn gather(
    genes: usize,
    samples: usize,
    len: usize,
    at: impl Fn(usize) -> (u32, u32),
) -> Result<Gathered> {
    let mut next = vec![0usize; samples + 1];
    for k in 0..len {
        next[at(k).1 as usize + 1] += 1;
    }
    for s in 0..samples {
        next[s + 1] += next[s];
    }
    let mut by_sample = try_filled(len, 0u32, "rows in sample order")?;
    for k in 0..len {
        let s = at(k).1 as usize;
        by_sample[next[s]] = k as u32;
        next[s] += 1;
    }
    let mut start = vec![0usize; genes + 1];
    for k in 0..len {
        start[at(k).0 as usize + 1] += 1;
    }
    for g in 0..genes {
        start[g + 1] += start[g];
    }
    let mut next = start.clone();
    let mut rows = try_filled(len, 0u32, "rows in gene order")?;
    for &k in &by_sample {
        let g = at(k as usize).0 as usize;
        rows[next[g]] = k;
        next[g] += 1;
    }
    Ok(Gathered { start, rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::QueryMemory;

    #[test]
    fn triples_become_sorted_entries_without_zeros() {
        let cells = [(1, 3), (0, 2), (1, 0), (0, 0), (1, 1)];
        let read = [5.0, -1.0, 2.0, 0.0, 7.0];
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let m = SparseValues::from_triples((2, 4), &cells, &read, &[], &mut r)
            .unwrap()
            .unwrap();
        assert_eq!(m.start, vec![0, 1, 4]);
        assert_eq!(m.cells, vec![2, 0, 1, 3]);
        assert_eq!(m.values, vec![-1.0, 2.0, 7.0, 5.0]);
        let (dense, residuals) = m.to_dense(4).unwrap();
        assert_eq!(dense, vec![0.0, 0.0, -1.0, 0.0, 2.0, 7.0, 0.0, 5.0]);
        assert!(residuals.is_empty());
        assert!(r.size() >= SparseValues::bytes_for(2, 4, true));
        // The middle sample dropped; gene 1 on samples (0, 2, 3) -> (0, 1, 2).
        let kept = m.remap_samples(&[0, u32::MAX, 1, 2]).unwrap();
        // Reordered: samples (3, 0, 1, 2) -> (0, 1, 2, 3).
        let turned = m.remap_samples(&[1, 2, 3, 0]).unwrap();
        assert_eq!(turned.start, vec![0, 1, 4]);
        assert_eq!(turned.cells, vec![3, 0, 1, 2]);
        assert_eq!(turned.values, vec![-1.0, 5.0, 2.0, 7.0]);
        assert_eq!(kept.start, vec![0, 1, 3]);
        assert_eq!(kept.cells, vec![1, 0, 2]);
        assert_eq!(kept.values, vec![-1.0, 2.0, 5.0]);
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
    fn appended_rows_keep_residuals_aligned() {
        let mut a = SparseValues {
            start: vec![0, 1],
            cells: vec![0],
            values: vec![1.0],
            residuals: Vec::new(),
        };
        let b = SparseValues {
            start: vec![0, 2],
            cells: vec![0, 1],
            values: vec![2.0, 3.0],
            residuals: vec![0, -1],
        };
        a.append(&b);
        assert_eq!(a.start, vec![0, 1, 3]);
        assert_eq!(a.residuals, vec![0, 0, -1]);
        assert_eq!(a.exact(2).residual, -1);
    }
}

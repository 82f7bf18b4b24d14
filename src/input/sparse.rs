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
use rayon::prelude::*;

use super::values::Exact;
use crate::memory::{Reservation, try_filled};

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

    /// The matrix of `genes` genes whose rows are `(gene, sample)` numbers
    /// `cells` with values `read` (in any order, none missing): exact zeros
    /// are dropped, each gene's entries sorted by sample. Reserved in
    /// `reservation` before it is allocated. `Ok(Err(..))` names a gene with
    /// two rows for one sample.
    pub fn from_triples(
        genes: usize,
        cells: &[(u32, u32)],
        read: &[Exact],
        reservation: &mut Reservation,
    ) -> Result<std::result::Result<Self, RepeatedSample>> {
        let is_zero = |x: &Exact| x.value == 0.0 && x.residual == 0;
        let mut counts = vec![0usize; genes + 1];
        for (&(g, _), x) in cells.iter().zip(read) {
            if !is_zero(x) {
                counts[g as usize + 1] += 1;
            }
        }
        for g in 0..genes {
            counts[g + 1] += counts[g];
        }
        let entries = counts[genes];
        let exact = read.iter().all(|x| x.residual == 0);
        reservation.try_grow(Self::bytes_for(genes, entries, exact))?;
        let start = counts.clone();
        let mut next = counts;
        let mut sample = try_filled(entries, 0u32, "non-zero values")?;
        let mut values = try_filled(entries, 0f64, "non-zero values")?;
        let mut residuals = if exact {
            Vec::new()
        } else {
            try_filled(entries, 0i16, "non-zero values")?
        };
        for (&(g, s), x) in cells.iter().zip(read) {
            if is_zero(x) {
                continue;
            }
            let k = next[g as usize];
            next[g as usize] += 1;
            sample[k] = s;
            values[k] = x.value;
            if !exact {
                residuals[k] = x.residual;
            }
        }
        let mut matrix = SparseValues {
            start,
            cells: sample,
            values,
            residuals,
        };
        if let Some(gene) = matrix.sort_by_sample() {
            return Ok(Err(RepeatedSample { gene }));
        }
        // An explicit zero given twice for a sample is a repeated row too.
        if let Some(gene) = repeated_zero(genes, cells, read, &matrix) {
            return Ok(Err(RepeatedSample { gene }));
        }
        Ok(Ok(matrix))
    }

    /// Sorts each gene's entries by sample (genes in parallel); the first
    /// gene with a sample twice, if any.
    fn sort_by_sample(&mut self) -> Option<u32> {
        let exact = self.residuals.is_empty();
        let ranges: Vec<Range<usize>> = (0..self.genes()).map(|g| self.entries(g)).collect();
        let (cells, values, residuals) = (&mut self.cells, &mut self.values, &mut self.residuals);
        // Each gene's entries as one mutable slice of each column.
        let mut parts = Vec::with_capacity(ranges.len());
        let (mut c, mut v, mut r) = (
            cells.as_mut_slice(),
            values.as_mut_slice(),
            residuals.as_mut_slice(),
        );
        for range in &ranges {
            let (c0, c1) = std::mem::take(&mut c).split_at_mut(range.len());
            let (v0, v1) = std::mem::take(&mut v).split_at_mut(range.len());
            let (r0, r1) = if exact {
                (&mut [][..], &mut [][..])
            } else {
                std::mem::take(&mut r).split_at_mut(range.len())
            };
            parts.push((c0, v0, r0));
            (c, v, r) = (c1, v1, r1);
        }
        parts
            .into_par_iter()
            .enumerate()
            .filter_map(|(g, (cells, values, residuals))| {
                if !cells.is_sorted() {
                    let mut idx: Vec<u32> = (0..cells.len() as u32).collect();
                    idx.sort_unstable_by_key(|&k| cells[k as usize]);
                    let permute = |cells: &mut [u32]| {
                        let copy = cells.to_vec();
                        for (slot, &k) in cells.iter_mut().zip(&idx) {
                            *slot = copy[k as usize];
                        }
                    };
                    permute(cells);
                    let copy = values.to_vec();
                    for (slot, &k) in values.iter_mut().zip(&idx) {
                        *slot = copy[k as usize];
                    }
                    if !residuals.is_empty() {
                        let copy = residuals.to_vec();
                        for (slot, &k) in residuals.iter_mut().zip(&idx) {
                            *slot = copy[k as usize];
                        }
                    }
                }
                cells.windows(2).any(|w| w[0] == w[1]).then_some(g as u32)
            })
            .min()
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
    /// new numbers.
    pub fn remap_samples(&self, keep: &[u32]) -> SparseValues {
        let exact = self.residuals.is_empty();
        let mut out = SparseValues {
            start: Vec::with_capacity(self.start.len()),
            ..SparseValues::default()
        };
        out.start.push(0);
        let mut gene: Vec<(u32, f64, i16)> = Vec::new();
        for g in 0..self.genes() {
            gene.clear();
            for k in self.entries(g) {
                let to = keep[self.cells[k] as usize];
                if to != u32::MAX {
                    let x = self.exact(k);
                    gene.push((to, x.value, x.residual));
                }
            }
            gene.sort_unstable_by_key(|e| e.0);
            for &(cell, value, residual) in &gene {
                out.cells.push(cell);
                out.values.push(value);
                if !exact {
                    out.residuals.push(residual);
                }
            }
            out.start.push(out.cells.len());
        }
        out
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

/// A gene with two rows for one sample among the rows whose value is an
/// exact zero (dropped from `matrix`, so not seen by its sort): checked
/// against the other zero rows and the kept entries.
fn repeated_zero(
    genes: usize,
    cells: &[(u32, u32)],
    read: &[Exact],
    matrix: &SparseValues,
) -> Option<u32> {
    let mut zeros: Vec<(u32, u32)> = cells
        .iter()
        .zip(read)
        .filter(|(_, x)| x.value == 0.0 && x.residual == 0)
        .map(|(&c, _)| c)
        .collect();
    if zeros.is_empty() {
        return None;
    }
    zeros.sort_unstable();
    if let Some(w) = zeros.windows(2).find(|w| w[0] == w[1]) {
        return Some(w[0].0);
    }
    zeros
        .iter()
        .find(|&&(g, s)| {
            (g as usize) < genes
                && matrix.cells[matrix.entries(g as usize)]
                    .binary_search(&s)
                    .is_ok()
        })
        .map(|&(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::QueryMemory;

    fn exact(v: f64) -> Exact {
        Exact {
            value: v,
            residual: 0,
        }
    }

    #[test]
    fn triples_become_sorted_entries_without_zeros() {
        let cells = [(1, 3), (0, 2), (1, 0), (0, 0), (1, 1)];
        let read = [exact(5.0), exact(-1.0), exact(2.0), exact(0.0), exact(7.0)];
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let m = SparseValues::from_triples(2, &cells, &read, &mut r)
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
        let kept = m.remap_samples(&[0, u32::MAX, 1, 2]);
        assert_eq!(kept.start, vec![0, 1, 3]);
        assert_eq!(kept.cells, vec![1, 0, 2]);
        assert_eq!(kept.values, vec![-1.0, 2.0, 5.0]);
    }

    #[test]
    fn a_sample_given_twice_is_found_among_values_and_zeros() {
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let mut twice = |cells: &[(u32, u32)], read: &[Exact]| {
            SparseValues::from_triples(2, cells, read, &mut r)
                .unwrap()
                .err()
        };
        let found = Some(RepeatedSample { gene: 1 });
        assert_eq!(
            twice(
                &[(1, 0), (0, 0), (1, 0)],
                &[exact(1.0), exact(1.0), exact(2.0)]
            ),
            found
        );
        assert_eq!(twice(&[(1, 0), (1, 0)], &[exact(0.0), exact(0.0)]), found);
        assert_eq!(twice(&[(1, 0), (1, 0)], &[exact(3.0), exact(0.0)]), found);
        assert_eq!(twice(&[(1, 0), (1, 1)], &[exact(3.0), exact(0.0)]), None);
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

//! A matrix read from an HDF5 file grouped by gene ([`Grid`]): kept as
//! read when it is stored by gene in order (float32 values widened),
//! regrouped by a parallel counting sort when it is stored by cell (its
//! values read a block of cells at a time, [`regroup`]), or entry by entry,
//! to name the first fault, when a check fails.

use std::fmt::Display;
use std::ops::Range;

use datafusion::error::{DataFusionError, Result};
use hdf5_reader::Dataset;
use rayon::prelude::*;

use super::{Element, Floats, H5, Ints, wide_floats, wide_ints};
use crate::input::sparse_table::ascending_within;
use crate::memory::{Reservation, try_filled, try_with_capacity, try_zeroed};
use crate::sort::{balanced_bounds, split_mut};

/// Gene-grouped arrays: offsets, cell indices, values.
type Grouped = (Vec<i64>, Vec<i32>, Vec<f64>);

/// Entries of whole cells that [`regroup`] takes values for at a time.
const REGROUP_BLOCK: usize = 1 << 21;

/// Entries stored by cell (`indptr` over cells, `indices` genes, each in
/// `0..genes`) grouped by gene, each gene's cells ascending: a counting sort
/// on rayon's threads, each taking a range of genes of about equal entries
/// and reading all entries, writing its genes' own part of the output. The
/// values come block by block of whole cells, about `block` entries each:
/// `values(range)` gives those of the entries `range` (read from a file, so
/// that a file's values are never all held at once next to the output).
fn regroup<I: Copy + Into<i64> + Sync, V: Copy + Into<f64> + Sync>(
    indptr: &[i64],
    indices: &[I],
    genes: usize,
    block: usize,
    mut values: impl FnMut(Range<usize>) -> Result<Vec<V>>,
) -> Result<Grouped> {
    // Entries per gene, shifted by one, then summed into each gene's start.
    let mut start = indices
        .par_chunks(1 << 20)
        .fold(
            || vec![0i64; genes + 1],
            |mut counts, chunk| {
                for &i in chunk {
                    counts[Into::<i64>::into(i) as usize + 1] += 1;
                }
                counts
            },
        )
        .reduce(
            || vec![0i64; genes + 1],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    for g in 0..genes {
        start[g + 1] += start[g];
    }
    let mut cells = try_zeroed::<i32>(indices.len(), "HDF5 matrix indices")?;
    let mut out = try_zeroed::<f64>(indices.len(), "HDF5 matrix values")?;
    // Ranges of genes of about equal entries, one per thread.
    let bounds = balanced_bounds(&start, rayon::current_num_threads());
    let entry_ranges: Vec<Range<usize>> = bounds
        .windows(2)
        .map(|w| start[w[0]] as usize..start[w[1]] as usize)
        .collect();
    // Each range's next free slot of each of its genes, across blocks.
    let mut next: Vec<Vec<usize>> = bounds
        .windows(2)
        .map(|w| {
            let base = start[w[0]];
            start[w[0]..w[1]]
                .iter()
                .map(|&s| (s - base) as usize)
                .collect()
        })
        .collect();
    let n = indptr.len() - 1;
    let mut c0 = 0;
    while c0 < n {
        // Whole cells of at most `block` entries (at least one cell).
        let e0 = indptr[c0] as usize;
        let fits = indptr.partition_point(|&e| e as usize <= e0.saturating_add(block));
        let c1 = fits.saturating_sub(1).clamp(c0 + 1, n);
        let e1 = indptr[c1] as usize;
        let x = values(e0..e1)?;
        split_mut(&mut cells, &entry_ranges)
            .into_par_iter()
            .zip(split_mut(&mut out, &entry_ranges))
            .zip(bounds.par_windows(2))
            .zip(next.par_iter_mut())
            .for_each(|(((cells, out), w), next)| {
                let (first, end) = (w[0], w[1]);
                for c in c0..c1 {
                    let span = indptr[c] as usize..indptr[c + 1] as usize;
                    let stored = &x[span.start - e0..span.end - e0];
                    for (&i, &v) in indices[span].iter().zip(stored) {
                        let g = Into::<i64>::into(i) as usize;
                        if (first..end).contains(&g) {
                            let at = &mut next[g - first];
                            cells[*at] = c as i32;
                            out[*at] = v.into();
                            *at += 1;
                        }
                    }
                }
            });
        c0 = c1;
    }
    Ok((start, cells, out))
}

/// Whether every value is finite: a branch-free pass on rayon's threads.
fn all_finite<V: Copy + Into<f64> + Sync>(values: &[V]) -> bool {
    values.par_chunks(1 << 16).all(|chunk| {
        chunk
            .iter()
            .fold(true, |ok, &x| ok & Into::<f64>::into(x).is_finite())
    })
}

/// `values` as f64, converted on rayon's threads into fresh memory.
fn widen(values: &[f32]) -> Result<Vec<f64>> {
    let mut out = try_zeroed::<f64>(values.len(), "HDF5 matrix values")?;
    out.par_chunks_mut(1 << 16)
        .zip(values.par_chunks(1 << 16))
        .for_each(|(to, from)| {
            for (to, &x) in to.iter_mut().zip(from) {
                *to = f64::from(x);
            }
        });
    Ok(out)
}

/// A genes × cells matrix being read from the group or dataset `name`.
pub(super) struct Grid<'a> {
    pub(super) h5: &'a H5<'a>,
    /// The group (a sparse matrix) or dataset (a dense one).
    pub(super) name: &'a str,
    /// The dataset of the values.
    pub(super) data: &'a str,
    pub(super) genes: &'a [String],
    pub(super) cells: &'a [String],
}

impl Grid<'_> {
    /// Bytes of gene-grouped arrays of `genes` genes and `entries` entries.
    pub(super) fn bytes(genes: usize, entries: usize) -> usize {
        (genes + 1) * 8 + entries.saturating_mul(4 + 8)
    }

    /// An error about the dataset `dataset` of the group.
    fn error(&self, dataset: &str, msg: impl Display) -> DataFusionError {
        self.h5.error(&format!("{}/{dataset}", self.name), msg)
    }

    /// A compressed sparse matrix of the group: compressed by cell
    /// (`by_cell`: `indptr` per cell, `indices` genes) or by gene.
    pub(super) fn sparse(&self, by_cell: bool, reservation: &mut Reservation) -> Result<Grouped> {
        let path = |d: &str| format!("{}/{d}", self.name);
        let data = self.h5.dataset(&path("data"), 1)?;
        let indices = self.h5.dataset(&path("indices"), 1)?;
        let indptr = self.h5.dataset(&path("indptr"), 1)?;
        let entries = self.h5.size(&path("data"), &data)?;
        let n_indices = self.h5.size(&path("indices"), &indices)?;
        if n_indices != entries {
            return Err(self.error(
                "indices",
                format!("{n_indices} indices, but data holds {entries} values"),
            ));
        }
        let wide_values = wide_floats(self.h5.type_of(&data)).map_err(|e| self.error("data", e))?;
        let wide_indices =
            wide_ints(self.h5.type_of(&indices)).map_err(|e| self.error("indices", e))?;
        let (major, minor) = if by_cell {
            (self.cells.len(), self.genes.len())
        } else {
            (self.genes.len(), self.cells.len())
        };
        if self.cells.len() > i32::MAX as usize {
            return Err(self.error(
                "indices",
                format!(
                    "{} cells are more than can be read (2^31 - 1)",
                    self.cells.len()
                ),
            ));
        }
        // The arrays as stored (values by cell a block at a time), then as
        // grouped by gene: reserved before either is read.
        let value_bytes = if wide_values { 8 } else { 4 };
        let stored_values = if by_cell {
            entries.min(REGROUP_BLOCK)
        } else {
            entries
        };
        let stored = entries.saturating_mul(if wide_indices { 8 } else { 4 })
            + stored_values.saturating_mul(value_bytes)
            + (major + 1) * 8;
        reservation.try_grow(stored)?;
        reservation.try_grow(Self::bytes(self.genes.len(), entries))?;
        let indptr = self.h5.ints(&path("indptr"), &indptr)?;
        self.check_indptr(&indptr, major, entries)?;
        let ints = self.h5.indices(&path("indices"), &indices, wide_indices)?;
        let grouped = if by_cell {
            match &ints {
                Ints::Narrow(i) => self.by_cell(&indptr, i, &data, wide_values, minor),
                Ints::Wide(i) => self.by_cell(&indptr, i, &data, wide_values, minor),
            }?
        } else {
            self.by_gene_read(indptr, ints, &data, wide_values, minor)?
        };
        reservation.shrink_to(reservation.size() - stored);
        Ok(grouped)
    }

    /// Entries stored by gene (`indptr` per gene, `ints` cells), the values
    /// read from `data` (float64 when `wide`): kept as read where they are
    /// grouped already ([`Grid::grouped_as_read`]), otherwise
    /// [`Grid::by_gene`].
    fn by_gene_read(
        &self,
        indptr: Vec<i64>,
        ints: Ints,
        data: &Dataset,
        wide: bool,
        cells: usize,
    ) -> Result<Grouped> {
        let floats = self.h5.values(self.data, data, wide)?;
        Ok(match (ints, floats) {
            // The arrays as read, when each gene's are already right (as
            // anndata writes a matrix by gene): moved, not copied.
            (Ints::Narrow(i), Floats::Wide(v)) if Self::grouped_as_read(&indptr, &i, &v, cells) => {
                (indptr, i, v)
            }
            // Float32 values (as scanpy writes them) widened on rayon's
            // threads; the indices moved.
            (Ints::Narrow(i), Floats::Narrow(v))
                if Self::grouped_as_read(&indptr, &i, &v, cells) =>
            {
                let v = widen(&v)?;
                (indptr, i, v)
            }
            (ints, floats) => {
                with_widths!(&ints, &floats, |i, v| self.by_gene(&indptr, i, v, cells))?
            }
        })
    }

    /// Checks `indptr`: `major + 1` offsets ascending from 0 to `entries`.
    fn check_indptr(&self, indptr: &[i64], major: usize, entries: usize) -> Result<()> {
        if indptr.len() != major + 1 {
            return Err(self.error(
                "indptr",
                format!(
                    "{} offsets, expected {} (one more than the rows)",
                    indptr.len(),
                    major + 1
                ),
            ));
        }
        if indptr[0] != 0 || indptr[major] != entries as i64 {
            return Err(self.error(
                "indptr",
                format!(
                    "runs from {} to {}, expected 0 to {entries} (the number of values)",
                    indptr[0], indptr[major]
                ),
            ));
        }
        if let Some(k) = indptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(self.error(
                "indptr",
                format!(
                    "not ascending: offset {k} is {}, offset {} is {}",
                    indptr[k],
                    k + 1,
                    indptr[k + 1]
                ),
            ));
        }
        Ok(())
    }

    /// The value at entry `k` (of gene `g`, cell `c`), checked finite.
    fn finite<V: Copy + Into<f64>>(
        &self,
        values: &[V],
        k: usize,
        g: usize,
        c: usize,
    ) -> Result<f64> {
        let x: f64 = values[k].into();
        if x.is_finite() {
            Ok(x)
        } else {
            Err(self.h5.error(
                self.data,
                format!(
                    "gene '{}', cell '{}' has the value {x}; the values must be finite",
                    self.genes[g], self.cells[c]
                ),
            ))
        }
    }

    /// Index `k` of `indices`, checked in `0..bound`.
    fn index<I: Copy + Into<i64>>(&self, indices: &[I], k: usize, bound: usize) -> Result<usize> {
        let i: i64 = indices[k].into();
        if (0..bound as i64).contains(&i) {
            Ok(i as usize)
        } else {
            Err(self.error("indices", format!("entry {k} is {i}, outside 0..{bound}")))
        }
    }

    /// Whether arrays stored by gene are grouped as [`Grid::by_gene`]
    /// groups them: each gene's cells ascending within `0..cells`, every
    /// value finite. Branch-free passes on rayon's threads.
    fn grouped_as_read<V: Copy + Into<f64> + Sync>(
        indptr: &[i64],
        indices: &[i32],
        values: &[V],
        cells: usize,
    ) -> bool {
        let genes_ok = (0..indptr.len() - 1)
            .into_par_iter()
            .all(|g| ascending_within(&indices[indptr[g] as usize..indptr[g + 1] as usize], cells));
        genes_ok && all_finite(values)
    }

    /// Entries stored by cell, grouped by gene ([`regroup`], the values of
    /// the dataset `data` read a block of cells at a time, float64 when
    /// `wide`) when every index is in range (checked first, in a
    /// branch-free pass on rayon's threads) and every value finite (each
    /// block checked as read); otherwise entry by entry, to name the first
    /// fault ([`Grid::by_cell_checked`]).
    fn by_cell<I: Copy + Into<i64> + Sync>(
        &self,
        indptr: &[i64],
        indices: &[I],
        data: &Dataset,
        wide: bool,
        genes: usize,
    ) -> Result<Grouped> {
        let in_range = indices.par_chunks(1 << 16).all(|chunk| {
            chunk.iter().fold(true, |ok, &i| {
                let i: i64 = i.into();
                ok & (i >= 0) & (i < genes as i64)
            })
        });
        if !in_range {
            let floats = self.h5.values(self.data, data, wide)?;
            return match &floats {
                Floats::Narrow(v) => self.by_cell_checked(indptr, indices, v, genes),
                Floats::Wide(v) => self.by_cell_checked(indptr, indices, v, genes),
            };
        }
        if wide {
            self.by_cell_blocks::<I, f64>(indptr, indices, data, genes)
        } else {
            self.by_cell_blocks::<I, f32>(indptr, indices, data, genes)
        }
    }

    /// [`Grid::by_cell`] of indices in range: [`regroup`] of the values of
    /// `data` read as `V` a block at a time, each block checked to be
    /// finite (a value that is not is named).
    fn by_cell_blocks<I: Copy + Into<i64> + Sync, V: Element + Copy + Into<f64> + Sync>(
        &self,
        indptr: &[i64],
        indices: &[I],
        data: &Dataset,
        genes: usize,
    ) -> Result<Grouped> {
        regroup(indptr, indices, genes, REGROUP_BLOCK, |range| {
            let block = self.h5.read_range::<V>(self.data, data, range.clone())?;
            if !all_finite(&block) {
                // Named: the first value that is not finite.
                let k = block
                    .iter()
                    .position(|&x| !Into::<f64>::into(x).is_finite())
                    .unwrap_or(0);
                let entry = range.start + k;
                let c = indptr.partition_point(|&e| e as usize <= entry) - 1;
                let g = Into::<i64>::into(indices[entry]) as usize;
                self.finite(&block, k, g, c)?;
            }
            Ok(block)
        })
    }

    /// [`Grid::by_cell`] entry by entry, each index and value checked: the
    /// first fault is named.
    fn by_cell_checked<I: Copy + Into<i64>, V: Copy + Into<f64>>(
        &self,
        indptr: &[i64],
        indices: &[I],
        values: &[V],
        genes: usize,
    ) -> Result<Grouped> {
        let mut start = try_filled(genes + 1, 0i64, "HDF5 matrix offsets")?;
        for k in 0..indices.len() {
            start[self.index(indices, k, genes)? + 1] += 1;
        }
        for g in 0..genes {
            start[g + 1] += start[g];
        }
        let mut next = start.clone();
        let mut cells = try_zeroed::<i32>(indices.len(), "HDF5 matrix indices")?;
        let mut out = try_zeroed::<f64>(indices.len(), "HDF5 matrix values")?;
        for (c, w) in indptr.windows(2).enumerate() {
            let first = w[0] as usize;
            for (k, i) in (first..).zip(&indices[first..w[1] as usize]) {
                // In range: checked by the count above.
                let g = Into::<i64>::into(*i) as usize;
                let at = next[g] as usize;
                cells[at] = c as i32;
                out[at] = self.finite(values, k, g, c)?;
                next[g] += 1;
            }
        }
        Ok((start, cells, out))
    }

    /// Entries stored by gene, each gene's cells sorted when they are not.
    fn by_gene<I: Copy + Into<i64>, V: Copy + Into<f64>>(
        &self,
        indptr: &[i64],
        indices: &[I],
        values: &[V],
        cells: usize,
    ) -> Result<Grouped> {
        let mut at = try_with_capacity(indices.len(), "HDF5 matrix indices")?;
        let mut out = try_with_capacity(indices.len(), "HDF5 matrix values")?;
        let mut scratch: Vec<(i32, f64)> = Vec::new();
        for g in 0..indptr.len() - 1 {
            let range = indptr[g] as usize..indptr[g + 1] as usize;
            for k in range.clone() {
                let c = self.index(indices, k, cells)?;
                at.push(c as i32);
                out.push(self.finite(values, k, g, c)?);
            }
            if !at[range.clone()].is_sorted() {
                scratch.clear();
                scratch.extend(range.clone().map(|k| (at[k], out[k])));
                scratch.sort_by_key(|&(c, _)| c);
                for (k, &(c, x)) in range.zip(&scratch) {
                    at[k] = c;
                    out[k] = x;
                }
            }
        }
        Ok((indptr.to_vec(), at, out))
    }

    /// A dense cells × genes matrix (row-major), its non-zero values
    /// grouped by gene; more reserved in `reservation` as they are counted.
    pub(super) fn dense<V: Copy + Into<f64>>(
        &self,
        x: &[V],
        reservation: &mut Reservation,
    ) -> Result<Grouped> {
        let (m, n) = (self.genes.len(), self.cells.len());
        let mut start = try_filled(m + 1, 0i64, "HDF5 matrix offsets")?;
        for (k, v) in x.iter().enumerate() {
            if Into::<f64>::into(*v) != 0.0 {
                start[k % m + 1] += 1;
            }
        }
        for g in 0..m {
            start[g + 1] += start[g];
        }
        let entries = start[m] as usize;
        reservation.try_grow(Self::bytes(m, entries))?;
        let mut next = start.clone();
        let mut cells = try_zeroed::<i32>(entries, "HDF5 matrix indices")?;
        let mut out = try_zeroed::<f64>(entries, "HDF5 matrix values")?;
        for c in 0..n {
            for (g, slot) in next[..m].iter_mut().enumerate() {
                let k = c * m + g;
                if Into::<f64>::into(x[k]) == 0.0 {
                    continue;
                }
                let at = *slot as usize;
                cells[at] = c as i32;
                out[at] = self.finite(x, k, g, c)?;
                *slot += 1;
            }
        }
        Ok((start, cells, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix stored by gene is kept as read only when every gene's cells
    /// ascend within range and every value is finite; otherwise it takes
    /// the path that sorts a gene or names the fault.
    #[test]
    fn only_ordered_finite_genes_are_kept_as_read() {
        // Three genes over 4 cells; the second is empty.
        let indptr = [0i64, 2, 2, 5];
        let ok =
            |indices: &[i32], values: &[f64]| Grid::grouped_as_read(&indptr, indices, values, 4);
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!(ok(&[0, 3, 0, 1, 2], &values));
        // Out of order, repeated, out of range (above and below).
        assert!(!ok(&[3, 0, 0, 1, 2], &values));
        assert!(!ok(&[0, 3, 0, 1, 1], &values));
        assert!(!ok(&[0, 4, 0, 1, 2], &values));
        assert!(!ok(&[-1, 3, 0, 1, 2], &values));
        // Not finite.
        assert!(!ok(&[0, 3, 0, 1, 2], &[1.0, 2.0, f64::NAN, 4.0, 5.0]));
        assert!(!ok(&[0, 3, 0, 1, 2], &[1.0, 2.0, 3.0, f64::INFINITY, 5.0]));
        // Float32 values alike, and widened exactly.
        let narrow = [1.5f32, 2.0, 3.25, 4.0, 1e-7];
        assert!(Grid::grouped_as_read(&indptr, &[0, 3, 0, 1, 2], &narrow, 4));
        assert!(!Grid::grouped_as_read(
            &indptr,
            &[0, 3, 0, 1, 2],
            &[1.0f32, f32::NAN, 3.0, 4.0, 5.0],
            4
        ));
        let wide = widen(&narrow).unwrap();
        assert!(wide.iter().zip(narrow).all(|(&w, n)| w == f64::from(n)));
    }

    /// Entries by cell regrouped by gene on 1 to 3 threads, their values
    /// taken in blocks of several sizes, equal a plain grouping (each gene's
    /// cells ascending), empty genes and cells included.
    #[test]
    fn regrouped_entries_equal_a_plain_grouping() {
        let (cells, genes) = (300usize, 37usize);
        let mut rng = crate::test_rng::XorShift::new(0x9E37_79B9_7F4A_7C15);
        let mut next = || rng.next_u64();
        let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
        for c in 0..cells {
            // Cells 10..20 empty; gene 5 never present.
            for g in 0..genes {
                if !(10..20).contains(&c) && g != 5 && next() % 4 == 0 {
                    indices.push(g as i32);
                    values.push((next() % 1000) as f32 / 7.0);
                }
            }
            indptr.push(indices.len() as i64);
        }
        let mut want: Vec<Vec<(i32, f64)>> = vec![Vec::new(); genes];
        for c in 0..cells {
            for k in indptr[c] as usize..indptr[c + 1] as usize {
                want[indices[k] as usize].push((c as i32, f64::from(values[k])));
            }
        }
        // Blocks of values: one cell at a time, a few cells, all at once.
        for (threads, block) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (1, 50),
            (2, 50),
            (2, 1 << 20),
            (3, 777),
        ] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut asked = Vec::new();
            let (start, got_cells, got_values) = pool
                .install(|| {
                    regroup(&indptr, &indices, genes, block, |range| {
                        asked.push(range.clone());
                        Ok(values[range].to_vec())
                    })
                })
                .unwrap();
            // Whole cells, in order, each block within its size (or one cell).
            assert_eq!(asked.first().map(|r| r.start), Some(0));
            assert_eq!(asked.last().map(|r| r.end), Some(values.len()));
            assert!(asked.windows(2).all(|w| w[0].end == w[1].start));
            assert!(asked.iter().all(|r| indptr.contains(&(r.start as i64))
                && indptr.contains(&(r.end as i64))));
            let one_cell = |r: &Range<usize>| {
                indptr
                    .windows(2)
                    .any(|w| w[0] as usize == r.start && w[1] as usize == r.end)
            };
            assert!(
                asked.iter().all(|r| r.len() <= block || one_cell(r)),
                "block {block}"
            );
            assert_eq!(start.len(), genes + 1);
            for (g, want) in want.iter().enumerate() {
                let range = start[g] as usize..start[g + 1] as usize;
                let got: Vec<(i32, f64)> = got_cells[range.clone()]
                    .iter()
                    .copied()
                    .zip(got_values[range].iter().copied())
                    .collect();
                assert_eq!(&got, want, "gene {g}, {threads} threads, block {block}");
            }
        }
    }
}

//! Ranks of a sparse matrix: per gene, its non-zero samples with their
//! dense ranks, the zeros one implicit group.
//!
//! A gene's sample order (ascending rank, ties in sample order) is its
//! negative values, then its zeros, then its positive values, so only the
//! non-zero samples are stored, in that order, with their ranks; the zero
//! group's samples are the others and its rank is the one between. Tie
//! statistics and groups of equal values are those of the dense form (the
//! zero group included), so every pair statistic reads the same. Memory is
//! 8 bytes per non-zero value, against 8 per value dense; a gene of one
//! non-zero value (a binarised peak) takes none: its samples in sample order
//! are its sorted order, read where the input holds them, and its ranks are
//! all one rank.
//!
//! Kernels read a sparse gene directly where they can ([`SparseGene`]: the
//! rank sums of two-valued genes, the zero-inflated kernel) and otherwise
//! through a [`DensePair`], the two genes of a pair expanded into scratch
//! space (O(n) per pair, next to a kernel's O(n log n)).

use std::mem::size_of;
use std::ops::Range;

use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::error::Result;
use rayon::prelude::*;

use super::{GeneSummary, RankForm, RankedMatrix, tally};
use crate::input::sparse::{GeneEntries, SparseValues};
use crate::memory::{Reservation, try_filled, try_with_capacity, try_written_in_parts, try_zeroed};
use crate::sort::{sort_keys, split_mut};

/// The sparse ranks of every gene.
#[derive(Debug, Clone, Default)]
pub(super) struct SparseRanks {
    /// Where each gene's non-zero samples and their ranks are.
    place: Vec<Place>,
    /// The non-zero samples of the genes ranked by sorting (several
    /// non-zero values), each gene's in ascending (rank, sample) order.
    cells: Vec<u32>,
    /// Their dense ranks.
    ranks: Vec<u32>,
    /// The input's arrays of samples, read in place for genes of one
    /// non-zero value (a binarised peak): such a gene's samples in sample
    /// order are its sorted order, so they are not copied.
    input_cells: Vec<ScalarBuffer<u32>>,
    /// Bytes of `input_cells` held here only (not shared with an owner).
    input_held: usize,
    /// The ranks of genes of one non-zero value, all equal (0 or 1): the
    /// first half 0, the second 1, each as long as the longest such gene.
    constant_ranks: Vec<u32>,
    /// Per gene: its negative values, and the zero group's rank.
    zero: Vec<(u32, u32)>,
    /// The samples of each gene of one non-zero value and some zeros (a
    /// binarised peak) again, as 16-bit numbers, when there are at most
    /// [`U16_CELLS_UP_TO`] samples: gene `g`'s are
    /// `narrow[narrow_start[g]..narrow_start[g + 1]]` (none for other genes;
    /// both empty when the samples are more). The rank sums read such a
    /// list for every pair, from memory when the partners are scattered:
    /// half the bytes.
    narrow: Vec<u16>,
    narrow_start: Vec<usize>,
}

/// Where a gene's non-zero samples and their ranks are: `cells[range]` and
/// `ranks[range]` of [`SparseRanks`] (`source` [`RANKED`]), or
/// `input_cells[source][range]`, all of rank `rank`.
#[derive(Debug, Clone, Copy)]
struct Place {
    source: u32,
    range: (usize, usize),
    rank: u32,
}

/// [`Place::source`] of a gene ranked by sorting.
const RANKED: u32 = u32::MAX;

/// Up to this many samples, one-valued genes' samples are also kept as
/// `u16` ([`SparseGene::narrow`]).
const U16_CELLS_UP_TO: usize = 1 << 16;

impl SparseRanks {
    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.place.capacity() * size_of::<Place>()
            + self.narrow_start.capacity() * size_of::<usize>()
            + (self.cells.capacity() + self.ranks.capacity() + self.constant_ranks.capacity())
                * size_of::<u32>()
            + self.input_held
            + self.zero.capacity() * size_of::<(u32, u32)>()
            + self.narrow.capacity() * size_of::<u16>()
    }
}

/// One gene of a sparse matrix.
#[derive(Debug, Clone, Copy)]
pub struct SparseGene<'a> {
    /// Its non-zero samples, in ascending (rank, sample) order.
    pub cells: &'a [u32],
    /// Their dense ranks.
    pub ranks: &'a [u32],
    /// How many of them are negative (they come first).
    pub negatives: usize,
    /// Samples at zero.
    pub zeros: usize,
    /// The rank of the zero group (when `zeros > 0`).
    pub zero_rank: u32,
    /// `cells` as 16-bit numbers, for a gene of one non-zero value and some
    /// zeros when the samples are at most 65,536; otherwise `None`.
    pub narrow: Option<&'a [u16]>,
}

impl SparseGene<'_> {
    /// Samples in all.
    pub fn samples(&self) -> usize {
        self.cells.len() + self.zeros
    }

    /// Calls `run(rank, start..end, cells)` for each group of equal values
    /// in ascending order, `start..end` its positions in the gene's sample
    /// order and `cells` its samples (`None` for the zero group, whose
    /// samples are those not listed).
    pub fn for_each_run(&self, mut run: impl FnMut(u32, Range<usize>, Option<&[u32]>)) {
        let (k, neg, zeros) = (self.cells.len(), self.negatives, self.zeros);
        let position = |q: usize| if q < neg { q } else { q + zeros };
        let mut q = 0;
        while q <= k {
            if q == neg && zeros > 0 {
                run(self.zero_rank, neg..neg + zeros, None);
            }
            if q == k {
                break;
            }
            let rank = self.ranks[q];
            let mut end = q + 1;
            while end < k && self.ranks[end] == rank && end != neg {
                end += 1;
            }
            run(
                rank,
                position(q)..position(q) + (end - q),
                Some(&self.cells[q..end]),
            );
            q = end;
        }
    }
}

/// Which genes of `values` have one non-zero value (binarised peaks: read
/// in place), the ranges of the ranked arrays the others take, and the
/// most entries of a one-valued gene.
fn sparse_layout(values: &SparseValues) -> (Vec<bool>, Vec<Range<usize>>, usize) {
    let genes = values.genes();
    let one_valued: Vec<bool> = (0..genes)
        .into_par_iter()
        .map(|g| has_one_value(values.gene(g)))
        .collect();
    let ranges: Vec<Range<usize>> = (0..genes)
        .scan(0usize, |at, g| {
            let len = if one_valued[g] {
                0
            } else {
                values.entries(g).len()
            };
            *at += len;
            Some(*at - len..*at)
        })
        .collect();
    let longest_one_valued = (0..genes)
        .filter(|&g| one_valued[g])
        .map(|g| values.entries(g).len())
        .max()
        .unwrap_or(0);
    (one_valued, ranges, longest_one_valued)
}

/// Every gene of `values` ranked on rayon's threads, each gene that is not
/// one-valued into its `ranges` of `(cells, ranks)`; a one-valued gene's
/// rank comes with it.
fn rank_genes(
    values: &SparseValues,
    samples: usize,
    one_valued: &[bool],
    ranges: &[Range<usize>],
    (cells, ranks): (&mut [u32], &mut [u32]),
) -> Vec<(RankedGene, u32)> {
    let parts = split_mut(cells, ranges)
        .into_iter()
        .zip(split_mut(ranks, ranges))
        .zip(0..values.genes());
    parts
        .collect::<Vec<_>>()
        .into_par_iter()
        // Parts of at most 4 genes: the genes to sort (of the RNA) may
        // all come before those of one value (the peaks), and rayon
        // would otherwise leave them to one thread (20 ms of one core
        // in a candidate list's query, measured).
        .with_max_len(4)
        .map(|((c, r), g)| {
            if one_valued[g] {
                rank_one_value(values.gene(g), samples)
            } else {
                (rank_sparse_gene(values.gene(g), samples, c, r), 0)
            }
        })
        .collect()
}

/// Where each gene's ranks are: a one-valued gene in the input's cell
/// arrays (`arrays`, the block holding it), the others in the ranked
/// arrays (`ranges`); and the bytes of the input's arrays only these ranks
/// keep alive.
fn places(
    values: &SparseValues,
    one_valued: &[bool],
    ranges: &[Range<usize>],
    ranked: &[(RankedGene, u32)],
    arrays: &[(ScalarBuffer<u32>, usize)],
) -> (Vec<Place>, usize) {
    let mut used = vec![false; arrays.len()];
    let place: Vec<Place> = (0..values.genes())
        .map(|g| {
            if one_valued[g] {
                let (block, range) = values.cells_place(g);
                used[block] = true;
                Place {
                    source: block as u32,
                    range: (range.start, range.end),
                    rank: ranked[g].1,
                }
            } else {
                Place {
                    source: RANKED,
                    range: (ranges[g].start, ranges[g].end),
                    rank: 0,
                }
            }
        })
        .collect();
    let input_held = (0..arrays.len())
        .filter(|&b| used[b])
        .map(|b| arrays[b].1)
        .sum();
    (place, input_held)
}

impl RankedMatrix {
    /// Ranks a sparse matrix of `samples` samples: only its non-zero values
    /// are stored (see the module docs), reserved in `reservation` before
    /// they are allocated; on return the reservation holds
    /// [`RankedMatrix::heap_bytes`].
    pub fn try_build_sparse(
        samples: usize,
        values: &SparseValues,
        reservation: &mut Reservation,
    ) -> Result<Self> {
        assert!(samples < u32::MAX as usize, "fewer than u32::MAX samples");
        let genes = values.genes();
        let (one_valued, ranges, longest_one_valued) = sparse_layout(values);
        let entries = ranges.last().map_or(0, |r| r.end);
        let per_gene = size_of::<GeneSummary>() + size_of::<Place>() + 8;
        reservation.try_grow(
            entries
                .saturating_mul(2 * size_of::<u32>())
                .saturating_add(longest_one_valued * 2 * size_of::<u32>())
                .saturating_add(genes.saturating_mul(per_gene)),
        )?;
        // Zeroed by the allocator: the pages are first touched as the genes
        // are ranked, on rayon's threads.
        let mut cells = try_zeroed::<u32>(entries, "ranks of non-zero values")?;
        let mut ranks = try_zeroed::<u32>(entries, "ranks of non-zero values")?;
        let ranked = rank_genes(
            values,
            samples,
            &one_valued,
            &ranges,
            (&mut cells, &mut ranks),
        );
        let group_count: usize = ranked.iter().map(|((_, _, g), _)| g.len()).sum();
        reservation.try_grow(2 * group_count * size_of::<(u32, u32)>())?;
        let mut group_start = Vec::with_capacity(genes + 1);
        group_start.push(0);
        for ((_, _, groups), _) in &ranked {
            group_start.push(group_start.last().unwrap_or(&0) + groups.len());
        }
        let mut groups = try_with_capacity(group_count, "groups of tied values")?;
        groups.extend(ranked.iter().flat_map(|((_, _, g), _)| g.iter().copied()));
        let summaries: Vec<GeneSummary> = ranked.iter().map(|((s, _, _), _)| *s).collect();
        let any_two_valued = summaries.iter().any(|s| s.ties.distinct == 2);
        let (narrow, narrow_start) = if any_two_valued && samples <= U16_CELLS_UP_TO {
            narrow_cells(values, &one_valued, samples, reservation)?
        } else {
            (Vec::new(), Vec::new())
        };
        // The input's arrays that one-valued genes are read from, and the
        // bytes of them only these ranks keep alive.
        let arrays = values.cell_arrays();
        let (place, input_held) = places(values, &one_valued, &ranges, &ranked, &arrays);
        let mut constant_ranks =
            try_with_capacity(2 * longest_one_valued, "ranks of one-valued genes")?;
        constant_ranks.resize(longest_one_valued, 0);
        constant_ranks.resize(2 * longest_one_valued, 1);
        let matrix = Self {
            genes,
            samples,
            summaries,
            groups,
            group_start,
            valid: Vec::new(),
            mask_words: samples.div_ceil(64),
            any_two_valued,
            form: RankForm::Sparse(SparseRanks {
                place,
                cells,
                ranks,
                input_cells: arrays.into_iter().map(|(a, _)| a).collect(),
                input_held,
                constant_ranks,
                zero: ranked.iter().map(|((_, z, _), _)| *z).collect(),
                narrow,
                narrow_start,
            }),
        };
        drop(ranked);
        let held = matrix.heap_bytes();
        reservation.try_grow(held.saturating_sub(reservation.size()))?;
        reservation.shrink_to(held);
        Ok(matrix)
    }

    /// [`RankedMatrix::from_values`] kept sparse: a genes × samples
    /// row-major matrix of finite values (no NaN), its zeros implicit. Panics
    /// when memory cannot be allocated.
    pub fn sparse_from_values(genes: usize, samples: usize, values: &[f64]) -> Self {
        assert_eq!(values.len(), genes * samples, "matrix shape");
        let sparse = SparseValues::from_dense_rows(genes, samples, values);
        let mut reservation = crate::memory::QueryMemory::unbounded("")
            .reserve("ranks", 0)
            .expect("an unbounded pool grants everything");
        Self::try_build_sparse(samples, &sparse, &mut reservation).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Whether the matrix holds sparse ranks (read its genes through
    /// [`RankedMatrix::sparse_gene`]).
    #[inline]
    pub fn is_sparse(&self) -> bool {
        matches!(self.form, RankForm::Sparse(_))
    }

    /// Gene `g` of a sparse matrix; `None` for a dense one.
    #[inline]
    pub fn sparse_gene(&self, g: usize) -> Option<SparseGene<'_>> {
        let RankForm::Sparse(s) = &self.form else {
            return None;
        };
        let p = s.place[g];
        let range = p.range.0..p.range.1;
        let (cells, ranks) = if p.source == RANKED {
            (&s.cells[range.clone()], &s.ranks[range.clone()])
        } else {
            // All of one rank: the constant ranks' half of that rank.
            let half = s.constant_ranks.len() / 2;
            let from = p.rank as usize * half;
            (
                &s.input_cells[p.source as usize][range.clone()],
                &s.constant_ranks[from..from + range.len()],
            )
        };
        let (negatives, zero_rank) = s.zero[g];
        let narrow = s
            .narrow_start
            .get(g + 1)
            .map(|&end| &s.narrow[s.narrow_start[g]..end])
            .filter(|cells| !cells.is_empty());
        Some(SparseGene {
            zeros: self.samples - range.len(),
            cells,
            ranks,
            negatives: negatives as usize,
            zero_rank,
            narrow,
        })
    }

    /// Gene `g`'s dense ranks and sample order, as
    /// [`RankedMatrix::ranks`] and [`RankedMatrix::order`] give them, written
    /// to `ranks` and `order` (`samples` long each), from either form.
    pub fn fill_dense(&self, g: usize, ranks: &mut [u32], order: &mut [u32]) {
        let Some(gene) = self.sparse_gene(g) else {
            ranks.copy_from_slice(self.ranks(g));
            order.copy_from_slice(self.order(g));
            return;
        };
        ranks.fill(gene.zero_rank);
        for (&a, &r) in gene.cells.iter().zip(gene.ranks) {
            ranks[a as usize] = r;
        }
        let neg = gene.negatives;
        order[..neg].copy_from_slice(&gene.cells[..neg]);
        let mut p = neg;
        if gene.zeros > 0 {
            // Only zeros hold the zero group's rank.
            for (a, &r) in ranks.iter().enumerate() {
                if r == gene.zero_rank {
                    order[p] = a as u32;
                    p += 1;
                }
            }
        }
        order[p..].copy_from_slice(&gene.cells[neg..]);
    }

    /// The matrix with dense ranks (what the bit-plane kernel builds its
    /// planes from), reserved in `reservation` first; a dense matrix as it is.
    pub fn try_into_dense(self, reservation: &mut Reservation) -> Result<Self> {
        if !self.is_sparse() {
            return Ok(self);
        }
        let (genes, n) = (self.genes, self.samples);
        reservation.try_grow(genes.saturating_mul(n).saturating_mul(2 * size_of::<u32>()))?;
        let mut ranks = try_filled(genes * n, 0u32, "ranks")?;
        let mut order = try_filled(genes * n, 0u32, "sample orders")?;
        if n > 0 {
            ranks
                .par_chunks_mut(n)
                .zip(order.par_chunks_mut(n))
                .enumerate()
                .for_each(|(g, (r, o))| self.fill_dense(g, r, o));
        }
        let dense = Self {
            form: RankForm::Dense { ranks, order },
            ..self
        };
        reservation.shrink_to(dense.heap_bytes());
        Ok(dense)
    }
}

/// The samples of each gene of one non-zero value and some zeros, as u16
/// (`samples` at most [`U16_CELLS_UP_TO`]), and each gene's start among
/// them (see [`SparseRanks`]'s `narrow`), reserved in `reservation`.
fn narrow_cells(
    values: &SparseValues,
    one_valued: &[bool],
    samples: usize,
    reservation: &mut Reservation,
) -> Result<(Vec<u16>, Vec<usize>)> {
    let genes = values.genes();
    // One value and some zeros: two values.
    let listed = |g: usize| one_valued[g] && (1..samples).contains(&values.entries(g).len());
    let mut start = try_with_capacity(genes + 1, "16-bit samples of one-valued genes")?;
    start.push(0);
    for g in 0..genes {
        let k = if listed(g) {
            values.entries(g).len()
        } else {
            0
        };
        start.push(start[g] + k);
    }
    let total = start[genes];
    reservation.try_grow((genes + 1) * size_of::<usize>() + total * size_of::<u16>())?;
    let ranges: Vec<Range<usize>> = (0..genes).map(|g| start[g]..start[g + 1]).collect();
    // Below 2^16 (the samples are at most 2^16); in sample order, which is
    // a one-valued gene's sorted order (a gene not listed is empty).
    let narrow = try_written_in_parts(&ranges, "16-bit samples of one-valued genes", |g| {
        let cells = if listed(g) { values.gene(g).cells } else { &[] };
        cells.iter().map(|&a| a as u16)
    })?;
    Ok((narrow, start))
}

/// One sparse gene ranked: its statistics, (negatives, zero rank) and
/// groups of tied values.
type RankedGene = (GeneSummary, (u32, u32), Vec<(u32, u32)>);

/// Ranks one gene of `samples` samples, `gene` its non-zero entries:
/// writes its non-zero samples in ascending (value, sample) order to
/// `cells` and their dense ranks to `ranks`; returns its statistics,
/// (negatives, zero rank) and groups of tied values (positions in the full
/// sample order).
fn rank_sparse_gene(
    gene: GeneEntries<'_>,
    samples: usize,
    cells: &mut [u32],
    ranks: &mut [u32],
) -> RankedGene {
    let k = gene.len();
    let zeros = samples - k;
    // Entries are in sample order: ties sort by it.
    let key = |q: u32| gene.values[q as usize] + 0.0;
    let residual = |q: u32| gene.residuals.get(q as usize).copied().unwrap_or(0);
    let cmp = |a: u32, b: u32| {
        key(a)
            .total_cmp(&key(b))
            .then_with(|| residual(a).cmp(&residual(b)))
    };
    // The sorted entries' keys, where they were sorted by them.
    let mut sorted_keys: Vec<u64> = Vec::new();
    let sorted: Vec<u32> = if gene.residuals.is_empty() {
        // Values as integers of the same order (IEEE 754 total order, as
        // `total_cmp`), each with its entry: one sort of distinct u64
        // pairs, no comparator calls.
        let ordered = |x: f64| {
            let bits = x.to_bits();
            bits ^ (((bits as i64 >> 63) as u64) >> 1) ^ (1 << 63)
        };
        let mut keys: Vec<(u64, u32)> = (0..k as u32).map(|q| (ordered(key(q)), q)).collect();
        sort_keys(&mut keys);
        sorted_keys = keys.iter().map(|&(x, _)| x).collect();
        keys.into_iter().map(|(_, q)| q).collect()
    } else {
        let mut sorted: Vec<u32> = (0..k as u32).collect();
        sorted.sort_by(|&a, &b| cmp(a, b));
        sorted
    };
    // Negatives come first.
    let negatives = sorted.partition_point(|&q| key(q) < 0.0);
    let differs = |q: usize| {
        if sorted_keys.is_empty() {
            cmp(sorted[q], sorted[q - 1]).is_ne()
        } else {
            sorted_keys[q] != sorted_keys[q - 1]
        }
    };
    let mut groups = Vec::new();
    let mut rank = 0u32;
    let mut zero_rank = 0u32;
    let mut start = 0usize;
    // Position of sorted entry q in the gene's sample order.
    let position = |q: usize| if q < negatives { q } else { q + zeros };
    let close = |start: usize, end: usize, groups: &mut Vec<(u32, u32)>| {
        if end - start > 1 {
            groups.push((position(start) as u32, (end - start) as u32));
        }
    };
    for q in 0..k {
        let new_run = q > 0 && (q == negatives || differs(q));
        if q == negatives && zeros > 0 {
            // The zero group sits between negatives and positives.
            if q > 0 {
                close(start, q, &mut groups);
                rank += 1;
            }
            zero_rank = rank;
            if zeros > 1 {
                groups.push((negatives as u32, zeros as u32));
            }
            rank += 1;
            start = q;
        } else if new_run {
            close(start, q, &mut groups);
            rank += 1;
            start = q;
        }
        cells[q] = gene.cells[sorted[q] as usize];
        ranks[q] = rank;
    }
    if k > 0 {
        close(start, k, &mut groups);
    }
    if negatives == k && zeros > 0 {
        zero_rank = if k > 0 { rank + 1 } else { 0 };
        if zeros > 1 {
            groups.push((negatives as u32, zeros as u32));
        }
    }
    ranked_gene(samples, negatives, zero_rank, groups)
}

/// A ranked gene of `samples` samples: its statistics from its groups of
/// tied values, its negative values and the zero group's rank.
fn ranked_gene(
    samples: usize,
    negatives: usize,
    zero_rank: u32,
    groups: Vec<(u32, u32)>,
) -> RankedGene {
    let (ties, variance) = tally(samples, groups.iter().map(|&(_, len)| u64::from(len)));
    let summary = GeneSummary {
        ties,
        variance,
        present: samples as u32,
    };
    (summary, (negatives as u32, zero_rank), groups)
}

/// Whether a gene's non-zero values are one value (a binarised peak), so
/// that its samples in sample order are its sorted order: no keys, no sort
/// ([`rank_one_value`]), and its samples are read where they are.
fn has_one_value(gene: GeneEntries<'_>) -> bool {
    gene.residuals.is_empty()
        && gene
            .values
            .iter()
            .all(|&x| x.to_bits() == gene.values[0].to_bits())
}

/// [`rank_sparse_gene`] of a gene whose non-zero values are one value
/// ([`has_one_value`]; or none): its samples in sample order are its
/// sorted order, one group of them and one of the zeros (below them when
/// the value is positive), each of one rank. O(1) (nothing is written);
/// returns the ranked gene and the rank of its non-zero samples.
fn rank_one_value(gene: GeneEntries<'_>, samples: usize) -> (RankedGene, u32) {
    let k = gene.len();
    let zeros = samples - k;
    let negative = gene.values.first().is_some_and(|&x| x < 0.0);
    // (position, length) of the values' group and of the zeros', in the
    // gene's sample order, and their ranks.
    let (values_at, zeros_at, value_rank, zero_rank) = match (negative, zeros > 0 && k > 0) {
        (true, true) => (0, k, 0, 1),
        (false, true) => (zeros, 0, 1, 0),
        _ => (0, 0, 0, 0),
    };
    let mut groups = Vec::with_capacity(2);
    for (at, len) in [(values_at, k), (zeros_at, zeros)] {
        if len > 1 {
            groups.push((at as u32, len as u32));
        }
    }
    // Ascending positions.
    groups.sort_unstable();
    let ranked = ranked_gene(samples, if negative { k } else { 0 }, zero_rank, groups);
    (ranked, value_rank)
}

/// Two genes of a matrix as a dense two-gene matrix (genes 0 and 1), for
/// the kernels that read dense ranks: a sparse matrix's pairs are expanded
/// here, O(n) per gene, the first gene kept while the next pair has it.
#[derive(Debug, Default)]
pub struct DensePair {
    matrix: Option<RankedMatrix>,
    held: [Option<usize>; 2],
}

impl DensePair {
    /// Genes `i` and `j` of `m` (a sparse matrix) as genes 0 and 1.
    pub fn load(&mut self, m: &RankedMatrix, i: usize, j: usize) -> &RankedMatrix {
        let n = m.samples;
        let pair = self.matrix.get_or_insert_with(|| RankedMatrix {
            genes: 2,
            samples: n,
            form: RankForm::Dense {
                ranks: vec![0; 2 * n],
                order: vec![0; 2 * n],
            },
            summaries: vec![GeneSummary::default(); 2],
            groups: Vec::new(),
            group_start: vec![0; 3],
            valid: Vec::new(),
            mask_words: n.div_ceil(64),
            any_two_valued: false,
        });
        if pair.samples != n {
            pair.samples = n;
            pair.mask_words = n.div_ceil(64);
            pair.form = RankForm::Dense {
                ranks: vec![0; 2 * n],
                order: vec![0; 2 * n],
            };
            self.held = [None, None];
        }
        for (slot, g) in [i, j].into_iter().enumerate() {
            if self.held[slot] != Some(g) {
                let RankForm::Dense { ranks, order } = &mut pair.form else {
                    unreachable!("a pair's ranks are dense");
                };
                let (r, o) = (
                    &mut ranks[slot * n..(slot + 1) * n],
                    &mut order[slot * n..(slot + 1) * n],
                );
                m.fill_dense(g, r, o);
                pair.summaries[slot] = m.summaries[g];
                self.held[slot] = Some(g);
            }
        }
        pair.groups.clear();
        pair.groups.extend_from_slice(m.groups(i));
        pair.groups.extend_from_slice(m.groups(j));
        pair.group_start = vec![0, m.groups(i).len(), pair.groups.len()];
        pair.any_two_valued = m.two_valued(i) || m.two_valued(j);
        pair
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::QueryMemory;

    /// A sparse matrix and the dense one of the same values.
    fn both(genes: usize, n: usize, values: &[f64]) -> (RankedMatrix, RankedMatrix) {
        let sparse = SparseValues::from_dense_rows(genes, n, values);
        let mut r = QueryMemory::unbounded("x").reserve("r", 0).unwrap();
        let m = RankedMatrix::try_build_sparse(n, &sparse, &mut r).unwrap();
        assert_eq!(r.size(), m.heap_bytes());
        (m, RankedMatrix::from_values(genes, n, values))
    }

    fn random(seed: u64, len: usize, zeros: u64, levels: u64) -> Vec<f64> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = s >> 33;
                if r % 100 < zeros {
                    0.0
                } else {
                    (r / 100 % levels) as f64 - (levels / 4) as f64
                }
            })
            .collect()
    }

    /// Every statistic and the expanded ranks equal the dense form's.
    #[test]
    fn sparse_ranks_expand_to_the_dense_ones() {
        for n in [1usize, 2, 5, 64, 300] {
            for (zeros, levels) in [(0, 1000), (50, 3), (90, 1000), (95, 2), (100, 5), (30, 1)] {
                let genes = 5;
                let values = random(n as u64 * 31 + zeros, genes * n, zeros, levels);
                let (s, d) = both(genes, n, &values);
                let mut r = QueryMemory::unbounded("x").reserve("r", 0).unwrap();
                let expanded = s.clone().try_into_dense(&mut r).unwrap();
                for g in 0..genes {
                    let what = format!("n {n}, zeros {zeros}, levels {levels}, gene {g}");
                    assert_eq!(expanded.ranks(g), d.ranks(g), "{what}");
                    assert_eq!(expanded.order(g), d.order(g), "{what}");
                    assert_eq!(s.ties(g), d.ties(g), "{what}");
                    assert_eq!(s.variance_terms(g), d.variance_terms(g), "{what}");
                    assert_eq!(s.groups(g), d.groups(g), "{what}");
                    assert_eq!(s.two_valued(g), d.two_valued(g), "{what}");
                    assert_eq!(s.largest_group(g), d.largest_group(g), "{what}");
                    // Runs: every sample once, at its rank, in order.
                    let gene = s.sparse_gene(g).unwrap();
                    let mut seen = vec![false; n];
                    let mut next = 0;
                    gene.for_each_run(|rank, range, cells| {
                        assert_eq!(range.start, next, "{what}");
                        next = range.end;
                        let members: Vec<u32> = match cells {
                            Some(c) => c.to_vec(),
                            None => (0..n as u32)
                                .filter(|&a| values[g * n + a as usize] == 0.0)
                                .collect(),
                        };
                        assert_eq!(members.len(), range.len(), "{what}");
                        for a in members {
                            assert_eq!(d.ranks(g)[a as usize], rank, "{what}");
                            assert!(!seen[a as usize]);
                            seen[a as usize] = true;
                        }
                    });
                    assert_eq!(next, n, "{what}");
                }
                assert_eq!(s.any_two_valued(), d.any_two_valued());
                let mut pair = DensePair::default();
                for (i, j) in [(0, 1), (0, 2), (3, 2), (4, 4.min(genes - 1))] {
                    let p = pair.load(&s, i, j);
                    assert_eq!(p.ranks(0), d.ranks(i));
                    assert_eq!(p.ranks(1), d.ranks(j));
                    assert_eq!(p.order(1), d.order(j));
                    assert_eq!(p.tie_groups(1).count(), d.tie_groups(j).count());
                    assert_eq!(p.tied_in_both(0, 1), d.tied_in_both(i, j));
                }
            }
        }
    }

    /// Genes of one non-zero value (negative or positive, with and
    /// without zeros, none at all) rank as the dense form does.
    #[test]
    fn one_valued_genes_rank_as_the_dense_form() {
        let n = 5;
        let values = [
            [-2.0, -2.0, 0.0, 0.0, -2.0],
            [3.0, 0.0, 3.0, 3.0, 0.0],
            [5.0, 5.0, 5.0, 5.0, 5.0],
            [-1.0; 5],
            [0.0; 5],
            [0.0, 7.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, -7.0],
            [1.0, 1.0, 1.0, 1.0, 0.0],
        ]
        .concat();
        let genes = values.len() / n;
        let (s, d) = both(genes, n, &values);
        let mut r = QueryMemory::unbounded("x").reserve("r", 0).unwrap();
        let expanded = s.clone().try_into_dense(&mut r).unwrap();
        for g in 0..genes {
            assert_eq!(expanded.ranks(g), d.ranks(g), "gene {g}");
            assert_eq!(expanded.order(g), d.order(g), "gene {g}");
            assert_eq!(s.ties(g), d.ties(g), "gene {g}");
            assert_eq!(s.variance_terms(g), d.variance_terms(g), "gene {g}");
            assert_eq!(s.groups(g), d.groups(g), "gene {g}");
            assert_eq!(s.two_valued(g), d.two_valued(g), "gene {g}");
            assert_eq!(s.largest_group(g), d.largest_group(g), "gene {g}");
        }
    }
}

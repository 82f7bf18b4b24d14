//! Rank transform: each gene once, before any pair is computed.
//!
//! An [`ExpressionMatrix`](crate::input::ExpressionMatrix) becomes a
//! [`RankedMatrix`]: each gene's dense ranks, its samples in rank order and
//! its ties ([`GeneTies`], the terms tau needs besides a pair's numerator),
//! computed here once per gene instead of once per pair. A sparse matrix is
//! ranked sparse (`sparse.rs`: each gene's non-zero samples in rank order,
//! the zeros implicit). The kernels read the ranked matrix.

use std::mem::size_of;

use datafusion::error::Result;
use rayon::prelude::*;

use crate::memory::{QueryMemory, Reservation, try_filled, try_with_capacity};

mod sparse;
pub use sparse::{DensePair, SparseGene};

/// Number of sample pairs, `n0 = n(n-1)/2`.
pub fn pair_count(samples: usize) -> u64 {
    let n = samples as u64;
    n * n.saturating_sub(1) / 2
}

/// What tau needs to know of one gene besides the pair's numerator;
/// computed once per gene by [`RankedMatrix`] (see [`crate::kernel::tau`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GeneTies {
    /// Tied sample pairs, `Σ t(t-1)/2` over groups of equal values.
    pub tie_pairs: u64,
    /// Number of distinct values.
    pub distinct: u32,
}

/// Rank of a missing value: above every real rank, never equal to one.
pub const MISSING_RANK: u32 = u32::MAX;

/// Dense ranks and tie statistics of every gene, the form all kernels read.
///
/// Kendall's tau depends only on the order of values, so each gene's values
/// are replaced by dense ranks (`0..distinct`, equal values equal ranks) and
/// its tie count `Σ t(t-1)/2` is computed here, once. A missing value (NaN)
/// gets [`MISSING_RANK`]; a gene's statistics are those of its present
/// values, and [`RankedMatrix::pair_stats`] restricts them to the samples a
/// pair shares.
#[derive(Debug, Clone)]
pub struct RankedMatrix {
    genes: usize,
    samples: usize,
    /// The ranks, dense or of a sparse matrix's non-zero values.
    form: RankForm,
    /// Per gene, its statistics over its present values.
    summaries: Vec<GeneSummary>,
    /// Groups of two or more equal values, as (start, length) ranges of the
    /// gene's `order`; gene `g`'s are `groups[group_start[g]..group_start[g + 1]]`.
    groups: Vec<(u32, u32)>,
    group_start: Vec<usize>,
    /// Per gene, `mask_words` words with bit `a` set when sample `a` is
    /// present; empty when no value is missing.
    valid: Vec<u64>,
    mask_words: usize,
    /// Some gene is [`RankedMatrix::two_valued`].
    any_two_valued: bool,
}

/// The ranks of a [`RankedMatrix`] in one of its two forms.
#[derive(Debug, Clone)]
enum RankForm {
    /// Every value's rank.
    Dense {
        /// genes × samples, row-major.
        ranks: Vec<u32>,
        /// Per gene, its present samples in ascending (rank, index) order,
        /// then its missing samples in index order.
        order: Vec<u32>,
    },
    /// The ranks of a sparse matrix's non-zero values: see
    /// [`RankedMatrix::try_build_sparse`].
    Sparse(sparse::SparseRanks),
}

impl RankForm {
    /// Heap bytes the ranks hold.
    fn heap_bytes(&self) -> usize {
        match self {
            RankForm::Dense { ranks, order } => {
                ranks.capacity() * size_of::<u32>() + order.capacity() * size_of::<u32>()
            }
            RankForm::Sparse(s) => s.heap_bytes(),
        }
    }
}

/// Tie terms of one gene in the variance of Kendall's S (Kendall 1970, as
/// scipy and R's `cor.test` use): sums over groups of t equal values.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VarianceTerms {
    /// `Σ t(t-1)(t-2)`.
    pub t2: f64,
    /// `Σ t(t-1)(2t+5)`.
    pub t5: f64,
}

impl VarianceTerms {
    /// Adds a group of `t` equal values.
    fn add_group(&mut self, t: u64) {
        let t = t as f64;
        self.t2 += t * (t - 1.0) * (t - 2.0);
        self.t5 += t * (t - 1.0) * (2.0 * t + 5.0);
    }
}

/// What tau and its p-value need of one pair besides the numerator: the
/// samples both genes have, and each gene's ties among them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairStats {
    /// Samples where both genes have a value.
    pub n: usize,
    /// Ties of the first gene on those samples.
    pub u: GeneTies,
    /// Ties of the second gene on those samples.
    pub v: GeneTies,
    /// Variance tie terms of the first gene on those samples.
    pub u_variance: VarianceTerms,
    /// Variance tie terms of the second gene on those samples.
    pub v_variance: VarianceTerms,
}

/// One gene's statistics over its present values.
#[derive(Debug, Clone, Copy, Default)]
struct GeneSummary {
    ties: GeneTies,
    variance: VarianceTerms,
    present: u32,
}

/// Ties, distinct values and variance terms of `n` values whose groups of
/// equal values have the sizes `groups` (groups of one may be left out):
/// the one place these statistics are summed, for a whole gene and for the
/// samples of a pair.
#[inline]
fn tally(n: usize, groups: impl Iterator<Item = u64>) -> (GeneTies, VarianceTerms) {
    let (mut tie_pairs, mut merged) = (0u64, 0u64);
    let mut variance = VarianceTerms::default();
    for t in groups.filter(|&t| t > 1) {
        // t equal values: t - 1 fewer distinct values, t(t-1)/2 ties.
        merged += t - 1;
        tie_pairs += t * (t - 1) / 2;
        variance.add_group(t);
    }
    let ties = GeneTies {
        tie_pairs,
        distinct: (n as u64 - merged) as u32,
    };
    (ties, variance)
}

impl RankedMatrix {
    /// Ranks a genes × samples row-major matrix (genes in parallel): NaN is
    /// a missing value, every other value must be finite. `-0.0` and `0.0`
    /// are the same value. Panics when memory cannot be allocated (a query
    /// uses [`RankedMatrix::try_build`], which returns an error instead).
    pub fn from_values(genes: usize, samples: usize, values: &[f64]) -> Self {
        Self::from_exact(genes, samples, values, &[])
    }

    /// [`RankedMatrix::from_values`] for values given exactly as
    /// `(values[k], residuals[k])`: equal f64 values are ordered by their
    /// residuals (what a 64-bit integer lost as f64, so `value + residual` is
    /// the integer). `residuals` is empty (all 0) or one per value.
    pub fn from_exact(genes: usize, samples: usize, values: &[f64], residuals: &[i16]) -> Self {
        let mut reservation = QueryMemory::unbounded("")
            .reserve("ranks", 0)
            .expect("an unbounded pool grants everything");
        Self::try_build(genes, samples, values, residuals, &mut reservation)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Bytes the ranks, orders and per-gene statistics of `genes` × `samples`
    /// values take, besides the groups of tied values (at most 4 more bytes
    /// per value) and the masks of missing values (1 bit per value).
    pub fn fixed_bytes(genes: usize, samples: usize) -> usize {
        let per_gene = size_of::<GeneSummary>()
            + size_of::<(GeneSummary, Vec<(u32, u32)>)>()
            + size_of::<usize>();
        genes
            .saturating_mul(samples)
            .saturating_mul(2 * size_of::<u32>())
            .saturating_add(genes.saturating_mul(per_gene))
    }

    /// Heap bytes this matrix holds.
    pub fn heap_bytes(&self) -> usize {
        self.form.heap_bytes()
            + self.summaries.capacity() * size_of::<GeneSummary>()
            + self.groups.capacity() * size_of::<(u32, u32)>()
            + self.group_start.capacity() * size_of::<usize>()
            + self.valid.capacity() * size_of::<u64>()
    }

    /// [`RankedMatrix::from_exact`] with its memory reserved in
    /// `reservation` before it is allocated (the fixed part first, the
    /// groups of ties and masks of missing values once their size is known)
    /// and allocated fallibly; on return the reservation holds
    /// [`RankedMatrix::heap_bytes`].
    pub fn try_build(
        genes: usize,
        samples: usize,
        values: &[f64],
        residuals: &[i16],
        reservation: &mut Reservation,
    ) -> Result<Self> {
        assert_eq!(values.len(), genes * samples, "matrix shape");
        assert!(
            residuals.is_empty() || residuals.len() == values.len(),
            "one residual per value"
        );
        assert!(samples < u32::MAX as usize, "fewer than u32::MAX samples");
        reservation.try_grow(Self::fixed_bytes(genes, samples))?;
        let mut ranks = try_filled(values.len(), 0u32, "ranks")?;
        let mut order = try_filled(values.len(), 0u32, "sample orders")?;
        let ranked: Vec<(GeneSummary, Vec<(u32, u32)>)> = if samples == 0 {
            vec![(GeneSummary::default(), Vec::new()); genes]
        } else if residuals.is_empty() {
            ranks
                .par_chunks_mut(samples)
                .zip(order.par_chunks_mut(samples))
                .zip(values.par_chunks(samples))
                .map(|((r, o), x)| rank_gene(x, |_| 0, r, o))
                .collect()
        } else {
            ranks
                .par_chunks_mut(samples)
                .zip(order.par_chunks_mut(samples))
                .zip(
                    values
                        .par_chunks(samples)
                        .zip(residuals.par_chunks(samples)),
                )
                .map(|((r, o), (x, e))| rank_gene(x, |k| e[k], r, o))
                .collect()
        };
        let mask_words = samples.div_ceil(64);
        let any_gaps = ranked.iter().any(|(s, _)| s.present as usize != samples);
        // The groups exist twice while they are gathered into one Vec.
        let group_count: usize = ranked.iter().map(|(_, g)| g.len()).sum();
        let mut later = 2 * group_count * size_of::<(u32, u32)>();
        if any_gaps {
            later += genes * mask_words * size_of::<u64>();
        }
        reservation.try_grow(later)?;
        let valid = if any_gaps {
            let mut valid = try_filled(genes * mask_words, 0u64, "masks of missing values")?;
            valid
                .par_chunks_mut(mask_words)
                .zip(ranks.par_chunks(samples))
                .for_each(|(mask, ranks)| {
                    for (a, &r) in ranks.iter().enumerate() {
                        mask[a / 64] |= u64::from(r != MISSING_RANK) << (a % 64);
                    }
                });
            valid
        } else {
            Vec::new()
        };
        let mut group_start = Vec::with_capacity(genes + 1);
        group_start.push(0);
        for (_, groups) in &ranked {
            group_start.push(group_start.last().unwrap_or(&0) + groups.len());
        }
        let mut groups = try_with_capacity(group_count, "groups of tied values")?;
        groups.extend(ranked.iter().flat_map(|(_, g)| g.iter().copied()));
        let any_two_valued = ranked
            .iter()
            .any(|(s, _)| s.ties.distinct == 2 && s.present as usize == samples);
        let matrix = Self {
            any_two_valued,
            genes,
            samples,
            form: RankForm::Dense { ranks, order },
            summaries: ranked.iter().map(|(s, _)| *s).collect(),
            groups,
            group_start,
            valid,
            mask_words,
        };
        drop(ranked);
        reservation.shrink_to(matrix.heap_bytes());
        Ok(matrix)
    }

    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.genes
    }

    /// Number of samples per gene.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Number of sample pairs, `n0 = n(n-1)/2`.
    pub fn n0(&self) -> u64 {
        pair_count(self.samples)
    }

    /// Dense ranks of gene `g` ([`MISSING_RANK`] where a value is missing),
    /// of a dense matrix (a sparse one's genes are read through
    /// [`RankedMatrix::sparse_gene`], [`RankedMatrix::fill_dense`] or a
    /// [`DensePair`]).
    #[inline]
    pub fn ranks(&self, g: usize) -> &[u32] {
        let RankForm::Dense { ranks, .. } = &self.form else {
            unreachable!("dense ranks of a sparse matrix");
        };
        &ranks[g * self.samples..(g + 1) * self.samples]
    }

    /// Sample indices of gene `g`: present ones in ascending (rank, index)
    /// order, then missing ones.
    #[inline]
    pub fn order(&self, g: usize) -> &[u32] {
        let RankForm::Dense { order, .. } = &self.form else {
            unreachable!("sample order of a sparse matrix");
        };
        &order[g * self.samples..(g + 1) * self.samples]
    }

    /// Tied sample pairs of gene `g`: `Σ t(t-1)/2` over its groups of equal
    /// (present) values.
    #[inline]
    pub fn tie_pairs(&self, g: usize) -> u64 {
        self.summaries[g].ties.tie_pairs
    }

    /// Number of distinct values of gene `g`.
    pub fn distinct(&self, g: usize) -> u32 {
        self.summaries[g].ties.distinct
    }

    /// The tie terms of gene `g` in the variance of S (for p-values).
    pub fn variance_terms(&self, g: usize) -> VarianceTerms {
        self.summaries[g].variance
    }

    /// The tie statistics of gene `g` that tau needs.
    #[inline]
    pub fn ties(&self, g: usize) -> GeneTies {
        self.summaries[g].ties
    }

    /// Number of values of gene `g` that are present.
    #[inline]
    pub fn present(&self, g: usize) -> usize {
        self.summaries[g].present as usize
    }

    /// Whether gene `g` has missing values.
    #[inline]
    pub fn has_gaps(&self, g: usize) -> bool {
        self.present(g) != self.samples
    }

    /// Whether gene `g` takes exactly two distinct values and misses none
    /// (a binarised feature: the rank-sum path of
    /// [`binary`](crate::kernel::binary) applies to its pairs).
    #[inline]
    pub fn two_valued(&self, g: usize) -> bool {
        self.summaries[g].ties.distinct == 2 && !self.has_gaps(g)
    }

    /// Whether some gene is [`RankedMatrix::two_valued`].
    pub fn any_two_valued(&self) -> bool {
        self.any_two_valued
    }

    /// Whether any value of the matrix is missing.
    pub fn any_gaps(&self) -> bool {
        !self.valid.is_empty()
    }

    /// Whether gene `g` has every value and no ties: the case the fastest
    /// kernel paths are written for.
    #[inline]
    pub fn untied(&self, g: usize) -> bool {
        self.tie_pairs(g) == 0 && !self.has_gaps(g)
    }

    /// Bit `a` set when gene `g` has a value for sample `a`
    /// (`ceil(samples / 64)` words); empty when no value is missing.
    #[inline]
    pub fn valid(&self, g: usize) -> &[u64] {
        if self.valid.is_empty() {
            return &[];
        }
        &self.valid[g * self.mask_words..(g + 1) * self.mask_words]
    }

    /// Samples count and tie statistics of genes `i` and `j` on the samples
    /// where both have a value. Free when neither gene has gaps; otherwise
    /// O(n / 64), plus a visit of the tied values of a gene whose partner
    /// has gaps.
    #[inline]
    pub fn pair_stats(&self, i: usize, j: usize) -> PairStats {
        let (gi, gj) = (self.has_gaps(i), self.has_gaps(j));
        if !gi && !gj {
            return PairStats {
                n: self.samples,
                u: self.ties(i),
                v: self.ties(j),
                u_variance: self.variance_terms(i),
                v_variance: self.variance_terms(j),
            };
        }
        let (vi, vj) = (self.valid(i), self.valid(j));
        let n = vi
            .iter()
            .zip(vj)
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum();
        let (u, u_variance) = if gj {
            self.restricted(i, vj, n)
        } else {
            (self.ties(i), self.variance_terms(i))
        };
        let (v, v_variance) = if gi {
            self.restricted(j, vi, n)
        } else {
            (self.ties(j), self.variance_terms(j))
        };
        PairStats {
            n,
            u,
            v,
            u_variance,
            v_variance,
        }
    }

    /// The ranks of genes `i` and `j` at the samples both have, in `i`'s
    /// order (so `u` comes out ascending), written to `u` and `v`.
    pub fn shared_ranks(&self, i: usize, j: usize, u: &mut Vec<u32>, v: &mut Vec<u32>) {
        let (ri, rj) = (self.ranks(i), self.ranks(j));
        let order = &self.order(i)[..self.present(i)];
        u.resize(order.len(), 0);
        v.resize(order.len(), 0);
        // Branch-free: every sample is written, only shared ones are kept.
        let mut k = 0;
        for &a in order {
            let y = rj[a as usize];
            u[k] = ri[a as usize];
            v[k] = y;
            k += usize::from(y != MISSING_RANK);
        }
        u.truncate(k);
        v.truncate(k);
    }

    /// Sample pairs tied in both genes `i` and `j` (`n3`), for genes
    /// without missing values: the tie groups of the gene with fewer tied
    /// pairs are walked and each of their pairs is checked in the other
    /// gene, so the cost is `O(min(n1, n2))`.
    pub fn tied_in_both(&self, i: usize, j: usize) -> u64 {
        debug_assert!(!self.has_gaps(i) && !self.has_gaps(j));
        let (u, v) = if self.tie_pairs(i) <= self.tie_pairs(j) {
            (i, j)
        } else {
            (j, i)
        };
        let (order, rv) = (self.order(u), self.ranks(v));
        let mut both = 0u64;
        for &(start, len) in self.groups(u) {
            let group = &order[start as usize..(start + len) as usize];
            if let &[a, b] = group {
                // Pairs of equal values, most groups when ties are few
                // (rounded data): one branch-free check.
                both += u64::from(rv[a as usize] == rv[b as usize]);
                continue;
            }
            for (p, &a) in group.iter().enumerate() {
                let ra = rv[a as usize];
                both += group[p + 1..]
                    .iter()
                    .map(|&b| u64::from(rv[b as usize] == ra))
                    .sum::<u64>();
            }
        }
        both
    }

    /// Gene `g`'s groups of two or more equal present values, each as the
    /// samples holding the value, in ascending value order.
    pub fn tie_groups(&self, g: usize) -> impl Iterator<Item = &[u32]> {
        let order = self.order(g);
        self.groups(g)
            .iter()
            .map(move |&(start, len)| &order[start as usize..(start + len) as usize])
    }

    /// The size of gene `g`'s largest group of equal values (1 when all
    /// differ, 0 without values).
    pub fn largest_group(&self, g: usize) -> usize {
        let single = usize::from(self.present(g) > 0);
        self.groups(g)
            .iter()
            .map(|&(_, len)| len as usize)
            .max()
            .unwrap_or(single)
    }

    /// Gene `g`'s groups of two or more equal values, as (start, length)
    /// ranges of [`RankedMatrix::order`], in ascending value order.
    #[inline]
    fn groups(&self, g: usize) -> &[(u32, u32)] {
        &self.groups[self.group_start[g]..self.group_start[g + 1]]
    }

    /// Ties of gene `g` on the `n` samples of `mask` (all of which `g` has):
    /// only its groups of tied values are visited, since every other value
    /// stays distinct on any subset.
    #[inline]
    fn restricted(&self, g: usize, mask: &[u64], n: usize) -> (GeneTies, VarianceTerms) {
        let groups = self.groups(g);
        if groups.is_empty() {
            // No ties: the common case, kept off the group walk.
            return tally(n, std::iter::empty());
        }
        let order = self.order(g);
        let shared = |&(start, len): &(u32, u32)| {
            order[start as usize..(start + len) as usize]
                .iter()
                .filter(|&&a| mask[a as usize / 64] >> (a % 64) & 1 == 1)
                .count() as u64
        };
        tally(n, groups.iter().map(shared))
    }
}

/// Ranks one gene, whose value `k` is `x[k]` exactly or, for a 64-bit
/// integer, `x[k] + residual(k)`; returns its statistics over its present
/// values and its groups of tied values (see [`RankedMatrix::groups`]).
fn rank_gene(
    x: &[f64],
    residual: impl Fn(usize) -> i16,
    ranks: &mut [u32],
    order: &mut [u32],
) -> (GeneSummary, Vec<(u32, u32)>) {
    let mut present = 0usize;
    for (k, &v) in x.iter().enumerate() {
        if !v.is_nan() {
            order[present] = k as u32;
            present += 1;
        }
    }
    let mut missing = present;
    for (k, &v) in x.iter().enumerate() {
        if v.is_nan() {
            order[missing] = k as u32;
            ranks[k] = MISSING_RANK;
            missing += 1;
        }
    }
    // `+ 0.0` turns -0.0 into 0.0 so that total_cmp treats them as equal;
    // present values are finite, so total_cmp is the numeric order. Equal
    // f64s of different integers differ in their residuals.
    let key = |k: u32| x[k as usize] + 0.0;
    let cmp = |a: u32, b: u32| {
        key(a)
            .total_cmp(&key(b))
            .then_with(|| residual(a as usize).cmp(&residual(b as usize)))
    };
    let sorted = &mut order[..present];
    sort_present(sorted, &key, &cmp);
    let mut groups = Vec::new();
    let mut rank = 0u32;
    let mut start = 0usize;
    for p in 0..sorted.len() {
        if p > 0 && cmp(sorted[p], sorted[p - 1]).is_ne() {
            if p - start > 1 {
                groups.push((start as u32, (p - start) as u32));
            }
            rank += 1;
            start = p;
        }
        ranks[sorted[p] as usize] = rank;
    }
    if sorted.len() - start > 1 {
        groups.push((start as u32, (sorted.len() - start) as u32));
    }
    let (ties, variance) = tally(present, groups.iter().map(|&(_, len)| u64::from(len)));
    let summary = GeneSummary {
        ties,
        variance,
        present: present as u32,
    };
    (summary, groups)
}

/// Sorts a gene's present samples (in sample order on entry) by value,
/// ties in sample order — a stable sort — with zeros, most of a
/// single-cell gene's values, never compared: the negative and the positive
/// values are sorted apart and the zeros (exact: no residual) placed
/// between them as they came.
fn sort_present(
    sorted: &mut [u32],
    key: &impl Fn(u32) -> f64,
    cmp: &impl Fn(u32, u32) -> std::cmp::Ordering,
) {
    let zeros = sorted.iter().filter(|&&a| key(a) == 0.0).count();
    // Few zeros: one sort is as quick.
    if zeros < sorted.len() / 4 {
        sorted.sort_by(|&a, &b| cmp(a, b));
        return;
    }
    let (mut below, mut zero, mut above) = (Vec::new(), Vec::with_capacity(zeros), Vec::new());
    for &a in sorted.iter() {
        match key(a) {
            v if v < 0.0 => below.push(a),
            v if v > 0.0 => above.push(a),
            _ => zero.push(a),
        }
    }
    below.sort_by(|&a, &b| cmp(a, b));
    above.sort_by(|&a, &b| cmp(a, b));
    let parts = below.iter().chain(&zero).chain(&above);
    for (slot, &a) in sorted.iter_mut().zip(parts) {
        *slot = a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_placed_apart_sort_as_one_stable_sort() {
        let mut s = 7u64;
        for n in [0usize, 1, 5, 40, 1000] {
            for zero_share in [0, 3, 9] {
                // Values in -3..=5 with zeros (and a -0.0) most of the time.
                let x: Vec<f64> = (0..n)
                    .map(|k| {
                        s = s
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let r = (s >> 33) % 10;
                        match r {
                            _ if r < zero_share => {
                                if k % 7 == 0 {
                                    -0.0
                                } else {
                                    0.0
                                }
                            }
                            r => r as f64 - 5.0,
                        }
                    })
                    .collect();
                let key = |k: u32| x[k as usize] + 0.0;
                let cmp = |a: u32, b: u32| key(a).total_cmp(&key(b));
                let mut fast: Vec<u32> = (0..n as u32).collect();
                sort_present(&mut fast, &key, &cmp);
                let mut stable: Vec<u32> = (0..n as u32).collect();
                stable.sort_by(|&a, &b| cmp(a, b));
                assert_eq!(fast, stable, "n {n}, zero share {zero_share}");
            }
        }
    }

    #[test]
    fn dense_ranks_and_ties() {
        let m =
            RankedMatrix::from_values(2, 5, &[3.0, -0.0, 0.0, 3.0, 3.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
        assert_eq!(m.ranks(0), &[1, 0, 0, 1, 1]);
        assert_eq!(m.order(0), &[1, 2, 0, 3, 4]);
        assert_eq!(m.tie_pairs(0), 1 + 3);
        // groups of 2 and 3: t2 = 0 + 6, t5 = 2·1·9 + 3·2·11
        assert_eq!(m.variance_terms(0), VarianceTerms { t2: 6.0, t5: 84.0 });
        assert_eq!(m.distinct(0), 2);
        assert_eq!(m.ranks(1), &[4, 3, 2, 1, 0]);
        assert_eq!(m.tie_pairs(1), 0);
        assert_eq!(m.distinct(1), 5);
        assert_eq!(m.n0(), 10);
    }

    /// Equal f64s of different integers (residuals) are distinct values;
    /// the reservation ends holding exactly the matrix's heap bytes.
    #[test]
    fn residuals_break_f64_ties_exactly() {
        let big = 2f64.powi(53);
        let values = [big, big, big, 1.0, big, big];
        let residuals = [1, 0, -1, 0, 0, 1];
        let mut reservation = QueryMemory::unbounded("x").reserve("ranks", 0).unwrap();
        let m = RankedMatrix::try_build(1, 6, &values, &residuals, &mut reservation).unwrap();
        assert_eq!(m.ranks(0), &[3, 2, 1, 0, 2, 3]);
        assert_eq!(m.tie_pairs(0), 2);
        assert_eq!(m.distinct(0), 4);
        assert_eq!(reservation.size(), m.heap_bytes());
        // Without residuals, the five values near 2^53 are one tie group.
        let flat = RankedMatrix::from_values(1, 6, &values);
        assert_eq!(flat.ranks(0), &[1, 1, 1, 0, 1, 1]);
    }

    /// `tied_in_both` against a count over every sample pair.
    #[test]
    fn tied_in_both_counts_pairs_tied_in_both_genes() {
        let mut rng = crate::test_rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut next = |k: u64| rng.below(k);
        for n in [1usize, 2, 7, 64, 131] {
            for levels in [2u64, 3, 17, 1 << 40] {
                let genes = 5;
                let values: Vec<f64> = (0..genes * n).map(|_| next(levels) as f64).collect();
                let m = RankedMatrix::from_values(genes, n, &values);
                for i in 0..genes {
                    for j in 0..genes {
                        let (x, y) = (&values[i * n..][..n], &values[j * n..][..n]);
                        let mut expected = 0;
                        for a in 0..n {
                            for b in a + 1..n {
                                expected += u64::from(x[a] == x[b] && y[a] == y[b]);
                            }
                        }
                        assert_eq!(m.tied_in_both(i, j), expected, "n={n} {i} {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn missing_values_rank_last_and_stats_skip_them() {
        let nan = f64::NAN;
        let m =
            RankedMatrix::from_values(2, 5, &[2.0, nan, 1.0, 2.0, nan, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(m.ranks(0), &[1, MISSING_RANK, 0, 1, MISSING_RANK]);
        assert_eq!(m.order(0), &[2, 0, 3, 1, 4]);
        assert_eq!((m.present(0), m.tie_pairs(0), m.distinct(0)), (3, 1, 2));
        assert!(m.has_gaps(0) && !m.has_gaps(1) && m.any_gaps());
        assert!(!m.untied(0) && m.untied(1));
        assert_eq!(m.valid(0), &[0b01101]);
        assert_eq!(m.valid(1), &[0b11111]);
        let p = m.pair_stats(0, 1);
        assert_eq!(p.n, 3);
        assert_eq!(p.u, m.ties(0));
        assert_eq!(p.v.tie_pairs, 0);
        assert_eq!(p.v.distinct, 3);
    }

    /// `pair_stats` equals the statistics of the pair's complete samples,
    /// ranked on their own.
    #[test]
    fn pair_stats_match_the_compacted_pair() {
        let mut rng = crate::test_rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut next = |k: u64| rng.below(k);
        for n in [1usize, 2, 5, 63, 64, 65, 130] {
            for (levels, gaps) in [(1000, 10), (3, 10), (4, 2), (2, 50)] {
                let genes = 6;
                let values: Vec<f64> = (0..genes * n)
                    .map(|_| {
                        if next(100) < gaps {
                            f64::NAN
                        } else {
                            next(levels) as f64
                        }
                    })
                    .collect();
                let m = RankedMatrix::from_values(genes, n, &values);
                for i in 0..genes {
                    for j in 0..genes {
                        let (mut u, mut v) = (Vec::new(), Vec::new());
                        for a in 0..n {
                            let (x, y) = (values[i * n + a], values[j * n + a]);
                            if !x.is_nan() && !y.is_nan() {
                                u.push(x);
                                v.push(y);
                            }
                        }
                        let k = u.len();
                        u.extend(v);
                        let pair = RankedMatrix::from_values(2, k, &u);
                        let expected = PairStats {
                            n: k,
                            u: pair.ties(0),
                            v: pair.ties(1),
                            u_variance: pair.variance_terms(0),
                            v_variance: pair.variance_terms(1),
                        };
                        assert_eq!(m.pair_stats(i, j), expected, "n={n} i={i} j={j}");
                    }
                }
            }
        }
    }
}

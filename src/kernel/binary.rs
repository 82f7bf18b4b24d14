//! Pairs with a two-valued gene (a binarised ATAC peak, a presence/absence
//! call, a mutation): Kendall's S as a rank sum, in O(k) per pair.
//!
//! # Why it is exact
//!
//! Let `y` take two values on the `n` samples, `B` the `k` samples at the
//! higher one, and `x` any gene complete on the same samples. With
//! `S = Σ_{a<b} sgn(x_a − x_b)·sgn(y_a − y_b)`, only pairs with one sample
//! in `B` and one outside have `y_a ≠ y_b`, and each such pair contributes
//! `sgn(x_b − x_z)` (`b ∈ B`, `z ∉ B`), so
//!
//! ```text
//! S = Σ_{b∈B} Σ_{z∉B} sgn(x_b − x_z)
//!   = Σ_{b∈B} Σ_{all d} sgn(x_b − x_d)  −  Σ_{b∈B} Σ_{d∈B} sgn(x_b − x_d).
//! ```
//!
//! The last double sum is 0: it holds each unordered pair of `B` twice,
//! with opposite signs (and `sgn(0) = 0` for `d = b` and for ties). The
//! inner sum of the first is the sample's *score* in `x`,
//!
//! ```text
//! score_x(b) = #{d : x_d < x_b} − #{d : x_d > x_b} = 2·midrank_x(b) − n − 1,
//! ```
//!
//! an integer whatever the ties of `x` (a tie group spanning sorted
//! positions `s..e` has `s` values below it and `n − e` above). Hence
//!
//! ```text
//! S = Σ_{b∈B} score_x(b) = 2·R_B − k(n + 1),
//! ```
//!
//! Mann–Whitney's rank sum `R_B` rescaled. Scores sum to 0 over all
//! samples (each pair of samples adds +1 and −1, or 0 twice), so also
//! `S = −Σ_{z∉B} score_x(z)`: the smaller of the two groups is summed.
//! Every term is an exact integer, so S is the same integer every other
//! kernel computes; tau-b's tie terms are the usual ones (`x`'s groups,
//! and `y`'s two groups of `k` and `n − k`), computed once per gene.
//!
//! # Cost
//!
//! Scoring `x` is one pass over its sorted order, O(n), kept while the
//! next pair has the same `x` (a block's row gene, or a candidate list's
//! gene against its peaks); each pair then costs O(min(k, n − k)) reads,
//! against O(n log n) for VSE and O(n²/64) for the bit-planes.
//!
//! # Missing values
//!
//! With missing values the scores depend on the samples a pair shares, so
//! pairs touching a gene with missing values are left to the scan's
//! kernel ([`RankSums::numerator`] returns `None`).

use crate::rank::RankedMatrix;

/// Scores of one gene and the rank sums of two-valued partners against it.
#[derive(Debug, Default, Clone)]
pub struct RankSums {
    /// `score_x(a)` of every sample `a` of the gene `scored`, 16-bit when
    /// the samples are at most [`I16_SCORES_UP_TO`] (scores lie within
    /// `±(n − 1)`): half the cache lines for the lookups of every pair.
    narrow: Vec<i16>,
    /// The same, 32-bit, for more samples.
    wide: Vec<i32>,
    scored: Option<usize>,
    /// 32-bit scores whatever the samples (so that tests reach them).
    always_wide: bool,
}

/// Up to this many samples the scores are held as `i16`.
const I16_SCORES_UP_TO: usize = 1 << 15;

/// A score as held: `i16` or `i32`.
trait Score: Copy + Default + Into<i64> {
    /// `x`, which fits (`|x| < n ≤` the type's range).
    fn of(x: i64) -> Self;
}

impl Score for i16 {
    #[inline]
    fn of(x: i64) -> Self {
        x as i16
    }
}

impl Score for i32 {
    #[inline]
    fn of(x: i64) -> Self {
        x as i32
    }
}

/// A sample's number as listed: `u16` or `u32`.
trait Sample: Copy {
    fn at(self) -> usize;
}

impl Sample for u16 {
    #[inline]
    fn at(self) -> usize {
        usize::from(self)
    }
}

impl Sample for u32 {
    #[inline]
    fn at(self) -> usize {
        self as usize
    }
}

/// `Σ scores[a]` over `samples`, in four independent running sums (the
/// loads overlap); every partial sum is below n² in magnitude, far from
/// i64's limits.
#[inline]
fn sum<T: Score, A: Sample>(scores: &[T], samples: &[A]) -> i64 {
    let score = |a: A| -> i64 { scores[a.at()].into() };
    let mut quads = samples.chunks_exact(4);
    let mut acc = [0i64; 4];
    for q in &mut quads {
        acc[0] += score(q[0]);
        acc[1] += score(q[1]);
        acc[2] += score(q[2]);
        acc[3] += score(q[3]);
    }
    let rest: i64 = quads.remainder().iter().map(|&a| score(a)).sum();
    acc.iter().sum::<i64>() + rest
}

impl RankSums {
    /// Whether the rank-sum path computes the pair `(i, j)` of `m`: one of
    /// the genes takes two values, neither misses a value, and scores fit
    /// in an `i32`.
    #[inline]
    pub fn applies(m: &RankedMatrix, i: usize, j: usize) -> bool {
        (m.two_valued(i) || m.two_valued(j))
            && !m.has_gaps(i)
            && !m.has_gaps(j)
            && m.samples() <= i32::MAX as usize
    }

    /// `S = nc − nd` of genes `i` and `j` of `m` by the rank sum of the
    /// two-valued one (`j` when both are), or `None` when the pair does not
    /// qualify ([`RankSums::applies`]).
    pub fn numerator(&mut self, m: &RankedMatrix, i: usize, j: usize) -> Option<i64> {
        if !Self::applies(m, i, j) {
            return None;
        }
        // Prefer keeping the first gene scored: consecutive pairs of a
        // block or a candidate list share it.
        let (x, y) = if m.two_valued(j) { (i, j) } else { (j, i) };
        let narrow = m.samples() <= I16_SCORES_UP_TO && !self.always_wide;
        if self.scored != Some(x) {
            if narrow {
                score(m, x, &mut self.narrow);
            } else {
                score(m, x, &mut self.wide);
            }
            self.scored = Some(x);
        }
        if let Some(gene) = m.sparse_gene(y).filter(|g| g.zeros > 0) {
            // A sparse gene with zeros: its listed samples are one group,
            // above the zeros when positive (read as 16-bit numbers where
            // they are kept so: half the bytes).
            let listed = match gene.narrow {
                Some(cells) => self.sum(narrow, cells),
                None => self.sum(narrow, gene.cells),
            };
            return Some(if gene.negatives == 0 { listed } else { -listed });
        }
        let (lower, higher) = split(m, y);
        Some(if higher.len() <= lower.len() {
            self.sum(narrow, higher)
        } else {
            -self.sum(narrow, lower)
        })
    }

    /// `Σ score_x(a)` over `samples`, from the 16-bit scores when `narrow`.
    #[inline]
    fn sum<A: Sample>(&self, narrow: bool, samples: &[A]) -> i64 {
        if narrow {
            sum(&self.narrow, samples)
        } else {
            sum(&self.wide, samples)
        }
    }
}

/// Fills `scores` (resized to the samples of `m`) with gene `x`'s scores.
fn score<T: Score>(m: &RankedMatrix, x: usize, scores: &mut Vec<T>) {
    let n = m.samples();
    scores.resize(n, T::default());
    if let Some(gene) = m.sparse_gene(x) {
        // `start` values below a group, `n − end` above; the zeros' score
        // first, for every sample not listed.
        let zero = (2 * gene.negatives + gene.zeros) as i64 - n as i64;
        scores.fill(T::of(zero));
        gene.for_each_run(|_, range, cells| {
            let score = T::of((range.start + range.end) as i64 - n as i64);
            for &a in cells.unwrap_or(&[]) {
                scores[a as usize] = score;
            }
        });
        return;
    }
    let (order, ranks) = (m.order(x), m.ranks(x));
    let mut start = 0usize;
    while start < n {
        // The tie group starting at sorted position `start`.
        let rank = ranks[order[start] as usize];
        let mut end = start + 1;
        while end < n && ranks[order[end] as usize] == rank {
            end += 1;
        }
        // `start` values below, `n − end` above (n < 2^31: exact).
        let score = T::of((start + end) as i64 - n as i64);
        for &a in &order[start..end] {
            scores[a as usize] = score;
        }
        start = end;
    }
}

/// Asks the CPU to start loading gene `y`'s listed samples of a sparse
/// matrix (its first 4 KiB; the hardware prefetcher follows the rest), so
/// that they arrive while the pair before it is summed: a candidate list's
/// partners are scattered over memory, and waiting for each one's samples
/// dominated the rank sums of a long list (measured; see
/// `docs/benchmarks/`). A hint only: nothing is read, nothing changes.
#[inline]
pub fn prefetch(m: &RankedMatrix, y: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(gene) = m.sparse_gene(y) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // One hint per 64-byte line, 64 lines at most; of the samples the
        // rank sum reads (16-bit ones where they are kept).
        fn lines<T>(samples: &[T]) {
            for line in samples.chunks(64 / size_of::<T>()).take(64) {
                // SAFETY: a prefetch is a hint that reads and writes nothing
                // (valid for any address); SSE is part of every x86_64 CPU.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
            }
        }
        match gene.narrow {
            Some(cells) => lines(cells),
            None => lines(gene.cells),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (m, y);
}

/// The samples of a complete two-valued gene `y` at its lower and at its
/// higher value, each in sample order (a sparse gene without zeros lists
/// all its samples).
fn split(m: &RankedMatrix, y: usize) -> (&[u32], &[u32]) {
    if let Some(gene) = m.sparse_gene(y) {
        let k = gene.ranks.partition_point(|&r| r == 0);
        return gene.cells.split_at(k);
    }
    let (order, ranks) = (m.order(y), m.ranks(y));
    // The order is sorted by rank (0, then 1), ties in sample order.
    let k = order.partition_point(|&a| ranks[a as usize] == 0);
    order.split_at(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::naive;

    /// A small deterministic generator (splitmix64).
    fn values(seed: u64, n: usize, levels: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                ((z ^ (z >> 31)) % levels) as f64
            })
            .collect()
    }

    #[test]
    fn rank_sums_equal_the_naive_numerator() {
        for n in [2usize, 3, 7, 64, 65, 200, 1001] {
            // Genes 0..3: two-valued (balanced, rare ones, common ones);
            // 3..6: continuous, tied, zero-inflated.
            let mut rows = Vec::new();
            rows.extend(values(n as u64, n, 2));
            rows.extend(
                values(n as u64 + 1, n, 17)
                    .iter()
                    .map(|&v| f64::from(v == 0.0)),
            );
            rows.extend(
                values(n as u64 + 2, n, 17)
                    .iter()
                    .map(|&v| f64::from(v != 0.0)),
            );
            rows.extend(values(n as u64 + 3, n, 1 << 40));
            rows.extend(values(n as u64 + 4, n, 5));
            rows.extend(
                values(n as u64 + 5, n, 9)
                    .iter()
                    .map(|&v| (v - 6.0).max(0.0)),
            );
            let dense = RankedMatrix::from_values(6, n, &rows);
            let sparse = RankedMatrix::sparse_from_values(6, n, &rows);
            for (m, always_wide) in [
                (&dense, false),
                (&dense, true),
                (&sparse, false),
                (&sparse, true),
            ] {
                let mut sums = RankSums {
                    always_wide,
                    ..RankSums::default()
                };
                for i in 0..6 {
                    for j in 0..6 {
                        let expected = naive::numerator(dense.ranks(i), dense.ranks(j));
                        let got = sums.numerator(m, i, j);
                        let what = format!("n {n}, pair ({i}, {j}), wide {always_wide}");
                        if m.two_valued(i) || m.two_valued(j) {
                            assert_eq!(got, Some(expected), "{what}");
                        } else {
                            assert_eq!(got, None, "{what}");
                        }
                    }
                }
            }
        }
    }

    /// Past 65,536 samples a sparse gene's samples are read as 32-bit
    /// numbers (no 16-bit copy) and the scores are 32-bit: the same S as
    /// the dense form's rank sum.
    #[test]
    fn many_samples_read_the_wide_lists() {
        let n = 70_000;
        let mut rows = values(7, n, 1 << 20);
        rows.extend(values(8, n, 40).iter().map(|&v| f64::from(v == 0.0)));
        let dense = RankedMatrix::from_values(2, n, &rows);
        let sparse = RankedMatrix::sparse_from_values(2, n, &rows);
        assert!(sparse.sparse_gene(1).unwrap().narrow.is_none());
        let expected = RankSums::default().numerator(&dense, 0, 1);
        assert!(expected.is_some());
        assert_eq!(RankSums::default().numerator(&sparse, 0, 1), expected);
        // Under the limit the 16-bit lists are there and agree.
        let small = RankedMatrix::sparse_from_values(
            2,
            1000,
            &[&rows[..1000], &rows[n..n + 1000]].concat(),
        );
        assert!(small.sparse_gene(1).unwrap().narrow.is_some());
    }

    #[test]
    fn genes_with_missing_values_are_left_to_the_kernel() {
        let x = [1.0, 2.0, f64::NAN, 4.0, 0.5];
        let y = [0.0, 1.0, 1.0, 0.0, 1.0];
        let m = RankedMatrix::from_values(2, 5, &[x, y].concat());
        assert!(m.two_valued(1));
        assert_eq!(RankSums::default().numerator(&m, 0, 1), None);
    }

    #[test]
    fn a_constant_gene_is_not_two_valued() {
        let m = RankedMatrix::from_values(2, 4, &[1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 3.0]);
        assert!(!m.two_valued(0));
        assert_eq!(RankSums::default().numerator(&m, 0, 1), None);
    }
}

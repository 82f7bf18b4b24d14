//! A bound on a pair's `S` before its count starts, from the two genes'
//! rank scores: Daniels' inequality between Kendall's and Spearman's
//! statistics, in an exact integer form that holds with ties.
//!
//! # Rank scores
//!
//! For a gene `x` without missing values, sample `p`'s *score* is
//! `u_p = Σ_q sgn(x_p − x_q)`: the values below `x_p` minus the values
//! above it, `2·r_p − (n + 1)` for the midrank `r_p`, so `|u_p| ≤ n − 1`.
//! For genes `x` and `y` with scores `u` and `v`, `Q = Σ_p u_p·v_p`
//! (`4·Σ_p (r_p − r̄)(s_p − s̄)` for midranks `r`, `s`: Spearman's
//! numerator) is an integer dot product of length `n`.
//!
//! # The bound
//!
//! **Claim.** With `C = n(n − 1)(n − 2)/6` (the triples of samples),
//! `Q − C ≤ n·S ≤ Q + C`, so `⌈(Q − C)/n⌉ ≤ S ≤ ⌊(Q + C)/n⌋`.
//!
//! *Proof.* Expand `Q = Σ_p Σ_q Σ_r sgn(x_p − x_q)·sgn(y_p − y_r)`. The
//! terms with `q = r` sum to `2S` (each unordered pair twice; `q = p`
//! adds 0). The terms with `p`, `q`, `r` distinct group by their triple
//! `T = {p, q, r}`: `L_T`, the sum over its six orderings `(p; q, r)` of
//! `sgn(x_p − x_q)·sgn(y_p − y_r)`. Let `K_T = c_pq + c_pr + c_qr`, the
//! triple's three pair terms `c_ab = sgn(x_a − x_b)·sgn(y_a − y_b)`; each
//! sample pair lies in `n − 2` triples, so `Σ_T K_T = (n − 2)·S`.
//! *Lemma:* `K_T − 1 ≤ L_T ≤ K_T + 1` for every triple. `L_T` and `K_T`
//! depend only on the order patterns of the three `x` values and of the
//! three `y` values (13 weak orders each); the test `triple_lemma` checks
//! all of them. Without a tie in the triple, `K_T ∈ {±1, ±3}` and
//! `L_T = 2·sgn(K_T)`; with a tie in either gene, `L_T = K_T`. Summing the
//! lemma over the `C` triples, `(n − 2)·S − C ≤ Q − 2S ≤ (n − 2)·S + C`. ∎
//!
//! Without ties this is Daniels' (1950) `−1 ≤ 3τ − 2ρ ≤ 1` up to terms in
//! `1/n`: a pair with `ρ` near 0 has `|τ|` below about 1/3, so under
//! `abs(tau) >= 0.8` almost every pair of a real matrix fails before a
//! word of its bit-planes is read. The interval is `2C/n` wide, about two
//! thirds of `n0`: it decides nothing for filters whose gaps are narrower
//! ([`useful`]).
//!
//! # Exact arithmetic
//!
//! Scores are kept as `i16` for `n ≤` [`MAX_SAMPLES`] (2,048): `|u_p| ≤
//! 2,047`, a product is below 2^22, and 256 of them below 2^30, so the
//! dot products add products in `i32` over 256 samples at a time (the
//! SIMD loops' `vpmaddwd` lanes hold far fewer) and the chunks in `i64`.

use datafusion::error::Result;

use crate::memory::try_filled;
use crate::rank::{MISSING_RANK, RankedMatrix};

/// The most samples for which scores are kept (see the module docs).
pub const MAX_SAMPLES: usize = 2048;

/// Samples per `i32` partial sum of a dot product (see the module docs).
pub const CHUNK: usize = 256;

/// Scores are padded with zeros to a multiple of this many (one 256-bit
/// register of `i16`); padding adds nothing to a dot product.
pub const LANES: usize = 16;

/// Every gene's rank scores (see the module docs), row-major, each row
/// padded with zeros to [`RankScores::stride`] samples. A gene with missing
/// values gets the scores of its present values (0 where missing); its
/// pairs are never bounded this way.
#[derive(Debug)]
pub struct RankScores {
    samples: usize,
    /// `C` of the module docs ([`triples`]).
    triples: i64,
    stride: usize,
    scores: Vec<i16>,
}

impl RankScores {
    /// The scores of every gene of the dense matrix `m`, or `None` when
    /// `m` has fewer than 3 or more than [`MAX_SAMPLES`] samples.
    pub fn try_build(m: &RankedMatrix) -> Result<Option<Self>> {
        let n = m.samples();
        if !(3..=MAX_SAMPLES).contains(&n) || m.is_sparse() {
            return Ok(None);
        }
        let stride = n.next_multiple_of(LANES);
        let mut scores = try_filled(m.genes() * stride, 0i16, "rank scores")?;
        let mut below = Vec::new();
        for (g, row) in scores.chunks_exact_mut(stride).enumerate() {
            fill_scores(m.ranks(g), &mut below, row);
        }
        Ok(Some(Self {
            samples: n,
            triples: triples(n),
            stride,
            scores,
        }))
    }

    /// Bytes the scores of `genes` genes of `samples` samples take.
    pub fn bytes(genes: usize, samples: usize) -> u64 {
        match samples {
            3..=MAX_SAMPLES => (genes * samples.next_multiple_of(LANES) * 2) as u64,
            _ => 0,
        }
    }

    /// Scores per row, a multiple of [`LANES`].
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The scores of `gene`, padded.
    #[inline]
    pub fn of(&self, gene: usize) -> &[i16] {
        &self.scores[gene * self.stride..(gene + 1) * self.stride]
    }

    /// The scores of genes `genes`, one padded row after another
    /// ([`RankScores::stride`] each): what [`dots4`] takes as its columns.
    #[inline]
    pub fn of_genes(&self, genes: std::ops::Range<usize>) -> &[i16] {
        &self.scores[genes.start * self.stride..genes.end * self.stride]
    }

    /// `[⌈(Q − C)/n⌉, ⌊(Q + C)/n⌋]`: the values `S` may take for genes
    /// without missing values whose scores' dot product is `q`.
    ///
    /// The divisions are in `f64`, exact here: `q ± C` and `n` are
    /// integers far below 2^53, so each is exact, and the quotient `y` is
    /// correctly rounded. Rounding is monotone and integers are
    /// representable, so `fl(y)` lies on the same side of every integer as
    /// `y` or on it when `y` is (`y` is a fraction of denominator `n ≤
    /// 2,048`, at least 2^-11 from the integers it is not, far above an
    /// ulp of numbers below 2^33): `⌈fl(y)⌉ = ⌈y⌉` and `⌊fl(y)⌋ = ⌊y⌋`.
    #[inline(always)]
    pub fn s_interval(&self, q: i64) -> (i64, i64) {
        let n = self.samples as f64;
        let c = self.triples;
        let lo = (q - c) as f64 / n;
        let hi = (q + c) as f64 / n;
        // Truncation rounds toward zero: one step up (ceiling) or down
        // (floor) where it went the other way.
        let (tl, th) = (lo as i64, hi as i64);
        (
            tl + i64::from((tl as f64) < lo),
            th - i64::from((th as f64) > hi),
        )
    }
}

impl RankScores {
    /// `(Q − C, Q + C)` as `f64`, each exact (integers below 2^53):
    /// the scaled interval `Q − C ≤ n·S ≤ Q + C` that
    /// [`SBound::scores_rule_out`](super::bound::SBound::scores_rule_out)
    /// compares with a filter, without a division.
    #[inline(always)]
    pub fn scaled(&self, q: i64) -> (f64, f64) {
        // One conversion of `q`: `q`, `C` and `q ± C` are integers below
        // 2^53, so the sums in `f64` are exact too.
        let (q, c) = (q as f64, self.triples as f64);
        (q - c, q + c)
    }

    /// [`RankScores::scaled`] of four dot products: the lower ends, then
    /// the upper ones.
    #[inline(always)]
    pub fn scaled4(&self, q: &[i64; 4]) -> ([f64; 4], [f64; 4]) {
        let (mut lo, mut hi) = ([0.0; 4], [0.0; 4]);
        for k in 0..4 {
            (lo[k], hi[k]) = self.scaled(q[k]);
        }
        (lo, hi)
    }
}

/// `C = n(n − 1)(n − 2)/6`, the triples of `n` samples.
#[inline(always)]
fn triples(samples: usize) -> i64 {
    let n = samples as i64;
    n * (n - 1) * (n - 2) / 6
}

/// Whether the bound is worth checking for a matrix with `samples`
/// samples under a filter whose widest gap of `S` values that fail is
/// `widest_gap` ([`super::bound::SBound::widest_gap`]): an interval of `S`
/// values is `2C/n` wide and stops a count only inside a gap, so it is
/// checked where the gap is at least [`GAP_RATIO`] times that wide.
pub fn useful(samples: usize, widest_gap: f64) -> bool {
    (3..=MAX_SAMPLES).contains(&samples)
        && GAP_RATIO * 2.0 * triples(samples) as f64 / samples as f64 <= widest_gap
}

/// How much wider than the scores' interval a filter's gap must be for
/// the check to pay: its dot product costs a pair about a tenth of a
/// 128-sample count, and narrower gaps stop few pairs. Measured on the
/// 12,625 × 128 network matrix (`docs/benchmarks/`): under `abs(tau) >= t`
/// the scores stopped 0.6 % of the pairs at `t = 0.35` (gap 1.07 times the
/// interval; the query 1.3 times as slow), 34 % at 0.4 (1.22 times; as
/// fast), 82 % at 0.45 (1.37) and 95 % at 0.5 (1.52; 2.4 times as fast).
pub const GAP_RATIO: f64 = 1.25;

/// Writes the scores of one gene's dense ranks into `row` (padding left
/// at zero); `below` is scratch.
fn fill_scores(ranks: &[u32], below: &mut Vec<i32>, row: &mut [i16]) {
    // below[r] = present values with a rank under r (ranks are dense).
    below.clear();
    for &r in ranks.iter().filter(|&&r| r != MISSING_RANK) {
        let r = r as usize;
        if below.len() <= r + 1 {
            below.resize(r + 2, 0);
        }
        below[r + 1] += 1;
    }
    for k in 1..below.len() {
        below[k] += below[k - 1];
    }
    let present = below.last().copied().unwrap_or(0);
    for (s, &r) in row.iter_mut().zip(ranks) {
        if r == MISSING_RANK {
            continue;
        }
        let r = r as usize;
        let (less, tied) = (below[r], below[r + 1] - below[r]);
        // less − greater, |·| ≤ n − 1 < 2^15.
        *s = (2 * less + tied - present) as i16;
    }
}

/// `[Σ_p a_k[p]·b[p] for k in 0..4]` over `b`'s length (the rows at least
/// as long): the portable loop, and the reference for the SIMD one. The
/// values are rank scores of at most [`MAX_SAMPLES`] samples, so no `i32`
/// partial sum of [`CHUNK`] products wraps (see the module docs).
#[inline(always)]
pub fn dot4(a: [&[i16]; 4], b: &[i16]) -> [i64; 4] {
    let a = a.map(|r| &r[..b.len()]);
    let mut total = [0i64; 4];
    for (c, bc) in b.chunks(CHUNK).enumerate() {
        for k in 0..4 {
            let ac = &a[k][c * CHUNK..c * CHUNK + bc.len()];
            let part = ac.iter().zip(bc).fold(0i32, |acc, (&x, &y)| {
                acc.wrapping_add(i32::from(x).wrapping_mul(i32::from(y)))
            });
            total[k] += i64::from(part);
        }
    }
    total
}

/// [`dot4`] of the four rows `a` with each column of `cols` (columns of
/// `stride` scores one after another, `stride` at most the rows' length),
/// into `out` (one entry a column): the portable loop, and the reference
/// for the SIMD ones, which share the rows' loads between columns.
pub fn dots4(a: [&[i16]; 4], cols: &[i16], stride: usize, out: &mut [[i64; 4]]) {
    assert!(stride > 0 && cols.len() == out.len() * stride);
    for (q, col) in out.iter_mut().zip(cols.chunks_exact(stride)) {
        *q = dot4(a, col);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::naive;

    fn sgn(d: i64) -> i64 {
        d.signum()
    }

    /// The lemma of the module docs, over every order pattern of three
    /// values in each gene (values 0..3 cover all 13 weak orders).
    #[test]
    fn triple_lemma() {
        let patterns: Vec<[i64; 3]> = (0..27).map(|k| [k % 3, k / 3 % 3, k / 9]).collect();
        let mut seen_untied = 0;
        for x in &patterns {
            for y in &patterns {
                let c = |a: usize, b: usize| sgn(x[a] - x[b]) * sgn(y[a] - y[b]);
                let k_t = c(0, 1) + c(0, 2) + c(1, 2);
                let mut l_t = 0;
                for p in 0..3 {
                    let (q, r) = match p {
                        0 => (1, 2),
                        1 => (0, 2),
                        _ => (0, 1),
                    };
                    l_t += sgn(x[p] - x[q]) * sgn(y[p] - y[r]);
                    l_t += sgn(x[p] - x[r]) * sgn(y[p] - y[q]);
                }
                assert!(
                    k_t - 1 <= l_t && l_t <= k_t + 1,
                    "x={x:?} y={y:?}: K={k_t} L={l_t}"
                );
                let tied = |v: &[i64; 3]| v[0] == v[1] || v[0] == v[2] || v[1] == v[2];
                if tied(x) || tied(y) {
                    assert_eq!(l_t, k_t, "x={x:?} y={y:?}");
                } else {
                    assert_eq!(l_t, 2 * k_t.signum(), "x={x:?} y={y:?}");
                    seen_untied += 1;
                }
            }
        }
        assert_eq!(seen_untied, 36); // 6 × 6 strict orders
    }

    /// Scores equal `2·midrank − (n + 1)` computed directly, the dot
    /// product equals the sum in `i64`, and every pair's `S` (naive count)
    /// lies in its interval, with and without ties; perfectly
    /// (anti-)correlated genes reach the interval's ends' side.
    #[test]
    fn every_pair_lies_in_its_interval() {
        let mut rng = crate::test_rng::XorShift::new(0x5c0e);
        for n in [3usize, 4, 5, 9, 17, 40, 64, 100, 300] {
            for levels in [2u64, 3, 7, 1 << 30] {
                let genes = 6;
                let mut values: Vec<f64> = (0..genes * n)
                    .map(|_| (rng.next_u64() % levels) as f64)
                    .collect();
                // Gene 4 = gene 0, gene 5 = −gene 0.
                for p in 0..n {
                    values[4 * n + p] = values[p];
                    values[5 * n + p] = -values[p];
                }
                let m = RankedMatrix::from_values(genes, n, &values);
                let scores = RankScores::try_build(&m)
                    .unwrap()
                    .expect("3..=2048 samples");
                for g in 0..genes {
                    let x = &values[g * n..(g + 1) * n];
                    for p in 0..n {
                        let direct: i64 = (0..n).map(|q| sgn_f(x[p] - x[q])).sum();
                        assert_eq!(
                            i64::from(scores.of(g)[p]),
                            direct,
                            "n={n} gene {g} sample {p}"
                        );
                    }
                    assert!(scores.of(g)[n..].iter().all(|&s| s == 0));
                }
                for i in 0..genes {
                    let rows = [i; 4].map(|r| scores.of(r));
                    for j in 0..genes {
                        let q = dot4(rows, scores.of(j))[0];
                        let direct: i64 = (0..n)
                            .map(|p| i64::from(scores.of(i)[p]) * i64::from(scores.of(j)[p]))
                            .sum();
                        assert_eq!(q, direct);
                        let s = naive::numerator(m.ranks(i), m.ranks(j));
                        let (lo, hi) = scores.s_interval(q);
                        assert!(
                            lo <= s && s <= hi,
                            "n={n} levels={levels} ({i}, {j}): {lo} {s} {hi}"
                        );
                    }
                }
            }
        }
    }

    fn sgn_f(d: f64) -> i64 {
        (d > 0.0) as i64 - (d < 0.0) as i64
    }

    /// The interval's ends are the exact integer ceiling and floor, for
    /// every dot product a matrix of up to [`MAX_SAMPLES`] samples can give
    /// near and at multiples of `n` (against `div_euclid`).
    #[test]
    fn interval_ends_are_exact() {
        for n in [3usize, 5, 57, 128, 310, 1000, 2047, 2048] {
            let genes = 1;
            let values: Vec<f64> = (0..n).map(|p| p as f64).collect();
            let s = RankScores::try_build(&RankedMatrix::from_values(genes, n, &values))
                .unwrap()
                .unwrap();
            let (nn, c) = (n as i64, triples(n));
            let top = nn * (nn - 1) * (nn - 1);
            let mut qs = vec![0, 1, -1, top, -top];
            for k in [1i64, 2, 7, nn, nn * nn, top / nn] {
                for base in [k * nn - c, k * nn + c, -k * nn - c, -k * nn + c] {
                    qs.extend([base - 1, base, base + 1]);
                }
            }
            for q in qs {
                let lo = (q - c).div_euclid(nn) + i64::from((q - c).rem_euclid(nn) != 0);
                let hi = (q + c).div_euclid(nn);
                assert_eq!(s.s_interval(q), (lo, hi), "n={n} q={q}");
            }
        }
    }

    /// The interval's integer ends round inward exactly, for negative
    /// numerators too.
    #[test]
    fn interval_ends_round_inward() {
        let m = RankedMatrix::from_values(1, 5, &[1.0, 2.0, 3.0, 4.0, 5.0]);
        let s = RankScores::try_build(&m).unwrap().unwrap();
        // n = 5, C = 10.
        assert_eq!(s.s_interval(0), (-2, 2));
        assert_eq!(s.s_interval(3), (-1, 2));
        assert_eq!(s.s_interval(-3), (-2, 1));
        assert_eq!(s.s_interval(40), (6, 10));
        assert_eq!(s.s_interval(-40), (-10, -6));
    }

    #[test]
    fn usefulness_follows_the_gap() {
        // n = 128: 2C/n = 5,334 of n0 = 8,128; abs(tau) >= t leaves 2t·n0.
        assert!(useful(128, 1.6 * 8128.0));
        assert!(useful(128, 0.9 * 8128.0));
        assert!(!useful(128, 0.8 * 8128.0));
        assert!(!useful(128, 0.7 * 8128.0));
        assert!(!useful(2, 1e9));
        assert!(!useful(MAX_SAMPLES + 1, 1e18));
    }
}

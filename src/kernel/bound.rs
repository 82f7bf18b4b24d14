//! Exact early exit: what a pushed-down filter on `tau` says about a pair's
//! numerator `S`, so that a pair is dropped without computing tau, and a
//! kernel stops counting a pair as soon as its `S` cannot pass.
//!
//! # The tau values a filter may pass
//!
//! A pushed-down predicate ([`TauPredicate`]) compares `tau`, `abs(tau)`,
//! `p_value` and `q_value` with literals. With the p- and q-values unknown,
//! it is evaluated in three-valued logic ([`TauPredicate::eval_tau`]); a
//! pair can be dropped only where the result is `false` whatever the p- and
//! q-values. Between two consecutive literals `±v` (in the IEEE 754 total
//! order in which the predicate compares) every comparison of `tau` keeps
//! its outcome, so evaluating the predicate once at each literal and once
//! inside each gap between them gives the set of tau values that may pass
//! exactly; closing its pieces gives [`TauRange`], a few closed intervals
//! `[a_k, b_k]` (ends may be infinite). `abs(tau) >= t` gives
//! `[-∞, -t] ∪ [t, ∞]`, `tau >= t` gives `[t, ∞]`, `tau <= -t` gives
//! `[-∞, -t]`; a filter on p- or q-values alone gives everything (no bound).
//!
//! A NaN tau (a constant gene under tau-b, fewer than two distinct values
//! under tau-c, fewer than two samples) sorts above every number and passes
//! `abs(tau) >= t`: such pairs are never dropped ([`PairRange::ANY`]).
//!
//! ## p- and q-values
//!
//! When a `p_value` bound maps to an `S` bound (not used here):
//!
//! - *Genes without missing values.* The p-value is a function of `S`, `n`
//!   and the two genes' tie terms (`crate::stats::pvalue`): the normal
//!   approximation with the tie-corrected variance (per-gene sums, so one
//!   variance per pair from per-gene terms), or, for genes without ties,
//!   the exact null distribution of `S`, which depends on `n` alone. A
//!   bound on the p-value is then a set of `S` values per pair: for
//!   two-sided p-values a threshold on `|S|`, for one-sided ones on `S`.
//!   Between tie-free pairs (exact p-values) the set is the same for all
//!   pairs, and can be tabulated once by evaluating the p-value at every
//!   `S` (the computed p-value need not be monotone to the last bit, so a
//!   threshold found by bisection is not exact). With ties it differs per
//!   pair of tie patterns; `auto` switches between the exact and the
//!   asymptotic p-value by `min(nd, n0 − nd)`, itself a function of `S`.
//! - *Missing values.* `n` and the tie terms are those of the samples the
//!   pair shares, known only per pair: no per-gene bound.
//! - *q-values* depend on the p-values of all pairs (their rank among
//!   them), so no bound on one pair's `S` follows from a `q_value`
//!   comparison before all pairs are counted.
//!
//! This module takes every comparison of `p_value` or `q_value` as
//! "unknown": `abs(tau) >= 0.8 AND p_value < 0.01` is bounded by its tau
//! part, and `p_value < 0.01` alone is not bounded.
//!
//! # From tau to `S`, without a square root or a division per pair
//!
//! For every variant, today's tau is `S / D` rounded, with a per-pair
//! denominator `D > 0` built from per-gene factors ([`SBound`]):
//! tau-a `D = n0`; tau-b `D = √(n0 − n1)·√(n0 − n2)` (then clamped to
//! `[-1, 1]`); tau-c `D = n²(k − 1)/(2k)` with `k` the smaller number of
//! distinct values, the factor of the gene with fewer. Only pairs of genes
//! without missing values are bounded (with missing values `n0`, `n1`, `n2`
//! are those of the shared samples, and a constant shared gene makes tau
//! NaN).
//!
//! **Claim.** Let `μ(a) = 2^-40·(1 + |a|)`, `L = fl(fl(a − μ(a))·D̂)` and
//! `H = fl(fl(b + μ(b))·D̂)`, where `D̂` is `D` computed in `f64` from the
//! per-gene factors (`√` of the exact integer, their product or the
//! smaller one). If today's tau of a pair lies in `[a, b]`, then
//! `L ≤ S ≤ H` (so `S < L` or `S > H` for every interval means the
//! filter fails).
//!
//! *Proof.* Write `u = 2^-53` and `τ = S/D` (exact). Today's computation
//! (`super::tau`) rounds the numerator and denominator to `f64` and divides:
//! the denominator is off by a factor `(1 + δ)`, `|δ| ≤ 3u` (tau-b: the
//! correctly rounded square root of the exact product, or two roots and a
//! product; tau-c: two conversions of exact integers), so the quotient is
//! `x = τ(1 + θ)` with `|θ| ≤ 5u`. (1) If the computed tau is `≥ a` then
//! `τ ≥ a − 6u|a|`: for tau-b, if `a ≤ −1` this holds as `τ ≥ −1` (the
//! concordant and discordant pairs are untied in both genes, so
//! `|S| ≤ n0 − max(n1, n2) ≤ D`), else
//! the clamp did not raise `x`, so `x ≥ a`; then either `τ ≥ a`, or
//! `0 ≤ τ < a` and `x − τ = τθ < 5u·a`, or `τ < 0`, when `a ≤ x ≤ τ(1 − 5u)`
//! gives `τ ≥ a/(1 − 5u) ≥ a − 6u|a|`. (2) `D̂ = D(1 + ψ)`, `|ψ| ≤ 3.01u`,
//! and the two roundings in `L` give `L = (a − μ(a))(1 + ε₁)·D(1 + ρ)` with
//! `|ε₁| ≤ u`, `|ρ| ≤ 5u`, so
//! `L ≤ (a − μ(a) + 12u(1 + |a|))·D ≤ (a − μ(a)/2)·D` (`12u < 2^-41`).
//! Hence `S < L` gives `τ < a − μ(a)/2 < a − 6u|a|`, and by (1) today's tau
//! is below `a`. The upper end is symmetric. Infinite ends give `L = −∞`
//! or `H = +∞` (`D̂ > 0`). ∎
//!
//! `S` is an integer below 2^53 in magnitude (exact in `f64`), so `S ≥ L`
//! is `S ≥ ⌈L⌉` in integers and `S ≤ H` is `S ≤ ⌊H⌋`: [`PairRange`] holds
//! `L` and `H`, which the kernels compare with their partial counts (as
//! reals: no rounding per pair).
//! The float test [`SBound::surely_fails`] (one product per pair for
//! `D̂` and one per interval end) decides only the pairs it can prove fail;
//! the others compute tau as they always did and the filter decides on it,
//! so every row kept is the same, bit for bit, and no row is lost.
//!
//! # Stopping a count
//!
//! A kernel that sums `S` (or a count it is an affine function of) over
//! parts of the data knows, after any prefix of the parts, an interval
//! `[lo, hi]` that holds the final `S`; when that interval meets none of
//! the pair's `[⌈L_k⌉, ⌊H_k⌋]` ([`PairRange::reachable`]) the pair fails
//! the filter and its count stops. The bit-plane kernel's intervals, and
//! the zero-inflated kernel's, are derived where they are used
//! (`bitset::Bitset::block`, `zero::Zero`).

use std::cmp::Ordering;

use super::Variant;
use crate::filter::TauPredicate;
use crate::rank::RankedMatrix;
use crate::rank::pair_count;

/// At most this many intervals are kept per filter; more are merged, the
/// closest first (a larger set, so a weaker but still exact bound).
pub const MAX_INTERVALS: usize = 4;

/// The tau values a filter may pass (besides NaN): closed intervals,
/// sorted and disjoint, ends possibly infinite. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct TauRange {
    intervals: Vec<(f64, f64)>,
}

impl TauRange {
    /// The tau values `pred` may pass, or `None` when it may pass every
    /// value (no bound).
    pub fn of_predicate(pred: &TauPredicate) -> Option<Self> {
        let mut points = Vec::new();
        pred.tau_literals(&mut points);
        points.sort_by(f64::total_cmp);
        points.dedup_by(|a, b| a.total_cmp(b) == Ordering::Equal);
        let may_pass = |tau: f64| pred.eval_tau(tau) != Some(false);
        // Pieces in order: (-∞, p0), {p0}, (p0, p1), {p1}, …, {p_last}, (p_last, ∞),
        // each with its closed ends and whether it may pass. A gap without
        // a float in it (between -0.0 and 0.0, say) is left out.
        let mut pieces: Vec<(f64, f64, bool)> = Vec::new();
        let gap = |lo: f64, hi: f64| {
            let inside = if lo == f64::NEG_INFINITY {
                hi.next_down()
            } else {
                lo.next_up()
            };
            let between = inside.is_finite()
                && inside.total_cmp(&lo) == Ordering::Greater
                && inside.total_cmp(&hi) == Ordering::Less;
            between.then(|| (lo, hi, may_pass(inside)))
        };
        let mut below = f64::NEG_INFINITY;
        for &p in &points {
            pieces.extend(gap(below, p));
            pieces.push((p, p, may_pass(p)));
            below = p;
        }
        pieces.extend(gap(below, f64::INFINITY));
        if points.is_empty() {
            pieces = vec![(f64::NEG_INFINITY, f64::INFINITY, may_pass(0.0))];
        }
        let mut intervals: Vec<(f64, f64)> = Vec::new();
        let mut open = false;
        for (lo, hi, pass) in pieces {
            match (pass, open) {
                (true, true) => {
                    if let Some(last) = intervals.last_mut() {
                        last.1 = hi;
                    }
                }
                // Touching the last one (an end point shared by both): one.
                (true, false) => match intervals.last_mut() {
                    Some(last) if last.1.total_cmp(&lo) == Ordering::Equal => last.1 = hi,
                    _ => intervals.push((lo, hi)),
                },
                _ => {}
            }
            open = pass;
        }
        while intervals.len() > MAX_INTERVALS {
            // Merge the two neighbours with the narrowest gap between them.
            let k = (0..intervals.len() - 1)
                .min_by(|&x, &y| {
                    let width = |k: usize| intervals[k + 1].0 - intervals[k].1;
                    width(x).total_cmp(&width(y))
                })
                .unwrap_or(0);
            intervals[k].1 = intervals[k + 1].1;
            intervals.remove(k + 1);
        }
        let everything = intervals.len() == 1
            && intervals[0].0 == f64::NEG_INFINITY
            && intervals[0].1 == f64::INFINITY;
        (!everything).then_some(TauRange { intervals })
    }

    /// The closed intervals, sorted.
    pub fn intervals(&self) -> &[(f64, f64)] {
        &self.intervals
    }
}

/// The widest gap of `[-1, 1]` that `range` leaves out: between two of its
/// intervals, or between `±1` and the nearest one (all of `[-1, 1]`, width
/// 2, when no interval meets it).
fn widest_tau_gap(range: &TauRange) -> f64 {
    let mut widest = 0.0f64;
    let mut covered_to = -1.0f64;
    for &(a, b) in range.intervals() {
        if b < -1.0 {
            continue;
        }
        widest = widest.max(a.min(1.0) - covered_to);
        covered_to = covered_to.max(b);
        if covered_to >= 1.0 {
            return widest;
        }
    }
    widest.max(1.0 - covered_to)
}

/// `2^-50`: how far [`SBound::scores_rule_out`]'s scaled ends move outward.
const OUTWARD: f64 = 1.0 / (1u64 << 50) as f64;

/// `μ(a) = 2^-40·(1 + |a|)`: the margin of the module docs' claim.
fn margin(a: f64) -> f64 {
    (1.0 + a.abs()) * (1.0 / (1u64 << 40) as f64)
}

/// A filter's tau range as per-pair bounds on `S`, from per-gene factors:
/// one per query and matrix. See the module docs for the claim it rests on.
#[derive(Debug, Clone)]
pub struct SBound {
    variant: Variant,
    /// `(a_k − μ(a_k), b_k + μ(b_k))` of the tau range's intervals.
    ends: Vec<(f64, f64)>,
    /// Per gene: tau-b `√(n0 − n1)`, tau-c `n²(k − 1)/(2k)` (0 for k ≤ 1),
    /// with the gene's number of distinct values `k` beside it; empty for tau-a.
    factor: Vec<f64>,
    distinct: Vec<u32>,
    /// tau-a's denominator `n0`.
    n0: f64,
    /// `ends` times the number of samples `n`, moved outward past rounding:
    /// the ends [`SBound::scores_rule_out`] compares with `n·S`.
    n_ends: Vec<(f64, f64)>,
    /// The widest interval of `S` values that no pair may pass with, over
    /// every pair ([`SBound::widest_gap`]).
    widest_gap: f64,
}

impl SBound {
    /// The bounds of filter `pred` on the pairs of `m` under `variant`, or
    /// `None` when the filter does not bound tau.
    pub fn new(pred: &TauPredicate, variant: Variant, m: &RankedMatrix) -> Option<Self> {
        let range = TauRange::of_predicate(pred)?;
        Some(Self::from_range(&range, variant, m))
    }

    /// The bounds of the tau values `range` on the pairs of `m`.
    pub fn from_range(range: &TauRange, variant: Variant, m: &RankedMatrix) -> Self {
        let n = m.samples();
        let n0 = pair_count(n);
        let genes = m.genes();
        let (factor, distinct) = match variant {
            Variant::A => (Vec::new(), Vec::new()),
            Variant::B => (
                (0..genes)
                    .map(|g| ((n0 - m.tie_pairs(g).min(n0)) as f64).sqrt())
                    .collect(),
                Vec::new(),
            ),
            Variant::C => {
                let n2 = (n as f64) * (n as f64);
                let factor = (0..genes)
                    .map(|g| match m.distinct(g) {
                        k @ 2.. => n2 * f64::from(k - 1) / (2.0 * f64::from(k)),
                        _ => 0.0,
                    })
                    .collect();
                (factor, (0..genes).map(|g| m.distinct(g)).collect())
            }
        };
        let ends: Vec<(f64, f64)> = range
            .intervals()
            .iter()
            .map(|&(a, b)| (a - margin(a), b + margin(b)))
            .collect();
        let nf = n as f64;
        let n_ends = ends
            .iter()
            .map(|&(a, b)| {
                let (na, nb) = (nf * a, nf * b);
                (na - na.abs() * OUTWARD, nb + nb.abs() * OUTWARD)
            })
            .collect();
        // The largest denominator any pair has: n0 (tau-a, and tau-b's
        // √(n0 − n1)·√(n0 − n2)), or tau-c's n²(k − 1)/(2k) < n²/2.
        let largest_denominator = match variant {
            Variant::A | Variant::B => n0 as f64,
            Variant::C => (n as f64) * (n as f64) / 2.0,
        };
        Self {
            variant,
            ends,
            factor,
            distinct,
            n0: n0 as f64,
            n_ends,
            widest_gap: widest_tau_gap(range) * largest_denominator,
        }
    }

    /// An upper bound on the width of every interval of `S` values that a
    /// pair's filter fails for, between two of its `S` ranges or between
    /// `±D` and the nearest one: a count whose `S` is only known to lie in
    /// an interval wider than this cannot stop yet. The kernels use it to
    /// skip checks that cannot succeed (never to decide a pair).
    pub fn widest_gap(&self) -> f64 {
        self.widest_gap
    }

    /// `D̂` of genes `i` and `j` (complete genes), 0 where tau is NaN.
    #[inline(always)]
    fn denominator(&self, i: usize, j: usize) -> f64 {
        match self.variant {
            Variant::A => self.n0,
            Variant::B => self.factor[i] * self.factor[j],
            Variant::C => {
                if self.distinct[i] <= self.distinct[j] {
                    self.factor[i]
                } else {
                    self.factor[j]
                }
            }
        }
    }

    /// Whether the filter surely fails for complete genes `i` and `j` with
    /// numerator `s`: today's tau lies in none of the filter's intervals
    /// (see the module docs). `false` proves nothing: compute tau.
    #[inline(always)]
    pub fn surely_fails(&self, i: usize, j: usize, s: i64) -> bool {
        let d = self.denominator(i, j);
        if d == 0.0 {
            return false; // tau is NaN
        }
        let s = s as f64;
        !self.ends.iter().any(|&(lo, hi)| s >= lo * d && s <= hi * d)
    }

    /// Whether no `S` with `lo ≤ n·S ≤ hi` may pass for complete genes `i`
    /// and `j`, given `(lo, hi)` (exact in `f64`; the rank scores'
    /// `Q − C ≤ n·S ≤ Q + C`, [`RankScores::scaled`](super::score_bound::RankScores::scaled))
    /// and `n` the matrix's samples: `false` proves nothing (and is the
    /// answer where tau is NaN).
    ///
    /// With `L = fl(a·D̂)`, `H = fl(b·D̂)` the pair's [`PairRange`] ends, an
    /// `S` of the interval reaches `[L, H]` (as reals) only if `hi ≥ n·L`
    /// and `lo ≤ n·H`. Once per query, `fl(n·a)` is moved outward by `2^-50`
    /// (`8u` with `u = 2^-53`) of its size (`x − |x|·2^-50`),
    /// and per pair multiplied by `D̂`: for `a > 0` that is at most
    /// `n·a·D̂·(1 + u)³(1 − 8u) < n·a·D̂·(1 − u) ≤ n·L`, and for `a < 0` at
    /// least `(1 − u)³(1 + 8u) > 1 + u` times the size of `n·a·D̂`, so again
    /// below `n·L` (`n·L` is within `(1 ± u)` of `n·a·D̂`; `a = 0` is exact).
    /// The upper ends are symmetric; infinite ends stay infinite. So `hi`
    /// below the first, or `lo` above the second, proves `S < L` or `S > H`
    /// for every `S` of the interval: the same pairs
    /// [`PairRange::reachable`] would rule out, or fewer.
    #[inline(always)]
    pub fn scores_rule_out(&self, i: usize, j: usize, (lo, hi): (f64, f64)) -> bool {
        self.scores_rule_out4([i; 4], j, [lo; 4], [hi; 4])[0]
    }

    /// [`SBound::scores_rule_out`] of the pairs of genes `rows[k]` and `j`
    /// with the intervals `lo[k] ≤ n·S ≤ hi[k]`, four lanes at once (the
    /// same operations per lane, so the same answers; written lane by lane
    /// for the compiler to vectorise).
    #[inline(always)]
    pub fn scores_rule_out4(
        &self,
        rows: [usize; 4],
        j: usize,
        lo: [f64; 4],
        hi: [f64; 4],
    ) -> [bool; 4] {
        // Plain loops over the lanes: `array::map`'s closures were not
        // inlined here (measured with `perf`: 13 % of the network job).
        let mut d = [0.0; 4];
        for k in 0..4 {
            d[k] = self.denominator(rows[k], j);
        }
        let mut reach = [false; 4];
        for k in 0..4 {
            reach[k] = d[k] == 0.0; // tau is NaN: never ruled out
        }
        for &(na, nb) in &self.n_ends {
            for k in 0..4 {
                reach[k] |= (hi[k] >= na * d[k]) & (lo[k] <= nb * d[k]);
            }
        }
        let mut out = [false; 4];
        for k in 0..4 {
            out[k] = !reach[k];
        }
        out
    }

    /// The integer ranges of `S` that may pass for genes `i` and `j` of
    /// `m`; [`PairRange::ANY`] when either gene has missing values or the
    /// pair's tau is NaN.
    #[inline]
    pub fn pair(&self, m: &RankedMatrix, i: usize, j: usize) -> PairRange {
        if m.has_gaps(i) || m.has_gaps(j) {
            return PairRange::ANY;
        }
        let d = self.denominator(i, j);
        if d == 0.0 {
            return PairRange::ANY;
        }
        let mut r = PairRange::NONE;
        for (k, &(lo, hi)) in self.ends.iter().enumerate() {
            r.lo[k] = lo * d;
            r.hi[k] = hi * d;
        }
        r
    }
}

/// The values of `S` a pair may pass with: up to [`MAX_INTERVALS`] closed
/// intervals `[L_k, H_k]` of the real line (ends possibly infinite; unused
/// ones `[+∞, −∞]`, which nothing meets). `S` is an integer, so it lies in
/// `[L, H]` exactly when it lies in `[⌈L⌉, ⌊H⌋]`; the ends stay in `f64`
/// (no rounding to integers and no saturating conversion per pair), and an
/// integer range of `S` is compared with them as reals (exact: the kernels'
/// counts are far below 2^53). Two ranges that meet as reals but share no
/// integer count as reachable: a pair is then counted on, never stopped
/// wrongly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairRange {
    lo: [f64; MAX_INTERVALS],
    hi: [f64; MAX_INTERVALS],
}

impl PairRange {
    /// Every `S` may pass: the pair is never stopped.
    pub const ANY: PairRange = PairRange {
        lo: [f64::NEG_INFINITY; MAX_INTERVALS],
        hi: [f64::INFINITY; MAX_INTERVALS],
    };

    /// No `S` may pass (every range empty: `lo > hi` at the extremes):
    /// also the value of lanes whose results are dropped anyway.
    pub const NONE: PairRange = PairRange {
        lo: [f64::INFINITY; MAX_INTERVALS],
        hi: [f64::NEG_INFINITY; MAX_INTERVALS],
    };

    /// Whether some `S` in `lo..=hi` may pass (see the type's docs: as
    /// reals, a superset of the integers that may).
    #[inline(always)]
    pub fn reachable(&self, lo: i64, hi: i64) -> bool {
        let (lo, hi) = (lo as f64, hi as f64);
        (0..MAX_INTERVALS).any(|k| hi >= self.lo[k] && lo <= self.hi[k])
    }

    /// Whether this range never stops a count.
    #[inline]
    pub fn is_any(&self) -> bool {
        *self == PairRange::ANY
    }
}

/// How many pairs a kernel stopped early, and over how many of their words
/// (bit-plane words; the zero-inflated kernel counts pairs only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitCounts {
    /// Pairs dropped before their count ended.
    pub pairs: usize,
    /// Of those, the pairs dropped before their first word was counted
    /// (by the rank scores' interval, `super::score_bound`, or by ties).
    pub before_count: usize,
    /// Bit-plane words counted for the stopped pairs of the bit-plane kernel.
    pub words_counted: usize,
    /// Words a full count of those pairs reads.
    pub words_total: usize,
}

impl ExitCounts {
    /// `pairs` pairs of a bit-plane kernel with planes of `words` words,
    /// stopped before their first word.
    pub fn before_count(pairs: usize, words: usize) -> Self {
        ExitCounts {
            pairs,
            before_count: pairs,
            words_counted: 0,
            words_total: pairs * words,
        }
    }

    /// Adds `other`.
    pub fn add(&mut self, other: ExitCounts) {
        self.pairs += other.pairs;
        self.before_count += other.before_count;
        self.words_counted += other.words_counted;
        self.words_total += other.words_total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::functions::math::expr_fn::abs;
    use datafusion::logical_expr::{Expr, col, lit};

    #[test]
    fn widest_gap_is_the_widest_stretch_of_minus_one_to_one_left_out() {
        let gap = |e: Expr| {
            let p = TauPredicate::from_expr(&e).expect("pushable");
            widest_tau_gap(&TauRange::of_predicate(&p).expect("bounded"))
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(gap(abs(col("tau")).gt_eq(lit(0.8))), 1.6));
        assert!(close(gap(col("tau").gt_eq(lit(0.8))), 1.8));
        assert!(close(gap(col("tau").lt_eq(lit(-0.8))), 1.8));
        assert!(close(gap(col("tau").between(lit(-0.1), lit(0.1))), 0.9));
        // Two kept stretches inside [-1, 1]: the middle gap is the widest.
        let two = col("tau")
            .between(lit(-0.95), lit(-0.9))
            .or(col("tau").between(lit(0.9), lit(0.95)));
        assert!(close(gap(two), 1.8));
    }

    fn range(e: Expr) -> Option<Vec<(f64, f64)>> {
        let p = TauPredicate::from_expr(&e).expect("pushable");
        TauRange::of_predicate(&p).map(|r| r.intervals().to_vec())
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn ranges_of_common_filters() {
        assert_eq!(
            range(abs(col("tau")).gt_eq(lit(0.8))),
            Some(vec![(-INF, -0.8), (0.8, INF)])
        );
        assert_eq!(range(col("tau").gt(lit(0.5))), Some(vec![(0.5, INF)]));
        assert_eq!(range(col("tau").lt_eq(lit(-0.5))), Some(vec![(-INF, -0.5)]));
        assert_eq!(
            range(col("tau").between(lit(-0.1), lit(0.2))),
            Some(vec![(-0.1, 0.2)])
        );
        // p-values alone: no bound; with a tau bound: the tau bound.
        assert_eq!(range(col("p_value").lt(lit(0.01))), None);
        assert_eq!(
            range(col("tau").gt(lit(0.5)).and(col("p_value").lt(lit(0.01)))),
            Some(vec![(0.5, INF)])
        );
        assert_eq!(
            range(col("tau").gt(lit(0.5)).or(col("p_value").lt(lit(0.01)))),
            None
        );
        // Nothing passes (|tau| ≤ 1): a range no pair's S reaches.
        assert_eq!(
            range(abs(col("tau")).gt(lit(2.0))),
            Some(vec![(-INF, -2.0), (2.0, INF)])
        );
        assert_eq!(
            range(col("tau").gt(lit(0.5)).and(col("tau").lt(lit(0.2)))),
            Some(vec![])
        );
        assert_eq!(range(abs(col("tau")).gt_eq(lit(0.0))), None);
        assert_eq!(range(col("tau").not_eq(lit(0.3))), None);
        // -0.0 and 0.0 are both literals of `tau > -0.0`.
        assert_eq!(range(col("tau").gt(lit(-0.0))), Some(vec![(-0.0, INF)]));
    }

    /// For every integer `S` a pair could have (not only attainable ones),
    /// pairs of genes with every tie pattern, all three variants and
    /// thresholds at attained |tau| values and next to them: `surely_fails`
    /// and the integer ranges agree, and neither ever rejects a pair that
    /// today's test passes; far from the threshold they do reject.
    #[test]
    fn bounds_never_reject_a_passing_pair() {
        use crate::kernel::{naive, tau};
        let mut rng = crate::test_rng::XorShift::new(0x47);
        let mut next = move |k: u64| rng.next_u64() % k;
        for n in [1usize, 2, 3, 9, 40] {
            let kinds = 6;
            let values: Vec<f64> = (0..kinds * n)
                .map(|k| match k / n {
                    0 => 1.0,                  // constant
                    1 => next(2) as f64,       // two values
                    2 => next(4) as f64,       // ties
                    _ => next(1 << 30) as f64, // distinct
                })
                .collect();
            let m = RankedMatrix::from_values(kinds, n, &values);
            let n0 = pair_count(n) as i64;
            for variant in [Variant::A, Variant::B, Variant::C] {
                let mut ts = vec![0.0, 0.5, 0.8, 1.0, -0.3, 1.5];
                for i in 0..kinds {
                    for j in i + 1..kinds {
                        let s = naive::numerator(m.ranks(i), m.ranks(j));
                        let t = tau(variant, s, n, m.ties(i), m.ties(j)).abs();
                        if t.is_finite() {
                            ts.extend([t, t.next_up(), t.next_down()]);
                        }
                    }
                }
                for &t in &ts {
                    for e in [
                        abs(col("tau")).gt_eq(lit(t)),
                        abs(col("tau")).gt(lit(t)),
                        col("tau").gt_eq(lit(t)),
                        col("tau").lt(lit(-t)),
                        col("tau").between(lit(-t), lit(t)),
                    ] {
                        let pred = TauPredicate::from_expr(&e).unwrap();
                        let Some(bound) = SBound::new(&pred, variant, &m) else {
                            continue;
                        };
                        let mut rejected = 0;
                        for i in 0..kinds {
                            for j in i + 1..kinds {
                                let r = bound.pair(&m, i, j);
                                // |S| ≤ n0 − max(n1, n2) for any pair.
                                let cap = n0 - m.tie_pairs(i).max(m.tie_pairs(j)) as i64;
                                for s in -cap..=cap {
                                    let x = tau(variant, s, n, m.ties(i), m.ties(j));
                                    let fails = bound.surely_fails(i, j, s);
                                    assert_eq!(fails, !r.reachable(s, s), "{e} {variant} {s}");
                                    // The scaled test rules out no `S` the
                                    // range reaches (n·S ± w), and
                                    // rules out what it misses by a margin.
                                    let sn = n as i64;
                                    for w in [0i64, 2, 5, 100] {
                                        let scaled = ((sn * s - w) as f64, (sn * s + w) as f64);
                                        let out = bound.scores_rule_out(i, j, scaled);
                                        let (lo, hi) = (
                                            (sn * s - w).div_euclid(sn)
                                                + i64::from((sn * s - w).rem_euclid(sn) != 0),
                                            (sn * s + w).div_euclid(sn),
                                        );
                                        if out {
                                            assert!(!r.reachable(lo, hi), "{e} {variant} {s}±{w}");
                                        }
                                        if w == 0 && !m.has_gaps(i) && !m.has_gaps(j) {
                                            assert_eq!(out, fails, "{e} {variant} {s}");
                                        }
                                    }
                                    if fails {
                                        let pass = pred.eval(&crate::filter::PairValues::tau(x));
                                        assert!(
                                            !pass,
                                            "{e} {variant} n={n} ({i}, {j}) S={s} tau={x}"
                                        );
                                        rejected += 1;
                                    }
                                }
                            }
                        }
                        if n == 40 && t == 0.8 && variant == Variant::A {
                            assert!(rejected > 0, "{e}");
                        }
                    }
                }
            }
        }
    }
}

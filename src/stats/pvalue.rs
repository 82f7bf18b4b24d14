//! p-values of Kendall's tau-b, as `scipy.stats.kendalltau` and R's
//! `cor.test(method = "kendall")`.
//!
//! - asymptotic: S is normal with the tie-corrected variance
//!   `(n(n-1)(2n+5) - Σx - Σy)/18 + 2·n1·n2/(n(n-1)) + X2·Y2/(9n(n-1)(n-2))`
//!   (Σx = Σ t(t-1)(2t+5), X2 = Σ t(t-1)(t-2) over one gene's tie groups);
//!   with `kendall.continuity = true`, R's continuity correction: S becomes
//!   `sign(S)·(|S| - 1)` before it is divided by its standard deviation;
//! - exact (no ties): the permutation distribution of the discordant count
//!   (Mahonian numbers), scipy's `_kendall_p_exact`: two-sided
//!   `p = 2·P(nd ≤ c)`, c = min(nd, n0 - nd); one-sided, half of it when the
//!   data lean the alternative's way, else `1 - P(nd ≤ c) + P(nd = c)`.
//!
//! `kendall.alternative` chooses the alternative hypothesis: `two-sided`
//! (the default), `greater` (positive association, tau > 0) or `less`.
//!
//! `auto` follows scipy: exact when neither gene has ties and n ≤ 33 or
//! c ≤ 1, else asymptotic. `exact` works at any n without ties: one
//! distribution per n, shared by all pairs (see [`exact_cdf`] for its cost).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::Result;
use rayon::prelude::*;

use crate::memory::Reservation;
use crate::rank::VarianceTerms;
use crate::rank::{GeneTies, pair_count};

crate::option_enum::option_enum! {
    /// How p-values are computed (`SET kendall.pvalue = ...`).
    pub enum PValueMethod: "kendall.pvalue" {
        /// scipy's rule: exact for small n without ties, else asymptotic.
        #[default]
        Auto = "auto",
        /// The normal approximation with the tie-corrected variance.
        Asymptotic = "asymptotic",
        /// The exact permutation distribution; NaN for pairs with ties (scipy
        /// refuses them).
        Exact = "exact",
    }
}

crate::option_enum::option_enum! {
    /// The alternative hypothesis of `p_value` (`SET kendall.alternative = ...`),
    /// as scipy's `alternative` and R's `cor.test(alternative = ...)`.
    pub enum Alternative: "kendall.alternative" {
        /// tau ≠ 0.
        #[default]
        TwoSided = "two-sided" | "two_sided" | "two.sided",
        /// tau < 0 (negative association).
        Less = "less",
        /// tau > 0 (positive association).
        Greater = "greater",
    }
}

crate::option_enum::option_enum! {
    /// R's continuity correction of the normal approximation
    /// (`SET kendall.continuity = true`).
    pub enum Continuity: "kendall.continuity" {
        /// No correction (scipy; R's default).
        #[default]
        Off = "false" | "off" | "no" | "0",
        /// `S` moves 1 towards 0 before the normal approximation (R's
        /// `continuity = TRUE`); exact p-values are not changed.
        On = "true" | "on" | "yes" | "1",
    }
}

/// What a query's p-values are: the method, the alternative and the
/// continuity correction (the `kendall.pvalue`, `kendall.alternative` and
/// `kendall.continuity` options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PValueOptions {
    /// Exact, asymptotic or scipy's rule.
    pub method: PValueMethod,
    /// The alternative hypothesis.
    pub alternative: Alternative,
    /// R's continuity correction of the asymptotic test.
    pub continuity: Continuity,
}

impl PValueOptions {
    /// Two-sided, uncorrected p-values of `method`.
    pub fn method(method: PValueMethod) -> Self {
        Self {
            method,
            ..Self::default()
        }
    }
}

/// Largest n for which `auto` uses the exact distribution (scipy's rule).
const AUTO_EXACT_MAX_SAMPLES: usize = 33;

/// Bytes the exact distribution tables of pairs with fewer samples than the
/// input (missing values) may take per query, besides the table of complete
/// pairs. With missing values pairs have many different n; once the budget
/// is spent, a pair's probability is computed on its own (same numbers,
/// more time).
const TABLE_BUDGET: usize = 64 << 20;

/// Bytes of the exact distribution table of n samples: `n0/2 + 1` f64.
pub fn table_bytes(n: usize) -> usize {
    (pair_count(n) as usize / 2 + 1) * std::mem::size_of::<f64>()
}

/// p-values for one query: the options and (when it can be needed) the
/// exact distribution's cumulative probabilities for each number of samples
/// a pair may have (fewer than all of them with missing values).
#[derive(Debug)]
pub struct PValues {
    options: PValueOptions,
    /// `tables[n][k] = P(nd <= k)` under independence for n samples, k in
    /// 0..=n0/2; built when first needed, shared by all partitions.
    tables: Vec<OnceLock<Vec<f64>>>,
    /// Bytes of [`TABLE_BUDGET`] not yet promised to a table.
    budget: AtomicUsize,
    /// Distributions computed so far (tables built, or cut ones for one
    /// pair): each costs up to O(n³) steps, unlike a lookup.
    computed: AtomicUsize,
}

impl PValues {
    /// Prepares p-values for pairs of at most `samples` values. The table of
    /// complete pairs (all `samples`), when exact p-values may need it, is
    /// built now; others when first needed.
    pub fn new(options: PValueOptions, samples: usize) -> Self {
        Self::build(options, samples, None)
            .unwrap_or_else(|_| unreachable!("no reservation, no error"))
    }

    /// [`PValues::new`] with the table of complete pairs reserved in
    /// `memory` first (`n0/2 + 1` f64: 50 MB at n = 5,000): a query over
    /// `kendall.memory_limit` fails with a message naming it.
    pub fn try_new(
        options: PValueOptions,
        samples: usize,
        memory: &mut Reservation,
    ) -> Result<Self> {
        Self::build(options, samples, Some(memory))
    }

    fn build(
        options: PValueOptions,
        samples: usize,
        memory: Option<&mut Reservation>,
    ) -> Result<Self> {
        let max_exact = match options.method {
            PValueMethod::Auto => samples.min(AUTO_EXACT_MAX_SAMPLES),
            PValueMethod::Exact => samples,
            PValueMethod::Asymptotic => 0,
        };
        let tables: Vec<OnceLock<Vec<f64>>> = (0..=max_exact).map(|_| OnceLock::new()).collect();
        let values = Self {
            options,
            tables,
            budget: AtomicUsize::new(TABLE_BUDGET),
            computed: AtomicUsize::new(0),
        };
        // The table of complete pairs, built now (off the query's streams)
        // unless the load is asked to stop meanwhile (then never needed).
        if values.tables.len() > samples && samples > 2 {
            // Two tables' bytes while it is built, one after.
            let bytes = table_bytes(samples);
            if let Some(memory) = memory {
                memory.try_grow(2 * bytes)?;
                if let Some(cdf) = exact_cdf(samples, usize::MAX) {
                    let _ = values.tables[samples].set(cdf);
                }
                memory.shrink_to(memory.size() - bytes);
            } else if let Some(cdf) = exact_cdf(samples, usize::MAX) {
                let _ = values.tables[samples].set(cdf);
            }
        }
        Ok(values)
    }

    /// `(P(nd <= c), P(nd <= c - 1))` for n samples: from the table of n,
    /// built if the budget allows, else computed for this c alone (the same
    /// recurrence cut at c, so the same numbers).
    fn cdf(&self, n: usize, c: usize) -> (f64, f64) {
        let at = |cdf: &[f64]| {
            let below = if c == 0 {
                0.0
            } else {
                cdf.get(c - 1).copied().unwrap_or(f64::NAN)
            };
            (cdf.get(c).copied().unwrap_or(f64::NAN), below)
        };
        let Some(table) = self.tables.get(n) else {
            return (f64::NAN, f64::NAN);
        };
        if let Some(cdf) = table.get() {
            return at(cdf);
        }
        // Built on a query's stream, never on a stopping load: not `None`.
        let build = |upto| {
            self.computed.fetch_add(1, Ordering::Relaxed);
            exact_cdf(n, upto).unwrap_or_default()
        };
        if self.reserve(n) {
            at(table.get_or_init(|| build(usize::MAX)))
        } else {
            at(&build(c))
        }
    }

    /// How many exact distributions have been computed for pairs so far
    /// (by any partition). A change tells a stream that a p-value was costly
    /// (up to O(n³) steps), so it reads the clock before the next row.
    #[inline]
    pub fn computed(&self) -> usize {
        self.computed.load(Ordering::Relaxed)
    }

    /// Takes the bytes of the table of n from the budget, if they are left.
    fn reserve(&self, n: usize) -> bool {
        let bytes = table_bytes(n);
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }

    /// The p-value of numerator `s` over `n` samples for genes with ties
    /// `u`, `v` (on those samples), for the query's alternative.
    pub fn p_value(
        &self,
        n: usize,
        s: i64,
        u: (GeneTies, VarianceTerms),
        v: (GeneTies, VarianceTerms),
    ) -> f64 {
        let n0 = pair_count(n);
        if u.0.tie_pairs == n0 || v.0.tie_pairs == n0 {
            return f64::NAN; // a constant gene, or fewer than 2 samples
        }
        let tie_free = u.0.tie_pairs == 0 && v.0.tie_pairs == 0;
        // Without ties S = n0 - 2·nd.
        let c = || {
            let nd = (i128::from(n0) - i128::from(s)) / 2;
            nd.min(i128::from(n0) - nd) as u64
        };
        let exact = match self.options.method {
            PValueMethod::Asymptotic => false,
            PValueMethod::Exact => {
                if !tie_free {
                    return f64::NAN;
                }
                true
            }
            PValueMethod::Auto => tie_free && (n <= AUTO_EXACT_MAX_SAMPLES || c() <= 1),
        };
        if exact {
            self.exact(n, s >= 0, c())
        } else {
            asymptotic(s, n, u, v, self.options)
        }
    }

    /// scipy's `_kendall_p_exact(n, concordant, alternative)`: `c` is the
    /// smaller of the discordant and concordant counts, `right` whether the
    /// concordant ones are at least as many (S ≥ 0).
    fn exact(&self, n: usize, right: bool, c: u64) -> f64 {
        let n0 = pair_count(n);
        let two_sided = self.options.alternative == Alternative::TwoSided;
        // prob = 2·P(nd ≤ c), mass = P(nd = c).
        let (prob, mass) = if n <= 2 {
            (1.0, 0.5)
        } else if c == 0 {
            // 2/n!: one permutation without an inversion.
            let prob = 2.0 / factorial(n);
            (prob, prob / 2.0)
        } else if c == 1 {
            // 2/(n-1)!: n-1 permutations of one inversion.
            (2.0 / factorial(n - 1), (n - 1) as f64 / factorial(n))
        } else if 2 * c == n0 && two_sided {
            (1.0, f64::NAN)
        } else {
            let (at, below) = self.cdf(n, c as usize);
            (2.0 * at, at - below)
        };
        let p = match self.options.alternative {
            Alternative::TwoSided => prob,
            // The data lean the alternative's way: half the two-sided p.
            Alternative::Greater if right => prob / 2.0,
            Alternative::Less if !right => prob / 2.0,
            _ => 1.0 - prob / 2.0 + mass,
        };
        clip(p)
    }
}

/// `p` clipped to [0, 1], NaN kept (`clamp` keeps NaN; `f64::min` would
/// turn it into 1: a pair without an answer would then look like a certain
/// non-correlation).
fn clip(p: f64) -> f64 {
    p.clamp(0.0, 1.0)
}

/// `n!` in f64 (infinity from 171 on, so 2/n! becomes 0 as in scipy).
fn factorial(n: usize) -> f64 {
    (2..=n).map(|k| k as f64).product()
}

/// Values summed along one chain of [`exact_cdf`]'s prefix sums: segments
/// start at fixed multiples of it, whatever the table's length, so a table
/// cut at any c holds the same bits as the full one.
const SEGMENT: usize = 2048;

/// Segments one task of [`exact_cdf`] scans, four chains interleaved (a
/// chain is a dependent add per value; four hide its latency).
const SEGMENTS_PER_TASK: usize = 4;

/// `P(nd <= k)` for k in 0..=min(n0/2, upto) under independence: the
/// Mahonian distribution built one element at a time, normalised at every
/// step (scipy's recurrence for n ≥ 171). Inserting element j adds 0..j-1
/// inversions uniformly, so the new probabilities are windowed sums of the
/// old ones, `(S[k] - S[k-j]) / j` over the prefix sums S. Each entry
/// depends only on smaller k, so a cut at `upto` changes no entry.
///
/// Cost: `Σ_j min(n0/2, j(j-1)/2)` ≈ 0.13·n³ value steps (each step covers
/// only the distribution's support so far) on rayon's threads, memory
/// 2 × (n0/2 + 1) f64 while building (the result and one buffer), the
/// result alone after. Measured in
/// docs/benchmarks/2026-11-26-exact-pvalues-*.md.
///
/// `None` when the input load running on this thread is asked to stop
/// ([`crate::load::stop_requested`]).
pub fn exact_cdf(n: usize, upto: usize) -> Option<Vec<f64>> {
    let len = ((pair_count(n) / 2) as usize).min(upto) + 1;
    // Two buffers: one step's probabilities (turned into their prefix sums
    // in place) and the next step's.
    let mut p = vec![0.0f64; len];
    let mut next = vec![0.0f64; len];
    p[0] = 1.0;
    for j in 2..=n {
        if crate::load::stop_requested() {
            return None;
        }
        // Support after inserting j: 0..=j(j-1)/2. Beyond the old support
        // `p` holds zeros (every write so far stayed within a support).
        let support = ((j * (j - 1)) / 2 + 1).min(len);
        prefix_sums(&mut p[..support]);
        let inv = 1.0 / j as f64;
        let scan = &p[..support];
        next[..support]
            .par_chunks_mut(SEGMENT * SEGMENTS_PER_TASK)
            .enumerate()
            .for_each(|(t, out)| {
                let base = t * SEGMENT * SEGMENTS_PER_TASK;
                for (o, k) in out.iter_mut().zip(base..) {
                    let below = if k >= j { scan[k - j] } else { 0.0 };
                    *o = (scan[k] - below) * inv;
                }
            });
        std::mem::swap(&mut p, &mut next);
    }
    prefix_sums(&mut p);
    Some(p)
}

/// Inclusive prefix sums of `x`, in place: each [`SEGMENT`] summed on its
/// own (four interleaved per task, tasks on rayon's threads), then each
/// segment offset by the total before it.
fn prefix_sums(x: &mut [f64]) {
    let task = SEGMENT * SEGMENTS_PER_TASK;
    x.par_chunks_mut(task).for_each(|x| {
        if x.len() == task {
            let (s0, rest) = x.split_at_mut(SEGMENT);
            let (s1, rest) = rest.split_at_mut(SEGMENT);
            let (s2, s3) = rest.split_at_mut(SEGMENT);
            let mut acc = [0.0f64; 4];
            for k in 0..SEGMENT {
                acc[0] += s0[k];
                acc[1] += s1[k];
                acc[2] += s2[k];
                acc[3] += s3[k];
                s0[k] = acc[0];
                s1[k] = acc[1];
                s2[k] = acc[2];
                s3[k] = acc[3];
            }
        } else {
            for seg in x.chunks_mut(SEGMENT) {
                let mut acc = 0.0;
                for v in seg.iter_mut() {
                    acc += *v;
                    *v = acc;
                }
            }
        }
    });
    // Offsets, segment by segment (the last value of each is its total).
    let mut carry = 0.0f64;
    let mut carries = Vec::with_capacity(x.len().div_ceil(SEGMENT));
    for seg in x.chunks(SEGMENT) {
        carries.push(carry);
        carry += seg[seg.len() - 1];
    }
    x.par_chunks_mut(SEGMENT)
        .zip(carries)
        .skip(1)
        .for_each(|(seg, carry)| seg.iter_mut().for_each(|v| *v += carry));
}

/// The normal approximation with scipy's tie-corrected variance (R's
/// `cor.test` uses the same), for the query's alternative and continuity
/// correction.
fn asymptotic(
    s: i64,
    n: usize,
    u: (GeneTies, VarianceTerms),
    v: (GeneTies, VarianceTerms),
    options: PValueOptions,
) -> f64 {
    let nf = n as f64;
    let m = nf * (nf - 1.0);
    let (xtie, ytie) = (u.0.tie_pairs as f64, v.0.tie_pairs as f64);
    let mut var = (m * (2.0 * nf + 5.0) - u.1.t5 - v.1.t5) / 18.0 + (2.0 * xtie * ytie) / m;
    if n > 2 {
        var += u.1.t2 * v.1.t2 / (9.0 * m * (nf - 2.0));
    }
    // R: `if (continuity) S <- sign(S) * (abs(S) - 1)`.
    let s = match options.continuity {
        Continuity::Off => s as f64,
        Continuity::On => (s.signum() * (s.abs() - 1)) as f64,
    };
    let z = s / var.sqrt();
    let sf = |z: f64| 0.5 * libm::erfc(z / std::f64::consts::SQRT_2);
    match options.alternative {
        Alternative::TwoSided => clip(libm::erfc(z.abs() / std::f64::consts::SQRT_2)),
        Alternative::Greater => sf(z),
        Alternative::Less => sf(-z),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_distribution_sums_to_one_and_is_symmetric() {
        for n in [3usize, 4, 10, 33] {
            let cdf = exact_cdf(n, usize::MAX).unwrap();
            let n0 = pair_count(n) as usize;
            // P(nd <= n0/2) is 1/2 (plus half the middle mass when n0 is even).
            let last = *cdf.last().unwrap();
            // (Rounding: a step multiplies by 1/j instead of dividing.)
            assert!((0.5 - 1e-15..=1.0).contains(&last), "n={n}: {last}");
            let middle = if n0 % 2 == 1 {
                0.0
            } else {
                let half = cdf.len() - 1;
                cdf[half] - cdf[half - 1]
            };
            assert!((last - 0.5 - middle / 2.0).abs() < 1e-12, "n={n}: {last}");
        }
        // n = 4: 24 permutations, 1 with 0 inversions, 3 with 1, 5 with 2.
        let cdf = exact_cdf(4, usize::MAX).unwrap();
        assert!((cdf[0] - 1.0 / 24.0).abs() < 1e-15);
        assert!((cdf[2] - 9.0 / 24.0).abs() < 1e-15);
    }

    fn free(n: usize) -> (GeneTies, VarianceTerms) {
        (
            GeneTies {
                tie_pairs: 0,
                distinct: n as u32,
            },
            VarianceTerms::default(),
        )
    }

    #[test]
    // The values as scipy's test quotes them (SymPy, 20 digits).
    #[allow(clippy::excessive_precision)]
    fn exact_at_any_n() {
        // scipy's test_kendall_p_exact_large (values from SymPy): n and the
        // concordant count.
        for (n, con, expected) in [
            (400usize, 38965u64, 0.48444283672113314099),
            (401, 39516, 0.66363159823474837662),
            (1600, 637472, 0.84200727400323538419),
            (1601, 630304, 0.34465255088058593946),
        ] {
            let p = PValues::new(PValueOptions::method(PValueMethod::Exact), n);
            let n0 = pair_count(n) as i64;
            let s = 2 * con as i64 - n0;
            let got = p.p_value(n, s, free(n), free(n));
            assert!((got - expected).abs() < 1e-9, "n={n}: {got} vs {expected}");
        }
        // Closed forms: c = 0 and c = 1 (2/n! underflows to 0, as in scipy).
        let n = 1100;
        let n0 = pair_count(n) as i64;
        let p = PValues::new(PValueOptions::method(PValueMethod::Exact), n);
        assert_eq!(p.p_value(n, n0, free(n), free(n)), 0.0);
        assert_eq!(p.p_value(n, n0 - 2, free(n), free(n)), 0.0);
        // The exact middle is 1.
        let mid = PValues::new(PValueOptions::method(PValueMethod::Exact), 4);
        assert_eq!(mid.p_value(4, 0, free(4), free(4)), 1.0);
        assert!(clip(f64::NAN).is_nan());
        assert_eq!(clip(1.0 + 1e-12), 1.0);
    }

    #[test]
    fn one_sided_halves_or_complements() {
        for method in [PValueMethod::Exact, PValueMethod::Asymptotic] {
            let at = |alternative| PValues {
                options: PValueOptions {
                    method,
                    alternative,
                    continuity: Continuity::Off,
                },
                ..PValues::new(PValueOptions::method(method), 12)
            };
            let (two, less, greater) = (
                at(Alternative::TwoSided),
                at(Alternative::Less),
                at(Alternative::Greater),
            );
            for s in [-40i64, -10, 2, 22, 66] {
                let f = free(12);
                let (t, l, g) = (
                    two.p_value(12, s, f, f),
                    less.p_value(12, s, f, f),
                    greater.p_value(12, s, f, f),
                );
                let (agree, other) = if s >= 0 { (g, l) } else { (l, g) };
                assert!((agree - t / 2.0).abs() < 1e-15, "{method} s={s}");
                assert!(other >= 0.5, "{method} s={s}: {other}");
                if method == PValueMethod::Asymptotic {
                    assert!((l + g - 1.0).abs() < 1e-15);
                }
            }
        }
        // R's help page example (cor.test, Hollander & Wolfe):
        // greater, exact p = 0.05972, asymptotic 0.04765 (T = 26, n = 9).
        let x: [f64; 9] = [44.4, 45.9, 41.9, 53.3, 44.7, 44.1, 50.7, 45.2, 60.1];
        let y = [2.6, 3.1, 2.5, 5.0, 3.6, 4.0, 5.2, 2.8, 3.8];
        let mut s = 0i64;
        for a in 0..9 {
            for b in a + 1..9 {
                s += ((x[b] - x[a]) * (y[b] - y[a])).signum() as i64;
            }
        }
        let greater = |method| PValues {
            options: PValueOptions {
                method,
                alternative: Alternative::Greater,
                continuity: Continuity::Off,
            },
            ..PValues::new(PValueOptions::method(method), 9)
        };
        let exact = greater(PValueMethod::Exact).p_value(9, s, free(9), free(9));
        assert!((exact - 0.05972).abs() < 5e-6, "{exact}");
        let normal = greater(PValueMethod::Asymptotic).p_value(9, s, free(9), free(9));
        assert!((normal - 0.04765).abs() < 5e-6, "{normal}");
    }

    #[test]
    fn a_cut_table_gives_the_same_numbers() {
        for n in [5usize, 33, 60, 200] {
            let full = exact_cdf(n, usize::MAX).unwrap();
            for c in [0usize, 1, 7, 3000, 8191, 8192, 9000, full.len() - 1]
                .into_iter()
                .filter(|&c| c < full.len())
            {
                assert_eq!(
                    exact_cdf(n, c).unwrap()[c].to_bits(),
                    full[c].to_bits(),
                    "n={n} c={c}"
                );
            }
        }
        // Past the budget, p-values come without a table, unchanged.
        let free = free(40);
        let p = PValues::new(PValueOptions::method(PValueMethod::Exact), 60);
        let kept = p.p_value(40, 100, free, free);
        assert!(p.tables[40].get().is_some());
        let unkept = PValues::new(PValueOptions::method(PValueMethod::Exact), 60);
        unkept.budget.store(0, Ordering::Relaxed);
        assert!(unkept.tables[40].get().is_none());
        assert_eq!(
            unkept.p_value(40, 100, free, free).to_bits(),
            kept.to_bits()
        );
        assert!(unkept.tables[40].get().is_none());
        assert!(kept > 0.0 && kept < 1.0);
    }
}

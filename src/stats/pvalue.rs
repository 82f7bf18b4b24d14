//! Two-sided p-values of Kendall's tau-b, as `scipy.stats.kendalltau`.
//!
//! - asymptotic: S is normal with the tie-corrected variance
//!   `(n(n-1)(2n+5) - Σx - Σy)/18 + 2·n1·n2/(n(n-1)) + X2·Y2/(9n(n-1)(n-2))`
//!   (Σx = Σ t(t-1)(2t+5), X2 = Σ t(t-1)(t-2) over one gene's tie groups);
//! - exact (no ties): the permutation distribution of the discordant count
//!   (Mahonian numbers), `p = 2·P(nd ≤ c)`, c = min(nd, n0 - nd).
//!
//! `auto` follows scipy: exact when neither gene has ties and n ≤ 33 or
//! c ≤ 1, else asymptotic.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::input::VarianceTerms;
use crate::kernel::{GeneTies, pair_count};

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

/// Largest n for which `auto` uses the exact distribution (scipy's rule).
const AUTO_EXACT_MAX_SAMPLES: usize = 33;

/// Largest n for which the exact distribution is tabulated; beyond it
/// `exact` gives NaN unless c ≤ 1 (closed form). A table for n holds n²/4
/// probabilities and takes O(n³) steps to build (about 0.3 s at n = 1,000),
/// and with missing values each distinct n needs its own.
pub const EXACT_MAX_SAMPLES: usize = 1000;

/// Bytes the exact distribution tables of one query may take. With missing
/// values pairs have many different n; once the budget is spent, a pair's
/// probability is computed on its own (same numbers, more time).
const TABLE_BUDGET: usize = 64 << 20;

/// p-values for one query: the method and (when it can be needed) the exact
/// distribution's cumulative probabilities for each number of samples a
/// pair may have (fewer than all of them with missing values).
#[derive(Debug)]
pub struct PValues {
    method: PValueMethod,
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
    /// Prepares p-values of `method` for pairs of at most `samples` values
    /// (the table for all of them is built now, others when first needed).
    pub fn new(method: PValueMethod, samples: usize) -> Self {
        let max_exact = match method {
            PValueMethod::Auto => samples.min(AUTO_EXACT_MAX_SAMPLES),
            PValueMethod::Exact => samples.min(EXACT_MAX_SAMPLES),
            PValueMethod::Asymptotic => 0,
        };
        let tables: Vec<OnceLock<Vec<f64>>> = (0..=max_exact).map(|_| OnceLock::new()).collect();
        let values = Self {
            method,
            tables,
            budget: AtomicUsize::new(TABLE_BUDGET),
            computed: AtomicUsize::new(0),
        };
        // The table of complete pairs, built now (off the query's streams)
        // unless the load is asked to stop meanwhile (then never needed).
        if values.tables.len() > samples
            && values.reserve(samples)
            && let Some(cdf) = exact_cdf(samples, usize::MAX)
        {
            let _ = values.tables[samples].set(cdf);
        }
        values
    }

    /// `P(nd <= c)` for n samples: from the table of n, built if the budget
    /// allows, else computed for this c alone (the same recurrence cut at c,
    /// so the same number).
    fn cdf(&self, n: usize, c: usize) -> f64 {
        let Some(table) = self.tables.get(n) else {
            return f64::NAN;
        };
        if let Some(cdf) = table.get() {
            return cdf.get(c).copied().unwrap_or(f64::NAN);
        }
        // Built on a query's stream, never on a stopping load: not `None`.
        let build = |upto| {
            self.computed.fetch_add(1, Ordering::Relaxed);
            exact_cdf(n, upto).unwrap_or_default()
        };
        let cdf = if self.reserve(n) {
            table.get_or_init(|| build(usize::MAX))
        } else {
            &build(c)
        };
        cdf.get(c).copied().unwrap_or(f64::NAN)
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
        let bytes = (pair_count(n) as usize / 2 + 1) * std::mem::size_of::<f64>();
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }

    /// The two-sided p-value of numerator `s` over `n` samples for genes
    /// with ties `u`, `v` (on those samples).
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
        let exact = match self.method {
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
            self.exact(n, c())
        } else {
            asymptotic(s, n, u, v)
        }
    }

    fn exact(&self, n: usize, c: u64) -> f64 {
        let n0 = pair_count(n);
        if n <= 2 {
            return 1.0;
        }
        if 4 * c == n0 * 2 {
            return 1.0;
        }
        match c {
            // 2/n! and 2/(n-1)!: one and n-1 permutations of at most 1 inversion.
            0 => 2.0 / factorial(n),
            1 => 2.0 / factorial(n - 1),
            // No table this large: the documented NaN, never a made-up 1.
            _ if n > EXACT_MAX_SAMPLES => f64::NAN,
            _ => at_most_one(2.0 * self.cdf(n, c as usize)),
        }
    }
}

/// `p` capped at 1, NaN kept (`f64::min` would turn NaN into 1: a pair
/// without an answer would then look like a certain non-correlation).
fn at_most_one(p: f64) -> f64 {
    if p > 1.0 { 1.0 } else { p }
}

/// `n!` in f64 (infinity from 171 on, so 2/n! becomes 0 as in scipy).
fn factorial(n: usize) -> f64 {
    (2..=n).map(|k| k as f64).product()
}

/// `P(nd <= k)` for k in 0..=min(n0/2, upto) under independence: the
/// Mahonian distribution built one element at a time, normalised at every
/// step. Each entry depends only on smaller k, so a cut at `upto` changes
/// no entry. `None` when the input load running on this thread is asked to
/// stop ([`crate::load::stop_requested`]; O(n³) steps at n = 1,000 take a while).
fn exact_cdf(n: usize, upto: usize) -> Option<Vec<f64>> {
    let half = ((pair_count(n) / 2) as usize).min(upto);
    let mut p = vec![0.0f64; half + 1];
    p[0] = 1.0;
    for j in 2..=n {
        if crate::load::stop_requested() {
            return None;
        }
        // Inserting element j adds 0..j-1 inversions, uniformly.
        let mut next = vec![0.0f64; half + 1];
        let mut window = 0.0;
        for k in 0..=half {
            window += p[k];
            if k >= j {
                window -= p[k - j];
            }
            next[k] = window / j as f64;
        }
        p = next;
    }
    let mut acc = 0.0;
    Some(
        p.iter()
            .map(|x| {
                acc += x;
                acc
            })
            .collect(),
    )
}

/// The normal approximation with scipy's tie-corrected variance.
fn asymptotic(s: i64, n: usize, u: (GeneTies, VarianceTerms), v: (GeneTies, VarianceTerms)) -> f64 {
    let nf = n as f64;
    let m = nf * (nf - 1.0);
    let (xtie, ytie) = (u.0.tie_pairs as f64, v.0.tie_pairs as f64);
    let mut var = (m * (2.0 * nf + 5.0) - u.1.t5 - v.1.t5) / 18.0 + (2.0 * xtie * ytie) / m;
    if n > 2 {
        var += u.1.t2 * v.1.t2 / (9.0 * m * (nf - 2.0));
    }
    let z = s as f64 / var.sqrt();
    libm::erfc(z.abs() / std::f64::consts::SQRT_2)
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
            assert!((0.5..=1.0).contains(&last), "n={n}: {last}");
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

    #[test]
    fn exact_beyond_the_tables_is_nan_not_one() {
        let free = (
            GeneTies {
                tie_pairs: 0,
                distinct: 1100,
            },
            VarianceTerms::default(),
        );
        let n = EXACT_MAX_SAMPLES + 100;
        let n0 = pair_count(n) as i64;
        let p = PValues::new(PValueMethod::Exact, n);
        // tau = 0.936: c = 3.2% of n0, far in the tail.
        let s = (n0 as f64 * 0.936) as i64 / 2 * 2 + n0 % 2;
        assert!(p.p_value(n, s, free, free).is_nan());
        // Closed forms stay: c = 0 and c = 1 (2/n! underflows to 0, as in scipy).
        assert_eq!(p.p_value(n, n0, free, free), 0.0);
        assert_eq!(p.p_value(n, n0 - 2, free, free), 0.0);
        // The exact middle is 1.
        let mid = PValues::new(PValueMethod::Exact, 4);
        assert_eq!(mid.p_value(4, 0, free, free), 1.0);
        assert!(at_most_one(f64::NAN).is_nan());
        assert_eq!(at_most_one(1.0 + 1e-12), 1.0);
    }

    #[test]
    fn a_cut_table_gives_the_same_numbers() {
        for n in [5usize, 33, 60] {
            let full = exact_cdf(n, usize::MAX).unwrap();
            for c in [0usize, 1, 7, full.len() - 1]
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
        let free = (
            GeneTies {
                tie_pairs: 0,
                distinct: 40,
            },
            VarianceTerms::default(),
        );
        let p = PValues::new(PValueMethod::Exact, 60);
        let kept = p.p_value(40, 100, free, free);
        assert!(p.tables[40].get().is_some());
        let unkept = PValues::new(PValueMethod::Exact, 60);
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

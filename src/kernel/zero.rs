//! The zero-inflated numerator: for single-cell data, where most of a gene's
//! values are one tie group (zero counts), a pair costs O(k log k) in the k
//! samples outside the sparser gene's largest tie group instead of
//! O(n log n) in all n samples.
//!
//! # Derivation
//!
//! `S(u, v) = Σ_{a<b} sgn(u_a − u_b) · sgn(v_a − v_b)`. Let `Z` be the
//! samples of `u`'s largest tie group (value `z`) and `N` the other `k`.
//! Split the sample pairs by where their two samples lie:
//!
//! - both in `Z`: `sgn(u_a − u_b) = 0`; they contribute nothing;
//! - both in `N`: the ordinary numerator of `u` and `v` restricted to `N`,
//!   `S_N`, computed by sorting: with the `k` pairs sorted by `(u, v)`,
//!   `S_N = P − T_u − T_v + T_uv − 2·I`, where `P = k(k−1)/2`, `T_u`, `T_v`
//!   and `T_uv` count the pairs of `N` tied in `u`, in `v` and in both, and
//!   `I` the strict inversions of the sorted `v` sequence (discordant
//!   pairs: a pair tied in `u` is sorted by `v`, so never inverted);
//! - `a ∈ N`, `b ∈ Z`: `sgn(u_a − z) · sgn(v_a − v_b)`; summed over `b ∈ Z`
//!   this is `sgn(u_a − z) · (D_v(a) − E_v(a))`, where
//!   `D_v(a) = Σ_{all b} sgn(v_a − v_b)` = (samples below `v_a`) − (samples
//!   above `v_a`) depends on `v` alone (a table by rank, built once per gene
//!   from its sample order: [`ZeroShape`]) and
//!   `E_v(a) = Σ_{b ∈ N} sgn(v_a − v_b)` is read off `v` restricted to `N`,
//!   sorted.
//!
//! So `S = S_N + Σ_{a ∈ N} sgn(u_a − z) · (D_v(a) − E_v(a))`: one sort of
//! the `k` pairs `(v_a, u_a)` (its runs of equal `v` give `E_v`, `T_v` and,
//! with `u`, `T_uv`; the strict inversions of its `u` sequence are the
//! discordant pairs, symmetrically to the above) and a merge count, O(k log k). `S` is
//! symmetric, so the gene with fewer samples outside its largest tie group
//! plays `u`. In `u`'s sample order (ascending rank) the largest group is
//! one run `order[lo..hi]`: the samples before it are below `z`, those after
//! above. Integers throughout: the same `S` as every other kernel, bit for
//! bit.
//!
//! For complete genes only: `SET kendall.kernel = 'zero'` hands pairs
//! touching a gene with missing values to VSE. `auto` chooses it by the
//! share of samples outside the genes' largest tie groups ([`prefer`]).

use std::ops::Range;

use super::KernelKind;
use super::gse::count_inversions;
use crate::input::RankedMatrix;

/// Where `auto` trades VSE for the zero-inflated kernel: at most this mean
/// share of samples outside each gene's largest tie group. Measured with
/// `cargo bench --bench kernels -- 310 1000 2000 20000 zeros=F vse zero
/// bitset` on a 2-core AMD EPYC Zen 3 (AVX2), pairs/s per core: zero passes
/// AVX2 VSE near 70 % zeros at every n (n = 2,000: 1.68e4 against 4.11e4 at
/// 50 %, 4.23e4 against 4.07e4 at 70 %, 8.02e4 against 3.95e4 at 80 %,
/// 4.95e5 against 3.92e4 at 95 %; n = 20,000 at 95 %: 3.45e4 against
/// 2.79e3); 25 % leaves a margin.
pub const VSE_MAX_OUTSIDE: f64 = 0.25;

/// Where `auto` trades the bit-plane kernel for the zero-inflated one: at
/// most this mean share outside the largest tie groups, and at least
/// [`BITSET_MIN_SAMPLES`] samples. Same bench: zero passes AVX2 bitset at
/// n = 2,000 between 70 and 80 % zeros (8.02e4 against 4.78e4 at 80 %), at
/// n = 1,000 near 85 % (2.66e5 against 2.45e5), and not at n = 310 even at
/// 90 % (1.76e6 against 2.50e6).
pub const BITSET_MAX_OUTSIDE: f64 = 0.10;

/// See [`BITSET_MAX_OUTSIDE`].
pub const BITSET_MIN_SAMPLES: usize = 1000;

/// Whether `auto` could switch `kernel` for `samples` samples to the
/// zero-inflated kernel once the data is seen.
pub fn may_prefer(kernel: KernelKind, samples: usize) -> bool {
    match kernel {
        KernelKind::Vse => true,
        KernelKind::Bitset => samples >= BITSET_MIN_SAMPLES,
        _ => false,
    }
}

/// The kernel `auto` runs on `m`, having chosen `kernel` by its shape: the
/// zero-inflated one when the genes' mean share of samples outside their
/// largest tie group is at most [`VSE_MAX_OUTSIDE`] (instead of VSE) or
/// [`BITSET_MAX_OUTSIDE`] (instead of the bit-plane kernel, from
/// [`BITSET_MIN_SAMPLES`] samples). Not with missing values, whose pairs
/// the zero-inflated kernel hands to VSE.
pub fn prefer(kernel: KernelKind, m: &RankedMatrix) -> KernelKind {
    let n = m.samples();
    if !may_prefer(kernel, n) || m.any_gaps() || m.genes() == 0 || n == 0 {
        return kernel;
    }
    let outside: usize = (0..m.genes())
        .map(|g| n - ZeroShape::largest_run(m.ranks(g), m.order(g)).len())
        .sum();
    let share = outside as f64 / (m.genes() as f64 * n as f64);
    let limit = match kernel {
        KernelKind::Bitset => BITSET_MAX_OUTSIDE,
        _ => VSE_MAX_OUTSIDE,
    };
    if share <= limit {
        KernelKind::Zero
    } else {
        kernel
    }
}

/// What the zero-inflated numerator keeps per gene, from one walk over its
/// sample order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeroShape {
    /// The run of the sample order holding the largest tie group (the first
    /// such run when several are equally long).
    pub run: Range<usize>,
    /// Per dense rank `r`: (samples ranked below `r`) − (samples ranked
    /// above `r`), i.e. `Σ_b sgn(r − rank_b)` over all samples.
    pub dominance: Vec<i32>,
}

impl ZeroShape {
    /// The run of `order` holding a gene's largest tie group (the first such
    /// run when several are equally long), without the dominance table.
    pub fn largest_run(ranks: &[u32], order: &[u32]) -> Range<usize> {
        let mut best = 0..0;
        let mut start = 0;
        for p in 1..=order.len() {
            if p == order.len() || ranks[order[p] as usize] != ranks[order[start] as usize] {
                if p - start > best.len() {
                    best = start..p;
                }
                start = p;
            }
        }
        best
    }

    /// The shape of a gene with dense ranks `ranks` (every sample present)
    /// and samples `order`ed by ascending rank.
    pub fn new(ranks: &[u32], order: &[u32]) -> Self {
        let n = order.len();
        let mut run = 0..0;
        let mut dominance = Vec::new();
        let mut start = 0;
        for p in 1..=n {
            let rank = ranks[order[start] as usize];
            if p == n || ranks[order[p] as usize] != rank {
                if p - start > run.len() {
                    run = start..p;
                }
                // Dense ranks: run after run, rank after rank.
                debug_assert_eq!(dominance.len(), rank as usize);
                dominance.push((start + p) as i32 - n as i32);
                start = p;
            }
        }
        ZeroShape { run, dominance }
    }
}

/// One gene as the zero-inflated numerator reads it.
#[derive(Debug, Clone)]
pub struct ZeroGene<'a> {
    /// Dense ranks, by sample (every sample present).
    pub ranks: &'a [u32],
    /// Samples in ascending (rank, index) order.
    pub order: &'a [u32],
    /// Its [`ZeroShape`].
    pub shape: &'a ZeroShape,
}

impl ZeroGene<'_> {
    /// Samples outside the largest tie group.
    fn others(&self) -> usize {
        self.order.len() - self.shape.run.len()
    }
}

/// Scratch space of the zero-inflated numerator, reused across pairs.
#[derive(Debug, Default)]
pub struct Zero {
    pairs: Vec<(u32, u32)>,
    seq: Vec<u32>,
    tmp: Vec<u32>,
}

/// Pairs among `len` items.
fn pairs_of(len: usize) -> i64 {
    (len as i64) * (len as i64 - 1) / 2
}

/// Pairs within runs of equal values of a sorted sequence.
fn tied_pairs<T: PartialEq>(sorted: impl Iterator<Item = T>) -> i64 {
    let mut total = 0i64;
    let mut run = 0usize;
    let mut last: Option<T> = None;
    for x in sorted {
        if last.as_ref() == Some(&x) {
            run += 1;
        } else {
            total += pairs_of(run);
            run = 1;
            last = Some(x);
        }
    }
    total + pairs_of(run)
}

impl Zero {
    /// `S` of two complete genes in O(k log k), `k` the fewer samples outside
    /// either gene's largest tie group (see the module docs).
    pub fn numerator(&mut self, a: ZeroGene<'_>, b: ZeroGene<'_>) -> i64 {
        debug_assert_eq!(a.ranks.len(), b.ranks.len());
        // The sparser gene plays u.
        let (u, v) = if b.others() < a.others() {
            (b, a)
        } else {
            (a, b)
        };
        let k = u.others();
        if k == 0 {
            return 0;
        }
        let z = u.ranks[u.order[u.shape.run.start] as usize];
        let below = &u.order[..u.shape.run.start];
        let above = &u.order[u.shape.run.end..];
        // N's pairs sorted by (v, u): one sort gives E_v (from the runs of
        // equal v), the pairs tied in v and in both, and, as the strict
        // inversions of the u sequence, the discordant pairs of N.
        self.pairs.clear();
        self.pairs.extend(
            below
                .iter()
                .chain(above)
                .map(|&s| (v.ranks[s as usize], u.ranks[s as usize])),
        );
        self.pairs.sort_unstable();
        let pairs = &self.pairs;
        let (mut cross, mut tied_v) = (0i64, 0i64);
        let mut start = 0;
        while start < k {
            let va = pairs[start].0;
            let end = start + pairs[start..].partition_point(|p| p.0 == va);
            // Σ_{b ∈ N} sgn(v_a − v_b) for every a of the run.
            let e = start as i64 - (k - end) as i64;
            let d_minus_e = i64::from(v.shape.dominance[va as usize]) - e;
            let signs: i64 = pairs[start..end]
                .iter()
                .map(|p| i64::from(p.1 > z) - i64::from(p.1 < z))
                .sum();
            cross += signs * d_minus_e;
            tied_v += pairs_of(end - start);
            start = end;
        }
        let tied_both = tied_pairs(pairs.iter());
        self.seq.clear();
        self.seq.extend(pairs.iter().map(|p| p.1));
        self.tmp.resize(k, 0);
        let discordant = count_inversions(&mut self.seq, &mut self.tmp) as i64;
        // Sorted now: the pairs of N tied in u.
        let tied_u = tied_pairs(self.seq.iter());
        let s_n = pairs_of(k) - tied_u - tied_v + tied_both - 2 * discordant;
        s_n + cross
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::RankedMatrix;
    use crate::kernel::naive;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A gene of `n` values: a fraction `zeros` of them 0, the rest drawn
    /// from `levels` values (few levels: many ties outside the zeros too).
    fn gene(rng: &mut SmallRng, n: usize, zeros: f64, levels: u32) -> Vec<f64> {
        (0..n)
            .map(|_| {
                if rng.random_bool(zeros) {
                    0.0
                } else {
                    f64::from(rng.random_range(1..=levels))
                        * if rng.random_bool(0.1) { -1.0 } else { 1.0 }
                }
            })
            .collect()
    }

    #[test]
    fn equals_the_naive_kernel_with_every_tie_pattern() {
        let mut rng = SmallRng::seed_from_u64(13);
        let mut zero = Zero::default();
        for case in 0..400 {
            let n = rng.random_range(2..400);
            let zeros = [0.0, 0.3, 0.9, 0.99, 1.0][case % 5];
            let levels = [2, 5, 1000][case % 3];
            let values: Vec<f64> = (0..2)
                .flat_map(|_| gene(&mut rng, n, zeros, levels))
                .collect();
            let m = RankedMatrix::from_values(2, n, &values);
            let shapes: Vec<ZeroShape> = (0..2)
                .map(|g| ZeroShape::new(m.ranks(g), m.order(g)))
                .collect();
            let gene = |g: usize| ZeroGene {
                ranks: m.ranks(g),
                order: m.order(g),
                shape: &shapes[g],
            };
            let expected = naive::numerator(m.ranks(0), m.ranks(1));
            assert_eq!(
                zero.numerator(gene(0), gene(1)),
                expected,
                "case {case}, n = {n}"
            );
            assert_eq!(
                zero.numerator(gene(1), gene(0)),
                expected,
                "case {case} swapped"
            );
        }
    }

    #[test]
    fn the_shape_of_a_gene() {
        // Values (0, 3, 0, 1, 0, 3): ranks (0, 2, 0, 1, 0, 2), order by rank.
        let shape = ZeroShape::new(&[0, 2, 0, 1, 0, 2], &[0, 2, 4, 3, 1, 5]);
        assert_eq!(shape.run, 0..3);
        // rank 0: 0 below, 3 above; rank 1: 3 below, 2 above; rank 2: 4 below.
        assert_eq!(shape.dominance, vec![-3, 1, 4]);
        // Two largest groups: the first run.
        assert_eq!(ZeroShape::new(&[1, 1, 0, 0], &[2, 3, 0, 1]).run, 0..2);
        assert_eq!(ZeroShape::new(&[], &[]).run, 0..0);
    }

    #[test]
    fn auto_prefers_it_for_zero_inflated_data() {
        let mut rng = SmallRng::seed_from_u64(5);
        let matrix = |n: usize, zeros: f64, rng: &mut SmallRng| {
            let values: Vec<f64> = (0..8).flat_map(|_| gene(rng, n, zeros, 1000)).collect();
            RankedMatrix::from_values(8, n, &values)
        };
        let sparse = matrix(2000, 0.95, &mut rng);
        assert_eq!(prefer(KernelKind::Vse, &sparse), KernelKind::Zero);
        assert_eq!(prefer(KernelKind::Bitset, &sparse), KernelKind::Zero);
        assert_eq!(prefer(KernelKind::Naive, &sparse), KernelKind::Naive);
        let dense = matrix(2000, 0.3, &mut rng);
        assert_eq!(prefer(KernelKind::Vse, &dense), KernelKind::Vse);
        // 80 % zeros: past VSE's crossover, not the bit-plane kernel's.
        let middling = matrix(2000, 0.8, &mut rng);
        assert_eq!(prefer(KernelKind::Vse, &middling), KernelKind::Zero);
        assert_eq!(prefer(KernelKind::Bitset, &middling), KernelKind::Bitset);
        // Few samples: the bit-plane kernel stays.
        let small = matrix(310, 0.95, &mut rng);
        assert_eq!(prefer(KernelKind::Bitset, &small), KernelKind::Bitset);
        // Missing values: VSE stays (the zero-inflated kernel would hand
        // their pairs to it anyway).
        let mut values: Vec<f64> = (0..8).flat_map(|_| gene(&mut rng, 2000, 0.95, 9)).collect();
        values[3] = f64::NAN;
        let gappy = RankedMatrix::from_values(8, 2000, &values);
        assert_eq!(prefer(KernelKind::Vse, &gappy), KernelKind::Vse);
    }
}

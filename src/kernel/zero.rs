//! The zero-inflated numerator: for single-cell data, where most of a gene's
//! values are one tie group (zero counts), a pair costs O(n/64 + k log k) in
//! the k samples outside both genes' largest tie groups instead of
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
//! So `S = S_N + Σ_{a ∈ N} sgn(u_a − z) · (D_v(a) − E_v(a))`. The same split
//! applied to `v` inside `N` leaves only the samples outside *both* genes'
//! largest groups to be sorted. Let `z'` be `v`'s largest group's value,
//! `N_Z` the samples of `N` with `v = z'` and `N_O` the other `k'`:
//!
//! - `S_N = S_{N_O} + Σ_{a ∈ N_O} sgn(v_a − z') · (F(a) − G(a))`: pairs of
//!   `N_Z` are tied in `v`; a pair `a ∈ N_O`, `b ∈ N_Z` gives
//!   `sgn(u_a − u_b) · sgn(v_a − z')`, and over `b ∈ N_Z`
//!   `Σ sgn(u_a − u_b) = F(a) − G(a)` with
//!   `F(a) = Σ_{b ∈ N} sgn(u_a − u_b) = D_u(a) − |Z| · sgn(u_a − z)` and
//!   `G(a) = Σ_{b ∈ N_O} sgn(u_a − u_b)`;
//! - in the `Z` term, every `a ∈ N_Z` has `D_v(a) = D_v(z')` and
//!   `E_v(a) = e₀ = Σ_{b ∈ N_O} sgn(z' − v_b)`, so those samples give
//!   `(D_v(z') − e₀) · (σ − σ_O)` with `σ = Σ_{a ∈ N} sgn(u_a − z)`
//!   (above minus below `z`, per gene) and `σ_O` the same sum over `N_O`;
//!   each `a ∈ N_O` has `E_v(a) = |N_Z| · sgn(v_a − z') + H(a)`,
//!   `H(a) = Σ_{b ∈ N_O} sgn(v_a − v_b)`.
//!
//! `N_O` is the AND of the two genes' bitmaps of samples outside their
//! largest groups (kept per gene in [`ZeroShape`], n/64 words); `G`, `H`,
//! `S_{N_O}` and its ties come from one sort of the `k'` pairs `(v_a, u_a)`
//! (runs of equal `v` give `H`, `T_v` and `T_uv`; the strict inversions of
//! its `u` sequence are the discordant pairs, and that sequence, sorted by
//! the inversion count, gives `T_u` and `G`). A pair costs
//! O(n/64 + k' log k'): with 95 % zeros in both genes `k'` is about 0.25 %
//! of n. In `u`'s sample order (ascending rank) the largest group is one
//! run `order[lo..hi]`: the samples before it are below `z`, those after
//! above. Integers throughout: the same `S` as every other kernel, bit for
//! bit.
//!
//! For complete genes only: `SET kendall.kernel = 'zero'` hands pairs
//! touching a gene with missing values to VSE. `auto` chooses it by the
//! share of samples outside the genes' largest tie groups ([`prefer`]).

use std::ops::Range;

use super::KernelKind;
use super::bound::PairRange;
use super::gse::count_inversions;
use crate::rank::{RankedMatrix, SparseGene};

/// Where `auto` trades VSE for the zero-inflated kernel: at most this mean
/// share of samples outside each gene's largest tie group. Measured with
/// `cargo bench --bench kernels -- 2000 20000 zeros=F vse zero bitset` on a
/// 2-core AMD EPYC Zen 5, pairs/s per core: zero passes AVX-512 VSE near
/// 63 % zeros and AVX2 VSE near 55 % (n = 2,000, 50 %: 4.81e4 against 8.99e4
/// AVX-512 and 5.92e4 AVX2; 65 %: 9.55e4 against 8.52e4 and 5.74e4; 70 %:
/// 1.30e5 against 8.43e4 and 5.73e4; n = 20,000, 65 %: 8.30e3 against
/// 5.98e3 and 4.12e3). 30 % outside (70 % zeros) keeps a margin on either
/// instruction set, with ties too.
pub const VSE_MAX_OUTSIDE: f64 = 0.30;

/// Where `auto` trades the bit-plane kernel for the zero-inflated one, by
/// the number of samples n (none below [`BITSET_MIN_SAMPLES`]): at most
/// this mean share outside the largest tie groups. Same bench, Zen 5,
/// AVX-512 bitset (AVX2 bitset is slower, so the rule is safe for it):
/// n = 2,000: zero draws level near 70 % zeros (1.30e5 against 1.28e5) and
/// wins at 80 % (3.17e5 against 1.33e5): 25 % from n = 2,000; n = 1,000:
/// between 80 and 90 % (7.21e5 against 8.88e5 at 80 %, 3.22e6 against
/// 8.75e5 at 90 %): 10 % below n = 2,000.
pub fn bitset_max_outside(samples: usize) -> f64 {
    if samples >= 2000 { 0.25 } else { 0.10 }
}

/// See [`bitset_max_outside`]. Below 1,000 samples the same 10 % holds
/// (whole queries on one group of cells of synthetic counts, 2,000 genes,
/// `kendall.kernel` forced, AMD EPYC Zen 3, AVX2; kernel time, bit-plane
/// against zero-inflated): 95 % zeros, n = 972: 95 s against 0.87 s; n =
/// 500: 24.6 s against 0.42 s; n = 125: 1.46 s against 0.23 s; 90 % zeros,
/// n = 500: 28.5 s against 1.38 s; n = 250: 7.6 s against 0.85 s; 80 %
/// zeros, n = 125: 1.30 s against 1.06 s; 60 % zeros, n = 125: 1.60 s
/// against 4.29 s (the bit-plane kernel, as the 10 % rule keeps it). The
/// smallest n measured is the bound: per-cluster jobs (clusters of a few
/// hundred cells) must not fall back to a kernel ten times slower.
pub const BITSET_MIN_SAMPLES: usize = 125;

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
/// [`bitset_max_outside`] (instead of the bit-plane kernel, from
/// [`BITSET_MIN_SAMPLES`] samples). Not with missing values, whose pairs
/// the zero-inflated kernel hands to VSE.
pub fn prefer(kernel: KernelKind, m: &RankedMatrix) -> KernelKind {
    let n = m.samples();
    if !may_prefer(kernel, n) || m.any_gaps() || m.genes() == 0 || n == 0 {
        return kernel;
    }
    let outside: usize = (0..m.genes()).map(|g| n - m.largest_group(g)).sum();
    let share = outside as f64 / (m.genes() as f64 * n as f64);
    let limit = match kernel {
        KernelKind::Bitset => bitset_max_outside(n),
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
    /// Bit `s` set when sample `s` is outside the largest tie group.
    pub outside: Vec<u64>,
    /// Rank of the largest tie group (0 without samples).
    pub z: u32,
    /// Samples above the largest tie group minus samples below it:
    /// `Σ_{a outside} sgn(u_a − z)`.
    pub sigma: i64,
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
        let mut outside = vec![0u64; n.div_ceil(64)];
        for &sample in order[..run.start].iter().chain(&order[run.end..]) {
            outside[sample as usize / 64] |= 1 << (sample % 64);
        }
        let z = order.get(run.start).map_or(0, |&s| ranks[s as usize]);
        let sigma = (n - run.end) as i64 - run.start as i64;
        ZeroShape {
            run,
            dominance,
            outside,
            z,
            sigma,
        }
    }
}

impl ZeroShape {
    /// The shape of a sparse gene, without the bitmap (`outside` is
    /// empty): its group is the zeros when it has any (whatever the
    /// largest: the derivation holds for any group), else its first largest
    /// group.
    pub fn of_sparse(gene: &SparseGene<'_>) -> Self {
        let n = gene.samples();
        let mut run = 0..0;
        let mut z = 0;
        let mut dominance = Vec::new();
        gene.for_each_run(|rank, range, cells| {
            debug_assert_eq!(dominance.len(), rank as usize);
            dominance.push((range.start + range.end) as i32 - n as i32);
            let chosen = if gene.zeros > 0 {
                cells.is_none()
            } else {
                range.len() > run.len()
            };
            if chosen {
                (run, z) = (range, rank);
            }
        });
        let sigma = (n - run.end) as i64 - run.start as i64;
        ZeroShape {
            run,
            dominance,
            outside: Vec::new(),
            z,
            sigma,
        }
    }
}

/// The first gene of the pairs of a sparse matrix, expanded for
/// [`Zero::numerator_sparse`]: its ranks at its samples outside its group
/// and a bitmap of those samples.
#[derive(Debug, Default)]
pub struct SparseRow {
    gene: Option<usize>,
    ranks: Vec<u32>,
    outside: Vec<u64>,
}

/// One gene as the zero-inflated numerator reads it.
#[derive(Debug, Clone)]
pub struct ZeroGene<'a> {
    /// Dense ranks, by sample (every sample present).
    pub ranks: &'a [u32],
    /// Its [`ZeroShape`].
    pub shape: &'a ZeroShape,
}

/// Scratch space of the zero-inflated numerator, reused across pairs.
#[derive(Debug, Default)]
pub struct Zero {
    keys: Vec<u64>,
    scratch: Vec<u64>,
    seq: Vec<u32>,
    tmp: Vec<u32>,
    /// By u's rank: `G` of the samples with that rank (only the ranks of
    /// the current pair's samples are written, then read).
    by_rank: Vec<i32>,
}

/// Pairs among `len` items.
fn pairs_of(len: usize) -> i64 {
    (len as i64) * (len as i64 - 1) / 2
}

impl Zero {
    /// `S` of two complete genes in O(n/64 + k log k), `k` the samples
    /// outside both genes' largest tie groups (see the module docs).
    pub fn numerator(&mut self, u: ZeroGene<'_>, v: ZeroGene<'_>) -> i64 {
        self.numerator_bounded(u, v, None).unwrap_or_default()
    }

    /// [`Zero::numerator`], or `None` when `exit` shows before the sort
    /// that `S` cannot pass a filter (see [`ZeroExit`]).
    pub fn numerator_bounded(
        &mut self,
        u: ZeroGene<'_>,
        v: ZeroGene<'_>,
        exit: Option<&ZeroExit>,
    ) -> Option<i64> {
        debug_assert_eq!(u.ranks.len(), v.ranks.len());
        let (su, sv) = (u.shape, v.shape);
        if u.ranks.is_empty() {
            return Some(0);
        }
        // N_O: the samples outside both largest groups, as (v, u) ranks.
        // Keys `v << 32 | u`: sorted, they order N_O by (v, u).
        self.keys.clear();
        for (w, (&a, &b)) in su.outside.iter().zip(&sv.outside).enumerate() {
            let mut bits = a & b;
            while bits != 0 {
                let sample = w * 64 + bits.trailing_zeros() as usize;
                self.keys
                    .push(u64::from(v.ranks[sample]) << 32 | u64::from(u.ranks[sample]));
                bits &= bits - 1;
            }
        }
        self.finish(u.ranks.len(), su, sv, exit)
    }

    /// `S` of genes `i` and `j` of a sparse matrix, whose shapes are `su`
    /// and `sv` ([`ZeroShape::of_sparse`]), in O(k_i + k_j + k log k) for
    /// `k_i`, `k_j` samples outside their groups; `row` keeps gene `i`
    /// expanded while the next pair has it.
    pub fn numerator_sparse(
        &mut self,
        m: &RankedMatrix,
        row: &mut SparseRow,
        (i, su): (usize, &ZeroShape),
        (j, sv): (usize, &ZeroShape),
    ) -> i64 {
        self.numerator_sparse_bounded(m, row, (i, su), (j, sv), None)
            .unwrap_or_default()
    }

    /// [`Zero::numerator_sparse`], or `None` when `exit` shows before the
    /// sort that `S` cannot pass a filter (see [`ZeroExit`]).
    pub fn numerator_sparse_bounded(
        &mut self,
        m: &RankedMatrix,
        row: &mut SparseRow,
        (i, su): (usize, &ZeroShape),
        (j, sv): (usize, &ZeroShape),
        exit: Option<&ZeroExit>,
    ) -> Option<i64> {
        let n = m.samples();
        let (Some(u), Some(v)) = (m.sparse_gene(i), m.sparse_gene(j)) else {
            return Some(0);
        };
        if row.gene != Some(i) {
            row.ranks.resize(n, 0);
            row.outside.clear();
            row.outside.resize(n.div_ceil(64), 0);
            // Outside the group: the listed samples of another rank (the
            // zeros, when there are any, are the group).
            for (&a, &r) in u.cells.iter().zip(u.ranks) {
                if r != su.z {
                    row.ranks[a as usize] = r;
                    row.outside[a as usize / 64] |= 1 << (a % 64);
                }
            }
            row.gene = Some(i);
        }
        self.keys.clear();
        for (&a, &vr) in v.cells.iter().zip(v.ranks) {
            if vr != sv.z && row.outside[a as usize / 64] >> (a % 64) & 1 == 1 {
                self.keys
                    .push(u64::from(vr) << 32 | u64::from(row.ranks[a as usize]));
            }
        }
        self.finish(n, su, sv, exit)
    }

    /// `S` from the samples outside both genes' groups, in `keys` as
    /// `v << 32 | u` ranks (see the module docs), for genes of `n` samples
    /// with shapes `su` and `sv`; `None` when `exit` stops it before the
    /// sort.
    fn finish(
        &mut self,
        n: usize,
        su: &ZeroShape,
        sv: &ZeroShape,
        exit: Option<&ZeroExit>,
    ) -> Option<i64> {
        let (zu, zv) = (su.z, sv.z);
        let k = self.keys.len();
        let (key_v, key_u) = (|x: u64| (x >> 32) as u32, |x: u64| x as u32);
        // |N_Z|: samples outside u's largest group inside v's.
        let n_z = (n - su.run.len() - k) as i64;
        let z_u = su.run.len() as i64;
        let sgn = |x: u32, z: u32| i64::from(x > z) - i64::from(x < z);
        // Terms that need each sample of N_O alone.
        let (mut sigma_o, mut e0, mut within_n, mut with_z) = (0i64, 0i64, 0i64, 0i64);
        for &key in &self.keys {
            let (vr, ur) = (key_v(key), key_u(key));
            let (su_a, sv_a) = (sgn(ur, zu), sgn(vr, zv));
            sigma_o += su_a;
            e0 -= sv_a;
            within_n += sv_a * (i64::from(su.dominance[ur as usize]) - z_u * su_a);
            with_z += su_a * (i64::from(sv.dominance[vr as usize]) - n_z * sv_a);
        }
        let dz_v = i64::from(sv.dominance[zv as usize]);
        let mut s = (dz_v - e0) * (su.sigma - sigma_o) + within_n + with_z;
        if k < 2 {
            return Some(s);
        }
        // What the sort adds lies within ±5·k(k−1)/2 ([`ZeroExit`]).
        if let Some(exit) = exit {
            let rest = 5 * pairs_of(k);
            let (lo, hi) = ((s - rest).max(-exit.cap), (s + rest).min(exit.cap));
            if !exit.range.reachable(lo, hi) {
                return None;
            }
        }
        // Terms among the samples of N_O: sorted by (v, u), the runs of
        // equal v give H(a) = Σ_{b ∈ N_O} sgn(v_a − v_b) and the pairs tied
        // in v and in both; the strict inversions of the u sequence are the
        // discordant pairs.
        let bits = |distinct: usize| usize::BITS - distinct.saturating_sub(1).leading_zeros();
        sort_keys(
            &mut self.keys,
            &mut self.scratch,
            bits(su.dominance.len()),
            bits(sv.dominance.len()),
        );
        let keys = &self.keys;
        let (mut tied_v, mut tied_both) = (0i64, 0i64);
        let mut start = 0;
        while start < k {
            let va = key_v(keys[start]);
            let mut end = start + 1;
            let mut same = 1usize;
            let mut signs = sgn(key_u(keys[start]), zu);
            while end < k && key_v(keys[end]) == va {
                same = if keys[end] == keys[end - 1] {
                    same + 1
                } else {
                    tied_both += pairs_of(same);
                    1
                };
                signs += sgn(key_u(keys[end]), zu);
                end += 1;
            }
            tied_both += pairs_of(same);
            let h = start as i64 - (k - end) as i64;
            s -= signs * h;
            tied_v += pairs_of(end - start);
            start = end;
        }
        self.seq.clear();
        self.seq.extend(keys.iter().map(|&x| key_u(x)));
        self.tmp.resize(k, 0);
        let discordant = count_inversions(&mut self.seq, &mut self.tmp) as i64;
        // Sorted now: the pairs of N_O tied in u, and G(a) = Σ_{b ∈ N_O} sgn(u_a − u_b).
        let sorted = &self.seq;
        if self.by_rank.len() < su.dominance.len() {
            self.by_rank.resize(su.dominance.len(), 0);
        }
        let mut tied_u = 0i64;
        let mut start = 0;
        while start < k {
            let ua = sorted[start];
            let mut end = start + 1;
            while end < k && sorted[end] == ua {
                end += 1;
            }
            self.by_rank[ua as usize] = (start as i64 - (k - end) as i64) as i32;
            tied_u += pairs_of(end - start);
            start = end;
        }
        for &key in keys {
            s -= sgn(key_v(key), zv) * i64::from(self.by_rank[key_u(key) as usize]);
        }
        Some(s + pairs_of(k) - tied_u - tied_v + tied_both - 2 * discordant)
    }
}

/// A filter's bound on one pair for the zero-inflated kernel, checked once
/// the linear pass over `N_O` (the `k` samples outside both genes' largest
/// groups) is done and before their sort.
///
/// After that pass `S = s₀ + R` with `s₀` known and
/// `R = −Σ_{a∈N_O} sgn(u_a − z)·H(a) − Σ_{a∈N_O} sgn(v_a − z')·G(a) + S_{N_O}`
/// (module docs). `|H(a)|` and `|G(a)|` are sums of `k − 1` signs, so the
/// first two sums are at most `k(k − 1)` each, and `|S_{N_O}| ≤ k(k − 1)/2`:
/// `|R| ≤ 5·k(k − 1)/2`. With `|S| ≤ cap = n0 − max(n1, n2)` as well, a pair
/// whose `[s₀ − |R|max, s₀ + |R|max] ∩ [−cap, cap]` meets none of the
/// filter's ranges ([`PairRange::reachable`]) is stopped; the others are
/// computed to the end, the same integers as without a bound. There is no
/// finer point to stop at: the sort and the merge count of inversions are
/// the rest of the work, and the inversions are only known at its end.
#[derive(Debug, Clone, Copy)]
pub struct ZeroExit {
    /// The pair's `S` that may pass ([`super::bound::SBound::pair`]).
    pub range: PairRange,
    /// `n0 − max(n1, n2)`.
    pub cap: i64,
}

/// Sorts keys `v << 32 | u` whose `u` has `u_bits` and `v` `v_bits`
/// significant bits: a least-significant-digit radix sort by bytes when
/// there are enough keys to pay for its counts, else a comparison sort.
fn sort_keys(keys: &mut Vec<u64>, scratch: &mut Vec<u64>, u_bits: u32, v_bits: u32) {
    if keys.len() <= 256 {
        keys.sort_unstable();
        return;
    }
    let shifts = (0..u_bits.div_ceil(8))
        .map(|d| d * 8)
        .chain((0..v_bits.div_ceil(8)).map(|d| 32 + d * 8));
    scratch.resize(keys.len(), 0);
    for shift in shifts {
        let mut counts = [0usize; 256];
        for &x in keys.iter() {
            counts[((x >> shift) & 0xff) as usize] += 1;
        }
        let mut next = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = next;
            next += here;
        }
        for &x in keys.iter() {
            let digit = ((x >> shift) & 0xff) as usize;
            scratch[counts[digit]] = x;
            counts[digit] += 1;
        }
        std::mem::swap(keys, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::naive;
    use crate::rank::RankedMatrix;
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
        for case in 0..460 {
            // Some long genes too: many words of the bitmaps.
            let n = if case < 400 {
                rng.random_range(2..400)
            } else {
                rng.random_range(400..6000)
            };
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
        // 80 % zeros: past VSE's crossover, and the bit-plane kernel's from
        // 2,000 samples on, not at 1,000.
        let middling = matrix(2000, 0.8, &mut rng);
        assert_eq!(prefer(KernelKind::Vse, &middling), KernelKind::Zero);
        assert_eq!(prefer(KernelKind::Bitset, &middling), KernelKind::Zero);
        let shorter = matrix(1000, 0.8, &mut rng);
        assert_eq!(prefer(KernelKind::Bitset, &shorter), KernelKind::Bitset);
        assert_eq!(prefer(KernelKind::Vse, &shorter), KernelKind::Zero);
        // A cluster's few hundred cells, 95 % zeros: the zero-inflated
        // kernel (it was ten times faster there); 80 % zeros, or fewer
        // samples than BITSET_MIN_SAMPLES: the bit-plane kernel stays.
        let cluster = matrix(310, 0.95, &mut rng);
        assert_eq!(prefer(KernelKind::Bitset, &cluster), KernelKind::Zero);
        let middling_cluster = matrix(310, 0.8, &mut rng);
        assert_eq!(
            prefer(KernelKind::Bitset, &middling_cluster),
            KernelKind::Bitset
        );
        let small = matrix(BITSET_MIN_SAMPLES - 1, 0.95, &mut rng);
        assert_eq!(prefer(KernelKind::Bitset, &small), KernelKind::Bitset);
        // Missing values: VSE stays (the zero-inflated kernel would hand
        // their pairs to it anyway).
        let mut values: Vec<f64> = (0..8).flat_map(|_| gene(&mut rng, 2000, 0.95, 9)).collect();
        values[3] = f64::NAN;
        let gappy = RankedMatrix::from_values(8, 2000, &values);
        assert_eq!(prefer(KernelKind::Vse, &gappy), KernelKind::Vse);
    }
}

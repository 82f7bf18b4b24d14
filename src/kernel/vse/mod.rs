//! VSE, the vectorised sorting-enabled kernel (Liu, Pan, Green, Aluru,
//! "Parallelized Kendall's Tau Coefficient Computation via SIMD Vectorized
//! Sorting On Many-Integrated-Core Processors").
//!
//! The algorithm is GSE's ([`super::gse`]) on packed integers:
//!
//! 1. Order the samples by `(u, v)`. Without amortisation
//!    ([`Vse::numerator_unamortised`]) the packed keys `u << 16 | v` (u32,
//!    n ≤ 65,535) or `u << 32 | v` (u64) are fully sorted, as in the paper.
//!    [`Vse::numerator`] reuses the per-gene order of `u` across partners,
//!    so the keys in that order are already sorted by their high half and
//!    only runs of tied `u` need sorting: none without ties (the `v` values
//!    are gathered straight into the counting layout); each run on its own
//!    when ties are few; with many ties the packed keys are block-sorted by
//!    the vectorised block sort and only the runs straddling a block
//!    boundary are then sorted. The joint ties `n3` are counted on the way.
//! 2. Count the strict inversions `nd` of the `v` sequence with a bottom-up
//!    merge sort: blocks of registers sorted by bitonic networks, runs merged
//!    by streaming one register at a time through an in-register bitonic
//!    merge network, with the paper's predict-and-skip test.
//! 3. `S = n0 - n1 - n2 + n3 - 2·nd`.
//!
//! Counting inversions through a bitonic network: while sorting, values are
//! stored shifted left by one bit. Before each merge, bit 0 is set on the
//! elements of the right run and cleared on those of the left run, so equal
//! values from the left sort first and every element knows its origin. For
//! runs `L`, `R` the pairs `l > r` number `|L|·|R| + Σ idx_r − Σ pos_r`,
//! where `idx_r` is an element's index in `R` and `pos_r` its position in
//! the merged output: `Σ pos_r` is summed from the tagged lanes of every
//! register written (a masked add of the lane indices plus the register's
//! offset times its tag count). Runs are padded to whole registers with the
//! largest value, which never forms an inversion with the elements before it.
//!
//! The portable scalar path has the same layout and structure (insertion
//! sorted blocks, then branch-free counting merges) and is the reference
//! every SIMD path must equal.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod vector;

use super::gse;

pub use super::isa::Isa;

/// Sorting buffers are padded to a multiple of this many elements (the
/// widest register holds 16 u32).
const PAD: usize = 16;

/// Largest `n` whose ranks pack as `u << 16 | v` into a u32.
const MAX_U32_PACKED: usize = 65_535;

/// Largest `n` whose `v` ranks (`< n`) fit the u32 counting layout
/// `v << 1 | tag`.
const MAX_U32_COUNTED: usize = 1 << 31;

/// Padding of the u32 counting layout: `(2^31 - 1) << 1`, the largest value.
const SENTINEL_COUNT_U32: u32 = u32::MAX - 1;

/// Padding of the u64 counting layout: `(2^63 - 1) << 1`, the largest value.
const SENTINEL_COUNT_U64: u64 = u64::MAX - 1;

/// Runs of tied `u` up to this length are sorted by insertion.
const INSERTION_RUN: usize = 16;

/// With more than `n / DENSE_TIES` tied pairs in `u`, step 1 block-sorts the
/// packed keys instead of sorting each run of ties on its own (the block
/// sort costs about as much as n/8 runs; measured at n = 128, 310, 1000).
const DENSE_TIES: usize = 8;

/// `n` rounded up to whole padding blocks.
fn padded(n: usize) -> usize {
    n.div_ceil(PAD) * PAD
}

#[cfg(target_arch = "x86_64")]
/// `|L|·|R| + |R|(|R|-1)/2`: the inversion count of merging runs of these
/// lengths is this minus `Σ pos_r` (see the module documentation).
const fn merge_constant(left: u64, right: u64) -> u64 {
    left * right + right * right.saturating_sub(1) / 2
}

#[cfg(target_arch = "x86_64")]
/// The merge constants of a bitonic sort of a block of `lanes` elements
/// (merges of `1+1`, `2+2`, ... within the block).
const fn block_constant(lanes: u64) -> u64 {
    let mut total = 0;
    let mut s = 1;
    while s < lanes {
        total += (lanes / (2 * s)) * merge_constant(s, s);
        s *= 2;
    }
    total
}

/// Bottom-up merge passes over `buf`, whose runs of `width` elements are
/// sorted, ping-ponging with `tmp`. Returns the sum of `merge`'s counts and
/// whether the result ended in `tmp`.
fn merge_passes<T: Copy>(
    buf: &mut [T],
    tmp: &mut [T],
    mut width: usize,
    mut merge: impl FnMut(&[T], &[T], &mut [T]) -> u64,
) -> (u64, bool) {
    let n = buf.len();
    debug_assert_eq!(tmp.len(), n);
    let mut count = 0u64;
    let mut in_tmp = false;
    let (mut src, mut dst) = (buf, tmp);
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            if mid == end {
                dst[start..end].copy_from_slice(&src[start..end]);
            } else {
                let (left, right) = src[start..end].split_at(mid - start);
                count += merge(left, right, &mut dst[start..end]);
            }
            start = end;
        }
        std::mem::swap(&mut src, &mut dst);
        in_tmp = !in_tmp;
        width *= 2;
    }
    (count, in_tmp)
}

/// [`Ops::gather_packed`]'s pointer type.
type GatherPacked = unsafe fn(&[u32], &[u32], &[u32], &mut [u32]);

/// One instruction set's VSE paths, chosen once when a [`Vse`] is built
/// ([`Ops::new`], the way the memchr crate picks its implementation): the
/// hot path calls through these pointers, with no dispatch on [`Isa`] per
/// call. The per-ISA tables are the `OPS` constants of the `scalar` module
/// and of the SIMD modules (made by [`vector::entry_points`]).
///
/// The pointers are `unsafe fn`s because the SIMD ones require their CPU
/// features. An `Ops` is only obtained from [`Ops::new`], which refuses an
/// instruction set that is not available (its fields are private to this
/// module and its children, which only fill in the `OPS` constants): that
/// is what makes every call through it sound.
#[derive(Debug, Clone, Copy)]
struct Ops {
    isa: Isa,
    /// Strict inversions of a buffer in the u32 counting layout (length a
    /// multiple of [`PAD`]) while sorting it; whether it ended in `tmp`.
    count_u32: unsafe fn(&mut [u32], &mut [u32]) -> (u64, bool),
    /// `count_u32` for the u64 counting layout.
    count_u64: unsafe fn(&mut [u64], &mut [u64]) -> (u64, bool),
    /// Sorts any u32 values (length a multiple of [`PAD`]); whether the
    /// result ended in `tmp`.
    sort_u32: unsafe fn(&mut [u32], &mut [u32]) -> bool,
    /// `sort_u32` for u64 keys.
    sort_u64: unsafe fn(&mut [u64], &mut [u64]) -> bool,
    /// Sorts every block (length a multiple of [`PAD`]); the block length.
    sort_blocks_u32: unsafe fn(&mut [u32]) -> usize,
    /// `out[k] = values[order[k]]` (values below 2^31 entries).
    gather: unsafe fn(&[u32], &[u32], &mut [u32]),
    /// `out[k] = values[order[k]] << 1` (values below 2^31 entries).
    gather_shifted: unsafe fn(&[u32], &[u32], &mut [u32]),
    /// `out[k] = u[order[k]] << 16 | v[order[k]]` (u, v below 2^31 entries).
    gather_packed: GatherPacked,
    /// The equal-neighbour bits of `x[..k]` for a returned `k`.
    equal_neighbours: unsafe fn(&[u32], &mut [u64]) -> usize,
}

impl Ops {
    /// The paths of `isa`. Panics (assert) if `isa` is not available.
    fn new(isa: Isa) -> Self {
        assert!(
            isa.is_available(),
            "instruction set {} is not available on this CPU",
            isa.name()
        );
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::OPS,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::OPS,
            _ => scalar::OPS,
        }
    }

    /// Strict inversions of `buf` (u32 counting layout: values `v << 1`,
    /// bit 0 ignored; length a multiple of [`PAD`]) while sorting it; the
    /// sorted values end in `buf`, or in `tmp` when the flag is set.
    #[inline]
    fn count_u32(&self, buf: &mut [u32], tmp: &mut [u32]) -> (u64, bool) {
        debug_assert_eq!(buf.len() % PAD, 0);
        debug_assert_eq!(tmp.len(), buf.len());
        // SAFETY: `Ops::new` checked that the CPU supports `self.isa`; the
        // SIMD paths assert the length they need (a multiple of 16).
        unsafe { (self.count_u32)(buf, tmp) }
    }

    /// [`Ops::count_u32`] for the u64 counting layout.
    #[inline]
    fn count_u64(&self, buf: &mut [u64], tmp: &mut [u64]) -> (u64, bool) {
        debug_assert_eq!(buf.len() % PAD, 0);
        debug_assert_eq!(tmp.len(), buf.len());
        // SAFETY: as in `count_u32`.
        unsafe { (self.count_u64)(buf, tmp) }
    }

    /// Sorts `buf` (any values; length a multiple of [`PAD`]); the result
    /// ends in `buf`, or in `tmp` when it returns `true`.
    #[inline]
    fn sort_u32(&self, buf: &mut [u32], tmp: &mut [u32]) -> bool {
        debug_assert_eq!(buf.len() % PAD, 0);
        debug_assert_eq!(tmp.len(), buf.len());
        // SAFETY: as in `count_u32`.
        unsafe { (self.sort_u32)(buf, tmp) }
    }

    /// [`Ops::sort_u32`] for u64 keys.
    #[inline]
    fn sort_u64(&self, buf: &mut [u64], tmp: &mut [u64]) -> bool {
        debug_assert_eq!(buf.len() % PAD, 0);
        debug_assert_eq!(tmp.len(), buf.len());
        // SAFETY: as in `count_u32`.
        unsafe { (self.sort_u64)(buf, tmp) }
    }

    /// `out[k] = values[order[k]] << 1` (the u32 counting layout in
    /// `order`). Panics if an index of `order` is out of range.
    #[inline]
    fn gather_shifted(&self, values: &[u32], order: &[u32], out: &mut [u32]) {
        debug_assert_eq!(order.len(), out.len());
        if values.len() > i32::MAX as usize {
            return scalar::gather::<true>(values, order, out);
        }
        // SAFETY: `Ops::new` checked that the CPU supports `self.isa`; the
        // SIMD gathers index with i32 lanes, which reach every value here.
        unsafe { (self.gather_shifted)(values, order, out) }
    }

    /// Sorts every block of `buf` (any values; length a multiple of
    /// [`PAD`]) with the instruction set's block sort; returns the block
    /// length.
    #[inline]
    fn sort_blocks_u32(&self, buf: &mut [u32]) -> usize {
        debug_assert_eq!(buf.len() % PAD, 0);
        // SAFETY: as in `count_u32`.
        unsafe { (self.sort_blocks_u32)(buf) }
    }

    /// `out[k] = u[order[k]] << 16 | v[order[k]]`. Panics if an index is
    /// out of range.
    #[inline]
    fn gather_packed(&self, u: &[u32], v: &[u32], order: &[u32], out: &mut [u32]) {
        debug_assert_eq!(order.len(), out.len());
        if u.len() > i32::MAX as usize || v.len() > i32::MAX as usize {
            return scalar::gather_packed(u, v, order, out);
        }
        // SAFETY: as in `gather_shifted`.
        unsafe { (self.gather_packed)(u, v, order, out) }
    }

    /// `out[k] = values[order[k]]`. Panics if an index is out of range.
    #[inline]
    fn gather(&self, values: &[u32], order: &[u32], out: &mut [u32]) {
        debug_assert_eq!(order.len(), out.len());
        if values.len() > i32::MAX as usize {
            return scalar::gather::<false>(values, order, out);
        }
        // SAFETY: as in `gather_shifted`.
        unsafe { (self.gather)(values, order, out) }
    }

    /// Bit `k % 64` of word `k / 64` is set when `x[k] == x[k + 1]`.
    fn equal_neighbours(&self, x: &[u32], words: &mut Vec<u64>) {
        words.clear();
        words.resize(x.len().div_ceil(64), 0);
        // SAFETY: `Ops::new` checked that the CPU supports `self.isa`; the
        // SIMD paths assert that `words` covers `x`.
        let done = unsafe { (self.equal_neighbours)(x, words) };
        for k in done..x.len().saturating_sub(1) {
            words[k / 64] |= u64::from(x[k] == x[k + 1]) << (k % 64);
        }
    }
}

/// `Σ t(t-1)/2` over the runs of equal values of a sorted slice.
fn tie_pairs_sorted<T: Copy + Eq>(sorted: &[T]) -> u64 {
    let mut pairs = 0u64;
    let mut run = 0u64;
    for w in sorted.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 0 };
        pairs += run;
    }
    pairs
}

/// The first set bit at or after `from`.
fn next_set(words: &[u64], from: usize) -> Option<usize> {
    let mut w = from / 64;
    let mut bits = *words.get(w)? & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        w += 1;
        bits = *words.get(w)?;
    }
}

/// The first clear bit at or after `from` (past the end if none).
fn next_clear(words: &[u64], from: usize) -> usize {
    let mut w = from / 64;
    let Some(&word) = words.get(w) else {
        return from;
    };
    let mut bits = !word & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            return w * 64 + bits.trailing_zeros() as usize;
        }
        w += 1;
        match words.get(w) {
            Some(&word) => bits = !word,
            None => return w * 64,
        }
    }
}

/// Scratch buffers and the chosen instruction set; one per output stream,
/// reused across pairs.
#[derive(Debug)]
pub struct Vse {
    /// The chosen instruction set's paths.
    ops: Ops,
    /// Use u64 packing and u64 counting whatever `n` (tests of the u64 path).
    force_u64: bool,
    /// Force step 1's strategy for ties in `u`: `Some(true)` block-sorts the
    /// packed keys, `Some(false)` sorts each run (tests); `None` decides by
    /// the number of ties.
    packed_ties: Option<bool>,
    a32: Vec<u32>,
    b32: Vec<u32>,
    c32: Vec<u32>,
    d32: Vec<u32>,
    a64: Vec<u64>,
    b64: Vec<u64>,
    runs: Vec<u64>,
}

impl Vse {
    /// Scratch for vectors of `samples` values (grown on demand) running on
    /// `isa`. Panics (assert) if `isa` is not available — callers check
    /// first.
    pub fn new(isa: Isa, samples: usize) -> Self {
        let ops = Ops::new(isa);
        let cap = padded(samples);
        Self {
            ops,
            force_u64: false,
            packed_ties: None,
            a32: Vec::with_capacity(cap),
            b32: Vec::with_capacity(cap),
            c32: Vec::with_capacity(cap),
            d32: Vec::new(),
            a64: Vec::new(),
            b64: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// The instruction set this kernel runs on.
    pub fn isa(&self) -> Isa {
        self.ops.isa
    }

    /// `S = nc - nd` for two genes given as dense rank vectors (`u`, `v`,
    /// values in `0..n`, equal values = ties), where `order_u` is `u`'s sample
    /// indices sorted ascending by `(u rank, index)` (computed once per gene
    /// and reused across all partners) and `n1`, `n2` are the tied pairs
    /// `Σ t(t-1)/2` of `u` and `v`.
    ///
    /// Equals `Σ_{a<b} sign(u_b - u_a)·sign(v_b - v_a)`. Panics if the
    /// lengths differ or an index of `order_u` is out of range; other
    /// inconsistent inputs give a meaningless number, never undefined
    /// behaviour.
    pub fn numerator(&mut self, u: &[u32], order_u: &[u32], n1: u64, v: &[u32], n2: u64) -> i64 {
        self.numerator_ranked(u, order_u, n1, v, n2, u.len())
    }

    /// [`Vse::numerator`] for rank vectors whose values are below `ranks`,
    /// which may exceed their length: a pair's shared samples keep their
    /// genes' ranks. The packed and 32-bit layouts are chosen by `ranks`.
    pub fn numerator_ranked(
        &mut self,
        u: &[u32],
        order_u: &[u32],
        n1: u64,
        v: &[u32],
        n2: u64,
        ranks: usize,
    ) -> i64 {
        let n = u.len();
        assert_eq!(v.len(), n, "u and v differ in length");
        assert_eq!(order_u.len(), n, "order_u and u differ in length");
        if n < 2 {
            return 0;
        }
        let ranks = ranks.max(n);
        let (n3, nd) = if self.force_u64 || ranks > MAX_U32_COUNTED {
            self.amortised_u64(u, order_u, n1, v, n2)
        } else if ranks <= MAX_U32_PACKED
            && n1 > 0
            && self.packed_ties.unwrap_or(n1 > (n / DENSE_TIES) as u64)
        {
            self.amortised_packed_u32(u, order_u, v, n2)
        } else {
            self.amortised_u32(u, order_u, n1, v, n2)
        };
        finish(n, n1, n2, n3, nd)
    }

    /// The paper's kernel without the amortisation: packs `u << 16 | v`
    /// (u32, n ≤ 65,535) or `u << 32 | v` (u64, larger n), fully sorts the
    /// packed keys with the vectorised merge sort, then counts as
    /// [`Vse::numerator`]. For benchmarks and tests.
    pub fn numerator_unamortised(&mut self, u: &[u32], n1: u64, v: &[u32], n2: u64) -> i64 {
        let n = u.len();
        assert_eq!(v.len(), n, "u and v differ in length");
        if n < 2 {
            return 0;
        }
        let ties = n1 > 0 && n2 > 0;
        let (n3, nd) = if self.force_u64 || n > MAX_U32_PACKED {
            self.unamortised_u64(u, v, ties)
        } else {
            self.unamortised_u32(u, v, ties)
        };
        finish(n, n1, n2, n3, nd)
    }

    /// Steps 1–2 in the u32 counting layout: `(n3, nd)`.
    fn amortised_u32(
        &mut self,
        u: &[u32],
        order: &[u32],
        n1: u64,
        v: &[u32],
        n2: u64,
    ) -> (u64, u64) {
        let n = u.len();
        let len = padded(n);
        let ops = &self.ops;
        self.a32.resize(len, 0);
        self.b32.resize(len, 0);
        ops.gather_shifted(v, order, &mut self.a32[..n]);
        self.a32[n..].fill(SENTINEL_COUNT_U32);
        let mut n3 = 0;
        if n1 > 0 {
            self.c32.resize(n, 0);
            ops.gather(u, order, &mut self.c32[..n]);
            n3 = sort_tie_runs(
                ops,
                &self.c32[..n],
                &mut self.a32[..n],
                &mut self.runs,
                &mut self.d32,
                n2 > 0,
            );
        }
        let (nd, _) = ops.count_u32(&mut self.a32, &mut self.b32);
        (n3, nd)
    }

    /// [`Vse::amortised_u32`] for many ties in `u` (and `n` ≤ 65,535): the
    /// packed keys `u << 16 | v`, already sorted by `u`, are sorted in
    /// blocks by the vectorised block sort; only runs of tied `u` that
    /// straddle a block boundary are then sorted on their own.
    fn amortised_packed_u32(&mut self, u: &[u32], order: &[u32], v: &[u32], n2: u64) -> (u64, u64) {
        let n = u.len();
        let len = padded(n);
        let ops = &self.ops;
        self.c32.resize(len, 0);
        ops.gather_packed(u, v, order, &mut self.c32[..n]);
        self.c32[n..].fill(u32::MAX);
        let width = ops.sort_blocks_u32(&mut self.c32);
        let keys = &mut self.c32[..n];
        fix_straddling_runs(ops, keys, width, &mut self.d32);
        let n3 = if n2 > 0 {
            joint_ties(ops, keys, &mut self.runs)
        } else {
            0
        };
        self.a32.clear();
        self.a32.extend(keys.iter().map(|&k| (k & 0xFFFF) << 1));
        self.a32.resize(len, SENTINEL_COUNT_U32);
        self.b32.resize(len, 0);
        let (nd, _) = ops.count_u32(&mut self.a32, &mut self.b32);
        (n3, nd)
    }

    /// Steps 1–2 in the u64 counting layout: `(n3, nd)`.
    fn amortised_u64(
        &mut self,
        u: &[u32],
        order: &[u32],
        n1: u64,
        v: &[u32],
        n2: u64,
    ) -> (u64, u64) {
        let n = u.len();
        let len = padded(n);
        self.a64.clear();
        self.a64
            .extend(order.iter().map(|&k| u64::from(v[k as usize]) << 1));
        self.a64.resize(len, SENTINEL_COUNT_U64);
        self.b64.resize(len, 0);
        let mut n3 = 0;
        if n1 > 0 {
            // Sort each run of tied u by v (the packed order), counting
            // joint ties.
            let mut start = 0;
            while start < n {
                let rank = u[order[start] as usize];
                let mut end = start + 1;
                while end < n && u[order[end] as usize] == rank {
                    end += 1;
                }
                if end - start > 1 {
                    let run = &mut self.a64[start..end];
                    run.sort_unstable();
                    if n2 > 0 {
                        n3 += tie_pairs_sorted(run);
                    }
                }
                start = end;
            }
        }
        let (nd, _) = self.ops.count_u64(&mut self.a64, &mut self.b64);
        (n3, nd)
    }

    /// The unamortised kernel with u32 packing: `(n3, nd)`.
    fn unamortised_u32(&mut self, u: &[u32], v: &[u32], ties: bool) -> (u64, u64) {
        let n = u.len();
        let len = padded(n);
        let ops = &self.ops;
        self.a32.clear();
        self.a32
            .extend(u.iter().zip(v).map(|(&x, &y)| (x << 16) | (y & 0xFFFF)));
        self.a32.resize(len, u32::MAX);
        self.b32.resize(len, 0);
        let in_tmp = ops.sort_u32(&mut self.a32, &mut self.b32);
        let (keys, seq) = if in_tmp {
            (&self.b32, &mut self.a32)
        } else {
            (&self.a32, &mut self.b32)
        };
        let n3 = if ties {
            joint_ties(ops, &keys[..n], &mut self.runs)
        } else {
            0
        };
        for (s, &k) in seq.iter_mut().zip(&keys[..n]) {
            *s = (k & 0xFFFF) << 1;
        }
        seq[n..].fill(SENTINEL_COUNT_U32);
        self.c32.resize(len, 0);
        let seq = if in_tmp { &mut self.a32 } else { &mut self.b32 };
        let (nd, _) = ops.count_u32(seq, &mut self.c32);
        (n3, nd)
    }

    /// The unamortised kernel with u64 packing: `(n3, nd)`; counts in the
    /// u32 layout when `n` allows (unless the u64 path is forced).
    fn unamortised_u64(&mut self, u: &[u32], v: &[u32], ties: bool) -> (u64, u64) {
        let n = u.len();
        let len = padded(n);
        let ops = &self.ops;
        self.a64.clear();
        self.a64.extend(
            u.iter()
                .zip(v)
                .map(|(&x, &y)| (u64::from(x) << 32) | u64::from(y)),
        );
        self.a64.resize(len, u64::MAX);
        self.b64.resize(len, 0);
        let in_tmp = ops.sort_u64(&mut self.a64, &mut self.b64);
        let (keys, seq) = if in_tmp {
            (&mut self.b64, &mut self.a64)
        } else {
            (&mut self.a64, &mut self.b64)
        };
        let n3 = if ties {
            tie_pairs_sorted(&keys[..n])
        } else {
            0
        };
        let nd = if self.force_u64 || n > MAX_U32_COUNTED {
            for (s, &k) in seq.iter_mut().zip(&keys[..n]) {
                *s = (k & 0xFFFF_FFFF) << 1;
            }
            seq[n..].fill(SENTINEL_COUNT_U64);
            ops.count_u64(seq, keys).0
        } else {
            self.a32.clear();
            self.a32.extend(keys[..n].iter().map(|&k| (k as u32) << 1));
            self.a32.resize(len, SENTINEL_COUNT_U32);
            self.b32.resize(len, 0);
            ops.count_u32(&mut self.a32, &mut self.b32).0
        };
        (n3, nd)
    }
}

/// `S = n0 - n1 - n2 + n3 - 2·nd`, computed exactly.
fn finish(n: usize, n1: u64, n2: u64, n3: u64, nd: u64) -> i64 {
    let n = n as u128;
    let n0 = n * (n - 1) / 2;
    let s = n0 as i128 - i128::from(n1) - i128::from(n2) + i128::from(n3) - 2 * i128::from(nd);
    s as i64
}

/// Sorts one run of keys: by insertion when short, else by `ops`' sort.
fn sort_run(ops: &Ops, run: &mut [u32], scratch: &mut Vec<u32>) {
    if run.len() <= INSERTION_RUN {
        gse::insertion_sort(run);
    } else if ops.isa == Isa::Scalar {
        run.sort_unstable();
    } else {
        let len = padded(run.len());
        scratch.clear();
        scratch.extend_from_slice(run);
        scratch.resize(2 * len, u32::MAX);
        let (a, b) = scratch.split_at_mut(len);
        let sorted = if ops.sort_u32(a, b) { b } else { a };
        run.copy_from_slice(&sorted[..run.len()]);
    }
}

/// Packed keys `u << 16 | v` in `u` order whose blocks of `width` are
/// sorted: sorts the runs of equal `u` that straddle a block boundary out of
/// order, which completes the sort.
fn fix_straddling_runs(ops: &Ops, keys: &mut [u32], width: usize, scratch: &mut Vec<u32>) {
    let n = keys.len();
    let mut b = width;
    while b < n {
        if keys[b - 1] <= keys[b] {
            b += width;
            continue;
        }
        // Out of order: the same u on both sides (the high halves ascend).
        let rank = keys[b] >> 16;
        let mut start = b - 1;
        while start > 0 && keys[start - 1] >> 16 == rank {
            start -= 1;
        }
        let mut end = b + 1;
        while end < n && keys[end] >> 16 == rank {
            end += 1;
        }
        sort_run(ops, &mut keys[start..end], scratch);
        b = end.next_multiple_of(width).max(b + width);
    }
}

/// `n3`: `Σ t(t-1)/2` over the groups of equal values of sorted `keys`.
///
/// A group of `t` equal keys sets `m = t - 1` consecutive bits of the
/// neighbour mask `E`; with `A_0 = E` and `A_{j+1} = A_j & (A_j << 1)` the
/// group leaves `m - j` bits in `A_j`, so `Σ_j popcount(A_j)` is
/// `m(m+1)/2 = t(t-1)/2` without a branch per group.
///
/// After [`JOINT_TIE_PASSES`] passes the groups still left (`m' = m - K`
/// bits each) are walked run by run and add `m'(m'+1)/2`, so long groups
/// (many equal pairs, as zeros in count data) cost one walk, not one pass
/// over all words per member.
fn joint_ties(ops: &Ops, keys: &[u32], words: &mut Vec<u64>) -> u64 {
    ops.equal_neighbours(keys, words);
    let mut n3 = 0u64;
    for _ in 0..JOINT_TIE_PASSES {
        let mut carry = 0u64;
        let mut any = 0u64;
        for w in words.iter_mut() {
            n3 += u64::from(w.count_ones());
            let shifted = (*w << 1) | carry;
            carry = *w >> 63;
            *w &= shifted;
            any |= *w;
        }
        if any == 0 {
            return n3;
        }
    }
    let mut from = 0;
    while let Some(start) = next_set(words, from) {
        let end = next_clear(words, start);
        let m = (end - start) as u64;
        n3 += m * (m + 1) / 2;
        from = end;
    }
    n3
}

/// Branch-free passes of [`joint_ties`] before it walks the remaining runs.
const JOINT_TIE_PASSES: usize = 4;

/// Sorts each run of equal values of `us` (the `u` ranks in `order`) of `seq`
/// (u32 counting layout) ascending; returns the joint ties `n3` when `count`.
fn sort_tie_runs(
    ops: &Ops,
    us: &[u32],
    seq: &mut [u32],
    words: &mut Vec<u64>,
    scratch: &mut Vec<u32>,
    count: bool,
) -> u64 {
    ops.equal_neighbours(us, words);
    let mut n3 = 0u64;
    let mut from = 0;
    while let Some(start) = next_set(words, from) {
        // bits start..end are set: elements start..=end tie in u.
        let end = next_clear(words, start);
        let run = &mut seq[start..=end];
        if run.len() == 2 {
            let (a, b) = (run[0], run[1]);
            run[0] = a.min(b);
            run[1] = a.max(b);
            n3 += u64::from(count && a == b);
        } else {
            sort_run(ops, run, scratch);
            if count {
                n3 += tie_pairs_sorted(run);
            }
        }
        from = end + 1;
    }
    n3
}

#[cfg(test)]
mod tests;

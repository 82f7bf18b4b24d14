//! The vector width–independent half of the SIMD paths: block sorting and
//! the streaming bitonic merge with predict-and-skip, written once over the
//! small [`Vector`] trait that each instruction set implements (AVX-512 and
//! AVX2, for u32 and u64 lanes). A new backend (NEON, SVE) implements the
//! trait: its in-register sorting networks, loads and stores, and how it
//! tallies the tagged lanes.
//!
//! The generic functions are `#[inline(always)]` and so are the trait
//! methods; the per-ISA entry points that call them carry the
//! `#[target_feature]` attribute, so everything is compiled inside them with
//! the right instruction set.

use std::ops::{BitAnd, BitOr, Not, Shr};

use super::{block_constant, merge_constant};

/// Blocks between reductions of the block-sort lane accumulators when the
/// lanes are u32 (they must not overflow; u64 lanes are reduced at the end).
const FLUSH_BLOCKS: u64 = 1024;

/// The lane type: u32 or u64 keys, bit 0 the origin tag when counting.
pub(super) trait Key:
    Copy
    + Ord
    + From<u8>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + Not<Output = Self>
    + Shr<u32, Output = Self>
{
    /// Padding of a partial block: the largest value of the counting layout
    /// (`COUNT`) or of the type.
    fn pad(count: bool) -> Self;
}

impl Key for u32 {
    #[inline(always)]
    fn pad(count: bool) -> Self {
        if count {
            super::SENTINEL_COUNT_U32
        } else {
            u32::MAX
        }
    }
}

impl Key for u64 {
    #[inline(always)]
    fn pad(count: bool) -> Self {
        if count {
            super::SENTINEL_COUNT_U64
        } else {
            u64::MAX
        }
    }
}

/// One instruction set's registers of [`Key`] lanes, with the loop-invariant
/// constants of its networks. `Self` is those constants: a value exists
/// only once [`Vector::new`] has been called, which requires the CPU
/// features, so the other methods are safe.
///
/// # Safety
/// Implementations must only be constructible by [`Vector::new`] on a CPU
/// with the features their methods use, and must implement the operations
/// exactly as documented (the counts depend on it).
pub(super) unsafe trait Vector: Sized {
    /// The lane type.
    type Elem: Key;
    /// One register.
    type V: Copy;
    /// Lanes per register (a power of two).
    const LANES: usize;
    /// Registers per sorted block: 4 or 2.
    const BLOCK_REGS: usize;
    /// [`sort_blocks`] requires lengths that are multiples of this (a
    /// multiple of `LANES`; blocks shorter than `BLOCK_REGS` registers are
    /// padded in registers).
    const MULTIPLE: usize;
    /// Whether [`Vector::tally_at`] uses the vector accumulator (then
    /// [`merge`] reduces it with [`Vector::sum`]).
    const MERGE_ACC: bool;

    /// The constants.
    ///
    /// # Safety
    /// The CPU must support the instruction set of the implementation.
    unsafe fn new() -> Self;
    /// Unaligned load of `LANES` values.
    ///
    /// # Safety
    /// `p` must be valid for reading `LANES` values.
    unsafe fn load(&self, p: *const Self::Elem) -> Self::V;
    /// Unaligned store of `LANES` values.
    ///
    /// # Safety
    /// `p` must be valid for writing `LANES` values.
    unsafe fn store(&self, p: *mut Self::Elem, x: Self::V);
    /// All lanes zero.
    fn zero(&self) -> Self::V;
    /// All lanes `x`.
    fn splat(&self, x: Self::Elem) -> Self::V;
    /// The lanes in reverse order.
    fn reverse(&self, x: Self::V) -> Self::V;
    /// Lane-wise unsigned minimum and maximum.
    fn min_max(&self, x: Self::V, y: Self::V) -> (Self::V, Self::V);
    /// Sorts a bitonic register.
    fn clean(&self, x: Self::V) -> Self::V;
    /// Bitonic sort of one register; when `COUNT`, tags and tallies each of
    /// its merge stages into `acc`.
    fn sort<const COUNT: bool>(&self, x: Self::V, acc: &mut Self::V) -> Self::V;
    /// Clears the tags (left run).
    fn left(&self, x: Self::V) -> Self::V;
    /// Sets the tags (right run).
    fn right(&self, x: Self::V) -> Self::V;
    /// Replaces the tags by those of `pat` (lanes 0 or 1).
    fn retag(&self, x: Self::V, pat: Self::V) -> Self::V;
    /// Adds the positions `r · LANES + lane` of the tagged lanes of `x` to
    /// `acc`.
    fn tally(&self, acc: &mut Self::V, x: Self::V, r: usize);
    /// The positions `o + lane` of the tagged lanes of `x`: returned, or
    /// partly returned and partly (the lane indices) added to `acc` when
    /// [`Vector::MERGE_ACC`].
    fn tally_at(&self, acc: &mut Self::V, x: Self::V, o: usize) -> u64;
    /// Sum of the lanes of an accumulator, widened to u64.
    fn sum(&self, acc: Self::V) -> u64;
}

/// Merges two sorted registers into the `LANES` smallest and `LANES`
/// largest values, both sorted.
#[inline(always)]
pub(super) fn merge2<K: Vector>(k: &K, a: K::V, b: K::V) -> (K::V, K::V) {
    let (lo, hi) = k.min_max(a, k.reverse(b));
    (k.clean(lo), k.clean(hi))
}

/// Sorts four registers as one block.
#[inline(always)]
fn block4<K: Vector, const COUNT: bool>(k: &K, x: [K::V; 4], acc: &mut K::V) -> [K::V; 4] {
    let [a, b, c, d] = x;
    let (mut a, mut b, mut c, mut d) = (
        k.sort::<COUNT>(a, acc),
        k.sort::<COUNT>(b, acc),
        k.sort::<COUNT>(c, acc),
        k.sort::<COUNT>(d, acc),
    );
    if COUNT {
        (a, b, c, d) = (k.left(a), k.right(b), k.left(c), k.right(d));
    }
    (a, b) = merge2(k, a, b);
    (c, d) = merge2(k, c, d);
    if COUNT {
        k.tally(acc, a, 0);
        k.tally(acc, b, 1);
        k.tally(acc, c, 0);
        k.tally(acc, d, 1);
        (a, b, c, d) = (k.left(a), k.left(b), k.right(c), k.right(d));
    }
    // [a b] ascending, [c d] reversed is descending: a bitonic sequence.
    let (rc, rd) = (k.reverse(c), k.reverse(d));
    let (l0, h0) = k.min_max(a, rd);
    let (l1, h1) = k.min_max(b, rc);
    let (p, q) = k.min_max(l0, l1);
    let (s, t) = k.min_max(h0, h1);
    let out = [k.clean(p), k.clean(q), k.clean(s), k.clean(t)];
    if COUNT {
        for (r, x) in out.iter().enumerate() {
            k.tally(acc, *x, r);
        }
    }
    out
}

/// Sorts two registers as one block.
#[inline(always)]
fn block2<K: Vector, const COUNT: bool>(k: &K, x: [K::V; 2], acc: &mut K::V) -> [K::V; 2] {
    let [a, b] = x;
    let (mut a, mut b) = (k.sort::<COUNT>(a, acc), k.sort::<COUNT>(b, acc));
    if COUNT {
        (a, b) = (k.left(a), k.right(b));
    }
    (a, b) = merge2(k, a, b);
    if COUNT {
        k.tally(acc, a, 0);
        k.tally(acc, b, 1);
    }
    [a, b]
}

/// Merge constants of one block: `BLOCK_REGS` register sorts and the
/// merges between them.
const fn block_merges(lanes: u64, regs: u64) -> u64 {
    let mut total = regs * block_constant(lanes);
    let mut width = lanes;
    while width < regs * lanes {
        total += (regs * lanes / (2 * width)) * merge_constant(width, width);
        width *= 2;
    }
    total
}

/// Sorts every block of `BLOCK_REGS` registers of `buf` (length a multiple
/// of `MULTIPLE`; a last, shorter block is completed in registers by the
/// largest value). Returns the inversions within the blocks when `COUNT`.
#[inline(always)]
pub(super) fn sort_blocks<K: Vector, const COUNT: bool>(k: &K, buf: &mut [K::Elem]) -> u64 {
    let w = K::LANES;
    let n = buf.len();
    assert!(n.is_multiple_of(K::MULTIPLE));
    let p = buf.as_mut_ptr();
    let pad = k.splat(K::Elem::pad(COUNT));
    let mut acc = k.zero();
    let mut positions = 0u64;
    let mut blocks = 0u64;
    let mut at = 0;
    while at < n {
        // Whole blocks only when the length is a multiple of the block.
        let regs = if K::MULTIPLE.is_multiple_of(K::BLOCK_REGS * w) {
            K::BLOCK_REGS
        } else {
            ((n - at) / w).min(K::BLOCK_REGS)
        };
        let mut x = [pad; 4];
        for (r, xr) in x.iter_mut().enumerate().take(regs) {
            // SAFETY: `at + w * r + w <= n` for the `regs` registers left.
            *xr = unsafe { k.load(p.add(at + w * r)) };
        }
        let y = if K::BLOCK_REGS == 4 {
            block4::<K, COUNT>(k, x, &mut acc)
        } else {
            let [a, b] = block2::<K, COUNT>(k, [x[0], x[1]], &mut acc);
            [a, b, pad, pad]
        };
        for (r, yr) in y.iter().enumerate().take(regs) {
            // SAFETY: as for the loads.
            unsafe { k.store(p.add(at + w * r), *yr) };
        }
        at += w * regs;
        blocks += 1;
        if COUNT && size_of::<K::Elem>() == 4 && blocks.is_multiple_of(FLUSH_BLOCKS) {
            positions += k.sum(acc);
            acc = k.zero();
        }
    }
    if !COUNT {
        return 0;
    }
    positions += k.sum(acc);
    blocks * block_merges(w as u64, K::BLOCK_REGS as u64) - positions
}

/// Merges the sorted runs `l` and `r` (lengths non-zero multiples of
/// `LANES`) into `out`, streaming one register at a time through [`merge2`]
/// with the predict-and-skip test. When `COUNT`, values are in the counting
/// layout and the pairs `l > r` are returned.
#[inline(always)]
pub(super) fn merge<K: Vector, const COUNT: bool>(
    k: &K,
    l: &[K::Elem],
    r: &[K::Elem],
    out: &mut [K::Elem],
) -> u64 {
    let w = K::LANES;
    let (nl, nr) = (l.len(), r.len());
    assert!(nl >= w && nr >= w && out.len() == nl + nr);
    assert!(nl.is_multiple_of(w) && nr.is_multiple_of(w));
    let (lp, rp, op) = (l.as_ptr(), r.as_ptr(), out.as_mut_ptr());
    let one = K::Elem::from(1);
    let key_l = |x: K::Elem| if COUNT { x & !one } else { x };
    let key_r = |x: K::Elem| if COUNT { x | one } else { x };
    let mut acc = k.zero();
    let mut positions = 0u64;

    // SAFETY: both runs hold at least one register.
    let (mut a, mut b) = unsafe { (k.load(lp), k.load(rp)) };
    if COUNT {
        (a, b) = (k.left(a), k.right(b));
    }
    let (lo, mut cur) = merge2(k, a, b);
    // SAFETY: `out` holds `nl + nr >= 2 w` values.
    unsafe { k.store(op, lo) };
    if COUNT {
        positions += k.tally_at(&mut acc, lo, 0);
    }
    let mut cur_max = key_l(l[w - 1]).max(key_r(r[w - 1]));
    let (mut i, mut j) = (w, w);
    let total = nl + nr;
    let mut o = w;
    while o + w < total {
        // SAFETY: the indices are clamped into the runs.
        let (lh, rh) = unsafe { (*lp.add(i.min(nl - 1)), *rp.add(j.min(nr - 1))) };
        let heads_le = if COUNT { lh >> 1 <= rh >> 1 } else { lh <= rh };
        // Some run has a register left; take the one with the smaller head.
        let take_l = (i < nl) & ((j >= nr) | heads_le);
        let (src, tag) = if take_l {
            (lp.wrapping_add(i), 0)
        } else {
            (rp.wrapping_add(j), 1)
        };
        i += if take_l { w } else { 0 };
        j += if take_l { 0 } else { w };
        // SAFETY: `src` is the chosen run's next register, inside the run.
        let (head, tail, mut next) = unsafe { (*src, *src.add(w - 1), k.load(src)) };
        let (first, last) = if COUNT {
            let tag = K::Elem::from(tag);
            next = k.retag(next, k.splat(tag));
            ((head & !one) | tag, (tail & !one) | tag)
        } else {
            (head, tail)
        };
        let done;
        if first >= cur_max {
            // Predict-and-skip: every value of `next` is at least every
            // value of `cur`, which therefore leaves as it is.
            done = cur;
            cur = next;
            cur_max = last;
        } else {
            (done, cur) = merge2(k, cur, next);
            cur_max = cur_max.max(last);
        }
        // SAFETY: `o + w < total`.
        unsafe { k.store(op.add(o), done) };
        if COUNT {
            positions += k.tally_at(&mut acc, done, o);
        }
        o += w;
    }
    // SAFETY: `o + w == total`.
    unsafe { k.store(op.add(o), cur) };
    if !COUNT {
        return 0;
    }
    positions += k.tally_at(&mut acc, cur, o);
    if K::MERGE_ACC {
        positions += k.sum(acc);
    }
    merge_constant(nl as u64, nr as u64) - positions
}

/// The `#[target_feature]` entry points of one instruction set's VSE paths,
/// written once. Each SIMD module invokes it with its [`Isa`](super::Isa),
/// its feature string and its [`Vector`] implementations for u32 and u64
/// lanes, and gets the block sorts, merges, counts and sorts compiled with
/// those features (the generic [`sort_blocks`] and [`merge`] are inlined into
/// them), and `OPS`, the [`Ops`](super::Ops) table of them and of the
/// module's own `gather`, `gather_packed` and `equal_neighbours`. Paths are
/// those of the invoking module, a child of `vse`.
macro_rules! entry_points {
    ($isa:expr, $features:literal, $k32:ty, $k64:ty) => {
        super::vector::entry_points!(@lanes $features, $k32, u32,
            sort_blocks_32, merge_32, count_u32, sort_u32);
        super::vector::entry_points!(@lanes $features, $k64, u64,
            sort_blocks_64, merge_64, count_u64, sort_u64);

        /// Sorts every block of `buf` (any u32 values, length a multiple
        /// of 16); returns the block length.
        ///
        /// # Safety
        /// The CPU must support this module's instruction set.
        #[target_feature(enable = $features)]
        unsafe fn sort_blocks_u32(buf: &mut [u32]) -> usize {
            // SAFETY: the caller guarantees the CPU features.
            unsafe { sort_blocks_32::<false>(buf) };
            <$k32 as Vector>::LANES * <$k32 as Vector>::BLOCK_REGS
        }

        /// This instruction set's paths (see [`super::Ops`]).
        pub(super) const OPS: super::Ops = super::Ops {
            isa: $isa,
            count_u32,
            count_u64,
            sort_u32,
            sort_u64,
            sort_blocks_u32,
            gather: gather::<false>,
            gather_shifted: gather::<true>,
            gather_packed,
            equal_neighbours,
        };
    };
    (@lanes $features:literal, $k:ty, $t:ty,
        $blocks:ident, $merge:ident, $count:ident, $sort:ident) => {
        /// Sorts every block of `BLOCK_REGS` registers of `buf` (see
        /// [`vector::sort_blocks`]).
        ///
        /// # Safety
        /// The CPU must support this module's instruction set.
        #[target_feature(enable = $features)]
        unsafe fn $blocks<const COUNT: bool>(buf: &mut [$t]) -> u64 {
            // SAFETY: the caller guarantees the CPU features.
            let k = unsafe { <$k as Vector>::new() };
            vector::sort_blocks::<$k, COUNT>(&k, buf)
        }

        /// Merges two runs of whole registers (see [`vector::merge`]).
        ///
        /// # Safety
        /// The CPU must support this module's instruction set.
        #[target_feature(enable = $features)]
        unsafe fn $merge<const COUNT: bool>(l: &[$t], r: &[$t], out: &mut [$t]) -> u64 {
            // SAFETY: the caller guarantees the CPU features.
            let k = unsafe { <$k as Vector>::new() };
            vector::merge::<$k, COUNT>(&k, l, r, out)
        }

        /// Sorts `buf` (counting layout, length a multiple of 16) and
        /// returns its strict inversions and whether the result ended in
        /// `tmp`.
        ///
        /// # Safety
        /// The CPU must support this module's instruction set.
        #[target_feature(enable = $features)]
        unsafe fn $count(buf: &mut [$t], tmp: &mut [$t]) -> (u64, bool) {
            // SAFETY: the caller guarantees the CPU features.
            let blocks = unsafe { $blocks::<true>(buf) };
            let width = <$k as Vector>::LANES * <$k as Vector>::BLOCK_REGS;
            let (merged, in_tmp) = super::merge_passes(buf, tmp, width, |l, r, o| {
                // SAFETY: as above; runs are whole registers.
                unsafe { $merge::<true>(l, r, o) }
            });
            (blocks + merged, in_tmp)
        }

        /// Sorts `buf` (any values, length a multiple of 16); returns
        /// whether the result ended in `tmp`.
        ///
        /// # Safety
        /// The CPU must support this module's instruction set.
        #[target_feature(enable = $features)]
        unsafe fn $sort(buf: &mut [$t], tmp: &mut [$t]) -> bool {
            // SAFETY: the caller guarantees the CPU features.
            unsafe { $blocks::<false>(buf) };
            let width = <$k as Vector>::LANES * <$k as Vector>::BLOCK_REGS;
            super::merge_passes(buf, tmp, width, |l, r, o| {
                // SAFETY: as above; runs are whole registers.
                unsafe { $merge::<false>(l, r, o) }
            })
            .1
        }
    };
}
pub(super) use entry_points;

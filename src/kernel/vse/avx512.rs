//! AVX-512 paths: 16 lanes of u32, 8 lanes of u64.
//!
//! Blocks of four u32 registers (64 values) or two u64 registers (16 values)
//! are sorted by bitonic networks in registers; runs are then merged one
//! register at a time through a bitonic merge network ([`merge2_32`],
//! [`merge2_64`]). When counting, bit 0 of every value is its origin tag
//! (see the parent module).

use std::arch::x86_64::*;

use super::scalar::lookup;
use super::{SENTINEL_COUNT_U32, block_constant, merge_constant, merge_passes};

/// Sum of the sixteen u32 lanes, widened first: a merge of up to 2^31
/// values can sum past u32 even though no lane overflows.
#[inline]
#[target_feature(enable = "avx512f")]
fn sum_lanes(x: __m512i) -> u64 {
    let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(x));
    let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(x));
    _mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi)) as u64
}

/// Blocks between reductions of the u32 lane accumulators (no overflow).
const FLUSH_BLOCKS: u64 = 1024;

// ----------------------------------------------------------------------------
// u32, 16 lanes
// ----------------------------------------------------------------------------

/// Loop-invariant vectors of the u32 networks.
struct K32 {
    one: __m512i,
    keep: __m512i,
    rev: __m512i,
    xor7: __m512i,
    /// Lane index, plus 16, 32, 48.
    iota: [__m512i; 4],
    /// Lane index mod 2, 4, 8.
    lane_mod: [__m512i; 3],
    /// Tag patterns of the in-register merges of 1+1, 2+2, 4+4, 8+8.
    pat: [__m512i; 4],
}

impl K32 {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        let iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let one = _mm512_set1_epi32(1);
        let bit = |s: i32| _mm512_min_epu32(_mm512_and_si512(iota, _mm512_set1_epi32(s)), one);
        Self {
            one,
            keep: _mm512_set1_epi32(!1),
            rev: _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
            xor7: _mm512_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8),
            iota: [
                iota,
                _mm512_add_epi32(iota, _mm512_set1_epi32(16)),
                _mm512_add_epi32(iota, _mm512_set1_epi32(32)),
                _mm512_add_epi32(iota, _mm512_set1_epi32(48)),
            ],
            lane_mod: [
                _mm512_and_si512(iota, _mm512_set1_epi32(1)),
                _mm512_and_si512(iota, _mm512_set1_epi32(3)),
                _mm512_and_si512(iota, _mm512_set1_epi32(7)),
            ],
            pat: [bit(1), bit(2), bit(4), bit(8)],
        }
    }

    /// Clears the tags (left run).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn left(&self, x: __m512i) -> __m512i {
        _mm512_and_si512(x, self.keep)
    }

    /// Sets the tags (right run).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn right(&self, x: __m512i) -> __m512i {
        _mm512_or_si512(x, self.one)
    }

    /// Replaces the tags by `pat`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn retag(&self, x: __m512i, pat: __m512i) -> __m512i {
        // (x & keep) | pat
        _mm512_ternarylogic_epi32::<0xEA>(x, self.keep, pat)
    }

    /// Adds the positions `pos` of the tagged lanes of `x` to `acc`; returns
    /// the number of tagged lanes.
    #[inline]
    #[target_feature(enable = "avx512f,popcnt")]
    fn tally(&self, acc: &mut __m512i, x: __m512i, pos: __m512i) -> u64 {
        let tagged = _mm512_test_epi32_mask(x, self.one);
        *acc = _mm512_mask_add_epi32(*acc, tagged, *acc, pos);
        u64::from(tagged.count_ones())
    }
}

/// Compare-exchange of `x` with the partner lanes `y`: lanes in `upper` keep
/// the larger value, the others the smaller.
#[inline]
#[target_feature(enable = "avx512f")]
fn cas32(x: __m512i, y: __m512i, upper: __mmask16) -> __m512i {
    _mm512_mask_max_epu32(_mm512_min_epu32(x, y), upper, x, y)
}

/// Sorts a bitonic register (half-cleaners at distance 8, 4, 2, 1).
#[inline]
#[target_feature(enable = "avx512f")]
fn clean16(x: __m512i) -> __m512i {
    let x = cas32(x, _mm512_shuffle_i32x4::<0x4E>(x, x), 0xFF00);
    let x = cas32(x, _mm512_shuffle_i32x4::<0xB1>(x, x), 0xF0F0);
    let x = cas32(x, _mm512_shuffle_epi32::<0x4E>(x), 0xCCCC);
    cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA)
}

/// Merges two sorted registers into the 16 smallest and 16 largest values,
/// both sorted.
#[inline]
#[target_feature(enable = "avx512f")]
fn merge2_32(k: &K32, a: __m512i, b: __m512i) -> (__m512i, __m512i) {
    let b = _mm512_permutexvar_epi32(k.rev, b);
    (
        clean16(_mm512_min_epu32(a, b)),
        clean16(_mm512_max_epu32(a, b)),
    )
}

/// Bitonic sort of one register; when `COUNT`, tags and tallies each of its
/// four merge stages into `acc`.
#[inline]
#[target_feature(enable = "avx512f,popcnt")]
fn sort16<const COUNT: bool>(k: &K32, mut x: __m512i, acc: &mut __m512i) -> __m512i {
    // 1 + 1
    if COUNT {
        x = k.retag(x, k.pat[0]);
    }
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally(acc, x, k.lane_mod[0]);
        x = k.retag(x, k.pat[1]);
    }
    // 2 + 2
    x = cas32(x, _mm512_shuffle_epi32::<0x1B>(x), 0xCCCC);
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally(acc, x, k.lane_mod[1]);
        x = k.retag(x, k.pat[2]);
    }
    // 4 + 4
    x = cas32(x, _mm512_permutexvar_epi32(k.xor7, x), 0xF0F0);
    x = cas32(x, _mm512_shuffle_epi32::<0x4E>(x), 0xCCCC);
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally(acc, x, k.lane_mod[2]);
        x = k.retag(x, k.pat[3]);
    }
    // 8 + 8
    x = cas32(x, _mm512_permutexvar_epi32(k.rev, x), 0xFF00);
    x = cas32(x, _mm512_shuffle_i32x4::<0xB1>(x, x), 0xF0F0);
    x = cas32(x, _mm512_shuffle_epi32::<0x4E>(x), 0xCCCC);
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally(acc, x, k.iota[0]);
    }
    x
}

/// Merge constants of one 64-value block: four 16-sorts, two 16+16 merges
/// and one 32+32 merge.
const BLOCK64_CONSTANT: u64 =
    4 * block_constant(16) + 2 * merge_constant(16, 16) + merge_constant(32, 32);

/// Sorts four registers as one 64-value block.
#[inline]
#[target_feature(enable = "avx512f,popcnt")]
fn block64<const COUNT: bool>(k: &K32, x: [__m512i; 4], acc: &mut __m512i) -> [__m512i; 4] {
    let [a, b, c, d] = x;
    let (mut a, mut b, mut c, mut d) = (
        sort16::<COUNT>(k, a, acc),
        sort16::<COUNT>(k, b, acc),
        sort16::<COUNT>(k, c, acc),
        sort16::<COUNT>(k, d, acc),
    );
    if COUNT {
        (a, b, c, d) = (k.left(a), k.right(b), k.left(c), k.right(d));
    }
    (a, b) = merge2_32(k, a, b);
    (c, d) = merge2_32(k, c, d);
    if COUNT {
        k.tally(acc, a, k.iota[0]);
        k.tally(acc, b, k.iota[1]);
        k.tally(acc, c, k.iota[0]);
        k.tally(acc, d, k.iota[1]);
        (a, b, c, d) = (k.left(a), k.left(b), k.right(c), k.right(d));
    }
    // [a b] ascending, [c d] reversed is descending: a bitonic 64.
    let (rc, rd) = (
        _mm512_permutexvar_epi32(k.rev, c),
        _mm512_permutexvar_epi32(k.rev, d),
    );
    let (l0, h0) = (_mm512_min_epu32(a, rd), _mm512_max_epu32(a, rd));
    let (l1, h1) = (_mm512_min_epu32(b, rc), _mm512_max_epu32(b, rc));
    let out = [
        clean16(_mm512_min_epu32(l0, l1)),
        clean16(_mm512_max_epu32(l0, l1)),
        clean16(_mm512_min_epu32(h0, h1)),
        clean16(_mm512_max_epu32(h0, h1)),
    ];
    if COUNT {
        for (r, pos) in out.iter().zip(k.iota) {
            k.tally(acc, *r, pos);
        }
    }
    out
}

/// Sorts every 64-value block of `buf` (length a multiple of 16; a last
/// block of 16–48 values is completed in registers by the largest value).
/// Returns the inversions within the blocks when `COUNT`.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
unsafe fn sort_blocks_32<const COUNT: bool>(buf: &mut [u32]) -> u64 {
    let k = K32::new();
    let n = buf.len();
    assert!(n.is_multiple_of(16));
    let p = buf.as_mut_ptr();
    let pad = if COUNT { SENTINEL_COUNT_U32 } else { u32::MAX };
    let pad = _mm512_set1_epi32(pad as i32);
    let mut acc = _mm512_setzero_si512();
    let mut positions = 0u64;
    let mut blocks = 0u64;
    let mut at = 0;
    while at < n {
        let regs = ((n - at) / 16).min(4);
        let mut x = [pad; 4];
        for (r, xr) in x.iter_mut().enumerate().take(regs) {
            // SAFETY: `at + 16 * r + 16 <= n` for the `regs` registers left.
            *xr = unsafe { _mm512_loadu_si512(p.add(at + 16 * r).cast()) };
        }
        let y = block64::<COUNT>(&k, x, &mut acc);
        for (r, yr) in y.iter().enumerate().take(regs) {
            // SAFETY: as for the loads.
            unsafe { _mm512_storeu_si512(p.add(at + 16 * r).cast(), *yr) };
        }
        at += 16 * regs;
        blocks += 1;
        if COUNT && blocks.is_multiple_of(FLUSH_BLOCKS) {
            positions += sum_lanes(acc);
            acc = _mm512_setzero_si512();
        }
    }
    if !COUNT {
        return 0;
    }
    positions += sum_lanes(acc);
    blocks * BLOCK64_CONSTANT - positions
}

/// Merges the sorted runs `l` and `r` (lengths non-zero multiples of 16)
/// into `out`, streaming one register at a time through [`merge2_32`] with
/// the predict-and-skip test. When `COUNT`, values are in the counting
/// layout and the pairs `l > r` are returned.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
unsafe fn merge_32<const COUNT: bool>(l: &[u32], r: &[u32], out: &mut [u32]) -> u64 {
    let (nl, nr) = (l.len(), r.len());
    assert!(nl >= 16 && nr >= 16 && out.len() == nl + nr);
    assert!(nl.is_multiple_of(16) && nr.is_multiple_of(16));
    let k = K32::new();
    let (lp, rp, op) = (l.as_ptr(), r.as_ptr(), out.as_mut_ptr());
    let key_l = |x: u32| if COUNT { x & !1 } else { x };
    let key_r = |x: u32| if COUNT { x | 1 } else { x };
    let mut acc = _mm512_setzero_si512();
    let mut positions = 0u64;

    // SAFETY: both runs hold at least one register.
    let (mut a, mut b) = unsafe { (_mm512_loadu_si512(lp.cast()), _mm512_loadu_si512(rp.cast())) };
    if COUNT {
        (a, b) = (k.left(a), k.right(b));
    }
    let (lo, mut cur) = merge2_32(&k, a, b);
    // SAFETY: `out` holds `nl + nr >= 32` values.
    unsafe { _mm512_storeu_si512(op.cast(), lo) };
    if COUNT {
        k.tally(&mut acc, lo, k.iota[0]);
    }
    let mut cur_max = key_l(l[15]).max(key_r(r[15]));
    let (mut i, mut j) = (16, 16);
    let total = nl + nr;
    let mut o = 16;
    while o + 16 < total {
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
        i += if take_l { 16 } else { 0 };
        j += if take_l { 0 } else { 16 };
        // SAFETY: `src` is the chosen run's next register, inside the run.
        let (head, tail, mut next) =
            unsafe { (*src, *src.add(15), _mm512_loadu_si512(src.cast())) };
        let (first, last) = if COUNT {
            next = k.retag(next, _mm512_set1_epi32(tag));
            ((head & !1) | tag as u32, (tail & !1) | tag as u32)
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
            (done, cur) = merge2_32(&k, cur, next);
            cur_max = cur_max.max(last);
        }
        // SAFETY: `o + 16 < total`.
        unsafe { _mm512_storeu_si512(op.add(o).cast(), done) };
        if COUNT {
            positions += o as u64 * k.tally(&mut acc, done, k.iota[0]);
        }
        o += 16;
    }
    // SAFETY: `o + 16 == total`.
    unsafe { _mm512_storeu_si512(op.add(o).cast(), cur) };
    if !COUNT {
        return 0;
    }
    positions += o as u64 * k.tally(&mut acc, cur, k.iota[0]);
    positions += sum_lanes(acc);
    merge_constant(nl as u64, nr as u64) - positions
}

/// Sorts `buf` (u32 counting layout, length a multiple of 16) and returns
/// its strict inversions and whether the result ended in `tmp`.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
pub(super) unsafe fn count_u32(buf: &mut [u32], tmp: &mut [u32]) -> (u64, bool) {
    // SAFETY: the caller guarantees the CPU features.
    let blocks = unsafe { sort_blocks_32::<true>(buf) };
    let (merged, in_tmp) = merge_passes(buf, tmp, 64, |l, r, o| {
        // SAFETY: as above; runs are whole registers.
        unsafe { merge_32::<true>(l, r, o) }
    });
    (blocks + merged, in_tmp)
}

/// Sorts `buf` (any u32 values, length a multiple of 16); returns whether
/// the result ended in `tmp`.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
pub(super) unsafe fn sort_u32(buf: &mut [u32], tmp: &mut [u32]) -> bool {
    // SAFETY: the caller guarantees the CPU features.
    unsafe { sort_blocks_32::<false>(buf) };
    merge_passes(buf, tmp, 64, |l, r, o| {
        // SAFETY: as above; runs are whole registers.
        unsafe { merge_32::<false>(l, r, o) }
    })
    .1
}

/// Sorts every 64-value block of `buf` (any u32 values, length a multiple
/// of 16); returns the block length.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
pub(super) unsafe fn sort_blocks_u32(buf: &mut [u32]) -> usize {
    // SAFETY: the caller guarantees the CPU features.
    unsafe { sort_blocks_32::<false>(buf) };
    64
}

/// `out[k] = u[order[k]] << 16 | v[order[k]]`. Panics if an index is out of
/// range.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn gather_packed(u: &[u32], v: &[u32], order: &[u32], out: &mut [u32]) {
    let n = order.len();
    assert_eq!(out.len(), n);
    assert!(i32::try_from(u.len().min(v.len())).is_ok());
    let limit = _mm512_set1_epi32(u.len().min(v.len()) as i32);
    let (ub, vb) = (u.as_ptr().cast::<i32>(), v.as_ptr().cast::<i32>());
    let mut bad: __mmask16 = 0;
    let mut k = 0;
    while k + 16 <= n {
        // SAFETY: `k + 16 <= n`.
        let idx = unsafe { _mm512_loadu_si512(order.as_ptr().add(k).cast()) };
        let ok = _mm512_cmplt_epu32_mask(idx, limit);
        bad |= !ok;
        let zero = _mm512_setzero_si512();
        // SAFETY: only lanes with an index below both lengths are read.
        let (x, y) = unsafe {
            (
                _mm512_mask_i32gather_epi32::<4>(zero, ok, idx, ub),
                _mm512_mask_i32gather_epi32::<4>(zero, ok, idx, vb),
            )
        };
        let packed = _mm512_or_si512(_mm512_slli_epi32::<16>(x), y);
        // SAFETY: `k + 16 <= n == out.len()`.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(k).cast(), packed) };
        k += 16;
    }
    assert!(bad == 0, "sample order index out of range");
    for (o, &i) in out[k..].iter_mut().zip(&order[k..]) {
        *o = (lookup(u, i) << 16) | lookup(v, i);
    }
}

/// Sets bit `k % 64` of `words[k / 64]` when `x[k] == x[k + 1]`, for `k`
/// below the returned bound (a multiple of 16; the caller does the rest).
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn equal_neighbours(x: &[u32], words: &mut [u64]) -> usize {
    let pairs = x.len().saturating_sub(1);
    assert!(words.len() * 64 >= pairs);
    let p = x.as_ptr();
    let mut k = 0;
    while k + 16 <= pairs {
        // SAFETY: `k + 16 < x.len()`.
        let (a, b) = unsafe {
            (
                _mm512_loadu_si512(p.add(k).cast()),
                _mm512_loadu_si512(p.add(k + 1).cast()),
            )
        };
        let eq = _mm512_cmpeq_epi32_mask(a, b);
        words[k / 64] |= u64::from(eq) << (k % 64);
        k += 16;
    }
    k
}

/// `out[k] = values[order[k]]`, doubled when `SHIFT`. Panics if an index is
/// out of range.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn gather<const SHIFT: bool>(values: &[u32], order: &[u32], out: &mut [u32]) {
    let n = order.len();
    assert_eq!(out.len(), n);
    assert!(i32::try_from(values.len()).is_ok());
    let limit = _mm512_set1_epi32(values.len() as i32);
    let base = values.as_ptr().cast::<i32>();
    let mut bad: __mmask16 = 0;
    let mut k = 0;
    while k + 16 <= n {
        // SAFETY: `k + 16 <= n`.
        let idx = unsafe { _mm512_loadu_si512(order.as_ptr().add(k).cast()) };
        let ok = _mm512_cmplt_epu32_mask(idx, limit);
        bad |= !ok;
        // SAFETY: only lanes with an index below `values.len()` are read.
        let x = unsafe { _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), ok, idx, base) };
        let x = if SHIFT { _mm512_add_epi32(x, x) } else { x };
        // SAFETY: `k + 16 <= n == out.len()`.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(k).cast(), x) };
        k += 16;
    }
    assert!(bad == 0, "sample order index out of range");
    for (o, &i) in out[k..].iter_mut().zip(&order[k..]) {
        *o = lookup(values, i) << u32::from(SHIFT);
    }
}

// ----------------------------------------------------------------------------
// u64, 8 lanes
// ----------------------------------------------------------------------------

/// Loop-invariant vectors of the u64 networks.
struct K64 {
    one: __m512i,
    keep: __m512i,
    rev: __m512i,
    /// Lane index, plus 8.
    iota: [__m512i; 2],
    /// Lane index mod 2, 4.
    lane_mod: [__m512i; 2],
    /// Tag patterns of the in-register merges of 1+1, 2+2, 4+4.
    pat: [__m512i; 3],
}

impl K64 {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        let iota = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
        let one = _mm512_set1_epi64(1);
        let bit = |s: i64| _mm512_min_epu64(_mm512_and_si512(iota, _mm512_set1_epi64(s)), one);
        Self {
            one,
            keep: _mm512_set1_epi64(!1),
            rev: _mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0),
            iota: [iota, _mm512_add_epi64(iota, _mm512_set1_epi64(8))],
            lane_mod: [
                _mm512_and_si512(iota, _mm512_set1_epi64(1)),
                _mm512_and_si512(iota, _mm512_set1_epi64(3)),
            ],
            pat: [bit(1), bit(2), bit(4)],
        }
    }

    /// Clears the tags (left run).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn left(&self, x: __m512i) -> __m512i {
        _mm512_and_si512(x, self.keep)
    }

    /// Sets the tags (right run).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn right(&self, x: __m512i) -> __m512i {
        _mm512_or_si512(x, self.one)
    }

    /// Replaces the tags by `pat`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn retag(&self, x: __m512i, pat: __m512i) -> __m512i {
        _mm512_ternarylogic_epi64::<0xEA>(x, self.keep, pat)
    }

    /// Adds the positions `pos` of the tagged lanes of `x` to `acc`; returns
    /// the number of tagged lanes.
    #[inline]
    #[target_feature(enable = "avx512f,popcnt")]
    fn tally(&self, acc: &mut __m512i, x: __m512i, pos: __m512i) -> u64 {
        let tagged = _mm512_test_epi64_mask(x, self.one);
        *acc = _mm512_mask_add_epi64(*acc, tagged, *acc, pos);
        u64::from(tagged.count_ones())
    }
}

/// [`cas32`] for u64 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn cas64(x: __m512i, y: __m512i, upper: __mmask8) -> __m512i {
    _mm512_mask_max_epu64(_mm512_min_epu64(x, y), upper, x, y)
}

/// Sorts a bitonic register (half-cleaners at distance 4, 2, 1).
#[inline]
#[target_feature(enable = "avx512f")]
fn clean8(x: __m512i) -> __m512i {
    let x = cas64(x, _mm512_shuffle_i64x2::<0x4E>(x, x), 0xF0);
    let x = cas64(x, _mm512_shuffle_i64x2::<0xB1>(x, x), 0xCC);
    cas64(x, _mm512_shuffle_epi32::<0x4E>(x), 0xAA)
}

/// [`merge2_32`] for u64 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn merge2_64(k: &K64, a: __m512i, b: __m512i) -> (__m512i, __m512i) {
    let b = _mm512_permutexvar_epi64(k.rev, b);
    (
        clean8(_mm512_min_epu64(a, b)),
        clean8(_mm512_max_epu64(a, b)),
    )
}

/// [`sort16`] for u64 lanes.
#[inline]
#[target_feature(enable = "avx512f,popcnt")]
fn sort8<const COUNT: bool>(k: &K64, mut x: __m512i, acc: &mut __m512i) -> __m512i {
    // 1 + 1
    if COUNT {
        x = k.retag(x, k.pat[0]);
    }
    x = cas64(x, _mm512_shuffle_epi32::<0x4E>(x), 0xAA);
    if COUNT {
        k.tally(acc, x, k.lane_mod[0]);
        x = k.retag(x, k.pat[1]);
    }
    // 2 + 2
    x = cas64(x, _mm512_permutex_epi64::<0x1B>(x), 0xCC);
    x = cas64(x, _mm512_shuffle_epi32::<0x4E>(x), 0xAA);
    if COUNT {
        k.tally(acc, x, k.lane_mod[1]);
        x = k.retag(x, k.pat[2]);
    }
    // 4 + 4
    x = cas64(x, _mm512_permutexvar_epi64(k.rev, x), 0xF0);
    x = cas64(x, _mm512_shuffle_i64x2::<0xB1>(x, x), 0xCC);
    x = cas64(x, _mm512_shuffle_epi32::<0x4E>(x), 0xAA);
    if COUNT {
        k.tally(acc, x, k.iota[0]);
    }
    x
}

/// Merge constants of one 16-value block: two 8-sorts and one 8+8 merge.
const BLOCK16_CONSTANT: u64 = 2 * block_constant(8) + merge_constant(8, 8);

/// Sorts every 16-value block (two registers) of `buf` (length a multiple
/// of 16); returns the inversions within the blocks when `COUNT`.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
unsafe fn sort_blocks_64<const COUNT: bool>(buf: &mut [u64]) -> u64 {
    let k = K64::new();
    let n = buf.len();
    assert!(n.is_multiple_of(16));
    let p = buf.as_mut_ptr();
    let mut acc = _mm512_setzero_si512();
    let mut at = 0;
    while at < n {
        // SAFETY: `at + 16 <= n`.
        let (a, b) = unsafe {
            (
                _mm512_loadu_si512(p.add(at).cast()),
                _mm512_loadu_si512(p.add(at + 8).cast()),
            )
        };
        let (mut a, mut b) = (
            sort8::<COUNT>(&k, a, &mut acc),
            sort8::<COUNT>(&k, b, &mut acc),
        );
        if COUNT {
            (a, b) = (k.left(a), k.right(b));
        }
        (a, b) = merge2_64(&k, a, b);
        if COUNT {
            k.tally(&mut acc, a, k.iota[0]);
            k.tally(&mut acc, b, k.iota[1]);
        }
        // SAFETY: as for the loads.
        unsafe {
            _mm512_storeu_si512(p.add(at).cast(), a);
            _mm512_storeu_si512(p.add(at + 8).cast(), b);
        }
        at += 16;
    }
    if !COUNT {
        return 0;
    }
    (n as u64 / 16) * BLOCK16_CONSTANT - _mm512_reduce_add_epi64(acc) as u64
}

/// [`merge_32`] for u64 lanes (run lengths non-zero multiples of 8).
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
unsafe fn merge_64<const COUNT: bool>(l: &[u64], r: &[u64], out: &mut [u64]) -> u64 {
    let (nl, nr) = (l.len(), r.len());
    assert!(nl >= 8 && nr >= 8 && out.len() == nl + nr);
    assert!(nl.is_multiple_of(8) && nr.is_multiple_of(8));
    let k = K64::new();
    let (lp, rp, op) = (l.as_ptr(), r.as_ptr(), out.as_mut_ptr());
    let key_l = |x: u64| if COUNT { x & !1 } else { x };
    let key_r = |x: u64| if COUNT { x | 1 } else { x };
    let mut acc = _mm512_setzero_si512();
    let mut positions = 0u64;

    // SAFETY: both runs hold at least one register.
    let (mut a, mut b) = unsafe { (_mm512_loadu_si512(lp.cast()), _mm512_loadu_si512(rp.cast())) };
    if COUNT {
        (a, b) = (k.left(a), k.right(b));
    }
    let (lo, mut cur) = merge2_64(&k, a, b);
    // SAFETY: `out` holds `nl + nr >= 16` values.
    unsafe { _mm512_storeu_si512(op.cast(), lo) };
    if COUNT {
        k.tally(&mut acc, lo, k.iota[0]);
    }
    let mut cur_max = key_l(l[7]).max(key_r(r[7]));
    let (mut i, mut j) = (8, 8);
    let total = nl + nr;
    let mut o = 8;
    while o + 8 < total {
        // SAFETY: the indices are clamped into the runs.
        let (lh, rh) = unsafe { (*lp.add(i.min(nl - 1)), *rp.add(j.min(nr - 1))) };
        let heads_le = if COUNT { lh >> 1 <= rh >> 1 } else { lh <= rh };
        let take_l = (i < nl) & ((j >= nr) | heads_le);
        let (src, tag) = if take_l {
            (lp.wrapping_add(i), 0)
        } else {
            (rp.wrapping_add(j), 1)
        };
        i += if take_l { 8 } else { 0 };
        j += if take_l { 0 } else { 8 };
        // SAFETY: `src` is the chosen run's next register, inside the run.
        let (head, tail, mut next) = unsafe { (*src, *src.add(7), _mm512_loadu_si512(src.cast())) };
        let (first, last) = if COUNT {
            next = k.retag(next, _mm512_set1_epi64(tag));
            ((head & !1) | tag as u64, (tail & !1) | tag as u64)
        } else {
            (head, tail)
        };
        let done;
        if first >= cur_max {
            done = cur;
            cur = next;
            cur_max = last;
        } else {
            (done, cur) = merge2_64(&k, cur, next);
            cur_max = cur_max.max(last);
        }
        // SAFETY: `o + 8 < total`.
        unsafe { _mm512_storeu_si512(op.add(o).cast(), done) };
        if COUNT {
            positions += o as u64 * k.tally(&mut acc, done, k.iota[0]);
        }
        o += 8;
    }
    // SAFETY: `o + 8 == total`.
    unsafe { _mm512_storeu_si512(op.add(o).cast(), cur) };
    if !COUNT {
        return 0;
    }
    positions += o as u64 * k.tally(&mut acc, cur, k.iota[0]);
    positions += _mm512_reduce_add_epi64(acc) as u64;
    merge_constant(nl as u64, nr as u64) - positions
}

/// [`count_u32`] for the u64 counting layout.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
pub(super) unsafe fn count_u64(buf: &mut [u64], tmp: &mut [u64]) -> (u64, bool) {
    // SAFETY: the caller guarantees the CPU features.
    let blocks = unsafe { sort_blocks_64::<true>(buf) };
    let (merged, in_tmp) = merge_passes(buf, tmp, 16, |l, r, o| {
        // SAFETY: as above; runs are whole registers.
        unsafe { merge_64::<true>(l, r, o) }
    });
    (blocks + merged, in_tmp)
}

/// [`sort_u32`] for u64 keys.
///
/// # Safety
/// The CPU must support AVX-512F and POPCNT.
#[target_feature(enable = "avx512f,popcnt")]
pub(super) unsafe fn sort_u64(buf: &mut [u64], tmp: &mut [u64]) -> bool {
    // SAFETY: the caller guarantees the CPU features.
    unsafe { sort_blocks_64::<false>(buf) };
    merge_passes(buf, tmp, 16, |l, r, o| {
        // SAFETY: as above; runs are whole registers.
        unsafe { merge_64::<false>(l, r, o) }
    })
    .1
}

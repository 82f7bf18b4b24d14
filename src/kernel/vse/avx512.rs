//! AVX-512 paths: 16 lanes of u32, 8 lanes of u64.
//!
//! Blocks of four u32 registers (64 values) or two u64 registers (16 values)
//! are sorted by bitonic networks in registers; runs are then merged one
//! register at a time through a bitonic merge network. When counting, bit 0
//! of every value is its origin tag (see the parent module). The block sort
//! and the merge are the generic ones of [`super::vector`]; this file holds
//! the [`Vector`] implementations: the in-register networks and tallies.

use std::arch::x86_64::*;

use super::Isa;
use super::scalar::lookup;
use super::vector::{self, Vector};

super::vector::entry_points!(Isa::Avx512, "avx512f,popcnt", K32, K64);

/// Sum of the sixteen u32 lanes, widened first: a merge of up to 2^31
/// values can sum past u32 even though no lane overflows.
#[inline]
#[target_feature(enable = "avx512f")]
fn sum_lanes(x: __m512i) -> u64 {
    let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(x));
    let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(x));
    _mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi)) as u64
}

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

    /// Adds the positions `pos` of the tagged lanes of `x` to `acc`; returns
    /// the number of tagged lanes.
    #[inline]
    #[target_feature(enable = "avx512f,popcnt")]
    fn tally_pos(&self, acc: &mut __m512i, x: __m512i, pos: __m512i) -> u64 {
        let tagged = _mm512_test_epi32_mask(x, self.one);
        *acc = _mm512_mask_add_epi32(*acc, tagged, *acc, pos);
        u64::from(tagged.count_ones())
    }
}

// SAFETY: `K32` is only made by `new`, which requires AVX-512F and POPCNT,
// the features of every method.
unsafe impl Vector for K32 {
    type Elem = u32;
    type V = __m512i;
    const LANES: usize = 16;
    const BLOCK_REGS: usize = 4;
    const MULTIPLE: usize = 16;
    const MERGE_ACC: bool = true;

    #[inline(always)]
    unsafe fn new() -> Self {
        // SAFETY: the caller guarantees the CPU features.
        unsafe { K32::new() }
    }
    #[inline(always)]
    unsafe fn load(&self, p: *const u32) -> __m512i {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(&self, p: *mut u32, x: __m512i) {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm512_storeu_si512(p.cast(), x) }
    }
    #[inline(always)]
    fn zero(&self) -> __m512i {
        // SAFETY: `self` exists, so the CPU has the features.
        unsafe { _mm512_setzero_si512() }
    }
    #[inline(always)]
    fn splat(&self, x: u32) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_set1_epi32(x as i32) }
    }
    #[inline(always)]
    fn reverse(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_permutexvar_epi32(self.rev, x) }
    }
    #[inline(always)]
    fn min_max(&self, x: __m512i, y: __m512i) -> (__m512i, __m512i) {
        // SAFETY: as above.
        unsafe { (_mm512_min_epu32(x, y), _mm512_max_epu32(x, y)) }
    }
    #[inline(always)]
    fn clean(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { clean16(x) }
    }
    #[inline(always)]
    fn sort<const COUNT: bool>(&self, x: __m512i, acc: &mut __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { sort16::<COUNT>(self, x, acc) }
    }
    #[inline(always)]
    fn left(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_and_si512(x, self.keep) }
    }
    #[inline(always)]
    fn right(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_or_si512(x, self.one) }
    }
    #[inline(always)]
    fn retag(&self, x: __m512i, pat: __m512i) -> __m512i {
        // (x & keep) | pat
        // SAFETY: as above.
        unsafe { _mm512_ternarylogic_epi32::<0xEA>(x, self.keep, pat) }
    }
    #[inline(always)]
    fn tally(&self, acc: &mut __m512i, x: __m512i, r: usize) {
        // SAFETY: as above.
        unsafe { self.tally_pos(acc, x, self.iota[r]) };
    }
    #[inline(always)]
    fn tally_at(&self, acc: &mut __m512i, x: __m512i, o: usize) -> u64 {
        // SAFETY: as above.
        o as u64 * unsafe { self.tally_pos(acc, x, self.iota[0]) }
    }
    #[inline(always)]
    fn sum(&self, acc: __m512i) -> u64 {
        // SAFETY: as above.
        unsafe { sum_lanes(acc) }
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
        k.tally_pos(acc, x, k.lane_mod[0]);
        x = k.retag(x, k.pat[1]);
    }
    // 2 + 2
    x = cas32(x, _mm512_shuffle_epi32::<0x1B>(x), 0xCCCC);
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally_pos(acc, x, k.lane_mod[1]);
        x = k.retag(x, k.pat[2]);
    }
    // 4 + 4
    x = cas32(x, _mm512_permutexvar_epi32(k.xor7, x), 0xF0F0);
    x = cas32(x, _mm512_shuffle_epi32::<0x4E>(x), 0xCCCC);
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally_pos(acc, x, k.lane_mod[2]);
        x = k.retag(x, k.pat[3]);
    }
    // 8 + 8
    x = cas32(x, _mm512_permutexvar_epi32(k.rev, x), 0xFF00);
    x = cas32(x, _mm512_shuffle_i32x4::<0xB1>(x, x), 0xF0F0);
    x = cas32(x, _mm512_shuffle_epi32::<0x4E>(x), 0xCCCC);
    x = cas32(x, _mm512_shuffle_epi32::<0xB1>(x), 0xAAAA);
    if COUNT {
        k.tally_pos(acc, x, k.iota[0]);
    }
    x
}

/// `out[k] = u[order[k]] << 16 | v[order[k]]`. Panics if an index is out of
/// range.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn gather_packed(u: &[u32], v: &[u32], order: &[u32], out: &mut [u32]) {
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
unsafe fn equal_neighbours(x: &[u32], words: &mut [u64]) -> usize {
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
unsafe fn gather<const SHIFT: bool>(values: &[u32], order: &[u32], out: &mut [u32]) {
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

    /// Adds the positions `pos` of the tagged lanes of `x` to `acc`; returns
    /// the number of tagged lanes.
    #[inline]
    #[target_feature(enable = "avx512f,popcnt")]
    fn tally_pos(&self, acc: &mut __m512i, x: __m512i, pos: __m512i) -> u64 {
        let tagged = _mm512_test_epi64_mask(x, self.one);
        *acc = _mm512_mask_add_epi64(*acc, tagged, *acc, pos);
        u64::from(tagged.count_ones())
    }
}

// SAFETY: `K64` is only made by `new`, which requires AVX-512F and POPCNT,
// the features of every method.
unsafe impl Vector for K64 {
    type Elem = u64;
    type V = __m512i;
    const LANES: usize = 8;
    const BLOCK_REGS: usize = 2;
    const MULTIPLE: usize = 16;
    const MERGE_ACC: bool = true;

    #[inline(always)]
    unsafe fn new() -> Self {
        // SAFETY: the caller guarantees the CPU features.
        unsafe { K64::new() }
    }
    #[inline(always)]
    unsafe fn load(&self, p: *const u64) -> __m512i {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(&self, p: *mut u64, x: __m512i) {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm512_storeu_si512(p.cast(), x) }
    }
    #[inline(always)]
    fn zero(&self) -> __m512i {
        // SAFETY: `self` exists, so the CPU has the features.
        unsafe { _mm512_setzero_si512() }
    }
    #[inline(always)]
    fn splat(&self, x: u64) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_set1_epi64(x as i64) }
    }
    #[inline(always)]
    fn reverse(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_permutexvar_epi64(self.rev, x) }
    }
    #[inline(always)]
    fn min_max(&self, x: __m512i, y: __m512i) -> (__m512i, __m512i) {
        // SAFETY: as above.
        unsafe { (_mm512_min_epu64(x, y), _mm512_max_epu64(x, y)) }
    }
    #[inline(always)]
    fn clean(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { clean8(x) }
    }
    #[inline(always)]
    fn sort<const COUNT: bool>(&self, x: __m512i, acc: &mut __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { sort8::<COUNT>(self, x, acc) }
    }
    #[inline(always)]
    fn left(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_and_si512(x, self.keep) }
    }
    #[inline(always)]
    fn right(&self, x: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_or_si512(x, self.one) }
    }
    #[inline(always)]
    fn retag(&self, x: __m512i, pat: __m512i) -> __m512i {
        // SAFETY: as above.
        unsafe { _mm512_ternarylogic_epi64::<0xEA>(x, self.keep, pat) }
    }
    #[inline(always)]
    fn tally(&self, acc: &mut __m512i, x: __m512i, r: usize) {
        // SAFETY: as above.
        unsafe { self.tally_pos(acc, x, self.iota[r]) };
    }
    #[inline(always)]
    fn tally_at(&self, acc: &mut __m512i, x: __m512i, o: usize) -> u64 {
        // SAFETY: as above.
        o as u64 * unsafe { self.tally_pos(acc, x, self.iota[0]) }
    }
    #[inline(always)]
    fn sum(&self, acc: __m512i) -> u64 {
        // SAFETY: as above.
        unsafe { _mm512_reduce_add_epi64(acc) as u64 }
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
        k.tally_pos(acc, x, k.lane_mod[0]);
        x = k.retag(x, k.pat[1]);
    }
    // 2 + 2
    x = cas64(x, _mm512_permutex_epi64::<0x1B>(x), 0xCC);
    x = cas64(x, _mm512_shuffle_epi32::<0x4E>(x), 0xAA);
    if COUNT {
        k.tally_pos(acc, x, k.lane_mod[1]);
        x = k.retag(x, k.pat[2]);
    }
    // 4 + 4
    x = cas64(x, _mm512_permutexvar_epi64(k.rev, x), 0xF0);
    x = cas64(x, _mm512_shuffle_i64x2::<0xB1>(x, x), 0xCC);
    x = cas64(x, _mm512_shuffle_epi32::<0x4E>(x), 0xAA);
    if COUNT {
        k.tally_pos(acc, x, k.iota[0]);
    }
    x
}

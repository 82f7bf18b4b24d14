//! AVX2 paths: 8 lanes of u32, 4 lanes of u64.
//!
//! The structure of the AVX-512 paths with narrower registers: blocks of four
//! u32 registers (32 values) or two u64 registers (8 values) sorted by
//! bitonic networks, then runs merged one register at a time (the generic
//! code of [`super::vector`] over this file's [`Vector`] implementations).
//! AVX2 has no unsigned 64-bit minimum, so the u64 networks compare with the
//! sign bit flipped.

use std::arch::x86_64::*;

use super::Isa;
use super::scalar::lookup;
use super::vector::{self, Vector};

super::vector::entry_points!(Isa::Avx2, "avx2,popcnt", K32, K64);

/// `LANE_SUM[m]`: the sum of the indices of the set bits of `m`.
const LANE_SUM: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        let mut sum = 0;
        let mut b = 0;
        while b < 8 {
            if m & (1 << b) != 0 {
                sum += b;
            }
            b += 1;
        }
        table[m] = sum as u8;
        m += 1;
    }
    table
};

/// `o · popcount(m) + Σ lanes of m`: the positions of the tagged lanes of a
/// register written at offset `o` with tag mask `m`.
#[inline]
#[target_feature(enable = "popcnt")]
fn positions(o: usize, m: i32) -> u64 {
    let m = (m & 0xFF) as usize;
    o as u64 * u64::from(m.count_ones()) + u64::from(LANE_SUM[m])
}

// ----------------------------------------------------------------------------
// u32, 8 lanes
// ----------------------------------------------------------------------------

/// Loop-invariant vectors of the u32 networks.
struct K32 {
    one: __m256i,
    keep: __m256i,
    rev: __m256i,
    /// Lane index, plus 8, 16, 24.
    iota: [__m256i; 4],
    /// Lane index mod 2, 4.
    lane_mod: [__m256i; 2],
    /// Tag patterns of the in-register merges of 1+1, 2+2, 4+4.
    pat: [__m256i; 3],
}

impl K32 {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new() -> Self {
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let one = _mm256_set1_epi32(1);
        let bit = |s: i32| _mm256_min_epu32(_mm256_and_si256(iota, _mm256_set1_epi32(s)), one);
        Self {
            one,
            keep: _mm256_set1_epi32(!1),
            rev: _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0),
            iota: [
                iota,
                _mm256_add_epi32(iota, _mm256_set1_epi32(8)),
                _mm256_add_epi32(iota, _mm256_set1_epi32(16)),
                _mm256_add_epi32(iota, _mm256_set1_epi32(24)),
            ],
            lane_mod: [
                _mm256_and_si256(iota, _mm256_set1_epi32(1)),
                _mm256_and_si256(iota, _mm256_set1_epi32(3)),
            ],
            pat: [bit(1), bit(2), bit(4)],
        }
    }

    /// Adds the positions `pos` of the tagged lanes of `x` to `acc`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn tally_pos(&self, acc: &mut __m256i, x: __m256i, pos: __m256i) {
        // sign(pos, tag) is pos where the tag is 1 and 0 where it is 0.
        let tag = _mm256_and_si256(x, self.one);
        *acc = _mm256_add_epi32(*acc, _mm256_sign_epi32(pos, tag));
    }
}

// SAFETY: `K32` is only made by `new`, which requires AVX2 and POPCNT,
// the features of every method.
unsafe impl Vector for K32 {
    type Elem = u32;
    type V = __m256i;
    const LANES: usize = 8;
    const BLOCK_REGS: usize = 4;
    const MULTIPLE: usize = 16;
    const MERGE_ACC: bool = false;

    #[inline(always)]
    unsafe fn new() -> Self {
        // SAFETY: the caller guarantees the CPU features.
        unsafe { K32::new() }
    }
    #[inline(always)]
    unsafe fn load(&self, p: *const u32) -> __m256i {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(&self, p: *mut u32, x: __m256i) {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm256_storeu_si256(p.cast(), x) }
    }
    #[inline(always)]
    fn zero(&self) -> __m256i {
        // SAFETY: `self` exists, so the CPU has the features.
        unsafe { _mm256_setzero_si256() }
    }
    #[inline(always)]
    fn splat(&self, x: u32) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_set1_epi32(x as i32) }
    }
    #[inline(always)]
    fn reverse(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_permutevar8x32_epi32(x, self.rev) }
    }
    #[inline(always)]
    fn min_max(&self, x: __m256i, y: __m256i) -> (__m256i, __m256i) {
        // SAFETY: as above.
        unsafe { (_mm256_min_epu32(x, y), _mm256_max_epu32(x, y)) }
    }
    #[inline(always)]
    fn clean(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { clean8(x) }
    }
    #[inline(always)]
    fn sort<const COUNT: bool>(&self, x: __m256i, acc: &mut __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { sort8::<COUNT>(self, x, acc) }
    }
    #[inline(always)]
    fn left(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_and_si256(x, self.keep) }
    }
    #[inline(always)]
    fn right(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(x, self.one) }
    }
    #[inline(always)]
    fn retag(&self, x: __m256i, pat: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(_mm256_and_si256(x, self.keep), pat) }
    }
    #[inline(always)]
    fn tally(&self, acc: &mut __m256i, x: __m256i, r: usize) {
        // SAFETY: as above.
        unsafe { self.tally_pos(acc, x, self.iota[r]) };
    }
    #[inline(always)]
    fn tally_at(&self, _acc: &mut __m256i, x: __m256i, o: usize) -> u64 {
        // SAFETY: as above.
        unsafe { positions(o, tags32(x)) }
    }
    #[inline(always)]
    fn sum(&self, acc: __m256i) -> u64 {
        // SAFETY: as above.
        unsafe { hsum32(acc) }
    }
}

/// The tag mask of a register: bit `i` is bit 0 of lane `i`.
#[inline]
#[target_feature(enable = "avx2")]
fn tags32(x: __m256i) -> i32 {
    _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<31>(x)))
}

/// Sum of the eight u32 lanes, widened first: a merge of up to 2^31
/// values can sum past u32 even though no lane overflows.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum32(x: __m256i) -> u64 {
    let lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(x));
    let hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(x));
    hsum64(_mm256_add_epi64(lo, hi))
}

/// Compare-exchange of `x` with the partner lanes `y`: lanes set in `UPPER`
/// keep the larger value, the others the smaller.
#[inline]
#[target_feature(enable = "avx2")]
fn cas32<const UPPER: i32>(x: __m256i, y: __m256i) -> __m256i {
    _mm256_blend_epi32::<UPPER>(_mm256_min_epu32(x, y), _mm256_max_epu32(x, y))
}

/// Sorts a bitonic register (half-cleaners at distance 4, 2, 1).
#[inline]
#[target_feature(enable = "avx2")]
fn clean8(x: __m256i) -> __m256i {
    let x = cas32::<0xF0>(x, _mm256_permute4x64_epi64::<0x4E>(x));
    let x = cas32::<0xCC>(x, _mm256_shuffle_epi32::<0x4E>(x));
    cas32::<0xAA>(x, _mm256_shuffle_epi32::<0xB1>(x))
}

/// Bitonic sort of one register; when `COUNT`, tags and tallies each of its
/// three merge stages into `acc`.
#[inline]
#[target_feature(enable = "avx2")]
fn sort8<const COUNT: bool>(k: &K32, mut x: __m256i, acc: &mut __m256i) -> __m256i {
    // 1 + 1
    if COUNT {
        x = k.retag(x, k.pat[0]);
    }
    x = cas32::<0xAA>(x, _mm256_shuffle_epi32::<0xB1>(x));
    if COUNT {
        k.tally_pos(acc, x, k.lane_mod[0]);
        x = k.retag(x, k.pat[1]);
    }
    // 2 + 2
    x = cas32::<0xCC>(x, _mm256_shuffle_epi32::<0x1B>(x));
    x = cas32::<0xAA>(x, _mm256_shuffle_epi32::<0xB1>(x));
    if COUNT {
        k.tally_pos(acc, x, k.lane_mod[1]);
        x = k.retag(x, k.pat[2]);
    }
    // 4 + 4
    x = cas32::<0xF0>(x, k.reverse(x));
    x = cas32::<0xCC>(x, _mm256_shuffle_epi32::<0x4E>(x));
    x = cas32::<0xAA>(x, _mm256_shuffle_epi32::<0xB1>(x));
    if COUNT {
        k.tally_pos(acc, x, k.iota[0]);
    }
    x
}

/// `out[k] = u[order[k]] << 16 | v[order[k]]`. Panics if an index is out of
/// range.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
unsafe fn gather_packed(u: &[u32], v: &[u32], order: &[u32], out: &mut [u32]) {
    let n = order.len();
    assert_eq!(out.len(), n);
    assert!(i32::try_from(u.len().min(v.len())).is_ok());
    let mut k = 0;
    if let Some(last) = u.len().min(v.len()).checked_sub(1) {
        let last = _mm256_set1_epi32(last as i32);
        let (ub, vb) = (u.as_ptr().cast::<i32>(), v.as_ptr().cast::<i32>());
        let mut all_ok = _mm256_set1_epi32(-1);
        while k + 8 <= n {
            // SAFETY: `k + 8 <= n`.
            let idx = unsafe { _mm256_loadu_si256(order.as_ptr().add(k).cast()) };
            let ok = _mm256_cmpeq_epi32(_mm256_max_epu32(idx, last), last);
            all_ok = _mm256_and_si256(all_ok, ok);
            let zero = _mm256_setzero_si256();
            // SAFETY: only lanes with an index below both lengths are read.
            let (x, y) = unsafe {
                (
                    _mm256_mask_i32gather_epi32::<4>(zero, ub, idx, ok),
                    _mm256_mask_i32gather_epi32::<4>(zero, vb, idx, ok),
                )
            };
            let packed = _mm256_or_si256(_mm256_slli_epi32::<16>(x), y);
            // SAFETY: `k + 8 <= n == out.len()`.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(k).cast(), packed) };
            k += 8;
        }
        assert!(
            _mm256_movemask_epi8(all_ok) == -1,
            "sample order index out of range"
        );
    }
    for (o, &i) in out[k..].iter_mut().zip(&order[k..]) {
        *o = (lookup(u, i) << 16) | lookup(v, i);
    }
}

/// Sets bit `k % 64` of `words[k / 64]` when `x[k] == x[k + 1]`, for `k`
/// below the returned bound (a multiple of 8; the caller does the rest).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
unsafe fn equal_neighbours(x: &[u32], words: &mut [u64]) -> usize {
    let pairs = x.len().saturating_sub(1);
    assert!(words.len() * 64 >= pairs);
    let p = x.as_ptr();
    let mut k = 0;
    while k + 8 <= pairs {
        // SAFETY: `k + 8 < x.len()`.
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(p.add(k).cast()),
                _mm256_loadu_si256(p.add(k + 1).cast()),
            )
        };
        let eq = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)));
        words[k / 64] |= u64::from(eq as u8) << (k % 64);
        k += 8;
    }
    k
}

/// `out[k] = values[order[k]]`, doubled when `SHIFT`. Panics if an index is
/// out of range.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
unsafe fn gather<const SHIFT: bool>(values: &[u32], order: &[u32], out: &mut [u32]) {
    let n = order.len();
    assert_eq!(out.len(), n);
    assert!(i32::try_from(values.len()).is_ok());
    let mut k = 0;
    if let Some(last) = values.len().checked_sub(1) {
        let last = _mm256_set1_epi32(last as i32);
        let base = values.as_ptr().cast::<i32>();
        let mut all_ok = _mm256_set1_epi32(-1);
        while k + 8 <= n {
            // SAFETY: `k + 8 <= n`.
            let idx = unsafe { _mm256_loadu_si256(order.as_ptr().add(k).cast()) };
            // idx <= last, unsigned
            let ok = _mm256_cmpeq_epi32(_mm256_max_epu32(idx, last), last);
            all_ok = _mm256_and_si256(all_ok, ok);
            // SAFETY: only lanes with an index below `values.len()` are read.
            let x =
                unsafe { _mm256_mask_i32gather_epi32::<4>(_mm256_setzero_si256(), base, idx, ok) };
            let x = if SHIFT { _mm256_add_epi32(x, x) } else { x };
            // SAFETY: `k + 8 <= n == out.len()`.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(k).cast(), x) };
            k += 8;
        }
        assert!(
            _mm256_movemask_epi8(all_ok) == -1,
            "sample order index out of range"
        );
    }
    for (o, &i) in out[k..].iter_mut().zip(&order[k..]) {
        *o = lookup(values, i) << u32::from(SHIFT);
    }
}

// ----------------------------------------------------------------------------
// u64, 4 lanes
// ----------------------------------------------------------------------------

/// Loop-invariant vectors of the u64 networks.
struct K64 {
    one: __m256i,
    keep: __m256i,
    sign: __m256i,
    /// Lanes 1 and 3; lanes 2 and 3 (the upper lanes of each stage).
    upper: [__m256i; 2],
    /// Lane index, plus 4.
    iota: [__m256i; 2],
    /// Lane index mod 2.
    lane_mod2: __m256i,
    /// Tag patterns of the in-register merges of 1+1, 2+2.
    pat: [__m256i; 2],
}

impl K64 {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new() -> Self {
        let iota = _mm256_setr_epi64x(0, 1, 2, 3);
        Self {
            one: _mm256_set1_epi64x(1),
            keep: _mm256_set1_epi64x(!1),
            sign: _mm256_set1_epi64x(i64::MIN),
            upper: [
                _mm256_setr_epi64x(0, -1, 0, -1),
                _mm256_setr_epi64x(0, 0, -1, -1),
            ],
            iota: [iota, _mm256_add_epi64(iota, _mm256_set1_epi64x(4))],
            lane_mod2: _mm256_setr_epi64x(0, 1, 0, 1),
            pat: [
                _mm256_setr_epi64x(0, 1, 0, 1),
                _mm256_setr_epi64x(0, 0, 1, 1),
            ],
        }
    }

    /// Adds the positions `pos` of the tagged lanes of `x` to `acc`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn tally_pos(&self, acc: &mut __m256i, x: __m256i, pos: __m256i) {
        let tagged = _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_and_si256(x, self.one));
        *acc = _mm256_add_epi64(*acc, _mm256_and_si256(pos, tagged));
    }

    /// All-ones in the lanes where `x > y` (unsigned).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn greater(&self, x: __m256i, y: __m256i) -> __m256i {
        _mm256_cmpgt_epi64(
            _mm256_xor_si256(x, self.sign),
            _mm256_xor_si256(y, self.sign),
        )
    }

    /// Lane-wise unsigned minimum and maximum.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn min_max64(&self, x: __m256i, y: __m256i) -> (__m256i, __m256i) {
        let gt = self.greater(x, y);
        (_mm256_blendv_epi8(x, y, gt), _mm256_blendv_epi8(y, x, gt))
    }

    /// Compare-exchange of `x` with the partner lanes `y`: lanes set in
    /// `upper` keep the larger value, the others the smaller.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn cas(&self, x: __m256i, y: __m256i, upper: __m256i) -> __m256i {
        // lower lanes take y where x > y; upper lanes where x <= y.
        let take_y = _mm256_xor_si256(self.greater(x, y), upper);
        _mm256_blendv_epi8(x, y, take_y)
    }

    /// Sorts a bitonic register (half-cleaners at distance 2, 1).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn clean4(&self, x: __m256i) -> __m256i {
        let x = self.cas(x, _mm256_permute4x64_epi64::<0x4E>(x), self.upper[1]);
        self.cas(x, _mm256_shuffle_epi32::<0x4E>(x), self.upper[0])
    }

    /// Bitonic sort of one register, tallying when `COUNT`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn sort4<const COUNT: bool>(&self, mut x: __m256i, acc: &mut __m256i) -> __m256i {
        if COUNT {
            x = self.retag(x, self.pat[0]);
        }
        x = self.cas(x, _mm256_shuffle_epi32::<0x4E>(x), self.upper[0]);
        if COUNT {
            self.tally_pos(acc, x, self.lane_mod2);
            x = self.retag(x, self.pat[1]);
        }
        x = self.cas(x, _mm256_permute4x64_epi64::<0x1B>(x), self.upper[1]);
        x = self.cas(x, _mm256_shuffle_epi32::<0x4E>(x), self.upper[0]);
        if COUNT {
            self.tally_pos(acc, x, self.iota[0]);
        }
        x
    }
}

// SAFETY: `K64` is only made by `new`, which requires AVX2 and POPCNT,
// the features of every method.
unsafe impl Vector for K64 {
    type Elem = u64;
    type V = __m256i;
    const LANES: usize = 4;
    const BLOCK_REGS: usize = 2;
    const MULTIPLE: usize = 8;
    const MERGE_ACC: bool = false;

    #[inline(always)]
    unsafe fn new() -> Self {
        // SAFETY: the caller guarantees the CPU features.
        unsafe { K64::new() }
    }
    #[inline(always)]
    unsafe fn load(&self, p: *const u64) -> __m256i {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(&self, p: *mut u64, x: __m256i) {
        // SAFETY: the caller guarantees `p`; `self` the features.
        unsafe { _mm256_storeu_si256(p.cast(), x) }
    }
    #[inline(always)]
    fn zero(&self) -> __m256i {
        // SAFETY: `self` exists, so the CPU has the features.
        unsafe { _mm256_setzero_si256() }
    }
    #[inline(always)]
    fn splat(&self, x: u64) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_set1_epi64x(x as i64) }
    }
    #[inline(always)]
    fn reverse(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_permute4x64_epi64::<0x1B>(x) }
    }
    #[inline(always)]
    fn min_max(&self, x: __m256i, y: __m256i) -> (__m256i, __m256i) {
        // SAFETY: as above.
        unsafe { self.min_max64(x, y) }
    }
    #[inline(always)]
    fn clean(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { self.clean4(x) }
    }
    #[inline(always)]
    fn sort<const COUNT: bool>(&self, x: __m256i, acc: &mut __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { self.sort4::<COUNT>(x, acc) }
    }
    #[inline(always)]
    fn left(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_and_si256(x, self.keep) }
    }
    #[inline(always)]
    fn right(&self, x: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(x, self.one) }
    }
    #[inline(always)]
    fn retag(&self, x: __m256i, pat: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(_mm256_and_si256(x, self.keep), pat) }
    }
    #[inline(always)]
    fn tally(&self, acc: &mut __m256i, x: __m256i, r: usize) {
        // SAFETY: as above.
        unsafe { self.tally_pos(acc, x, self.iota[r]) };
    }
    #[inline(always)]
    fn tally_at(&self, _acc: &mut __m256i, x: __m256i, o: usize) -> u64 {
        // SAFETY: as above.
        unsafe { positions(o, tags64(x)) }
    }
    #[inline(always)]
    fn sum(&self, acc: __m256i) -> u64 {
        // SAFETY: as above.
        unsafe { hsum64(acc) }
    }
}

/// The tag mask of a u64 register: bit `i` is bit 0 of lane `i`.
#[inline]
#[target_feature(enable = "avx2")]
fn tags64(x: __m256i) -> i32 {
    _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64::<63>(x)))
}

/// Sum of the four u64 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum64(x: __m256i) -> u64 {
    let s = _mm_add_epi64(_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x));
    let s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
    _mm_cvtsi128_si64(s) as u64
}

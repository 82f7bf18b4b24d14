//! AVX2 bit-plane kernels: four words per register, popcount by nibble
//! lookup (`vpshufb`) and `vpsadbw` (Muła, Kurz, Lemire).

use std::arch::x86_64::*;

/// Per-64-bit-lane popcount of `v`.
#[inline]
#[target_feature(enable = "avx2")]
fn popcnt256(v: __m256i) -> __m256i {
    let lookup = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let low = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(v, low);
    let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    let bytes = _mm256_add_epi8(
        _mm256_shuffle_epi8(lookup, lo),
        _mm256_shuffle_epi8(lookup, hi),
    );
    _mm256_sad_epu8(bytes, _mm256_setzero_si256())
}

/// Loads the 4 words at `p`.
///
/// # Safety
/// `p..p+4` must be readable.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load(p: *const u64) -> __m256i {
    // SAFETY: the caller guarantees 4 readable words; unaligned load.
    unsafe { _mm256_loadu_si256(p.cast()) }
}

/// Sum of the four 64-bit lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn reduce(v: __m256i) -> u64 {
    let sum = _mm256_add_epi64(v, _mm256_permute4x64_epi64::<0b01_00_11_10>(v));
    let sum = _mm_add_epi64(
        _mm256_castsi256_si128(sum),
        _mm_unpackhi_epi64(_mm256_castsi256_si128(sum), _mm256_castsi256_si128(sum)),
    );
    _mm_cvtsi128_si64(sum) as u64
}

/// `[pc(a_k ^ b) for k in 0..4]`; all slices of one length, a multiple of 4.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn xor_pop4(a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
    let words = b.len();
    debug_assert!(words.is_multiple_of(4) && a.iter().all(|r| r.len() == words));
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 4 <= words and every slice has `words` elements.
        unsafe {
            let vb = load(b.as_ptr().add(w));
            for k in 0..4 {
                let va = load(a[k].as_ptr().add(w));
                acc[k] = _mm256_add_epi64(acc[k], popcnt256(_mm256_xor_si256(va, vb)));
            }
        }
        w += 4;
    }
    [
        reduce(acc[0]),
        reduce(acc[1]),
        reduce(acc[2]),
        reduce(acc[3]),
    ]
}

/// `[S_k for k in 0..4]` with `S = pc((Gu & Gv) | (Lu & Lv)) - pc((Gu & Lv) | (Lu & Gv))`;
/// slices as in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn s_pop4(gu: [&[u64]; 4], lu: [&[u64]; 4], gv: &[u64], lv: &[u64]) -> [i64; 4] {
    let words = gv.len();
    debug_assert!(words.is_multiple_of(4) && lv.len() == words);
    debug_assert!(gu.iter().chain(&lu).all(|r| r.len() == words));
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 4 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let l = load(lv.as_ptr().add(w));
            for k in 0..4 {
                let a = load(gu[k].as_ptr().add(w));
                let b = load(lu[k].as_ptr().add(w));
                let c = _mm256_or_si256(_mm256_and_si256(a, g), _mm256_and_si256(b, l));
                let d = _mm256_or_si256(_mm256_and_si256(a, l), _mm256_and_si256(b, g));
                let diff = _mm256_sub_epi64(popcnt256(c), popcnt256(d));
                acc[k] = _mm256_add_epi64(acc[k], diff);
            }
        }
        w += 4;
    }
    [
        reduce(acc[0]),
        reduce(acc[1]),
        reduce(acc[2]),
        reduce(acc[3]),
    ]
    .map(|x| x as i64)
}

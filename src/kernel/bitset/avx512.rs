//! AVX-512 bit-plane kernels: eight words per register, VPOPCNTQ.
//!
//! Planes are padded to whole 512-bit registers, so there is no tail.

use std::arch::x86_64::*;

/// [`super::scalar::compare64`], 16 ranks per comparison (the last ones
/// under a mask: masked-off lanes are not read).
///
/// # Safety
/// The CPU must support AVX-512 F.
#[target_feature(enable = "avx512f")]
pub unsafe fn compare64(ra: u32, chunk: &[u32]) -> (u64, u64) {
    debug_assert!(chunk.len() <= 64);
    let a = _mm512_set1_epi32(ra as i32);
    let missing = _mm512_set1_epi32(crate::input::MISSING_RANK as i32);
    let (mut greater, mut less) = (0u64, 0u64);
    let mut k = 0;
    while k < chunk.len() {
        let mask: __mmask16 = match chunk.len() - k {
            16.. => u16::MAX,
            left => (1u16 << left) - 1,
        };
        // SAFETY: the lanes under `mask` are in `chunk`; the others are
        // neither read nor faulted on.
        let b = unsafe { _mm512_maskz_loadu_epi32(mask, chunk.as_ptr().add(k).cast()) };
        let gt = _mm512_mask_cmpgt_epu32_mask(mask, b, a) & !_mm512_cmpeq_epi32_mask(b, missing);
        let lt = _mm512_mask_cmplt_epu32_mask(mask, b, a);
        greater |= u64::from(gt) << k;
        less |= u64::from(lt) << k;
        k += 16;
    }
    (greater, less)
}

/// Loads the 8 words at `p`.
///
/// # Safety
/// `p..p+8` must be readable.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load(p: *const u64) -> __m512i {
    // SAFETY: the caller guarantees 8 readable words; unaligned load.
    unsafe { _mm512_loadu_si512(p.cast()) }
}

/// `[pc(a_k ^ b) for k in 0..4]`; all slices of one length, a multiple of 8.
///
/// # Safety
/// The CPU must support AVX-512 F and VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn xor_pop4(a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
    let words = b.len();
    debug_assert!(words.is_multiple_of(8) && a.iter().all(|r| r.len() == words));
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 8 <= words and every slice has `words` elements.
        unsafe {
            let vb = load(b.as_ptr().add(w));
            for k in 0..4 {
                let va = load(a[k].as_ptr().add(w));
                acc[k] = _mm512_add_epi64(acc[k], _mm512_popcnt_epi64(_mm512_xor_si512(va, vb)));
            }
        }
        w += 8;
    }
    [
        _mm512_reduce_add_epi64(acc[0]) as u64,
        _mm512_reduce_add_epi64(acc[1]) as u64,
        _mm512_reduce_add_epi64(acc[2]) as u64,
        _mm512_reduce_add_epi64(acc[3]) as u64,
    ]
}

/// `[pc((Gu_k & Lv) | (Lu_k & Gv)) for k in 0..4]`: discordant pairs with
/// ties allowed; slices as in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX-512 F and VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn disc_pop4(gu: [&[u64]; 4], lu: [&[u64]; 4], gv: &[u64], lv: &[u64]) -> [u64; 4] {
    let words = gv.len();
    debug_assert!(words.is_multiple_of(8) && lv.len() == words);
    debug_assert!(gu.iter().chain(&lu).all(|r| r.len() == words));
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 8 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let l = load(lv.as_ptr().add(w));
            for k in 0..4 {
                let a = load(gu[k].as_ptr().add(w));
                let b = load(lu[k].as_ptr().add(w));
                // (a & l) | (b & g): one AND, then one ternary OR-with-AND.
                let al = _mm512_and_si512(a, l);
                let d = _mm512_ternarylogic_epi64::<0xF8>(al, b, g);
                acc[k] = _mm512_add_epi64(acc[k], _mm512_popcnt_epi64(d));
            }
        }
        w += 8;
    }
    [
        _mm512_reduce_add_epi64(acc[0]) as u64,
        _mm512_reduce_add_epi64(acc[1]) as u64,
        _mm512_reduce_add_epi64(acc[2]) as u64,
        _mm512_reduce_add_epi64(acc[3]) as u64,
    ]
}

/// `[S_k for k in 0..4]` with `S = pc((Gu & Gv) | (Lu & Lv)) - pc((Gu & Lv) | (Lu & Gv))`;
/// slices as in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX-512 F and VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn s_pop4(gu: [&[u64]; 4], lu: [&[u64]; 4], gv: &[u64], lv: &[u64]) -> [i64; 4] {
    let words = gv.len();
    debug_assert!(words.is_multiple_of(8) && lv.len() == words);
    debug_assert!(gu.iter().chain(&lu).all(|r| r.len() == words));
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut neg = [_mm512_setzero_si512(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 8 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let l = load(lv.as_ptr().add(w));
            for k in 0..4 {
                let a = load(gu[k].as_ptr().add(w));
                let b = load(lu[k].as_ptr().add(w));
                // (a & g) | (b & l) and (a & l) | (b & g): one AND and one
                // ternary-logic operation each (0xF8: x | (y & z)).
                let c = _mm512_ternarylogic_epi64::<0xF8>(_mm512_and_si512(a, g), b, l);
                let d = _mm512_ternarylogic_epi64::<0xF8>(_mm512_and_si512(a, l), b, g);
                acc[k] = _mm512_add_epi64(acc[k], _mm512_popcnt_epi64(c));
                neg[k] = _mm512_add_epi64(neg[k], _mm512_popcnt_epi64(d));
            }
        }
        w += 8;
    }
    std::array::from_fn(|k| _mm512_reduce_add_epi64(_mm512_sub_epi64(acc[k], neg[k])))
}

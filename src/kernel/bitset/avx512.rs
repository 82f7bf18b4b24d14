//! AVX-512 bit-plane kernels: eight words per register, VPOPCNTQ.
//!
//! Planes are padded to whole 512-bit registers, so there is no tail.

use std::arch::x86_64::*;

/// These loops (see [`super::Ops`]).
pub(super) const OPS: super::Ops = super::Ops {
    compare64,
    xor_pop4,
    disc_pop4,
    s_pop4,
    // Every AVX-512 CPU this kernel runs on has AVX2 (`Isa::cpu_supports`
    // checks it): the rank scores' dot products and test are the AVX2
    // loops.
    score_dots4: super::avx2::score_dots4,
    screen_columns: super::avx2::screen_columns,
};

/// [`super::scalar::compare64`], 16 ranks per comparison (the last ones
/// under a mask: masked-off lanes are not read).
///
/// # Safety
/// The CPU must support AVX-512 F.
#[target_feature(enable = "avx512f")]
pub unsafe fn compare64(ra: u32, chunk: &[u32]) -> (u64, u64) {
    debug_assert!(chunk.len() <= 64);
    let a = _mm512_set1_epi32(ra as i32);
    let missing = _mm512_set1_epi32(crate::rank::MISSING_RANK as i32);
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

/// `[pc(¬(Uu_k | Uv) & (Gu_k ^ Gv)) for k in 0..4]`: discordant pairs
/// with ties allowed; slices as in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX-512 F and VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn disc_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [u64; 4] {
    let words = gv.len();
    debug_assert!(words.is_multiple_of(8) && uv.len() == words);
    debug_assert!(gu.iter().chain(&uu).all(|r| r.len() == words));
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 8 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let u = load(uv.as_ptr().add(w));
            for k in 0..4 {
                let y = _mm512_xor_si512(load(gu[k].as_ptr().add(w)), g);
                // ¬(Uu | Uv) & Y: one ternary-logic operation (0x02).
                let d = _mm512_ternarylogic_epi64::<0x02>(load(uu[k].as_ptr().add(w)), u, y);
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

/// `[S_k for k in 0..4]` with `S = 64·words - pc(E | Y) - pc(¬E & Y)`,
/// `E = Uu | Uv`, `Y = Gu ^ Gv` (see [`super::scalar::s_pop4`]); slices as
/// in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX-512 F and VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn s_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [i64; 4] {
    let words = gv.len();
    debug_assert!(words.is_multiple_of(8) && uv.len() == words);
    debug_assert!(gu.iter().chain(&uu).all(|r| r.len() == words));
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 8 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let u = load(uv.as_ptr().add(w));
            for k in 0..4 {
                let y = _mm512_xor_si512(load(gu[k].as_ptr().add(w)), g);
                let uk = load(uu[k].as_ptr().add(w));
                // E | Y and ¬E & Y: one ternary-logic operation each
                // (0xFE: x | y | z; 0x02: ¬x & ¬y & z).
                let f = _mm512_ternarylogic_epi64::<0xFE>(uk, u, y);
                let d = _mm512_ternarylogic_epi64::<0x02>(uk, u, y);
                let both = _mm512_add_epi64(_mm512_popcnt_epi64(f), _mm512_popcnt_epi64(d));
                acc[k] = _mm512_add_epi64(acc[k], both);
            }
        }
        w += 8;
    }
    std::array::from_fn(|k| 64 * words as i64 - _mm512_reduce_add_epi64(acc[k]))
}

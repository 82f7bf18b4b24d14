//! Portable bit-plane kernels: the reference for the SIMD paths.
//!
//! On x86-64 the same code is also compiled with the POPCNT instruction
//! enabled (the `popcnt_*` functions), since the baseline x86-64 target
//! counts bits in software.

/// The G and L bits of one stretch of a plane row: bit `k` of the first
/// word is set when `chunk[k] > ra` (`chunk[k]` present), of the second when
/// `chunk[k] < ra`; `chunk` holds at most 64 ranks, `ra` is present.
/// [`MISSING_RANK`](crate::input::MISSING_RANK) is above every rank: never
/// "less", and excluded from "greater" explicitly.
#[inline]
pub fn compare64(ra: u32, chunk: &[u32]) -> (u64, u64) {
    debug_assert!(chunk.len() <= 64);
    let (mut greater, mut less) = (0u64, 0u64);
    for (k, &rb) in chunk.iter().enumerate() {
        greater |= u64::from(rb > ra && rb != crate::input::MISSING_RANK) << k;
        less |= u64::from(rb < ra) << k;
    }
    (greater, less)
}

/// `[pc(a_k ^ b) for k in 0..4]`.
#[inline(always)]
pub fn xor_pop4(a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
    let mut acc = [0u64; 4];
    for (w, &bw) in b.iter().enumerate() {
        for k in 0..4 {
            acc[k] += u64::from((a[k][w] ^ bw).count_ones());
        }
    }
    acc
}

/// `[S_k for k in 0..4]` with `S = pc((Gu & Gv) | (Lu & Lv)) - pc((Gu & Lv) | (Lu & Gv))`:
/// concordant minus discordant sample pairs, exact with ties in either gene.
#[inline(always)]
pub fn s_pop4(gu: [&[u64]; 4], lu: [&[u64]; 4], gv: &[u64], lv: &[u64]) -> [i64; 4] {
    let mut acc = [0i64; 4];
    for (w, (&g, &l)) in gv.iter().zip(lv).enumerate() {
        for k in 0..4 {
            let (a, b) = (gu[k][w], lu[k][w]);
            let concordant = ((a & g) | (b & l)).count_ones();
            let discordant = ((a & l) | (b & g)).count_ones();
            acc[k] += i64::from(concordant) - i64::from(discordant);
        }
    }
    acc
}

/// `[pc((Gu_k & Lv) | (Lu_k & Gv)) for k in 0..4]`: discordant sample
/// pairs, exact with ties in either gene.
#[inline(always)]
pub fn disc_pop4(gu: [&[u64]; 4], lu: [&[u64]; 4], gv: &[u64], lv: &[u64]) -> [u64; 4] {
    let mut acc = [0u64; 4];
    for (w, (&g, &l)) in gv.iter().zip(lv).enumerate() {
        for k in 0..4 {
            acc[k] += u64::from(((gu[k][w] & l) | (lu[k][w] & g)).count_ones());
        }
    }
    acc
}

/// [`xor_pop4`] with the POPCNT instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
pub unsafe fn popcnt_xor_pop4(a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
    xor_pop4(a, b)
}

/// [`s_pop4`] with the POPCNT instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
pub unsafe fn popcnt_s_pop4(gu: [&[u64]; 4], lu: [&[u64]; 4], gv: &[u64], lv: &[u64]) -> [i64; 4] {
    s_pop4(gu, lu, gv, lv)
}

/// [`disc_pop4`] with the POPCNT instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
pub unsafe fn popcnt_disc_pop4(
    gu: [&[u64]; 4],
    lu: [&[u64]; 4],
    gv: &[u64],
    lv: &[u64],
) -> [u64; 4] {
    disc_pop4(gu, lu, gv, lv)
}

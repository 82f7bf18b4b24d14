//! Portable bit-plane kernels: the reference for the SIMD paths.
//!
//! On x86-64 the same code is also compiled with the POPCNT instruction
//! enabled (the `popcnt_*` functions), since the baseline x86-64 target
//! counts bits in software.

/// The portable loops (see [`super::Ops`]).
pub(super) const OPS: super::Ops = super::Ops {
    compare64,
    xor_pop4,
    disc_pop4,
    s_pop4,
    score_dots4: crate::kernel::score_bound::dots4,
    screen_columns,
};

/// The portable loops compiled with the POPCNT instruction.
#[cfg(target_arch = "x86_64")]
pub(super) const POPCNT_OPS: super::Ops = super::Ops {
    compare64,
    xor_pop4: popcnt_xor_pop4,
    disc_pop4: popcnt_disc_pop4,
    s_pop4: popcnt_s_pop4,
    score_dots4: crate::kernel::score_bound::dots4,
    screen_columns,
};

/// [`super::screen_columns`], portable.
fn screen_columns(
    run: &super::ScreenRun<'_, '_>,
    kept: &mut Vec<(usize, Option<[i64; 4]>)>,
) -> usize {
    super::screen_columns(run, kept)
}

/// The G and L (x_b < x_a) bits of one stretch of a plane row: bit `k` of the first
/// word is set when `chunk[k] > ra` (`chunk[k]` present), of the second when
/// `chunk[k] < ra`; `chunk` holds at most 64 ranks, `ra` is present.
/// [`MISSING_RANK`](crate::rank::MISSING_RANK) is above every rank: never
/// "less", and excluded from "greater" explicitly.
#[inline]
pub fn compare64(ra: u32, chunk: &[u32]) -> (u64, u64) {
    debug_assert!(chunk.len() <= 64);
    let (mut greater, mut less) = (0u64, 0u64);
    for (k, &rb) in chunk.iter().enumerate() {
        greater |= u64::from(rb > ra && rb != crate::rank::MISSING_RANK) << k;
        less |= u64::from(rb < ra) << k;
    }
    (greater, less)
}

/// `[pc(a_k ^ b) for k in 0..4]`.
#[inline(always)]
pub fn xor_pop4(a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
    // Rows cut to the column's length (panics if one is shorter): called
    // out of line through [`super::Ops`], the loop then has no bounds
    // checks and vectorises as it did inlined.
    let a = a.map(|r| &r[..b.len()]);
    let mut acc = [0u64; 4];
    for (w, &bw) in b.iter().enumerate() {
        for k in 0..4 {
            acc[k] += u64::from((a[k][w] ^ bw).count_ones());
        }
    }
    acc
}

/// `[S_k for k in 0..4]`: concordant minus discordant sample pairs, exact
/// with ties and missing values in either gene. With `E = Uu | Uv` and
/// `Y = Gu ^ Gv`, the concordant pairs are `¬E & ¬Y` and the discordant
/// ones `¬E & Y`, so `S = 64·words - pc(E | Y) - pc(¬E & Y)`.
#[inline(always)]
pub fn s_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [i64; 4] {
    // As in `xor_pop4`: no bounds checks in the loop.
    let uv = &uv[..gv.len()];
    let (gu, uu) = (gu.map(|r| &r[..gv.len()]), uu.map(|r| &r[..gv.len()]));
    let mut acc = [0u64; 4];
    for (w, (&g, &u)) in gv.iter().zip(uv).enumerate() {
        for k in 0..4 {
            let (e, y) = (uu[k][w] | u, gu[k][w] ^ g);
            // pc(E | Y) = pc(E) + pc(¬E & Y), E and ¬E & Y being disjoint.
            acc[k] += u64::from(e.count_ones() + 2 * (!e & y).count_ones());
        }
    }
    acc.map(|x| 64 * gv.len() as i64 - x as i64)
}

/// `[pc(¬(Uu_k | Uv) & (Gu_k ^ Gv)) for k in 0..4]`: discordant sample
/// pairs, exact with ties and missing values in either gene.
#[inline(always)]
pub fn disc_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [u64; 4] {
    // As in `xor_pop4`: no bounds checks in the loop.
    let uv = &uv[..gv.len()];
    let (gu, uu) = (gu.map(|r| &r[..gv.len()]), uu.map(|r| &r[..gv.len()]));
    let mut acc = [0u64; 4];
    for (w, (&g, &u)) in gv.iter().zip(uv).enumerate() {
        for k in 0..4 {
            acc[k] += u64::from((!(uu[k][w] | u) & (gu[k][w] ^ g)).count_ones());
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
pub unsafe fn popcnt_s_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [i64; 4] {
    s_pop4(gu, uu, gv, uv)
}

/// [`disc_pop4`] with the POPCNT instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
pub unsafe fn popcnt_disc_pop4(
    gu: [&[u64]; 4],
    uu: [&[u64]; 4],
    gv: &[u64],
    uv: &[u64],
) -> [u64; 4] {
    disc_pop4(gu, uu, gv, uv)
}

//! AVX2 bit-plane kernels: four words per register.
//!
//! Popcounts are taken by nibble lookup (`vpshufb` + `vpsadbw`, Muła, Kurz,
//! Lemire) on short planes and by a Harley–Seal carry-save adder tree on
//! long ones ([`HARLEY_SEAL_MIN_VECTORS`]): 16 vectors are reduced with 15
//! carry-save adders (5 logic operations each) to one vector of "sixteens"
//! whose popcount is then taken once, instead of 16 lookups of 8 operations.
//! The four rows of a group share each 16-vector block of the column, and
//! the adder state of each row is carried from block to block.

use std::arch::x86_64::*;

/// These loops (see [`super::Ops`]).
pub(super) const OPS: super::Ops = super::Ops {
    compare64,
    xor_pop4,
    disc_pop4,
    s_pop4,
    score_dots4,
    screen_columns,
};

/// Planes of at least this many 256-bit vectors take the Harley–Seal path;
/// shorter ones the nibble lookup per vector (the adder tree only pays once
/// its per-row state, kept across blocks, is amortised over enough blocks).
/// Measured with `cargo bench --bench kernels` on Zen 5 (docs/benchmarks/2026-11-24-bitset-avx2-harley-seal-zen5.md).
pub const HARLEY_SEAL_MIN_VECTORS: usize = 64;

/// Per-64-bit-lane popcount of `v`.
#[inline]
#[target_feature(enable = "avx2")]
fn popcnt256(v: __m256i) -> __m256i {
    _mm256_sad_epu8(byte_counts(v), _mm256_setzero_si256())
}

/// Per-byte popcount of `v` (nibble lookup).
#[inline]
#[target_feature(enable = "avx2")]
fn byte_counts(v: __m256i) -> __m256i {
    let lookup = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let low = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(v, low);
    let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    _mm256_add_epi8(
        _mm256_shuffle_epi8(lookup, lo),
        _mm256_shuffle_epi8(lookup, hi),
    )
}

/// [`super::scalar::compare64`], 8 ranks per comparison: ranks are below
/// 2^31, so the signed comparison orders them, and
/// [`MISSING_RANK`](crate::rank::MISSING_RANK) (-1 as a signed lane) is
/// never "greater" and is taken out of "less".
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn compare64(ra: u32, chunk: &[u32]) -> (u64, u64) {
    debug_assert!(chunk.len() <= 64 && ra < 1 << 31);
    let a = _mm256_set1_epi32(ra as i32);
    let missing = _mm256_set1_epi32(-1);
    let bits = |v: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u8 as u64;
    let (mut greater, mut less) = (0u64, 0u64);
    let mut k = 0;
    while k + 8 <= chunk.len() {
        // SAFETY: k + 8 <= chunk.len(); unaligned load.
        let b = unsafe { _mm256_loadu_si256(chunk.as_ptr().add(k).cast()) };
        let gt = _mm256_cmpgt_epi32(b, a);
        let lt = _mm256_andnot_si256(_mm256_cmpeq_epi32(b, missing), _mm256_cmpgt_epi32(a, b));
        greater |= bits(gt) << k;
        less |= bits(lt) << k;
        k += 8;
    }
    if k < chunk.len() {
        let (g, l) = super::scalar::compare64(ra, &chunk[k..]);
        (greater, less) = (greater | g << k, less | l << k);
    }
    (greater, less)
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

/// The vectors whose bits a kernel counts: `N` per word position (their
/// popcounts are summed), for each of the four rows of a group.
trait Stream<const N: usize> {
    /// Vector `part` (< `N`) of row `k` at words `w..w + 4`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and `w + 4` must not exceed the planes'
    /// length. Called only from `avx2` functions, into which it is inlined.
    unsafe fn at(&self, k: usize, w: usize, part: usize) -> __m256i;
}

/// `a_k ^ b`: discordant pairs of two genes without ties.
struct Xor<'a> {
    a: [&'a [u64]; 4],
    b: &'a [u64],
}

impl Stream<1> for Xor<'_> {
    #[inline(always)]
    unsafe fn at(&self, k: usize, w: usize, _: usize) -> __m256i {
        // SAFETY: the caller guarantees AVX2 and w + 4 <= len.
        unsafe {
            let vb = load(self.b.as_ptr().add(w));
            let va = load(self.a[k].as_ptr().add(w));
            _mm256_xor_si256(va, vb)
        }
    }
}

/// `¬(Uu | Uv) & (Gu ^ Gv)`: discordant pairs, ties allowed.
struct Discordant<'a> {
    gu: [&'a [u64]; 4],
    uu: [&'a [u64]; 4],
    gv: &'a [u64],
    uv: &'a [u64],
}

impl Discordant<'_> {
    /// `(E, Y) = (Uu | Uv, Gu ^ Gv)` of row `k` at words `w..w + 4`.
    ///
    /// # Safety
    /// As [`Stream::at`].
    #[inline(always)]
    unsafe fn e_y(&self, k: usize, w: usize) -> (__m256i, __m256i) {
        // SAFETY: the caller guarantees AVX2 and w + 4 <= len.
        unsafe {
            let (g, u) = (load(self.gv.as_ptr().add(w)), load(self.uv.as_ptr().add(w)));
            let e = _mm256_or_si256(load(self.uu[k].as_ptr().add(w)), u);
            (e, _mm256_xor_si256(load(self.gu[k].as_ptr().add(w)), g))
        }
    }
}

impl Stream<1> for Discordant<'_> {
    #[inline(always)]
    unsafe fn at(&self, k: usize, w: usize, _: usize) -> __m256i {
        // SAFETY: as `e_y`; AVX2 (caller) for the intrinsic.
        unsafe {
            let (e, y) = self.e_y(k, w);
            _mm256_andnot_si256(e, y)
        }
    }
}

/// `E | Y` and `¬E & Y` (see [`Discordant::e_y`]): the complement of the
/// concordant pairs and the discordant ones, whose popcounts sum to
/// `64·words - S`.
struct Signed<'a>(Discordant<'a>);

impl Stream<2> for Signed<'_> {
    #[inline(always)]
    unsafe fn at(&self, k: usize, w: usize, part: usize) -> __m256i {
        // SAFETY: as `e_y`; AVX2 (caller) for the intrinsics.
        unsafe {
            let (e, y) = self.0.e_y(k, w);
            if part == 0 {
                _mm256_or_si256(e, y)
            } else {
                _mm256_andnot_si256(e, y)
            }
        }
    }
}

/// A carry-save adder: `(high, low)` with `a + b + c = 2·high + low` per bit.
#[inline(always)]
unsafe fn csa(a: __m256i, b: __m256i, c: __m256i) -> (__m256i, __m256i) {
    // SAFETY: inlined into `avx2` functions only.
    unsafe {
        let u = _mm256_xor_si256(a, b);
        let high = _mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(u, c));
        (high, _mm256_xor_si256(u, c))
    }
}

/// Total popcount of the stream for each of the four rows, over `words`
/// (a multiple of 4) words: Harley–Seal on whole 16-vector blocks, the
/// nibble lookup on the rest. For long planes only (see
/// [`HARLEY_SEAL_MIN_VECTORS`]); short ones take the plain loops below.
///
/// # Safety
/// The CPU must support AVX2; every plane of `s` has `words` words.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn count4<const N: usize, S: Stream<N>>(s: &S, words: usize) -> [u64; 4] {
    let zero = _mm256_setzero_si256();
    let mut total = [zero; 4];
    let mut w = 0;
    // Harley–Seal over blocks of 16 vectors (16 / N word positions).
    let step = 64 / N;
    {
        let (mut ones, mut twos, mut fours, mut eights) =
            ([zero; 4], [zero; 4], [zero; 4], [zero; 4]);
        while w + step <= words {
            for k in 0..4 {
                // Vector i of this row's block: word position i / N, part i % N.
                // SAFETY: w + step <= words, so every position is in the planes.
                let v = |i: usize| unsafe { s.at(k, w + 4 * (i / N), i % N) };
                // SAFETY: AVX2 is enabled here.
                unsafe {
                    let (o, t, f, e) = (ones[k], twos[k], fours[k], eights[k]);
                    let (t_a, o) = csa(o, v(0), v(1));
                    let (t_b, o) = csa(o, v(2), v(3));
                    let (f_a, t) = csa(t, t_a, t_b);
                    let (t_a, o) = csa(o, v(4), v(5));
                    let (t_b, o) = csa(o, v(6), v(7));
                    let (f_b, t) = csa(t, t_a, t_b);
                    let (e_a, f) = csa(f, f_a, f_b);
                    let (t_a, o) = csa(o, v(8), v(9));
                    let (t_b, o) = csa(o, v(10), v(11));
                    let (f_a, t) = csa(t, t_a, t_b);
                    let (t_a, o) = csa(o, v(12), v(13));
                    let (t_b, o) = csa(o, v(14), v(15));
                    let (f_b, t) = csa(t, t_a, t_b);
                    let (e_b, f) = csa(f, f_a, f_b);
                    let (sixteens, e) = csa(e, e_a, e_b);
                    total[k] = _mm256_add_epi64(total[k], popcnt256(sixteens));
                    (ones[k], twos[k], fours[k], eights[k]) = (o, t, f, e);
                }
            }
            w += step;
        }
        for k in 0..4 {
            let t = _mm256_slli_epi64::<4>(total[k]);
            let t = _mm256_add_epi64(t, _mm256_slli_epi64::<3>(popcnt256(eights[k])));
            let t = _mm256_add_epi64(t, _mm256_slli_epi64::<2>(popcnt256(fours[k])));
            let t = _mm256_add_epi64(t, _mm256_slli_epi64::<1>(popcnt256(twos[k])));
            total[k] = _mm256_add_epi64(t, popcnt256(ones[k]));
        }
    }
    while w < words {
        for (k, total) in total.iter_mut().enumerate() {
            for part in 0..N {
                // SAFETY: w + 4 <= words (words is a multiple of 4).
                let v = unsafe { s.at(k, w, part) };
                *total = _mm256_add_epi64(*total, popcnt256(v));
            }
        }
        w += 4;
    }
    total.map(|t| reduce(t))
}

/// `[pc(a_k ^ b) for k in 0..4]`; all slices of one length, a multiple of 4.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn xor_pop4(a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
    let words = b.len();
    assert!(words.is_multiple_of(4) && a.iter().all(|r| r.len() == words));
    if words / 4 >= HARLEY_SEAL_MIN_VECTORS {
        // SAFETY: AVX2 (caller), planes of `words` words (checked).
        return unsafe { count4(&Xor { a, b }, words) };
    }
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
    acc.map(|t| reduce(t))
}

/// `[pc(¬(Uu_k | Uv) & (Gu_k ^ Gv)) for k in 0..4]`: discordant pairs with
/// ties allowed; slices as in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn disc_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [u64; 4] {
    let words = gv.len();
    assert!(words.is_multiple_of(4) && uv.len() == words);
    assert!(gu.iter().chain(&uu).all(|r| r.len() == words));
    if words / 4 >= HARLEY_SEAL_MIN_VECTORS {
        // SAFETY: AVX2 (caller), planes of `words` words (checked).
        return unsafe { count4(&Discordant { gu, uu, gv, uv }, words) };
    }
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 4 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let u = load(uv.as_ptr().add(w));
            for k in 0..4 {
                let e = _mm256_or_si256(load(uu[k].as_ptr().add(w)), u);
                let y = _mm256_xor_si256(load(gu[k].as_ptr().add(w)), g);
                acc[k] = _mm256_add_epi64(acc[k], popcnt256(_mm256_andnot_si256(e, y)));
            }
        }
        w += 4;
    }
    acc.map(|t| reduce(t))
}

/// `[S_k for k in 0..4]` with `S = 64·words - pc(E | Y) - pc(¬E & Y)`,
/// `E = Uu | Uv`, `Y = Gu ^ Gv` (see [`super::scalar::s_pop4`]); slices as
/// in [`xor_pop4`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn s_pop4(gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [i64; 4] {
    let words = gv.len();
    assert!(words.is_multiple_of(4) && uv.len() == words);
    assert!(gu.iter().chain(&uu).all(|r| r.len() == words));
    if words / 2 >= HARLEY_SEAL_MIN_VECTORS {
        // SAFETY: AVX2 (caller), planes of `words` words (checked).
        let sums = unsafe { count4(&Signed(Discordant { gu, uu, gv, uv }), words) };
        return sums.map(|x| 64 * words as i64 - x as i64);
    }
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut w = 0;
    while w < words {
        // SAFETY: w + 4 <= words and every slice has `words` elements.
        unsafe {
            let g = load(gv.as_ptr().add(w));
            let u = load(uv.as_ptr().add(w));
            for k in 0..4 {
                let e = _mm256_or_si256(load(uu[k].as_ptr().add(w)), u);
                let y = _mm256_xor_si256(load(gu[k].as_ptr().add(w)), g);
                // Byte counts of at most 8 each: their sum fits a byte.
                let bytes = _mm256_add_epi8(
                    byte_counts(_mm256_or_si256(e, y)),
                    byte_counts(_mm256_andnot_si256(e, y)),
                );
                let both = _mm256_sad_epu8(bytes, _mm256_setzero_si256());
                acc[k] = _mm256_add_epi64(acc[k], both);
            }
        }
        w += 4;
    }
    acc.map(|t| 64 * words as i64 - reduce(t) as i64)
}

/// The four `i32` sums of the lanes of `acc` (one register a row), added
/// to `total`: a chunk's sum and every partial sum of its lanes are below
/// 2^30 (see [`dots_of`]), so `vphaddd` does not wrap.
#[inline]
#[target_feature(enable = "avx2")]
fn add_lane_sums(total: &mut [i64; 4], acc: [__m256i; 4]) {
    let t01 = _mm256_hadd_epi32(acc[0], acc[1]);
    let t23 = _mm256_hadd_epi32(acc[2], acc[3]);
    let t = _mm256_hadd_epi32(t01, t23);
    let sums = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256::<1>(t));
    total[0] += i64::from(_mm_extract_epi32::<0>(sums));
    total[1] += i64::from(_mm_extract_epi32::<1>(sums));
    total[2] += i64::from(_mm_extract_epi32::<2>(sums));
    total[3] += i64::from(_mm_extract_epi32::<3>(sums));
}

/// [`score_bound::dot4`](crate::kernel::score_bound::dot4) of the four
/// rows `a` with each of the `C` columns `b` (of one length, the rows at
/// least as long), with `vpmaddwd`, 16 scores a register, each load of a
/// row's scores feeding every column's sum: each `i32` lane adds 32
/// products per chunk of [`CHUNK`](crate::kernel::score_bound::CHUNK)
/// scores (below 2^27 in size for rank scores, and any sum of the 8 lanes
/// below 2^30), and the chunks add up in `i64`. A tail shorter than a
/// register (none for padded scores) takes the portable loop.
#[inline]
#[target_feature(enable = "avx2")]
fn dots_of<const C: usize>(a: [&[i16]; 4], b: [&[i16]; C]) -> [[i64; 4]; C] {
    use crate::kernel::score_bound::{CHUNK, dot4};
    let len = b[0].len();
    assert!(b.iter().all(|c| c.len() == len));
    let a = a.map(|r| &r[..len]);
    let whole = len / 16 * 16;
    let mut total = [[0i64; 4]; C];
    let mut start = 0;
    while start < whole {
        let end = (start + CHUNK).min(whole);
        let mut acc = [[_mm256_setzero_si256(); 4]; C];
        let mut p = start;
        while p < end {
            let mut v = [_mm256_setzero_si256(); C];
            for c in 0..C {
                // SAFETY: p + 16 <= whole <= len = b[c].len(); unaligned load.
                v[c] = unsafe { _mm256_loadu_si256(b[c].as_ptr().add(p).cast()) };
            }
            for k in 0..4 {
                // SAFETY: p + 16 <= len = a[k].len(); unaligned load.
                let av = unsafe { _mm256_loadu_si256(a[k].as_ptr().add(p).cast()) };
                for c in 0..C {
                    acc[c][k] = _mm256_add_epi32(acc[c][k], _mm256_madd_epi16(av, v[c]));
                }
            }
            p += 16;
        }
        for c in 0..C {
            add_lane_sums(&mut total[c], acc[c]);
        }
        start = end;
    }
    if whole < len {
        for c in 0..C {
            let tail = dot4(a.map(|r| &r[whole..]), &b[c][whole..]);
            (0..4).for_each(|k| total[c][k] += tail[k]);
        }
    }
    total
}

/// [`score_bound::dots4`](crate::kernel::score_bound::dots4): two columns
/// at a time ([`dots_of`], eight accumulators), a last odd column alone.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn score_dots4(a: [&[i16]; 4], cols: &[i16], stride: usize, out: &mut [[i64; 4]]) {
    assert!(stride > 0 && cols.len() == out.len() * stride);
    let mut outs = out.chunks_exact_mut(2);
    let mut twos = cols.chunks_exact(2 * stride);
    for (q, two) in (&mut outs).zip(&mut twos) {
        let (b0, b1) = two.split_at(stride);
        let [q0, q1] = dots_of(a, [b0, b1]);
        (q[0], q[1]) = (q0, q1);
    }
    if let [q] = outs.into_remainder() {
        [*q] = dots_of(a, [twos.remainder()]);
    }
}

/// [`super::screen_columns`] compiled for AVX2: each column's four `f64`
/// lanes of the rank scores' test in one register.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn screen_columns(
    run: &super::ScreenRun<'_, '_>,
    kept: &mut Vec<(usize, Option<[i64; 4]>)>,
) -> usize {
    super::screen_columns(run, kept)
}

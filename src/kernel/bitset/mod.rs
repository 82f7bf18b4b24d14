//! The bit-plane kernel: Kendall's tau as a binary matrix product.
//!
//! For n samples there are n0 = n(n-1)/2 sample pairs (a < b). Each gene gets
//! two bit-planes over them, built once per query: G (x_b > x_a) and U, the
//! pairs that are *unordered* in the gene (x_b = x_a, or a value missing;
//! also every padding bit): U = ¬(G | L) with L (x_b < x_a). For genes u,
//! v, with `E = Uu | Uv` (the pairs that count nothing) and `Y = Gu ^ Gv`,
//! the discordant pairs are `nd = pc(¬E & Y)` and the concordant ones
//! `pc(¬E & ¬Y) = 64·W - pc(E | Y)` (W words per plane), so
//! `S = 64·W - (pc(E | Y) + pc(¬E & Y))`: four logic operations and two
//! popcounts per word (three operations with AVX-512's ternary logic),
//! where G and L planes need seven for the same (`(Gu & Gv) | (Lu & Lv)`,
//! `(Gu & Lv) | (Lu & Gv)` and a complement to add their popcounts in one
//! adder tree). For two genes without ties or missing values E is empty:
//! `S = n0 - 2·pc(Gu ^ Gv)`. That is O(n²/64) word operations per pair with
//! no sorting and no branches.
//!
//! Two genes without missing values whose tied pairs are few take the XOR
//! path too: `S = n0 - 2·pc(Gu ^ Gv)` plus a correction read from lists of
//! each gene's tied sample pairs, one rank comparison per listed pair
//! (`TiedPairs::xor_corrections4`, with its proof), where that costs less
//! than the U planes' extra work ([`xor_lists_budget`]).
//!
//! For two tied genes without missing values, `S = pc(¬E) - 2·nd` with
//! `pc(¬E) = n0 - n1 - n2 + n3` (`n3`: pairs tied in both genes, from lists
//! of each gene's tied pairs, `ties`): one popcount instead of two, taken
//! where counting `n3` is cheaper than the popcount it saves
//! ([`one_popcount_budget`]). No formula with one popcount avoids `n3`:
//! for `S = K - 2·pc(X)` to hold, every category of pairs must be in X or
//! not as a whole, and `n3` then enters `K` with an odd coefficient.
//!
//! Pairs are computed four rows at a time against a streamed column gene
//! ([`Bitset::block`]), so each loaded column word serves four popcounts.
//! Under a pushed-down filter that bounds tau ([`super::bound`]), the count
//! runs in blocks of words and stops once the pair cannot pass
//! ([`Bitset::block_bounded`]); the per-ISA loops are the same.
//! Planes are padded to whole 512-bit registers: the SIMD paths have no tail
//! and padding bits (zero in G, set in U) count as nothing.

mod scalar;
mod ties;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use datafusion::error::Result;

use super::PairNumerator;
use super::bound::{ExitCounts, PairRange, SBound};
use super::isa::Isa;
use super::score_bound::{self, RankScores};
use crate::memory::LineAlignedWords;
use crate::rank::pair_count;
use crate::rank::{MISSING_RANK, RankedMatrix};
use ties::TiedPairs;

/// Words (u64) per plane: enough for n0 bits, rounded up to 8 (one zmm).
pub fn words_per_plane(samples: usize) -> usize {
    (pair_count(samples) as usize).div_ceil(64).div_ceil(8) * 8
}

/// Bytes the planes of `genes` genes of `samples` samples occupy, with
/// the lists of tied sample pairs kept beside them (at most a sixteenth of
/// the planes, see `listed_pairs_cap`) and the genes' rank scores
/// ([`RankScores`], at most two bytes a sample).
pub fn plane_bytes(genes: usize, samples: usize) -> u64 {
    let words = words_per_plane(samples);
    2 * LineAlignedWords::bytes_for(genes * words) as u64
        + TiedPairs::max_bytes(genes, listed_pairs_cap(words))
        + RankScores::bytes(genes, samples)
}

/// Genes with at most this many tied sample pairs list them ([`TiedPairs`]),
/// for `n3` and for the XOR path's correction: a quarter of a plane's
/// words, 4 bytes each. Pairs whose gene with fewer tied pairs has more
/// count `n3` from its tie groups, and pairs with an unlisted gene never
/// take the XOR path.
fn listed_pairs_cap(words: usize) -> u64 {
    words as u64 / 4
}

/// The G and U bit-planes of every gene (see the module documentation).
#[derive(Debug)]
pub struct BitPlanes {
    words: usize,
    /// genes × words, row-major, line-aligned (a plane is a multiple of
    /// 8 words: every plane's 512-bit loads are whole cache lines).
    g: LineAlignedWords,
    /// genes × words, row-major, line-aligned.
    u: LineAlignedWords,
    /// Tied sample pairs of the genes with few.
    ties: TiedPairs,
    /// The genes' rank scores, for a bound on `S` before a count starts
    /// ([`score_bound`]); `None` outside its range of sample counts.
    scores: Option<RankScores>,
}

impl BitPlanes {
    /// Builds the planes of every gene of `m`, genes in parallel. Panics
    /// when memory cannot be allocated (see [`BitPlanes::try_build`]).
    pub fn build(m: &RankedMatrix) -> Self {
        Self::try_build(m).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`BitPlanes::build`], allocating fallibly: [`plane_bytes`] that the
    /// allocator refuses are an error, not an abort.
    pub fn try_build(m: &RankedMatrix) -> Result<Self> {
        let n = m.samples();
        let words = words_per_plane(n);
        let mut g = LineAlignedWords::try_zeroed(m.genes() * words, "bit-planes")?;
        let mut u = LineAlignedWords::try_zeroed(m.genes() * words, "bit-planes")?;
        // The planes are the same bits whichever instruction set builds them.
        let ops = Ops::new(Isa::detect());
        if words > 0 {
            g.as_mut_slice()
                .par_chunks_mut(words)
                .zip(u.as_mut_slice().par_chunks_mut(words))
                .enumerate()
                .for_each(|(gene, (g, u))| fill_planes(&ops, m.ranks(gene), g, u));
        }
        let ties = TiedPairs::try_build(m, listed_pairs_cap(words))?;
        let scores = RankScores::try_build(m)?;
        Ok(Self {
            words,
            g,
            u,
            ties,
            scores,
        })
    }

    /// Words per plane.
    pub fn words(&self) -> usize {
        self.words
    }

    /// The G plane of `gene`.
    #[inline]
    pub fn g(&self, gene: usize) -> &[u64] {
        &self.g.as_slice()[gene * self.words..(gene + 1) * self.words]
    }

    /// The U plane of `gene`: its unordered pairs (tied, a value missing,
    /// or padding).
    #[inline]
    pub fn u(&self, gene: usize) -> &[u64] {
        &self.u.as_slice()[gene * self.words..(gene + 1) * self.words]
    }
}

/// Sets the G and U bits of one gene from its ranks (`g` and `u` zero on
/// entry). Bit `k(a, b)` for a < b is `a·n - a(a+1)/2 + (b - a - 1)`: row a
/// of the triangle is contiguous, so it is written 64 comparisons at a
/// time. A pair with a missing value is in U, so it counts as nothing for
/// any partner: the planes give S over the samples a pair has in common.
fn fill_planes(ops: &Ops, ranks: &[u32], g: &mut [u64], u: &mut [u64]) {
    // L (x_b < x_a) is built in `u`, then U = ¬(G | L) word by word.
    let l = u;
    let n = ranks.len();
    let mut bit = 0usize;
    for a in 0..n {
        let ra = ranks[a];
        if ra == MISSING_RANK {
            bit += n - a - 1;
            continue;
        }
        for chunk in ranks[a + 1..].chunks(64) {
            let (greater, less) = ops.compare64(ra, chunk);
            put_bits(g, bit, greater);
            put_bits(l, bit, less);
            bit += chunk.len();
        }
    }
    for (l, &g) in l.iter_mut().zip(g.iter()) {
        *l = !(g | *l);
    }
}

/// [`Ops::score_dots4`]'s pointer type.
type ScoreDots4 = unsafe fn([&[i16]; 4], &[i16], usize, &mut [[i64; 4]]);

/// [`Ops::screen_columns`]'s pointer type.
type ScreenColumns = unsafe fn(&ScreenRun<'_, '_>, &mut Vec<(usize, Option<[i64; 4]>)>) -> usize;

/// [`Ops::disc_pop4`]'s and [`Ops::s_pop4`]'s pointer types.
type TiedPop4<T> = unsafe fn([&[u64]; 4], [&[u64]; 4], &[u64], &[u64]) -> [T; 4];

/// One instruction set's bit-plane loops, chosen once when planes are built
/// or a [`Bitset`] is made ([`Ops::new`], the way the memchr crate picks its
/// implementation): the hot path calls through these pointers, with no
/// dispatch on [`Isa`] per call. The tables are the `OPS` constants of the
/// per-ISA modules (`scalar::POPCNT_OPS`: the portable loops compiled with
/// the POPCNT instruction).
///
/// The pointers are `unsafe fn`s because the SIMD ones require their CPU
/// features. An `Ops` is only obtained from [`Ops::new`], which refuses an
/// instruction set that is not available (its fields are private to this
/// module and its children, which only fill in the `OPS` constants): that
/// is what makes every call through it sound.
#[derive(Debug, Clone, Copy)]
struct Ops {
    /// [`scalar::compare64`].
    compare64: unsafe fn(u32, &[u32]) -> (u64, u64),
    /// [`scalar::xor_pop4`] (slices of one length, a multiple of 8).
    xor_pop4: unsafe fn([&[u64]; 4], &[u64]) -> [u64; 4],
    /// [`scalar::disc_pop4`] (as `xor_pop4`).
    disc_pop4: TiedPop4<u64>,
    /// [`scalar::s_pop4`] (as `xor_pop4`).
    s_pop4: TiedPop4<i64>,
    /// [`score_bound::dots4`] (rank scores).
    score_dots4: ScoreDots4,
    /// [`screen_columns`] (compiled for the instruction set: its four
    /// lanes' `f64` tests are one AVX2 register).
    screen_columns: ScreenColumns,
}

impl Ops {
    /// The loops of `isa`. Panics (assert) if `isa` is not available.
    fn new(isa: Isa) -> Self {
        assert!(isa.is_available(), "{isa} is not available on this CPU");
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::OPS,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::OPS,
            #[cfg(target_arch = "x86_64")]
            _ if Isa::popcnt_available() => scalar::POPCNT_OPS,
            _ => scalar::OPS,
        }
    }

    /// [`scalar::compare64`].
    #[inline]
    fn compare64(&self, ra: u32, chunk: &[u32]) -> (u64, u64) {
        // SAFETY: `Ops::new` checked that the CPU supports the instruction
        // set of these loops (for the POPCNT ones, that it has POPCNT).
        unsafe { (self.compare64)(ra, chunk) }
    }

    /// [`scalar::xor_pop4`].
    #[inline]
    fn xor_pop4(&self, a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
        // SAFETY: as in `compare64`; the SIMD loops check the lengths.
        unsafe { (self.xor_pop4)(a, b) }
    }

    /// [`scalar::disc_pop4`].
    #[inline]
    fn disc_pop4(&self, gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [u64; 4] {
        // SAFETY: as in `xor_pop4`.
        unsafe { (self.disc_pop4)(gu, uu, gv, uv) }
    }

    /// [`scalar::s_pop4`].
    #[inline]
    fn s_pop4(&self, gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [i64; 4] {
        // SAFETY: as in `xor_pop4`.
        unsafe { (self.s_pop4)(gu, uu, gv, uv) }
    }

    /// [`screen_columns`].
    #[inline]
    fn screen_columns(
        &self,
        run: &ScreenRun<'_, '_>,
        kept: &mut Vec<(usize, Option<[i64; 4]>)>,
    ) -> usize {
        // SAFETY: as in `compare64`.
        unsafe { (self.screen_columns)(run, kept) }
    }

    /// [`score_bound::dots4`].
    #[inline]
    fn score_dots4(&self, a: [&[i16]; 4], cols: &[i16], stride: usize, out: &mut [[i64; 4]]) {
        // SAFETY: as in `compare64`; the loops check the lengths.
        unsafe { (self.score_dots4)(a, cols, stride, out) }
    }
}

/// ORs the (up to 64) bits of `value` into `plane` starting at bit `at`.
#[inline]
fn put_bits(plane: &mut [u64], at: usize, value: u64) {
    let (word, shift) = (at / 64, at % 64);
    plane[word] |= value << shift;
    if shift > 0 && value >> (64 - shift) != 0 {
        plane[word + 1] |= value >> (64 - shift);
    }
}

/// For a group of four rows and one column, the most tied-pair checks
/// (`Σ min(n1, n2)` over the rows, see `TiedPairs::n3`) for which
/// counting `n3` and one popcount beats two popcounts, on `isa` with planes
/// of `words` words. Since the two-popcount path takes four logic
/// operations per word (the U plane), the one-popcount path gains little:
/// on AVX2 (`KENDALL_MAX_ISA=avx2`, AMD EPYC Zen 5) half of `words` is as
/// fast as any budget on the 1,000 × 310 matrix rounded to 2 decimals
/// (about n/4 tied pairs per gene, `benches/end_to_end.rs`) and on
/// `cargo bench --bench kernels -- 310 1000 zeros=0.05` (about n²/800),
/// where three quarters lost 6 %, and it keeps n = 1,500 with n/4-level
/// ties (about n²/750 tied pairs per gene) on the two-popcount path, which
/// three quarters sent to the one-popcount one 20 % slower. Scalar with
/// POPCNT keeps three quarters (up to 13 % faster than two popcounts at
/// `zeros=0.1`). AVX-512 keeps the two-popcount path (budget zero): there
/// VPOPCNTQ makes the second popcount one instruction per 8 words, and the
/// one-popcount path has not been measured to pay.
pub fn one_popcount_budget(isa: Isa, words: usize) -> u64 {
    match isa {
        Isa::Avx512 => 0,
        Isa::Avx2 => words as u64 / 2,
        Isa::Scalar => words as u64 * 3 / 4,
    }
}

/// For a group of rows and one column, the most list entries per pair
/// (`n1 + n2`, averaged over the group's pairs) for which the XOR path with
/// the lists' correction (`TiedPairs::xor_corrections4`: one rank
/// comparison per entry) beats the tied paths, on `isa` with planes of
/// `words` words. Measured with `cargo bench --bench kernels -- 57 310 1000
/// levels=2 bitset` (about n/4 tied pairs per gene) on an AMD EPYC Zen 4
/// (AVX-512), old and new binaries alternated: at n = 1,000 (0.06 entries
/// per word) the XOR path is 1.50× (AVX-512), 1.63× (AVX2) and 1.83×
/// (scalar) the tied paths; at n = 310 (0.22 per word) 1.15× on AVX2 and
/// 1.75× scalar, while AVX-512, whose second popcount costs least, lost
/// there (0.79–0.87×); at n = 57 (0.9 per word) scalar lost (0.79×).
pub fn xor_lists_budget(isa: Isa, words: usize) -> u64 {
    match isa {
        Isa::Avx512 => words as u64 / 10,
        Isa::Avx2 => words as u64 / 3,
        Isa::Scalar => words as u64 / 2,
    }
}

/// Rows of a group whose planes (G only for four tie-free rows, G and U
/// for tied ones) take at most this many bytes are computed over whole
/// planes, one column at a time: with a column's planes they stay in the L1
/// data cache (32 KiB on Zen 3, 48 KiB on Zen 4 and 5).
const WHOLE_ROWS_BYTES: usize = 24 << 10;

/// Longer rows are walked in chunks of words whose four rows take this many
/// bytes (256 words of G and U, 512 of G alone), every column of the block
/// per chunk. Measured with `cargo bench --bench kernels`
/// (docs/benchmarks/2026-11-25-bitset-cache-blocking-zen5.md).
const CHUNK_BYTES: usize = 16 << 10;

/// Columns whose rank scores' dot products a group takes from one call
/// ([`Bitset::each_unscreened`]): the call's cost spread over them, their
/// products (32 bytes each) in the L1 cache when the columns' test reads
/// them. Measured only at this value (not tuned).
const SCREEN_COLUMNS: usize = 64;

/// `S` of genes `i` and `j` on the one-popcount path from their discordant
/// pairs: pairs untied in both genes are `n0 - n1 - n2 + n3`.
#[inline]
fn one_popcount_s(p: &BitPlanes, m: &RankedMatrix, n0: i64, i: usize, j: usize, nd: i64) -> i64 {
    let n3 = p.ties.n3(m, i, j) as i64;
    n0 - m.tie_pairs(i) as i64 - m.tie_pairs(j) as i64 + n3 - 2 * nd
}

/// Pair bits (of the `n0`) in the words after the first `words`: what a
/// count may still add.
#[inline(always)]
fn left_after(n0: i64, words: usize) -> i64 {
    (n0 - (64 * words as i64).min(n0)).max(0)
}

/// Words per block between two checks of a bound in the whole-plane loop:
/// an eighth of the plane, in whole 512-bit registers (at least one), so a
/// pair is checked at most eight times and the per-ISA loops run on
/// lengths they take (multiples of 8 words).
pub fn exit_block_words(words: usize) -> usize {
    (words / 8).div_ceil(8).max(1) * 8
}

/// Words counted before a bound is first checked after the start: the
/// first multiple of `step` after which the sample pairs left (at most
/// `n0`) are fewer than half of `widest_gap` ([`SBound::widest_gap`]).
/// Until then the interval that holds `S` is wider than every gap between
/// the `S` values a pair may pass with, so a check could stop the count
/// only where the clamp `|S| ≤ n0 − max(n1, n2)` narrows that interval
/// (pairs of heavily tied genes, whose ranges the check before the count
/// mostly rules out at once); one call of the per-ISA loop replaces several
/// short ones. The checks only skip work: any choice here gives the same
/// rows.
fn first_check_words(words: usize, step: usize, n0: i64, widest_gap: f64) -> usize {
    let mut first = step;
    while first < words && 2.0 * left_after(n0, first) as f64 >= widest_gap {
        first += step;
    }
    first
}

/// `S` of genes `i` and `j` from their full count on `path` (`nd` on the
/// XOR and one-popcount paths, `S` itself on the two-popcount one); `c` is
/// the lists' correction on the XOR-with-lists path.
#[inline(always)]
fn pair_s(
    p: &BitPlanes,
    m: &RankedMatrix,
    n0: i64,
    path: Path,
    (i, j): (usize, usize),
    count: i64,
    c: i64,
) -> i64 {
    match path {
        Path::Xor => n0 - 2 * count,
        Path::XorLists => n0 - 2 * count + c,
        Path::OnePopcount => one_popcount_s(p, m, n0, i, j, count),
        Path::TwoPopcounts => count,
    }
}

/// The pairs of group `g`'s live rows (`j > i`, not past its end) with
/// column `j` appended to `out`, row `k` (gene `i`) with the `S` that
/// `s(k, i)` gives.
#[inline(always)]
fn push_pairs(
    out: &mut Vec<PairNumerator>,
    g: &Group<'_>,
    j: usize,
    s: impl Fn(usize, usize) -> i64,
) {
    for (k, &i) in g.idx.iter().enumerate().take(g.r) {
        if j > i {
            out.push(PairNumerator {
                i: i as u32,
                j: j as u32,
                s: s(k, i),
            });
        }
    }
}

/// One group of up to four rows of a block (see [`Bitset::block_bounded`])
/// and what its columns' paths depend on.
struct Group<'a> {
    /// The group's rows; lanes past its end repeat its last row, their
    /// results dropped.
    idx: [usize; 4],
    /// Rows in the group.
    r: usize,
    /// The rows' planes.
    gu: [&'a [u64]; 4],
    uu: [&'a [u64]; 4],
    /// Every row is tie-free and complete.
    rows_untied: bool,
    /// Every row's tied pairs are listed (tie-free rows are, with empty
    /// lists).
    rows_listed: bool,
    /// No row has a missing value.
    rows_complete: bool,
    /// The rows' tied pairs, summed (0 when tie-free).
    rows_tie_pairs: u64,
    /// The group's first column: past the block's start and its first row.
    first: usize,
    /// Planes a row takes in the loops: G alone on the XOR paths, else G
    /// and U.
    planes_per_row: usize,
    /// Sample pairs, `n0`.
    n0: i64,
    /// The rows' rank scores, when their bound on `S` is checked before
    /// each count ([`score_bound`]).
    scores: Option<[&'a [i16]; 4]>,
}

impl<'a> Group<'a> {
    /// The group of `rows` (one to four) of a block whose columns start at
    /// `start`; `screen`: whether the rank scores' bound is checked.
    fn new(kernel: &'a Bitset, m: &RankedMatrix, rows: &[u32], start: usize, screen: bool) -> Self {
        let p = &*kernel.planes;
        let r = rows.len();
        let idx: [usize; 4] = std::array::from_fn(|k| rows[k.min(r - 1)] as usize);
        let rows_untied = rows.iter().all(|&i| m.untied(i as usize));
        let rows_listed = rows_untied || rows.iter().all(|&i| p.ties.listed(m, i as usize));
        let rows_tie_pairs = if rows_untied {
            0
        } else {
            rows.iter().map(|&i| m.tie_pairs(i as usize)).sum()
        };
        Self {
            idx,
            r,
            gu: idx.map(|i| p.g(i)),
            uu: idx.map(|i| p.u(i)),
            rows_untied,
            rows_listed,
            rows_complete: rows.iter().all(|&i| !m.has_gaps(i as usize)),
            rows_tie_pairs,
            first: start.max(rows.iter().copied().min().unwrap_or(0) as usize + 1),
            planes_per_row: if rows_untied || rows_listed { 1 } else { 2 },
            n0: i64::try_from(m.n0()).expect("n0 fits i64"),
            scores: match (screen, &p.scores) {
                (true, Some(s)) => Some(idx.map(|i| s.of(i))),
                _ => None,
            },
        }
    }

    /// Pairs of column `j` the group outputs (`j > i`, not past its end).
    #[inline(always)]
    fn live(&self, j: usize) -> usize {
        self.idx[..self.r].iter().filter(|&&i| j > i).count()
    }

    /// Whether the rank scores' dot products `q` of complete column `j`
    /// (the rows complete too) rule out every pair the group outputs there
    /// under `exit` ([`SBound::scores_rule_out4`]): the column then needs
    /// no word counted, nor its path or bound.
    #[inline(always)]
    fn screened_out(&self, exit: &SBound, scores: &RankScores, j: usize, q: &[i64; 4]) -> bool {
        let (lo, hi) = scores.scaled4(q);
        let out = exit.scores_rule_out4(self.idx, j, lo, hi);
        // All four lanes, without a branch per pair: a lane past the
        // group's end or at `j ≤ i` holds nothing back.
        let mut all = true;
        for (k, &o) in out.iter().enumerate() {
            all &= (k >= self.r) | (j <= self.idx[k]) | o;
        }
        all
    }

    /// The path of the group's column `j`.
    #[inline(always)]
    fn path_of(&self, kernel: &Bitset, m: &RankedMatrix, j: usize) -> Path {
        let p = &*kernel.planes;
        let r = self.r as u64;
        if self.rows_untied && m.untied(j) {
            Path::Xor
        } else if self.rows_listed
            && p.ties.listed(m, j)
            && self.rows_tie_pairs + r * m.tie_pairs(j) <= r * kernel.xor_lists_budget
        {
            Path::XorLists
        } else if kernel.one_popcount_budget > 0
            && self.rows_complete
            && !m.has_gaps(j)
            && self.idx[..self.r]
                .iter()
                .map(|&i| m.tie_pairs(i).min(m.tie_pairs(j)))
                .sum::<u64>()
                <= kernel.one_popcount_budget
        {
            Path::OnePopcount
        } else {
            Path::TwoPopcounts
        }
    }
}

/// A run of a group's columns (its rows complete) with their rank scores'
/// dot products ([`Bitset::each_unscreened`]), for [`screen_columns`].
struct ScreenRun<'r, 'g> {
    m: &'r RankedMatrix,
    g: &'r Group<'g>,
    exit: &'r SBound,
    scores: &'r RankScores,
    cols: Range<usize>,
    dots: &'r [[i64; 4]],
}

/// The columns of `run` left to count, pushed to `kept` in order with
/// their dot products (without them where the column has missing values:
/// the bound holds for complete genes only); returns the pairs of the
/// others, which the scores rule out ([`Group::screened_out`]). Inlined into
/// each instruction set's `screen_columns`.
#[inline(always)]
fn screen_columns(run: &ScreenRun<'_, '_>, kept: &mut Vec<(usize, Option<[i64; 4]>)>) -> usize {
    let mut stopped = 0;
    for (j, q) in run.cols.clone().zip(run.dots) {
        if run.m.has_gaps(j) {
            kept.push((j, None));
        } else if run.g.screened_out(run.exit, run.scores, j, q) {
            stopped += run.g.live(j);
        } else {
            kept.push((j, Some(*q)));
        }
    }
    stopped
}

/// What a block's groups reuse: the chunked loop's columns and bounds, and
/// the group's ranks interleaved for the lists' correction.
#[derive(Default)]
struct Scratch {
    /// Per column of a group left to count: the column, its path and its
    /// counts so far.
    columns: Vec<(usize, Path, [i64; 4])>,
    /// Per column of a group, under a bound: the column's bound and the
    /// words after which its count stopped.
    bounds: Vec<(Option<ColumnExit>, Option<usize>)>,
    /// The group's ranks interleaved (built on the group's first
    /// XOR-with-lists column; `interleaved` says whether they are).
    ranks4: Vec<[i32; 4]>,
    interleaved: bool,
    /// Under a bound, the rank scores' dot products of a run of a group's
    /// columns ([`Bitset::each_unscreened`]), and the columns of the run
    /// left to count, with their dot products where computed.
    dots: Vec<[i64; 4]>,
    kept: Vec<(usize, Option<[i64; 4]>)>,
}

impl Scratch {
    /// The lists' corrections of rows `idx` and column `j`, the rows'
    /// ranks interleaved first when they are not yet.
    #[inline]
    fn corrections(
        &mut self,
        p: &BitPlanes,
        m: &RankedMatrix,
        idx: [usize; 4],
        j: usize,
    ) -> [i64; 4] {
        if !self.interleaved {
            ties::interleave4(m, idx, &mut self.ranks4);
            self.interleaved = true;
        }
        p.ties.xor_corrections4(m, idx, &self.ranks4, j)
    }
}

/// A group's column under a filter's bound (see [`Bitset::block_bounded`]).
#[derive(Debug, Clone, Copy)]
struct ColumnExit {
    /// Per row, the `S` that may pass ([`PairRange::NONE`] for rows whose
    /// pair is dropped anyway).
    ranges: [PairRange; 4],
    /// Per row, bounds on `S` known before the count: `|S| ≤ n0 −
    /// max(n1, n2)`, and the rank scores' interval where it is checked.
    s_lo: [i64; 4],
    s_hi: [i64; 4],
    /// Per row, bounds `[lo, hi]` on `B` of `S = B − 2·count` (unused on
    /// the two-popcount path). `B` itself needs the lists' correction or
    /// `n3`, as costly per pair as a short count: it is computed only for
    /// the pairs that are not stopped ([`Bitset::finish_column`]).
    base_lo: [i64; 4],
    base_hi: [i64; 4],
    /// Rows whose pair is output (`j > i`, not past the group's end).
    live: [bool; 4],
}

impl ColumnExit {
    /// Whether no row's `S` can pass, with `counts` counted and `left`
    /// pair bits still to count.
    #[inline(always)]
    fn stops(&self, path: Path, counts: &[i64; 4], left: i64) -> bool {
        (0..4).all(|k| {
            let (lo, hi) = match path {
                Path::TwoPopcounts => (counts[k] - left, counts[k] + left),
                // `S = B − 2·nd` with `nd ≤ B` (the pairs untied in both).
                Path::OnePopcount => (
                    (self.base_lo[k] - 2 * (counts[k] + left)).max(-self.base_hi[k]),
                    self.base_hi[k] - 2 * counts[k],
                ),
                Path::Xor | Path::XorLists => (
                    self.base_lo[k] - 2 * (counts[k] + left),
                    self.base_hi[k] - 2 * counts[k],
                ),
            };
            let (lo, hi) = (lo.max(self.s_lo[k]), hi.min(self.s_hi[k]));
            !self.ranges[k].reachable(lo, hi)
        })
    }

    /// The counts of the column's pairs stopped after `at` of `words` words.
    fn stopped(&self, at: usize, words: usize) -> ExitCounts {
        let pairs = self.live.iter().filter(|&&l| l).count();
        ExitCounts {
            pairs,
            before_count: if at == 0 { pairs } else { 0 },
            words_counted: pairs * at,
            words_total: pairs * words,
        }
    }
}

/// How a pair of a block is computed (see [`Bitset::block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Both genes tie-free and complete: `S = n0 - 2·pc(Gu ^ Gv)`.
    Xor,
    /// Both genes complete with their tied pairs listed and few:
    /// `S = n0 - 2·pc(Gu ^ Gv) + correction` ([`TiedPairs::xor_corrections4`]).
    XorLists,
    /// Tied, complete, `n3` cheap: `S = (n0 - n1 - n2 + n3) - 2·nd`.
    OnePopcount,
    /// Otherwise: `S = pc(concordant) - pc(discordant)`.
    TwoPopcounts,
}

/// The bit-plane kernel over shared planes, on one instruction set.
#[derive(Debug, Clone)]
pub struct Bitset {
    isa: Isa,
    /// The loops of `isa` (the portable ones with POPCNT where the CPU has
    /// it), chosen once, here.
    ops: Ops,
    /// [`one_popcount_budget`] and [`xor_lists_budget`] of `isa` and the
    /// planes.
    one_popcount_budget: u64,
    xor_lists_budget: u64,
    planes: Arc<BitPlanes>,
}

impl Bitset {
    /// A kernel over `planes`. `isa` must be available (see [`Isa::is_available`]).
    pub fn new(isa: Isa, planes: Arc<BitPlanes>) -> Self {
        let ops = Ops::new(isa);
        Self {
            isa,
            ops,
            one_popcount_budget: one_popcount_budget(isa, planes.words()),
            xor_lists_budget: xor_lists_budget(isa, planes.words()),
            planes,
        }
    }

    /// The instruction set this kernel runs.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// `S` for every `i` in `rows` and `j` in `cols` with `j > i`, appended
    /// to `out`. Rows are taken four at a time; a group whose rows and column
    /// have no ties and no missing values ([`RankedMatrix::untied`]) takes
    /// the `n0 - 2·pc(Gu ^ Gv)` path, so callers should list those rows
    /// together. Tied genes without missing values whose pairs tied in both
    /// genes are cheap to count (see [`one_popcount_budget`]) take the
    /// one-popcount path `S = (n0 - n1 - n2 + n3) - 2·nd`; the others the
    /// two-popcount one. With missing values S is over the samples a pair
    /// shares.
    pub fn block(
        &self,
        m: &RankedMatrix,
        rows: &[u32],
        cols: Range<usize>,
        out: &mut Vec<PairNumerator>,
    ) {
        self.block_bounded(m, rows, cols, out, None, &mut ExitCounts::default());
    }

    /// [`Bitset::block`] under a pushed-down filter's bound `exit`: a pair
    /// whose `S` cannot pass it is left out of `out` as soon as its count
    /// shows it (counted in `exits`); every other pair is counted in full,
    /// with the same `S` as [`Bitset::block`].
    ///
    /// A group of four rows and a column is counted in blocks of words
    /// ([`exit_block_words`], or the cache chunks of long rows) by the same
    /// per-ISA loops as without a bound, and the bound is checked before
    /// the first block and between blocks: the early exit lives here, above
    /// the instruction sets. After the first `w` words, with `c` the count
    /// so far and `left = n0 − min(n0, 64·w)` the sample pairs in the words
    /// still to count (padding bits count nothing on every path), the final
    /// `S` lies in
    ///
    /// - `[B − 2(c + left), B − 2c]` on the paths `S = B − 2·nd`
    ///   (XOR: `B = n0`; XOR with lists: `B = n0 + correction`, the
    ///   correction computed first; one popcount: `B = n0 − n1 − n2 + n3`,
    ///   and `S ≥ −B` as `nd ≤ B`), since `nd` only grows and by at most one
    ///   per pair bit left;
    /// - `[c − left, c + left]` on the two-popcount path, where `c` is the
    ///   partial `S` and each pair left adds −1, 0 or 1;
    ///
    /// and, for complete genes, in `[−cap, cap]` with
    /// `cap = n0 − max(n1, n2)` (concordant plus discordant pairs are
    /// untied in both genes), and in the interval of the genes' rank
    /// scores ([`RankScores::s_interval`]) where the filter's gaps are wide
    /// enough for it to decide ([`score_bound::useful`]): most pairs under
    /// `abs(tau) >= 0.8` stop there, before their first word (a column
    /// whose four pairs the scores rule out skips its path and bound,
    /// [`SBound::scores_rule_out`]). When that interval meets none of the
    /// pair's ranges ([`PairRange::reachable`]) for all four rows the group's
    /// column stops; rows whose pair is dropped anyway (`j ≤ i`, lanes past
    /// the group's end) never hold it back, and a pair touching a gene with
    /// missing values ([`PairRange::ANY`]) never stops.
    pub fn block_bounded(
        &self,
        m: &RankedMatrix,
        rows: &[u32],
        cols: Range<usize>,
        out: &mut Vec<PairNumerator>,
        exit: Option<&SBound>,
        exits: &mut ExitCounts,
    ) {
        let mut sorted = Vec::new();
        let rows = self.rows_by_class(m, rows, &mut sorted);
        let mut scratch = Scratch::default();
        let screen = exit.is_some_and(|e| score_bound::useful(m.samples(), e.widest_gap()));
        for group in rows.chunks(4) {
            let g = Group::new(self, m, group, cols.start, screen);
            scratch.interleaved = false;
            if g.planes_per_row * 4 * self.planes.words() * 8 <= WHOLE_ROWS_BYTES {
                self.group_whole_rows(m, &g, cols.end, exit, &mut scratch, out, exits);
            } else {
                self.group_in_chunks(m, &g, cols.end, exit, &mut scratch, out, exits);
            }
        }
    }

    /// `rows` ordered tie-free first, then listed tied ones, then the rest
    /// (stable: rows keep their order within a class), in `sorted` unless
    /// they come so. A group of four takes an XOR path only when all four
    /// rows allow it, so mixing tied rows into every group (real data: a
    /// fifth of the genes tied) would send most pairs down a tied path.
    /// Pairs come out in another order; nothing depends on the order within
    /// a block.
    fn rows_by_class<'r>(
        &self,
        m: &RankedMatrix,
        rows: &'r [u32],
        sorted: &'r mut Vec<u32>,
    ) -> &'r [u32] {
        let p = &*self.planes;
        let class = |i: u32| {
            let i = i as usize;
            if m.untied(i) {
                0u8
            } else if p.ties.listed(m, i) {
                1
            } else {
                2
            }
        };
        if rows.iter().is_sorted_by_key(|&i| class(i)) {
            return rows;
        }
        let mut keyed: Vec<(u8, u32)> = rows.iter().map(|&i| (class(i), i)).collect();
        keyed.sort_by_key(|&(c, _)| c); // stable: rows keep their order
        *sorted = keyed.into_iter().map(|(_, i)| i).collect();
        sorted
    }

    /// A group's columns `g.first..end` one at a time over whole planes:
    /// rows that stay in the L1 cache with a column's planes (the hot loop
    /// of small n: walking it through the chunks' columns was 13–24 %
    /// slower at n = 57 and 128, measured). Under a bound, a column is
    /// counted in blocks of words, the bound checked between them.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn group_whole_rows(
        &self,
        m: &RankedMatrix,
        g: &Group<'_>,
        end: usize,
        exit: Option<&SBound>,
        scratch: &mut Scratch,
        out: &mut Vec<PairNumerator>,
        exits: &mut ExitCounts,
    ) {
        let p = &*self.planes;
        let words = p.words();
        // Under a bound: the words of the first call, then of each block.
        let step = exit_block_words(words);
        let first = exit.map_or(words, |e| {
            first_check_words(words, step, g.n0, e.widest_gap())
        });
        let Some(e) = exit else {
            for j in g.first..end {
                let path = g.path_of(self, m, j);
                let mut counts = [0i64; 4];
                self.count(path, g.gu, g.uu, p.g(j), p.u(j), &mut counts);
                self.finish_column(m, g, j, path, &counts, None, scratch, out, exits);
            }
            return;
        };
        self.each_unscreened(m, g, e, end, scratch, exits, |j, screen, scratch, exits| {
            let (gv, uv) = (p.g(j), p.u(j));
            let path = g.path_of(self, m, j);
            let mut counts = [0i64; 4];
            let Some(bound) = self.column_exit(e, m, g, j, path, &screen) else {
                self.count(path, g.gu, g.uu, gv, uv, &mut counts);
                self.finish_column(m, g, j, path, &counts, None, scratch, out, exits);
                return;
            };
            let mut w0 = 0;
            let mut stopped = bound.stops(path, &counts, g.n0);
            while !stopped && w0 < words {
                let w1 = (w0 + if w0 == 0 { first } else { step }).min(words);
                let (gu, uu) = (g.gu.map(|x| &x[w0..w1]), g.uu.map(|x| &x[w0..w1]));
                self.count(path, gu, uu, &gv[w0..w1], &uv[w0..w1], &mut counts);
                w0 = w1;
                if w0 < words {
                    stopped = bound.stops(path, &counts, left_after(g.n0, w0));
                }
            }
            let at = stopped.then_some(w0);
            self.finish_column(
                m,
                g,
                j,
                path,
                &counts,
                Some((&bound, at)),
                scratch,
                out,
                exits,
            );
        });
    }

    /// Calls `f` with each of group `g`'s columns `g.first..end` that the
    /// rank scores do not rule out under `exit`, in order, with their dot
    /// products where computed, and with `scratch` and `exits`; the pairs
    /// of the columns ruled out are added to `exits`, stopped before their
    /// first word. The dot products come [`SCREEN_COLUMNS`] columns a call
    /// and are tested by [`screen_columns`]; they are only computed where
    /// the group checks the scores and its rows are complete, and only used
    /// for complete columns (the bound holds for complete genes only).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn each_unscreened(
        &self,
        m: &RankedMatrix,
        g: &Group<'_>,
        exit: &SBound,
        end: usize,
        scratch: &mut Scratch,
        exits: &mut ExitCounts,
        mut f: impl FnMut(usize, Option<[i64; 4]>, &mut Scratch, &mut ExitCounts),
    ) {
        let (Some(rows), Some(scores), true) =
            (g.scores, self.planes.scores.as_ref(), g.rows_complete)
        else {
            for j in g.first..end {
                f(j, None, scratch, exits);
            }
            return;
        };
        let mut dots = std::mem::take(&mut scratch.dots);
        let mut kept = std::mem::take(&mut scratch.kept);
        let mut j0 = g.first;
        while j0 < end {
            let cols = j0..(j0 + SCREEN_COLUMNS).min(end);
            j0 = cols.end;
            dots.clear();
            dots.resize(cols.len(), [0; 4]);
            self.ops.score_dots4(
                rows,
                scores.of_genes(cols.clone()),
                scores.stride(),
                &mut dots,
            );
            kept.clear();
            let run = ScreenRun {
                m,
                g,
                exit,
                scores,
                cols,
                dots: &dots,
            };
            let stopped = self.ops.screen_columns(&run, &mut kept);
            exits.add(ExitCounts::before_count(stopped, self.planes.words()));
            for &(j, q) in &kept {
                f(j, q, scratch, exits);
            }
        }
        scratch.dots = dots;
        scratch.kept = kept;
    }

    /// A group's columns `g.first..end` in chunks of words, every column per
    /// chunk, so that the rows' chunks stay cached while the columns stream
    /// past them (four tied rows at n = 310 are 48 KiB of planes). Under a
    /// bound, the chunks are a column's blocks.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn group_in_chunks(
        &self,
        m: &RankedMatrix,
        g: &Group<'_>,
        end: usize,
        exit: Option<&SBound>,
        scratch: &mut Scratch,
        out: &mut Vec<PairNumerator>,
        exits: &mut ExitCounts,
    ) {
        let p = &*self.planes;
        let words = p.words();
        // Per column left to count: the column, its path and its counts so
        // far (`nd` on the tie-free and one-popcount paths, `S` on the
        // other).
        let mut columns = std::mem::take(&mut scratch.columns);
        columns.clear();
        // Under a bound: each column's bound, and the words after which it
        // stopped.
        let mut bounds = std::mem::take(&mut scratch.bounds);
        bounds.clear();
        if let Some(e) = exit {
            self.each_unscreened(m, g, e, end, scratch, exits, |j, screen, _, _| {
                let path = g.path_of(self, m, j);
                let bound = self.column_exit(e, m, g, j, path, &screen);
                let stopped = bound.as_ref().is_some_and(|b| b.stops(path, &[0; 4], g.n0));
                columns.push((j, path, [0i64; 4]));
                bounds.push((bound, stopped.then_some(0)));
            });
        } else {
            columns.extend((g.first..end).map(|j| (j, g.path_of(self, m, j), [0i64; 4])));
        }
        let chunk = CHUNK_BYTES / (g.planes_per_row * 4 * 8);
        let mut w0 = 0;
        while w0 < words {
            let w1 = (w0 + chunk).min(words);
            let (gu, uu) = (g.gu.map(|x| &x[w0..w1]), g.uu.map(|x| &x[w0..w1]));
            for (c, (j, path, counts)) in columns.iter_mut().enumerate() {
                if bounds.get(c).is_some_and(|b| b.1.is_some()) {
                    continue; // stopped
                }
                let (gv, uv) = (&p.g(*j)[w0..w1], &p.u(*j)[w0..w1]);
                self.count(*path, gu, uu, gv, uv, counts);
                if let Some((Some(bound), stopped)) = bounds.get_mut(c)
                    && w1 < words
                    && bound.stops(*path, counts, left_after(g.n0, w1))
                {
                    *stopped = Some(w1);
                }
            }
            w0 = w1;
        }
        for (c, &(j, path, ref counts)) in columns.iter().enumerate() {
            let bound = match bounds.get(c) {
                Some((Some(bound), at)) => Some((bound, *at)),
                _ => None,
            };
            self.finish_column(m, g, j, path, counts, bound, scratch, out, exits);
        }
        scratch.columns = columns;
        scratch.bounds = bounds;
    }

    /// A group's column `j` counted in full on `path` (`counts`), or
    /// stopped under its bound (`bound`: the bound, and the words after
    /// which it stopped): the pairs of the column's live rows appended to
    /// `out` with their `S` ([`pair_s`], or the bound's own), or, stopped,
    /// counted in `exits`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn finish_column(
        &self,
        m: &RankedMatrix,
        g: &Group<'_>,
        j: usize,
        path: Path,
        counts: &[i64; 4],
        bound: Option<(&ColumnExit, Option<usize>)>,
        scratch: &mut Scratch,
        out: &mut Vec<PairNumerator>,
        exits: &mut ExitCounts,
    ) {
        let p = &*self.planes;
        match bound {
            Some((bound, Some(at))) => exits.add(bound.stopped(at, p.words())),
            // Counted in full, or without a bound: `S` from the exact `B`.
            Some((_, None)) | None => {
                let c = match path {
                    Path::XorLists => scratch.corrections(p, m, g.idx, j),
                    _ => [0; 4],
                };
                push_pairs(out, g, j, |k, i| {
                    pair_s(p, m, g.n0, path, (i, j), counts[k], c[k])
                });
            }
        }
    }

    /// The bound of group `g`'s column `j` on `path`, or `None` when some
    /// pair of it may never stop (a gene with missing values, a NaN tau).
    /// What `S` adds to the count (the lists' correction, `n3`) is bounded
    /// from the genes' tied pairs `n1`, `n2`, not computed: on the
    /// XOR-with-lists path the correction is a sum of one term in
    /// `{−1, 0, 1}` per listed pair, so `|c| ≤ n1 + n2`; on the
    /// one-popcount path `B = n0 − n1 − n2 + n3` with `0 ≤ n3 ≤ min(n1, n2)`.
    /// Where the caller computed the rank scores' dot products (`screen`),
    /// each pair's `S` is also held to their interval
    /// ([`RankScores::s_interval`]).
    #[inline]
    fn column_exit(
        &self,
        exit: &SBound,
        m: &RankedMatrix,
        g: &Group<'_>,
        j: usize,
        path: Path,
        screen: &Option<[i64; 4]>,
    ) -> Option<ColumnExit> {
        let (idx, n0) = (g.idx, g.n0);
        let live = |k: usize| k < g.r && j > idx[k];
        let mut ranges = [PairRange::NONE; 4];
        let mut s_lo = [0i64; 4];
        let mut s_hi = [0i64; 4];
        for k in (0..4).filter(|&k| live(k)) {
            ranges[k] = exit.pair(m, idx[k], j);
            if ranges[k].is_any() {
                return None;
            }
            let cap = n0 - m.tie_pairs(idx[k]).max(m.tie_pairs(j)) as i64;
            (s_lo[k], s_hi[k]) = (-cap, cap);
        }
        // Complete genes only reach here (`ranges` is `ANY` otherwise).
        if let (Some(q), Some(scores)) = (screen, &self.planes.scores) {
            for k in (0..4).filter(|&k| live(k)) {
                let (lo, hi) = scores.s_interval(q[k]);
                (s_lo[k], s_hi[k]) = (s_lo[k].max(lo), s_hi[k].min(hi));
            }
        }
        let ties = |k: usize| (m.tie_pairs(idx[k]) as i64, m.tie_pairs(j) as i64);
        let (base_lo, base_hi): ([i64; 4], [i64; 4]) = match path {
            Path::Xor | Path::TwoPopcounts => ([n0; 4], [n0; 4]),
            Path::XorLists => (
                std::array::from_fn(|k| n0 - ties(k).0 - ties(k).1),
                std::array::from_fn(|k| n0 + ties(k).0 + ties(k).1),
            ),
            Path::OnePopcount => (
                std::array::from_fn(|k| n0 - ties(k).0 - ties(k).1),
                std::array::from_fn(|k| n0 - ties(k).0.max(ties(k).1)),
            ),
        };
        let live = std::array::from_fn(live);
        Some(ColumnExit {
            ranges,
            s_lo,
            s_hi,
            base_lo,
            base_hi,
            live,
        })
    }

    /// Adds the counts of `path` (`nd`, or `S` on the two-popcount path)
    /// over the given words of four rows and a column to `counts`.
    #[inline]
    fn count(
        &self,
        path: Path,
        gu: [&[u64]; 4],
        uu: [&[u64]; 4],
        gv: &[u64],
        uv: &[u64],
        counts: &mut [i64; 4],
    ) {
        let add: [i64; 4] = match path {
            Path::Xor | Path::XorLists => self.xor_pop4(gu, gv).map(|nd| nd as i64),
            Path::OnePopcount => self.disc_pop4(gu, uu, gv, uv).map(|nd| nd as i64),
            Path::TwoPopcounts => self.s_pop4(gu, uu, gv, uv),
        };
        (0..4).for_each(|k| counts[k] += add[k]);
    }

    /// The numerator of one pair.
    pub fn numerator(&self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        let mut out = Vec::with_capacity(1);
        let (lo, hi) = (i.min(j), i.max(j));
        self.block(m, &[lo as u32], hi..hi + 1, &mut out);
        out.first().map_or(0, |p| p.s)
    }

    #[inline]
    fn xor_pop4(&self, a: [&[u64]; 4], b: &[u64]) -> [u64; 4] {
        self.ops.xor_pop4(a, b)
    }

    #[inline]
    fn disc_pop4(&self, gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [u64; 4] {
        self.ops.disc_pop4(gu, uu, gv, uv)
    }

    #[inline]
    fn s_pop4(&self, gu: [&[u64]; 4], uu: [&[u64]; 4], gv: &[u64], uv: &[u64]) -> [i64; 4] {
        self.ops.s_pop4(gu, uu, gv, uv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::naive;

    /// A small linear congruential generator: `next(k)` is in `0..k`
    /// (`k` at most 2^31).
    pub(super) fn lcg(mut state: u64) -> impl FnMut(u64) -> u64 {
        move |k| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % k
        }
    }

    #[test]
    fn planes_hold_the_pair_order() {
        // x = (3, 1, 2, 2): pairs (0,1) less, (0,2) less, (0,3) less,
        // (1,2) greater, (1,3) greater, (2,3) tied; bits 6.. are padding.
        let m = RankedMatrix::from_values(1, 4, &[3.0, 1.0, 2.0, 2.0]);
        let p = BitPlanes::build(&m);
        assert_eq!(p.words(), 8);
        assert_eq!(p.g(0)[0], 0b01_1000);
        assert_eq!(p.u(0)[0], !0b01_1111);
        assert!(p.u(0)[1..].iter().all(|&w| w == u64::MAX));
    }

    /// Every instruction set builds the same planes, with ties and missing
    /// values, at lengths around the 8- and 16-lane steps.
    #[test]
    fn every_isa_builds_the_same_planes() {
        let mut next = lcg(11);
        for n in [1usize, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 131, 310] {
            for levels in [3u64, 1 << 30] {
                let values: Vec<f64> = (0..n)
                    .map(|_| match next(10) {
                        0 => f64::NAN,
                        _ => next(levels) as f64,
                    })
                    .collect();
                let m = RankedMatrix::from_values(1, n, &values);
                let words = words_per_plane(n);
                let planes = |isa| {
                    let (mut g, mut u) = (vec![0u64; words], vec![0u64; words]);
                    fill_planes(&Ops::new(isa), m.ranks(0), &mut g, &mut u);
                    (g, u)
                };
                let reference = planes(Isa::Scalar);
                for isa in Isa::ALL.into_iter().filter(|i| i.is_available()) {
                    assert_eq!(planes(isa), reference, "{isa}, n = {n}, levels {levels}");
                }
            }
        }
    }

    #[test]
    fn put_bits_spans_words() {
        let mut plane = [0u64; 2];
        put_bits(&mut plane, 60, 0b1_1111);
        assert_eq!(plane, [0b1111 << 60, 0b1]);
    }

    /// Every instruction set's rank-score dot product equals the portable
    /// one and the sum in `i64`, at lengths with and without a tail, across
    /// chunk boundaries, with scores at the largest magnitude allowed.
    #[test]
    fn every_isa_dots_rank_scores_alike() {
        let mut rng = crate::test_rng::XorShift::new(0x5c0_4e5);
        let max = (score_bound::MAX_SAMPLES - 1) as u64;
        for len in (0..40).chain([255, 256, 257, 511, 512, 600, 2047, 2048]) {
            let mut draw = || -> Vec<i16> {
                (0..len)
                    .map(|_| match rng.next_u64() % 4 {
                        0 => max as i16,
                        1 => -(max as i16),
                        _ => (rng.next_u64() % (2 * max + 1)) as i16 - max as i16,
                    })
                    .collect()
            };
            let rows: Vec<Vec<i16>> = (0..4).map(|_| draw()).collect();
            let col = draw();
            let a: [&[i16]; 4] = std::array::from_fn(|k| rows[k].as_slice());
            let direct: [i64; 4] = std::array::from_fn(|k| {
                (0..len)
                    .map(|p| i64::from(a[k][p]) * i64::from(col[p]))
                    .sum()
            });
            assert_eq!(score_bound::dot4(a, &col), direct, "portable, {len}");
            // Runs of 1 to 5 columns (pairs and an odd one) of stride `len`.
            for cols in 1..=5usize {
                if len == 0 {
                    break;
                }
                let run: Vec<i16> = (0..cols).flat_map(|_| draw()).collect();
                let want: Vec<[i64; 4]> = run
                    .chunks_exact(len)
                    .map(|b| {
                        std::array::from_fn(|k| {
                            (0..len).map(|p| i64::from(a[k][p]) * i64::from(b[p])).sum()
                        })
                    })
                    .collect();
                let mut got = vec![[0i64; 4]; cols];
                score_bound::dots4(a, &run, len, &mut got);
                assert_eq!(got, want, "portable, {cols} columns of {len}");
                for isa in Isa::ALL.into_iter().filter(|i| i.is_available()) {
                    got.fill([0; 4]);
                    Ops::new(isa).score_dots4(a, &run, len, &mut got);
                    assert_eq!(got, want, "{isa}, {cols} columns of {len}");
                }
            }
        }
    }

    /// The SIMD popcount loops against the scalar ones on random words,
    /// for plane lengths around the Harley–Seal threshold and lengths that
    /// leave a partial 16-vector block (every multiple of 8 words up to 640).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn simd_popcounts_match_scalar_at_every_length() {
        let mut rng = crate::test_rng::XorShift::new(0x243f_6a88_85a3_08d3);
        let mut word = move || rng.next_u64();
        let hs_words = avx2::HARLEY_SEAL_MIN_VECTORS * 4;
        assert!(
            hs_words < 640,
            "lengths below cover both sides of the threshold"
        );
        for words in (8..=640).step_by(8) {
            let mut plane = || (0..words).map(|_| word()).collect::<Vec<u64>>();
            let (g, l): (Vec<_>, Vec<_>) = (0..4).map(|_| (plane(), plane())).unzip();
            let (gv, uv) = (plane(), plane());
            let gu: [&[u64]; 4] = std::array::from_fn(|k| g[k].as_slice());
            let uu: [&[u64]; 4] = std::array::from_fn(|k| l[k].as_slice());
            let xor = scalar::xor_pop4(gu, &gv);
            let disc = scalar::disc_pop4(gu, uu, &gv, &uv);
            let s = scalar::s_pop4(gu, uu, &gv, &uv);
            if Isa::Avx2.is_available() {
                // SAFETY: AVX2 detected.
                unsafe {
                    assert_eq!(avx2::xor_pop4(gu, &gv), xor, "avx2 xor, {words} words");
                    assert_eq!(avx2::disc_pop4(gu, uu, &gv, &uv), disc, "avx2 nd, {words}");
                    assert_eq!(avx2::s_pop4(gu, uu, &gv, &uv), s, "avx2 S, {words} words");
                }
            }
            if Isa::Avx512.is_available() {
                // SAFETY: AVX-512 detected.
                unsafe {
                    assert_eq!(avx512::xor_pop4(gu, &gv), xor, "avx512 xor, {words}");
                    assert_eq!(
                        avx512::disc_pop4(gu, uu, &gv, &uv),
                        disc,
                        "avx512 nd, {words}"
                    );
                    assert_eq!(avx512::s_pop4(gu, uu, &gv, &uv), s, "avx512 S, {words}");
                }
            }
        }
    }

    #[test]
    fn every_isa_matches_naive() {
        let mut next = lcg(7);
        // n = 400: rows of G planes alone outgrow the whole-plane limit (chunks).
        for n in [2usize, 3, 11, 12, 57, 64, 65, 129, 400] {
            // Tie-free, a few ties (the lists' XOR path) and heavy ties.
            for levels in [u64::MAX >> 34, (n * n) as u64, 3] {
                let genes = 7;
                let mut values: Vec<f64> = (0..genes * n).map(|_| next(levels) as f64).collect();
                values[..n].fill(1.0); // a constant gene
                let m = RankedMatrix::from_values(genes, n, &values);
                let planes = Arc::new(BitPlanes::build(&m));
                for isa in Isa::ALL.into_iter().filter(|i| i.is_available()) {
                    let kernel = Bitset::new(isa, Arc::clone(&planes));
                    let mut out = Vec::new();
                    let rows: Vec<u32> = (0..genes as u32).collect();
                    kernel.block(&m, &rows, 0..genes, &mut out);
                    assert_eq!(out.len(), genes * (genes - 1) / 2);
                    for p in &out {
                        let (i, j) = (p.i as usize, p.j as usize);
                        assert!(i < j);
                        assert_eq!(p.s, naive::numerator(m.ranks(i), m.ranks(j)), "{isa} n={n}");
                    }
                }
            }
        }
    }
}

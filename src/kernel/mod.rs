//! Per-pair Kendall kernels and the arithmetic that turns their integer
//! counts into tau.
//!
//! Every kernel computes the same integer for a pair of rank vectors `u`, `v`:
//! the numerator `S = nc - nd` (concordant minus discordant sample pairs),
//! counting pairs tied in either gene as neither, over the samples where both
//! genes have a value. Pairs touching a gene with missing values take a
//! slower path (the bit-plane kernel: its general popcount path instead of
//! the tie-free one; VSE: the shared samples gathered first; GSE:
//! [`gse::Gse::numerator_complete`]); all other pairs the kernel's fastest. Tie statistics of a single
//! gene (`n1`, `n2`) are computed once per gene by
//! [`RankedMatrix`], never per pair; only the
//! final division into tau is floating point.

pub mod binary;
pub mod bitset;
pub mod bound;
pub mod decision;
pub mod gse;
pub mod isa;
pub mod naive;
pub mod score_bound;
pub mod vse;
pub mod zero;

use std::fmt;

use std::ops::Range;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};

// Ranks and their tie counts are computed per gene, before any pair, by the
// rank module; the kernels read them.
use crate::rank::{DensePair, RankedMatrix};
pub use crate::rank::{GeneTies, pair_count};
use bitset::{BitPlanes, Bitset};
use isa::Isa;

crate::option_enum::option_enum! {
    /// Which Kendall coefficient to report (`SET kendall.variant = 'a' | 'b' | 'c'`).
    pub enum Variant: "kendall.variant" {
        /// tau-a: `S / n0`, no tie correction.
        A = "a" | "tau_a" | "tau-a",
        /// tau-b: `S / sqrt((n0 - n1)(n0 - n2))`, the tie-corrected coefficient
        /// reported by R, scipy and pandas. The default.
        #[default]
        B = "b" | "tau_b" | "tau-b",
        /// Stuart's tau-c: `2S / (n²(k-1)/k)`, k = the smaller number of
        /// distinct values of the two genes; for rectangular contingency tables.
        C = "c" | "tau_c" | "tau-c",
    }
}

crate::option_enum::option_enum! {
    /// The kernel a user asks for (`SET kendall.kernel = ...`).
    pub enum KernelChoice: "kendall.kernel" {
        /// Pick the fastest kernel for the data (see [`decision`]).
        #[default]
        Auto = "auto",
        /// The O(n²) sign-product loop.
        Naive = "naive",
        /// Knight's merge sort with exact tie handling, O(n log n).
        Gse = "gse",
        /// GSE on packed integers with SIMD bitonic merges (the paper's VSE).
        Vse = "vse",
        /// Bit-planes and popcounts, O(n²/64) word operations, no branches.
        Bitset = "bitset",
        /// Zero-inflated: O(k log n) in the samples outside the sparser gene's
        /// largest tie group (single-cell counts); chosen only when asked for.
        Zero = "zero",
    }
}

/// A concrete kernel, after `auto` has been resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    /// [`naive::numerator`].
    Naive,
    /// [`gse::Gse`].
    Gse,
    /// [`vse::Vse`].
    Vse,
    /// [`bitset::Bitset`].
    Bitset,
    /// [`zero::Zero`] (VSE for pairs touching a gene with missing values).
    Zero,
}

impl KernelKind {
    /// Every kernel.
    pub const ALL: [KernelKind; 5] = [
        KernelKind::Naive,
        KernelKind::Gse,
        KernelKind::Vse,
        KernelKind::Bitset,
        KernelKind::Zero,
    ];

    /// The kernel `name` (as `Display` writes it) stands for.
    pub fn named(name: &str) -> Option<KernelKind> {
        Self::ALL.into_iter().find(|k| k.to_string() == name)
    }
}

impl fmt::Display for KernelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelKind::Naive => "naive",
            KernelKind::Gse => "gse",
            KernelKind::Vse => "vse",
            KernelKind::Bitset => "bitset",
            KernelKind::Zero => "zero",
        })
    }
}

/// Kendall tau from the integer numerator `s = nc - nd` of two genes of
/// `samples` values with tie statistics `u` and `v`.
///
/// tau-b of a constant gene (zero denominator) is NaN, as is tau-c when a
/// gene has a single distinct value. Numerators and denominators are exact
/// integers; the square root of tau-b is taken of the exact product when
/// that product is exactly representable, so tau is rounded twice at most.
// Always inlined: it runs once per pair, and out of line its call costs
// as much as its arithmetic (LLVM stops inlining it where several loops call it).
#[inline(always)]
pub fn tau(variant: Variant, s: i64, samples: usize, u: GeneTies, v: GeneTies) -> f64 {
    let n0 = pair_count(samples);
    match variant {
        Variant::A => s as f64 / n0 as f64,
        Variant::B => {
            let (a, b) = (n0 - u.tie_pairs, n0 - v.tie_pairs);
            if a == 0 || b == 0 {
                return f64::NAN;
            }
            // sqrt(a·b) from the exact product while it converts exactly
            // (< 2^53; a u64 product that overflows is far beyond that).
            // Computed in u64, not u128: a u128 → f64 conversion is a
            // library call, and this runs once per pair.
            // No branch on a == b while the product is exact: sqrt(a²) is
            // then exactly a (a correctly rounded square root of an exactly
            // representable square), and whether a pair's genes have equal
            // tie counts is a coin flip the branch predictor would lose.
            let denom = match a.checked_mul(b) {
                Some(product) if product < (1u64 << 53) => (product as f64).sqrt(),
                _ if a == b => a as f64,
                _ => (a as f64).sqrt() * (b as f64).sqrt(),
            };
            (s as f64 / denom).clamp(-1.0, 1.0)
        }
        Variant::C => {
            let k = u.distinct.min(v.distinct);
            if k <= 1 {
                return f64::NAN;
            }
            // 2S / (n²(k-1)/k) = 2Sk / (n²(k-1)), both sides exact integers.
            let num = 2 * i128::from(s) * i128::from(k);
            let den = (samples as u128).pow(2) * u128::from(k - 1);
            num as f64 / den as f64
        }
    }
}

/// The numerator of one gene pair, as kernels report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairNumerator {
    /// Index of the first gene (input order).
    pub i: u32,
    /// Index of the second gene: `j > i` in a block, any other gene in a
    /// candidate list.
    pub j: u32,
    /// `S = nc - nd`.
    pub s: i64,
}

/// A kernel instance with its scratch buffers; one per output stream.
#[derive(Debug)]
pub struct PairKernel {
    state: KernelState,
    /// Rank sums for pairs with a two-valued gene, when `auto` was asked
    /// for ([`PairKernel::with_rank_sums`]).
    rank_sums: Option<binary::RankSums>,
    /// A sparse matrix's pair, expanded for the kernels that read dense
    /// ranks.
    pair: DensePair,
    /// A pushed-down filter's bound on `S`: blocks leave out the pairs it
    /// stops ([`PairKernel::with_early_exit`]).
    exit: Option<Arc<bound::SBound>>,
    /// Pairs stopped since [`PairKernel::take_exits`] was last called.
    exits: bound::ExitCounts,
}

/// Each kernel with the state it needs.
#[derive(Debug)]
enum KernelState {
    Naive,
    Gse(gse::Gse),
    Vse {
        vse: vse::Vse,
        /// A pair's shared samples in the first gene's order: ranks of
        /// either gene, and the identity order of the compacted first gene.
        shared_u: Vec<u32>,
        shared_v: Vec<u32>,
        identity: Vec<u32>,
    },
    Bitset(Bitset),
    Zero {
        zero: zero::Zero,
        /// Per gene, its largest tie group and dominance table, computed
        /// when the gene is first met (`None` before).
        shapes: Vec<Option<zero::ZeroShape>>,
        /// A sparse matrix's first gene of a pair, expanded.
        row: zero::SparseRow,
        /// VSE, for pairs touching a gene with missing values.
        fallback: Box<PairKernel>,
    },
}

impl PairKernel {
    /// A kernel of `kind` for vectors of `samples` values. The bit-plane
    /// kernel needs the `planes` of the matrix and an available `isa`.
    pub fn new(
        kind: KernelKind,
        samples: usize,
        isa: Isa,
        planes: Option<Arc<BitPlanes>>,
    ) -> Result<Self> {
        let state = match kind {
            KernelKind::Naive => KernelState::Naive,
            KernelKind::Gse => KernelState::Gse(gse::Gse::new(samples)),
            KernelKind::Vse => KernelState::Vse {
                vse: vse::Vse::new(isa, samples),
                shared_u: Vec::new(),
                shared_v: Vec::new(),
                identity: Vec::new(),
            },
            KernelKind::Bitset => KernelState::Bitset(Bitset::new(
                isa,
                planes.ok_or_else(|| {
                    DataFusionError::Internal("the bitset kernel needs bit-planes".to_string())
                })?,
            )),
            KernelKind::Zero => KernelState::Zero {
                zero: zero::Zero::default(),
                shapes: Vec::new(),
                row: zero::SparseRow::default(),
                fallback: Box::new(PairKernel::new(KernelKind::Vse, samples, isa, None)?),
            },
        };
        Ok(Self {
            state,
            rank_sums: None,
            pair: DensePair::default(),
            exit: None,
            exits: bound::ExitCounts::default(),
        })
    }

    /// This kernel, leaving out of [`PairKernel::block`]'s output the pairs
    /// whose `S` cannot pass a pushed-down filter, `exit` ([`bound`]),
    /// stopping their counts as soon as that shows: the bit-plane kernel
    /// between blocks of words, the zero-inflated one before its sort.
    /// Pairs touching a gene with missing values, pairs of other kernels
    /// and pairs computed one at a time ([`PairKernel::numerator`],
    /// [`PairKernel::listed`]) are all computed and output as without it.
    pub fn with_early_exit(mut self, exit: Option<Arc<bound::SBound>>) -> Self {
        self.exit = exit;
        self
    }

    /// The pairs left out of blocks since the last call (see
    /// [`PairKernel::with_early_exit`]), and resets them.
    pub fn take_exits(&mut self) -> bound::ExitCounts {
        std::mem::take(&mut self.exits)
    }

    /// This kernel, with pairs that have a two-valued gene (and no missing
    /// values) computed as rank sums ([`binary`]) instead: what `auto` does
    /// (see [`decision::KernelPlan::rank_sums`]).
    pub fn with_rank_sums(mut self) -> Self {
        self.rank_sums = Some(binary::RankSums::default());
        self
    }

    /// The concrete kernel this instance runs.
    pub fn kind(&self) -> KernelKind {
        match self.state {
            KernelState::Naive => KernelKind::Naive,
            KernelState::Gse(_) => KernelKind::Gse,
            KernelState::Vse { .. } => KernelKind::Vse,
            KernelState::Bitset(_) => KernelKind::Bitset,
            KernelState::Zero { .. } => KernelKind::Zero,
        }
    }

    /// The numerator `S = nc - nd` of genes `i` and `j` of `m`, over the
    /// samples both genes have. A pair touching a gene with missing values
    /// takes each kernel's slower path: the naive kernel masks the missing
    /// samples out, GSE recounts on the shared samples, VSE gathers them in
    /// `i`'s order (which then is the identity) and runs on them with their
    /// tie counts; the bit-plane kernel needs no other path; the
    /// zero-inflated kernel hands such pairs to VSE.
    pub fn numerator(&mut self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        if let Some(s) = self.rank_sums.as_mut().and_then(|r| r.numerator(m, i, j)) {
            return s;
        }
        self.kernel_numerator(m, i, j)
    }

    /// [`PairKernel::numerator`] by this kernel's own path.
    fn kernel_numerator(&mut self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        if m.is_sparse() {
            return self.sparse_numerator(m, i, j);
        }
        let gaps = m.has_gaps(i) || m.has_gaps(j);
        match &mut self.state {
            KernelState::Bitset(b) => b.numerator(m, i, j),
            KernelState::Zero { fallback, .. } if gaps => fallback.kernel_numerator(m, i, j),
            KernelState::Zero {
                zero,
                shapes,
                fallback,
                ..
            } => {
                if shapes.len() < m.genes() {
                    shapes.resize(m.genes(), None);
                }
                for g in [i, j] {
                    if shapes[g].is_none() {
                        shapes[g] = Some(zero::ZeroShape::new(m.ranks(g), m.order(g)));
                    }
                }
                match (&shapes[i], &shapes[j]) {
                    (Some(si), Some(sj)) => zero.numerator(
                        zero::ZeroGene {
                            ranks: m.ranks(i),
                            shape: si,
                        },
                        zero::ZeroGene {
                            ranks: m.ranks(j),
                            shape: sj,
                        },
                    ),
                    // Both are built above; VSE all the same, never a panic.
                    _ => fallback.kernel_numerator(m, i, j),
                }
            }
            KernelState::Naive if gaps => naive::numerator_complete(m.ranks(i), m.ranks(j)),
            KernelState::Naive => naive::numerator(m.ranks(i), m.ranks(j)),
            KernelState::Gse(g) if gaps => g.numerator_complete(m, i, j),
            KernelState::Gse(g) => g.numerator(m, i, j),
            KernelState::Vse {
                vse,
                shared_u,
                shared_v,
                identity,
            } if gaps => {
                m.shared_ranks(i, j, shared_u, shared_v);
                let n = shared_u.len();
                if identity.len() < n {
                    *identity = (0..n as u32).collect();
                }
                let stats = m.pair_stats(i, j);
                // The shared samples keep their genes' ranks (below n, not n').
                vse.numerator_ranked(
                    shared_u,
                    &identity[..n],
                    stats.u.tie_pairs,
                    shared_v,
                    stats.v.tie_pairs,
                    m.samples(),
                )
            }
            KernelState::Vse { vse, .. } => vse.numerator(
                m.ranks(i),
                m.order(i),
                m.tie_pairs(i),
                m.ranks(j),
                m.tie_pairs(j),
            ),
        }
    }

    /// [`PairKernel::kernel_numerator`] of a sparse matrix (no missing
    /// values): the zero-inflated kernel reads the sparse genes; the others
    /// read the pair expanded ([`DensePair`]). The bit-plane kernel runs on
    /// dense matrices only (its planes are dense); given a sparse one all
    /// the same, it counts the expanded pair naively, never wrongly.
    fn sparse_numerator(&mut self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        if let KernelState::Zero {
            zero, shapes, row, ..
        } = &mut self.state
        {
            if shapes.len() < m.genes() {
                shapes.resize(m.genes(), None);
            }
            for g in [i, j] {
                if shapes[g].is_none() {
                    shapes[g] = m
                        .sparse_gene(g)
                        .map(|gene| zero::ZeroShape::of_sparse(&gene));
                }
            }
            if let (Some(si), Some(sj)) = (&shapes[i], &shapes[j]) {
                return zero.numerator_sparse(m, row, (i, si), (j, sj));
            }
        }
        let mut pair = std::mem::take(&mut self.pair);
        let dense = pair.load(m, i, j);
        let s = if matches!(self.state, KernelState::Bitset(_)) {
            naive::numerator(dense.ranks(0), dense.ranks(1))
        } else if let KernelState::Zero { fallback, .. } = &mut self.state {
            fallback.kernel_numerator(dense, 0, 1)
        } else {
            self.kernel_numerator(dense, 0, 1)
        };
        self.pair = pair;
        s
    }

    /// Numerators of every pair `i` in `rows`, `j` in `cols` with `j > i`,
    /// appended to `out` (in an order of the kernel's choosing).
    pub fn block(
        &mut self,
        m: &RankedMatrix,
        rows: &[u32],
        cols: Range<usize>,
        out: &mut Vec<PairNumerator>,
    ) {
        if self.rank_sums.is_none() || !m.any_two_valued() {
            return self.kernel_block(m, rows, cols, out);
        }
        // Two-valued rows: every pair by rank sums (or the kernel's path
        // where a gene misses values).
        let (two, other): (Vec<u32>, Vec<u32>) =
            rows.iter().partition(|&&i| m.two_valued(i as usize));
        each_pair(&two, cols.clone(), out, |i, j| self.numerator(m, i, j));
        // The other rows: runs of two-valued columns by rank sums, the runs
        // between them by the kernel's block.
        let mut start = cols.start;
        while start < cols.end {
            let two_valued = m.two_valued(start);
            let mut end = start + 1;
            while end < cols.end && m.two_valued(end) == two_valued {
                end += 1;
            }
            if two_valued {
                each_pair(&other, start..end, out, |i, j| self.numerator(m, i, j));
            } else if !other.is_empty() {
                self.kernel_block(m, &other, start..end, out);
            }
            start = end;
        }
    }

    /// [`PairKernel::block`] by this kernel's own path.
    fn kernel_block(
        &mut self,
        m: &RankedMatrix,
        rows: &[u32],
        cols: Range<usize>,
        out: &mut Vec<PairNumerator>,
    ) {
        if let (KernelState::Bitset(b), false) = (&self.state, m.is_sparse()) {
            let exit = self.exit.as_deref();
            return b.block_bounded(m, rows, cols, out, exit, &mut self.exits);
        }
        if matches!(self.state, KernelState::Zero { .. })
            && let Some(exit) = self.exit.take()
        {
            for &i in rows {
                for j in cols.start.max(i as usize + 1)..cols.end {
                    match self.zero_bounded(m, i as usize, j, &exit) {
                        Some(s) => out.push(PairNumerator { i, j: j as u32, s }),
                        None => self.exits.pairs += 1,
                    }
                }
            }
            self.exit = Some(exit);
            return;
        }
        each_pair(rows, cols, out, |i, j| self.kernel_numerator(m, i, j));
    }

    /// The zero-inflated kernel's `S` of genes `i` and `j` under a filter's
    /// bound, `None` when the bound stops it before the sort
    /// ([`zero::ZeroExit`]). Pairs the zero-inflated kernel does not
    /// compute itself (a gene with missing values, a sparse gene without
    /// its shape) take [`PairKernel::kernel_numerator`], in full.
    fn zero_bounded(
        &mut self,
        m: &RankedMatrix,
        i: usize,
        j: usize,
        exit: &bound::SBound,
    ) -> Option<i64> {
        let sparse = m.is_sparse();
        if let KernelState::Zero {
            zero, shapes, row, ..
        } = &mut self.state
            && (sparse || !(m.has_gaps(i) || m.has_gaps(j)))
        {
            if shapes.len() < m.genes() {
                shapes.resize(m.genes(), None);
            }
            for g in [i, j] {
                if shapes[g].is_none() {
                    shapes[g] = match sparse {
                        true => m
                            .sparse_gene(g)
                            .map(|gene| zero::ZeroShape::of_sparse(&gene)),
                        false => Some(zero::ZeroShape::new(m.ranks(g), m.order(g))),
                    };
                }
            }
            let range = exit.pair(m, i, j);
            let cap = (m.n0() - m.tie_pairs(i).max(m.tie_pairs(j))) as i64;
            let bound = (!range.is_any()).then_some(zero::ZeroExit { range, cap });
            match (&shapes[i], &shapes[j]) {
                (Some(si), Some(sj)) if sparse => {
                    return zero.numerator_sparse_bounded(m, row, (i, si), (j, sj), bound.as_ref());
                }
                (Some(si), Some(sj)) => {
                    let u = zero::ZeroGene {
                        ranks: m.ranks(i),
                        shape: si,
                    };
                    let v = zero::ZeroGene {
                        ranks: m.ranks(j),
                        shape: sj,
                    };
                    return zero.numerator_bounded(u, v, bound.as_ref());
                }
                _ => {}
            }
        }
        Some(self.kernel_numerator(m, i, j))
    }

    /// Numerators of the listed pairs `(i, j)` for `j` in `partners` (any
    /// order, `j` below or above `i`, never `i` itself), appended to `out`
    /// in that order.
    pub fn listed(
        &mut self,
        m: &RankedMatrix,
        i: u32,
        partners: &[u32],
        out: &mut Vec<PairNumerator>,
    ) {
        for (k, &j) in partners.iter().enumerate() {
            if let Some(&next) = partners.get(k + 1)
                && self.rank_sums.is_some()
            {
                binary::prefetch(m, next as usize);
            }
            let s = self.numerator(m, i as usize, j as usize);
            out.push(PairNumerator { i, j, s });
        }
    }
}

/// Appends the numerator `numerator(i, j)` of every pair `i` in `rows`,
/// `j` in `cols` with `j > i`, one pair at a time.
fn each_pair(
    rows: &[u32],
    cols: Range<usize>,
    out: &mut Vec<PairNumerator>,
    mut numerator: impl FnMut(usize, usize) -> i64,
) {
    for &i in rows {
        for j in cols.start.max(i as usize + 1)..cols.end {
            let s = numerator(i as usize, j);
            out.push(PairNumerator { i, j: j as u32, s });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel, with and without rank sums, one pair at a time, in
    /// blocks and in lists, on a sparse matrix equals the naive numerator
    /// of the dense one: zero-inflated and dense genes, ties, two-valued
    /// genes (0/1, negative/0, 1/2), constant ones.
    #[test]
    fn kernels_on_sparse_matrices_equal_the_naive_numerator() {
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = |k: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % k
        };
        for n in [2usize, 3, 40, 130, 700] {
            let mut values = Vec::new();
            let kinds = 10;
            for kind in 0..kinds {
                for _ in 0..n {
                    let r = next(100);
                    values.push(match kind {
                        0 => (next(1000) as f64) - 300.0, // dense, few ties
                        1 if r < 90 => 0.0,               // 90 % zeros
                        1 => next(5) as f64 - 1.0,
                        2 if r < 97 => 0.0, // rare, untied
                        2 => next(1 << 30) as f64,
                        3 => f64::from(r < 20),       // 0/1
                        4 => -f64::from(r < 70),      // -1/0
                        5 => 1.0 + f64::from(r < 50), // 1/2, no zeros
                        6 => 0.0,                     // constant
                        7 if r < 60 => 0.0,
                        7 => next(3) as f64 - 1.0, // heavy ties
                        8 => f64::from(r < 99),    // 1 mostly
                        _ if r < 80 => 0.0,
                        _ => (next(1000) as f64) / 7.0,
                    });
                }
            }
            let sparse = RankedMatrix::sparse_from_values(kinds, n, &values);
            let dense = RankedMatrix::from_values(kinds, n, &values);
            let expected = |i: usize, j: usize| naive::numerator(dense.ranks(i), dense.ranks(j));
            let isa = isa::Isa::detect();
            for kind in KernelKind::ALL {
                for sums in [false, true] {
                    let planes = Some(Arc::new(BitPlanes::build(&dense)));
                    let fresh = || {
                        let k = PairKernel::new(kind, n, isa, planes.clone()).unwrap();
                        if sums { k.with_rank_sums() } else { k }
                    };
                    let what = |i: usize, j: usize| format!("{kind} sums {sums} n {n} ({i}, {j})");
                    let mut k = fresh();
                    for i in 0..kinds {
                        for j in 0..kinds {
                            if i != j {
                                assert_eq!(
                                    k.numerator(&sparse, i, j),
                                    expected(i, j),
                                    "{}",
                                    what(i, j)
                                );
                            }
                        }
                    }
                    let mut out = Vec::new();
                    let rows: Vec<u32> = (0..kinds as u32).collect();
                    fresh().block(&sparse, &rows, 0..kinds, &mut out);
                    assert_eq!(out.len(), kinds * (kinds - 1) / 2);
                    for p in &out {
                        assert_eq!(
                            p.s,
                            expected(p.i as usize, p.j as usize),
                            "block {}",
                            what(p.i as usize, p.j as usize)
                        );
                    }
                    out.clear();
                    let partners = [9, 0, 5, 3, 1];
                    fresh().listed(&sparse, 7, &partners, &mut out);
                    for p in &out {
                        assert_eq!(
                            p.s,
                            expected(7, p.j as usize),
                            "listed {}",
                            what(7, p.j as usize)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn square_roots_of_exact_squares_are_exact() {
        // tau-b's denominator relies on it when both genes have the same
        // tie count: sqrt(a·a) == a for every a with a·a < 2^53.
        let last = 94_906_265u64; // floor(sqrt(2^53))
        assert!(last * last < 1 << 53 && (last + 1) * (last + 1) > 1 << 53);
        let mut a = 0u64;
        while a <= last {
            assert_eq!(((a * a) as f64).sqrt(), a as f64, "{a}");
            a += if a < 1 << 20 { 1 } else { 9_973 };
        }
        assert_eq!(((last * last) as f64).sqrt(), last as f64);
    }

    #[test]
    fn tau_b_of_constant_gene_is_nan() {
        // n = 5 samples, n0 = 10.
        let constant = GeneTies {
            tie_pairs: 10,
            distinct: 1,
        };
        let distinct = GeneTies {
            tie_pairs: 0,
            distinct: 5,
        };
        assert!(tau(Variant::B, 0, 5, constant, distinct).is_nan());
        assert!(tau(Variant::B, 0, 5, distinct, constant).is_nan());
        assert!(tau(Variant::C, 0, 5, distinct, constant).is_nan());
        assert_eq!(tau(Variant::A, 0, 5, constant, distinct), 0.0);
    }

    #[test]
    fn tau_extremes_are_exact() {
        // n = 10 samples, n0 = 45.
        let free = GeneTies {
            tie_pairs: 0,
            distinct: 10,
        };
        let tied = GeneTies {
            tie_pairs: 5,
            distinct: 5,
        };
        assert_eq!(tau(Variant::B, 45, 10, free, free), 1.0);
        assert_eq!(tau(Variant::B, -45, 10, free, free), -1.0);
        // ties: S = sqrt((n0-n1)(n0-n2)) exactly when both genes tie alike
        assert_eq!(tau(Variant::B, 40, 10, tied, tied), 1.0);
        assert_eq!(tau(Variant::A, -45, 10, free, free), -1.0);
        // tau-c without ties and k = n: 2S / (n(n-1)) = S / n0.
        assert_eq!(tau(Variant::C, 45, 10, free, free), 1.0);
        assert_eq!(
            tau(Variant::C, 9, 10, free, tied),
            2.0 * 9.0 * 5.0 / (100.0 * 4.0)
        );
    }

    #[test]
    fn options_parse_and_refuse() {
        assert_eq!("A".parse::<Variant>().unwrap(), Variant::A);
        assert_eq!(" gse ".parse::<KernelChoice>().unwrap(), KernelChoice::Gse);
        let err = "x".parse::<KernelChoice>().unwrap_err().to_string();
        assert!(err.contains("kendall.kernel"), "{err}");
        let big = 1 << 30;
        let auto = |n, limit, isa| KernelChoice::Auto.resolve(10, n, limit, isa, None);
        assert_eq!(auto(57, big, Isa::Avx2), KernelKind::Bitset);
        assert_eq!(auto(57, 0, Isa::Avx2), KernelKind::Vse);
        assert_eq!(auto(57, 0, Isa::Scalar), KernelKind::Naive);
        assert_eq!(auto(5000, big, Isa::Scalar), KernelKind::Vse);
        // Crossovers per instruction set.
        assert_eq!(auto(1800, big, Isa::Avx512), KernelKind::Bitset);
        assert_eq!(auto(2001, big, Isa::Avx512), KernelKind::Vse);
        assert_eq!(auto(1800, big, Isa::Avx2), KernelKind::Bitset);
        assert_eq!(auto(1800, big, Isa::Scalar), KernelKind::Bitset);
        assert_eq!(auto(2001, big, Isa::Avx2), KernelKind::Vse);
        assert_eq!(auto(3000, big, Isa::Scalar), KernelKind::Bitset);
        let naive = KernelChoice::Naive.resolve(10, 1000, big, Isa::Avx512, None);
        assert_eq!(naive, KernelKind::Naive);
        // Few anchor genes: no bit-planes.
        let anchored = |k| KernelChoice::Auto.resolve(10, 57, big, Isa::Avx512, Some(k));
        assert_eq!(anchored(1), KernelKind::Vse);
        assert_eq!(anchored(30), KernelKind::Vse);
        assert_eq!(anchored(60), KernelKind::Bitset);
    }
}

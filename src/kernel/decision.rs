//! The kernel decision, made here and nowhere else: which kernel computes
//! a scan's pairs.
//!
//! It is made in two steps, both here:
//! 1. **By shape** ([`KernelPlan::for_shape`]): what was asked
//!    (`kendall.kernel`, `kendall.simd`), the genes and samples, the memory
//!    the bit-planes may take and how many genes a gene-targeted query
//!    touches give a [`Decision`]. Planning makes it when the shape is known
//!    then (shown by `EXPLAIN`, carried by the Ballista codec as it is); the
//!    load makes it again with the shape it read.
//! 2. **By data** ([`KernelPlan::for_data`]): once the ranks are built,
//!    `auto` switches to the zero-inflated kernel where most samples of most
//!    genes share one value (see [`zero::prefer`]).
//! 3. **By pair** ([`KernelPlan::rank_sums`]): under `auto`, a pair with a
//!    two-valued gene and no missing value is a rank sum
//!    ([`binary`](super::binary)), whatever kernel computes the others.

use datafusion::common::plan_err;
use datafusion::error::Result;

use super::isa::{Isa, SimdChoice};
use super::{KernelChoice, KernelKind, bitset, zero};
use crate::rank::RankedMatrix;

/// Up to how many samples the bit-plane kernel beats VSE on `isa`.
/// Measured with `cargo bench --bench kernels -- 1000 1500 2000 vse bitset`
/// on Zen 5 (AVX2 and scalar rows with `KENDALL_MAX_ISA=avx2`): AVX-512
/// bitset, walking long planes in cache-sized chunks, is 4.6× AVX-512 VSE
/// at n = 2,000 without ties and 2.1× with heavy ties (n/4 levels),
/// crossing near n = 2,500 with them (`-- 1500 2000 2500 3000 vse bitset`;
/// 1,400 before the chunks); AVX2 bitset is still 2.0× AVX2 VSE at
/// n = 2,000 without ties and 1.18× with heavy ties (crossing near 2,300);
/// scalar bitset is 3.4× and 2.3× scalar VSE there (crossing beyond 4,000).
pub fn bitset_max_samples(isa: Isa) -> usize {
    match isa {
        Isa::Avx512 => 2000,
        Isa::Avx2 => 2000,
        Isa::Scalar => 4000,
    }
}

/// A gene-targeted query with k anchor genes computes k·m pairs; building
/// the bit-planes of all m genes costs about what VSE needs for
/// `ANCHOR_FACTOR · n / log2(n)` anchors. Measured with `cargo bench --bench
/// end_to_end -- FILE --kernels bitset,vse --partitions 2 --where "gene_i IN
/// (...) OR gene_j IN (...)"` for 1, 32 and 128 genes: on the whole bladder
/// matrix (n = 57) VSE 0.07 / 0.11 / 0.24 s, bitset 0.10 / 0.13 / 0.17 s; on
/// the 17,941 × 310 synthetic one VSE 0.30 s, bitset 0.86 s for one gene.
pub const ANCHOR_FACTOR: f64 = 4.0;

/// Without SIMD, up to this many samples the naive loop beats scalar VSE
/// (n = 57: naive 1.57e6 pairs/s, scalar VSE 1.30e6; n = 128: 0.34e6 vs 0.51e6).
pub const NAIVE_MAX_SAMPLES: usize = 64;

impl KernelChoice {
    /// Resolves `auto` to a concrete kernel for `genes` genes of `samples`
    /// values on instruction set `isa`: the bit-plane kernel while n is
    /// below its crossover, its planes fit in `memory_limit` bytes and the
    /// query computes enough pairs to repay building them (`anchors`: the
    /// number of genes a gene-targeted query's pairs must touch, see
    /// [`ANCHOR_FACTOR`]), else VSE (or, without SIMD and for tiny n, the
    /// naive loop). GSE is never the fastest; it stays as the portable
    /// reference.
    pub fn resolve(
        self,
        genes: usize,
        samples: usize,
        memory_limit: u64,
        isa: Isa,
        anchors: Option<usize>,
    ) -> KernelKind {
        let n = samples as f64;
        let few_pairs = anchors.is_some_and(|k| (k as f64) * n.log2() < ANCHOR_FACTOR * n);
        match self {
            KernelChoice::Naive => KernelKind::Naive,
            KernelChoice::Gse => KernelKind::Gse,
            KernelChoice::Vse => KernelKind::Vse,
            KernelChoice::Bitset => KernelKind::Bitset,
            KernelChoice::Zero => KernelKind::Zero,
            KernelChoice::Auto
                if samples <= bitset_max_samples(isa)
                    && bitset::plane_bytes(genes, samples) <= memory_limit
                    && !few_pairs =>
            {
                KernelKind::Bitset
            }
            KernelChoice::Auto if isa == Isa::Scalar && samples <= NAIVE_MAX_SAMPLES => {
                KernelKind::Naive
            }
            KernelChoice::Auto => KernelKind::Vse,
        }
    }
}

/// How the kernel of a scan is chosen: what was asked, and what bounds it.
#[derive(Debug, Clone)]
pub struct KernelPlan {
    /// `kendall.kernel`.
    pub choice: KernelChoice,
    /// `kendall.memory_limit` in bytes.
    pub option_limit: u64,
    /// What DataFusion's memory pool could grant at planning time, if bounded.
    pub pool_available: Option<usize>,
    /// `kendall.simd`, which `isa` was resolved from (on the CPU that
    /// planned; a plan shipped to another machine resolves it again there).
    pub simd: SimdChoice,
    /// Instruction set of the SIMD kernels.
    pub isa: Isa,
    /// Genes a gene-targeted query's pairs touch, at most.
    pub anchors: Option<usize>,
}

/// The kernel chosen for a shape: what `EXPLAIN` shows and a plan carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The kernel.
    pub kind: KernelKind,
    /// `auto` switches to the zero-inflated kernel if the data turns out
    /// to be zero-inflated ([`KernelPlan::for_data`]).
    pub zero_if_inflated: bool,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kind)?;
        if self.zero_if_inflated {
            write!(f, " (zero if zero-inflated)")?;
        }
        Ok(())
    }
}

impl KernelPlan {
    /// The kernel for `genes` × `samples`; an error when the bitset kernel,
    /// asked for, needs more memory than it may take.
    pub fn for_shape(&self, genes: usize, samples: usize) -> Result<Decision> {
        let ranks = RankedMatrix::fixed_bytes(genes, samples) as u64;
        let pool_room = self
            .pool_available
            .map(|available| (available as u64).saturating_sub(ranks));
        let limit = pool_room.map_or(self.option_limit, |room| room.min(self.option_limit));
        let kind = self
            .choice
            .resolve(genes, samples, limit, self.isa, self.anchors);
        let planes = bitset::plane_bytes(genes, samples);
        if kind == KernelKind::Bitset && planes > limit {
            let over = match pool_room {
                Some(room) if room < self.option_limit => format!(
                    "over the {room} bytes DataFusion's memory pool can grant besides the {ranks} \
                     bytes of ranks (datafusion.runtime.memory_limit)"
                ),
                _ => format!("over kendall.memory_limit = {}", self.option_limit),
            };
            return plan_err!(
                "the bitset kernel needs {planes} bytes of bit-planes for {genes} genes x \
                 {samples} samples, {over}; raise the limit or SET kendall.kernel = 'auto'"
            );
        }
        Ok(Decision {
            kind,
            zero_if_inflated: self.choice == KernelChoice::Auto && zero::may_prefer(kind, samples),
        })
    }

    /// Whether pairs with a two-valued gene are computed as rank sums
    /// ([`binary`](super::binary), O(k) for k samples at the rarer value):
    /// always under `auto`, never when a kernel is asked for by name.
    pub fn rank_sums(&self) -> bool {
        self.choice == KernelChoice::Auto
    }

    /// The kernel that runs on `matrix`, decided by shape as `decision`:
    /// the zero-inflated one where `auto` finds the data zero-inflated.
    pub fn for_data(&self, decision: Decision, matrix: &RankedMatrix) -> KernelKind {
        if decision.zero_if_inflated {
            zero::prefer(decision.kind, matrix)
        } else {
            decision.kind
        }
    }
}

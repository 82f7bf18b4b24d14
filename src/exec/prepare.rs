//! The input of a query loaded, ranked and split into work, once; shared
//! by all of the query's partitions ([`Prepared`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, StringArray};
use datafusion::error::Result;

use super::ScanConfig;
use super::dictionary::GeneDictionary;
use super::top_k::TopCollector;
use crate::gene_filter::{Anchors, ResolvedGenes, walked_anchors};
use crate::input::{self, InputBatches, InputSpec, MissingValues, PairListSpec};
use crate::kernel::KernelKind;
use crate::kernel::bitset::BitPlanes;
use crate::load::checkpoint;
use crate::memory::{QueryMemory, Reservation};
use crate::rank::RankedMatrix;
use crate::schema::GeneIds;
use crate::stats::fdr::{CountingPass, QValues};
use crate::stats::pvalue::PValues;
use crate::work::WorkSplit;

/// The input after loading and ranking: shared by all partitions of a query.
#[derive(Debug)]
pub(super) struct Prepared {
    pub(super) genes: StringArray,
    /// The gene columns' dictionary, when they are dictionaries.
    pub(super) dictionary: Option<GeneDictionary>,
    /// The kernel, resolved for the loaded shape.
    pub(super) kernel: KernelKind,
    pub(super) matrix: RankedMatrix,
    /// Bit-planes, for the bitset kernel only.
    pub(super) planes: Option<Arc<BitPlanes>>,
    /// The pairs to compute, split into partitions.
    pub(super) work: WorkSplit,
    /// The pushed-down gene filter over gene positions.
    pub(super) gene_filter: Option<ResolvedGenes>,
    /// p-value tables, when the query reads `p_value` or `q_value`.
    pub(super) pvalues: Option<PValues>,
    /// Every pair's q-value, when the query reads `q_value`.
    pub(super) qvalues: Option<QValues>,
    /// `kendall.missing = 'propagate'`: a pair touching a gene with a
    /// missing value gets NaN tau, p- and q-value.
    pub(super) propagate: bool,
    /// Where the partitions merge their top partners (top-partners mode).
    pub(super) top: Option<TopCollector>,
    /// Memory pool reservations of the ranks, of the planes, of the
    /// q-values, of the exact p-value distribution and of the candidate
    /// pairs, released with them.
    pub(super) _reserved: [Reservation; 6],
}

/// Reads, validates and ranks the input; splits the tiles into partitions.
/// Values, ranks and planes are reserved in `memory` before they are built.
/// Stops between stages (and between the batches it reads) when the query
/// no longer wants it ([`checkpoint`]).
pub(super) fn prepare(
    spec: &InputSpec,
    batches: InputBatches,
    right: Option<(&InputSpec, InputBatches)>,
    pair_list: Option<(&PairListSpec, InputBatches)>,
    config: &ScanConfig,
    (wants_p, wants_q): (bool, bool),
    memory: &QueryMemory,
) -> Result<Prepared> {
    // kendall_cross_pairs: the right genes below the left ones, on the
    // samples both have. The two inputs are read side by side, or, under a
    // memory limit, one after the other (what reading one holds is then
    // freed before the other is read).
    let right_what = right.as_ref().map(|(s, _)| s.what.clone());
    let (loaded, cross) = match right {
        Some((right_spec, right_batches)) => {
            let left = || input::load(spec, batches, memory);
            let right = || input::load(right_spec, right_batches, memory);
            let (loaded, right) = if memory.is_limited() {
                let loaded = left()?;
                checkpoint()?;
                (loaded, right()?)
            } else {
                crate::load::join(left, right)?
            };
            checkpoint()?;
            let left_genes = loaded.genes.len();
            let stacked = input::stack::stack(loaded, spec, right, right_spec, memory)?;
            let right_genes = stacked.genes.len() - left_genes;
            (stacked, Some((left_genes, right_genes)))
        }
        None => {
            let loaded = input::load(spec, batches, memory)?;
            checkpoint()?;
            (loaded, None)
        }
    };
    // Listwise deletion: only samples every gene (of both sides) has.
    let mut loaded = loaded;
    if spec.missing == MissingValues::Complete {
        let what = match right_what {
            Some(right) => format!("{} and {right}", spec.what),
            None => spec.what.clone(),
        };
        loaded.keep_complete_samples(&what)?;
    }
    let propagate = spec.missing == MissingValues::Propagate;
    let gene_ids = loaded.genes.clone();
    let genes = gene_ids.len();
    // q-values take a pass over every pair, gene filters or not: the
    // kernel is chosen for all of them.
    let mut kernel_plan = config.kernel.clone();
    if wants_q {
        kernel_plan.anchors = None;
    }
    let decision = kernel_plan.for_shape(genes, loaded.samples)?;
    let shape = format!("{genes} genes x {} samples", loaded.samples);
    let mut ranks_memory = memory.reserve(&format!("ranks and sample orders ({shape})"), 0)?;
    let matrix = match &loaded.sparse {
        // Mostly zeros: ranks of the non-zero values only.
        Some(sparse) => RankedMatrix::try_build_sparse(loaded.samples, sparse, &mut ranks_memory)?,
        None => RankedMatrix::try_build(
            genes,
            loaded.samples,
            &loaded.values,
            &loaded.residuals,
            &mut ranks_memory,
        )?,
    };
    // The values (and their reservation) are no longer needed once ranked.
    drop(loaded);
    checkpoint()?;
    // `auto` switches to the zero-inflated kernel where the data is.
    let kernel = kernel_plan.for_data(decision, &matrix);
    // The bit-planes are built from dense ranks (and take more).
    let matrix = if kernel == KernelKind::Bitset {
        matrix.try_into_dense(&mut ranks_memory)?
    } else {
        matrix
    };
    let mut planes_memory = memory.reserve(&format!("bit-planes ({shape})"), 0)?;
    let planes = if kernel == KernelKind::Bitset {
        let bytes = crate::kernel::bitset::plane_bytes(genes, matrix.samples());
        planes_memory.try_grow(usize::try_from(bytes).unwrap_or(usize::MAX))?;
        Some(Arc::new(BitPlanes::try_build(&matrix)?))
    } else {
        None
    };
    checkpoint()?;
    let positions = |names: &BTreeSet<String>| -> Vec<u32> {
        let mut found: Vec<u32> = (0..genes)
            .filter(|&g| names.contains(gene_ids.value(g)))
            .map(|g| g as u32)
            .collect();
        found.sort_unstable();
        found
    };
    // kendall_candidate_pairs: the listed pairs, found among the genes (the
    // first id among the left genes, the second among the right ones).
    let mut list_memory = memory.reserve("candidate pairs", 0)?;
    let listed = match pair_list {
        Some((list, batches)) => {
            let (first, second) = match cross {
                Some((left, right)) => (0..left, left..left + right),
                None => (0..genes, 0..genes),
            };
            let (pairs, reserved) = list.read(batches, &gene_ids, first, second, memory)?;
            list_memory = reserved;
            checkpoint()?;
            Some(Arc::new(pairs))
        }
        None => None,
    };
    // Anchors as gene positions: cross pairs' `gene_i` anchors among the
    // left genes, `gene_j` ones among the right (a name both sides hold is
    // on both).
    let left = cross.map(|(left, _)| left);
    let sided = |(i, j): &Anchors| -> (Vec<u32>, Vec<u32>) {
        let (mut anchor_i, mut anchor_j) = (positions(i), positions(j));
        if let Some(left) = left {
            anchor_i.retain(|&g| (g as usize) < left);
            anchor_j.retain(|&g| (g as usize) >= left);
        }
        (anchor_i, anchor_j)
    };
    // Of the two sides of an AND, the one with fewer pairs to walk.
    let walked = |anchors: &Anchors| -> u64 {
        let (anchor_i, anchor_j) = sided(anchors);
        WorkSplit::anchor_pairs(genes, &anchor_i, &anchor_j, left)
    };
    let anchors = walked_anchors(config.gene_predicate.as_deref(), listed.is_some(), &walked);
    let mut work = match (&listed, cross, anchors) {
        (Some(pairs), _, _) => WorkSplit::listed(Arc::clone(pairs), config.partitions),
        (None, _, Some(anchors)) => {
            let (anchor_i, anchor_j) = sided(&anchors);
            WorkSplit::anchors(genes, &anchor_i, &anchor_j, left, config.partitions)
        }
        (None, Some((left, right)), None) => WorkSplit::cross(left, right, config.partitions),
        (None, None, None) => WorkSplit::tiles(genes, config.tile_size, config.partitions),
    };
    let gene_filter = config.gene_predicate.as_ref().map(|p| p.resolve(&gene_ids));
    let mut q_memory = memory.reserve("q-values", 0)?;
    let mut kept_memory = memory.reserve("candidate pairs' numerators", 0)?;
    let mut p_memory = memory.reserve(
        &format!("exact p-value distribution ({} samples)", matrix.samples()),
        0,
    )?;
    let pvalues = if wants_p {
        Some(PValues::try_new(
            config.pvalue_options(),
            matrix.samples(),
            &mut p_memory,
        )?)
    } else {
        None
    };
    checkpoint()?;
    let qvalues = match (&pvalues, wants_q) {
        (Some(pvalues), true) => {
            let counted = CountingPass {
                matrix: &matrix,
                kernel,
                isa: config.kernel.isa,
                planes: planes.clone(),
                min_periods: config.min_periods,
                tile_size: config.tile_size,
                cross,
                listed: listed.clone(),
                rank_sums: config.kernel.rank_sums(),
                propagate,
                stop: crate::load::stop_flag(),
                pvalues,
            }
            .run(&mut q_memory, &mut kept_memory)?;
            checkpoint()?;
            // A candidate list's rows take the numerators this pass kept.
            if let Some(listed) = &counted.listed {
                work = work.with_numerators(Arc::clone(&listed.numerators));
            }
            let q = QValues::try_new(counted, pvalues, config.fdr, &mut q_memory)?;
            Some(q)
        }
        _ => None,
    };
    let top = config.top_k.map(|_| TopCollector::new(config.partitions));
    checkpoint()?;
    let dictionary = match config.gene_ids {
        GeneIds::Dictionary => Some(GeneDictionary::new(&gene_ids)?),
        GeneIds::String => None,
    };
    Ok(Prepared {
        propagate,
        dictionary,
        genes: gene_ids,
        kernel,
        matrix,
        planes,
        work,
        gene_filter,
        pvalues,
        qvalues,
        top,
        _reserved: [
            ranks_memory,
            planes_memory,
            q_memory,
            kept_memory,
            p_memory,
            list_memory,
        ],
    })
}

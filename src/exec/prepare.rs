//! The input of a query loaded, ranked and split into work, once; shared
//! by all of the query's partitions ([`Prepared`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, StringArray};
use datafusion::error::Result;
use datafusion::physical_plan::metrics::{
    ExecutionPlanMetricsSet, MetricBuilder, MetricValue, Time,
};

use super::ScanConfig;
use super::dictionary::GeneDictionary;
use super::top_k::TopCollector;
use crate::gene_filter::{Anchors, ResolvedGenes, walked_anchors};
use crate::input::{
    self, ExpressionMatrix, InputBatches, InputSpec, ListedPairs, MatrixValues, MissingValues,
    PairListSpec,
};
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
    /// Candidate pairs: the listed pairs (and, in list order, each line's).
    pub(super) listed: Option<Arc<ListedPairs>>,
    /// Memory pool reservations of the ranks, of the planes, of the
    /// q-values, of the exact p-value distribution and of the candidate
    /// pairs, released with them.
    pub(super) _reserved: [Reservation; 6],
    /// How long the stages took.
    pub(super) stage_times: StageTimes,
}

/// How long [`prepare`]'s stages took, once per query.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct StageTimes {
    /// Reading and checking the input ([`load_inputs`]).
    load: Duration,
    /// Ranking and the kernel's decision ([`rank`]).
    rank: Duration,
    /// The bit-planes ([`bit_planes`]).
    planes: Duration,
    /// The rest: the candidate list, the work split, p-value tables and
    /// the q-values' counting pass over every pair.
    rest: Duration,
}

/// The [`StageTimes`] of a scan, as `EXPLAIN ANALYZE` shows them:
/// `load_time`, `rank_time`, `planes_time` and `prepare_rest_time`.
#[derive(Debug, Clone)]
pub(super) struct StageMetrics([Time; 4]);

impl StageMetrics {
    /// The four timers, registered in `set` (not per partition: the input
    /// is prepared once per query).
    pub(super) fn new(set: &ExecutionPlanMetricsSet) -> Self {
        let time = |name: &'static str| {
            let time = Time::new();
            MetricBuilder::new(set).build(MetricValue::Time {
                name: name.into(),
                time: time.clone(),
            });
            time
        };
        Self([
            time("load_time"),
            time("rank_time"),
            time("planes_time"),
            time("prepare_rest_time"),
        ])
    }

    /// Adds a load's time (a grouped scan's, whose groups are prepared
    /// apart).
    pub(super) fn record_load(&self, load: Duration) {
        self.0[0].add_duration(load);
    }

    /// Adds one preparation's times.
    pub(super) fn record(&self, times: &StageTimes) {
        let [load, rank, planes, rest] = &self.0;
        load.add_duration(times.load);
        rank.add_duration(times.rank);
        planes.add_duration(times.planes);
        rest.add_duration(times.rest);
    }
}

/// The input read and checked, not yet ranked: the matrix (two stacked
/// for `kendall_cross_pairs`) and a candidate list's pairs. A grouped scan
/// keeps it for the whole query and ranks each group's samples from it.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) matrix: ExpressionMatrix,
    /// What every group shares besides its samples.
    pub(super) shared: Shared,
    /// The candidate list's reservation.
    list_memory: Reservation,
    /// How long reading took.
    pub(super) load_time: Duration,
}

/// What every group of a scan shares besides its matrix: the cross
/// shape, the candidate list and `kendall.missing = 'propagate'`.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    /// Cross pairs: the left and right gene counts.
    pub(super) cross: Option<(usize, usize)>,
    /// Candidate pairs: the listed pairs among the genes.
    pub(super) listed: Option<Arc<ListedPairs>>,
    /// A pair touching a gene with a missing value gets NaN.
    pub(super) propagate: bool,
}

/// Reads, validates and ranks the input; splits the tiles into partitions.
/// Values, ranks and planes are reserved in `memory` before they are built.
/// Stops between stages (and between the batches it reads) when the query
/// no longer wants it ([`checkpoint`]).
///
/// A straight pipeline of named stages, each returning what it built and
/// the memory reservation that holds it: [`load`] (the input, a candidate
/// list), listwise deletion, then [`prepare_loaded`]'s.
pub(super) fn prepare(
    spec: &InputSpec,
    batches: InputBatches,
    right: Option<(&InputSpec, InputBatches)>,
    pair_list: Option<(&PairListSpec, InputBatches)>,
    config: &ScanConfig,
    wants: (bool, bool),
    memory: &QueryMemory,
) -> Result<Prepared> {
    let right_what = right.as_ref().map(|(s, _)| s.what.clone());
    let mut loaded = load(
        spec,
        batches,
        right,
        pair_list,
        config.in_list_order,
        memory,
    )?;
    // Listwise deletion: only samples every gene (of both sides) has.
    if spec.missing == MissingValues::Complete {
        let what = match right_what {
            Some(right) => format!("{} and {right}", spec.what),
            None => spec.what.clone(),
        };
        loaded.matrix.keep_complete_samples(&what)?;
    }
    let Loaded {
        matrix,
        shared,
        list_memory,
        load_time,
    } = loaded;
    let mut prepared = prepare_loaded(matrix, &shared, config, wants, memory)?;
    prepared.stage_times.load = load_time;
    prepared._reserved[5] = list_memory;
    Ok(prepared)
}

/// Stages 1 and 2: the input read and checked ([`load_inputs`]), and a
/// candidate list's pairs among its genes ([`read_pair_list`]; with each
/// line's pair when `lines`).
pub(super) fn load(
    spec: &InputSpec,
    batches: InputBatches,
    right: Option<(&InputSpec, InputBatches)>,
    pair_list: Option<(&PairListSpec, InputBatches)>,
    lines: bool,
    memory: &QueryMemory,
) -> Result<Loaded> {
    let clock = Instant::now();
    let (matrix, cross) = load_inputs(spec, batches, right, memory)?;
    let (listed, list_memory) = read_pair_list(pair_list, cross, &matrix.genes, lines, memory)?;
    checkpoint()?;
    Ok(Loaded {
        matrix,
        shared: Shared {
            cross,
            listed,
            propagate: spec.missing == MissingValues::Propagate,
        },
        list_memory,
        load_time: clock.elapsed(),
    })
}

/// The pairs one group of a grouped scan over `loaded` computes (every
/// group has every gene).
pub(super) fn pairs_per_group(loaded: &Loaded, config: &ScanConfig) -> u64 {
    let shared = &loaded.shared;
    split_work(
        config,
        &loaded.matrix.genes,
        shared.cross,
        shared.listed.as_ref(),
    )
    .total_pairs()
}

/// The stages after loading, for one matrix (the input's, or one group's
/// samples of it): [`rank`], [`bit_planes`], [`split_work`], [`p_values`],
/// [`q_values`].
pub(super) fn prepare_loaded(
    loaded: ExpressionMatrix,
    shared: &Shared,
    config: &ScanConfig,
    (wants_p, wants_q): (bool, bool),
    memory: &QueryMemory,
) -> Result<Prepared> {
    let mut clock = Instant::now();
    let mut lap = || {
        let now = Instant::now();
        let lap = now - clock;
        clock = now;
        lap
    };
    let Shared {
        cross,
        listed,
        propagate,
    } = shared.clone();
    let gene_ids = loaded.genes.clone();
    let (matrix, kernel, ranks_memory) = rank(loaded, config, wants_q, memory)?;
    checkpoint()?;
    let rank_time = lap();
    let (planes, planes_memory) = bit_planes(&matrix, kernel, memory)?;
    checkpoint()?;
    let planes_time = lap();
    let work = split_work(config, &gene_ids, cross, listed.as_ref());
    let gene_filter = config.gene_predicate.as_ref().map(|p| p.resolve(&gene_ids));
    let (pvalues, p_memory) = p_values(config, wants_p, matrix.samples(), memory)?;
    checkpoint()?;
    let counting = |pvalues| CountingPass {
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
    };
    let for_q = pvalues.as_ref().filter(|_| wants_q);
    let (qvalues, work, [q_memory, kept_memory]) = q_values(for_q, counting, config, work, memory)?;
    let top = config.top_k.map(|_| TopCollector::new(config.partitions));
    checkpoint()?;
    let dictionary = match config.gene_ids {
        GeneIds::Dictionary => Some(GeneDictionary::new(&gene_ids)?),
        GeneIds::String => None,
    };
    let stage_times = StageTimes {
        load: Duration::ZERO,
        rank: rank_time,
        planes: planes_time,
        rest: lap(),
    };
    // A candidate list's reservation is the load's (see `prepare`).
    let list_memory = memory.reserve("candidate pairs", 0)?;
    Ok(Prepared {
        stage_times,
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
        listed,
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

/// Stage 1, the input loaded: one matrix, or for `kendall_cross_pairs`
/// two stacked (the right genes below the left ones, on the samples both
/// have), with the two sides' gene counts. The two inputs are read side by side,
/// or, under a memory limit, one after the other (what reading one holds
/// is then freed before the other is read). The matrix holds its own
/// reservation.
fn load_inputs(
    spec: &InputSpec,
    batches: InputBatches,
    right: Option<(&InputSpec, InputBatches)>,
    memory: &QueryMemory,
) -> Result<(ExpressionMatrix, Option<(usize, usize)>)> {
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
            let stacked = input::stack::stack(loaded, &spec.what, right, &right_spec.what, memory)?;
            let right_genes = stacked.genes.len() - left_genes;
            (stacked, Some((left_genes, right_genes)))
        }
        None => {
            let loaded = input::load(spec, batches, memory)?;
            checkpoint()?;
            (loaded, None)
        }
    };
    Ok((loaded, cross))
}

/// Stage 3, the matrix ranked and the kernel decided: by shape (for every
/// pair when q-values are read, gene filters or not), then by data (`auto`
/// switches to the zero-inflated kernel where the data is); the bitset
/// kernel's ranks dense. The values (and their reservation) are dropped
/// once ranked; the ranks' reservation is returned.
fn rank(
    loaded: ExpressionMatrix,
    config: &ScanConfig,
    wants_q: bool,
    memory: &QueryMemory,
) -> Result<(RankedMatrix, KernelKind, Reservation)> {
    let genes = loaded.genes.len();
    let mut kernel_plan = config.kernel.clone();
    if wants_q {
        kernel_plan.anchors = None;
    }
    let decision = kernel_plan.for_shape(genes, loaded.samples)?;
    let shape = format!("{genes} genes x {} samples", loaded.samples);
    let mut ranks_memory = memory.reserve(&format!("ranks and sample orders ({shape})"), 0)?;
    let matrix = match &loaded.values {
        // Mostly zeros: ranks of the non-zero values only.
        MatrixValues::Sparse(sparse) => {
            RankedMatrix::try_build_sparse(loaded.samples, sparse, &mut ranks_memory)?
        }
        MatrixValues::Dense { values, residuals } => {
            RankedMatrix::try_build(genes, loaded.samples, values, residuals, &mut ranks_memory)?
        }
    };
    drop(loaded);
    checkpoint()?;
    let kernel = kernel_plan.for_data(decision, &matrix);
    // The bit-planes are built from dense ranks (and take more).
    let matrix = if kernel == KernelKind::Bitset {
        matrix.try_into_dense(&mut ranks_memory)?
    } else {
        matrix
    };
    Ok((matrix, kernel, ranks_memory))
}

/// Stage 4, the bit-planes of the bitset kernel (none for the others), and
/// their reservation.
fn bit_planes(
    matrix: &RankedMatrix,
    kernel: KernelKind,
    memory: &QueryMemory,
) -> Result<(Option<Arc<BitPlanes>>, Reservation)> {
    let shape = format!("{} genes x {} samples", matrix.genes(), matrix.samples());
    let mut planes_memory = memory.reserve(&format!("bit-planes ({shape})"), 0)?;
    let planes = if kernel == KernelKind::Bitset {
        let bytes = crate::kernel::bitset::plane_bytes(matrix.genes(), matrix.samples());
        planes_memory.try_grow(usize::try_from(bytes).unwrap_or(usize::MAX))?;
        Some(Arc::new(BitPlanes::try_build(matrix)?))
    } else {
        None
    };
    Ok((planes, planes_memory))
}

/// Stage 2, `kendall_candidate_pairs`' list: the listed pairs found among
/// `gene_ids` (the first id among the left genes, the second among the
/// right ones; with each line's pair when `lines`), and their reservation.
fn read_pair_list(
    pair_list: Option<(&PairListSpec, InputBatches)>,
    cross: Option<(usize, usize)>,
    gene_ids: &StringArray,
    lines: bool,
    memory: &QueryMemory,
) -> Result<(Option<Arc<ListedPairs>>, Reservation)> {
    let genes = gene_ids.len();
    let mut list_memory = memory.reserve("candidate pairs", 0)?;
    let listed = match pair_list {
        Some((list, batches)) => {
            let (first, second) = match cross {
                Some((left, right)) => (0..left, left..left + right),
                None => (0..genes, 0..genes),
            };
            let (pairs, reserved) = list.read(batches, gene_ids, first, second, lines, memory)?;
            list_memory = reserved;
            checkpoint()?;
            Some(Arc::new(pairs))
        }
        None => None,
    };
    Ok((listed, list_memory))
}

/// Stage 5, the pairs to compute split into partitions: the listed pairs,
/// or the pairs touching a gene filter's anchors, or the cross rectangle,
/// or the tiles of the triangle. Nothing is reserved.
fn split_work(
    config: &ScanConfig,
    gene_ids: &StringArray,
    cross: Option<(usize, usize)>,
    listed: Option<&Arc<ListedPairs>>,
) -> WorkSplit {
    let genes = gene_ids.len();
    let positions = |names: &BTreeSet<String>| -> Vec<u32> {
        let mut found: Vec<u32> = (0..genes)
            .filter(|&g| names.contains(gene_ids.value(g)))
            .map(|g| g as u32)
            .collect();
        found.sort_unstable();
        found
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
    match (listed, cross, anchors) {
        (Some(pairs), _, _) => WorkSplit::listed(Arc::clone(pairs), config.partitions),
        (None, _, Some(anchors)) => {
            let (anchor_i, anchor_j) = sided(&anchors);
            WorkSplit::anchors(genes, &anchor_i, &anchor_j, left, config.partitions)
        }
        (None, Some((left, right)), None) => WorkSplit::cross(left, right, config.partitions),
        (None, None, None) => WorkSplit::tiles(genes, config.tile_size, config.partitions),
    }
}

/// Stage 6, the p-value tables when the query reads `p_value` or
/// `q_value`, and the reservation of the exact distribution.
fn p_values(
    config: &ScanConfig,
    wants_p: bool,
    samples: usize,
    memory: &QueryMemory,
) -> Result<(Option<PValues>, Reservation)> {
    let mut p_memory = memory.reserve(
        &format!("exact p-value distribution ({samples} samples)"),
        0,
    )?;
    let pvalues = if wants_p {
        Some(PValues::try_new(
            config.pvalue_options(),
            samples,
            &mut p_memory,
        )?)
    } else {
        None
    };
    Ok((pvalues, p_memory))
}

/// Stage 7, every pair's q-value when the query reads `q_value` (then
/// `pvalues` is `Some`): the `counting` pass over every pair, whose kept
/// numerators a candidate list's rows then read (`work` takes them).
/// Returns the reservations of the q-values and of the kept numerators.
fn q_values<'a>(
    pvalues: Option<&'a PValues>,
    counting: impl FnOnce(&'a PValues) -> CountingPass<'a>,
    config: &ScanConfig,
    mut work: WorkSplit,
    memory: &QueryMemory,
) -> Result<(Option<QValues>, WorkSplit, [Reservation; 2])> {
    let mut q_memory = memory.reserve("q-values", 0)?;
    let mut kept_memory = memory.reserve("candidate pairs' numerators", 0)?;
    let Some(pvalues) = pvalues else {
        return Ok((None, work, [q_memory, kept_memory]));
    };
    let counted = counting(pvalues).run(&mut q_memory, &mut kept_memory)?;
    checkpoint()?;
    // A candidate list's rows take the numerators this pass kept.
    if let Some(listed) = &counted.listed {
        work = work.with_numerators(Arc::clone(&listed.numerators));
    }
    let q = QValues::try_new(counted, pvalues, config.fdr, &mut q_memory)?;
    Ok((Some(q), work, [q_memory, kept_memory]))
}

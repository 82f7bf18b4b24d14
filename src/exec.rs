//! `KendallExec`: the execution plan that computes and streams the pairs.
//!
//! The input is loaded and ranked once per query, lazily, by whichever
//! partition starts first; all partitions share it, and its outcome, error
//! included (see [`crate::load`]). Partition `p` owns a contiguous range of
//! tile ids, balanced by pair count, and streams batches of at most
//! `batch_size` rows. Each poll computes for about [`POLL_BUDGET`] before
//! handing control back to the runtime, paced by measured cost (see
//! [`crate::pace`]), so `LIMIT`, cancellation and other tasks are never
//! starved, however selective the pushed-down filter or costly a pair.

use std::collections::BTreeSet;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use datafusion::arrow::array::{
    Array, ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, StringArray,
    UInt32Array,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{
    Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions, SchedulingType,
    reset_plan_states,
};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{Stream, TryStreamExt};

use crate::fdr::{CountingPass, FdrMethod, LastContext, QValues};
use crate::filter::{PairValues, TauPredicate};
use crate::gene_filter::{GenePredicate, ResolvedGenes};
use crate::input::{self, InputBatches, InputSpec, RankedMatrix};
use crate::kernel::bitset::BitPlanes;
use crate::kernel::pvalue::{PValueMethod, PValues};
use crate::kernel::{KernelChoice, KernelKind, PairKernel, PairNumerator, Variant, tau};
use crate::load::{SharedLoad, checkpoint};
use crate::memory::{QueryMemory, Reservation};
pub use crate::pace::POLL_BUDGET;
use crate::pace::Pacer;
use crate::table::{GeneIds, KernelPlan, output_schema_for};
use crate::top_partners::{
    self, EmitContext, TopCollector, TopPartners, TopRows, top_partners_schema,
};
use crate::work::{PairCursor, WorkSplit};

/// Index of `p_value` in the output schema.
const P_VALUE_COLUMN: usize = 3;

/// Index of `n` (samples a pair shares) in the output schema.
const N_COLUMN: usize = 4;

/// Index of `q_value` in the output schema.
const Q_VALUE_COLUMN: usize = 5;

/// What a scan computes, fixed at planning time.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    /// tau-a, tau-b or tau-c.
    pub variant: Variant,
    /// Pairs sharing fewer samples than this get NULL tau and p-value.
    pub min_periods: usize,
    /// How the kernel is chosen (resolved once the input is loaded).
    pub kernel: KernelPlan,
    /// The kernel as resolved at planning time, when the shape of the input
    /// was known then (shown by `EXPLAIN`).
    pub planned_kernel: Option<KernelKind>,
    /// How p-values are computed (when a query reads them).
    pub pvalue: PValueMethod,
    /// How q-values adjust them (when a query reads them).
    pub fdr: FdrMethod,
    /// Tile edge in genes.
    pub tile_size: usize,
    /// Number of output partitions.
    pub partitions: usize,
    /// Maximum rows per batch.
    pub batch_size: usize,
    /// Pushed-down filter on tau, applied exactly.
    pub predicate: Option<Arc<TauPredicate>>,
    /// Pushed-down filter on the gene columns, applied exactly; when it
    /// bounds the genes a pair must touch, only those pairs are computed.
    pub gene_predicate: Option<Arc<GenePredicate>>,
    /// Rows any single partition needs to produce at most.
    pub limit: Option<usize>,
    /// `kendall_top_partners`: each gene's `k` strongest partners instead
    /// of every pair (see [`crate::top_partners`]).
    pub top_k: Option<usize>,
    /// How the gene columns are typed.
    pub gene_ids: GeneIds,
    /// The pushed-down filters `predicate` and `gene_predicate` were made
    /// from, as the query wrote them (what a plan shipped to another
    /// process carries, see [`crate::ballista`]).
    pub filters: Vec<Expr>,
    /// Planned for a Ballista cluster, where each partition runs in a task
    /// of its own: modes that merge state across partitions (top partners,
    /// q-values) then run as one partition.
    pub cluster: bool,
}

/// Dictionary-typed gene columns: the distinct gene names, and each gene
/// position's key into them. Positions and keys differ only when names
/// repeat (kendall_cross_pairs over two matrices sharing genes): a
/// dictionary with repeated values is valid Arrow, but pandas and others
/// take a key for a name.
#[derive(Debug)]
struct GeneDictionary {
    values: ArrayRef,
    /// The key of each gene position; `None` when it is the position.
    keys: Option<Vec<i32>>,
}

impl GeneDictionary {
    fn new(genes: &StringArray) -> Result<Self> {
        if i32::try_from(genes.len()).is_err() {
            return Err(DataFusionError::Execution(format!(
                "kendall.gene_ids = 'dictionary' holds at most {} genes, got {}",
                i32::MAX,
                genes.len()
            )));
        }
        let mut seen: std::collections::HashMap<&str, i32> =
            std::collections::HashMap::with_capacity(genes.len());
        let mut distinct: Vec<&str> = Vec::new();
        let keys: Vec<i32> = (0..genes.len())
            .map(|g| {
                let name = genes.value(g);
                *seen.entry(name).or_insert_with(|| {
                    distinct.push(name);
                    (distinct.len() - 1) as i32
                })
            })
            .collect();
        if distinct.len() == genes.len() {
            return Ok(Self {
                values: Arc::new(genes.clone()),
                keys: None,
            });
        }
        Ok(Self {
            values: Arc::new(StringArray::from_iter_values(distinct)),
            keys: Some(keys),
        })
    }

    /// The dictionary column of gene positions `indices`.
    fn column(&self, indices: Vec<u32>) -> Result<ArrayRef> {
        let keys: Int32Array = match &self.keys {
            Some(map) => indices.iter().map(|&g| map[g as usize]).collect(),
            // Positions fit i32 (checked in `new`): the same bits, no copy.
            None => {
                let len = indices.len();
                let buffer = datafusion::arrow::buffer::Buffer::from_vec(indices);
                Int32Array::new(
                    datafusion::arrow::buffer::ScalarBuffer::new(buffer, 0, len),
                    None,
                )
            }
        };
        Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
            keys,
            Arc::clone(&self.values),
        )?))
    }
}

/// The input after loading and ranking: shared by all partitions of a query.
#[derive(Debug)]
struct Prepared {
    genes: StringArray,
    /// The gene columns' dictionary, when they are dictionaries.
    dictionary: Option<GeneDictionary>,
    /// The kernel, resolved for the loaded shape.
    kernel: KernelKind,
    matrix: RankedMatrix,
    /// Bit-planes, for the bitset kernel only.
    planes: Option<Arc<BitPlanes>>,
    /// The pairs to compute, split into partitions.
    work: WorkSplit,
    /// The pushed-down gene filter over gene positions.
    gene_filter: Option<ResolvedGenes>,
    /// p-value tables, when the query reads `p_value` or `q_value`.
    pvalues: Option<PValues>,
    /// Every pair's q-value, when the query reads `q_value`.
    qvalues: Option<QValues>,
    /// Where the partitions merge their top partners (top-partners mode).
    top: Option<TopCollector>,
    /// Memory pool reservations of the ranks, of the planes and of the
    /// q-values, released with them.
    _reserved: [Reservation; 3],
}

/// The execution plan node of `kendall_all_pairs`.
#[derive(Debug)]
pub struct KendallExec {
    spec: Arc<InputSpec>,
    /// The source's scan: read once per query, by the load.
    input: Arc<dyn ExecutionPlan>,
    /// `kendall_cross_pairs`: the right source and its scan (its genes
    /// pair with every gene of `input`, and with no other).
    right: Option<(Arc<InputSpec>, Arc<dyn ExecutionPlan>)>,
    config: ScanConfig,
    projection: Vec<usize>,
    /// On a cluster, the only child: partition `p` of this in-memory scan
    /// holds the number of the tile range this plan's partition `p` computes
    /// (see [`partition_slices`]).
    slices: Option<Arc<dyn ExecutionPlan>>,
    /// Loaded by the first partition, shared by all, released by the last
    /// (see [`SharedLoad`]).
    prepared: Arc<SharedLoad<Prepared>>,
    /// Pairs the scan computes, once known.
    total_pairs: Arc<std::sync::OnceLock<u64>>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl KendallExec {
    /// A plan over the source scanned by `input` (whose columns `spec`
    /// describes) producing the columns `projection` of the output schema
    /// (indices; may be empty, e.g. for `count(*)`).
    pub fn try_new(
        spec: Arc<InputSpec>,
        input: Arc<dyn ExecutionPlan>,
        mut config: ScanConfig,
        projection: Vec<usize>,
    ) -> Result<Self> {
        // On a cluster every partition is a task of its own, in its own
        // copy of the plan: state merged across partitions (the top-partners
        // collector) would never be whole, and each task would repeat the
        // q-values' counting pass over all pairs. One partition does it once.
        if config.cluster && (config.top_k.is_some() || reads_q_value(&config, &projection)) {
            config.partitions = 1;
        }
        let full = match config.top_k {
            Some(_) => top_partners_schema(),
            None => output_schema_for(config.gene_ids),
        };
        let schema = Arc::new(full.project(&projection)?);
        let slices = match config.cluster {
            true => Some(partition_slices(0..config.partitions)?),
            false => None,
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(config.partitions),
            match config.top_k {
                Some(_) => EmissionType::Final,
                None => EmissionType::Incremental,
            },
            Boundedness::Bounded,
        )
        .with_scheduling_type(SchedulingType::Cooperative);
        let metrics = ExecutionPlanMetricsSet::new();
        let prepared = SharedLoad::new(
            config.partitions,
            MetricBuilder::new(&metrics).global_counter("input_loads"),
            MetricBuilder::new(&metrics).global_counter("input_loads_stopped"),
        );
        let total_pairs = Arc::new(std::sync::OnceLock::new());
        live_scans().push(LiveScan {
            total: Arc::downgrade(&total_pairs),
            metrics: metrics.clone(),
            what: spec.what.clone(),
        });
        Ok(Self {
            spec,
            input,
            right: None,
            config,
            projection,
            slices,
            prepared: Arc::new(prepared),
            total_pairs,
            metrics,
            properties: Arc::new(properties),
        })
    }

    /// The plan of `kendall_cross_pairs`: every gene of this plan's source
    /// with every gene of `right` (whose columns `spec` describes), on the
    /// samples both have (matched by name).
    pub fn with_right(mut self, spec: Arc<InputSpec>, right: Arc<dyn ExecutionPlan>) -> Self {
        self.right = Some((spec, right));
        self
    }

    /// This plan on a cluster task's share of the tile ranges: `slices`
    /// (see [`partition_slices`]), restricted by Ballista to the task's
    /// partitions, replaces the child, and the plan's partitions are its.
    pub fn with_slices(mut self, slices: Arc<dyn ExecutionPlan>) -> Self {
        let count = slices.properties().output_partitioning().partition_count();
        let mut properties = (*self.properties).clone();
        properties.partitioning = Partitioning::UnknownPartitioning(count);
        self.properties = Arc::new(properties);
        self.slices = Some(slices);
        self
    }

    /// The scan settings.
    pub fn config(&self) -> &ScanConfig {
        &self.config
    }

    /// The source's columns and layout.
    pub fn spec(&self) -> &Arc<InputSpec> {
        &self.spec
    }

    /// `kendall_cross_pairs`: the right source's columns and layout.
    pub fn right_spec(&self) -> Option<&Arc<InputSpec>> {
        self.right.as_ref().map(|(spec, _)| spec)
    }

    /// The columns of the output schema this plan produces (indices).
    pub fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// The scans of the source (and of the right source of
    /// `kendall_cross_pairs`): the children, except on a cluster.
    pub fn inputs(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        let mut inputs = vec![&self.input];
        inputs.extend(self.right.as_ref().map(|(_, plan)| plan));
        inputs
    }

    /// How far this scan has come: pairs computed so far over all
    /// partitions, and the pairs it will compute once the input is loaded
    /// (`None` before). Cheap; safe to call while the query runs.
    pub fn progress(&self) -> Progress {
        let done = self
            .metrics
            .clone_inner()
            .sum_by_name("pairs_computed")
            .map_or(0, |m| m.as_usize() as u64);
        let total = self.total_pairs.get().copied();
        Progress { done, total }
    }

    /// Whether the query reads `q_value` (projected or filtered on).
    fn wants_q_value(&self) -> bool {
        reads_q_value(&self.config, &self.projection)
    }

    /// Whether the query reads `p_value` (projected or filtered on), or
    /// `q_value` (adjusted p-values).
    fn wants_p_value(&self) -> bool {
        if self.wants_q_value() {
            return true;
        }
        let column = match self.config.top_k {
            Some(_) => top_partners::P_VALUE_COLUMN,
            None => P_VALUE_COLUMN,
        };
        self.projection.contains(&column)
            || self
                .config
                .predicate
                .as_ref()
                .is_some_and(|p| p.reads_p_value())
    }
}

/// An in-memory scan with one partition per tile range of `ranges`, holding
/// one row: the range's number. On a cluster it is a `KendallExec`'s only
/// child: Ballista restricts a task's plan to the task's partitions by
/// cutting the partitions of such leaves (it cannot cut ours), so what is
/// left of it tells each task which ranges it computes. Without it, a task
/// for partition 5 would run the plan's partition 0.
pub fn partition_slices(ranges: std::ops::Range<usize>) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;
    let schema = Arc::new(Schema::new(vec![Field::new(
        "kendall_range",
        DataType::UInt32,
        false,
    )]));
    let partitions = ranges
        .map(|r| {
            let range = u32::try_from(r).map_err(|_| {
                DataFusionError::Plan(format!("{r} partitions: too many for one scan"))
            })?;
            let column: ArrayRef = Arc::new(UInt32Array::from(vec![range]));
            Ok(vec![RecordBatch::try_new(
                Arc::clone(&schema),
                vec![column],
            )?])
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(MemorySourceConfig::try_new_exec(&partitions, schema, None)?)
}

/// The tile range that partition `partition` of a cluster plan computes:
/// the number in that partition of its `slices` child.
async fn slice_of(
    slices: &Arc<dyn ExecutionPlan>,
    partition: usize,
    context: Arc<TaskContext>,
) -> Result<usize> {
    let batches: Vec<RecordBatch> = slices.execute(partition, context)?.try_collect().await?;
    batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<UInt32Array>()
                .map(|a| a.value(0))
        })
        .map(|r| r as usize)
        .ok_or_else(|| {
            DataFusionError::Internal(format!(
                "KendallExec: partition {partition} of its task has no tile range"
            ))
        })
}

/// Whether a scan of `config` producing the columns `projection` reads
/// `q_value` (projected or filtered on).
fn reads_q_value(config: &ScanConfig, projection: &[usize]) -> bool {
    config.top_k.is_none()
        && (projection.contains(&Q_VALUE_COLUMN)
            || config.predicate.as_ref().is_some_and(|p| p.reads_q_value()))
}

/// Progress of the pair computation of a query (see [`KendallExec::progress`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Pairs computed so far.
    pub done: u64,
    /// Pairs to compute; `None` while the input is still being loaded.
    pub total: Option<u64>,
}

/// The summed progress of every `kendall_all_pairs` scan in a physical plan,
/// or `None` when the plan has none (e.g. `SELECT 1`). A progress display
/// polls this while the plan runs; a scan whose input is still loading makes
/// the total `None`.
pub fn plan_progress(plan: &Arc<dyn ExecutionPlan>) -> Option<Progress> {
    let mut found: Option<Progress> = None;
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        if let Some(exec) = node.downcast_ref::<KendallExec>() {
            let p = exec.progress();
            found = Some(match found {
                None => p,
                Some(f) => Progress {
                    done: f.done + p.done,
                    total: f.total.zip(p.total).map(|(a, b)| a + b),
                },
            });
        }
        stack.extend(node.children());
    }
    found
}

/// A scan plan of this process not yet dropped (or with a stream still
/// running): its total (weakly, held by the plan and its streams, so that a
/// scan gone is pruned), its metrics (where the pairs computed are counted)
/// and how messages name its source ([`InputSpec::what`]).
struct LiveScan {
    total: std::sync::Weak<std::sync::OnceLock<u64>>,
    metrics: ExecutionPlanMetricsSet,
    what: String,
}

impl LiveScan {
    fn progress(&self) -> Progress {
        Progress {
            done: self
                .metrics
                .clone_inner()
                .sum_by_name("pairs_computed")
                .map_or(0, |m| m.as_usize() as u64),
            total: self.total.upgrade().and_then(|t| t.get().copied()),
        }
    }
}

/// The registry behind [`live_progress`], pruned of dropped plans.
fn live_scans() -> std::sync::MutexGuard<'static, Vec<LiveScan>> {
    static LIVE: std::sync::Mutex<Vec<LiveScan>> = std::sync::Mutex::new(Vec::new());
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.retain(|scan| scan.total.strong_count() > 0);
    live
}

/// Summed progress of `scans`, or `None` when there is none.
fn sum_progress<'a>(scans: impl Iterator<Item = &'a LiveScan>) -> Option<Progress> {
    scans.map(LiveScan::progress).reduce(|f, p| Progress {
        done: f.done + p.done,
        total: f.total.zip(p.total).map(|(a, b)| a + b),
    })
}

/// The summed progress of every Kendall scan plan of this process that has
/// not been dropped (or still has a stream running), or `None` when there is
/// none: for a host that cannot
/// walk the plan it runs ([`plan_progress`] needs the plan), such as the
/// Python package, whose plans are foreign objects. Several queries running
/// at once are summed together: a progress display of one query among
/// others should use [`live_progress_of`] instead.
pub fn live_progress() -> Option<Progress> {
    sum_progress(live_scans().iter())
}

/// As [`live_progress`], over only the scans whose source is `source`
/// exactly as the query named it (a registered table or view, or a
/// location; for `kendall_cross_pairs`, the left source), or `None` when
/// there is none. Queries running at once on other sources are not counted:
/// the Python package's `corr()` registers its input under a name of its
/// own for each call, so that its progress bar counts its own pairs only.
pub fn live_progress_of(source: &str) -> Option<Progress> {
    let names = [
        format!("table '{source}'"),
        format!("'{source}'"),
        format!("10x directory '{source}'"),
    ];
    sum_progress(live_scans().iter().filter(|s| names.contains(&s.what)))
}

/// Reads, validates and ranks the input; splits the tiles into partitions.
/// Values, ranks and planes are reserved in `memory` before they are built.
/// Stops between stages (and between the batches it reads) when the query
/// no longer wants it ([`checkpoint`]).
fn prepare(
    spec: &InputSpec,
    batches: InputBatches,
    right: Option<(&InputSpec, InputBatches)>,
    config: &ScanConfig,
    (wants_p, wants_q): (bool, bool),
    memory: &QueryMemory,
) -> Result<Prepared> {
    let loaded = input::load(spec, batches, memory)?;
    checkpoint()?;
    // kendall_cross_pairs: the right genes below the left ones, on the
    // samples both have.
    let (loaded, cross) = match right {
        Some((right_spec, right_batches)) => {
            let right = input::load(right_spec, right_batches, memory)?;
            checkpoint()?;
            let left_genes = loaded.genes.len();
            let stacked = crate::cross::stack(loaded, spec, right, right_spec, memory)?;
            let right_genes = stacked.genes.len() - left_genes;
            (stacked, Some((left_genes, right_genes)))
        }
        None => (loaded, None),
    };
    let gene_ids = loaded.genes.clone();
    let genes = gene_ids.len();
    // q-values take a pass over every pair, gene filters or not: the
    // kernel is chosen for all of them.
    let mut kernel_plan = config.kernel.clone();
    if wants_q {
        kernel_plan.anchors = None;
    }
    let kernel = kernel_plan.resolve(genes, loaded.samples)?;
    let shape = format!("{genes} genes x {} samples", loaded.samples);
    let mut ranks_memory = memory.reserve(&format!("ranks and sample orders ({shape})"), 0)?;
    let matrix = RankedMatrix::try_build(
        genes,
        loaded.samples,
        &loaded.values,
        &loaded.residuals,
        &mut ranks_memory,
    )?;
    // The values (and their reservation) are no longer needed once ranked.
    drop(loaded);
    checkpoint()?;
    // `auto` switches to the zero-inflated kernel where the data is.
    let kernel = if config.kernel.choice == KernelChoice::Auto {
        crate::kernel::zero::prefer(kernel, &matrix)
    } else {
        kernel
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
    let anchors = config.gene_predicate.as_ref().and_then(|p| p.anchors());
    let work = match (cross, anchors) {
        (Some((left, right)), _) => WorkSplit::cross(left, right, config.partitions),
        (None, Some((anchor_i, anchor_j))) => WorkSplit::anchors(
            genes,
            &positions(&anchor_i),
            &positions(&anchor_j),
            config.partitions,
        ),
        (None, None) => WorkSplit::tiles(genes, config.tile_size, config.partitions),
    };
    let gene_filter = config.gene_predicate.as_ref().map(|p| p.resolve(&gene_ids));
    let pvalues = wants_p.then(|| PValues::new(config.pvalue, matrix.samples()));
    let mut q_memory = memory.reserve("q-values", 0)?;
    let qvalues = match (&pvalues, wants_q) {
        (Some(pvalues), true) => {
            let (contexts, counts) = CountingPass {
                matrix: &matrix,
                kernel,
                isa: config.kernel.isa,
                planes: planes.clone(),
                min_periods: config.min_periods,
                tile_size: config.tile_size,
                cross,
                stop: crate::load::stop_flag(),
            }
            .run(&mut q_memory)?;
            checkpoint()?;
            let q = QValues::try_new(contexts, counts, pvalues, config.fdr, &mut q_memory)?;
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
        _reserved: [ranks_memory, planes_memory, q_memory],
    })
}

impl DisplayAs for KendallExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let c = &self.config;
        let sep = match t {
            DisplayFormatType::TreeRender => "\n",
            _ => ", ",
        };
        let eq = "=";
        if !matches!(t, DisplayFormatType::TreeRender) {
            write!(f, "KendallExec: ")?;
        }
        let known = |x: Option<usize>| x.map_or("?".to_string(), |x| x.to_string());
        // kendall_cross_pairs: both sources, their genes; the shared
        // samples are known once both are read.
        let (what, genes, samples) = match &self.right {
            Some((right, _)) => (
                format!("{} x {}", self.spec.what, right.what),
                format!("{} x {}", known(self.spec.genes), known(right.genes)),
                "?".to_string(),
            ),
            None => (
                self.spec.what.clone(),
                known(self.spec.genes),
                known(self.spec.samples),
            ),
        };
        write!(
            f,
            "source{eq}{what}{sep}genes{eq}{genes}{sep}samples{eq}{samples}{sep}partitions{eq}{}{sep}tile_size{eq}{}",
            c.partitions, c.tile_size,
        )?;
        match c.planned_kernel {
            Some(kernel) => {
                write!(f, "{sep}kernel{eq}{kernel}")?;
                if c.kernel.choice == KernelChoice::Auto
                    && crate::kernel::zero::may_prefer(kernel, self.spec.samples.unwrap_or(0))
                {
                    write!(f, " (zero if zero-inflated)")?;
                }
                if matches!(kernel, KernelKind::Vse | KernelKind::Bitset) {
                    write!(f, "{sep}simd{eq}{}", c.kernel.isa)?;
                }
            }
            // Chosen for the shape of the data once it is read.
            None => write!(f, "{sep}kernel{eq}{} (when loaded)", c.kernel.choice)?,
        }
        write!(f, "{sep}variant{eq}{}", c.variant)?;
        if let Some(k) = c.top_k {
            write!(f, "{sep}top_k{eq}{k}")?;
        }
        if c.min_periods != 1 {
            write!(f, "{sep}min_periods{eq}{}", c.min_periods)?;
        }
        if let Some(p) = &c.predicate {
            write!(f, "{sep}filter{eq}{p}")?;
        }
        if self.wants_q_value() {
            write!(f, "{sep}q_value{eq}{} over all pairs", c.fdr)?;
        }
        if let Some(p) = &c.gene_predicate {
            write!(f, "{sep}gene_filter{eq}{p}")?;
            // Cross pairs walk their rectangle, gene filter or not.
            if p.anchors().is_some() && self.right.is_none() {
                write!(f, "{sep}pairs{eq}touching")?;
            }
        }
        if let Some(l) = c.limit {
            write!(f, "{sep}limit{eq}{l}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for KendallExec {
    fn name(&self) -> &str {
        "KendallExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        // On a cluster the input scans are not children: Ballista packs a
        // stage whose single-child chain reaches a one-partition node (our
        // input, one file) into a single task, which would put every tile
        // range on one executor. Each task reads the input itself anyway;
        // the codec carries the scans inside the node's bytes. The child is
        // the partition slices instead (see [`partition_slices`]).
        match &self.slices {
            Some(slices) => vec![slices],
            None => self.inputs(),
        }
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        // The input is read once, partition after partition: splitting it
        // further gains nothing (and must not reorder the genes).
        vec![false; self.children().len()]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false; self.children().len()]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.slices.is_some() {
            let [slices] = <[_; 1]>::try_from(children).map_err(|c| {
                DataFusionError::Internal(format!(
                    "KendallExec on a cluster takes 1 child (its partition slices), got {}",
                    c.len()
                ))
            })?;
            let exec = KendallExec::try_new(
                Arc::clone(&self.spec),
                Arc::clone(&self.input),
                self.config.clone(),
                self.projection.clone(),
            )?;
            let exec = match &self.right {
                Some((spec, plan)) => exec.with_right(Arc::clone(spec), Arc::clone(plan)),
                None => exec,
            };
            return Ok(Arc::new(exec.with_slices(slices)));
        }
        let wanted = self.children().len();
        if children.len() != wanted {
            return Err(DataFusionError::Internal(format!(
                "KendallExec takes {wanted} children (its inputs), got {}",
                children.len()
            )));
        }
        let right = (wanted == 2).then(|| children.pop()).flatten();
        let input = children.pop().expect("checked above");
        let exec = KendallExec::try_new(
            Arc::clone(&self.spec),
            input,
            self.config.clone(),
            self.projection.clone(),
        )?;
        Ok(Arc::new(match (right, &self.right) {
            (Some(plan), Some((spec, _))) => exec.with_right(Arc::clone(spec), plan),
            _ => exec,
        }))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let partitions = self.properties.output_partitioning().partition_count();
        if partition >= partitions {
            return Err(DataFusionError::Internal(format!(
                "KendallExec has {partitions} partitions, asked for partition {partition}"
            )));
        }
        let slices = self.slices.clone();
        let schema = self.schema();
        let load = Arc::clone(&self.prepared);
        // Counted from now until the input is there: a stream dropped
        // before (even unpolled) lets a load nobody wants stop.
        let interest = load.interest();
        let spec = Arc::clone(&self.spec);
        let config = self.config.clone();
        let projection = self.projection.clone();
        let wants = (self.wants_p_value(), self.wants_q_value());
        let memory = QueryMemory::new(Arc::clone(context.memory_pool()), &self.spec.what);
        let input = Arc::clone(&self.input);
        let right = self.right.clone();
        let total_pairs = Arc::clone(&self.total_pairs);
        let metrics = StreamMetrics::new(&self.metrics, partition);
        let stream_schema = Arc::clone(&schema);
        let start = async move {
            // The tile range: the partition, or on a cluster what the
            // task's slice of the partitions says.
            let partition = match &slices {
                Some(slices) => slice_of(slices, partition, Arc::clone(&context)).await?,
                None => partition,
            };
            let prepared = load
                .get(&interest, || {
                    let (spec, config) = (Arc::clone(&spec), config.clone());
                    let (memory, total_pairs) = (memory.clone(), Arc::clone(&total_pairs));
                    let (input, context) = (Arc::clone(&input), Arc::clone(&context));
                    let right = right.clone();
                    move || {
                        // A fresh copy of the scan each load: file scans keep
                        // per-execution state (a shared queue of files).
                        let input = reset_plan_states(input)?;
                        let batches = InputBatches::new(input, Arc::clone(&context), &spec.what)?;
                        let right = match &right {
                            Some((right_spec, plan)) => {
                                let plan = reset_plan_states(Arc::clone(plan))?;
                                let batches = InputBatches::new(plan, context, &right_spec.what)?;
                                Some((right_spec.as_ref(), batches))
                            }
                            None => None,
                        };
                        let prepared = prepare(&spec, batches, right, &config, wants, &memory)?;
                        let _ = total_pairs.set(prepared.work.total_pairs());
                        Ok(prepared)
                    }
                })
                .await?;
            drop(interest);
            // Partitions that waited for the load are woken by the one that
            // did it, onto its worker's LIFO slot, where no other worker can
            // steal them: yield once so they spread over the runtime.
            tokio::task::yield_now().await;
            PairStream::try_new(
                prepared,
                partition,
                &config,
                projection,
                stream_schema,
                metrics,
            )
        };
        // The scan stays in the live registry (its progress readable by
        // source) while a stream of it runs, even once the plan is dropped:
        // hosts such as datafusion-python's `execute_stream` keep only the
        // streams.
        let alive = Arc::clone(&self.total_pairs);
        let stream =
            futures::StreamExt::inspect(futures::stream::once(start).try_flatten(), move |_| {
                let _ = &alive;
            });
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            schema, stream,
        ))))
    }
}

/// Per-partition metrics shown by `EXPLAIN ANALYZE`.
#[derive(Debug)]
struct StreamMetrics {
    baseline: BaselineMetrics,
    pairs: Count,
    kernel_time: Time,
}

impl StreamMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            baseline: BaselineMetrics::new(set, partition),
            pairs: MetricBuilder::new(set).counter("pairs_computed", partition),
            kernel_time: MetricBuilder::new(set).subset_time("kernel_time", partition),
        }
    }
}

/// The batch stream of one partition.
struct PairStream {
    prepared: Arc<Prepared>,
    cursor: PairCursor,
    /// The partition's blocks are all computed.
    exhausted: bool,
    kernel: PairKernel,
    variant: Variant,
    min_periods: usize,
    predicate: Option<Arc<TauPredicate>>,
    /// The predicate compares `p_value` (else it is decided on tau alone).
    filter_reads_p: bool,
    /// The predicate compares `q_value`.
    filter_reads_q: bool,
    /// The last pair context whose q-values were looked up.
    q_last: LastContext,
    batch_size: usize,
    remaining: Option<usize>,
    projection: Vec<usize>,
    schema: SchemaRef,
    /// Numerators of the last block, not yet turned into rows.
    pending: Vec<PairNumerator>,
    pending_pos: usize,
    out_i: Vec<u32>,
    out_j: Vec<u32>,
    out_tau: Vec<f64>,
    out_p: Vec<f64>,
    out_q: Vec<f64>,
    /// Whether each row's tau (and p-value) is non-null.
    out_valid: Vec<bool>,
    /// Samples each row's pair shares, when the query reads `n`.
    out_n: Vec<i64>,
    wants_n: bool,
    /// The query reads the `p_value` column (filters aside).
    keep_p: bool,
    /// The query reads the `q_value` column (filters aside).
    keep_q: bool,
    /// Block sizes and clock reads, by measured cost.
    pacer: Pacer,
    metrics: StreamMetrics,
    /// Top-partners mode: this partition's per-gene state, until its pairs
    /// are all computed.
    top: Option<TopPartners>,
    /// Top-partners mode: the merged rows, when this partition finished last.
    top_rows: Option<TopRows>,
}

impl PairStream {
    fn try_new(
        prepared: Arc<Prepared>,
        partition: usize,
        config: &ScanConfig,
        projection: Vec<usize>,
        schema: SchemaRef,
        metrics: StreamMetrics,
    ) -> Result<Self> {
        let samples = prepared.matrix.samples();
        let wants_n = match config.top_k {
            Some(_) => projection.contains(&top_partners::N_COLUMN),
            None => projection.contains(&N_COLUMN),
        };
        let top = config
            .top_k
            .map(|k| TopPartners::new(prepared.genes.len(), k));
        let (keep_p, keep_q) = match config.top_k {
            Some(_) => (false, false),
            None => (
                projection.contains(&P_VALUE_COLUMN),
                projection.contains(&Q_VALUE_COLUMN),
            ),
        };
        Ok(Self {
            wants_n,
            keep_p,
            keep_q,
            kernel: PairKernel::new(
                prepared.kernel,
                samples,
                config.kernel.isa,
                prepared.planes.clone(),
            )?,
            cursor: prepared.work.cursor(partition),
            prepared,
            exhausted: false,
            variant: config.variant,
            min_periods: config.min_periods,
            predicate: config.predicate.clone(),
            filter_reads_p: config.predicate.as_ref().is_some_and(|p| p.reads_p_value()),
            filter_reads_q: config.predicate.as_ref().is_some_and(|p| p.reads_q_value()),
            q_last: None,
            batch_size: config.batch_size,
            remaining: config.limit,
            projection,
            schema,
            pending: Vec::new(),
            pending_pos: 0,
            out_i: Vec::new(),
            out_j: Vec::new(),
            out_tau: Vec::new(),
            out_p: Vec::new(),
            out_q: Vec::new(),
            out_valid: Vec::new(),
            out_n: Vec::new(),
            pacer: Pacer::new(),
            metrics,
            top,
            top_rows: None,
        })
    }

    /// Rows this batch may still take.
    fn capacity(&self) -> usize {
        self.batch_size.min(self.remaining.unwrap_or(usize::MAX))
    }

    fn finished(&self) -> bool {
        self.remaining == Some(0) || (self.exhausted && self.pending_pos >= self.pending.len())
    }

    /// The next `run` pending pairs of a matrix without gaps into rows (or,
    /// for top partners, offered to the genes' bounded state), for a query
    /// that reads no p-value and has no gene filter: the same rows as
    /// [`PairStream::fill`]'s general loop, without its per-pair checks. At
    /// most `run` rows are added.
    fn fill_plain(&mut self, m: &RankedMatrix, run: usize) {
        let prepared = Arc::clone(&self.prepared);
        let pairs = &self.pending[self.pending_pos..self.pending_pos + run];
        self.pending_pos += run;
        let n = m.samples();
        // Every pair shares all n samples: valid for all or for none.
        let valid = n >= self.min_periods;
        let variant = self.variant;
        // A function, not a closure: LLVM left the closure out of line (a
        // call per pair) once several loops called it.
        #[inline(always)]
        fn pair_tau(
            m: &RankedMatrix,
            variant: Variant,
            n: usize,
            valid: bool,
            p: &PairNumerator,
        ) -> f64 {
            if valid {
                tau(variant, p.s, n, m.ties(p.i as usize), m.ties(p.j as usize))
            } else {
                f64::NAN
            }
        }
        if let Some(top) = &mut self.top {
            if valid {
                for p in pairs {
                    let t = pair_tau(m, variant, n, valid, p);
                    if !t.is_nan() {
                        top.offer(p.i, p.j, t, p.s);
                    }
                }
            }
            return;
        }
        let q_last = &mut self.q_last;
        let mut q_of = |p: &PairNumerator| match &prepared.qvalues {
            Some(q) if valid => {
                let stats = m.pair_stats(p.i as usize, p.j as usize);
                q.q_value(q_last, (p.i as usize, p.j as usize), &stats, p.s)
            }
            _ => f64::NAN,
        };
        let before = self.out_tau.len();
        match &self.predicate {
            None if !self.keep_q => {
                self.out_i.extend(pairs.iter().map(|p| p.i));
                self.out_j.extend(pairs.iter().map(|p| p.j));
                self.out_tau
                    .extend(pairs.iter().map(|p| pair_tau(m, variant, n, valid, p)));
            }
            None => {
                for p in pairs {
                    self.out_i.push(p.i);
                    self.out_j.push(p.j);
                    self.out_tau.push(pair_tau(m, variant, n, valid, p));
                    self.out_q.push(q_of(p));
                }
            }
            // A NULL tau passes no comparison.
            Some(_) if !valid => {}
            // A filter on tau alone, nothing else to keep: the hot loop of a
            // thresholded network (most pairs fail), kept free of q.
            Some(pred) if !self.filter_reads_q && !self.keep_q => {
                for p in pairs {
                    let t = pair_tau(m, variant, n, valid, p);
                    if pred.eval(&PairValues::tau(t)) {
                        self.out_i.push(p.i);
                        self.out_j.push(p.j);
                        self.out_tau.push(t);
                    }
                }
            }
            Some(pred) => {
                for p in pairs {
                    let t = pair_tau(m, variant, n, valid, p);
                    let mut values = PairValues::tau(t);
                    let mut q = None;
                    if self.filter_reads_q {
                        values.q_value = *q.insert(q_of(p));
                    }
                    if pred.eval(&values) {
                        self.out_i.push(p.i);
                        self.out_j.push(p.j);
                        self.out_tau.push(t);
                        if self.keep_q {
                            self.out_q.push(q.unwrap_or_else(|| q_of(p)));
                        }
                    }
                }
            }
        }
        let added = self.out_tau.len() - before;
        self.out_valid.resize(self.out_valid.len() + added, valid);
        if self.wants_n {
            self.out_n.resize(self.out_n.len() + added, n as i64);
        }
    }

    /// Whether [`PairStream::fill`] must stop before the next pair: the
    /// batch holds `capacity` rows, or `built` pairs (since the clock was
    /// last read, at most `spacing` before the next read) took the poll
    /// past `deadline`. Reading the clock resets `built` and `spacing`.
    #[inline(always)]
    fn must_pause(
        &mut self,
        capacity: usize,
        deadline: Instant,
        built: &mut usize,
        spacing: &mut usize,
    ) -> bool {
        if self.out_tau.len() >= capacity {
            return true;
        }
        if *built >= *spacing {
            if self.pacer.rows_done(*built, deadline) {
                return true;
            }
            (*built, *spacing) = (0, self.pacer.rows_per_check());
        }
        false
    }

    /// Computes pairs until the batch is full, the partition is done, or the
    /// poll budget (ending at `deadline`, set at `now`) is spent.
    fn fill(&mut self, now: Instant, deadline: Instant) {
        let kernel_time = self.metrics.kernel_time.clone();
        let _timer = kernel_time.timer();
        let capacity = self.capacity();
        let prepared = Arc::clone(&self.prepared);
        let m = &prepared.matrix;
        self.pacer.resume(now);
        let computed = || prepared.pvalues.as_ref().map_or(0, PValues::computed);
        let mut distributions = computed();
        // Rows built since the clock was last read, and how many may be
        // before the next read (locals: this loop runs once per pair).
        let (mut built, mut spacing) = (0usize, self.pacer.rows_per_check());
        // The common case — every gene complete, no gene filter, no
        // p-value read — takes a tight loop per run of pairs (`fill_plain`):
        // at tens of nanoseconds a pair, the general loop's checks cost as
        // much as the kernel.
        let plain =
            prepared.gene_filter.is_none() && !self.keep_p && !self.filter_reads_p && !m.any_gaps();
        loop {
            if plain {
                while self.pending_pos < self.pending.len() {
                    if self.must_pause(capacity, deadline, &mut built, &mut spacing) {
                        return;
                    }
                    // Pairs looked at, not rows kept, as below.
                    let run = (self.pending.len() - self.pending_pos)
                        .min(spacing - built)
                        .min(capacity - self.out_tau.len());
                    self.fill_plain(m, run);
                    built += run;
                }
            }
            while self.pending_pos < self.pending.len() {
                if self.must_pause(capacity, deadline, &mut built, &mut spacing) {
                    return;
                }
                built += 1;
                let p = self.pending[self.pending_pos];
                self.pending_pos += 1;
                if prepared
                    .gene_filter
                    .as_ref()
                    .is_some_and(|g| !g.eval(p.i, p.j))
                {
                    continue;
                }
                let stats = m.pair_stats(p.i as usize, p.j as usize);
                // Too few shared samples: tau and p-value are NULL, and so is
                // every pushed-down comparison of them (the row never passes).
                let valid = stats.n >= self.min_periods;
                let t = if valid {
                    tau(self.variant, p.s, stats.n, stats.u, stats.v)
                } else {
                    f64::NAN
                };
                // Top-partners mode: a pair with a tau is offered to both
                // genes' bounded state, and never becomes a row here.
                if let Some(top) = &mut self.top {
                    if valid && !t.is_nan() {
                        top.offer(p.i, p.j, t, p.s);
                    }
                    continue;
                }
                let p_value = || match &prepared.pvalues {
                    Some(pv) if valid => pv.p_value(
                        stats.n,
                        p.s,
                        (stats.u, stats.u_variance),
                        (stats.v, stats.v_variance),
                    ),
                    _ => f64::NAN,
                };
                let q_value = |last: &mut LastContext| match &prepared.qvalues {
                    Some(q) if valid => q.q_value(last, (p.i as usize, p.j as usize), &stats, p.s),
                    _ => f64::NAN,
                };
                // A filter on tau alone is decided before any p-value is
                // computed; p-values are then computed for kept rows only.
                let (mut pv, mut qv) = (None, None);
                let pass = match &self.predicate {
                    None => true,
                    Some(_) if !valid => false,
                    Some(pred) => {
                        let mut values = PairValues::tau(t);
                        if self.filter_reads_p {
                            values.p_value = *pv.insert(p_value());
                        }
                        if self.filter_reads_q {
                            values.q_value = *qv.insert(q_value(&mut self.q_last));
                        }
                        pred.eval(&values)
                    }
                };
                if pass {
                    self.out_i.push(p.i);
                    self.out_j.push(p.j);
                    self.out_tau.push(t);
                    self.out_valid.push(valid);
                    // p-values, q-values and n are kept only when the query reads them.
                    if self.keep_p {
                        self.out_p.push(*pv.get_or_insert_with(p_value));
                    }
                    if self.keep_q {
                        let q = match qv {
                            Some(q) => q,
                            None => q_value(&mut self.q_last),
                        };
                        self.out_q.push(q);
                    }
                    if self.wants_n {
                        self.out_n.push(stats.n as i64);
                    }
                }
                // A p-value that needed a distribution of its own costs up
                // to O(n³): not a row to count on the measured spacing.
                if prepared.pvalues.is_some() && computed() != distributions {
                    distributions = computed();
                    spacing = 0;
                }
            }
            if self.out_tau.len() >= capacity || self.exhausted {
                return;
            }
            let start = Instant::now();
            if start >= deadline {
                return;
            }
            self.pending.clear();
            self.pending_pos = 0;
            match self
                .cursor
                .next_block(&prepared.work, m, self.pacer.block_pairs())
            {
                Some((rows, cols)) => {
                    let rows = &self.cursor.rows()[rows];
                    self.kernel.block(m, rows, cols, &mut self.pending);
                    self.pacer
                        .block_done(self.pending.len(), start, Instant::now());
                    built = 0;
                    self.metrics.pairs.add(self.pending.len());
                }
                None => self.exhausted = true,
            }
        }
    }

    /// Turns the collected rows into a batch of the projected columns.
    fn emit(&mut self) -> Result<RecordBatch> {
        let rows = self.out_tau.len();
        let genes = &self.prepared.genes;
        let nulls = if self.out_valid.iter().all(|&v| v) {
            None
        } else {
            Some(NullBuffer::from(self.out_valid.as_slice()))
        };
        let float = |values: &mut Vec<f64>| -> ArrayRef {
            Arc::new(Float64Array::new(
                std::mem::take(values).into(),
                nulls.clone(),
            ))
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.projection.len());
        let dictionary = self.prepared.dictionary.as_ref();
        let gene = |indices: &mut Vec<u32>| -> Result<ArrayRef> {
            let indices = std::mem::take(indices);
            match dictionary {
                Some(d) => d.column(indices),
                None => Ok(take(genes, &UInt32Array::from(indices), None)?),
            }
        };
        for &c in &self.projection {
            columns.push(match c {
                0 => gene(&mut self.out_i)?,
                1 => gene(&mut self.out_j)?,
                P_VALUE_COLUMN => float(&mut self.out_p),
                Q_VALUE_COLUMN => float(&mut self.out_q),
                N_COLUMN => Arc::new(Int64Array::from(std::mem::take(&mut self.out_n))),
                _ => float(&mut self.out_tau),
            });
        }
        self.out_i.clear();
        self.out_j.clear();
        self.out_tau.clear();
        self.out_p.clear();
        self.out_q.clear();
        self.out_valid.clear();
        self.out_n.clear();
        if let Some(r) = &mut self.remaining {
            *r -= rows;
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &options,
        )?)
    }
}

impl Stream for PairStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.top.is_some() || this.top_rows.is_some() {
            return this.poll_top(cx);
        }
        if this.finished() && this.out_tau.is_empty() {
            return Poll::Ready(None);
        }
        let compute = this.metrics.baseline.elapsed_compute().clone();
        let timer = compute.timer();
        let now = Instant::now();
        this.fill(now, now + POLL_BUDGET);
        let full = this.out_tau.len() >= this.capacity();
        if full || (this.finished() && !this.out_tau.is_empty()) {
            let batch = this.emit();
            timer.done();
            return this.metrics.baseline.record_poll(Poll::Ready(Some(batch)));
        }
        timer.done();
        if this.finished() {
            return Poll::Ready(None);
        }
        // Budget spent with a partial batch: let other tasks run, then resume.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl PairStream {
    /// [`Stream::poll_next`] in top-partners mode: compute (paced as for
    /// rows), hand the partition's state to the query's collector when its
    /// pairs are done, and emit the merged rows if it was the last.
    fn poll_top(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<RecordBatch>>> {
        let compute = self.metrics.baseline.elapsed_compute().clone();
        let timer = compute.timer();
        if self.top.is_some() {
            let now = Instant::now();
            self.fill(now, now + POLL_BUDGET);
            if !self.finished() {
                timer.done();
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let part = self.top.take();
            if let (Some(part), Some(collector)) = (part, &self.prepared.top) {
                self.top_rows = collector.finish(part);
            }
        }
        let Some(rows) = self.top_rows.as_mut().filter(|r| !r.is_done()) else {
            self.top_rows = None;
            timer.done();
            return Poll::Ready(None);
        };
        let prepared = &self.prepared;
        let emit = EmitContext {
            genes: &prepared.genes,
            matrix: &prepared.matrix,
            pvalues: prepared.pvalues.as_ref(),
            projection: &self.projection,
            schema: &self.schema,
        };
        let batch = rows.next_batch(self.batch_size, &emit);
        timer.done();
        self.metrics.baseline.record_poll(Poll::Ready(Some(batch)))
    }
}

impl RecordBatchStream for PairStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

impl Drop for PairStream {
    fn drop(&mut self) {
        self.metrics.baseline.done();
    }
}

//! `KendallExec`: the execution plan that computes and streams the pairs.
//!
//! The input is loaded and ranked once per query, lazily, by whichever
//! partition starts first; all partitions share it. Partition `p` owns a
//! contiguous range of tile ids, balanced by pair count, and streams batches
//! of at most `batch_size` rows. Each poll computes for at most
//! [`POLL_BUDGET`] before handing control back to the runtime, so `LIMIT`,
//! cancellation and other tasks are never starved, however selective the
//! pushed-down filter is.

use std::fmt;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, StringArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{
    Boundedness, EmissionType, ReplaceChildrenOptions, SchedulingType,
};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{Stream, TryStreamExt};
use tokio::sync::OnceCell;

use crate::filter::TauPredicate;
use crate::input::{self, InputSpec, RankedMatrix};
use crate::kernel::{KernelKind, PairKernel, Variant, tau};
use crate::table::output_schema;
use crate::tiles::TileGrid;

/// Longest stretch of computation in one poll of a partition's stream.
pub const POLL_BUDGET: Duration = Duration::from_millis(20);

/// What a scan computes, fixed at planning time.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    /// tau-a or tau-b.
    pub variant: Variant,
    /// The kernel (`auto` already resolved).
    pub kernel: KernelKind,
    /// Tile edge in genes.
    pub tile_size: usize,
    /// Number of output partitions.
    pub partitions: usize,
    /// Maximum rows per batch.
    pub batch_size: usize,
    /// Pushed-down filter on tau, applied exactly.
    pub predicate: Option<Arc<TauPredicate>>,
    /// Rows any single partition needs to produce at most.
    pub limit: Option<usize>,
}

/// The input after loading and ranking: shared by all partitions of a query.
#[derive(Debug)]
struct Prepared {
    genes: StringArray,
    matrix: RankedMatrix,
    grid: TileGrid,
    ranges: Vec<Range<u64>>,
}

/// The execution plan node of `kendall_all_pairs`.
#[derive(Debug)]
pub struct KendallExec {
    spec: Arc<InputSpec>,
    config: ScanConfig,
    projection: Vec<usize>,
    prepared: Arc<OnceCell<Arc<Prepared>>>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl KendallExec {
    /// A plan over `spec` producing the columns `projection` of the output
    /// schema (indices; may be empty, e.g. for `count(*)`).
    pub fn try_new(
        spec: Arc<InputSpec>,
        config: ScanConfig,
        projection: Vec<usize>,
    ) -> Result<Self> {
        let schema = Arc::new(output_schema().project(&projection)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(config.partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        )
        .with_scheduling_type(SchedulingType::Cooperative);
        Ok(Self {
            spec,
            config,
            projection,
            prepared: Arc::new(OnceCell::new()),
            metrics: ExecutionPlanMetricsSet::new(),
            properties: Arc::new(properties),
        })
    }

    /// The scan settings.
    pub fn config(&self) -> &ScanConfig {
        &self.config
    }
}

/// Reads, validates and ranks the input; splits the tiles into partitions.
fn prepare(spec: &InputSpec, config: &ScanConfig) -> Result<Prepared> {
    let loaded = input::load(spec)?;
    let genes = loaded.genes.len();
    let matrix = RankedMatrix::from_values(genes, loaded.samples.len(), &loaded.values);
    let grid = TileGrid::new(genes, config.tile_size);
    let ranges = grid.balanced_ranges(config.partitions);
    Ok(Prepared {
        genes: loaded.genes,
        matrix,
        grid,
        ranges,
    })
}

impl DisplayAs for KendallExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let c = &self.config;
        let (sep, eq) = match t {
            DisplayFormatType::TreeRender => ("\n", "="),
            _ => (", ", "="),
        };
        if !matches!(t, DisplayFormatType::TreeRender) {
            write!(f, "KendallExec: ")?;
        }
        write!(
            f,
            "path{eq}{}{sep}samples{eq}{}{sep}partitions{eq}{}{sep}tile_size{eq}{}{sep}kernel{eq}{}{sep}variant{eq}{}",
            self.spec.path,
            self.spec.samples.len(),
            c.partitions,
            c.tile_size,
            c.kernel,
            c.variant
        )?;
        if let Some(p) = &c.predicate {
            write!(f, "{sep}filter{eq}{p}")?;
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
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition >= self.config.partitions {
            return Err(DataFusionError::Internal(format!(
                "KendallExec has {} partitions, asked for partition {partition}",
                self.config.partitions
            )));
        }
        let schema = self.schema();
        let cell = Arc::clone(&self.prepared);
        let spec = Arc::clone(&self.spec);
        let config = self.config.clone();
        let projection = self.projection.clone();
        let metrics = StreamMetrics::new(&self.metrics, partition);
        let stream_schema = Arc::clone(&schema);
        let start = async move {
            let prepared = cell
                .get_or_try_init(|| {
                    let (spec, config) = (Arc::clone(&spec), config.clone());
                    async move {
                        tokio::task::spawn_blocking(move || prepare(&spec, &config))
                            .await
                            .map_err(|e| DataFusionError::External(Box::new(e)))?
                            .map(Arc::new)
                    }
                })
                .await?;
            Ok::<_, DataFusionError>(PairStream::new(
                Arc::clone(prepared),
                partition,
                &config,
                projection,
                stream_schema,
                metrics,
            ))
        };
        let stream = futures::stream::once(start).try_flatten();
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

/// Position inside the tile being computed.
#[derive(Debug)]
struct Cursor {
    rows: Range<usize>,
    cols: Range<usize>,
    diagonal: bool,
    i: usize,
    j: usize,
}

/// The batch stream of one partition.
struct PairStream {
    prepared: Arc<Prepared>,
    tiles: Range<u64>,
    cursor: Option<Cursor>,
    kernel: PairKernel,
    variant: Variant,
    predicate: Option<Arc<TauPredicate>>,
    batch_size: usize,
    remaining: Option<usize>,
    projection: Vec<usize>,
    schema: SchemaRef,
    /// Pairs computed between clock reads.
    check_every: u32,
    out_i: Vec<u32>,
    out_j: Vec<u32>,
    out_tau: Vec<f64>,
    metrics: StreamMetrics,
}

impl PairStream {
    fn new(
        prepared: Arc<Prepared>,
        partition: usize,
        config: &ScanConfig,
        projection: Vec<usize>,
        schema: SchemaRef,
        metrics: StreamMetrics,
    ) -> Self {
        let samples = prepared.matrix.samples();
        let tiles = prepared.ranges[partition].clone();
        // Aim for ~2^22 elementary steps between clock reads.
        let work = (samples * samples).max(1);
        let check_every = (1usize << 22).div_ceil(work).clamp(1, 256) as u32;
        Self {
            kernel: PairKernel::new(config.kernel, samples),
            prepared,
            tiles,
            cursor: None,
            variant: config.variant,
            predicate: config.predicate.clone(),
            batch_size: config.batch_size,
            remaining: config.limit,
            projection,
            schema,
            check_every,
            out_i: Vec::new(),
            out_j: Vec::new(),
            out_tau: Vec::new(),
            metrics,
        }
    }

    /// Rows this batch may still take.
    fn capacity(&self) -> usize {
        self.batch_size.min(self.remaining.unwrap_or(usize::MAX))
    }

    fn finished(&self) -> bool {
        self.remaining == Some(0) || (self.cursor.is_none() && self.tiles.is_empty())
    }

    /// Computes pairs until the batch is full, the partition is done, or the
    /// poll budget is spent.
    fn fill(&mut self, deadline: Instant) {
        let _timer = self.metrics.kernel_time.timer();
        let capacity = self.capacity();
        let prepared = Arc::clone(&self.prepared);
        let m = &prepared.matrix;
        let n0 = m.n0();
        let mut pairs = 0u64;
        let mut since_check = 0u32;
        'tiles: while self.out_tau.len() < capacity {
            let cursor = match &mut self.cursor {
                Some(c) => c,
                None => {
                    if self.tiles.is_empty() {
                        break;
                    }
                    let tile = self.tiles.start;
                    self.tiles.start += 1;
                    let (rows, cols) = (prepared.grid.rows(tile), prepared.grid.cols(tile));
                    let (y, x) = prepared.grid.coords(tile);
                    let diagonal = y == x;
                    let (i, j) = (
                        rows.start,
                        if diagonal { rows.start + 1 } else { cols.start },
                    );
                    self.cursor.insert(Cursor {
                        rows,
                        cols,
                        diagonal,
                        i,
                        j,
                    })
                }
            };
            while cursor.i < cursor.rows.end {
                let i = cursor.i;
                let n1 = m.tie_pairs(i);
                while cursor.j < cursor.cols.end {
                    let j = cursor.j;
                    cursor.j += 1;
                    let s = self.kernel.numerator(m, i, j);
                    let t = tau(self.variant, s, n0, n1, m.tie_pairs(j));
                    pairs += 1;
                    if self.predicate.as_ref().is_none_or(|p| p.eval(t)) {
                        self.out_i.push(i as u32);
                        self.out_j.push(j as u32);
                        self.out_tau.push(t);
                        if self.out_tau.len() >= capacity {
                            break 'tiles;
                        }
                    }
                    since_check += 1;
                    if since_check >= self.check_every {
                        since_check = 0;
                        if Instant::now() >= deadline {
                            break 'tiles;
                        }
                    }
                }
                cursor.i += 1;
                cursor.j = if cursor.diagonal {
                    cursor.i + 1
                } else {
                    cursor.cols.start
                };
            }
            self.cursor = None;
        }
        // A cursor that ran off its last row is finished.
        if self.cursor.as_ref().is_some_and(|c| c.i >= c.rows.end) {
            self.cursor = None;
        }
        self.metrics.pairs.add(pairs as usize);
    }

    /// Turns the collected rows into a batch of the projected columns.
    fn emit(&mut self) -> Result<RecordBatch> {
        let rows = self.out_tau.len();
        let genes = &self.prepared.genes;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.projection.len());
        for &c in &self.projection {
            columns.push(match c {
                0 => take(
                    genes,
                    &UInt32Array::from(std::mem::take(&mut self.out_i)),
                    None,
                )?,
                1 => take(
                    genes,
                    &UInt32Array::from(std::mem::take(&mut self.out_j)),
                    None,
                )?,
                _ => Arc::new(Float64Array::from(std::mem::take(&mut self.out_tau))),
            });
        }
        self.out_i.clear();
        self.out_j.clear();
        self.out_tau.clear();
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
        if this.finished() && this.out_tau.is_empty() {
            return Poll::Ready(None);
        }
        let compute = this.metrics.baseline.elapsed_compute().clone();
        let timer = compute.timer();
        this.fill(Instant::now() + POLL_BUDGET);
        let full = this.out_tau.len() >= this.capacity();
        if full || (this.finished() && !this.out_tau.is_empty()) {
            let batch = this.emit();
            timer.done();
            let poll = this.metrics.baseline.record_poll(Poll::Ready(Some(batch)));
            return poll;
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

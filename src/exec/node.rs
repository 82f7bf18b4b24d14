//! [`KendallExec`], the plan node of every Kendall table function: its
//! properties, how `EXPLAIN` shows it, and how a partition runs (the load
//! shared by all partitions, then the partition's `PairStream`).

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{
    Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions, SchedulingType,
    reset_plan_states,
};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::ScanConfig;
use super::groups::{GroupCounters, GroupedInput, GroupedPartition};
use super::listed;
use super::prepare::{Prepared, StageMetrics, load as load_input, pairs_per_group, prepare};
use super::progress::{LiveScan, Progress, live_scans};
use super::slices::{partition_slices, slice_of};
use super::stream::{PairStream, StreamMetrics};
use crate::error::in_function;
use crate::gene_filter::walked_anchors;
use crate::input::{GroupsSpec, InputBatches, InputSpec, PairListSpec};
use crate::kernel::KernelKind;
use crate::load::SharedLoad;
use crate::memory::QueryMemory;

/// The execution plan node of `kendall_all_pairs`.
#[derive(Debug)]
pub struct KendallExec {
    spec: Arc<InputSpec>,
    /// The source's scan: read once per query, by the load.
    input: Arc<dyn ExecutionPlan>,
    /// `kendall_cross_pairs`: the right source and its scan (its genes
    /// pair with every gene of `input`, and with no other).
    right: Option<(Arc<InputSpec>, Arc<dyn ExecutionPlan>)>,
    /// `kendall_candidate_pairs`: the candidate list and its scan (only
    /// its pairs are computed).
    pair_list: Option<(Arc<PairListSpec>, Arc<dyn ExecutionPlan>)>,
    /// Grouped samples (`kendall.groups`): the groups source and its scan.
    groups: Option<(Arc<GroupsSpec>, Arc<dyn ExecutionPlan>)>,
    config: ScanConfig,
    projection: Vec<usize>,
    /// On a cluster, the only child: partition `p` of this in-memory scan
    /// holds the number of the tile range this plan's partition `p` computes
    /// (see [`partition_slices`]).
    slices: Option<Arc<dyn ExecutionPlan>>,
    /// Loaded by the first partition, shared by all, released by the last
    /// (see [`SharedLoad`]).
    prepared: Arc<SharedLoad<Prepared>>,
    /// Grouped samples: the input, loaded by the first partition, shared
    /// by all (each group is then prepared once, see [`GroupedInput`]).
    grouped: Arc<SharedLoad<GroupedInput>>,
    /// Grouped samples: the groups' preparations started and stopped.
    group_counters: GroupCounters,
    /// Pairs the scan computes, once known.
    total_pairs: Arc<std::sync::OnceLock<u64>>,
    /// Inputs a load read in place (a sparse table's arrays, a 10x
    /// directory's matrix file) rather than as their rows
    /// (`inputs_read_in_place` in `EXPLAIN ANALYZE`).
    in_place: Count,
    /// How long preparing the input took, by stage (`load_time`, ...).
    stage_metrics: StageMetrics,
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
        if config.cluster && (config.top_k.is_some() || config.reads_q_value(&projection)) {
            config.partitions = 1;
        }
        let schema = Arc::new(config.output_schema().project(&projection)?);
        let outputs = config.output_partitions();
        let slices = match config.cluster {
            true => Some(partition_slices(0..outputs)?),
            false => None,
        };
        let properties = PlanProperties::new(
            listed::equivalences(&config, &projection, schema),
            Partitioning::UnknownPartitioning(outputs),
            match config.top_k {
                Some(_) => EmissionType::Final,
                None => EmissionType::Incremental,
            },
            Boundedness::Bounded,
        )
        .with_scheduling_type(SchedulingType::Cooperative);
        let metrics = ExecutionPlanMetricsSet::new();
        let (loads, loads_stopped) = (
            MetricBuilder::new(&metrics).global_counter("input_loads"),
            MetricBuilder::new(&metrics).global_counter("input_loads_stopped"),
        );
        let prepared = SharedLoad::new(outputs, loads.clone(), loads_stopped.clone());
        let grouped = SharedLoad::new(outputs, loads, loads_stopped);
        let group_counters = GroupCounters {
            started: MetricBuilder::new(&metrics).global_counter("group_preparations"),
            stopped: MetricBuilder::new(&metrics).global_counter("group_preparations_stopped"),
        };
        let in_place = MetricBuilder::new(&metrics).global_counter("inputs_read_in_place");
        let stage_metrics = StageMetrics::new(&metrics);
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
            pair_list: None,
            groups: None,
            config,
            projection,
            slices,
            prepared: Arc::new(prepared),
            grouped: Arc::new(grouped),
            group_counters,
            total_pairs,
            in_place,
            stage_metrics,
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

    /// The plan of `kendall_candidate_pairs`: only the pairs listed by
    /// `pairs` (whose id columns `spec` names).
    pub fn with_pair_list(
        mut self,
        spec: Arc<PairListSpec>,
        pairs: Arc<dyn ExecutionPlan>,
    ) -> Self {
        self.pair_list = Some((spec, pairs));
        self
    }

    /// The plan over grouped samples (`kendall.groups`): the (sample,
    /// group) rows scanned by `groups` (whose columns `spec` names); the
    /// scan's config must be grouped.
    pub fn with_groups(mut self, spec: Arc<GroupsSpec>, groups: Arc<dyn ExecutionPlan>) -> Self {
        self.groups = Some((spec, groups));
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

    /// `kendall_candidate_pairs`: the candidate list's source and columns.
    pub fn pair_list_spec(&self) -> Option<&Arc<PairListSpec>> {
        self.pair_list.as_ref().map(|(spec, _)| spec)
    }

    /// Grouped samples: the groups source and its columns.
    pub fn groups_spec(&self) -> Option<&Arc<GroupsSpec>> {
        self.groups.as_ref().map(|(spec, _)| spec)
    }

    /// The columns of the output schema this plan produces (indices).
    pub fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// The scans of the source, of the right source of
    /// `kendall_cross_pairs`, of the list of `kendall_candidate_pairs` and
    /// of the groups source, in that order: the children, except on a
    /// cluster.
    pub fn inputs(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        let mut inputs = vec![&self.input];
        inputs.extend(self.right.as_ref().map(|(_, plan)| plan));
        inputs.extend(self.pair_list.as_ref().map(|(_, plan)| plan));
        inputs.extend(self.groups.as_ref().map(|(_, plan)| plan));
        inputs
    }

    /// This plan's copy with other `inputs` (as [`KendallExec::inputs`]
    /// lists them) and the same settings.
    fn with_inputs(&self, mut inputs: Vec<Arc<dyn ExecutionPlan>>) -> Result<Self> {
        let wanted = 1
            + usize::from(self.right.is_some())
            + usize::from(self.pair_list.is_some())
            + usize::from(self.groups.is_some());
        if inputs.len() != wanted {
            return Err(DataFusionError::Internal(format!(
                "KendallExec takes {wanted} children (its inputs), got {}",
                inputs.len()
            )));
        }
        let groups = match &self.groups {
            Some((spec, _)) => inputs.pop().map(|plan| (Arc::clone(spec), plan)),
            None => None,
        };
        let pair_list = match &self.pair_list {
            Some((spec, _)) => inputs.pop().map(|plan| (Arc::clone(spec), plan)),
            None => None,
        };
        let right = match &self.right {
            Some((spec, _)) => inputs.pop().map(|plan| (Arc::clone(spec), plan)),
            None => None,
        };
        let input = inputs.pop().expect("counted above");
        let mut exec = KendallExec::try_new(
            Arc::clone(&self.spec),
            input,
            self.config.clone(),
            self.projection.clone(),
        )?;
        exec.right = right;
        exec.pair_list = pair_list;
        exec.groups = groups;
        Ok(exec)
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
        self.config.reads_q_value(&self.projection)
    }

    /// Whether the query reads `p_value` (projected or filtered on), or
    /// `q_value` (adjusted p-values).
    fn wants_p_value(&self) -> bool {
        self.config.reads_p_value(&self.projection)
    }
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
            Some(decision) => {
                write!(f, "{sep}kernel{eq}{decision}")?;
                if matches!(decision.kind, KernelKind::Vse | KernelKind::Bitset) {
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
            let family = match (self.pair_list.is_some(), self.groups.is_some()) {
                (true, true) => "each group's listed pairs",
                (true, false) => "the listed pairs",
                (false, true) => "each group's pairs",
                (false, false) => "all pairs",
            };
            write!(f, "{sep}q_value{eq}{} over {family}", c.fdr)?;
        }
        if let Some(p) = &c.gene_predicate {
            write!(f, "{sep}gene_filter{eq}{p}")?;
            // Whether the pairs are bounded (not which side of an AND wins).
            if walked_anchors(Some(p), self.pair_list.is_some(), &|_| 0).is_some() {
                write!(f, "{sep}pairs{eq}touching")?;
            }
        }
        if let Some((list, _)) = &self.pair_list {
            write!(f, "{sep}pairs{eq}listed in {}", list.what)?;
            if c.in_list_order {
                write!(f, "{sep}rows{eq}the list's lines, in order")?;
            }
        }
        if let Some((groups, _)) = &self.groups {
            write!(f, "{sep}groups{eq}{}", groups.what)?;
            if let Some(p) = &c.group_predicate {
                write!(f, "{sep}group_filter{eq}{p}")?;
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
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.slices.is_some() {
            let [slices] = <[_; 1]>::try_from(children).map_err(|c| {
                DataFusionError::Internal(format!(
                    "KendallExec on a cluster takes 1 child (its partition slices), got {}",
                    c.len()
                ))
            })?;
            let inputs = self.inputs().into_iter().map(Arc::clone).collect();
            return Ok(Arc::new(self.with_inputs(inputs)?.with_slices(slices)));
        }
        Ok(Arc::new(self.with_inputs(children)?))
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
        let schema = self.schema();
        let function = self.config.function;
        let stream = match self.groups.is_some() {
            true => self.grouped_stream(partition, context),
            false => self.pairs_stream(partition, context),
        };
        // The scan stays in the live registry (its progress readable by
        // source) while a stream of it runs, even once the plan is dropped:
        // hosts such as datafusion-python's `execute_stream` keep only the
        // streams.
        let alive = Arc::clone(&self.total_pairs);
        let stream = stream
            .inspect(move |_| {
                let _ = &alive;
            })
            // Every error of the scan is named after the function the query called.
            .map_err(move |e| in_function(function, e));
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            schema, stream,
        ))))
    }
}

/// The scans a load reads, copied from the plan for one partition's load.
#[derive(Clone)]
struct Sources {
    spec: Arc<InputSpec>,
    input: Arc<dyn ExecutionPlan>,
    right: Option<(Arc<InputSpec>, Arc<dyn ExecutionPlan>)>,
    pair_list: Option<(Arc<PairListSpec>, Arc<dyn ExecutionPlan>)>,
    in_place: Count,
}

/// A load's batches: the source's, the right source's, the candidate
/// list's.
type Opened<'a> = (
    InputBatches,
    Option<(&'a InputSpec, InputBatches)>,
    Option<(&'a PairListSpec, InputBatches)>,
);

impl Sources {
    /// Fresh copies of the scans (file scans keep per-execution state, a
    /// shared queue of files), executed as `context`'s.
    fn open(&self, context: &Arc<TaskContext>) -> Result<Opened<'_>> {
        let input = reset_plan_states(Arc::clone(&self.input))?;
        let batches = InputBatches::new(input, Arc::clone(context), &self.spec.what)?
            .counting_in_place(self.in_place.clone());
        let right = match &self.right {
            Some((right_spec, plan)) => {
                let plan = reset_plan_states(Arc::clone(plan))?;
                let batches = InputBatches::new(plan, Arc::clone(context), &right_spec.what)?
                    .counting_in_place(self.in_place.clone());
                Some((right_spec.as_ref(), batches))
            }
            None => None,
        };
        let pair_list = match &self.pair_list {
            Some((list, plan)) => {
                let plan = reset_plan_states(Arc::clone(plan))?;
                let batches = InputBatches::new(plan, Arc::clone(context), &list.what)?;
                Some((list.as_ref(), batches))
            }
            None => None,
        };
        Ok((batches, right, pair_list))
    }
}

/// A partition's batches, errors not yet named after the function.
type Batches = futures::stream::BoxStream<'static, Result<datafusion::arrow::array::RecordBatch>>;

impl KendallExec {
    fn sources(&self) -> Sources {
        Sources {
            spec: Arc::clone(&self.spec),
            input: Arc::clone(&self.input),
            right: self.right.clone(),
            pair_list: self.pair_list.clone(),
            in_place: self.in_place.clone(),
        }
    }

    /// The tile range of `partition`: the partition, or on a cluster what
    /// the task's slice of the partitions says.
    fn tile_range(
        &self,
        partition: usize,
        context: &Arc<TaskContext>,
    ) -> impl std::future::Future<Output = Result<usize>> + Send + 'static {
        let (slices, context) = (self.slices.clone(), Arc::clone(context));
        async move {
            match &slices {
                Some(slices) => slice_of(slices, partition, context).await,
                None => Ok(partition),
            }
        }
    }

    /// An ungrouped scan's partition: the input prepared once (shared by
    /// every partition), then the partition's pairs.
    fn pairs_stream(&self, partition: usize, context: Arc<TaskContext>) -> Batches {
        let tile_range = self.tile_range(partition, &context);
        let load = Arc::clone(&self.prepared);
        // Counted from now until the input is there: a stream dropped
        // before (even unpolled) lets a load nobody wants stop.
        let interest = load.interest();
        let sources = self.sources();
        let config = self.config.clone();
        let projection = self.projection.clone();
        let wants = (self.wants_p_value(), self.wants_q_value());
        let memory = QueryMemory::new(
            Arc::clone(context.memory_pool()),
            config.function,
            &self.spec.what,
        );
        let total_pairs = Arc::clone(&self.total_pairs);
        let stage_metrics = self.stage_metrics.clone();
        let metrics = StreamMetrics::new(&self.metrics, partition);
        let stream_schema = self.schema();
        let start = async move {
            let partition = tile_range.await?;
            let prepared = load
                .get(&interest, || {
                    let (sources, config) = (sources.clone(), config.clone());
                    let (memory, total_pairs) = (memory.clone(), Arc::clone(&total_pairs));
                    let context = Arc::clone(&context);
                    let stage_metrics = stage_metrics.clone();
                    move || {
                        let (batches, right, pair_list) = sources.open(&context)?;
                        let prepared = prepare(
                            &sources.spec,
                            batches,
                            right,
                            pair_list,
                            &config,
                            wants,
                            &memory,
                        )?;
                        let _ = total_pairs.set(prepared.work.total_pairs());
                        stage_metrics.record(&prepared.stage_times);
                        Ok(prepared)
                    }
                })
                .await?;
            drop(interest);
            // Partitions that waited for the load are woken by the one that
            // did it, onto its worker's LIFO slot, where no other worker can
            // steal them: yield once so they spread over the runtime.
            tokio::task::yield_now().await;
            if config.in_list_order {
                return Ok(listed::lines_stream(
                    prepared,
                    config,
                    projection,
                    stream_schema,
                    metrics,
                    memory,
                ));
            }
            PairStream::try_new(
                prepared,
                partition,
                &config,
                projection,
                stream_schema,
                metrics,
            )
            .map(|stream| stream.boxed())
        };
        futures::stream::once(start).try_flatten().boxed()
    }

    /// A grouped scan's partition: the input and the groups read once
    /// (shared by every partition), then each group's share of the
    /// partition's pairs, group after group (see [`GroupedPartition`]).
    fn grouped_stream(&self, partition: usize, context: Arc<TaskContext>) -> Batches {
        let tile_range = self.tile_range(partition, &context);
        let load = Arc::clone(&self.grouped);
        let interest = load.interest();
        let sources = self.sources();
        let groups = self.groups.clone();
        let config = self.config.clone();
        let memory = QueryMemory::new(
            Arc::clone(context.memory_pool()),
            config.function,
            &self.spec.what,
        );
        let total_pairs = Arc::clone(&self.total_pairs);
        let stage_metrics = self.stage_metrics.clone();
        let counters = self.group_counters.clone();
        let pair_columns = config.pair_columns(&self.projection);
        let wants = (self.wants_p_value(), self.wants_q_value());
        let mut group_config = config.clone();
        group_config.grouped = false;
        let streamed = GroupedPartition {
            partition,
            config: group_config,
            projection: self.projection.clone(),
            pair_columns,
            schema: self.schema(),
            wants,
            memory: memory.clone(),
            metrics: StreamMetrics::new(&self.metrics, partition),
            stage_metrics: stage_metrics.clone(),
        };
        let start = async move {
            let tiles = tile_range.await?;
            let input = load
                .get(&interest, || {
                    let (sources, groups) = (sources.clone(), groups.clone());
                    let (config, memory) = (config.clone(), memory.clone());
                    let (total_pairs, context) = (Arc::clone(&total_pairs), Arc::clone(&context));
                    let (stage_metrics, counters) = (stage_metrics.clone(), counters.clone());
                    move || {
                        let (batches, right, pair_list) = sources.open(&context)?;
                        let loaded =
                            load_input(&sources.spec, batches, right, pair_list, false, &memory)?;
                        stage_metrics.record_load(loaded.load_time);
                        let Some((groups_spec, plan)) = groups else {
                            return Err(DataFusionError::Internal(
                                "a grouped scan without its groups source".into(),
                            ));
                        };
                        let plan = reset_plan_states(plan)?;
                        let batches = InputBatches::new(plan, context, &groups_spec.what)?;
                        let sample_groups = groups_spec.read(batches, &memory)?;
                        let per_group = pairs_per_group(&loaded, &config);
                        let missing = sources.spec.missing;
                        let input =
                            GroupedInput::new(loaded, sample_groups, missing, &config, &counters);
                        let _ = total_pairs.set(input.total_pairs(per_group));
                        Ok(input)
                    }
                })
                .await?;
            drop(interest);
            tokio::task::yield_now().await;
            Ok::<_, DataFusionError>(
                GroupedPartition {
                    partition: tiles,
                    ..streamed
                }
                .stream(input),
            )
        };
        futures::stream::once(start).try_flatten().boxed()
    }
}

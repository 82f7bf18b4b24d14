//! `KendallTable`: the table a `kendall_all_pairs(...)` call stands for.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::plan_err;
use datafusion::common::stats::Precision;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};
use futures::FutureExt;

use crate::exec::{KendallExec, ScanConfig};
use crate::fdr::Q_VALUE;
use crate::filter::{P_VALUE, TAU, TauPredicate};
use crate::gene_filter::GenePredicate;
use crate::input::{self, FN_NAME, InputSpec, RankedMatrix};
use crate::kernel::isa::{Isa, SimdChoice};
use crate::kernel::{KernelChoice, KernelKind, bitset};
use crate::memory;
use crate::options::KendallOptions;

/// The output schema: `gene_i`, `gene_j` (non-null strings), `tau` and
/// `p_value` (Float64; NULL when the pair shares fewer than
/// `kendall.min_periods` samples) and `n` (Int64, the samples the pair
/// shares) and `q_value` (Float64, the p-value adjusted for the false
/// discovery rate over all pairs of the input, see [`crate::fdr`]; NULL
/// when `p_value` is). `p_value`, `n` and `q_value` are computed only when a
/// query reads them.
pub fn output_schema() -> SchemaRef {
    output_schema_for(GeneIds::String)
}

/// The output schema with the gene columns typed as `gene_ids` says.
pub fn output_schema_for(gene_ids: GeneIds) -> SchemaRef {
    let gene = gene_ids.data_type();
    Arc::new(Schema::new(vec![
        Field::new("gene_i", gene.clone(), false),
        Field::new("gene_j", gene, false),
        Field::new(TAU, DataType::Float64, true),
        Field::new(P_VALUE, DataType::Float64, true),
        Field::new("n", DataType::Int64, false),
        Field::new(Q_VALUE, DataType::Float64, true),
    ]))
}

/// How the gene columns of the pair output are typed (`SET kendall.gene_ids`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GeneIds {
    /// Strings (`Utf8`), each row its own copy of both names.
    #[default]
    String,
    /// `Dictionary(Int32, Utf8)`: each row holds two 4-byte keys into the
    /// distinct gene names, which every batch shares. Smaller and faster for
    /// large outputs and for hosts that keep them as categories (pandas,
    /// which takes signed keys only).
    Dictionary,
}

impl GeneIds {
    /// The Arrow type of a gene column.
    pub fn data_type(self) -> DataType {
        match self {
            GeneIds::String => DataType::Utf8,
            GeneIds::Dictionary => {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            }
        }
    }
}

impl std::fmt::Display for GeneIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GeneIds::String => "string",
            GeneIds::Dictionary => "dictionary",
        })
    }
}

impl std::str::FromStr for GeneIds {
    type Err = DataFusionError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "string" => Ok(GeneIds::String),
            "dictionary" => Ok(GeneIds::Dictionary),
            other => Err(DataFusionError::Configuration(format!(
                "kendall.gene_ids must be 'string' or 'dictionary', got '{other}'"
            ))),
        }
    }
}

enum_config_field!(GeneIds);

/// All gene pairs of one expression matrix, as a DataFusion table.
///
/// The source (a registered table or view, or a location) is resolved and
/// its schema checked when the query is planned ([`TableProvider::scan`]):
/// the plan's input is then the source's own DataFusion scan, reading only
/// the columns needed. Filters on `tau`, `p_value` and the gene columns are
/// applied exactly inside the scan; the kernel, variant and tile size come
/// from the session's [`KendallOptions`] at planning time.
#[derive(Debug)]
pub struct KendallTable {
    source: String,
    names: Vec<String>,
    /// Fixed when the function is called (the schema depends on it).
    gene_ids: GeneIds,
    schema: SchemaRef,
}

impl KendallTable {
    /// The table over `source` (a registered table or view, or a location),
    /// with the column names of the layout (`names`, possibly none).
    pub fn new(source: String, names: Vec<String>) -> Self {
        Self {
            source,
            names,
            gene_ids: GeneIds::String,
            schema: output_schema(),
        }
    }

    /// The same table with its gene columns typed as `gene_ids` says.
    pub fn with_gene_ids(mut self, gene_ids: GeneIds) -> Self {
        self.gene_ids = gene_ids;
        self.schema = output_schema_for(gene_ids);
        self
    }

    /// The source as the query named it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The column names given after the source.
    pub fn column_names(&self) -> &[String] {
        &self.names
    }

    /// How the gene columns are typed.
    pub fn gene_ids(&self) -> GeneIds {
        self.gene_ids
    }
}

#[async_trait]
impl TableProvider for KendallTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(pushdown(filters))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let planned = guard_panics(
            FN_NAME,
            &self.source,
            plan_scan(state, &self.source, &self.names, filters, limit),
        )
        .await?;
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let mut config = planned.config;
        config.gene_ids = self.gene_ids;
        Ok(Arc::new(KendallExec::try_new(
            planned.spec,
            planned.input,
            config,
            projection,
        )?))
    }
}

/// Which `filters` the pair loop applies exactly (comparisons of `tau`,
/// `p_value`, `q_value` and the gene columns, see [`TauPredicate`] and
/// [`GenePredicate`]); DataFusion applies the others.
pub(crate) fn pushdown(filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| {
            if TauPredicate::from_expr(f).is_some() || GenePredicate::from_expr(f).is_some() {
                TableProviderFilterPushDown::Exact
            } else {
                TableProviderFilterPushDown::Unsupported
            }
        })
        .collect()
}

/// Runs `planning` of the table function `function` (which reads the source's metadata: schemas, Parquet
/// footers), turning a panic in it into an error naming `source`: a corrupt
/// file has made arrow panic, and that must be an error, not a crash of the
/// process.
pub(crate) async fn guard_panics<T>(
    function: &str,
    source: &str,
    planning: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    std::panic::AssertUnwindSafe(planning)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            plan_err!(
                "{function}: cannot read '{source}': reading it panicked ({}); is it a valid file?",
                input::panic_message(&*panic)
            )
        })
}

/// A source resolved, inspected and its scan planned, with the scan
/// settings of the session: what a [`KendallExec`] is built from. Shared by
/// `kendall_all_pairs` and `kendall_top_partners`.
pub(crate) struct PlannedScan {
    /// The columns and layout of the source.
    pub spec: Arc<InputSpec>,
    /// The source's own DataFusion scan, reading only the columns needed.
    pub input: Arc<dyn ExecutionPlan>,
    /// What the scan computes (from the session's [`KendallOptions`]).
    pub config: ScanConfig,
}

/// Resolves `source`, inspects its schema for the layout's column `names`,
/// plans its scan and the [`ScanConfig`] of the session's options, with the
/// pushed-down `filters` (those [`TauPredicate`] or [`GenePredicate`]
/// accept) and `limit`.
pub(crate) async fn plan_scan(
    state: &dyn Session,
    source: &str,
    names: &[String],
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<PlannedScan> {
    let config = state.config_options();
    let options = KendallOptions::from_config(config)?;
    let source = input::source::resolve(state, source, options.format).await?;
    // A 10x directory is sparse triples: the long layout, absent entries 0.
    let (layout, absent) = if source.tenx {
        if !names.is_empty() {
            return plan_err!(
                "{FN_NAME}: {} takes no column names (its columns are gene, sample, value)",
                source.what
            );
        }
        (input::Layout::Long, input::Absent::Zero)
    } else {
        (options.layout, options.absent)
    };
    let spec = input::inspect(
        &source.what,
        &source.provider.schema(),
        layout,
        names,
        options.missing,
        absent,
    )?;
    // The row count, when the source knows it exactly (Parquet footers,
    // a memory table): the shape is then known before anything is read.
    let rows = {
        let planned = source
            .provider
            .scan(state, Some(&spec.projection), &[], None)
            .await?;
        let statistics =
            StatisticsContext::new().compute(planned.as_ref(), &StatisticsArgs::new())?;
        match statistics.num_rows {
            Precision::Exact(rows) => Some(rows),
            _ => None,
        }
    };
    // The scan that reads the values is planned without file statistics:
    // DataFusion 55 reads a Parquet column whose statistics say min = max
    // with no nulls as that constant, but Parquet statistics leave NaN
    // out, so a column (1.0, NaN) would be read as (1.0, 1.0) and a
    // missing value silently become a measured one.
    let unchecked = without_statistics(state);
    let read_state: &dyn Session = unchecked.as_ref().map_or(state, |s| s as &dyn Session);
    let input = source
        .provider
        .scan(read_state, Some(&spec.projection), &[], None)
        .await?;
    // Gene order is the source's order: file scans must not let one
    // partition take another's files.
    let input = input.with_preserve_order(true).unwrap_or(input);
    let spec = spec.with_rows(rows)?;
    let (predicate, gene_predicate) = predicates(filters);
    // Bit-planes may take kendall.memory_limit, and no more than the
    // session's memory pool can grant besides the ranks they are built
    // from (counted for the planned shape; again at run time).
    let option_limit = options.memory_limit.bytes() as u64;
    let pool_available = memory::pool_available(&state.runtime_env().memory_pool);
    let simd = options.simd;
    let isa = simd.resolve()?;
    // Genes a gene-targeted query's pairs must touch (names; at most that many).
    let anchors = gene_predicate
        .as_ref()
        .and_then(GenePredicate::anchors)
        .map(|(i, j)| i.union(&j).count());
    let kernel = KernelPlan {
        choice: options.kernel,
        option_limit,
        pool_available,
        simd,
        isa,
        anchors,
    };
    // With the shape known now, the kernel shows in EXPLAIN and a forced
    // bitset kernel over its memory is refused before anything is read.
    let planned = match (spec.genes, spec.samples) {
        (Some(genes), Some(samples)) => Some(kernel.resolve(genes, samples)?),
        _ => None,
    };
    let scan = ScanConfig {
        variant: options.variant,
        min_periods: options.min_periods.get(),
        kernel,
        planned_kernel: planned,
        tile_size: options.tile_size.get(),
        partitions: partitions(options.partitions.get(), config),
        batch_size: usize::from(config.execution.batch_size).max(1),
        pvalue: options.pvalue,
        fdr: options.fdr,
        predicate: predicate.map(Arc::new),
        gene_predicate: gene_predicate.map(Arc::new),
        limit,
        top_k: None,
        // The pair tables set it from what they fixed when called (their
        // schema); top partners' gene columns are always strings.
        gene_ids: GeneIds::String,
        filters: filters
            .iter()
            .filter(|f| {
                TauPredicate::from_expr(f).is_some() || GenePredicate::from_expr(f).is_some()
            })
            .cloned()
            .collect(),
        cluster: on_cluster(config),
    };
    Ok(PlannedScan {
        spec: Arc::new(spec),
        input,
        config: scan,
    })
}

/// The exact filters on tau (and p- and q-values) and on the gene columns
/// among the pushed-down `filters`, each joined with AND.
pub(crate) fn predicates(filters: &[Expr]) -> (Option<TauPredicate>, Option<GenePredicate>) {
    let predicate = filters
        .iter()
        .filter_map(TauPredicate::from_expr)
        .reduce(TauPredicate::and);
    // Tau filters compare numbers, gene filters strings: no filter is both.
    let gene_predicate = filters
        .iter()
        .filter_map(GenePredicate::from_expr)
        .reduce(GenePredicate::and);
    (predicate, gene_predicate)
}

/// Multiple of `datafusion.execution.target_partitions` a scan planned for a
/// Ballista cluster takes by default: more tasks than executor slots, so
/// that a slow or lost executor holds back a quarter of a slot's share.
pub const CLUSTER_PARTITIONS_PER_TARGET: usize = 4;

/// The partitions of a scan: `kendall.partitions` when set (`option` > 0),
/// else the session's target partitions, times
/// [`CLUSTER_PARTITIONS_PER_TARGET`] on a cluster, at most
/// [`MAX_PARTITIONS`](crate::options::MAX_PARTITIONS).
fn partitions(option: usize, config: &ConfigOptions) -> usize {
    if option > 0 {
        return option;
    }
    let target = config.execution.target_partitions.max(1);
    let partitions = if on_cluster(config) {
        target.saturating_mul(CLUSTER_PARTITIONS_PER_TARGET)
    } else {
        target
    };
    partitions.min(crate::options::MAX_PARTITIONS)
}

/// Whether a session plans for a Ballista cluster (its configuration
/// carries Ballista's options: a Ballista client, scheduler or executor).
pub(crate) fn on_cluster(config: &ConfigOptions) -> bool {
    config
        .extensions
        .iter()
        .any(|(prefix, _)| prefix == "ballista")
}

/// A copy of `state` that plans file scans without collecting file
/// statistics (`None` when `state` is not DataFusion's own `SessionState`,
/// e.g. across the FFI).
fn without_statistics(state: &dyn Session) -> Option<SessionState> {
    let mut copy = state.as_any().downcast_ref::<SessionState>()?.clone();
    copy.config_mut().options_mut().execution.collect_statistics = false;
    Some(copy)
}

/// How the kernel is chosen: what was asked, and what bounds it. Resolved
/// with the shape of the data, at planning time when the shape is known
/// then, and always once the input is loaded.
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

impl KernelPlan {
    /// The kernel for `genes` × `samples`; an error when the bitset kernel,
    /// asked for, needs more memory than it may take.
    pub fn resolve(&self, genes: usize, samples: usize) -> Result<KernelKind> {
        let ranks = RankedMatrix::fixed_bytes(genes, samples) as u64;
        let pool_room = self
            .pool_available
            .map(|available| (available as u64).saturating_sub(ranks));
        let limit = pool_room.map_or(self.option_limit, |room| room.min(self.option_limit));
        let kernel = self
            .choice
            .resolve(genes, samples, limit, self.isa, self.anchors);
        let planes = bitset::plane_bytes(genes, samples);
        if kernel == KernelKind::Bitset && planes > limit {
            let over = match pool_room {
                Some(room) if room < self.option_limit => format!(
                    "over the {room} bytes DataFusion's memory pool can grant besides the {ranks} \
                     bytes of ranks (datafusion.runtime.memory_limit)"
                ),
                _ => format!("over kendall.memory_limit = {}", self.option_limit),
            };
            return plan_err!(
                "{FN_NAME}: the bitset kernel needs {planes} bytes of bit-planes for {genes} genes x \
                 {samples} samples, {over}; raise the limit or SET kendall.kernel = 'auto'"
            );
        }
        Ok(kernel)
    }
}

//! Planning the scan of one source: resolved (a table, view or location),
//! its schema inspected for the layout, its DataFusion scan planned, and the
//! session's options turned into a [`ScanConfig`]. Shared by every table
//! function.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::config::ConfigOptions;
use datafusion::common::plan_err;
use datafusion::common::stats::Precision;
use datafusion::error::Result;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};
use futures::FutureExt;

use crate::error::{Panicked, in_function, panicked, plan_error};
use crate::exec::ScanConfig;
use crate::filter::TauPredicate;
use crate::gene_filter::GenePredicate;
use crate::group_filter::GroupPredicate;
use crate::input::{self, InputSpec};
use crate::memory;
use crate::options::{KendallOptions, MAX_PARTITIONS};

/// Which `filters` the pair loop applies exactly (comparisons of `tau`,
/// `p_value`, `q_value` and the gene columns, see [`TauPredicate`] and
/// [`GenePredicate`]; of a `grouped` call's `group` column, see
/// [`GroupPredicate`]); DataFusion applies the others.
pub(crate) fn pushdown(filters: &[&Expr], grouped: bool) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| {
            let on_group = grouped && GroupPredicate::from_expr(f).is_some();
            if TauPredicate::from_expr(f).is_some()
                || GenePredicate::from_expr(f).is_some()
                || on_group
            {
                TableProviderFilterPushDown::Exact
            } else {
                TableProviderFilterPushDown::Unsupported
            }
        })
        .collect()
}

/// Runs `planning` of a call of `function` (which reads the sources'
/// metadata: schemas, Parquet footers), turning a panic in it into an error
/// naming `sources`: a corrupt file has made arrow panic, and that must be
/// an error, not a crash of the process. Its errors are named after
/// `function` ([`in_function`]).
pub(crate) async fn guard_panics<T>(
    function: &str,
    sources: &[String],
    planning: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    std::panic::AssertUnwindSafe(planning)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let sources = sources
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(" or ");
            Err(plan_error(panicked(Panicked::Reading(&sources), &*panic)))
        })
        .map_err(|e| in_function(function, e))
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

/// For a call of `function`: resolves `source`, inspects its schema for the layout's column `names`,
/// plans its scan and the [`ScanConfig`] of the session's options, with the
/// pushed-down `filters` (those [`TauPredicate`] or [`GenePredicate`]
/// accept) and `limit`.
pub(crate) async fn plan_scan(
    function: &'static str,
    state: &dyn Session,
    source: &str,
    names: &[String],
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<PlannedScan> {
    let config = state.config_options();
    let options = KendallOptions::from_config(config)?;
    let source = input::resolve(state, source, options.format).await?;
    // A 10x directory or a sparse table is sparse triples: the long
    // layout, absent entries 0.
    let (layout, absent) = if source.sparse {
        if !names.is_empty() {
            return plan_err!(
                "{} takes no column names (its columns are gene, sample, value)",
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
    let scan = scan_config(function, state, &options, &spec, filters, limit)?;
    Ok(PlannedScan {
        spec: Arc::new(spec),
        input,
        config: scan,
    })
}

/// The [`ScanConfig`] of a call of `function` over `spec`: the session's
/// options, the pushed-down `filters` (those [`TauPredicate`] or
/// [`GenePredicate`] accept) and `limit`, and the kernel planned when the
/// shape is known now.
fn scan_config(
    function: &'static str,
    state: &dyn Session,
    options: &KendallOptions,
    spec: &InputSpec,
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<ScanConfig> {
    let config = state.config_options();
    let (predicate, gene_predicate) = predicates(filters);
    // Bit-planes may take kendall.memory_limit, and no more than the
    // session's memory pool can grant besides the ranks they are built
    // from (counted for the planned shape; again at run time).
    let pool_available = memory::pool_available(&state.runtime_env().memory_pool);
    // Genes a gene-targeted query's pairs must touch (names; at most that many).
    let anchors = gene_predicate
        .as_ref()
        .and_then(GenePredicate::anchors)
        .map(|(i, j)| i.union(&j).count());
    let mut scan = ScanConfig::of_options(function, options, pool_available, anchors)?;
    // With the shape known now, the kernel shows in EXPLAIN and a forced
    // bitset kernel over its memory is refused before anything is read.
    scan.planned_kernel = match (spec.genes, spec.samples) {
        (Some(genes), Some(samples)) => Some(scan.kernel.for_shape(genes, samples)?),
        _ => None,
    };
    scan.partitions = partitions(options.partitions.get(), config);
    scan.batch_size = usize::from(config.execution.batch_size).max(1);
    scan.predicate = predicate.map(Arc::new);
    scan.gene_predicate = gene_predicate.map(Arc::new);
    scan.limit = limit;
    // The pair tables set the gene columns' type from what they fixed when
    // called (their schema); top partners' are always strings. A grouped
    // call's provider sets the grouping (see `KendallTable::scan`).
    scan.filters = filters
        .iter()
        .filter(|f| TauPredicate::from_expr(f).is_some() || GenePredicate::from_expr(f).is_some())
        .cloned()
        .collect();
    scan.cluster = on_cluster(config);
    Ok(scan)
}

/// Refuses a pair of matrices whose samples cannot be matched by name
/// (layout `genes_as_columns` names no sample): two-matrix calls match
/// samples by name.
pub(crate) fn require_sample_names(specs: [&InputSpec; 2]) -> Result<()> {
    for spec in specs {
        if !spec.names_samples() {
            return plan_err!(
                "{} has layout 'genes_as_columns', whose samples (rows) have no \
                 names; samples are matched by name: use layout 'genes_as_rows' or 'long'",
                spec.what
            );
        }
    }
    Ok(())
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
    partitions.min(MAX_PARTITIONS)
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

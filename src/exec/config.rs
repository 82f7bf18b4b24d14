//! [`ScanConfig`]: what a scan computes, fixed when the query is planned.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use crate::filter::TauPredicate;
use crate::gene_filter::GenePredicate;
use crate::group_filter::GroupPredicate;
use crate::kernel::Variant;
use crate::kernel::decision::{Decision, KernelPlan};
use crate::options::KendallOptions;
use crate::schema::{self, GeneIds};
use crate::stats::fdr::FdrMethod;
use crate::stats::pvalue::{Alternative, Continuity, PValueMethod, PValueOptions};

/// What a scan computes, fixed at planning time.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    /// The table function the query called (errors are named after it).
    pub function: &'static str,
    /// tau-a, tau-b or tau-c.
    pub variant: Variant,
    /// Pairs sharing fewer samples than this get NULL tau and p-value.
    pub min_periods: usize,
    /// How the kernel is chosen (resolved once the input is loaded).
    pub kernel: KernelPlan,
    /// The kernel as decided at planning time, when the shape of the input
    /// was known then (shown by `EXPLAIN`).
    pub planned_kernel: Option<Decision>,
    /// How p-values are computed (when a query reads them).
    pub pvalue: PValueMethod,
    /// The alternative hypothesis of p-values.
    pub alternative: Alternative,
    /// R's continuity correction of asymptotic p-values.
    pub continuity: Continuity,
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
    /// of every pair (see `kendall_top_partners`).
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
    /// Grouped samples (`kendall.groups`): the output has a leading `group`
    /// column, and each group's pairs are computed over its samples.
    pub grouped: bool,
    /// Grouped samples: the pushed-down filter on `group` (groups it leaves
    /// out are never computed).
    pub group_predicate: Option<Arc<GroupPredicate>>,
    /// `kendall_candidate_taus`: one row per line of the candidate list, in
    /// its order (`line`, `tau`), from one output partition; the listed
    /// pairs are computed on `partitions` threads.
    pub in_list_order: bool,
}

impl ScanConfig {
    /// What `function` computes under `options`, before a query narrows it:
    /// the kernel planned (bit-planes within `kendall.memory_limit` and
    /// `pool_available`, the pool's room when bounded; at most `anchors`
    /// genes touched when known), one partition, DataFusion's default
    /// batch size, no filter, limit or grouping.
    pub(crate) fn of_options(
        function: &'static str,
        options: &KendallOptions,
        pool_available: Option<usize>,
        anchors: Option<usize>,
    ) -> Result<Self> {
        let simd = options.simd;
        let kernel = KernelPlan {
            choice: options.kernel,
            option_limit: options.memory_limit.bytes() as u64,
            pool_available,
            simd,
            isa: simd.resolve()?,
            anchors,
        };
        Ok(ScanConfig {
            function,
            variant: options.variant,
            min_periods: options.min_periods.get(),
            kernel,
            planned_kernel: None,
            tile_size: options.tile_size.get(),
            partitions: 1,
            batch_size: 8192,
            pvalue: options.pvalue,
            alternative: options.alternative,
            continuity: options.continuity,
            fdr: options.fdr,
            predicate: None,
            gene_predicate: None,
            limit: None,
            top_k: None,
            gene_ids: GeneIds::String,
            filters: Vec::new(),
            cluster: false,
            grouped: false,
            group_predicate: None,
            in_list_order: false,
        })
    }

    /// The columns of the pair (or top-partners) schema among the output
    /// columns `projection`: the same, or for a grouped scan those after
    /// its leading `group` column, moved down by one.
    pub(crate) fn pair_columns(&self, projection: &[usize]) -> Vec<usize> {
        match self.grouped {
            true => projection
                .iter()
                .filter(|&&c| c > 0)
                .map(|&c| c - 1)
                .collect(),
            false => projection.to_vec(),
        }
    }

    /// What the scan's p-values are.
    pub(crate) fn pvalue_options(&self) -> PValueOptions {
        PValueOptions {
            method: self.pvalue,
            alternative: self.alternative,
            continuity: self.continuity,
        }
    }

    /// Whether a scan producing the columns `projection` reads `q_value`
    /// (projected or filtered on).
    pub(crate) fn reads_q_value(&self, projection: &[usize]) -> bool {
        let projection = &self.pair_columns(projection);
        self.top_k.is_none()
            && !self.in_list_order
            && (projection.contains(&schema::pair_column::Q_VALUE)
                || self.predicate.as_ref().is_some_and(|p| p.reads_q_value()))
    }

    /// Whether a scan producing the columns `projection` reads `p_value`
    /// (projected or filtered on), or `q_value` (adjusted p-values).
    pub(crate) fn reads_p_value(&self, projection: &[usize]) -> bool {
        if self.reads_q_value(projection) {
            return true;
        }
        if self.in_list_order {
            return false;
        }
        let projection = &self.pair_columns(projection);
        let column = match self.top_k {
            Some(_) => schema::top_column::P_VALUE,
            None => schema::pair_column::P_VALUE,
        };
        projection.contains(&column) || self.predicate.as_ref().is_some_and(|p| p.reads_p_value())
    }

    /// Partitions the scan's output has: one in list order, else
    /// `partitions`.
    pub(crate) fn output_partitions(&self) -> usize {
        match self.in_list_order {
            true => 1,
            false => self.partitions,
        }
    }

    /// Whether a scan producing the columns `projection` reads `n`.
    pub(crate) fn reads_n(&self, projection: &[usize]) -> bool {
        !self.in_list_order
            && self.pair_columns(projection).contains(&match self.top_k {
                Some(_) => schema::top_column::N,
                None => schema::pair_column::N,
            })
    }

    /// The full output schema of the scan (before projection): with a
    /// leading `group` column when grouped.
    pub(crate) fn output_schema(&self) -> datafusion::arrow::datatypes::SchemaRef {
        let pairs = self.pair_schema();
        match self.grouped {
            true => schema::grouped(&pairs),
            false => pairs,
        }
    }

    /// The schema of one group's pairs (the output's without `group`).
    pub(crate) fn pair_schema(&self) -> datafusion::arrow::datatypes::SchemaRef {
        match self.top_k {
            Some(_) => schema::top_partners_schema(),
            None if self.in_list_order => schema::candidate_taus_schema(),
            None => schema::pair_schema(self.gene_ids),
        }
    }
}

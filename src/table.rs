//! `KendallTable`: the table a `kendall_all_pairs(...)` call stands for.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;

use crate::exec::{KendallExec, ScanConfig};
use crate::filter::{P_VALUE, TAU, TauPredicate};
use crate::gene_filter::GenePredicate;
use crate::input::{FN_NAME, InputSpec, RankedMatrix};
use crate::kernel::{KernelKind, bitset};
use crate::memory;
use crate::options::KendallOptions;

/// The output schema: `gene_i`, `gene_j` (non-null strings), `tau` and
/// `p_value` (Float64; NULL when the pair shares fewer than
/// `kendall.min_periods` samples) and `n` (Int64, the samples the pair
/// shares). `p_value` and `n` are computed only when a query reads them.
pub fn output_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("gene_i", DataType::Utf8, false),
        Field::new("gene_j", DataType::Utf8, false),
        Field::new(TAU, DataType::Float64, true),
        Field::new(P_VALUE, DataType::Float64, true),
        Field::new("n", DataType::Int64, false),
    ]))
}

/// All gene pairs of one expression matrix, as a DataFusion table.
///
/// Filters on `tau`, `p_value` and the gene columns are applied exactly inside
/// the scan; the kernel, variant and tile size come from the session's
/// [`KendallOptions`] at planning time.
#[derive(Debug)]
pub struct KendallTable {
    spec: Arc<InputSpec>,
    schema: SchemaRef,
}

impl KendallTable {
    /// The table over a checked input.
    pub fn new(spec: InputSpec) -> Self {
        Self {
            spec: Arc::new(spec),
            schema: output_schema(),
        }
    }

    /// The input this table reads.
    pub fn input(&self) -> &InputSpec {
        &self.spec
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
        Ok(filters
            .iter()
            .map(|f| {
                if TauPredicate::from_expr(f).is_some() || GenePredicate::from_expr(f).is_some() {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let config = state.config_options();
        let options = KendallOptions::from_config(config);
        let predicate = filters
            .iter()
            .filter_map(TauPredicate::from_expr)
            .reduce(TauPredicate::and);
        // Tau filters compare numbers, gene filters strings: no filter is both.
        let gene_predicate = filters
            .iter()
            .filter_map(GenePredicate::from_expr)
            .reduce(GenePredicate::and);
        let (genes, samples) = (self.spec.genes, self.spec.samples);
        // Bit-planes may take kendall.memory_limit, and no more than the
        // session's memory pool can grant besides the ranks they are built from.
        let option_limit = options.memory_limit.bytes() as u64;
        let ranks = RankedMatrix::fixed_bytes(genes, samples) as u64;
        let pool_room = memory::pool_available(&state.runtime_env().memory_pool)
            .map(|available| (available as u64).saturating_sub(ranks));
        let memory_limit = pool_room.map_or(option_limit, |room| room.min(option_limit));
        let isa = options.simd.resolve()?;
        // Genes a gene-targeted query's pairs must touch (names; at most that many).
        let anchors = gene_predicate
            .as_ref()
            .and_then(GenePredicate::anchors)
            .map(|(i, j)| i.union(&j).count());
        let kernel = options
            .kernel
            .resolve(genes, samples, memory_limit, isa, anchors);
        let planes = bitset::plane_bytes(genes, samples);
        if kernel == KernelKind::Bitset && planes > memory_limit {
            let over = match pool_room {
                Some(room) if room < option_limit => format!(
                    "over the {room} bytes DataFusion's memory pool can grant besides the {ranks} \
                     bytes of ranks (datafusion.runtime.memory_limit)"
                ),
                _ => format!("over kendall.memory_limit = {option_limit}"),
            };
            return plan_err!(
                "{FN_NAME}: the bitset kernel needs {planes} bytes of bit-planes for {genes} genes x \
                 {samples} samples, {over}; raise the limit or SET kendall.kernel = 'auto'"
            );
        }
        let scan = ScanConfig {
            variant: options.variant,
            min_periods: options.min_periods.get(),
            kernel,
            isa,
            tile_size: options.tile_size.get(),
            partitions: config.execution.target_partitions.max(1),
            batch_size: usize::from(config.execution.batch_size).max(1),
            pvalue: options.pvalue,
            predicate: predicate.map(Arc::new),
            gene_predicate: gene_predicate.map(Arc::new),
            limit,
        };
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        Ok(Arc::new(KendallExec::try_new(
            Arc::clone(&self.spec),
            scan,
            projection,
        )?))
    }
}

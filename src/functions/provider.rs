//! [`KendallTable`]: the table a call of any Kendall table function stands
//! for, as DataFusion sees it.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;

use super::scan::{guard_panics, pushdown};
use super::{Call, KendallAllPairs, KendallFunction, function};
use crate::exec::KendallExec;
use crate::exec::ScanConfig;
use crate::group_filter::GroupPredicate;
use crate::input::{self, GroupsSpec};
use crate::options::KendallOptions;
use crate::schema;
use crate::schema::{ALL_PAIRS, GeneIds};

/// The pairs of a call of a Kendall table function, as a DataFusion table.
///
/// The sources (registered tables or views, or locations) are resolved and
/// their schemas checked when the query is planned ([`TableProvider::scan`]):
/// the plan's inputs are then the sources' own DataFusion scans, reading
/// only the columns needed. Filters on `tau`, `p_value`, `q_value` and the
/// gene columns are applied exactly inside the scan (where the function
/// takes them); the kernel, variant and tile size come from the session's
/// [`KendallOptions`] at planning time.
#[derive(Debug)]
pub struct KendallTable {
    function: &'static dyn KendallFunction,
    call: Call,
    schema: SchemaRef,
}

impl KendallTable {
    /// The table of `call`; an error when `call` names no function of ours.
    pub fn from_call(call: Call) -> Result<Self> {
        let function = function(call.function).ok_or_else(|| {
            DataFusionError::Plan(format!("no Kendall table function '{}'", call.function))
        })?;
        let schema = table_schema(function, &call);
        Ok(Self {
            function,
            call,
            schema,
        })
    }

    /// The `kendall_all_pairs` table over `source` (a registered table or
    /// view, or a location), with the column names of the layout (`names`,
    /// possibly none).
    pub fn new(source: String, names: Vec<String>) -> Self {
        let call = Call {
            function: ALL_PAIRS,
            sources: vec![source],
            names: vec![names],
            k: None,
            gene_ids: GeneIds::String,
            groups: None,
        };
        Self {
            function: &KendallAllPairs,
            schema: KendallAllPairs.schema(&call),
            call,
        }
    }

    /// The same table with its gene columns typed as `gene_ids` says.
    pub fn with_gene_ids(mut self, gene_ids: GeneIds) -> Self {
        self.call.gene_ids = gene_ids;
        self.schema = table_schema(self.function, &self.call);
        self
    }

    /// The call this table stands for.
    pub fn call(&self) -> &Call {
        &self.call
    }

    /// The (first) source as the query named it.
    pub fn source(&self) -> &str {
        &self.call.sources[0]
    }

    /// The column names given after the (first) source.
    pub fn column_names(&self) -> &[String] {
        &self.call.names[0]
    }

    /// How the gene columns are typed.
    pub fn gene_ids(&self) -> GeneIds {
        self.call.gene_ids
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
        let grouped = self.call.groups.is_some();
        Ok(match self.function.pushes_down_filters() {
            true => pushdown(filters, grouped),
            // A filter on `group` only picks groups: it changes nothing
            // within one.
            false => filters
                .iter()
                .map(
                    |f| match grouped && GroupPredicate::from_expr(f).is_some() {
                        true => TableProviderFilterPushDown::Exact,
                        false => TableProviderFilterPushDown::Unsupported,
                    },
                )
                .collect(),
        })
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut sources = self.call.sources.clone();
        sources.extend(self.call.groups.iter().cloned());
        let mut planned = guard_panics(self.function.name(), &sources, async {
            let mut planned = self
                .function
                .plan(&self.call, state, filters, limit)
                .await?;
            if let Some(source) = &self.call.groups {
                planned.groups = Some(plan_groups(state, source).await?);
                group_config(&mut planned.config, filters);
            }
            Ok(planned)
        })
        .await?;
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let groups = planned.groups.take();
        let exec = KendallExec::try_new(planned.spec, planned.input, planned.config, projection)?;
        let exec = match groups {
            Some((spec, scan)) => exec.with_groups(spec, scan),
            None => exec,
        };
        let exec = match planned.right {
            Some((spec, input)) => exec.with_right(spec, input),
            None => exec,
        };
        Ok(Arc::new(match planned.pair_list {
            Some((spec, pairs)) => exec.with_pair_list(spec, pairs),
            None => exec,
        }))
    }
}

/// The output schema of `call`: `function`'s, with a leading `group`
/// column when the call groups samples.
fn table_schema(function: &dyn KendallFunction, call: &Call) -> SchemaRef {
    let pairs = function.schema(call);
    match call.groups {
        Some(_) => schema::grouped(&pairs),
        None => pairs,
    }
}

/// The groups source `source` (`kendall.groups`) resolved, its first two
/// columns checked and their scan planned.
async fn plan_groups(
    state: &dyn Session,
    source: &str,
) -> Result<(Arc<GroupsSpec>, Arc<dyn ExecutionPlan>)> {
    let options = KendallOptions::from_config(state.config_options())?;
    let resolved = input::resolve(state, source, options.format).await?;
    let spec = GroupsSpec::inspect(&resolved.what, &resolved.provider.schema())?;
    let scan = resolved
        .provider
        .scan(state, Some(&vec![0, 1]), &[], None)
        .await?;
    Ok((Arc::new(spec), scan))
}

/// A grouped call's scan settings: grouped, the pushed-down filter on
/// `group` (also among the filters a cluster's plan carries), the kernel
/// decided per group once loaded (a group's samples are fewer), and no
/// row limit per partition (a partition's rows span the groups).
fn group_config(config: &mut ScanConfig, filters: &[datafusion::logical_expr::Expr]) {
    config.grouped = true;
    config.group_predicate = GroupPredicate::of(filters).map(Arc::new);
    config.filters.extend(
        filters
            .iter()
            .filter(|f| GroupPredicate::from_expr(f).is_some())
            .cloned(),
    );
    config.planned_kernel = None;
    config.limit = None;
}

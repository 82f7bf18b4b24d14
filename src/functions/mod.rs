//! The table functions, each described once ([`KendallFunction`]), and the
//! one list of them ([`FUNCTIONS`]) that [`crate::register`], the FFI, the
//! Ballista codec and the Python package read.
//!
//! A function reads its arguments into a [`Call`] when a query names it,
//! gives the call's output schema, and plans the call's scan. Everything
//! else is shared: the table provider ([`KendallTable`]) that DataFusion
//! sees, filter pushdown, errors named after the function, and the plan
//! node ([`KendallExec`](crate::exec::KendallExec)) that computes the pairs.
//!
//! Adding a function: a file here with a unit struct implementing
//! [`KendallFunction`] (and DataFusion's `TableFunctionImpl` through
//! `table_function_impl!`), its name in [`crate::schema`], and an entry in
//! [`FUNCTIONS`].

mod all_pairs;
pub mod args;
mod candidate_pairs;
mod candidate_taus;
mod cross_pairs;
pub mod provider;
pub mod scan;
mod top_partners;

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionImpl};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

pub use all_pairs::KendallAllPairs;
pub use candidate_pairs::KendallCandidatePairs;
pub use candidate_taus::KendallCandidateTaus;
pub use cross_pairs::KendallCrossPairs;
pub use provider::KendallTable;
pub use top_partners::KendallTopPartners;

use crate::exec::ScanConfig;
use crate::input::{InputSpec, PairListSpec};
use crate::options::KendallOptions;
use crate::schema::GeneIds;

/// What a query's call of a table function asks for: its arguments, read
/// once when the query is planned (and what a plan shipped to a cluster
/// carries, see [`crate::ballista`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The function's SQL name.
    pub function: &'static str,
    /// The sources (tables, views or locations): one, two for cross pairs,
    /// a candidate list and one or two matrices for candidate pairs.
    pub sources: Vec<String>,
    /// The column names given for each source, in the order of `sources`.
    pub names: Vec<Vec<String>>,
    /// Top partners: how many partners per gene.
    pub k: Option<usize>,
    /// How the gene columns are typed (fixed at the call: the schema
    /// depends on it).
    pub gene_ids: GeneIds,
    /// `kendall.groups` at the call: the source of (sample, group) rows
    /// whose groups are computed one by one (the schema gains a leading
    /// `group` column).
    pub groups: Option<String>,
}

/// A planned call: the scans of its sources and what the plan computes.
pub struct PlannedCall {
    /// The (left) source's columns and layout.
    pub spec: Arc<InputSpec>,
    /// The (left) source's own DataFusion scan.
    pub input: Arc<dyn ExecutionPlan>,
    /// Cross pairs: the right source's columns and scan.
    pub right: Option<(Arc<InputSpec>, Arc<dyn ExecutionPlan>)>,
    /// Candidate pairs: the list's id columns and scan.
    pub pair_list: Option<(Arc<PairListSpec>, Arc<dyn ExecutionPlan>)>,
    /// What the scan computes.
    pub config: ScanConfig,
    /// Grouped samples (`kendall.groups`): the groups source's columns and
    /// scan (planned by the table provider, `None` from the functions).
    pub groups: Option<(Arc<crate::input::GroupsSpec>, Arc<dyn ExecutionPlan>)>,
}

/// One Kendall table function: its name, its arguments, its schema and how
/// its scan is planned.
#[async_trait]
pub trait KendallFunction: Debug + Send + Sync + 'static {
    /// The SQL name (from [`crate::schema`]).
    fn name(&self) -> &'static str;

    /// How the function is called, for messages about its arguments: the
    /// signature and what each argument is, e.g. `(source [, column names])
    /// takes string literals: ...`.
    fn usage(&self) -> &'static str;

    /// Reads the arguments of a call (constant expressions) with the
    /// session's options.
    fn call(&self, args: &[Expr], options: &KendallOptions) -> Result<Call>;

    /// The output schema of `call`.
    fn schema(&self, call: &Call) -> SchemaRef;

    /// Whether filters on the pair columns (tau, p- and q-values, the gene
    /// columns) are applied in the scan. Top partners takes none: a filter
    /// on tau would change which partners are the strongest.
    fn pushes_down_filters(&self) -> bool {
        true
    }

    /// Plans the scan of `call` with the pushed-down `filters` and `limit`.
    async fn plan(
        &self,
        call: &Call,
        state: &dyn Session,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<PlannedCall>;
}

/// Every table function of this crate: what is registered, exported through
/// the FFI, decoded by the codec and listed by the Python package.
pub static FUNCTIONS: &[&dyn KendallFunction] = &[
    &KendallAllPairs,
    &KendallTopPartners,
    &KendallCrossPairs,
    &KendallCandidatePairs,
    &KendallCandidateTaus,
];

/// The function named `name`, if it is one of ours.
pub fn function(name: &str) -> Option<&'static dyn KendallFunction> {
    FUNCTIONS.iter().copied().find(|f| f.name() == name)
}

/// Every function as DataFusion's `TableFunctionImpl`, with its SQL name.
pub fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    FUNCTIONS
        .iter()
        .map(|&f| {
            let function: Arc<dyn TableFunctionImpl> = Arc::new(TableFunction(f));
            (f.name(), function)
        })
        .collect()
}

/// A [`KendallFunction`] as DataFusion's `TableFunctionImpl`: reads the
/// call with the session's options and returns its [`KendallTable`].
#[derive(Debug, Clone, Copy)]
pub struct TableFunction(pub &'static dyn KendallFunction);

impl TableFunctionImpl for TableFunction {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> Result<Arc<dyn datafusion::catalog::TableProvider>> {
        let options = KendallOptions::from_config(args.session().config_options())?;
        let mut call = self.0.call(args.exprs(), &options)?;
        call.groups = options.groups_source();
        Ok(Arc::new(KendallTable::from_call(call)?))
    }
}

/// Implements DataFusion's `TableFunctionImpl` for a [`KendallFunction`]
/// unit struct (so that it can be registered on its own, under any name).
macro_rules! table_function_impl {
    ($t:ident) => {
        impl datafusion::catalog::TableFunctionImpl for $t {
            fn call_with_args(
                &self,
                args: datafusion::catalog::TableFunctionArgs,
            ) -> datafusion::error::Result<std::sync::Arc<dyn datafusion::catalog::TableProvider>>
            {
                $crate::functions::TableFunction(&$t).call_with_args(args)
            }
        }
    };
}
pub(crate) use table_function_impl;

//! Tables this library made, recognised by what they are, never by what
//! their schemas say.
//!
//! A sparse table (Python's, an HDF5 file's, a 10x directory's) is read in
//! place by a Kendall query (its arrays, its matrix file) rather than as
//! the triples its scan yields.
//! That shortcut is only right for the table itself: a view, a filter, a
//! projection or a `CREATE TABLE AS` copy of it has other rows, and DataFusion
//! carries a schema's metadata through all of them, so a table found again
//! by its schema would be swapped back for its source. Here a provider is
//! one of ours only when it *is* one (a downcast), and a plan only when it
//! is our own scan, possibly under operators that move rows without
//! changing them ([`PASS_THROUGH`]).
//!
//! Through the FFI (a table registered in a Python `SessionContext`), a
//! provider or plan of this library comes back as itself: `datafusion-ffi`
//! unwraps a handle made by the same library. What the host made of it (a
//! view, a filter) comes back as a foreign wrapper, which is not ours.

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::physical_plan::ExecutionPlan;

/// Operators that pass their input's rows on unchanged (only batches and
/// partitions differ), by name: a host's copy of DataFusion may put them
/// over our scan, and they come back through the FFI as foreign plans known
/// by name only.
const PASS_THROUGH: [&str; 4] = [
    "CoalesceBatchesExec",
    "CoalescePartitionsExec",
    "CooperativeExec",
    "RepartitionExec",
];

/// `provider` as this library's table type `T`, when it is one (not when
/// it is only derived from one).
pub(crate) fn own_table<T: TableProvider>(provider: &dyn TableProvider) -> Option<&T> {
    provider.downcast_ref::<T>()
}

/// The scan `plan` is, as this library's plan type `T`: `plan` itself, or
/// the single input of operators in [`PASS_THROUGH`]; `None` for any
/// other plan (a filter, a projection, a memory table holding copied rows).
pub(crate) fn own_scan<T: ExecutionPlan>(plan: &dyn ExecutionPlan) -> Option<&T> {
    let mut node = plan;
    loop {
        if let Some(own) = node.downcast_ref::<T>() {
            return Some(own);
        }
        match node.children().as_slice() {
            [child] if PASS_THROUGH.contains(&node.name()) => node = Arc::as_ref(*child),
            _ => return None,
        }
    }
}

//! What resolving a source gives: the table to scan and how to name it.

use std::sync::Arc;

use datafusion::catalog::TableProvider;

/// An input ready to be scanned.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The table: the registered one, or a listing table over the location.
    pub provider: Arc<dyn TableProvider>,
    /// How errors name it: `table 'expr'` or `'data/expr.tsv.gz'`.
    pub what: String,
    /// A sparse matrix (a
    /// [`SparseTable`](crate::input::sparse_table::SparseTable): a 10x
    /// directory, an HDF5 file, Python's sparse matrix): (gene, sample,
    /// value) triples, read with the `long` layout and absent entries as zero.
    pub sparse: bool,
}

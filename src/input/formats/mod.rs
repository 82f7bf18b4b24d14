//! The formats an input may come in, one file each, and the one place a
//! source is resolved ([`resolve`]): each format in turn says whether the
//! source is its own, and the first that does reads it.
//!
//! | file | a source is its own when | read as |
//! |------|--------------------------|---------|
//! | `session.rs` | a table or view of that name is registered in the session | the table |
//! | `tenx.rs` | a local directory holds `matrix.mtx[.gz]` (10x Genomics) | a sparse table, its entries read when loaded |
//! | `hdf5/` | a local file is named `.h5ad` or `.h5` (feature `hdf5`) | a sparse table, read when planned |
//! | `listing.rs` | anything else: a file, directory, glob or URL | Parquet, CSV or TSV listing tables |
//!
//! A new format is one file here plus one line in [`resolve`].
//! `resolved.rs` holds what every format gives, [`Resolved`]; `mtx.rs` is
//! the MatrixMarket parser and name-file reader that 10x directories are
//! read with (a sparse matrix format in files is a
//! [`MatrixFile`](crate::input::sparse_table) of a
//! [`SparseTable`](crate::input::sparse_table::SparseTable)).

mod hdf5;
pub(super) mod listing;
mod mtx;
mod resolved;
mod session;
pub mod tenx;

use datafusion::catalog::Session;
use datafusion::error::Result;

pub use listing::InputFormat;
pub use resolved::Resolved;

/// The table `source` names: the first format ([module docs](self)) that
/// claims it, a location in Parquet, CSV or TSV (as `format` says)
/// otherwise. A registered name comes first, as in DataFusion.
pub async fn resolve(state: &dyn Session, source: &str, format: InputFormat) -> Result<Resolved> {
    if let Some(found) = session::open(state, source).await? {
        return Ok(found);
    }
    if let Some(found) = tenx::open(source)? {
        return Ok(found);
    }
    if let Some(found) = hdf5::open(state, source).await? {
        return Ok(found);
    }
    listing::open(state, source, format).await
}

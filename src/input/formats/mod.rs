//! The formats an input may come in, one file each, and the one place a
//! source is resolved ([`resolve`]): each format in turn says whether the
//! source is its own, and the first that does reads it.
//!
//! | file | a source is its own when | read as |
//! |------|--------------------------|---------|
//! | `session.rs` | a table or view of that name is registered in the session | the table |
//! | `tenx.rs` | a local directory holds `matrix.mtx[.gz]` (10x Genomics) | a sparse table, its entries read when loaded |
//! | `mtx_source.rs` | a local file is named `.mtx` or `.mtx.gz` (name files beside it) | a sparse table, its entries read when loaded |
//! | `hdf5/` | a local file is named `.h5ad` or `.h5` (feature `hdf5`) | a sparse table, read when planned |
//! | `listing.rs` | anything else: a file, directory, glob or URL | Parquet, CSV or TSV listing tables |
//!
//! A new format is one file here plus one line in [`resolve`].
//! `resolved.rs` holds what every format gives, [`Resolved`]; `mtx.rs` is
//! the MatrixMarket parser and name-file reader, and `matrix_files.rs` a
//! MatrixMarket file with its name files as a sparse table's source (a
//! [`MatrixFile`](crate::input::sparse_table) of a
//! [`SparseTable`](crate::input::sparse_table::SparseTable)): what both a
//! plain `.mtx` file and a 10x directory are. `mtx_source.rs` also holds
//! the table format `STORED AS MTX` ([`MtxTableFactory`]).

mod hdf5;
pub(super) mod listing;
mod matrix_files;
mod mtx;
mod mtx_source;
mod resolved;
mod session;
pub mod tenx;

use datafusion::catalog::Session;
use datafusion::error::Result;

pub use listing::InputFormat;
pub use matrix_files::{MatrixFiles, Orientation};
pub use mtx_source::{MTX_FILE_TYPE, MtxTableFactory};
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
    if let Some(found) = mtx_source::open(source)? {
        return Ok(found);
    }
    if let Some(found) = hdf5::open(state, source).await? {
        return Ok(found);
    }
    listing::open(state, source, format).await
}

//! AnnData `.h5ad` and 10x Genomics `.h5` files (feature `hdf5`).
//!
//! Recognised by the name's extension (any case), when it is a local file,
//! not a directory; read when the query is planned, by `read` (and
//! `read/grouping.rs`, which groups the file's entries by gene), into a
//! [`SparseTable`](crate::input::sparse_table::SparseTable). A build
//! without the feature refuses such a file with a message saying how to
//! read it.

use datafusion::catalog::Session;
use datafusion::error::Result;

use super::resolved::Resolved;
use crate::error::plan_error;

#[cfg(feature = "hdf5")]
mod read;

/// An HDF5 file, by the extension of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hdf5Kind {
    /// `.h5ad`: AnnData.
    AnnData,
    /// `.h5`: 10x Genomics (Cell Ranger v3+), or AnnData when it holds `X`.
    Tenx,
}

impl Hdf5Kind {
    /// The kind of file `source` names by its extension (any case), when
    /// it is not a directory.
    fn of_name(source: &str) -> Option<Self> {
        let lower = source.to_ascii_lowercase();
        let kind = if lower.ends_with(".h5ad") {
            Self::AnnData
        } else if lower.ends_with(".h5") {
            Self::Tenx
        } else {
            return None;
        };
        let path = source.strip_prefix("file://").unwrap_or(source);
        (!std::path::Path::new(path).is_dir()).then_some(kind)
    }

    /// How messages name a file of this kind.
    fn label(self) -> &'static str {
        match self {
            Self::AnnData => "h5ad file",
            Self::Tenx => "h5 file",
        }
    }
}

/// The HDF5 file `source` names, read now as a sparse table; `None` when
/// its name is not that of an HDF5 file.
pub(super) async fn open(state: &dyn Session, source: &str) -> Result<Option<Resolved>> {
    match Hdf5Kind::of_name(source) {
        Some(kind) => hdf5_file(state, source, kind).await.map(Some),
        None => Ok(None),
    }
}

/// The error for an HDF5 file in a build without the `hdf5` feature.
#[cfg_attr(feature = "hdf5", allow(dead_code))]
fn without_hdf5(source: &str, kind: Hdf5Kind) -> datafusion::error::DataFusionError {
    plan_error(format!(
        "cannot read {} '{source}': this build reads no HDF5 files; build datafusion-kendall \
         with its default feature `hdf5` (a pure-Rust reader, nothing to install first), or convert \
         the file in Python (docs/single-cell.md)",
        kind.label()
    ))
}

/// The HDF5 file `source` (a local path) as a sparse table, read now.
#[cfg(feature = "hdf5")]
async fn hdf5_file(state: &dyn Session, source: &str, kind: Hdf5Kind) -> Result<Resolved> {
    let what = format!("{} '{source}'", kind.label());
    if super::listing::is_glob(source) || (source.contains("://") && !source.starts_with("file://"))
    {
        return Err(plan_error(format!(
            "cannot read {what}: HDF5 files are read from a local path, one file at a time"
        )));
    }
    let path = std::path::PathBuf::from(source.strip_prefix("file://").unwrap_or(source));
    let memory = crate::memory::QueryMemory::new(
        std::sync::Arc::clone(&state.runtime_env().memory_pool),
        "HDF5 reader",
        &what,
    );
    let named = what.clone();
    let may_be_tenx = kind == Hdf5Kind::Tenx;
    let table =
        tokio::task::spawn_blocking(move || read::read(&path, may_be_tenx, &named, &memory))
            .await
            .map_err(|e| plan_error(format!("reading {what} failed: {e}")))??;
    Ok(Resolved {
        provider: std::sync::Arc::new(table),
        what,
        sparse: true,
    })
}

/// The HDF5 file `source`: an error saying to build with the feature.
#[cfg(not(feature = "hdf5"))]
async fn hdf5_file(_state: &dyn Session, source: &str, kind: Hdf5Kind) -> Result<Resolved> {
    Err(without_hdf5(source, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdf5_files_by_name_and_the_message_without_the_feature() {
        assert_eq!(Hdf5Kind::of_name("a/X.H5AD"), Some(Hdf5Kind::AnnData));
        assert_eq!(Hdf5Kind::of_name("file:///a/x.h5"), Some(Hdf5Kind::Tenx));
        assert_eq!(Hdf5Kind::of_name("x.h5.parquet"), None);
        assert_eq!(Hdf5Kind::of_name("x.hdf5"), None);
        let msg = without_hdf5("x.h5ad", Hdf5Kind::AnnData).to_string();
        for needle in ["h5ad file 'x.h5ad'", "feature `hdf5`", "nothing to install"] {
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
    }
}

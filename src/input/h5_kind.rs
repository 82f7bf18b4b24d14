//! Which HDF5 files are inputs, by their names: one home for the rule the
//! source resolution and the reader (`h5`, feature `hdf5`) both follow.

/// An HDF5 file, by the extension of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hdf5Kind {
    /// `.h5ad`: AnnData.
    AnnData,
    /// `.h5`: 10x Genomics (Cell Ranger v3+), or AnnData when it holds `X`.
    Tenx,
}

impl Hdf5Kind {
    /// The kind of file `source` names by its extension (any case), when
    /// it is not a directory.
    pub(crate) fn of_name(source: &str) -> Option<Self> {
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
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::AnnData => "h5ad file",
            Self::Tenx => "h5 file",
        }
    }
}

//! A plain MatrixMarket file (`.mtx` or `.mtx.gz`, a local path) as a
//! source, in two forms:
//! - its path passed to a table function: the name files are found beside
//!   it by name ([`sidecar`]): for `dir/x.mtx` (or `dir/x.mtx.gz`), the row
//!   names in `dir/x.rows.txt` and the optional column names in
//!   `dir/x.columns.txt` (`.tsv` instead of `.txt`, and `.gz` after either,
//!   are found too); rows are genes;
//! - a table: `CREATE EXTERNAL TABLE t STORED AS MTX LOCATION 'x.mtx'
//!   OPTIONS ('rows' 'genes.txt', 'columns' 'cells.txt', 'orientation'
//!   'genes_by_cells')` ([`MtxTableFactory`]), any name files, either
//!   orientation.
//!
//! Either is a [`SparseTable`](crate::input::sparse_table::SparseTable)
//! over the files (`matrix_files.rs`): the genes' name file is required,
//! the cells' optional (without it, cells are named by their position,
//! from 1).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::CreateExternalTable;

use super::matrix_files::{MatrixFiles, Orientation};
use super::resolved::Resolved;
use crate::error::plan_error;

/// The options of `STORED AS MTX`.
const OPTIONS: [&str; 3] = ["rows", "columns", "orientation"];

/// Whether `source` is named as a MatrixMarket file (`.mtx`, `.mtx.gz`,
/// any case).
fn is_mtx_name(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    lower.ends_with(".mtx") || lower.ends_with(".mtx.gz")
}

/// The local path `source` names (a path or a `file://` URL); an error for
/// another URL.
fn local_path(source: &str, what: &str) -> Result<PathBuf> {
    if let Some(path) = source.strip_prefix("file://") {
        return Ok(PathBuf::from(path));
    }
    if source.contains("://") {
        return Err(plan_error(format!(
            "cannot read {what}: MatrixMarket files are read from a local path (or a file:// \
             URL); copy it from its store first"
        )));
    }
    Ok(PathBuf::from(source))
}

/// The MatrixMarket file `source` names, with its name files found beside
/// it ([`sidecar`]), as a sparse table; `None` when the name is not that of
/// a `.mtx` file, or it is a directory.
pub(super) fn open(source: &str) -> Result<Option<Resolved>> {
    if !is_mtx_name(source) {
        return Ok(None);
    }
    let what = format!("mtx file '{source}'");
    let path = local_path(source, &what)?;
    if path.is_dir() {
        return Ok(None);
    }
    if let Err(e) = std::fs::metadata(&path) {
        return Err(plan_error(format!("cannot open {what}: {e}")));
    }
    let rows = sidecar(&path, "rows").ok_or_else(|| {
        plan_error(format!(
            "{what} has no row names beside it: looked for {}; name the file with \
             CREATE EXTERNAL TABLE t STORED AS MTX LOCATION '{source}' OPTIONS ('rows' '...')",
            sidecar_names(&path, "rows").join(", ")
        ))
    })?;
    let files = MatrixFiles {
        label: what.clone(),
        matrix: path.clone(),
        rows: Some(rows),
        columns: sidecar(&path, "columns"),
        orientation: Orientation::GenesByCells,
    };
    Ok(Some(Resolved {
        provider: Arc::new(files.table()?),
        what,
        sparse: true,
    }))
}

/// Where the `role` (`rows`, `columns`) name file of the MatrixMarket file
/// `path` may be, in the order they are looked for: for `x.mtx` or
/// `x.mtx.gz`, `x.<role>.txt`, `x.<role>.txt.gz`, `x.<role>.tsv`,
/// `x.<role>.tsv.gz`.
fn sidecar_names(path: &Path, role: &str) -> Vec<String> {
    let name = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let lower = name.to_ascii_lowercase();
    let stem_len = lower
        .strip_suffix(".gz")
        .unwrap_or(&lower)
        .strip_suffix(".mtx")
        .map_or(name.len(), str::len);
    let stem = &name[..stem_len];
    ["txt", "txt.gz", "tsv", "tsv.gz"]
        .iter()
        .map(|ext| format!("{stem}.{role}.{ext}"))
        .collect()
}

/// The first of [`sidecar_names`] that is a file beside `path`.
fn sidecar(path: &Path, role: &str) -> Option<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new(""));
    sidecar_names(path, role)
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// `CREATE EXTERNAL TABLE t STORED AS MTX LOCATION 'x.mtx[.gz]' OPTIONS
/// (...)`: a MatrixMarket file as a sparse table, its name files as the
/// options say:
/// - `'rows'`: the name file of the matrix's rows (one name per line, the
///   first tab-separated field);
/// - `'columns'`: the name file of its columns; without it the columns (or,
///   when they are the genes, an error) are named by position, from 1;
/// - `'orientation'`: `'genes_by_cells'` (rows are genes, the default) or
///   `'cells_by_genes'`.
///
/// The genes' name file is required. Paths are as given (relative ones
/// from the working directory). An unknown option, a missing file, or a
/// name file of the wrong length is an error naming it.
#[derive(Debug, Default, Clone, Copy)]
pub struct MtxTableFactory;

/// The name `STORED AS` takes.
pub const MTX_FILE_TYPE: &str = "MTX";

#[async_trait]
impl TableProviderFactory for MtxTableFactory {
    async fn create(
        &self,
        _state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        let location = match cmd.locations.as_slice() {
            [one] => one,
            more => {
                return Err(plan_error(format!(
                    "STORED AS MTX reads one file, got {} locations",
                    more.len()
                )));
            }
        };
        if !cmd.schema.fields().is_empty() || !cmd.table_partition_cols.is_empty() {
            return Err(plan_error(
                "STORED AS MTX takes no column list: its columns are gene, sample and value"
                    .to_string(),
            ));
        }
        let files = mtx_files(location, &cmd.options)?;
        Ok(Arc::new(files.table()?))
    }
}

/// The files `CREATE EXTERNAL TABLE ... STORED AS MTX LOCATION 'location'
/// OPTIONS (options)` names, each checked to exist.
fn mtx_files(
    location: &str,
    options: &std::collections::HashMap<String, String>,
) -> Result<MatrixFiles> {
    let what = format!("mtx file '{location}'");
    let matrix = local_path(location, &what)?;
    let exists = |path: &Path, whose: &str| -> Result<()> {
        std::fs::metadata(path)
            .map(drop)
            .map_err(|e| plan_error(format!("STORED AS MTX: cannot open {whose}: {e}")))
    };
    exists(&matrix, &format!("'{location}'"))?;
    let (mut rows, mut columns, mut orientation) = (None, None, Orientation::default());
    let mut keys: Vec<&String> = options.keys().collect();
    keys.sort();
    for key in keys {
        let value = &options[key];
        let option = key.strip_prefix("format.").unwrap_or(key);
        match option {
            "rows" | "columns" => {
                let path = local_path(value, &format!("option '{option}' ('{value}')"))?;
                exists(&path, &format!("'{value}' (option '{option}')"))?;
                *(if option == "rows" {
                    &mut rows
                } else {
                    &mut columns
                }) = Some(path);
            }
            "orientation" => {
                orientation = value.parse().map_err(|e: DataFusionError| {
                    plan_error(format!("STORED AS MTX: {}", e.message()))
                })?
            }
            _ => {
                return Err(plan_error(format!(
                    "STORED AS MTX: unknown option '{option}'; the options are {}",
                    OPTIONS.map(|o| format!("'{o}'")).join(", ")
                )));
            }
        }
    }
    let (genes, gene_option) = match orientation {
        Orientation::GenesByCells => (&rows, "rows"),
        Orientation::CellsByGenes => (&columns, "columns"),
    };
    if genes.is_none() {
        return Err(plan_error(format!(
            "STORED AS MTX: option '{gene_option}' (the file of gene names, one per line) is \
             required with orientation '{orientation}'"
        )));
    }
    Ok(MatrixFiles {
        label: what,
        matrix,
        rows,
        columns,
        orientation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_files_beside_a_matrix() {
        let names = sidecar_names(Path::new("d/RNA.MTX.gz"), "rows");
        assert_eq!(
            names,
            [
                "RNA.rows.txt",
                "RNA.rows.txt.gz",
                "RNA.rows.tsv",
                "RNA.rows.tsv.gz"
            ]
        );
        assert_eq!(
            sidecar_names(Path::new("a.mtx"), "columns")[0],
            "a.columns.txt"
        );
        assert!(is_mtx_name("x.Mtx") && is_mtx_name("file:///x.mtx.gz"));
        assert!(!is_mtx_name("x.mtx.bz2") && !is_mtx_name("x.tsv"));
    }
}

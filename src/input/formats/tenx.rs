//! 10x Genomics matrix directories (Cell Ranger's `filtered_feature_bc_matrix/`):
//! `matrix.mtx`, `features.tsv` (or `genes.tsv`) and `barcodes.tsv`, each
//! plain or gzip-compressed, as an input: a MatrixMarket file and its two
//! name files (`matrix_files.rs`, read by `mtx.rs`).
//!
//! The MatrixMarket file is a sparse coordinate matrix of counts with
//! features (genes) as rows and barcodes (cells) as columns; entries not
//! listed are 0. The directory becomes a [`SparseTable`] (the table type of
//! every sparse source) whose entries stay in the files
//! (a `MatrixFile`): as a table, `(gene, sample, value)` triples, which the
//! `long` layout reads with absent entries as 0 (the layout and
//! `kendall.absent = 'zero'` are implied); a Kendall query whose input is
//! the table itself reads the entries straight into its matrix. Gene ids
//! are the first column of `features.tsv`, sample ids the barcodes. Genes
//! come in the order of `features.tsv`; a gene or cell without any entry
//! (all zeros) is kept, as one explicit zero.
//!
//! The size line and the lengths of `features.tsv` and `barcodes.tsv` are
//! checked when the query is planned; the entries are read when the input is
//! loaded, grouped by gene as long triples are (`SparseValues::group`). A
//! malformed file (bad
//! header, an index out of range, fewer or more entries than the size line
//! says, a features or barcodes file of the wrong length, an entry given
//! twice, an id repeated) is an error naming the file (and the line).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::error::Result;

use super::matrix_files::{MatrixFiles, Orientation};
use super::mtx::{error, file_name};
use super::resolved::Resolved;
use crate::input::sparse_table::SparseTable;

/// The three files of a 10x matrix directory.
#[derive(Debug, Clone)]
pub struct TenxFiles {
    /// The directory as the query named it.
    pub dir: String,
    matrix: PathBuf,
    features: PathBuf,
    barcodes: PathBuf,
}

/// The 10x directory `source` names, as a sparse table; `None` when it is
/// not one.
pub(super) fn open(source: &str) -> Result<Option<Resolved>> {
    let Some(files) = detect(source)? else {
        return Ok(None);
    };
    Ok(Some(Resolved {
        provider: Arc::new(TenxTable::try_new(files)?),
        what: format!("10x directory '{source}'"),
        sparse: true,
    }))
}

/// The 10x files in `location`, when it is a local directory holding
/// `matrix.mtx[.gz]`; `None` for anything else. An error when the matrix is
/// there but a companion file is not.
pub fn detect(location: &str) -> Result<Option<TenxFiles>> {
    let path = location.strip_prefix("file://").unwrap_or(location);
    let dir = Path::new(path);
    if !dir.is_dir() {
        return Ok(None);
    }
    let find = |names: &[&str]| {
        names
            .iter()
            .flat_map(|n| [dir.join(n), dir.join(format!("{n}.gz"))])
            .find(|p| p.is_file())
    };
    let Some(matrix) = find(&["matrix.mtx"]) else {
        return Ok(None);
    };
    let features = find(&["features.tsv", "genes.tsv"]).ok_or_else(|| {
        error(format!(
            "10x directory '{location}' has {} but no features.tsv(.gz) or genes.tsv(.gz)",
            file_name(&matrix)
        ))
    })?;
    let barcodes = find(&["barcodes.tsv"]).ok_or_else(|| {
        error(format!(
            "10x directory '{location}' has {} but no barcodes.tsv(.gz)",
            file_name(&matrix)
        ))
    })?;
    Ok(Some(TenxFiles {
        dir: location.to_string(),
        matrix,
        features,
        barcodes,
    }))
}

/// A 10x directory as a table: the [`SparseTable`] over its files. (A
/// name kept for its path; the table is a `SparseTable`.)
#[derive(Debug)]
pub struct TenxTable;

impl TenxTable {
    /// The sparse table over `files`, its shape checked now (the header,
    /// size line and the lengths of the features and barcodes files); its
    /// entries are read each time a query reads it.
    pub fn try_new(files: TenxFiles) -> Result<SparseTable> {
        MatrixFiles {
            label: format!("10x directory '{}'", files.dir),
            matrix: files.matrix,
            rows: Some(files.features),
            columns: Some(files.barcodes),
            orientation: Orientation::GenesByCells,
        }
        .table()
    }
}

/// The scan of a 10x directory's table: the scan of every sparse table.
pub type TenxExec = crate::input::sparse_table::SparseTableExec;

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Float64Array, RecordBatch};
    use datafusion::catalog::TableProvider;
    use datafusion::prelude::SessionContext;
    use std::fs::File;
    use std::io::Write;

    /// Every triple of the directory's table, as its scan gives them.
    async fn read_triples(files: &TenxFiles) -> Result<Vec<RecordBatch>> {
        let table = TenxTable::try_new(files.clone())?;
        let ctx = SessionContext::new();
        let plan = table.scan(&ctx.state(), None, &[], None).await?;
        datafusion::physical_plan::collect(plan, ctx.task_ctx()).await
    }

    fn dir_with(matrix: &str, features: &str, barcodes: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("matrix.mtx", matrix),
            ("features.tsv", features),
            ("barcodes.tsv", barcodes),
        ] {
            File::create(dir.path().join(name))
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        dir
    }

    const HEAD: &str = "%%MatrixMarket matrix coordinate integer general\n%comment\n";

    async fn read(dir: &tempfile::TempDir) -> Result<Vec<RecordBatch>> {
        let files = detect(dir.path().to_str().unwrap())?.expect("a 10x directory");
        read_triples(&files).await
    }

    #[tokio::test]
    async fn triples_in_gene_order_with_empty_genes_and_cells_kept() {
        let dir = dir_with(
            &format!("{HEAD}3 3 3\n2 1 5\n1 2 7\n1 1 1\n"),
            "g1\tA\tGene Expression\ng2\tB\tGene Expression\ng3\tC\tGene Expression\n",
            "c1\nc2\nc3\n",
        );
        let batches = read(&dir).await.unwrap();
        let b = &batches[0];
        let strings = |c: usize| -> Vec<String> {
            let text = datafusion::arrow::compute::cast(
                b.column(c),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            text.as_string::<i32>()
                .iter()
                .map(|s| s.unwrap().to_string())
                .collect()
        };
        let (genes, cells) = (strings(0), strings(1));
        let values = b
            .column(2)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .values()
            .to_vec();
        // g3 and c3 have no entries: one explicit zero each (the cell's,
        // of the first gene, after the genes').
        assert_eq!(genes, ["g1", "g1", "g2", "g3", "g1"]);
        assert_eq!(cells, ["c1", "c2", "c1", "c1", "c3"]);
        assert_eq!(values, [1.0, 7.0, 5.0, 0.0, 0.0]);
    }

    #[tokio::test]
    async fn malformed_files_name_file_and_line() {
        let f = "g1\ng2\n";
        let c = "c1\nc2\n";
        for (matrix, features, barcodes, needles) in [
            (
                "%%MatrixMarket matrix array real general\n2 2\n",
                f,
                c,
                vec!["matrix.mtx line 1", "coordinate"],
            ),
            (
                &format!("{HEAD}2 2 x\n") as &str,
                f,
                c,
                vec!["line 3", "size line"],
            ),
            (
                &format!("{HEAD}2 2 1\n3 1 4\n"),
                f,
                c,
                vec!["line 4", "row index 3 out of range 1..=2"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 0 4\n"),
                f,
                c,
                vec!["line 4", "column index 0"],
            ),
            (
                &format!("{HEAD}2 2 2\n1 1 4\n"),
                f,
                c,
                vec!["has 1 entries", "line 3", "says 2"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 4\n2 2 1\n"),
                f,
                c,
                vec!["line 5", "more entries"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 four\n"),
                f,
                c,
                vec!["line 4", "'four'"],
            ),
            // No genes, or no cells: not an index out of range when the
            // cells (genes) without entries get their explicit zero.
            (
                &format!("{HEAD}0 2 0\n") as &str,
                "",
                c,
                vec!["matrix.mtx line 3", "0 rows (genes) and 2 columns"],
            ),
            (
                &format!("{HEAD}2 0 0\n"),
                f,
                "",
                vec!["matrix.mtx line 3", "2 rows (genes) and 0 columns"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 4\n"),
                "g1\n",
                c,
                vec!["features.tsv has 1 lines", "2 rows", "line 3"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 4\n"),
                f,
                "c1\nc2\nc3\n",
                vec!["barcodes.tsv has 3 lines", "2 columns"],
            ),
        ] {
            let dir = dir_with(matrix, features, barcodes);
            let msg = read(&dir).await.unwrap_err().to_string();
            for n in needles {
                assert!(msg.contains(n), "'{n}' missing from: {msg}");
            }
        }
    }

    #[tokio::test]
    async fn gzip_files_and_missing_companions() {
        let dir = tempfile::tempdir().unwrap();
        let gz = |name: &str, text: &str| {
            let mut e = flate2::write::GzEncoder::new(
                File::create(dir.path().join(name)).unwrap(),
                flate2::Compression::default(),
            );
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap();
        };
        gz("matrix.mtx.gz", &format!("{HEAD}2 2 2\n1 1 3\n2 2 4\n"));
        gz("features.tsv.gz", "g1\tA\ng2\tB\n");
        let path = dir.path().to_str().unwrap();
        let msg = detect(path).unwrap_err().to_string();
        assert!(msg.contains("no barcodes.tsv"), "{msg}");
        gz("barcodes.tsv.gz", "c1\nc2\n");
        let files = detect(path).unwrap().unwrap();
        let batches = read_triples(&files).await.unwrap();
        assert_eq!(batches[0].num_rows(), 2);
        assert!(detect("tests").unwrap().is_none());
        assert!(detect("Cargo.toml").unwrap().is_none());
    }
}

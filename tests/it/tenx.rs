//! 10x Genomics matrix directories as inputs: `data/tenx_demo/` (made by
//! `scripts/make_tenx_demo.py`) against the same counts as a dense matrix.

use std::io::Write;

use crate::common::{self, ctx, run};

const DIR: &str = "data/tenx_demo";
const DENSE: &str = "data/tenx_demo_dense.parquet";

/// Writes `text` to `dir/name`.
fn write_file(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::File::create(dir.join(name))
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap()
}

#[tokio::test]
async fn a_10x_directory_reads_as_the_dense_matrix() {
    let dense = common::all_pairs_bits(DENSE, "naive").await;
    assert_eq!(dense.len(), 40 * 39 / 2);
    for kernel in ["naive", "gse", "vse", "bitset", "zero", "auto"] {
        assert_eq!(common::all_pairs_bits(DIR, kernel).await, dense, "{kernel}");
    }
    // A trailing slash and uncompressed files (Cell Ranger 2's genes.tsv) too.
    assert_eq!(
        common::all_pairs_bits(&format!("{DIR}/"), "auto").await,
        dense
    );
    let plain = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("matrix.mtx.gz", "matrix.mtx"),
        ("features.tsv.gz", "genes.tsv"),
        ("barcodes.tsv.gz", "barcodes.tsv"),
    ] {
        let mut text = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(format!("{DIR}/{from}")).unwrap(),
            ),
            &mut text,
        )
        .unwrap();
        std::fs::write(plain.path().join(to), text).unwrap();
    }
    assert_eq!(
        common::all_pairs_bits(plain.path().to_str().unwrap(), "auto").await,
        dense
    );
    // The two all-zero genes are kept: constant, so NaN tau.
    let batches = run(
        &ctx(1),
        &format!(
            "SELECT count(*) FROM kendall_all_pairs('{DIR}') \
             WHERE gene_i = 'ENSG00000000039' AND isnan(tau)"
        ),
    )
    .await
    .unwrap();
    let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    assert!(shown.contains("| 1        |"), "{shown}");
}

#[tokio::test]
async fn the_plan_reads_the_directory_and_top_partners_work() {
    let plan = common::plan(
        &ctx(2),
        &format!("EXPLAIN SELECT count(*) FROM kendall_all_pairs('{DIR}')"),
    )
    .await;
    common::assert_contains(&plan, &["KendallExec", "10x directory", "SparseTableExec"]);
    let batches = run(
        &ctx(2),
        &format!("SELECT count(*) FROM kendall_top_partners('{DIR}', 3)"),
    )
    .await
    .unwrap();
    let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    // 38 genes with 3 partners each; the two all-zero genes have none.
    assert!(shown.contains("| 114      |"), "{shown}");
}

#[tokio::test]
async fn bad_10x_directories_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| write_file(dir.path(), name, text);
    write(
        "matrix.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 2 1\n1 1 5\n",
    );
    let path = dir.path().display().to_string();
    let sql = format!("SELECT count(*) FROM kendall_all_pairs('{path}')");
    common::assert_contains(&common::error(&ctx(1), &sql).await, &["no features.tsv"]);
    write("features.tsv", "a\nb\n");
    write("barcodes.tsv", "x\ny\n");
    common::assert_contains(
        &common::error(&ctx(1), &sql).await,
        &["features.tsv has 2 lines", "matrix.mtx (line 2) has 3 rows"],
    );
    write("features.tsv", "a\nb\nc\n");
    write(
        "matrix.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 2 1\n1 9 5\n",
    );
    common::assert_contains(
        &common::error(&ctx(1), &sql).await,
        &["matrix.mtx line 3", "column index 9 out of range 1..=2"],
    );
    let named = format!("SELECT count(*) FROM kendall_all_pairs('{DIR}', 'gene')");
    common::assert_contains(
        &common::error(&ctx(1), &named).await,
        &["10x directory", "takes no column names"],
    );
}

/// Entries in any order are read as the same matrix (each gene's sorted by
/// cell); an entry given twice and a repeated barcode are errors naming them.
#[tokio::test]
async fn entries_in_any_order_and_repeats_named() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| write_file(dir.path(), name, text);
    let path = dir.path().display().to_string();
    write("features.tsv", "a\nb\nc\n");
    write("barcodes.tsv", "w\nx\ny\nz\n");
    // a = (5, 0, 1, 2), b = (0, 3, 0, 1), c all zero; entries shuffled,
    // one explicit zero.
    write(
        "matrix.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 4 7\n\
         1 4 2\n2 2 3\n1 1 5\n2 4 1\n1 3 1\n3 1 0\n2 1 0\n",
    );
    let batches = run(
        &ctx(1),
        &format!(
            "SELECT tau, n FROM kendall_all_pairs('{path}') WHERE gene_i = 'a' AND gene_j = 'b'"
        ),
    )
    .await
    .unwrap();
    let (tau, n) = (
        common::first_f64(&batches, 0),
        common::first_f64(&batches, 1),
    );
    // (w,x) D, (w,y) tied in b, (w,z) D, (x,y) D, (x,z) D, (y,z) C:
    // S = 1 - 4 = -3; a without ties, one tied pair in b.
    let want = -3.0 / (6.0f64 * 5.0).sqrt();
    assert!((tau - want).abs() < 1e-15, "{tau} vs {want}");
    assert_eq!(n, 4.0);
    write(
        "matrix.mtx",
        "%%MatrixMarket matrix coordinate integer general\n3 4 3\n1 4 2\n2 2 3\n1 4 1\n",
    );
    let sql = format!("SELECT count(*) FROM kendall_all_pairs('{path}')");
    common::assert_contains(
        &common::error(&ctx(1), &sql).await,
        &["gene 'a', cell 'z' twice"],
    );
    write("barcodes.tsv", "w\nx\nw\nz\n");
    common::assert_contains(
        &common::error(&ctx(1), &sql).await,
        &["barcodes.tsv names 'w' twice"],
    );
}

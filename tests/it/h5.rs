//! AnnData `.h5ad` and 10x Genomics `.h5` files as inputs (feature `hdf5`):
//! the fixtures of `tests/data/h5/` (made by `scripts/make_h5_fixtures.py`
//! with anndata and h5py, so by the HDF5 C library, plain and
//! gzip-compressed) against the same counts as a dense TSV, and malformed,
//! truncated and corrupted files.

use crate::common::{self, ctx, run};

const DIR: &str = "tests/data/h5";
/// The fixtures, each the matrix of `dense.tsv`: `*_gz` written with
/// `write_h5ad(..., compression="gzip")` and categorical `obs` columns,
/// `tenx_v3.h5` gzip-compressed as Cell Ranger writes it.
const FIXTURES: [&str; 8] = [
    "csr.h5ad",
    "csc.h5ad",
    "csc_f32.h5ad",
    "dense.h5ad",
    "csr_gz.h5ad",
    "csc_gz.h5ad",
    "dense_gz.h5ad",
    "tenx_v3.h5",
];
/// The fixtures' shape; the last gene is zero in every cell.
const GENES: usize = 12;
const CELLS: i64 = 40;

async fn text(sql: &str) -> String {
    let batches = run(&ctx(2), sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn every_fixture_reads_as_the_dense_tsv() {
    let dense = common::all_pairs_bits(&format!("{DIR}/dense.tsv"), "naive").await;
    assert_eq!(dense.len(), GENES * (GENES - 1) / 2);
    // Every cell counts (the all-zero one too), and the all-zero gene's
    // pairs are NaN.
    assert!(dense.iter().all(|r| r.4 == CELLS), "{dense:?}");
    let nan = dense
        .iter()
        .filter(|r| f64::from_bits(r.2).is_nan())
        .count();
    assert_eq!(nan, GENES - 1);
    for fixture in FIXTURES {
        let source = format!("{DIR}/{fixture}");
        for kernel in ["naive", "zero", "auto"] {
            assert_eq!(
                common::all_pairs_bits(&source, kernel).await,
                dense,
                "{fixture} {kernel}"
            );
        }
    }
    // Top partners too, and the upper-case extension.
    let upper = tempfile::tempdir().unwrap();
    let copy = upper.path().join("CSR.H5AD");
    std::fs::copy(format!("{DIR}/csr.h5ad"), &copy).unwrap();
    let top = |source: String| {
        format!(
            "SELECT gene, partner, tau, rank FROM kendall_top_partners('{source}', 3) \
             ORDER BY gene, rank"
        )
    };
    let want = text(&top(format!("{DIR}/dense.tsv"))).await;
    for source in [format!("{DIR}/tenx_v3.h5"), copy.display().to_string()] {
        assert_eq!(text(&top(source.clone())).await, want, "{source}");
    }
}

#[tokio::test]
async fn the_plan_scans_the_file_as_a_sparse_table() {
    let plan = common::plan(
        &ctx(1),
        &format!("EXPLAIN SELECT count(*) FROM kendall_all_pairs('{DIR}/csr.h5ad')"),
    )
    .await;
    common::assert_contains(&plan, &["KendallExec", "SparseTableExec", "12 genes x 40"]);
    let named = format!("SELECT count(*) FROM kendall_all_pairs('{DIR}/csr.h5ad', 'gene')");
    common::assert_contains(
        &common::error(&ctx(1), &named).await,
        &["h5ad file", "takes no column names"],
    );
}

#[tokio::test]
async fn missing_and_foreign_files_are_errors_naming_them() {
    let sql = |path: &str| format!("SELECT count(*) FROM kendall_all_pairs('{path}')");
    common::assert_contains(
        &common::error(&ctx(1), &sql("no/such/file.h5ad")).await,
        &["cannot open h5ad file 'no/such/file.h5ad'", "No such file"],
    );
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake.h5ad");
    std::fs::write(&fake, "gene\ta\tb\ng1\t1\t2\n").unwrap();
    common::assert_contains(
        &common::error(&ctx(1), &sql(&fake.display().to_string())).await,
        &["fake.h5ad", "is it an HDF5 file?"],
    );
    common::assert_contains(
        &common::error(&ctx(1), &sql(&format!("{DIR}/no_x.h5ad"))).await,
        &["h5ad file", "no_x.h5ad", "'X'", "no matrix X"],
    );
    // An AnnData file is not a 10x one.
    let renamed = dir.path().join("anndata.h5");
    std::fs::copy(format!("{DIR}/no_x.h5ad"), &renamed).unwrap();
    common::assert_contains(
        &common::error(&ctx(1), &sql(&renamed.display().to_string())).await,
        &["h5 file", "'matrix'", "not a 10x Genomics"],
    );
    common::assert_contains(
        &common::error(&ctx(1), &sql("s3://bucket/x.h5ad")).await,
        &["local path"],
    );
    // Its memory is reserved in the session's pool.
    common::assert_contains(
        &common::error(
            &ctx(1),
            &format!(
                "SET datafusion.runtime.memory_limit = '1K'; {}",
                sql(&format!("{DIR}/csr.h5ad"))
            ),
        )
        .await,
        &["Resources exhausted", "h5ad file"],
    );
}

#[tokio::test]
async fn malformed_10x_files_are_errors_naming_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    let sql = format!(
        "SELECT tau, n FROM kendall_all_pairs('{}') WHERE gene_i = 'a' AND gene_j = 'b'",
        path.display()
    );
    // Each file of `malformed/` copied to `m.h5` (see `malformed()` in
    // `scripts/make_h5_fixtures.py`).
    let put = |name: &str| std::fs::copy(format!("{DIR}/malformed/{name}"), &path).unwrap();
    // a = (5, 0, 1, 2), b = (0, 3, 0, 1), c all zero: by barcode, entries of
    // x listed out of feature order.
    put("good.h5");
    let batches = run(&ctx(1), &sql).await.unwrap();
    let (tau, n) = (
        common::first_f64(&batches, 0),
        common::first_f64(&batches, 1),
    );
    // (w,x) D, (w,y) tied in b, (w,z) D, (x,y) D, (x,z) D, (y,z) C:
    // S = -3, tau = -3 / sqrt(6 * 5).
    let want = -3.0 / (6.0f64 * 5.0).sqrt();
    assert!((tau - want).abs() < 1e-15, "{tau} vs {want}");
    assert_eq!(n, 4.0);
    for (file, needles) in [
        // indices (0, 1, 0, 7, 0)
        (
            "index_out_of_range.h5",
            &["'matrix/indices'", "entry 3 is 7, outside 0..3"][..],
        ),
        // indptr (0, 1, 3, 2, 5)
        (
            "indptr_not_ascending.h5",
            &["'matrix/indptr'", "not ascending"],
        ),
        // indptr (0, 1, 2, 3, 4)
        ("indptr_short.h5", &["'matrix/indptr'", "expected 0 to 5"]),
        // data (5, 3, NaN, 1, 2)
        (
            "nan.h5",
            &["'matrix/data'", "gene 'a', cell 'y' has the value NaN"],
        ),
        // shape (4, 4)
        (
            "wrong_shape.h5",
            &["'matrix/shape'", "[4, 4]", "3 features"],
        ),
        // indices (0, 1, 0, 0, 0)
        (
            "duplicate.h5",
            &["h5 file", "gene 'a' lists sample 'z' twice"],
        ),
        // Cell Ranger v2: one group per genome.
        ("cellranger_v2.h5", &["'GRCh38/genes'", "Cell Ranger v2"]),
    ] {
        put(file);
        let msg = common::error(&ctx(1), &sql).await;
        common::assert_contains(&msg, needles);
        common::assert_contains(&msg, &["m.h5"]);
    }
}

/// Every prefix of a gzip-compressed file cut at some length, and copies
/// with bits flipped (seeded), are read as an error naming the file or as a
/// table, never a panic or an abort.
#[tokio::test]
async fn truncated_and_corrupted_files_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(format!("{DIR}/csr_gz.h5ad")).unwrap();
    let path = dir.path().join("broken.h5ad");
    let sql = format!(
        "SELECT count(*) FROM kendall_all_pairs('{}')",
        path.display()
    );
    for cut in [0, 7, 100, 1_000, 4_000, 10_000, 20_000, 30_000, 40_000] {
        std::fs::write(&path, &bytes[..cut.min(bytes.len() - 1)]).unwrap();
        let msg = common::error(&ctx(1), &sql).await;
        common::assert_contains(&msg, &["broken.h5ad"]);
        if cut >= 100 {
            // Past the superblock: the first group that cannot be read.
            common::assert_contains(&msg, &["'X'", "truncated or corrupt"]);
        }
    }
    // A small xorshift: the same flips on every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..60 {
        let mut copy = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % copy.len() as u64) as usize;
            copy[at] ^= 1 << (next() % 8);
        }
        std::fs::write(&path, &copy).unwrap();
        if let Err(e) = run(&ctx(1), &sql).await {
            common::assert_contains(&e.to_string(), &["broken.h5ad"]);
        }
    }
}

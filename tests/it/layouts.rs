//! `kendall.layout`: genes as columns and long (tidy) inputs give the same
//! pairs as genes as rows, and their specific mistakes are refused clearly.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use crate::common::{batch, by_key, ctx, pairs, reference, run, write_parquet};
use datafusion::arrow::array::{
    Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::Float64Type;

const TIES: &str = "tests/data/bladder_ties.parquet";

/// (gene ids, sample names, genes × samples values) of a genes-as-rows file.
fn read_rows(path: &str) -> (Vec<String>, Vec<String>, Vec<Vec<f64>>) {
    let b = crate::common::read_parquet(path);
    let genes: Vec<String> = b
        .column(0)
        .as_string::<i32>()
        .iter()
        .map(|g| g.unwrap().to_string())
        .collect();
    let samples: Vec<String> = b.schema().fields()[1..]
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let values = (0..b.num_rows())
        .map(|r| {
            (1..b.num_columns())
                .map(|c| b.column(c).as_primitive::<Float64Type>().value(r))
                .collect()
        })
        .collect();
    (genes, samples, values)
}

fn assert_same_as_reference(rows: &[common::Pair]) {
    let expected = reference("tests/data/bladder_ties_reference.csv");
    assert_eq!(rows.len(), expected.len());
    let got = by_key(rows);
    for e in &expected {
        let t = got[&(e.gene_i.clone(), e.gene_j.clone())];
        assert!(
            (t.is_nan() && e.tau.is_nan()) || (t - e.tau).abs() <= 1e-12,
            "{} {}: {t} vs {}",
            e.gene_i,
            e.gene_j,
            e.tau
        );
    }
}

fn write_columns(path: &Path, genes: &[String], samples: &[String], values: &[Vec<f64>]) {
    let mut columns: Vec<(&str, Arc<dyn Array>)> = vec![(
        "sample_id",
        Arc::new(StringArray::from_iter_values(samples)),
    )];
    for (g, gene) in genes.iter().enumerate() {
        columns.push((
            gene.as_str(),
            Arc::new(Float64Array::from(values[g].clone())),
        ));
    }
    write_parquet(path, &batch(columns));
}

/// Long triples, sample-major (all genes of sample 0, then sample 1, ...).
fn write_long(
    path: &Path,
    names: [&str; 3],
    genes: &[String],
    samples: &[String],
    values: &[Vec<f64>],
) {
    let (mut g_col, mut s_col, mut v_col) = (Vec::new(), Vec::new(), Vec::new());
    for (s, sample) in samples.iter().enumerate() {
        for (g, gene) in genes.iter().enumerate() {
            g_col.push(gene.clone());
            s_col.push(sample.clone());
            v_col.push(values[g][s]);
        }
    }
    write_parquet(
        path,
        &batch(vec![
            (names[0], Arc::new(StringArray::from(g_col))),
            (names[1], Arc::new(StringArray::from(s_col))),
            (names[2], Arc::new(Float64Array::from(v_col))),
        ]),
    );
}

#[tokio::test]
async fn genes_as_columns_matches_scipy() {
    let (genes, samples, values) = read_rows(TIES);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("columns.parquet");
    write_columns(&path, &genes, &samples, &values);
    let ctx = ctx(2);
    let rows = pairs(
        &ctx,
        &format!(
            "SET kendall.layout = 'genes_as_columns'; SELECT * FROM kendall_all_pairs('{}')",
            path.display()
        ),
    )
    .await;
    assert_same_as_reference(&rows);
}

#[tokio::test]
async fn long_matches_scipy_with_default_and_named_columns() {
    let (genes, samples, values) = read_rows(TIES);
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("long.parquet");
    write_long(
        &default,
        ["gene", "sample", "value"],
        &genes,
        &samples,
        &values,
    );
    let named = dir.path().join("named.parquet");
    write_long(
        &named,
        ["probe", "array", "expr"],
        &genes,
        &samples,
        &values,
    );
    for sql in [
        format!("SELECT * FROM kendall_all_pairs('{}')", default.display()),
        format!(
            "SELECT * FROM kendall_all_pairs('{}', 'probe', 'array', 'expr')",
            named.display()
        ),
    ] {
        let ctx = ctx(3);
        let rows = pairs(&ctx, &format!("SET kendall.layout = 'long'; {sql}")).await;
        assert_same_as_reference(&rows);
    }
}

async fn layout_error(layout: &str, sql: &str) -> String {
    let ctx = ctx(1);
    run(&ctx, &format!("SET kendall.layout = '{layout}'; {sql}"))
        .await
        .expect_err("should fail")
        .to_string()
}

#[tokio::test]
async fn long_layout_mistakes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let triples = |name: &str, rows: &[(&str, &str, f64)]| {
        let path = dir.path().join(name);
        write_parquet(
            &path,
            &batch(vec![
                (
                    "gene",
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
                ),
                (
                    "sample",
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
                ),
                (
                    "value",
                    Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.2))),
                ),
            ]),
        );
        format!("SELECT * FROM kendall_all_pairs('{}')", path.display())
    };
    let dup = triples(
        "dup.parquet",
        &[("A", "s1", 1.0), ("A", "s2", 2.0), ("A", "s1", 3.0)],
    );
    let msg = layout_error("long", &dup).await;
    assert!(
        msg.contains("gene 'A' has two values for sample 's1'") && msg.contains("row 3"),
        "{msg}"
    );
    let gap = triples(
        "gap.parquet",
        &[("A", "s1", 1.0), ("A", "s2", 2.0), ("B", "s1", 3.0)],
    );
    let msg = layout_error("long", &gap).await;
    assert!(
        msg.contains("gene 'B' has no value for sample 's2'"),
        "{msg}"
    );
    let msg = layout_error(
        "long",
        &format!("SELECT * FROM kendall_all_pairs('{TIES}')"),
    )
    .await;
    assert!(msg.contains("gene column 'gene' not found"), "{msg}");

    let typed = dir.path().join("typed.parquet");
    write_parquet(
        &typed,
        &batch(vec![
            ("gene", Arc::new(StringArray::from(vec!["A", "A"]))),
            ("sample", Arc::new(Int64Array::from(vec![1, 2]))),
            ("value", Arc::new(StringArray::from(vec!["x", "y"]))),
        ]),
    );
    let msg = layout_error(
        "long",
        &format!("SELECT * FROM kendall_all_pairs('{}')", typed.display()),
    )
    .await;
    assert!(
        msg.contains("value column 'value'") && msg.contains("Utf8"),
        "{msg}"
    );
}

#[tokio::test]
async fn genes_as_columns_mistakes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flags.parquet");
    write_parquet(
        &path,
        &batch(vec![
            ("A", Arc::new(Float64Array::from(vec![1.0, 2.0]))),
            (
                "flag",
                Arc::new(datafusion::arrow::array::BooleanArray::from(vec![
                    true, false,
                ])),
            ),
        ]),
    );
    let sql = format!("SELECT * FROM kendall_all_pairs('{}')", path.display());
    let msg = layout_error("genes_as_columns", &sql).await;
    assert!(
        msg.contains("column 'flag'") && msg.contains("Boolean"),
        "{msg}"
    );
    let msg = layout_error(
        "genes_as_columns",
        &format!("SELECT * FROM kendall_all_pairs('{TIES}', 'gene_id')"),
    )
    .await;
    assert!(msg.contains("takes only the source"), "{msg}");
    let msg = crate::common::error(&ctx(1), "SET kendall.layout = 'wide'").await;
    assert!(msg.contains("kendall.layout must be one of"), "{msg}");
}

/// A long file with a few samples per gene (200,000 rows naming 20,000
/// genes and 200,000 cells, as a sparse single-cell export) asks for a
/// 20,000 x 200,000 matrix: refused from the counts before any matrix is
/// allocated (this used to abort: `memory allocation of 31998400000 bytes
/// failed`).
#[tokio::test]
async fn sparse_long_input_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.parquet");
    write_sparse_long(&path, 200_000, 20_000);
    let msg = layout_error(
        "long",
        &format!("SELECT * FROM kendall_all_pairs('{}')", path.display()),
    )
    .await;
    common::assert_contains(
        &msg,
        &[
            "gene 'G0' has no value for sample 'C1'",
            "every gene needs one row for every sample",
            "has 200000 rows for 20000 genes x 200000 samples (4000000000 values)",
        ],
    );
}

/// `rows` triples (gene `G{i % genes}`, sample `C{i}`, value `i`).
pub fn write_sparse_long(path: &Path, rows: usize, genes: usize) {
    write_parquet(
        path,
        &batch(vec![
            (
                "gene",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("G{}", i % genes)),
                )),
            ),
            (
                "sample",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("C{i}")),
                )),
            ),
            (
                "value",
                Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64))),
            ),
        ]),
    );
}

/// A view over `kendall_all_pairs` is defined, then its file is rewritten
/// with another shape: querying the view reads the file as it is then,
/// exactly as a fresh query does (the source is resolved and read when the
/// query is planned and run, never from what the view saw).
#[tokio::test]
async fn a_view_reads_its_file_as_it_is_when_queried() {
    let (genes, samples, values) = read_rows(TIES);
    let (genes, samples) = (&genes[..3], &samples[..6]);
    let values: Vec<Vec<f64>> = values[..3].iter().map(|v| v[..6].to_vec()).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.parquet");
    let direct = format!("SELECT * FROM kendall_all_pairs('{}')", path.display());
    let sorted = |batches: Vec<RecordBatch>| common::sorted_bits(&batches);
    let check = |layout: &'static str, expected_pairs: usize, expected_n: i64| {
        let direct = direct.clone();
        async move {
            let c = ctx(2);
            run(
                &c,
                &format!("SET kendall.layout = '{layout}'; CREATE VIEW v AS {direct}"),
            )
            .await
            .unwrap();
            (c, expected_pairs, expected_n)
        }
    };
    let compare = |c: datafusion::prelude::SessionContext, pairs: usize, n: i64| {
        let direct = direct.clone();
        async move {
            let via_view = sorted(run(&c, "SELECT * FROM v").await.unwrap());
            let fresh = sorted(run(&c, &direct).await.unwrap());
            assert_eq!(via_view, fresh);
            assert_eq!(via_view.len(), pairs);
            assert!(via_view.iter().all(|r| r.4 == n), "{via_view:?}");
        }
    };
    let first_samples =
        |k: usize| -> Vec<Vec<f64>> { values.iter().map(|v| v[..k].to_vec()).collect() };

    // genes_as_columns: 6 samples when the view was made, 4 rows now.
    write_columns(&path, genes, samples, &values);
    let (c, _, _) = check("genes_as_columns", 3, 6).await;
    write_columns(&path, genes, &samples[..4], &first_samples(4));
    compare(c, 3, 4).await;

    // long: 3 genes x 6 samples, then a gene fewer.
    write_long(&path, ["gene", "sample", "value"], genes, samples, &values);
    let (c, _, _) = check("long", 3, 6).await;
    write_long(
        &path,
        ["gene", "sample", "value"],
        &genes[..2],
        samples,
        &values[..2],
    );
    compare(c, 1, 6).await;
}

/// Sparse triples: with `kendall.absent = 'zero'` a long input listing only
/// non-zero values gives the bits of the dense matrix with its zeros; with
/// `'missing'` those of the matrix with nulls there; by default the first
/// absent row is an error that names the option.
#[tokio::test]
async fn absent_rows_read_as_zero_or_missing() {
    let genes: Vec<String> = (0..5).map(|g| format!("G{g}")).collect();
    let samples: Vec<String> = (0..8).map(|s| format!("C{s}")).collect();
    // Counts with many zeros, and ties among the non-zero ones.
    let values: Vec<Vec<f64>> = (0..5)
        .map(|g| {
            (0..8)
                .map(|s| {
                    if (g * 3 + s * 5) % 7 < 4 {
                        0.0
                    } else {
                        ((g + s) % 3 + 1) as f64
                    }
                })
                .collect()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let dense = dir.path().join("dense.parquet");
    write_long(
        &dense,
        ["gene", "sample", "value"],
        &genes,
        &samples,
        &values,
    );
    // The same values with zeros as nulls, for 'missing'.
    let nulls = dir.path().join("nulls.parquet");
    let (mut g_col, mut s_col, mut v_col, mut sparse_g, mut sparse_s, mut sparse_v) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for (g, gene) in genes.iter().enumerate() {
        for (s, sample) in samples.iter().enumerate() {
            let x = values[g][s];
            g_col.push(gene.clone());
            s_col.push(sample.clone());
            v_col.push((x != 0.0).then_some(x));
            if x != 0.0 {
                sparse_g.push(gene.clone());
                sparse_s.push(sample.clone());
                sparse_v.push(x);
            }
        }
    }
    write_parquet(
        &nulls,
        &batch(vec![
            ("gene", Arc::new(StringArray::from(g_col))),
            ("sample", Arc::new(StringArray::from(s_col))),
            ("value", Arc::new(Float64Array::from(v_col))),
        ]),
    );
    let sparse = dir.path().join("sparse.parquet");
    write_parquet(
        &sparse,
        &batch(vec![
            ("gene", Arc::new(StringArray::from(sparse_g))),
            ("sample", Arc::new(StringArray::from(sparse_s))),
            ("value", Arc::new(Float64Array::from(sparse_v))),
        ]),
    );
    let bits = |setting: &'static str, path: std::path::PathBuf| async move {
        let c = ctx(2);
        let sql = format!(
            "SET kendall.layout = 'long'; SET kendall.absent = '{setting}'; \
             SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{}')",
            path.display()
        );
        common::sorted_bits(&run(&c, &sql).await.unwrap())
    };
    let from_dense = bits("error", dense.clone()).await;
    assert_eq!(from_dense.len(), 10);
    assert_eq!(bits("zero", sparse.clone()).await, from_dense);
    let with_nulls = bits("error", nulls).await;
    assert_eq!(bits("missing", sparse.clone()).await, with_nulls);
    assert!(with_nulls.iter().any(|r| r.4 < 8), "the nulls are missing");
    let msg = crate::common::error(
        &ctx(1),
        &format!(
            "SET kendall.layout = 'long'; SELECT * FROM kendall_all_pairs('{}')",
            sparse.display()
        ),
    )
    .await;
    common::assert_contains(
        &msg,
        &["has no value for sample", "kendall.absent = 'zero'"],
    );
    // A sample given twice is an error whatever absent rows mean.
    let twice = dir.path().join("twice.parquet");
    write_parquet(
        &twice,
        &batch(vec![
            ("gene", Arc::new(StringArray::from(vec!["A", "A", "B"]))),
            (
                "sample",
                Arc::new(StringArray::from(vec!["C0", "C0", "C1"])),
            ),
            ("value", Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0]))),
        ]),
    );
    let msg = crate::common::error(
        &ctx(1),
        &format!(
            "SET kendall.layout = 'long'; SET kendall.absent = 'zero'; \
             SELECT * FROM kendall_all_pairs('{}')",
            twice.display()
        ),
    )
    .await;
    common::assert_contains(
        &msg,
        &["gene 'A' has two values for sample 'C0'", "row 1 and row 2"],
    );
}

//! The `p_value` column against scipy.stats.kendalltau.

use crate::common;

use std::collections::HashMap;

use crate::common::{ctx, run};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::arrow::util::pretty::pretty_format_batches;

type Keyed = HashMap<(String, String), f64>;

/// (gene_i, gene_j) -> p_value from a reference CSV (`nan` for NaN).
fn reference_p(path: &str) -> Keyed {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            ((f[0].to_string(), f[1].to_string()), f[3].parse().unwrap())
        })
        .collect()
}

async fn p_values(sql: &str) -> Keyed {
    let ctx = ctx(2);
    let batches = run(&ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = HashMap::new();
    for b in &batches {
        let (gi, gj) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        let p = b.column(2).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            let key = (gi.value(r).to_string(), gj.value(r).to_string());
            assert!(
                !p.is_null(r),
                "{key:?}: NULL p-value without missing values"
            );
            assert!(out.insert(key, p.value(r)).is_none(), "a pair twice: {sql}");
        }
    }
    out
}

fn assert_close(got: &Keyed, expected: &Keyed, what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: row count");
    for (key, &e) in expected {
        let g = got[key];
        if e.is_nan() {
            assert!(g.is_nan(), "{what} {key:?}: expected NaN, got {g}");
        } else {
            let rel = ((g - e) / e).abs();
            assert!(
                rel <= 1e-10,
                "{what} {key:?}: got {g}, scipy {e} (rel {rel:e})"
            );
        }
    }
}

#[tokio::test]
async fn asymptotic_p_values_with_ties_match_scipy() {
    let expected = reference_p("tests/data/bladder_ties_reference.csv");
    for kernel in ["gse", "bitset"] {
        let got = p_values(&format!(
            "SET kendall.kernel = '{kernel}'; \
             SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/bladder_ties.parquet')"
        ))
        .await;
        assert_close(&got, &expected, kernel);
    }
    // n = 57 without ties in most genes: auto is asymptotic here too.
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head.parquet");
    common::head_parquet("data/demo_expression.parquet", 120, &head);
    let got = p_values(&format!(
        "SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('{}')",
        head.display()
    ))
    .await;
    assert_close(
        &got,
        &reference_p("tests/data/demo_head_reference.csv"),
        "demo head",
    );
}

#[tokio::test]
async fn exact_p_values_match_scipy() {
    // n = 30 without ties: scipy's auto picks the exact distribution.
    let got = p_values(
        "SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/demo_30_reference.parquet')",
    )
    .await;
    assert_close(
        &got,
        &reference_p("tests/data/demo_30_reference.csv"),
        "auto, n=30",
    );
    // n = 57 forced exact.
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head20.parquet");
    common::head_parquet("data/demo_expression.parquet", 20, &head);
    let got = p_values(&format!(
        "SET kendall.pvalue = 'exact'; SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('{}')",
        head.display()
    ))
    .await;
    assert_close(
        &got,
        &reference_p("tests/data/demo_head_exact_reference.csv"),
        "exact, n=57",
    );
}

#[tokio::test]
async fn p_value_filters_are_pushed_down() {
    let ctx = ctx(2);
    let all = p_values(
        "SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/bladder_ties.parquet')",
    )
    .await;
    // NaN (the constant probe's pairs) is above every number: never < 1e-6.
    let mut expected: Vec<_> = all
        .iter()
        .filter(|(_, p)| **p < 1e-6)
        .map(|(k, p)| (k.clone(), p.to_bits()))
        .collect();
    assert!(!expected.is_empty() && expected.len() < all.len());
    let sql = "SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/bladder_ties.parquet') \
               WHERE p_value < 1e-6";
    let mut got: Vec<_> = p_values(sql)
        .await
        .into_iter()
        .map(|(k, p)| (k, p.to_bits()))
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    let plan = run(&ctx, &format!("EXPLAIN {sql}")).await.unwrap();
    let plan = pretty_format_batches(&plan).unwrap().to_string();
    assert!(
        !plan.contains("FilterExec") && plan.contains("filter=p_value < "),
        "{plan}"
    );
    let err = crate::common::error(&ctx, "SET kendall.pvalue = 'fisher'").await;
    assert!(err.contains("kendall.pvalue must be one of"), "{err}");
}

/// Two genes `a`, `b` over `n` samples without ties, `b` a near copy of
/// `a`: the first 8 values of every 40 reversed (genes_as_columns layout).
fn near_copy(path: &std::path::Path, n: usize) {
    use datafusion::arrow::array::{ArrayRef, Float64Array};
    use std::sync::Arc;
    let a: Vec<f64> = (0..n).map(|s| s as f64).collect();
    let mut b = a.clone();
    for chunk in b.chunks_mut(40) {
        let k = chunk.len().min(8);
        chunk[..k].reverse();
    }
    let batch = common::batch(vec![
        ("a", Arc::new(Float64Array::from(a)) as ArrayRef),
        ("b", Arc::new(Float64Array::from(b)) as ArrayRef),
    ]);
    common::write_parquet(path, &batch);
}

#[tokio::test]
async fn exact_above_1000_samples_is_a_number_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.parquet");
    near_copy(&path, 1100);
    let sql = |method: &str| {
        format!(
            "SET kendall.layout = 'genes_as_columns'; SET kendall.pvalue = '{method}'; \
             SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('{}')",
            path.display()
        )
    };
    let ctx = ctx(2);
    let row = |b: &[datafusion::arrow::array::RecordBatch]| {
        let b = b.iter().find(|b| b.num_rows() > 0).unwrap();
        let f = |c: usize| b.column(c).as_primitive::<Float64Type>().value(0);
        (f(2), f(3))
    };
    let (tau, p) = row(&run(&ctx, &sql("exact")).await.unwrap());
    // A strong pair: it must not look like p = 1. Exact at any n, as
    // scipy's (whose value here underflows to 0.0 too).
    assert!(tau > 0.9, "tau {tau}");
    assert!(p < 1e-300, "exact p-value at n = 1,100: {p}");
    // The pair is strongly significant, as the asymptotic p-value says.
    let (_, p) = row(&run(&ctx, &sql("asymptotic")).await.unwrap());
    assert!(p < 1e-100, "asymptotic {p}");
}

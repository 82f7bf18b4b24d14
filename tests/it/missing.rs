//! Missing values (`kendall.missing`, `kendall.min_periods`, the `n` column)
//! against pandas and scipy: `tests/data/bladder_missing_reference.csv`, made
//! by `scripts/kendall_missing_reference.py`.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::prelude::SessionContext;

use crate::common::{ctx, run};

const DATA: &str = "tests/data/bladder_missing.parquet";
const REFERENCE: &str = "tests/data/bladder_missing_reference.csv";

/// One reference row: n, then pandas tau (min_periods 1 and 30), scipy
/// p-value, scipy tau-c, exact tau-a and scipy's exact p-value.
struct Expected {
    n: i64,
    tau: f64,
    tau_min30: f64,
    p_value: f64,
    tau_c: f64,
    tau_a: f64,
    p_exact: f64,
}

fn reference() -> HashMap<(String, String), Expected> {
    let text = std::fs::read_to_string(REFERENCE).unwrap();
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let x = |k: usize| f[k].parse::<f64>().unwrap();
            let key = (f[0].to_string(), f[1].to_string());
            let row = Expected {
                n: f[2].parse().unwrap(),
                tau: x(3),
                tau_min30: x(4),
                p_value: x(5),
                tau_c: x(6),
                tau_a: x(7),
                p_exact: x(8),
            };
            (key, row)
        })
        .collect()
}

/// One output row: tau and p-value (None when NULL) and n.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    tau: Option<f64>,
    p_value: Option<f64>,
    n: i64,
}

/// Runs `SELECT gene_i, gene_j, tau, p_value, n ...` and keys the rows.
async fn rows(ctx: &SessionContext, sql: &str) -> HashMap<(String, String), Row> {
    let batches = run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = HashMap::new();
    for b in &batches {
        collect(b, &mut out);
    }
    out
}

fn collect(b: &RecordBatch, out: &mut HashMap<(String, String), Row>) {
    let (gi, gj) = (
        b.column(0).as_string::<i32>(),
        b.column(1).as_string::<i32>(),
    );
    let tau = b.column(2).as_primitive::<Float64Type>();
    let p = b.column(3).as_primitive::<Float64Type>();
    let n = b.column(4).as_primitive::<Int64Type>();
    for r in 0..b.num_rows() {
        let get = |a: &datafusion::arrow::array::Float64Array| (!a.is_null(r)).then(|| a.value(r));
        let row = Row {
            tau: get(tau),
            p_value: get(p),
            n: n.value(r),
        };
        let key = (gi.value(r).to_string(), gj.value(r).to_string());
        assert!(out.insert(key, row).is_none(), "a pair twice");
    }
}

fn close(got: f64, want: f64, abs: f64, rel: f64) -> bool {
    (got.is_nan() && want.is_nan()) || (got - want).abs() <= abs.max(rel * want.abs())
}

const ALL: &str = "SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('tests/data/bladder_missing.parquet')";

#[tokio::test]
async fn pairwise_complete_matches_pandas_and_scipy() {
    let expected = reference();
    let got = rows(&ctx(3), ALL).await;
    assert_eq!(got.len(), expected.len());
    assert_eq!(got.len(), 71 * 70 / 2);
    let mut gappy = 0;
    for (key, want) in &expected {
        let row = got[key];
        assert_eq!(row.n, want.n, "{key:?}");
        gappy += usize::from(want.n < 57);
        // min_periods = 1: NULL only for pairs sharing no sample; pandas
        // writes NaN for those and for undefined tau (n = 1, constant).
        assert_eq!(row.tau.is_none(), want.n == 0, "{key:?}");
        let tau = row.tau.unwrap_or(f64::NAN);
        assert!(
            close(tau, want.tau, 1e-12, 0.0),
            "{key:?}: tau {tau} vs pandas {}",
            want.tau
        );
        assert_eq!(row.p_value.is_none(), want.n == 0, "{key:?}");
        let p = row.p_value.unwrap_or(f64::NAN);
        assert!(
            close(p, want.p_value, 1e-300, 1e-10),
            "{key:?} (n = {}): p {p} vs scipy {}",
            want.n,
            want.p_value
        );
    }
    assert!(
        gappy > 1000,
        "the data has pairs with missing values: {gappy}"
    );
}

#[tokio::test]
async fn min_periods_makes_tau_null_like_pandas() {
    let expected = reference();
    let ctx = ctx(2);
    let got = rows(&ctx, &format!("SET kendall.min_periods = 30; {ALL}")).await;
    let mut nulls = 0;
    for (key, want) in &expected {
        let row = got[key];
        assert_eq!(row.tau.is_none(), want.n < 30, "{key:?} n = {}", want.n);
        assert_eq!(row.p_value.is_none(), want.n < 30, "{key:?}");
        nulls += usize::from(row.tau.is_none());
        let tau = row.tau.unwrap_or(f64::NAN);
        assert!(
            close(tau, want.tau_min30, 1e-12, 0.0),
            "{key:?}: {tau} vs {}",
            want.tau_min30
        );
    }
    assert!(nulls > 100, "{nulls} NULL pairs");
    // `n` can be filtered on (by DataFusion) without being selected.
    let count = |batches: &[RecordBatch]| batches[0].column(0).as_primitive::<Int64Type>().value(0);
    let few = run(
        &ctx,
        "SELECT count(*) FROM kendall_all_pairs('tests/data/bladder_missing.parquet') WHERE n < 30",
    )
    .await
    .unwrap();
    assert_eq!(count(&few) as usize, nulls);
    let plan = crate::common::plan(&ctx, &format!("EXPLAIN {ALL}")).await;
    assert!(plan.contains("min_periods=30"), "{plan}");
    // A NULL tau fails every pushed-down comparison, as in SQL: these
    // filters keep exactly the rows DataFusion keeps on a materialised copy.
    run(&ctx, &format!("CREATE TABLE copy AS {ALL}"))
        .await
        .unwrap();
    for filter in [
        "tau > 0.2",
        "NOT (tau > 0.2)",
        "tau > 0.2 OR tau <= 0.2",
        "abs(tau) BETWEEN 0.1 AND 0.5",
        "tau NOT BETWEEN -0.1 AND 0.1 OR p_value < 0.01",
        "NOT (p_value >= 0.05)",
    ] {
        let query = |from: &str| format!("SELECT count(*) FROM {from} WHERE {filter}");
        let pushed = run(
            &ctx,
            &query("kendall_all_pairs('tests/data/bladder_missing.parquet')"),
        )
        .await
        .unwrap();
        let plain = run(&ctx, &query("copy")).await.unwrap();
        assert_eq!(count(&pushed), count(&plain), "{filter}");
    }
}

#[tokio::test]
async fn tau_a_and_c_with_missing_values() {
    let expected = reference();
    let ctx = ctx(2);
    for (variant, pick) in [
        ("a", (|e: &Expected| e.tau_a) as fn(&Expected) -> f64),
        ("c", |e: &Expected| e.tau_c),
    ] {
        let got = rows(&ctx, &format!("SET kendall.variant = '{variant}'; {ALL}")).await;
        assert_eq!(got.len(), expected.len(), "tau-{variant}");
        for (key, want) in &expected {
            let tau = got[key].tau.unwrap_or(f64::NAN);
            assert!(
                close(tau, pick(want), 1e-12, 0.0),
                "tau-{variant} {key:?}: {tau} vs {}",
                pick(want)
            );
        }
    }
}

/// Every kernel and instruction set gives the same bits with missing values.
#[tokio::test]
async fn every_kernel_agrees_with_missing_values() {
    let ctx = ctx(2);
    let baseline = rows(&ctx, &format!("SET kendall.kernel = 'naive'; {ALL}")).await;
    for kernel in ["gse", "vse", "bitset", "zero"] {
        for simd in ["scalar", "avx2", "avx512"] {
            let sql =
                format!("SET kendall.kernel = '{kernel}'; SET kendall.simd = '{simd}'; {ALL}");
            let result = run(&ctx, &sql).await;
            if !crate::common::simd_available(simd) {
                // An instruction set this CPU lacks is refused, clearly.
                let e = result.unwrap_err();
                assert!(e.to_string().contains(simd), "{e}");
                continue;
            }
            let mut got = HashMap::new();
            for b in &result.unwrap_or_else(|e| panic!("{kernel}/{simd}: {e}")) {
                collect(b, &mut got);
            }
            assert_eq!(got.len(), baseline.len());
            for (key, want) in &baseline {
                let row = got[key];
                assert_eq!(row.n, want.n);
                let bits = |x: Option<f64>| x.map(f64::to_bits);
                assert_eq!(bits(row.tau), bits(want.tau), "{kernel}/{simd} {key:?}");
                assert_eq!(
                    bits(row.p_value),
                    bits(want.p_value),
                    "{kernel}/{simd} {key:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn missing_error_names_gene_and_sample() {
    let ctx = ctx(1);
    let err = crate::common::error(&ctx, &format!("SET kendall.missing = 'error'; {ALL}")).await;
    assert!(err.contains("kendall.missing = 'error'"), "{err}");
    assert!(
        err.contains("gene '") && err.contains("sample column '"),
        "{err}"
    );
    assert!(err.contains(DATA), "{err}");
    let err = crate::common::error(&ctx, "SET kendall.missing = 'drop'").await;
    assert!(
        err.contains("'pairwise', 'complete', 'propagate', 'error'"),
        "{err}"
    );
}

/// Data without gaps gives the same numbers whatever kendall.missing says.
#[tokio::test]
async fn complete_data_is_unchanged() {
    let ctx = ctx(2);
    let sql = "SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('tests/data/bladder_ties.parquet')";
    let pairwise = rows(&ctx, sql).await;
    let strict = rows(&ctx, &format!("SET kendall.missing = 'error'; {sql}")).await;
    let bits = |rows: &HashMap<(String, String), Row>| {
        let mut v: Vec<_> = rows
            .iter()
            .map(|(k, r)| {
                (
                    k.clone(),
                    r.tau.map(f64::to_bits),
                    r.p_value.map(f64::to_bits),
                    r.n,
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(bits(&pairwise), bits(&strict));
    assert!(pairwise.values().all(|r| r.n == 57));
}

/// The same matrix as genes_as_columns and as long (null values kept as
/// rows with a null value) gives the same rows as genes_as_rows.
#[tokio::test]
async fn layouts_carry_missing_values() {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Float64Array, StringArray};
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::DataType;

    let all = crate::common::read_parquet(DATA);
    let ids = cast(all.column(0), &DataType::Utf8).unwrap();
    let ids = ids.as_string::<i32>();
    let schema = all.schema();
    let samples: Vec<&str> = schema.fields()[1..]
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let value = |g: usize, s: usize| {
        let column = all.column(s + 1).as_primitive::<Float64Type>();
        (!column.is_null(g)).then(|| column.value(g))
    };
    let (genes, n) = (all.num_rows(), samples.len());

    let mut by_gene: Vec<(String, ArrayRef)> = Vec::new();
    for g in 0..genes {
        let column: Float64Array = (0..n).map(|s| value(g, s)).collect();
        by_gene.push((ids.value(g).to_string(), Arc::new(column)));
    }
    let columns = RecordBatch::try_from_iter(by_gene).unwrap();
    let (mut gene, mut sample, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for g in 0..genes {
        for (s, name) in samples.iter().enumerate() {
            gene.push(ids.value(g));
            sample.push(*name);
            values.push(value(g, s));
        }
    }
    let long = RecordBatch::try_from_iter(vec![
        ("gene", Arc::new(StringArray::from(gene)) as ArrayRef),
        ("sample", Arc::new(StringArray::from(sample)) as ArrayRef),
        ("value", Arc::new(Float64Array::from(values)) as ArrayRef),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (columns_path, long_path) = (
        dir.path().join("columns.parquet"),
        dir.path().join("long.parquet"),
    );
    crate::common::write_parquet(&columns_path, &columns);
    crate::common::write_parquet(&long_path, &long);

    let ctx = ctx(2);
    let expected = rows(&ctx, ALL).await;
    for (layout, path) in [("genes_as_columns", &columns_path), ("long", &long_path)] {
        let sql = format!(
            "SET kendall.layout = '{layout}'; SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{}')",
            path.display()
        );
        let got = rows(&ctx, &sql).await;
        assert_eq!(got.len(), expected.len(), "{layout}");
        for (key, want) in &expected {
            let row = got[key];
            assert_eq!(row.n, want.n, "{layout} {key:?}");
            let bits = |x: Option<f64>| x.map(f64::to_bits);
            assert_eq!(bits(row.tau), bits(want.tau), "{layout} {key:?}");
        }
    }
}

/// `kendall.pvalue = 'exact'` on pairs of every size n ≤ 57 (NaN with ties,
/// where scipy refuses), also once the distribution tables' budget is spent
/// (tested in `src/kernel/pvalue.rs`).
#[tokio::test]
async fn exact_p_values_for_every_shared_sample_count() {
    let expected = reference();
    let got = rows(&ctx(2), &format!("SET kendall.pvalue = 'exact'; {ALL}")).await;
    let mut sizes = std::collections::BTreeSet::new();
    for (key, want) in &expected {
        let p = got[key].p_value.unwrap_or(f64::NAN);
        assert!(
            close(p, want.p_exact, 1e-300, 1e-10),
            "{key:?} (n = {}): p {p} vs scipy exact {}",
            want.n,
            want.p_exact
        );
        if !want.p_exact.is_nan() {
            sizes.insert(want.n);
        }
    }
    assert!(sizes.len() > 10, "exact p-values for n in {sizes:?}");
}

/// `min_periods = 0`: a pair sharing no sample is NaN (undefined), not NULL.
#[tokio::test]
async fn min_periods_zero_keeps_every_tau() {
    let ctx = ctx(1);
    let got = rows(&ctx, &format!("SET kendall.min_periods = 0; {ALL}")).await;
    assert!(got.values().all(|r| r.tau.is_some() && r.p_value.is_some()));
    assert!(
        got.values()
            .any(|r| r.n == 0 && r.tau.is_some_and(f64::is_nan))
    );
    let plan = crate::common::plan(&ctx, &format!("EXPLAIN {ALL}")).await;
    assert!(plan.contains("min_periods=0"), "{plan}");
}

/// A complete matrix with `min_periods` above its sample count: every tau is
/// NULL (not NaN), every pair is still a row with its `n`, and no comparison
/// of tau passes (the plain loop for complete matrices decides this for
/// whole runs of pairs at once).
#[tokio::test]
async fn min_periods_above_the_sample_count_of_a_complete_matrix() {
    let ctx = crate::common::ctx(2);
    let ties = "tests/data/bladder_ties.parquet";
    let all = crate::common::run(
        &ctx,
        &format!(
            "SET kendall.min_periods = 58; SELECT count(*) AS rows, count(tau) AS taus, \
             min(n) AS n_min, max(n) AS n_max FROM kendall_all_pairs('{ties}')"
        ),
    )
    .await
    .unwrap();
    let shown = datafusion::arrow::util::pretty::pretty_format_batches(&all)
        .unwrap()
        .to_string();
    assert!(shown.contains("| 1830 | 0    | 57    | 57    |"), "{shown}");
    let kept = crate::common::run(
        &ctx,
        &format!("SELECT count(*) AS c FROM kendall_all_pairs('{ties}') WHERE tau > -2"),
    )
    .await
    .unwrap();
    let shown = datafusion::arrow::util::pretty::pretty_format_batches(&kept)
        .unwrap()
        .to_string();
    assert!(shown.contains("| 0 |"), "{shown}");
    // At 57 the same query keeps every pair but the constant probe's NaNs...
    let at_n = crate::common::run(
        &ctx,
        &format!(
            "SET kendall.min_periods = 57; SELECT count(tau) AS taus \
             FROM kendall_all_pairs('{ties}') WHERE tau > -2"
        ),
    )
    .await
    .unwrap();
    let shown = datafusion::arrow::util::pretty::pretty_format_batches(&at_n)
        .unwrap()
        .to_string();
    // ...which DataFusion orders above every number, so they pass too.
    assert!(shown.contains("| 1830 |"), "{shown}");
}

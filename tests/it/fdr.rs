//! The `q_value` column against scipy.stats.false_discovery_control
//! (`tests/data/*_fdr_reference.csv`, made by `scripts/fdr_reference.py`
//! from scipy's own p-values), and its filters against the unfiltered table.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Float64Type;

use crate::common::{self, ctx, run};

/// (gene_i, gene_j) -> q-value (NaN for NaN, None for NULL).
type Keyed = HashMap<(String, String), Option<f64>>;

/// (gene_i, gene_j) -> (q_bh, q_by) of a reference file.
fn reference(path: &str) -> HashMap<(String, String), (f64, f64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (
                (f[0].to_string(), f[1].to_string()),
                (f[3].parse().unwrap(), f[4].parse().unwrap()),
            )
        })
        .collect()
}

/// Runs `sql`, whose last statement returns `gene_i, gene_j, q_value`.
async fn q_values(partitions: usize, sql: &str) -> Keyed {
    let batches = run(&ctx(partitions), sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = HashMap::new();
    for b in &batches {
        let (gi, gj) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        let q = b.column(2).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            let key = (gi.value(r).to_string(), gj.value(r).to_string());
            let value = (!q.is_null(r)).then(|| q.value(r));
            assert!(out.insert(key, value).is_none(), "a pair twice: {sql}");
        }
    }
    out
}

fn assert_matches(
    got: &Keyed,
    expected: &HashMap<(String, String), (f64, f64)>,
    by: bool,
    what: &str,
) {
    assert_eq!(got.len(), expected.len(), "{what}: row count");
    let mut tested = 0;
    for (key, &(bh, by_q)) in expected {
        let e = if by { by_q } else { bh };
        let g = got[key];
        if e.is_nan() {
            // Not a test: NaN p-value (constant gene) or NULL (too few samples).
            assert!(
                g.is_none_or(f64::is_nan),
                "{what} {key:?}: expected no q-value, got {g:?}"
            );
        } else {
            let g = g.unwrap_or_else(|| panic!("{what} {key:?}: NULL, scipy {e}"));
            let rel = ((g - e) / e).abs();
            assert!(
                rel <= 1e-10,
                "{what} {key:?}: got {g}, scipy {e} (rel {rel:e})"
            );
            tested += 1;
        }
    }
    assert!(tested > 0, "{what}: nothing compared");
}

#[tokio::test]
async fn q_values_match_scipy() {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head.parquet");
    common::head_parquet("data/demo_expression.parquet", 120, &head);
    let cases = [
        // Ties in every gene and a constant probe (60 NaN p-values).
        (
            "tests/data/bladder_ties.parquet".to_string(),
            "bladder_ties",
        ),
        // 120 real genes, mostly without ties.
        (head.display().to_string(), "demo_head"),
        // Missing values: each pair on its own shared samples (many contexts).
        (
            "tests/data/bladder_missing.parquet".to_string(),
            "bladder_missing",
        ),
    ];
    for (file, name) in &cases {
        let expected = reference(&format!("tests/data/{name}_fdr_reference.csv"));
        for (fdr, by) in [("bh", false), ("by", true)] {
            for partitions in [1, 3] {
                let got = q_values(
                    partitions,
                    &format!(
                        "SET kendall.fdr = '{fdr}'; \
                         SELECT gene_i, gene_j, q_value FROM kendall_all_pairs('{file}')"
                    ),
                )
                .await;
                assert_matches(&got, &expected, by, &format!("{name} {fdr} x{partitions}"));
            }
        }
    }
}

#[tokio::test]
async fn q_values_are_the_same_bits_for_every_kernel() {
    let sql = |kernel: &str| {
        format!(
            "SET kendall.kernel = '{kernel}'; \
             SELECT gene_i, gene_j, q_value FROM kendall_all_pairs('tests/data/bladder_ties.parquet')"
        )
    };
    let bits = |k: &Keyed| {
        let mut v: Vec<_> = k
            .iter()
            .map(|(key, q)| (key.clone(), q.map(f64::to_bits)))
            .collect();
        v.sort();
        v
    };
    let naive = bits(&q_values(2, &sql("naive")).await);
    for kernel in ["gse", "vse", "bitset", "zero"] {
        assert_eq!(bits(&q_values(2, &sql(kernel)).await), naive, "{kernel}");
    }
}

/// Every row of the unfiltered table, with its q-value bits.
async fn all_rows(file: &str) -> Keyed {
    q_values(
        2,
        &format!("SELECT gene_i, gene_j, q_value FROM kendall_all_pairs('{file}')"),
    )
    .await
}

#[tokio::test]
async fn q_value_filters_are_exact_and_pushed_down() {
    const FILE: &str = "tests/data/bladder_missing.parquet";
    let all = all_rows(FILE).await;
    for (cmp, alpha) in [("<", 0.05), ("<=", 0.01), ("<", 1e-6), (">=", 0.5)] {
        let keep = |q: f64| match cmp {
            "<" => q < alpha,
            "<=" => q <= alpha,
            _ => q >= alpha || q.is_nan(),
        };
        let mut expected: Vec<_> = all
            .iter()
            .filter(|(_, q)| q.is_some_and(keep))
            .map(|(k, q)| (k.clone(), q.map(f64::to_bits)))
            .collect();
        expected.sort();
        assert!(
            !expected.is_empty() && expected.len() < all.len(),
            "{cmp} {alpha}"
        );
        let sql = format!(
            "SELECT gene_i, gene_j, q_value FROM kendall_all_pairs('{FILE}') WHERE q_value {cmp} {alpha}"
        );
        let mut got: Vec<_> = q_values(2, &sql)
            .await
            .into_iter()
            .map(|(k, q)| (k, q.map(f64::to_bits)))
            .collect();
        got.sort();
        assert_eq!(got, expected, "{sql}");
    }
    // The filter is applied inside the scan, and the family is named.
    let plan = common::plan(
        &ctx(2),
        &format!(
            "EXPLAIN SELECT gene_i, gene_j FROM kendall_all_pairs('{FILE}') WHERE q_value < 0.05"
        ),
    )
    .await;
    common::assert_contains(
        &plan,
        &["filter=q_value < 0.05", "q_value=bh over all pairs"],
    );
    assert!(!plan.contains("FilterExec"), "{plan}");
}

#[tokio::test]
async fn a_gene_filter_does_not_change_the_family() {
    const FILE: &str = "tests/data/bladder_ties.parquet";
    let all = all_rows(FILE).await;
    let gene = "1053_at";
    let got = q_values(
        2,
        &format!(
            "SELECT gene_i, gene_j, q_value FROM kendall_all_pairs('{FILE}') \
             WHERE gene_i = '{gene}' OR gene_j = '{gene}'"
        ),
    )
    .await;
    assert_eq!(got.len(), 60);
    for (key, q) in &got {
        assert_eq!(q.map(f64::to_bits), all[key].map(f64::to_bits), "{key:?}");
    }
}

#[tokio::test]
async fn q_values_with_p_values_and_other_columns() {
    // q ≥ p for BH (M / rank ≥ 1), both read in one query, with a tau filter.
    let batches = run(
        &ctx(2),
        "SELECT p_value, q_value, tau, n FROM kendall_all_pairs('tests/data/bladder_missing.parquet') \
         WHERE abs(tau) >= 0.3",
    )
    .await
    .unwrap();
    let mut rows = 0;
    for b in &batches {
        let (p, q) = (
            b.column(0).as_primitive::<Float64Type>(),
            b.column(1).as_primitive::<Float64Type>(),
        );
        for r in 0..b.num_rows() {
            assert_eq!(p.is_null(r), q.is_null(r));
            if !p.is_null(r) && !p.value(r).is_nan() {
                assert!(q.value(r) >= p.value(r) && q.value(r) <= 1.0);
                rows += 1;
            }
        }
    }
    assert!(rows > 0);
    let msg = common::error(&ctx(1), "SET kendall.fdr = 'holm'").await;
    common::assert_contains(&msg, &["kendall.fdr", "'bh'", "'by'", "holm"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_query_stops_its_counting_pass() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use datafusion::arrow::array::{ArrayRef, Float64Array};
    use datafusion::physical_plan::{ExecutionPlan, collect};

    // 60 genes x 1,000 samples with the naive kernel: the counting pass over
    // 1,770 pairs takes a few seconds (a debug build's naive kernel).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.parquet");
    let n = 1000;
    let gene = |k: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(
            (0..n).map(|s| ((s * (2 * k + 1) * 7919 + k * 31) % 10007) as f64),
        ))
    };
    let columns: Vec<(String, ArrayRef)> = (0..60).map(|k| (format!("g{k}"), gene(k))).collect();
    common::write_parquet(
        &path,
        &common::batch(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), Arc::clone(a)))
                .collect(),
        ),
    );
    let ctx = ctx(2);
    run(
        &ctx,
        "SET kendall.layout = 'genes_as_columns'; SET kendall.kernel = 'naive'",
    )
    .await
    .unwrap();
    let sql = format!(
        "SELECT count(*) FROM kendall_all_pairs('{}') WHERE q_value < 0.05",
        path.display()
    );
    let plan = |ctx: &datafusion::prelude::SessionContext| {
        let (ctx, sql) = (ctx.clone(), sql.clone());
        async move {
            ctx.sql(&sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap()
        }
    };
    // How long the whole query takes here (its counting pass is most of it).
    let whole = Instant::now();
    collect(plan(&ctx).await, ctx.task_ctx()).await.unwrap();
    let whole = whole.elapsed();
    let plan: Arc<dyn ExecutionPlan> = plan(&ctx).await;
    let task = tokio::spawn(collect(Arc::clone(&plan), ctx.task_ctx()));
    let started = Instant::now();
    while common::kendall_metric(&plan, "input_loads") == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "no load");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Into the counting pass (reading and ranking take a few milliseconds).
    tokio::time::sleep(whole / 5).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let aborted = Instant::now();
    while common::kendall_metric(&plan, "input_loads_stopped") == 0 {
        assert!(
            aborted.elapsed() < Duration::from_secs(20),
            "the load went on after the query was cancelled"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let latency = aborted.elapsed();
    eprintln!("counting pass stopped {latency:?} after the abort (whole query {whole:?})");
    assert!(
        latency < whole / 2,
        "stopped {latency:?} after the abort; the whole query takes {whole:?}"
    );
}

//! `kendall.alternative`, `kendall.continuity`, exact p-values above 1,000
//! samples and `kendall.missing = 'complete' | 'propagate'` against scipy and
//! R (references made by scripts/kendall_parity_reference.py and .R).
//!
//! Tolerances: tau to 1e-12 relative (scipy's own tests); p- and q-values to
//! 1e-9 relative (scipy's tests use 1e-7), with values below 1e-290 (an
//! underflow in one implementation and not the other) equal to 0. R's exact
//! p-values (`pkendall`, permutation counts in doubles) differ from scipy's by
//! up to 7.3e-8 relative in the far tail (demo_30: 1.3899857e-8 against
//! 1.3899856e-8), so they are compared at scipy's own rtol, 1e-7.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};

use crate::common::{ctx, error, run};

type Key = (String, String);
/// Per pair, its values by column name (`None` for NULL).
type Table = HashMap<Key, HashMap<String, Option<f64>>>;

/// A reference CSV: `gene_i,gene_j,<columns>`, `nan` for NaN.
fn reference(path: &str) -> Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let values = header[2..]
                .iter()
                .zip(&f[2..])
                .map(|(h, v)| (h.clone(), Some(v.parse::<f64>().unwrap())))
                .collect();
            ((f[0].to_string(), f[1].to_string()), values)
        })
        .collect()
}

/// The rows of `sql` (last statement): gene_i, gene_j, then numeric columns.
async fn query(sql: &str) -> Table {
    let ctx = ctx(2);
    let batches = run(&ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Table::new();
    for b in &batches {
        let schema = b.schema();
        let (gi, gj) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        for r in 0..b.num_rows() {
            let mut values = HashMap::new();
            for (c, field) in schema.fields().iter().enumerate().skip(2) {
                let col = b.column(c);
                let v = (!col.is_null(r)).then(|| match field.data_type() {
                    DataType::Int64 => col.as_primitive::<Int64Type>().value(r) as f64,
                    _ => col.as_primitive::<Float64Type>().value(r),
                });
                values.insert(field.name().clone(), v);
            }
            let key = (gi.value(r).to_string(), gj.value(r).to_string());
            assert!(out.insert(key, values).is_none(), "a pair twice: {sql}");
        }
    }
    out
}

/// Asserts `got[column]` matches `expected[reference_column]` for every
/// reference pair (and that both have the same pairs).
fn assert_matches(got: &Table, column: &str, expected: &Table, reference_column: &str, rtol: f64) {
    assert_eq!(got.len(), expected.len(), "{column}: row count");
    for (key, values) in expected {
        let e = values[reference_column].unwrap();
        let row = got
            .get(key)
            .unwrap_or_else(|| panic!("{key:?}: no such row"));
        let g = row[column].unwrap_or_else(|| panic!("{column} {key:?}: NULL, expected {e}"));
        if e.is_nan() {
            assert!(g.is_nan(), "{column} {key:?}: expected NaN, got {g}");
            continue;
        }
        if e.abs() < 1e-290 && g.abs() < 1e-290 {
            continue;
        }
        let rel = ((g - e) / e).abs();
        assert!(
            rel <= rtol,
            "{column} vs {reference_column} {key:?}: got {g}, expected {e} (rel {rel:e})"
        );
    }
}

const P_TOL: f64 = 1e-9;
const TAU_TOL: f64 = 1e-12;
/// R's exact p-values: see the module's comment.
const R_EXACT_TOL: f64 = 1e-7;

#[tokio::test]
async fn one_sided_p_values_with_missing_values_match_scipy() {
    let expected = reference("tests/data/parity_scipy_missing.csv");
    for alternative in ["less", "greater"] {
        let sql = format!(
            "SET kendall.min_periods = 0; SET kendall.alternative = '{alternative}'; \
             SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/bladder_missing.parquet')"
        );
        let got = query(&sql).await;
        // scipy gives NaN where we give NULL (fewer than 2 shared samples):
        // compare the pairs with a p-value.
        let got: Table = got
            .into_iter()
            .filter(|(_, v)| v["p_value"].is_some())
            .collect();
        let expected: Table = expected
            .iter()
            .filter(|(k, _)| got.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert!(expected.len() > 2400, "{}", expected.len());
        assert_matches(
            &got,
            "p_value",
            &expected,
            &format!("p_{alternative}"),
            P_TOL,
        );
    }
}

#[tokio::test]
async fn alternatives_and_continuity_match_r() {
    let demo = reference("tests/data/parity_r_demo30.csv");
    let ties = reference("tests/data/parity_r_ties.csv");
    for (alternative, short) in [
        ("two-sided", "two"),
        ("less", "less"),
        ("greater", "greater"),
    ] {
        for (method, continuity, column) in [
            ("exact", "false", "p_exact"),
            ("exact", "true", "p_exact"), // continuity leaves exact p-values alone
            ("asymptotic", "false", "p_asym"),
            ("asymptotic", "true", "p_cont"),
        ] {
            let sql = |file: &str| {
                format!(
                    "SET kendall.alternative = '{alternative}'; SET kendall.pvalue = '{method}'; \
                     SET kendall.continuity = {continuity}; \
                     SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('{file}')"
                )
            };
            let got = query(&sql("tests/data/demo_30_reference.parquet")).await;
            assert_matches(&got, "tau", &demo, "tau", TAU_TOL);
            let tol = if method == "exact" {
                R_EXACT_TOL
            } else {
                P_TOL
            };
            assert_matches(&got, "p_value", &demo, &format!("{column}_{short}"), tol);
            if method == "asymptotic" {
                let got = query(&sql("tests/data/bladder_ties.parquet")).await;
                assert_matches(&got, "p_value", &ties, &format!("{column}_{short}"), P_TOL);
            }
        }
    }
}

#[tokio::test]
async fn q_values_and_pushed_down_filters_use_the_chosen_alternative() {
    let expected = reference("tests/data/parity_scipy_ties.csv");
    let base = "SET kendall.alternative = 'greater'; \
                SELECT gene_i, gene_j, p_value, q_value FROM kendall_all_pairs('tests/data/bladder_ties.parquet')";
    let got = query(base).await;
    assert_matches(&got, "p_value", &expected, "p_greater", P_TOL);
    assert_matches(&got, "q_value", &expected, "q_greater", P_TOL);
    // Pushed-down filters keep exactly the rows the unfiltered table has.
    for filter in ["p_value < 0.01", "q_value < 0.05", "p_value > 0.99"] {
        let filtered = query(&format!("{base} WHERE {filter}")).await;
        let (column, op_lt, bound) = match filter {
            "p_value < 0.01" => ("p_value", true, 0.01),
            "q_value < 0.05" => ("q_value", true, 0.05),
            _ => ("p_value", false, 0.99),
        };
        let wanted: Vec<&Key> = got
            .iter()
            .filter(|(_, v)| {
                // NaN (constant-probe pairs) compares above every number.
                let x = v[column].unwrap();
                if op_lt {
                    x < bound
                } else {
                    x.is_nan() || x > bound
                }
            })
            .map(|(k, _)| k)
            .collect();
        assert!(!wanted.is_empty(), "{filter}");
        assert_eq!(filtered.len(), wanted.len(), "{filter}");
        for k in wanted {
            assert!(filtered.contains_key(k), "{filter}: {k:?} missing");
        }
    }
    // 'less' and 'greater' differ where tau > 0.
    let less = query(&base.replace("'greater'", "'less'")).await;
    assert_matches(&less, "p_value", &expected, "p_less", P_TOL);
}

#[tokio::test]
async fn exact_p_values_above_1000_samples_match_scipy() {
    let expected = reference("tests/data/parity_scipy_large.csv");
    for (alternative, column) in [
        ("two-sided", "p_exact"),
        ("less", "p_exact_less"),
        ("greater", "p_exact_greater"),
    ] {
        let got = query(&format!(
            "SET kendall.pvalue = 'exact'; SET kendall.alternative = '{alternative}'; \
             SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('tests/data/large_exact.parquet')"
        ))
        .await;
        assert_matches(&got, "tau", &expected, "tau", TAU_TOL);
        assert_matches(&got, "p_value", &expected, column, P_TOL);
    }
    // auto keeps scipy's rule: asymptotic at n = 1,100.
    let got = query(
        "SET kendall.alternative = 'greater'; \
         SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/large_exact.parquet')",
    )
    .await;
    assert_matches(&got, "p_value", &expected, "p_asym_greater", P_TOL);
}

#[tokio::test]
async fn propagate_gives_nan_as_scipy() {
    let expected = reference("tests/data/parity_scipy_missing.csv");
    let got = query(
        "SET kendall.missing = 'propagate'; \
         SELECT gene_i, gene_j, tau, p_value, q_value FROM kendall_all_pairs('tests/data/bladder_missing.parquet')",
    )
    .await;
    assert_matches(&got, "tau", &expected, "tau_propagate", TAU_TOL);
    assert_matches(&got, "p_value", &expected, "p_propagate", P_TOL);
    // NaN, never NULL; q-values only for the complete pairs.
    let nan_pairs = got
        .values()
        .filter(|v| v["tau"].is_some_and(f64::is_nan))
        .count();
    assert!(nan_pairs > 1000, "{nan_pairs}");
    for (k, v) in &got {
        assert!(v["tau"].is_some(), "{k:?}: NULL under 'propagate'");
        let (p, q) = (v["p_value"].unwrap(), v["q_value"].unwrap());
        assert_eq!(p.is_nan(), q.is_nan(), "{k:?}: p {p}, q {q}");
    }
    // Pushed-down filters agree with the table (NaN is above every number).
    let big = query(
        "SET kendall.missing = 'propagate'; \
         SELECT gene_i, gene_j, tau FROM kendall_all_pairs('tests/data/bladder_missing.parquet') \
         WHERE abs(tau) > 0.5",
    )
    .await;
    let wanted = got
        .values()
        .filter(|v| {
            let t = v["tau"].unwrap();
            t.is_nan() || t.abs() > 0.5
        })
        .count();
    assert_eq!(big.len(), wanted);
}

#[tokio::test]
async fn complete_is_listwise_as_r() {
    let r = reference("tests/data/parity_r_listwise.csv");
    let scipy = reference("tests/data/parity_scipy_listwise.csv");
    for kernel in ["gse", "bitset", "naive"] {
        let got = query(&format!(
            "SET kendall.missing = 'complete'; SET kendall.kernel = '{kernel}'; \
             SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('tests/data/listwise_missing.parquet')"
        ))
        .await;
        assert_matches(&got, "tau", &r, "tau", TAU_TOL);
        assert_matches(&got, "tau", &scipy, "tau", TAU_TOL);
        assert_matches(&got, "n", &scipy, "n", 0.0);
        assert_matches(&got, "p_value", &scipy, "p_value", P_TOL);
        // R's default (exact for n < 50 without ties) differs from scipy's
        // auto (n <= 33) only above 33 samples: here n = 19.
        assert_matches(&got, "p_value", &r, "p_value", R_EXACT_TOL);
    }
    let got = query(
        "SET kendall.missing = 'complete'; SET kendall.alternative = 'greater'; \
         SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('tests/data/listwise_missing.parquet')",
    )
    .await;
    assert_matches(&got, "p_value", &r, "p_greater", R_EXACT_TOL);
    assert_matches(&got, "p_value", &scipy, "p_greater", P_TOL);
}

#[tokio::test]
async fn option_values_are_refused_by_name() {
    let ctx = ctx(1);
    let e = error(&ctx, "SET kendall.alternative = 'sideways'").await;
    assert!(
        e.contains(
            "kendall.alternative must be one of 'two-sided', 'less', 'greater', got 'sideways'"
        ),
        "{e}"
    );
    let e = error(&ctx, "SET kendall.continuity = 'maybe'").await;
    assert!(
        e.contains("kendall.continuity must be 'false' or 'true', got 'maybe'"),
        "{e}"
    );
    let e = error(&ctx, "SET kendall.missing = 'drop'").await;
    assert!(
        e.contains("'pairwise', 'complete', 'propagate', 'error'"),
        "{e}"
    );
    // Aliases from scipy and R.
    for ok in [
        "SET kendall.alternative = 'two_sided'",
        "SET kendall.alternative = 'two.sided'",
        "SET kendall.continuity = TRUE",
        "SET kendall.missing = 'complete.obs'",
    ] {
        run(&ctx, ok).await.unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

/// R's help page of `cor.test` (Hollander & Wolfe, p. 187): `cor.test(x, y,
/// method = "kendall", alternative = "greater")` gives p = 0.05972 exactly
/// and 0.04765 with `exact = FALSE` (values from R 4.2.2 to 17 digits).
#[tokio::test]
async fn r_help_page_example_one_sided() {
    let x = [44.4, 45.9, 41.9, 53.3, 44.7, 44.1, 50.7, 45.2, 60.1];
    let y = [2.6, 3.1, 2.5, 5.0, 3.6, 4.0, 5.2, 2.8, 3.8];
    let batch = crate::common::batch(vec![
        (
            "x",
            std::sync::Arc::new(datafusion::arrow::array::Float64Array::from(x.to_vec())),
        ),
        (
            "y",
            std::sync::Arc::new(datafusion::arrow::array::Float64Array::from(y.to_vec())),
        ),
    ]);
    for (method, continuity, expected) in [
        ("exact", "false", 0.0597194664902998),
        ("asymptotic", "false", 0.047646419011728273),
        ("asymptotic", "true", 0.058_925_447_510_682_51),
    ] {
        let ctx = ctx(1);
        let table =
            datafusion::datasource::MemTable::try_new(batch.schema(), vec![vec![batch.clone()]])
                .unwrap();
        ctx.register_table("hollander", std::sync::Arc::new(table))
            .unwrap();
        let sql = format!(
            "SET kendall.layout = 'genes_as_columns'; SET kendall.alternative = 'greater'; \
             SET kendall.pvalue = '{method}'; SET kendall.continuity = {continuity}; \
             SELECT tau, p_value FROM kendall_all_pairs('hollander')"
        );
        let batches = run(&ctx, &sql).await.unwrap();
        let tau = batches[0].column(0).as_primitive::<Float64Type>().value(0);
        let p = batches[0].column(1).as_primitive::<Float64Type>().value(0);
        assert!((tau - 0.44444444444444453).abs() <= 1e-15, "tau {tau}");
        let rel = ((p - expected) / expected).abs();
        assert!(
            rel <= R_EXACT_TOL,
            "{method} continuity={continuity}: p {p}, R {expected}"
        );
    }
}

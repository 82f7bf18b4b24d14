//! `kendall_top_partners`: equals a full sort of `kendall_all_pairs`'s rows
//! (both orientations, larger |tau| first, then the partner first in the
//! input), for any number of partitions, variants and missing values.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::prelude::SessionContext;

use crate::common::{assert_contains, ctx, error, head_parquet, read_parquet, run};

const TIES: &str = "tests/data/bladder_ties.parquet";
const MISSING: &str = "tests/data/bladder_missing.parquet";
const DEMO: &str = "data/demo_expression.parquet";

/// One row: gene, partner, tau, rank, p_value (NaN when NULL), n.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    gene: String,
    partner: String,
    tau: f64,
    rank: i64,
    p_value: f64,
    n: i64,
}

/// The gene ids of a Parquet source, in file order (first column).
fn gene_order(path: &str) -> HashMap<String, usize> {
    let b = read_parquet(path);
    let ids = b.column(0).as_string::<i32>();
    (0..ids.len())
        .map(|r| (ids.value(r).to_string(), r))
        .collect()
}

/// Rows of `kendall_top_partners(source, k)` after the statements `setup`.
async fn top(ctx: &SessionContext, setup: &str, source: &str, k: usize) -> Vec<Row> {
    let sql = format!(
        "{setup} SELECT gene, partner, tau, rank, p_value, n \
         FROM kendall_top_partners('{source}', {k})"
    );
    let batches = run(ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for b in &batches {
        let (g, p) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        let tau = b.column(2).as_primitive::<Float64Type>();
        let rank = b.column(3).as_primitive::<Int64Type>();
        let pv = b.column(4).as_primitive::<Float64Type>();
        let n = b.column(5).as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            assert!(!tau.is_null(r));
            out.push(Row {
                gene: g.value(r).to_string(),
                partner: p.value(r).to_string(),
                tau: tau.value(r),
                rank: rank.value(r),
                p_value: if pv.is_null(r) { f64::NAN } else { pv.value(r) },
                n: n.value(r),
            });
        }
    }
    out
}

/// The expected rows: every pair of `kendall_all_pairs` in both
/// orientations, NULL/NaN tau dropped, each gene's partners sorted by
/// |tau| descending then input position, the first `k` kept, in input
/// order of genes.
async fn reference(
    ctx: &SessionContext,
    setup: &str,
    source: &str,
    order: &HashMap<String, usize>,
    k: usize,
) -> Vec<Row> {
    let sql = format!(
        "{setup} SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{source}')"
    );
    let batches = run(ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut partners: HashMap<String, Vec<Row>> = HashMap::new();
    for b in &batches {
        let (gi, gj) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        let tau = b.column(2).as_primitive::<Float64Type>();
        let pv = b.column(3).as_primitive::<Float64Type>();
        let n = b.column(4).as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            if tau.is_null(r) || tau.value(r).is_nan() {
                continue;
            }
            for (g, p) in [(gi.value(r), gj.value(r)), (gj.value(r), gi.value(r))] {
                partners.entry(g.to_string()).or_default().push(Row {
                    gene: g.to_string(),
                    partner: p.to_string(),
                    tau: tau.value(r),
                    rank: 0,
                    p_value: if pv.is_null(r) { f64::NAN } else { pv.value(r) },
                    n: n.value(r),
                });
            }
        }
    }
    let mut genes: Vec<&String> = order.keys().collect();
    genes.sort_by_key(|g| order[*g]);
    let mut out = Vec::new();
    for g in genes {
        let mut rows = partners.remove(g).unwrap_or_default();
        rows.sort_by(|a, b| {
            b.tau
                .abs()
                .total_cmp(&a.tau.abs())
                .then(order[&a.partner].cmp(&order[&b.partner]))
        });
        for (rank, mut row) in rows.into_iter().take(k).enumerate() {
            row.rank = rank as i64 + 1;
            out.push(row);
        }
    }
    out
}

/// Sorted by (gene position, rank): the order the rows come in.
fn sorted(mut rows: Vec<Row>, order: &HashMap<String, usize>) -> Vec<Row> {
    rows.sort_by_key(|r| (order[&r.gene], r.rank));
    rows
}

fn assert_same(got: &[Row], want: &[Row], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    for (g, w) in got.iter().zip(want) {
        let same_p = g.p_value == w.p_value || (g.p_value.is_nan() && w.p_value.is_nan());
        assert!(
            g.gene == w.gene
                && g.partner == w.partner
                && g.tau == w.tau
                && g.rank == w.rank
                && same_p
                && g.n == w.n,
            "{what}: got {g:?}, want {w:?}"
        );
    }
}

/// Checks `source` for k in {1, 5, 60} and 1, 2 and 3 partitions.
async fn check(source: &str, setup: &str) {
    let order = gene_order(source);
    for k in [1, 5, 60] {
        let want = reference(&ctx(2), setup, source, &order, k).await;
        assert!(!want.is_empty());
        for partitions in [1, 2, 3] {
            let got = top(&ctx(partitions), setup, source, k).await;
            // Rows come in gene order, partners by rank, whatever the partitions.
            assert_same(&got, &sorted(got.clone(), &order), "output order");
            assert_same(
                &got,
                &want,
                &format!("{source} {setup} k={k} partitions={partitions}"),
            );
        }
    }
}

#[tokio::test]
async fn top_partners_equal_a_full_sort_with_ties_and_a_constant_gene() {
    check(TIES, "").await;
    // 61 genes, one constant: k = 60 gives each of the 60 others every
    // partner but the constant one, and the constant gene none.
    let got = top(&ctx(2), "", TIES, 60).await;
    assert_eq!(got.len(), 60 * 59);
    assert!(
        got.iter()
            .all(|r| r.gene != "CONSTANT_PROBE" && r.partner != "CONSTANT_PROBE")
    );
}

#[tokio::test]
async fn top_partners_variants_a_and_c() {
    check(TIES, "SET kendall.variant = 'a';").await;
    check(TIES, "SET kendall.variant = 'c';").await;
}

#[tokio::test]
async fn top_partners_with_missing_values() {
    check(MISSING, "").await;
    check(MISSING, "SET kendall.min_periods = 30;").await;
}

#[tokio::test]
async fn top_partners_first_300_demo_genes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo300.parquet");
    head_parquet(DEMO, 300, &path);
    check(path.to_str().unwrap(), "").await;
}

#[tokio::test]
async fn top_partners_bad_k_is_an_error() {
    let ctx = ctx(2);
    for k in ["0", "-3", "2.5", "NULL", "'5'"] {
        let msg = error(
            &ctx,
            &format!("SELECT * FROM kendall_top_partners('{TIES}', {k})"),
        )
        .await;
        assert_contains(
            &msg,
            &["kendall_top_partners", "k must be a positive integer"],
        );
    }
    let msg = error(
        &ctx,
        &format!("SELECT * FROM kendall_top_partners('{TIES}')"),
    )
    .await;
    assert_contains(&msg, &["kendall_top_partners(source, k"]);
}

#[tokio::test]
async fn top_partners_count_and_explain() {
    let ctx = ctx(2);
    let batches = run(
        &ctx,
        &format!("SELECT count(*) FROM kendall_top_partners('{TIES}', 5)"),
    )
    .await
    .unwrap();
    let count = batches[0].column(0).as_primitive::<Int64Type>().value(0);
    // 60 genes with 5 partners each; the constant gene has none.
    assert_eq!(count, 300);
    let plan = crate::common::plan(
        &ctx,
        &format!("EXPLAIN SELECT * FROM kendall_top_partners('{TIES}', 5)"),
    )
    .await;
    assert_contains(&plan, &["KendallExec", "top_k=5"]);
}

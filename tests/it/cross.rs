//! `kendall_cross_pairs` against R's `cor(x, y, method = "kendall")`
//! (`tests/data/cross_reference.csv`, made by `scripts/cross_reference.R`
//! from `tests/data/cross_left.csv` and `cross_right.csv`, whose samples
//! are in different orders and only partly shared).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array, StringArray};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::datasource::MemTable;

use crate::common::{self, ctx, run, sorted_bits};

const LEFT: &str = "tests/data/cross_left.csv";
const RIGHT: &str = "tests/data/cross_right.csv";

fn all(extra: &str) -> String {
    format!(
        "SELECT gene_i, gene_j, tau, p_value, n, q_value FROM kendall_cross_pairs('{LEFT}', '{RIGHT}') {extra}"
    )
}

#[tokio::test]
async fn cross_pairs_match_r() {
    let expected = common::by_key(&common::reference("tests/data/cross_reference.csv"));
    assert_eq!(expected.len(), 30 * 21);
    let mut first = None;
    for partitions in [1, 2, 3] {
        for kernel in ["naive", "gse", "vse", "bitset", "zero"] {
            let sql = format!("SET kendall.kernel = '{kernel}'; {}", all(""));
            let batches = run(&ctx(partitions), &sql).await.unwrap();
            let got = common::by_key(&common::pairs(&ctx(partitions), &sql).await);
            assert_eq!(got.len(), expected.len(), "{kernel} x{partitions}");
            for (key, e) in &expected {
                let g = got[key];
                assert!((g - e).abs() <= 1e-12, "{key:?} {kernel}: {g} vs R {e}");
            }
            // Every kernel and partition count: the same bits.
            let bits = sorted_bits(&batches);
            match &first {
                None => first = Some(bits),
                Some(f) => assert_eq!(&bits, f, "{kernel} x{partitions}"),
            }
        }
    }
    // 45 shared samples, one value missing on the left.
    let batches = run(&ctx(1), &all("WHERE n < 45")).await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 21);
}

#[tokio::test]
async fn filters_and_q_values_over_the_cross_family() {
    let everything = run(&ctx(2), &all("")).await.unwrap();
    // BH over the 630 left x right p-values, as scipy computes it.
    let mut ps: Vec<(f64, f64)> = Vec::new();
    for b in &everything {
        let p = b.column(3).as_primitive::<Float64Type>();
        let q = b.column(5).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            ps.push((p.value(r), q.value(r)));
        }
    }
    ps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let m = ps.len() as f64;
    let mut running = f64::INFINITY;
    for k in (0..ps.len()).rev() {
        running = running.min(ps[k].0 * (m / (k + 1) as f64));
        let q = running.min(1.0);
        assert!((ps[k].1 - q).abs() <= 1e-12 * q, "{:?} vs {q}", ps[k]);
    }
    // Pushed-down filters keep exactly the rows filtering afterwards keeps.
    let kept = sorted_bits(
        &run(&ctx(2), &all("WHERE abs(tau) >= 0.3 AND q_value < 0.05"))
            .await
            .unwrap(),
    );
    let mut expected = Vec::new();
    for b in &everything {
        let q = b.column(5).as_primitive::<Float64Type>();
        let bits = sorted_bits(std::slice::from_ref(b));
        // sorted_bits reorders rows: match q-values by pair, not position.
        let pairs = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        for r in 0..b.num_rows() {
            let key = (pairs.0.value(r), pairs.1.value(r));
            let row = bits
                .iter()
                .find(|x| (x.0.as_str(), x.1.as_str()) == key)
                .unwrap();
            if f64::from_bits(row.2).abs() >= 0.3 && q.value(r) < 0.05 {
                expected.push(row.clone());
            }
        }
    }
    expected.sort();
    assert!(!kept.is_empty() && kept.len() < 630);
    assert_eq!(kept, expected);
    let one = run(&ctx(2), &all("WHERE gene_i = '1007_s_at'"))
        .await
        .unwrap();
    assert_eq!(one.iter().map(|b| b.num_rows()).sum::<usize>(), 21);
    // 1007_s_at is on both sides: 21 partners as gene_i, 30 as gene_j.
    let one = run(&ctx(2), &all("WHERE gene_j = '1007_s_at'"))
        .await
        .unwrap();
    assert_eq!(one.iter().map(|b| b.num_rows()).sum::<usize>(), 30);
    let plan = common::plan(&ctx(2), &format!("EXPLAIN {}", all("WHERE q_value < 0.05"))).await;
    common::assert_contains(
        &plan,
        &[
            "KendallExec",
            "x 'tests/data/cross_right.csv'",
            "filter=q_value < 0.05",
        ],
    );
}

/// Registers the wide CSV `path` as a memory table `name` of (gene, sample,
/// value) triples, leaving out missing values.
async fn register_long(ctx: &datafusion::prelude::SessionContext, path: &str, name: &str) {
    let wide = run(ctx, &format!("SELECT * FROM '{path}'")).await.unwrap();
    let (mut genes, mut samples, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for b in &wide {
        let ids = b.column(0).as_string::<i32>();
        for (c, field) in b.schema().fields().iter().enumerate().skip(1) {
            let column = b.column(c).as_primitive::<Float64Type>();
            for r in 0..b.num_rows() {
                if column.is_valid(r) {
                    genes.push(ids.value(r).to_string());
                    samples.push(field.name().clone());
                    values.push(column.value(r));
                }
            }
        }
    }
    let batch = common::batch(vec![
        ("gene", Arc::new(StringArray::from(genes)) as Arc<dyn Array>),
        ("sample", Arc::new(StringArray::from(samples))),
        ("value", Arc::new(Float64Array::from(values))),
    ]);
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table(name, Arc::new(table)).unwrap();
}

#[tokio::test]
async fn long_layouts_and_memory_tables_give_the_same_bits() {
    let ctx = ctx(2);
    let wide = sorted_bits(&run(&ctx, &all("")).await.unwrap());
    register_long(&ctx, LEFT, "left_long").await;
    register_long(&ctx, RIGHT, "right_long").await;
    let long = sorted_bits(
        &run(
            &ctx,
            "SET kendall.layout = 'long'; SET kendall.absent = 'missing'; \
             SELECT gene_i, gene_j, tau, p_value, n FROM kendall_cross_pairs('left_long', 'right_long')",
        )
        .await
        .unwrap(),
    );
    assert_eq!(long, wide);
}

#[tokio::test]
async fn cross_pair_errors() {
    let ctx = ctx(1);
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "gene_id,x1,x2\nA,1,2\nB,2,1\n").unwrap();
    let msg = common::error(
        &ctx,
        &format!(
            "SELECT * FROM kendall_cross_pairs('{LEFT}', '{}')",
            other.display()
        ),
    )
    .await;
    common::assert_contains(
        &msg,
        &["kendall_cross_pairs", "share 0 sample name", "at least 2"],
    );
    let msg = common::error(
        &ctx,
        &format!("SELECT * FROM kendall_cross_pairs('{LEFT}')"),
    )
    .await;
    common::assert_contains(
        &msg,
        &["kendall_cross_pairs(left, right", "got 1 arguments"],
    );
    let msg = common::error(
        &ctx,
        &format!(
            "SET kendall.layout = 'genes_as_columns'; SELECT * FROM kendall_cross_pairs('{LEFT}', '{RIGHT}')"
        ),
    )
    .await;
    common::assert_contains(&msg, &["genes_as_columns", "matched by name"]);
}

/// `(gene_i, gene_j, tau, p_value, q_value)` of every row, the floats as
/// bits, sorted.
async fn rows_of(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
) -> Vec<(String, String, [u64; 3])> {
    let mut rows = Vec::new();
    for b in &run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")) {
        let (gi, gj) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_string::<i32>(),
        );
        let float =
            |c: usize, r: usize| b.column(c).as_primitive::<Float64Type>().value(r).to_bits();
        for r in 0..b.num_rows() {
            rows.push((
                gi.value(r).to_string(),
                gj.value(r).to_string(),
                [float(2, r), float(3, r), float(4, r)],
            ));
        }
    }
    rows.sort();
    rows
}

#[tokio::test]
async fn gene_filters_walk_only_the_touching_cross_pairs() {
    let select = format!(
        "SELECT gene_i, gene_j, tau, p_value, q_value FROM kendall_cross_pairs('{LEFT}', '{RIGHT}')"
    );
    // 1007_s_at is a left and a right gene.
    let (a, b, c) = ("1007_s_at", "1053_at", "200011_s_at");
    type Keep = Box<dyn Fn(&str, &str) -> bool>;
    let cases: Vec<(String, Keep, usize)> = vec![
        (format!("gene_i = '{b}'"), Box::new(move |i, _| i == b), 21),
        (format!("gene_j = '{c}'"), Box::new(move |_, j| j == c), 30),
        (
            format!("gene_i = '{a}' OR gene_j = '{a}'"),
            Box::new(move |i, j| i == a || j == a),
            21 + 30 - 1,
        ),
        (
            format!("gene_j IN ('200010_at', '{a}') AND gene_i <> '117_at'"),
            Box::new(move |i, j| (j == "200010_at" || j == a) && i != "117_at"),
            60,
        ),
        (
            format!("gene_i IN ('{b}', '121_at') AND gene_j = '{c}'"),
            Box::new(move |i, j| (i == b || i == "121_at") && j == c),
            30,
        ),
        // Of the two sides of an AND, the one with fewer pairs: 4 left
        // genes (4 x 21 pairs) rather than 3 right ones (3 x 30).
        (
            "gene_i IN ('1053_at', '117_at', '121_at', '1255_g_at') \
             AND gene_j IN ('200011_s_at', '200012_x_at', '200013_at')"
                .to_string(),
            Box::new(|i, j| {
                ["1053_at", "117_at", "121_at", "1255_g_at"].contains(&i)
                    && ["200011_s_at", "200012_x_at", "200013_at"].contains(&j)
            }),
            84,
        ),
        // Names that are no gene of their side have no pairs.
        (
            format!("gene_j IN ('NO_SUCH_GENE', '1053_at') AND gene_i = '{b}'"),
            Box::new(|_, _| false),
            0,
        ),
        (
            format!("NOT gene_i = '{b}'"),
            Box::new(move |i, _| i != b),
            630,
        ),
        (
            "gene_i = 'NO_SUCH_GENE'".to_string(),
            Box::new(|_, _| false),
            0,
        ),
    ];
    for partitions in [1, 3] {
        let ctx = ctx(partitions);
        let everything = rows_of(&ctx, &select).await;
        assert_eq!(everything.len(), 630);
        for (predicate, keep, computed) in &cases {
            let sql = format!("{select} WHERE {predicate}");
            // The same rows, tau, p- and q-values (over all 630 pairs) as
            // filtering every pair afterwards.
            let expected: Vec<_> = everything
                .iter()
                .filter(|(i, j, _)| keep(i, j))
                .cloned()
                .collect();
            assert_eq!(rows_of(&ctx, &sql).await, expected, "{predicate}");
            // Without q-values the kernel is chosen for the bounded pairs
            // (vse for a few genes' partners): the same bits.
            let without_q = format!(
                "SELECT gene_i, gene_j, tau, p_value, tau AS again \
                 FROM kendall_cross_pairs('{LEFT}', '{RIGHT}') WHERE {predicate}"
            );
            let expected_without_q: Vec<_> = expected
                .iter()
                .map(|(i, j, [t, p, _])| (i.clone(), j.clone(), [*t, *p, *t]))
                .collect();
            assert_eq!(
                rows_of(&ctx, &without_q).await,
                expected_without_q,
                "{predicate}"
            );
            // Only the pairs the filter bounds are computed (q-values count
            // every pair in a pass of their own, not in pairs_computed).
            let plan = common::plan(&ctx, &format!("EXPLAIN ANALYZE {sql}")).await;
            assert!(!plan.contains("FilterExec"), "{predicate}:\n{plan}");
            assert!(
                plan.contains(&format!("pairs_computed={computed},"))
                    || plan.contains(&format!("pairs_computed={computed}]")),
                "{predicate}: want {computed} pairs computed:\n{plan}"
            );
            let touching = *computed < 630;
            assert_eq!(
                plan.contains("pairs=touching"),
                touching,
                "{predicate}:\n{plan}"
            );
        }
    }
}

/// A right source whose plan starts tasks when it is executed (a view with
/// a LIMIT over a table of two partitions: its partitions are merged by
/// tasks) reads as the left one does, on the thread that reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_right_view_over_partitions_reads_as_a_file() {
    let ctx = ctx(2);
    let right = run(&ctx, &format!("SELECT * FROM '{RIGHT}'"))
        .await
        .unwrap();
    let rows: Vec<_> = right
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| b.slice(r, 1)))
        .collect();
    let half = rows.len() / 2;
    let table = MemTable::try_new(
        rows[0].schema(),
        vec![rows[..half].to_vec(), rows[half..].to_vec()],
    )
    .unwrap();
    ctx.register_table("right_parts", Arc::new(table)).unwrap();
    run(
        &ctx,
        "CREATE VIEW right_view AS SELECT * FROM right_parts LIMIT 1000",
    )
    .await
    .unwrap();
    let plan = common::plan(&ctx, "EXPLAIN SELECT * FROM right_view").await;
    assert!(plan.contains("CoalescePartitionsExec"), "{plan}");
    let sql = |right: &str| {
        format!(
            "SELECT gene_i, gene_j, tau, p_value, n FROM kendall_cross_pairs('{LEFT}', '{right}')"
        )
    };
    let expected = sorted_bits(&run(&ctx, &sql(RIGHT)).await.unwrap());
    let got = sorted_bits(&run(&ctx, &sql("right_view")).await.unwrap());
    assert_eq!(got.len(), 630);
    assert_eq!(got, expected);
    // Under a memory limit the two sides are read one after the other:
    // the same rows.
    let limited = format!(
        "SET datafusion.runtime.memory_limit = '1G'; {}",
        sql("right_view")
    );
    assert_eq!(sorted_bits(&run(&ctx, &limited).await.unwrap()), expected);
}

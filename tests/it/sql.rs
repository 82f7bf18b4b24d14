//! The SQL path end to end, against scipy reference values.

use crate::common;

use crate::common::{Pair, by_key, ctx, head_parquet, pairs, reference, run};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::util::pretty::pretty_format_batches;

const TIES: &str = "tests/data/bladder_ties.parquet";
const DEMO: &str = "data/demo_expression.parquet";

fn assert_matches_reference(got: &[Pair], expected: &[Pair], tol: f64) {
    assert_eq!(got.len(), expected.len(), "row count");
    let got = by_key(got);
    for e in expected {
        let key = (e.gene_i.clone(), e.gene_j.clone());
        let t = *got
            .get(&key)
            .unwrap_or_else(|| panic!("missing pair {key:?}"));
        if e.tau.is_nan() {
            assert!(t.is_nan(), "{key:?}: expected NaN, got {t}");
        } else {
            assert!(
                (t - e.tau).abs() <= tol,
                "{key:?}: got {t}, scipy {}",
                e.tau
            );
        }
    }
}

#[tokio::test]
async fn tau_b_matches_scipy_on_real_data_with_ties() {
    let expected = reference("tests/data/bladder_ties_reference.csv");
    for kernel in ["naive", "gse", "vse", "bitset", "zero", "auto"] {
        let ctx = ctx(3);
        let got = pairs(
            &ctx,
            &format!("SET kendall.kernel = '{kernel}'; SELECT * FROM kendall_all_pairs('{TIES}')"),
        )
        .await;
        assert_matches_reference(&got, &expected, 1e-12);
    }
}

#[tokio::test]
async fn tau_a_matches_exact_reference() {
    let expected = reference("tests/data/bladder_ties_reference_a.csv");
    for kernel in ["naive", "gse", "vse", "bitset", "zero"] {
        let ctx = ctx(2);
        let got = pairs(
            &ctx,
            &format!(
                "SET kendall.variant = 'a'; SET kendall.kernel = '{kernel}'; \
                 SELECT * FROM kendall_all_pairs('{TIES}', 'gene_id')"
            ),
        )
        .await;
        assert_matches_reference(&got, &expected, 1e-12);
    }
}

#[tokio::test]
async fn tau_c_matches_scipy() {
    let expected = reference("tests/data/bladder_ties_reference_c.csv");
    for kernel in ["gse", "bitset"] {
        let ctx = ctx(2);
        let got = pairs(
            &ctx,
            &format!(
                "SET kendall.variant = 'c'; SET kendall.kernel = '{kernel}'; \
                 SELECT * FROM kendall_all_pairs('{TIES}')"
            ),
        )
        .await;
        assert_matches_reference(&got, &expected, 1e-12);
    }
}

#[tokio::test]
async fn demo_head_matches_scipy() {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head.parquet");
    head_parquet(DEMO, 120, &head);
    let expected = reference("tests/data/demo_head_reference.csv");
    let ctx = ctx(4);
    let got = pairs(
        &ctx,
        &format!("SELECT * FROM kendall_all_pairs('{}')", head.display()),
    )
    .await;
    assert_matches_reference(&got, &expected, 1e-12);
}

/// Every unordered pair once, gene_i first in input order, no self pairs;
/// identical bits for any partition count and tile size.
#[tokio::test]
async fn partitions_and_tile_sizes_do_not_change_results() {
    let genes: Vec<String> = reference("tests/data/bladder_ties_reference.csv")
        .iter()
        .filter(|p| p.gene_i == "1007_s_at")
        .map(|p| p.gene_j.clone())
        .collect();
    let mut order = vec!["1007_s_at".to_string()];
    order.extend(genes);
    let position = |g: &str| order.iter().position(|x| x == g).unwrap();
    let m = order.len();

    let mut baseline: Option<Vec<(String, String, u64)>> = None;
    for partitions in 1..=8 {
        for tile in [1, 7, 16, 64, 1000] {
            let ctx = ctx(partitions);
            let rows = pairs(
                &ctx,
                &format!(
                    "SET kendall.tile_size = {tile}; SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{TIES}')"
                ),
            )
            .await;
            assert_eq!(rows.len(), m * (m - 1) / 2);
            let keys = by_key(&rows);
            assert_eq!(keys.len(), rows.len());
            for p in &rows {
                assert!(position(&p.gene_i) < position(&p.gene_j), "{p:?}");
            }
            let mut bits: Vec<(String, String, u64)> = rows
                .into_iter()
                .map(|p| (p.gene_i, p.gene_j, p.tau.to_bits()))
                .collect();
            bits.sort();
            match &baseline {
                None => baseline = Some(bits),
                Some(b) => assert_eq!(&bits, b, "partitions={partitions} tile={tile}"),
            }
        }
    }
}

/// What a predicate should keep, evaluated in Rust.
type Keep = Box<dyn Fn(f64) -> bool>;

#[tokio::test]
async fn tau_filters_are_pushed_down_and_exact() {
    let ctx = ctx(2);
    let all = pairs(&ctx, &format!("SELECT * FROM kendall_all_pairs('{TIES}')")).await;
    let cases: Vec<(&str, Keep)> = vec![
        (
            "abs(tau) >= 0.5",
            Box::new(|t: f64| t.is_nan() || t.abs() >= 0.5),
        ),
        ("tau > 0.6", Box::new(|t: f64| t.is_nan() || t > 0.6)),
        ("tau < -0.2", Box::new(|t: f64| t < -0.2)),
        ("tau <= 0.0", Box::new(|t: f64| t <= 0.0)),
        (
            "tau BETWEEN 0.1 AND 0.3",
            Box::new(|t: f64| (0.1..=0.3).contains(&t)),
        ),
        (
            "tau < -0.3 OR tau > 0.5 AND tau < 0.7",
            Box::new(|t: f64| t < -0.3 || (t > 0.5 && t < 0.7)),
        ),
        (
            "0.4 <= abs(tau)",
            Box::new(|t: f64| t.is_nan() || t.abs() >= 0.4),
        ),
    ];
    for (predicate, keep) in cases {
        let sql = format!("SELECT * FROM kendall_all_pairs('{TIES}') WHERE {predicate}");
        let key = |p: &Pair| (p.gene_i.clone(), p.gene_j.clone(), p.tau.to_bits());
        let mut got: Vec<_> = pairs(&ctx, &sql).await.iter().map(key).collect();
        let mut expected: Vec<_> = all.iter().filter(|p| keep(p.tau)).map(key).collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "{predicate}");
        assert!(
            !got.is_empty(),
            "{predicate}: test data should keep some rows"
        );

        let plan = common::plan(&ctx, &format!("EXPLAIN {sql}")).await;
        assert!(!plan.contains("FilterExec"), "{predicate}:\n{plan}");
        assert!(plan.contains("filter="), "{predicate}:\n{plan}");
    }
    // Any other filter (here LIKE) stays with DataFusion and still works.
    let sql = format!(
        "SELECT * FROM kendall_all_pairs('{TIES}') WHERE gene_i LIKE '1007%' AND abs(tau) > 0.3"
    );
    let got = pairs(&ctx, &sql).await;
    let expected = all
        .iter()
        .filter(|p| p.gene_i.starts_with("1007") && (p.tau.is_nan() || p.tau.abs() > 0.3))
        .count();
    assert!(expected > 0);
    assert_eq!(got.len(), expected);
    let plan = common::plan(&ctx, &format!("EXPLAIN {sql}")).await;
    assert!(plan.contains("FilterExec"), "{plan}");
    assert!(plan.contains("filter=abs(tau) > 0.3"), "{plan}");
}

#[tokio::test]
async fn limit_count_and_projection() {
    let ctx = ctx(4);
    let rows = pairs(
        &ctx,
        &format!("SELECT * FROM kendall_all_pairs('{DEMO}') LIMIT 5"),
    )
    .await;
    assert_eq!(rows.len(), 5);
    let batches = run(
        &ctx,
        &format!("SELECT count(*) AS c FROM kendall_all_pairs('{TIES}')"),
    )
    .await
    .unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    assert!(text.contains("| 1830 |"), "{text}");
    let batches = run(
        &ctx,
        &format!("SELECT gene_j FROM kendall_all_pairs('{TIES}') WHERE tau > 0.7"),
    )
    .await
    .unwrap();
    assert_eq!(batches[0].num_columns(), 1);
}

#[tokio::test]
async fn explain_and_explain_analyze_show_the_node_and_metrics() {
    let ctx = ctx(3);
    let plan = common::plan(
        &ctx,
        &format!("EXPLAIN SELECT * FROM kendall_all_pairs('{TIES}')"),
    )
    .await;
    for needle in [
        "KendallExec",
        "partitions=3",
        "tile_size=256",
        "kernel=bitset",
        "genes=61",
        "variant=b",
    ] {
        assert!(plan.contains(needle), "{needle} missing:\n{plan}");
    }
    let plan = common::plan(
        &ctx,
        &format!("EXPLAIN ANALYZE SELECT count(*) FROM kendall_all_pairs('{TIES}')"),
    )
    .await;
    for needle in [
        "pairs_computed=1.83 K",
        "kernel_time=",
        "pair_rows_time=",
        "emit_time=",
        "load_time=",
        "rank_time=",
        "planes_time=",
        "prepare_rest_time=",
        "output_rows=1.83 K",
    ] {
        assert!(plan.contains(needle), "{needle} missing:\n{plan}");
    }
}

#[tokio::test]
async fn copy_network_to_parquet_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(2);
    for ext in ["parquet", "csv"] {
        let out = dir.path().join(format!("net.{ext}"));
        run(
            &ctx,
            &format!(
                "COPY (SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{TIES}') WHERE abs(tau) >= 0.5) \
                 TO '{}'",
                out.display()
            ),
        )
        .await
        .unwrap();
        let read_back = format!("SELECT count(*) AS c FROM '{}'", out.display());
        let n = run(&ctx, &read_back).await.unwrap();
        let expected = run(
            &ctx,
            &format!("SELECT count(*) AS c FROM kendall_all_pairs('{TIES}') WHERE abs(tau) >= 0.5"),
        )
        .await
        .unwrap();
        assert_eq!(
            pretty_format_batches(&n).unwrap().to_string(),
            pretty_format_batches(&expected).unwrap().to_string()
        );
    }
}

#[tokio::test]
async fn options_refuse_bad_values() {
    let ctx = ctx(1);
    let err = crate::common::error(&ctx, "SET kendall.kernel = 'fastest'").await;
    assert!(err.contains("kendall.kernel must be one of"), "{err}");
    let err = crate::common::error(&ctx, "SET kendall.variant = 'z'").await;
    assert!(err.contains("kendall.variant must be"), "{err}");
    run(&ctx, "SET kendall.variant = 'A'").await.unwrap();
    let plan = run(
        &ctx,
        &format!("EXPLAIN SELECT * FROM kendall_all_pairs('{TIES}')"),
    )
    .await
    .unwrap();
    assert!(
        pretty_format_batches(&plan)
            .unwrap()
            .to_string()
            .contains("variant=a")
    );
}

#[tokio::test]
async fn limit_stops_the_computation_early() {
    let ctx = ctx(2);
    let plan = common::plan(
        &ctx,
        &format!("EXPLAIN ANALYZE SELECT * FROM kendall_all_pairs('{DEMO}') LIMIT 5"),
    )
    .await;
    let field = plan
        .split("pairs_computed=")
        .nth(1)
        .and_then(|s| s.split([',', ']']).next())
        .unwrap_or_else(|| panic!("no pairs_computed in:\n{plan}"));
    // Counts print as "5", "8.19 K" or "2.00 M".
    let (number, scale) = match field.split_once(' ') {
        Some((x, "K")) => (x, 1e3),
        Some((x, "M")) => (x, 1e6),
        Some((x, _)) => (x, f64::INFINITY),
        None => (field, 1.0),
    };
    let pairs = number.parse::<f64>().unwrap() * scale;
    // At most one poll's worth of pairs per partition, far from the 1,999,000 pairs.
    assert!(
        pairs <= 20_000.0,
        "computed {pairs} pairs for LIMIT 5:\n{plan}"
    );
}

#[tokio::test]
async fn every_kernel_and_instruction_set_gives_identical_bits() {
    let mut baseline: Option<Vec<(String, String, u64)>> = None;
    for (kernel, simd) in [
        ("naive", "auto"),
        ("gse", "auto"),
        ("vse", "scalar"),
        ("vse", "avx2"),
        ("vse", "avx512"),
        ("bitset", "scalar"),
        ("bitset", "avx2"),
        ("bitset", "avx512"),
    ] {
        let ctx = ctx(2);
        let set = format!("SET kendall.kernel = '{kernel}'; SET kendall.simd = '{simd}'");
        if !common::simd_available(simd) {
            // Refused where this CPU lacks the instruction set (or a cap
            // excludes it), clearly: the query fails, and EXPLAIN (which
            // reports planning errors as a row) shows the same message.
            let err = common::error(
                &ctx,
                &format!("{set}; SELECT * FROM kendall_all_pairs('{TIES}')"),
            )
            .await;
            assert!(
                err.contains(&format!("kendall.simd = '{simd}' but")),
                "{err}"
            );
            let explain = common::plan(
                &ctx,
                &format!("EXPLAIN SELECT * FROM kendall_all_pairs('{TIES}')"),
            )
            .await;
            assert!(
                explain.contains(&format!("kendall.simd = '{simd}' but")),
                "{explain}"
            );
            continue;
        }
        let explain = common::plan(
            &ctx,
            &format!("{set}; EXPLAIN SELECT * FROM kendall_all_pairs('{TIES}')"),
        )
        .await;
        assert!(explain.contains(&format!("kernel={kernel}")), "{explain}");
        let rows = pairs(
            &ctx,
            &format!("{set}; SELECT * FROM kendall_all_pairs('{TIES}')"),
        )
        .await;
        let mut bits: Vec<_> = rows
            .into_iter()
            .map(|p| (p.gene_i, p.gene_j, p.tau.to_bits()))
            .collect();
        bits.sort();
        match &baseline {
            None => baseline = Some(bits),
            Some(b) => assert_eq!(&bits, b, "kernel={kernel} simd={simd}"),
        }
    }
    assert!(baseline.is_some());
    let err = crate::common::error(&ctx(1), "SET kendall.simd = 'neon'").await;
    assert!(err.contains("kendall.simd must be one of"), "{err}");
}

#[tokio::test]
async fn bitset_respects_the_memory_limit() {
    let ctx = ctx(1);
    // auto falls back to a sorting kernel ...
    let plan = run(
        &ctx,
        &format!(
            "SET kendall.memory_limit = 1000; EXPLAIN SELECT * FROM kendall_all_pairs('{TIES}')"
        ),
    )
    .await
    .unwrap();
    // (VSE with SIMD; the naive loop on a CPU without it.)
    let plan = pretty_format_batches(&plan).unwrap().to_string();
    assert!(
        plan.contains("kernel=vse") || plan.contains("kernel=naive"),
        "{plan}"
    );
    // ... and a forced bitset is refused with the numbers.
    let err = run(
        &ctx,
        &format!("SET kendall.kernel = 'bitset'; SELECT * FROM kendall_all_pairs('{TIES}')"),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("kendall.memory_limit = 1000"), "{err}");
}

#[tokio::test]
async fn gene_filters_compute_only_the_touching_pairs() {
    let ctx = ctx(3);
    let all = pairs(&ctx, &format!("SELECT * FROM kendall_all_pairs('{TIES}')")).await;
    let (a, b, c) = ("1053_at", "121_at", "CONSTANT_PROBE");
    type Keep = Box<dyn Fn(&Pair) -> bool>;
    let cases: Vec<(String, Keep, Option<usize>)> = vec![
        (
            format!("gene_i = '{a}' OR gene_j = '{a}'"),
            Box::new(move |p: &Pair| p.gene_i == a || p.gene_j == a),
            Some(60),
        ),
        (
            format!("gene_j IN ('{b}', '{c}')"),
            Box::new(move |p: &Pair| p.gene_j == b || p.gene_j == c),
            Some(3 + 60),
        ),
        (
            format!("(gene_i = '{a}' OR gene_j = '{a}') AND abs(tau) > 0.3"),
            Box::new(move |p: &Pair| {
                (p.gene_i == a || p.gene_j == a) && (p.tau.is_nan() || p.tau.abs() > 0.3)
            }),
            Some(60),
        ),
        (
            format!("gene_i IN ('{a}', '{b}') AND gene_j = '{c}'"),
            Box::new(move |p: &Pair| (p.gene_i == a || p.gene_i == b) && p.gene_j == c),
            None,
        ),
        (
            format!("gene_i <> '{a}' AND NOT gene_j IN ('{b}')"),
            Box::new(move |p: &Pair| p.gene_i != a && p.gene_j != b),
            Some(1830),
        ),
        (
            "gene_i = 'NO_SUCH_GENE' OR gene_j = 'NO_SUCH_GENE'".to_string(),
            Box::new(|_: &Pair| false),
            Some(0),
        ),
    ];
    for (predicate, keep, computed) in cases {
        let sql = format!("SELECT * FROM kendall_all_pairs('{TIES}') WHERE {predicate}");
        let got = pairs(&ctx, &sql).await;
        let mut got: Vec<(String, String, u64)> = got
            .into_iter()
            .map(|p| (p.gene_i, p.gene_j, p.tau.to_bits()))
            .collect();
        let mut expected: Vec<(String, String, u64)> = all
            .iter()
            .filter(|p| keep(p))
            .map(|p| (p.gene_i.clone(), p.gene_j.clone(), p.tau.to_bits()))
            .collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "{predicate}");

        let plan = common::plan(&ctx, &format!("EXPLAIN ANALYZE {sql}")).await;
        assert!(!plan.contains("FilterExec"), "{predicate}:\n{plan}");
        assert!(plan.contains("gene_filter="), "{predicate}:\n{plan}");
        if let Some(n) = computed {
            let shown = if n >= 1000 {
                format!("pairs_computed={:.2} K", n as f64 / 1000.0)
            } else {
                format!("pairs_computed={n}")
            };
            assert!(plan.contains(&shown), "{predicate}: want {shown}:\n{plan}");
            // auto builds no bit-planes for a few genes' partners; it takes
            // vse, or naive for these 57 samples on a CPU without SIMD
            // (or with KENDALL_MAX_ISA=scalar).
            let simd = datafusion_kendall::kernel::isa::Isa::Avx2
                .unavailable_reason()
                .is_none();
            let kernel = match (n < 1830, simd) {
                (true, true) => "kernel=vse",
                (true, false) => "kernel=naive",
                (false, _) => "kernel=bitset",
            };
            assert!(plan.contains(kernel), "{predicate}: want {kernel}:\n{plan}");
        }
    }
}

/// Zero-inflated counts (1,200 cells, 95 % zeros): `auto` (which runs the
/// zero-inflated kernel here: see `kernel::zero::prefer`'s tests) and the
/// naive kernel give the same bits.
#[tokio::test]
async fn zero_inflated_counts_give_the_same_bits_with_auto_and_naive() {
    use datafusion::arrow::array::{Array, Float64Array, StringArray};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.parquet");
    let mut rng = SmallRng::seed_from_u64(21);
    let (genes, cells) = (30, 1200);
    let mut columns: Vec<(String, std::sync::Arc<dyn Array>)> = vec![(
        "gene".into(),
        std::sync::Arc::new(StringArray::from_iter_values(
            (0..genes).map(|g| format!("G{g}")),
        )),
    )];
    for c in 0..cells {
        let counts = (0..genes).map(|_| {
            if rng.random_bool(0.95) {
                0.0
            } else {
                f64::from(rng.random_range(1..20))
            }
        });
        columns.push((
            format!("c{c}"),
            std::sync::Arc::new(Float64Array::from_iter_values(counts)),
        ));
    }
    crate::common::write_parquet(
        &path,
        &crate::common::batch(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), a.clone()))
                .collect(),
        ),
    );
    let sql = format!("SELECT * FROM kendall_all_pairs('{}')", path.display());
    let ctx = ctx(2);
    let plan = crate::common::plan(&ctx, &format!("EXPLAIN {sql}")).await;
    assert!(plan.contains("(zero if zero-inflated)"), "{plan}");
    let bits = |sql: String| {
        let ctx = ctx.clone();
        async move {
            let mut got: Vec<(String, String, u64)> = pairs(&ctx, &sql)
                .await
                .into_iter()
                .map(|p| (p.gene_i, p.gene_j, p.tau.to_bits()))
                .collect();
            got.sort();
            got
        }
    };
    let auto = bits(format!("SET kendall.kernel = 'auto'; {sql}")).await;
    let naive = bits(format!("SET kendall.kernel = 'naive'; {sql}")).await;
    assert_eq!(auto.len(), genes * (genes - 1) / 2);
    assert_eq!(auto, naive);
}

#[tokio::test]
async fn dictionary_gene_ids_give_the_same_rows() {
    // kendall.gene_ids = 'dictionary' types the gene columns as dictionaries
    // of the gene list; cast back to strings, every row is bit-identical.
    let c = ctx(3);
    let query = |f: &str| {
        format!(
            "SELECT arrow_cast(gene_i, 'Utf8') AS gene_i, arrow_cast(gene_j, 'Utf8') AS gene_j, \
             tau, p_value, n FROM {f} WHERE abs(tau) >= 0.3 OR gene_j = '1053_at'"
        )
    };
    for f in [
        format!("kendall_all_pairs('{TIES}')"),
        format!("kendall_cross_pairs('{TIES}', '{DEMO}')"),
    ] {
        let strings = common::sorted_bits(&run(&c, &query(&f)).await.unwrap());
        run(&c, "SET kendall.gene_ids = 'dictionary'")
            .await
            .unwrap();
        let typed = run(
            &c,
            &format!("SELECT arrow_typeof(gene_i) AS t FROM {f} LIMIT 1"),
        )
        .await
        .unwrap();
        let shown = pretty_format_batches(&typed).unwrap().to_string();
        assert!(shown.contains("Dictionary(Int32, Utf8)"), "{shown}");
        let dictionary = common::sorted_bits(&run(&c, &query(&f)).await.unwrap());
        run(&c, "SET kendall.gene_ids = 'string'").await.unwrap();
        assert!(!strings.is_empty());
        assert_eq!(strings, dictionary, "{f}");
    }
    // A cross of a matrix with itself: every name is in both sources, and
    // is one key of the dictionary (pandas refuses repeated categories).
    run(&c, "SET kendall.gene_ids = 'dictionary'")
        .await
        .unwrap();
    let batches = run(
        &c,
        &format!("SELECT gene_i, gene_j FROM kendall_cross_pairs('{TIES}', '{TIES}')"),
    )
    .await
    .unwrap();
    run(&c, "SET kendall.gene_ids = 'string'").await.unwrap();
    let mut rows = 0;
    for b in &batches {
        for col in [b.column(0), b.column(1)] {
            let d =
                col.as_any()
                    .downcast_ref::<datafusion::arrow::array::DictionaryArray<
                        datafusion::arrow::datatypes::Int32Type,
                    >>()
                    .expect("a dictionary column");
            let values = d.values().as_string::<i32>();
            let distinct: std::collections::HashSet<&str> = values.iter().flatten().collect();
            assert_eq!(distinct.len(), values.len(), "repeated dictionary values");
            assert_eq!(values.len(), 61);
        }
        rows += b.num_rows();
    }
    assert_eq!(rows, 61 * 61);
    let err = common::error(&c, "SET kendall.gene_ids = 'int'").await;
    common::assert_contains(&err, &["kendall.gene_ids", "'string' or 'dictionary'"]);
}

/// `kendall.partitions` sets the partitions of a pair scan (0: the
/// session's target partitions); the rows do not depend on it.
#[tokio::test]
async fn kendall_partitions_sets_the_scan_partitions() {
    use datafusion::physical_plan::ExecutionPlan;
    let c = ctx(2);
    let sql = format!("SELECT * FROM kendall_all_pairs('{DEMO}') WHERE abs(tau) >= 0.8");
    let partitions = |plan| {
        common::kendall_exec(plan)
            .properties()
            .output_partitioning()
            .partition_count()
    };
    let plan = c
        .sql(&sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    assert_eq!(partitions(&plan), 2);
    let default_rows = common::sorted_bits(&run(&c, &sql).await.unwrap());
    run(&c, "SET kendall.partitions = 7").await.unwrap();
    let plan = c
        .sql(&sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    assert_eq!(partitions(&plan), 7);
    let rows = common::sorted_bits(&run(&c, &sql).await.unwrap());
    assert!(!rows.is_empty());
    assert_eq!(rows, default_rows);
}

//! Grouped samples (`kendall.groups`): every table function, grouped,
//! gives for each group exactly the rows (bit for bit, q-values included)
//! of the same call on a view of that group's samples, for every kernel and
//! 1 to 3 partitions; a filter on `group` computes only the groups it
//! keeps; tiny, empty and overlapping groups follow the documented rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::common::{assert_contains, ctx, error, run};

const SAMPLES: usize = 30;

/// Group A: samples 0..12; B: 9..24 (three shared with A); C: two samples;
/// D: one; E: samples no matrix has. Sample 29 is in no group.
fn group_rows() -> Vec<(String, &'static str)> {
    let mut rows = Vec::new();
    rows.extend((0..12).map(|s| (format!("s{s}"), "A")));
    rows.extend((9..24).map(|s| (format!("s{s}"), "B")));
    rows.extend([(24, "C"), (25, "C"), (26, "D")].map(|(s, g)| (format!("s{s}"), g)));
    rows.extend(["nowhere", "nobody"].map(|s| (s.to_string(), "E")));
    // A row listed twice counts once.
    rows.push(("s0".to_string(), "A"));
    rows
}

/// The group labels with at least two samples, and their samples.
fn view_groups() -> Vec<(&'static str, Vec<usize>)> {
    vec![
        ("A", (0..12).collect()),
        ("B", (9..24).collect()),
        ("C", vec![24, 25]),
    ]
}

/// `genes` genes over `SAMPLES` samples named `s0`.., values with ties,
/// zeros and (with `missing`) NaNs, from a fixed sequence.
fn matrix(prefix: &str, genes: usize, seed: u64, missing: bool) -> RecordBatch {
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let names = StringArray::from_iter_values((0..genes).map(|g| format!("{prefix}{g}")));
    let mut fields = vec![Field::new("gene", DataType::Utf8, false)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(names)];
    let values: Vec<Vec<f64>> = (0..genes)
        .map(|_| {
            (0..SAMPLES)
                .map(|_| match next() % 10 {
                    0..=3 => 0.0,
                    4 if missing => f64::NAN,
                    r => f64::from(next() % (4 + r)),
                })
                .collect()
        })
        .collect();
    for s in 0..SAMPLES {
        fields.push(Field::new(format!("s{s}"), DataType::Float64, true));
        let column: Float64Array = values.iter().map(|row| Some(row[s])).collect();
        columns.push(Arc::new(column));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn register(ctx: &SessionContext, name: &str, batch: RecordBatch) {
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table(name, Arc::new(table)).unwrap();
}

/// A context with the matrices `expr` (and `right`, sharing the samples),
/// the groups table `cells` and a candidate list `cand`.
fn context(partitions: usize, missing: bool) -> SessionContext {
    let ctx = ctx(partitions);
    register(&ctx, "expr", matrix("g", 24, 7, missing));
    register(&ctx, "right", matrix("p", 9, 11, missing));
    let rows = group_rows();
    let groups = RecordBatch::try_from_iter([
        (
            "cell",
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.0.as_str()),
            )) as ArrayRef,
        ),
        (
            "cluster",
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))) as ArrayRef,
        ),
    ])
    .unwrap();
    register(&ctx, "cells", groups);
    let (first, second): (Vec<String>, Vec<String>) = (0..24)
        .flat_map(|g| [(g, (g * 5 + 1) % 9), (g, (g * 7 + 2) % 9)])
        .map(|(g, p)| (format!("g{g}"), format!("p{p}")))
        .unzip();
    let list = RecordBatch::try_from_iter([
        ("a", Arc::new(StringArray::from(first)) as ArrayRef),
        ("b", Arc::new(StringArray::from(second)) as ArrayRef),
    ])
    .unwrap();
    register(&ctx, "cand", list);
    ctx
}

/// The rows of `batches` as text (floats exactly: Rust's shortest
/// round-trip form), sorted; with `grouped`, by the first column's group.
fn rows_by_group(batches: &[RecordBatch], grouped: bool) -> BTreeMap<String, Vec<Vec<String>>> {
    let mut out: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    for b in batches {
        for r in 0..b.num_rows() {
            let mut row: Vec<String> = b
                .columns()
                .iter()
                .map(|c| match c.as_any().downcast_ref::<Float64Array>() {
                    Some(f) if f.is_valid(r) => format!("{:016x}", f.value(r).to_bits()),
                    _ => array_value_to_string(c, r).unwrap(),
                })
                .collect();
            let group = match grouped {
                true => row.remove(0),
                false => String::new(),
            };
            out.entry(group).or_default().push(row);
        }
    }
    for rows in out.values_mut() {
        rows.sort();
    }
    out
}

/// The calls compared: (the call on a source written as `{L}` / `{R}`,
/// the columns read).
const CALLS: [(&str, &str); 4] = [
    (
        "kendall_all_pairs('{L}')",
        "gene_i, gene_j, tau, p_value, n, q_value",
    ),
    (
        "kendall_top_partners('{L}', 3)",
        "gene, partner, tau, rank, p_value, n",
    ),
    (
        "kendall_cross_pairs('{L}', '{R}')",
        "gene_i, gene_j, tau, p_value, n, q_value",
    ),
    (
        "kendall_candidate_pairs('cand', '{L}', '{R}')",
        "gene_i, gene_j, tau, p_value, n, q_value",
    ),
];

/// Creates a view of `table`'s genes on `samples` only, named `name`.
async fn view(ctx: &SessionContext, name: &str, table: &str, samples: &[usize]) {
    let columns: Vec<String> = samples.iter().map(|s| format!("s{s}")).collect();
    let sql = format!(
        "CREATE OR REPLACE VIEW {name} AS SELECT gene, {} FROM {table}",
        columns.join(", ")
    );
    run(ctx, &sql).await.unwrap();
}

/// Case: every function grouped equals the function on each group's view,
/// bit for bit (tau, p, n, q, ranks), for every kernel and 1-3 partitions;
/// with missing values pairwise and listwise.
#[tokio::test]
async fn each_group_equals_the_call_on_a_view_of_its_samples() {
    let mut compared = 0;
    for (missing, option) in [(false, "pairwise"), (true, "pairwise"), (true, "complete")] {
        for kernel in ["naive", "gse", "vse", "bitset", "zero", "auto"] {
            for partitions in 1..=3 {
                let ctx = context(partitions, missing);
                let set =
                    format!("SET kendall.kernel = '{kernel}'; SET kendall.missing = '{option}'");
                run(&ctx, &set).await.unwrap();
                for (label, samples) in view_groups() {
                    let label = label.to_lowercase();
                    view(&ctx, &format!("left_{label}"), "expr", &samples).await;
                    view(&ctx, &format!("right_{label}"), "right", &samples).await;
                }
                for (call, columns) in CALLS {
                    let grouped_call = call.replace("{L}", "expr").replace("{R}", "right");
                    let sql = format!(
                        "SET kendall.groups = 'cells'; \
                         SELECT \"group\", {columns} FROM {grouped_call}"
                    );
                    let what = format!("{sql} ({kernel}, {partitions} partitions, {option})");
                    let grouped = run(&ctx, &sql)
                        .await
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let grouped = rows_by_group(&grouped, true);
                    run(&ctx, "SET kendall.groups = ''").await.unwrap();
                    for (label, _) in view_groups() {
                        let lower = label.to_lowercase();
                        let one = call
                            .replace("{L}", &format!("left_{lower}"))
                            .replace("{R}", &format!("right_{lower}"));
                        let sql = format!("SELECT {columns} FROM {one}");
                        let alone = match run(&ctx, &sql).await {
                            Ok(alone) => alone,
                            // Listwise deletion leaving no sample: the view is
                            // an error, the group gives its pairs with n = 0.
                            Err(e) if e.to_string().contains("no complete element pairs") => {
                                let rows = grouped.get(label).cloned().unwrap_or_default();
                                let n = columns.split(", ").position(|c| c == "n").unwrap();
                                assert!(rows.iter().all(|r| r[n] == "0"), "{what}");
                                continue;
                            }
                            Err(e) => panic!("{sql}: {e}"),
                        };
                        let alone = rows_by_group(&alone, false).remove("").unwrap_or_default();
                        // (Top partners has no rows where every tau is NaN.)
                        let got = grouped.get(label).cloned().unwrap_or_default();
                        assert_eq!(got, alone, "group {label}: {what}");
                        compared += alone.len();
                    }
                }
            }
        }
    }
    // Rows of every function were compared (not only empty groups).
    assert!(compared > 50_000, "{compared} rows compared");
}

/// Case: a group of one sample (D), one whose samples the matrix lacks (E)
/// and one of two samples (C) each give every pair, with n below 2 for D
/// and E (NaN tau for D; NULL for E, below kendall.min_periods); a sample in two groups (s9..s11, in A and B) counts in
/// both; a sample in no group (s29) in none; groups come in label order.
#[tokio::test]
async fn tiny_empty_and_overlapping_groups() {
    let ctx = context(2, false);
    let sql = "SET kendall.groups = 'cells'; \
               SELECT \"group\", count(*) AS pairs, max(n) AS n, \
                      sum(CASE WHEN isnan(tau) THEN 1 ELSE 0 END) AS nan, \
                      sum(CASE WHEN tau IS NULL THEN 1 ELSE 0 END) AS null \
               FROM kendall_all_pairs('expr') GROUP BY \"group\" ORDER BY \"group\"";
    let rows = rows_by_group(&run(&ctx, sql).await.unwrap(), true);
    let pairs = (24 * 23 / 2).to_string();
    let want = |n: &str, nan: &str, null: &str| {
        vec![vec![
            pairs.clone(),
            n.to_string(),
            nan.to_string(),
            null.to_string(),
        ]]
    };
    assert_eq!(rows["A"], want("12", rows["A"][0][2].as_str(), "0"));
    assert_eq!(rows["B"], want("15", rows["B"][0][2].as_str(), "0"));
    // One sample: NaN tau; none: NULL tau, as any pair sharing fewer
    // samples than kendall.min_periods (1).
    assert_eq!(rows["D"], want("1", &pairs, "0"));
    assert_eq!(rows["E"], want("0", "0", &pairs));
    assert_eq!(rows["C"][0][1], "2");
    assert_eq!(rows.keys().collect::<Vec<_>>(), ["A", "B", "C", "D", "E"]);
    // The output is in label order, group after group, within a partition.
    let ctx = context(1, false);
    let sql = "SET kendall.groups = 'cells'; SELECT \"group\" FROM kendall_all_pairs('expr')";
    let batches = run(&ctx, sql).await.unwrap();
    let labels: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let c = b.column(0).clone();
            (0..b.num_rows()).map(move |r| array_value_to_string(&c, r).unwrap())
        })
        .collect();
    let mut sorted = labels.clone();
    sorted.sort();
    assert_eq!(labels, sorted);
}

/// Case: a filter on `group` is applied in the scan, and the groups it
/// leaves out are never prepared (`group_preparations` in EXPLAIN
/// ANALYZE); the rows are those of the unfiltered query's group.
#[tokio::test]
async fn a_filter_on_group_computes_only_its_groups() {
    let ctx = context(2, false);
    run(&ctx, "SET kendall.groups = 'cells'").await.unwrap();
    let all = rows_by_group(
        &run(
            &ctx,
            "SELECT \"group\", gene_i, gene_j, tau FROM kendall_all_pairs('expr')",
        )
        .await
        .unwrap(),
        true,
    );
    for filter in [
        "\"group\" = 'B'",
        "\"group\" IN ('B', 'Z')",
        "NOT (\"group\" <> 'B')",
    ] {
        let sql = format!(
            "SELECT \"group\", gene_i, gene_j, tau FROM kendall_all_pairs('expr') WHERE {filter}"
        );
        let got = rows_by_group(&run(&ctx, &sql).await.unwrap(), true);
        assert_eq!(got.keys().collect::<Vec<_>>(), ["B"], "{sql}");
        assert_eq!(got["B"], all["B"], "{sql}");
        let explain = run(&ctx, &format!("EXPLAIN ANALYZE {sql}")).await.unwrap();
        let plan = array_value_to_string(explain[0].column(1), 0).unwrap();
        assert_contains(
            &plan,
            &[
                "group_preparations=1",
                "groups=table 'cells'",
                "group_filter=",
            ],
        );
        assert!(!plan.contains("FilterExec"), "{plan}");
    }
}

/// Case: a groups source that cannot be one is refused with an error
/// naming it, and the option.
#[tokio::test]
async fn a_bad_groups_source_is_a_clear_error() {
    let ctx = context(1, false);
    let one_column = RecordBatch::try_from_iter([(
        "cell",
        Arc::new(StringArray::from_iter_values(["s1"])) as ArrayRef,
    )])
    .unwrap();
    register(&ctx, "one", one_column);
    let msg = error(
        &ctx,
        "SET kendall.groups = 'one'; SELECT * FROM kendall_all_pairs('expr')",
    )
    .await;
    assert_contains(
        &msg,
        &[
            "kendall_all_pairs",
            "table 'one'",
            "kendall.groups",
            "1 column(s)",
        ],
    );
    let msg = error(
        &ctx,
        "SET kendall.groups = 'no_such_table'; SELECT * FROM kendall_all_pairs('expr')",
    )
    .await;
    assert_contains(&msg, &["no_such_table"]);
    // Floats are no labels.
    let msg = error(
        &ctx,
        "SET kendall.groups = 'expr'; SELECT * FROM kendall_all_pairs('expr')",
    )
    .await;
    assert_contains(&msg, &["column 's0'", "kendall.groups", "Float64"]);
}

/// Case: layout `genes_as_columns` (rows are unnamed samples) is grouped by
/// row number: the same values as columns, with groups of row numbers
/// (integers), give exactly the rows of the genes-as-rows matrix grouped by
/// sample name.
#[tokio::test]
async fn unnamed_samples_are_grouped_by_row_number() {
    let ctx = context(2, true);
    let rows = matrix("g", 24, 7, true);
    // The transpose: one Float64 column per gene, one row per sample.
    let columns: Vec<(String, ArrayRef)> = (0..24)
        .map(|g| {
            let values: Float64Array = (1..=SAMPLES)
                .map(|s| {
                    Some(
                        rows.column(s)
                            .as_any()
                            .downcast_ref::<Float64Array>()
                            .unwrap()
                            .value(g),
                    )
                })
                .collect();
            (format!("g{g}"), Arc::new(values) as ArrayRef)
        })
        .collect();
    register(
        &ctx,
        "by_column",
        RecordBatch::try_from_iter(columns).unwrap(),
    );
    let group_rows = group_rows();
    let numbers = group_rows.iter().map(|(s, _)| {
        s.strip_prefix('s')
            .and_then(|n| n.parse::<i64>().ok())
            .unwrap_or(-1)
    });
    let numbered = RecordBatch::try_from_iter([
        (
            "row",
            Arc::new(datafusion::arrow::array::Int64Array::from_iter_values(
                numbers,
            )) as ArrayRef,
        ),
        (
            "cluster",
            Arc::new(StringArray::from_iter_values(
                group_rows.iter().map(|r| r.1),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    register(&ctx, "numbered", numbered);
    let query = "SELECT \"group\", gene_i, gene_j, tau, p_value, n, q_value \
                 FROM kendall_all_pairs('{}')";
    let by_name = run(
        &ctx,
        &format!(
            "SET kendall.groups = 'cells'; {}",
            query.replace("{}", "expr")
        ),
    )
    .await
    .unwrap();
    let by_number = run(
        &ctx,
        &format!(
            "SET kendall.groups = 'numbered'; SET kendall.layout = 'genes_as_columns'; {}",
            query.replace("{}", "by_column")
        ),
    )
    .await
    .unwrap();
    let (by_name, by_number) = (
        rows_by_group(&by_name, true),
        rows_by_group(&by_number, true),
    );
    assert_eq!(by_name.len(), 5);
    assert_eq!(by_name, by_number);
}

//! `kendall_candidate_pairs`: the listed pairs, bit for bit what
//! `kendall_cross_pairs` and `kendall_all_pairs` (checked against R and
//! scipy elsewhere) give for them; q-values over the listed family; the
//! list's rules (unknown ids, repeats, order, self pairs, empty lists);
//! and pairs with a two-valued gene (rank sums under `auto`) bit for bit
//! what the naive kernel gives.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array, StringArray};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::common::{self, ctx, draws, run, sorted_bits};

const LEFT: &str = "tests/data/cross_left.csv";
const RIGHT: &str = "tests/data/cross_right.csv";
const COLUMNS: &str = "gene_i, gene_j, tau, p_value, n, q_value";

/// Registers the list `pairs` as the table `name` (two string columns).
fn register_list(ctx: &SessionContext, name: &str, pairs: &[(&str, &str)]) {
    let batch = common::batch(vec![
        (
            "gene",
            Arc::new(StringArray::from_iter_values(pairs.iter().map(|p| p.0))),
        ),
        (
            "peak",
            Arc::new(StringArray::from_iter_values(pairs.iter().map(|p| p.1))),
        ),
    ]);
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table(name, Arc::new(table)).unwrap();
}

/// `pairs` as a table of batches of `per_batch` lines, in two partitions
/// (the first half's batches, then the rest), its ids as string views
/// when `views`.
fn register_list_in_batches(
    ctx: &SessionContext,
    name: &str,
    pairs: &[(&str, &str)],
    per_batch: usize,
    views: bool,
) {
    let column = |ids: Vec<&str>| -> datafusion::arrow::array::ArrayRef {
        match views {
            true => Arc::new(datafusion::arrow::array::StringViewArray::from_iter_values(
                ids,
            )),
            false => Arc::new(StringArray::from_iter_values(ids)),
        }
    };
    let batches: Vec<_> = pairs
        .chunks(per_batch)
        .map(|chunk| {
            common::batch(vec![
                ("gene", column(chunk.iter().map(|p| p.0).collect())),
                ("peak", column(chunk.iter().map(|p| p.1).collect())),
            ])
        })
        .collect();
    let half = batches.len() / 2;
    let table = MemTable::try_new(
        batches[0].schema(),
        vec![batches[..half].to_vec(), batches[half..].to_vec()],
    )
    .unwrap();
    ctx.register_table(name, Arc::new(table)).unwrap();
}

/// The gene ids of a genes-as-rows CSV file.
fn genes_of(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect()
}

/// Benjamini–Hochberg q-values of `p`, in the same order.
fn bh(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut q = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank, &k) in order.iter().enumerate().rev() {
        running = running.min(p[k] * m as f64 / (rank + 1) as f64);
        q[k] = running;
    }
    q
}

/// (gene_i, gene_j) → (p_value, q_value) of a query's rows.
fn p_and_q(
    batches: &[datafusion::arrow::array::RecordBatch],
) -> BTreeMap<(String, String), (f64, f64)> {
    let mut out = BTreeMap::new();
    for b in batches {
        let gi = b
            .column_by_name("gene_i")
            .unwrap()
            .as_string::<i32>()
            .clone();
        let gj = b
            .column_by_name("gene_j")
            .unwrap()
            .as_string::<i32>()
            .clone();
        let p = b
            .column_by_name("p_value")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        let q = b
            .column_by_name("q_value")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        for r in 0..b.num_rows() {
            let key = (gi.value(r).to_string(), gj.value(r).to_string());
            assert!(
                out.insert(key, (p.value(r), q.value(r))).is_none(),
                "a pair twice"
            );
        }
    }
    out
}

#[tokio::test]
async fn listed_pairs_of_two_matrices_are_their_cross_pairs() {
    let (left, right) = (genes_of(LEFT), genes_of(RIGHT));
    // Every third left x right pair, in a scrambled order.
    let mut listed: Vec<(&str, &str)> = Vec::new();
    for (a, l) in left.iter().enumerate() {
        for (b, r) in right.iter().enumerate() {
            if (a * 7 + b * 3) % 3 == 0 {
                listed.push((l, r));
            }
        }
    }
    listed.reverse();
    let wanted: BTreeSet<(String, String)> = listed
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let cross = format!("SELECT {COLUMNS} FROM kendall_cross_pairs('{LEFT}', '{RIGHT}')");
    let all_cross = run(&ctx(1), &cross).await.unwrap();
    let expected: Vec<_> = sorted_bits(&all_cross)
        .into_iter()
        .filter(|r| wanted.contains(&(r.0.clone(), r.1.clone())))
        .collect();
    assert_eq!(expected.len(), wanted.len());
    for partitions in [1, 2, 3] {
        for kernel in ["auto", "naive", "gse", "vse", "bitset", "zero"] {
            let ctx = ctx(partitions);
            register_list(&ctx, "cand", &listed);
            let sql = format!(
                "SET kendall.kernel = '{kernel}'; SELECT {COLUMNS} FROM \
                 kendall_candidate_pairs('cand', '{LEFT}', '{RIGHT}')"
            );
            let got = run(&ctx, &sql).await.unwrap();
            assert_eq!(sorted_bits(&got), expected, "{kernel} x{partitions}");
            // q-values: BH over the listed pairs' p-values.
            let pq = p_and_q(&got);
            let ps: Vec<f64> = pq.values().map(|v| v.0).collect();
            for ((key, (_, q)), e) in pq.iter().zip(bh(&ps)) {
                assert!(
                    (q - e).abs() <= 1e-12 * e.max(1e-300),
                    "{key:?}: q {q} vs {e}"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_list_is_read_by_its_first_two_columns_from_any_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("candidates.csv");
    let (left, right) = (genes_of(LEFT), genes_of(RIGHT));
    std::fs::write(
        &path,
        format!(
            "enhancer_gene,peak,score\n{},{},0.5\n{},{},0.25\n",
            left[0], right[1], left[2], right[0]
        ),
    )
    .unwrap();
    let sql = format!(
        "SELECT gene_i, gene_j, tau FROM kendall_candidate_pairs('{}', '{LEFT}', '{RIGHT}') \
         ORDER BY gene_i",
        path.display()
    );
    let rows = common::pairs(&ctx(2), &sql).await;
    let keys: Vec<(String, String)> = rows
        .iter()
        .map(|p| (p.gene_i.clone(), p.gene_j.clone()))
        .collect();
    assert_eq!(
        keys,
        vec![
            (left[0].clone(), right[1].clone()),
            (left[2].clone(), right[0].clone())
        ]
    );
}

/// A list of integer ids finds the genes whose id is that integer written
/// out (as casting it to text would), and only those: `7` is not `007`.
#[tokio::test]
async fn integer_ids_find_genes_by_their_decimal_form() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.csv");
    std::fs::write(
        &path,
        "gene,s1,s2,s3,s4,s5,s6\n1,1,2,3,4,5,6\n2,2,1,4,3,6,5\n007,6,5,4,3,2,1\n\
         -4,1,3,2,5,4,6\nx,3,3,1,2,6,5\n",
    )
    .unwrap();
    let ctx = ctx(2);
    let integers = common::batch(vec![
        (
            "a",
            Arc::new(datafusion::arrow::array::Int64Array::from(vec![
                1, 7, -4, 2,
            ])),
        ),
        (
            "b",
            Arc::new(datafusion::arrow::array::Int32Array::from(vec![2, 1, 2, 1])),
        ),
    ]);
    let table = MemTable::try_new(integers.schema(), vec![vec![integers]]).unwrap();
    ctx.register_table("by_number", Arc::new(table)).unwrap();
    register_list(&ctx, "by_text", &[("1", "2"), ("-4", "2")]);
    let rows = |list: &str| {
        format!(
            "SELECT gene_i, gene_j, tau FROM kendall_candidate_pairs('{list}', '{}') \
             ORDER BY gene_i, gene_j",
            path.display()
        )
    };
    let key = |p: &common::Pair| (p.gene_i.clone(), p.gene_j.clone(), p.tau.to_bits());
    let numbered: Vec<_> = common::pairs(&ctx, &rows("by_number"))
        .await
        .iter()
        .map(key)
        .collect();
    let named: Vec<_> = common::pairs(&ctx, &rows("by_text"))
        .await
        .iter()
        .map(key)
        .collect();
    // (2, 1) repeats (1, 2); 7 names no gene.
    assert_eq!(numbered.len(), 2, "{numbered:?}");
    assert_eq!(numbered, named);
}

#[tokio::test]
async fn listed_pairs_of_one_matrix_follow_the_lists_rules() {
    let genes = genes_of(LEFT);
    let g = |k: usize| genes[k].as_str();
    let ctx = ctx(2);
    // (0, 1) twice and reversed, a self pair, an unknown gene, (3, 2) as listed.
    register_list(
        &ctx,
        "cand",
        &[
            (g(0), g(1)),
            (g(1), g(0)),
            (g(0), g(1)),
            (g(4), g(4)),
            ("no_such_gene", g(1)),
            (g(3), g(2)),
        ],
    );
    let sql = format!(
        "SELECT gene_i, gene_j, tau, p_value, n FROM kendall_candidate_pairs('cand', '{LEFT}')"
    );
    let got = sorted_bits(&run(&ctx, &sql).await.unwrap());
    let keys: Vec<(&str, &str)> = got.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    let mut expected_keys = vec![(g(0), g(1)), (g(3), g(2))];
    expected_keys.sort();
    assert_eq!(keys, expected_keys);
    // The same values as all pairs (whose pair (2, 3) is oriented the other way).
    let all = run(
        &ctx,
        &format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{LEFT}')"),
    )
    .await
    .unwrap();
    let all: BTreeMap<(String, String), (u64, u64, i64)> = sorted_bits(&all)
        .into_iter()
        .map(|r| ((r.0, r.1), (r.2, r.3, r.4)))
        .collect();
    for r in &got {
        let key = if all.contains_key(&(r.0.clone(), r.1.clone())) {
            (r.0.clone(), r.1.clone())
        } else {
            (r.1.clone(), r.0.clone())
        };
        assert_eq!(all[&key], (r.2, r.3, r.4), "{key:?}");
    }
    // An empty list: no rows.
    register_list(&ctx, "nothing", &[]);
    let sql = format!("SELECT count(*) FROM kendall_candidate_pairs('nothing', '{LEFT}')");
    let batches = run(&ctx, &sql).await.unwrap();
    let count = batches[0]
        .column(0)
        .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
    assert_eq!(count.value(0), 0);
}

#[tokio::test]
async fn candidate_list_errors_name_the_list() {
    let ctx = ctx(1);
    register_list(&ctx, "strangers", &[("a", "b"), ("c", "d")]);
    let err = common::error(
        &ctx,
        &format!("SELECT * FROM kendall_candidate_pairs('strangers', '{LEFT}', '{RIGHT}')"),
    )
    .await;
    common::assert_contains(
        &err,
        &[
            "kendall_candidate_pairs",
            "none of the 2 pairs",
            "table 'strangers'",
            "'a' and 'b'",
            "columns 'gene' and 'peak'",
        ],
    );
    let batch = common::batch(vec![
        ("gene", Arc::new(StringArray::from(vec!["a"]))),
        ("weight", Arc::new(Float64Array::from(vec![1.0]))),
    ]);
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table("weighted", Arc::new(table)).unwrap();
    let err = common::error(
        &ctx,
        &format!("SELECT * FROM kendall_candidate_pairs('weighted', '{LEFT}')"),
    )
    .await;
    common::assert_contains(&err, &["column 'weight'", "Float64", "gene ids"]);
    let err = common::error(&ctx, "SELECT * FROM kendall_candidate_pairs('weighted')").await;
    common::assert_contains(
        &err,
        &[
            "kendall_candidate_pairs(pairs, matrix [, right])",
            "got 1 arguments",
        ],
    );
}

/// A cells x features matrix as a genes-as-rows table `name`: feature `f`
/// named `{prefix}{f}`, cell `c` named `c{c}`; `values[f][c]`.
fn register_features(ctx: &SessionContext, name: &str, prefix: &str, values: &[Vec<f64>]) {
    let cells = values[0].len();
    let mut columns: Vec<(String, Arc<dyn Array>)> = vec![(
        "gene".to_string(),
        Arc::new(StringArray::from_iter_values(
            (0..values.len()).map(|f| format!("{prefix}{f}")),
        )),
    )];
    for c in 0..cells {
        columns.push((
            format!("c{c}"),
            Arc::new(Float64Array::from_iter_values(values.iter().map(|v| v[c]))),
        ));
    }
    let batch = common::batch(
        columns
            .iter()
            .map(|(n, a)| (n.as_str(), Arc::clone(a)))
            .collect(),
    );
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table(name, Arc::new(table)).unwrap();
}

#[tokio::test]
async fn pairs_with_a_two_valued_gene_are_exact_under_auto() {
    // RNA-like genes (zero-inflated counts, one with a missing value) and
    // binarised peaks (rare and common ones, one with a missing value, one
    // constant), over 300 cells.
    let cells = 300;
    let mut rna: Vec<Vec<f64>> = (0..6)
        .map(|g| {
            draws(g, cells, 12)
                .iter()
                .map(|&v| (v - 7.0).max(0.0) * 0.37)
                .collect()
        })
        .collect();
    rna.push(draws(99, cells, 1 << 30));
    rna[2][17] = f64::NAN;
    let mut atac: Vec<Vec<f64>> = (0..7)
        .map(|p| {
            draws(100 + p, cells, 20)
                .iter()
                .map(|&v| f64::from(v < 1.0 + p as f64 * 2.5))
                .collect()
        })
        .collect();
    atac[3][5] = f64::NAN;
    atac.push(vec![1.0; cells]);
    let mut listed: Vec<(String, String)> = Vec::new();
    for g in 0..rna.len() {
        for p in 0..atac.len() {
            listed.push((format!("g{g}"), format!("p{p}")));
        }
    }
    // Two-valued genes within one matrix too: all pairs of RNA and peaks.
    let stacked: Vec<Vec<f64>> = rna.iter().chain(&atac).cloned().collect();
    let mut bits = Vec::new();
    for kernel in ["naive", "auto", "vse", "bitset", "zero"] {
        let ctx = ctx(2);
        register_features(&ctx, "rna", "g", &rna);
        register_features(&ctx, "atac", "p", &atac);
        register_features(&ctx, "both", "f", &stacked);
        let pairs: Vec<(&str, &str)> = listed
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        register_list(&ctx, "cand", &pairs);
        let set = format!("SET kendall.kernel = '{kernel}'");
        let listed = run(
            &ctx,
            &format!(
                "{set}; SELECT gene_i, gene_j, tau, p_value, n FROM \
                 kendall_candidate_pairs('cand', 'rna', 'atac')"
            ),
        )
        .await
        .unwrap();
        let all = run(
            &ctx,
            &format!(
                "{set}; SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('both')"
            ),
        )
        .await
        .unwrap();
        let got = (sorted_bits(&listed), sorted_bits(&all));
        assert_eq!(got.0.len(), 7 * 8, "{kernel}");
        // The constant peak: no tau-b.
        let constant = got.0.iter().filter(|r| r.1 == "p7");
        assert!(
            constant.into_iter().all(|r| f64::from_bits(r.2).is_nan()),
            "{kernel}"
        );
        bits.push((kernel, got));
    }
    let (_, naive) = &bits[0];
    for (kernel, got) in &bits[1..] {
        assert_eq!(got, naive, "{kernel} against the naive kernel");
    }
}

/// `(line, tau bits)` of every row of `batches` (`line`, `tau`), in order;
/// `None` for a NULL tau.
fn line_taus(batches: &[datafusion::arrow::record_batch::RecordBatch]) -> Vec<(i64, Option<u64>)> {
    let mut rows = Vec::new();
    for b in batches {
        let line = b
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let tau = b.column(1).as_primitive::<Float64Type>();
        for k in 0..b.num_rows() {
            let t = tau.is_valid(k).then(|| tau.value(k).to_bits());
            rows.push((line.value(k), t));
        }
    }
    rows
}

/// Case: `kendall_candidate_taus` gives one row per line of the list, in
/// its order (on any number of partitions): the tau `kendall_candidate_pairs`
/// gives the line's pair, bit for bit (in one matrix in either order, again
/// for a pair listed again), NULL for a line naming no pair (an unknown
/// gene, a gene with itself); `ORDER BY line` sorts nothing; an empty list
/// gives no rows; and between two matrices likewise.
#[tokio::test]
async fn candidate_taus_give_each_line_its_pairs_tau_in_order() {
    let genes = genes_of(LEFT);
    let g = |k: usize| genes[k].as_str();
    let lines = [
        (g(3), g(2)),
        (g(0), g(1)),
        (g(1), g(0)),
        (g(4), g(4)),
        ("no_such_gene", g(1)),
        (g(0), g(1)),
        (g(2), g(5)),
    ];
    let right = genes_of(RIGHT);
    let cross_lines = [
        (g(2), right[1].as_str()),
        (g(0), "no_such_gene"),
        (g(0), right[0].as_str()),
        (g(2), right[1].as_str()),
    ];
    for partitions in [1, 3] {
        let ctx = ctx(partitions);
        register_list(&ctx, "cand", &lines);
        register_list(&ctx, "cross_cand", &cross_lines);
        // Each pair's tau as kendall_candidate_pairs gives it.
        let taus = |sql: String| {
            let ctx = &ctx;
            async move {
                let rows = sorted_bits(&run(ctx, &sql).await.unwrap());
                rows.into_iter()
                    .map(|r| ((r.0, r.1), r.2))
                    .collect::<BTreeMap<(String, String), u64>>()
            }
        };
        let one = taus(format!(
            "SELECT gene_i, gene_j, tau, p_value, n FROM kendall_candidate_pairs('cand', '{LEFT}')"
        ))
        .await;
        let tau_of = |a: &str, b: &str| {
            one.get(&(a.to_string(), b.to_string()))
                .or_else(|| one.get(&(b.to_string(), a.to_string())))
                .copied()
        };
        let expected: Vec<(i64, Option<u64>)> = lines
            .iter()
            .enumerate()
            .map(|(k, &(a, b))| (k as i64 + 1, tau_of(a, b)))
            .collect();
        assert_eq!(expected[3].1, None);
        assert_eq!(expected[4].1, None);
        assert_eq!(expected.iter().filter(|r| r.1.is_some()).count(), 5);
        let sql =
            format!("SELECT line, tau FROM kendall_candidate_taus('cand', '{LEFT}') ORDER BY line");
        let got = line_taus(&run(&ctx, &sql).await.unwrap());
        assert_eq!(got, expected, "{partitions} partitions");
        // A long list read in many batches (each batch's ids looked up
        // while the next is read), as strings and as string views.
        let long: Vec<(&str, &str)> = lines
            .iter()
            .copied()
            .cycle()
            .take(50 * lines.len())
            .collect();
        for views in [false, true] {
            register_list_in_batches(&ctx, "long", &long, 4, views);
            let sql = format!(
                "SELECT line, tau FROM kendall_candidate_taus('long', '{LEFT}') ORDER BY line"
            );
            let got = line_taus(&run(&ctx, &sql).await.unwrap());
            let want: Vec<(i64, Option<u64>)> = (0..long.len())
                .map(|k| (k as i64 + 1, expected[k % lines.len()].1))
                .collect();
            assert_eq!(got, want, "{partitions} partitions, views {views}");
            ctx.deregister_table("long").unwrap();
        }
        let plan = common::plan(&ctx, &format!("EXPLAIN {sql}")).await;
        assert!(!plan.contains("SortExec"), "{plan}");
        assert!(plan.contains("the list's lines, in order"), "{plan}");
        // Between two matrices.
        let cross = taus(format!(
            "SELECT gene_i, gene_j, tau, p_value, n \
             FROM kendall_candidate_pairs('cross_cand', '{LEFT}', '{RIGHT}')"
        ))
        .await;
        let expected: Vec<(i64, Option<u64>)> = cross_lines
            .iter()
            .enumerate()
            .map(|(k, &(a, b))| {
                let tau = cross.get(&(a.to_string(), b.to_string())).copied();
                (k as i64 + 1, tau)
            })
            .collect();
        assert_eq!(expected.iter().filter(|r| r.1.is_some()).count(), 3);
        let sql = format!(
            "SELECT line, tau FROM kendall_candidate_taus('cross_cand', '{LEFT}', '{RIGHT}') \
             ORDER BY line"
        );
        let got = line_taus(&run(&ctx, &sql).await.unwrap());
        assert_eq!(got, expected, "{partitions} partitions");
        // An empty list: no rows.
        register_list(&ctx, "nothing", &[]);
        let sql = format!("SELECT count(*) FROM kendall_candidate_taus('nothing', '{LEFT}')");
        let batches = run(&ctx, &sql).await.unwrap();
        let count = batches[0]
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        assert_eq!(count.value(0), 0);
    }
    // Grouped samples are refused, naming the option.
    let ctx = ctx(1);
    register_list(&ctx, "cand", &lines);
    let err = common::error(
        &ctx,
        &format!(
            "SET kendall.groups = '{LEFT}'; \
             SELECT * FROM kendall_candidate_taus('cand', '{LEFT}')"
        ),
    )
    .await;
    common::assert_contains(&err, &["kendall_candidate_taus", "kendall.groups"]);
}

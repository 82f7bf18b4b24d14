//! The exact early exit under a pushed-down filter on tau: kernels that
//! stop counting a pair once its `S` cannot pass leave out exactly pairs
//! the filter rejects and give every other pair's `S` in full, on every
//! instruction set, at thresholds from 0 to 1 (attainable |tau| values
//! among them), with and without ties and missing values; in SQL, the
//! filtered rows are the unfiltered rows filtered afterwards, bit for bit.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::functions::math::expr_fn::abs;
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::physical_plan::collect;
use datafusion_kendall::filter::{PairValues, TauPredicate};
use datafusion_kendall::kernel::bitset::BitPlanes;
use datafusion_kendall::kernel::bound::SBound;
use datafusion_kendall::kernel::isa::Isa;
use datafusion_kendall::kernel::{KernelKind, PairKernel, Variant, naive, tau};
use datafusion_kendall::rank::RankedMatrix;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common;

/// How the test genes' values are drawn.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Distinct values.
    Distinct,
    /// Drawn from this many levels (ties).
    Levels(u32),
    /// This share of zeros, the rest distinct (the zero-inflated kernel's data).
    Zeros(f64),
}

/// `genes` genes of `n` values: the first four near copies of one gene
/// (pairs with |tau| near 1, which pass high thresholds), one constant
/// gene, the rest random; with `missing`, a tenth of the values of every
/// third gene missing (NaN).
fn genes(rng: &mut SmallRng, genes: usize, n: usize, shape: Shape, missing: bool) -> Vec<f64> {
    let draw = |rng: &mut SmallRng| match shape {
        Shape::Distinct => rng.random::<f64>(),
        Shape::Levels(k) => f64::from(rng.random_range(0..k)),
        Shape::Zeros(z) if rng.random::<f64>() < z => 0.0,
        Shape::Zeros(_) => rng.random::<f64>(),
    };
    let base: Vec<f64> = (0..n).map(|_| draw(rng)).collect();
    let mut values = Vec::with_capacity(genes * n);
    for g in 0..genes {
        for &b in &base {
            let x = match g {
                0..4 if rng.random::<f64>() < 0.9 => b,
                4 => 1.0,
                _ => draw(rng),
            };
            values.push(if missing && g % 3 == 2 && rng.random::<f64>() < 0.1 {
                f64::NAN
            } else {
                x
            });
        }
    }
    values
}

/// The filters tested at threshold `t`.
fn filters(t: f64) -> Vec<Expr> {
    vec![
        abs(col("tau")).gt_eq(lit(t)),
        abs(col("tau")).gt(lit(t)),
        col("tau").gt_eq(lit(t)),
        col("tau").lt_eq(lit(-t)),
        col("tau").between(lit(-t), lit(t)),
        abs(col("tau"))
            .gt_eq(lit(t))
            .and(col("p_value").lt(lit(0.05))),
    ]
}

/// Checks every kernel with an early exit on `m` under `expr`: the pairs
/// it outputs have the oracle's `S`, every pair the filter passes is among
/// them, and each pair is either output or counted as stopped. Returns the
/// pairs stopped by the bit-plane kernel (summed over instruction sets) and
/// by the zero-inflated kernel.
fn check(m: &RankedMatrix, expr: &Expr, variant: Variant) -> (usize, usize) {
    let genes = m.genes();
    let n = m.samples();
    let pred = TauPredicate::from_expr(expr).expect("pushable");
    let bound = SBound::new(&pred, variant, m).map(Arc::new);
    let planes = Arc::new(BitPlanes::build(m));
    // The oracle: S and whether today's filter passes the pair.
    let mut oracle = std::collections::HashMap::new();
    for i in 0..genes {
        for j in i + 1..genes {
            let s = naive::numerator_complete(m.ranks(i), m.ranks(j));
            let stats = m.pair_stats(i, j);
            let t = tau(variant, s, stats.n, stats.u, stats.v);
            // The p-value is unknown to the kernel: a filter on it is taken
            // as passing (the bound must not depend on it).
            let pass = pred.eval_tau(t) != Some(false);
            oracle.insert(
                (i as u32, j as u32),
                (s, pass, pred.eval(&PairValues::tau(t))),
            );
        }
    }
    let rows: Vec<u32> = (0..genes as u32).collect();
    let mut kernels = Vec::new();
    for isa in Isa::ALL.into_iter().filter(|i| i.is_available()) {
        let k = PairKernel::new(KernelKind::Bitset, n, isa, Some(Arc::clone(&planes))).unwrap();
        kernels.push((format!("bitset {isa}"), k));
    }
    let zero = PairKernel::new(KernelKind::Zero, n, Isa::detect(), None).unwrap();
    kernels.push(("zero".to_string(), zero));
    let (mut bitset_stops, mut zero_stops) = (0, 0);
    for (name, kernel) in kernels {
        let mut kernel = kernel.with_early_exit(bound.clone());
        let mut out = Vec::new();
        // Blocks of several shapes: all rows at once, and row by row.
        kernel.block(m, &rows, 0..genes, &mut out);
        let mut exits = kernel.take_exits();
        for &i in &rows {
            kernel.block(m, &[i], 0..genes, &mut out);
            exits.add(kernel.take_exits());
        }
        let what = format!("{name} {expr} variant {variant} n {n}");
        let total = genes * (genes - 1) / 2;
        assert_eq!(out.len() + exits.pairs, 2 * total, "{what}");
        assert!(exits.words_counted <= exits.words_total, "{what}");
        let mut seen = std::collections::HashMap::new();
        for p in &out {
            let (s, _, _) = oracle[&(p.i, p.j)];
            assert_eq!(p.s, s, "{what} ({}, {})", p.i, p.j);
            *seen.entry((p.i, p.j)).or_insert(0) += 1;
        }
        for (pair, &(_, pass, _)) in &oracle {
            if pass {
                assert_eq!(
                    seen.get(pair),
                    Some(&2),
                    "{what}: {pair:?} passes, not output"
                );
            }
        }
        if name == "zero" {
            zero_stops += exits.pairs;
        } else {
            bitset_stops += exits.pairs;
        }
    }
    (bitset_stops, zero_stops)
}

/// Thresholds from 0 to 1, and |tau| values the pairs of `m` attain.
fn thresholds(m: &RankedMatrix, variant: Variant) -> Vec<f64> {
    let mut attained = Vec::new();
    for i in 0..m.genes() {
        for j in i + 1..m.genes() {
            let s = naive::numerator_complete(m.ranks(i), m.ranks(j));
            let stats = m.pair_stats(i, j);
            let t = tau(variant, s, stats.n, stats.u, stats.v).abs();
            if t.is_finite() {
                attained.push(t);
            }
        }
    }
    attained.sort_by(f64::total_cmp);
    let mut ts = vec![0.0, 0.25, 0.5, 0.8, 0.95, 1.0];
    if !attained.is_empty() {
        let last = attained.len() - 1;
        ts.extend([attained[last], attained[last / 2], attained[last * 9 / 10]]);
    }
    ts
}

#[test]
fn early_exit_leaves_out_only_failing_pairs_on_every_isa() {
    let mut rng = SmallRng::seed_from_u64(47);
    let mut stops = (0, 0);
    for n in [12usize, 57, 130, 330] {
        for shape in [
            Shape::Distinct,
            Shape::Levels(5),
            Shape::Levels(n as u32),
            Shape::Zeros(0.9),
        ] {
            for missing in [false, true] {
                let g = 11;
                let values = genes(&mut rng, g, n, shape, missing);
                let m = RankedMatrix::from_values(g, n, &values);
                for variant in [Variant::A, Variant::B, Variant::C] {
                    for t in thresholds(&m, variant) {
                        for expr in filters(t) {
                            let (b, z) = check(&m, &expr, variant);
                            stops = (stops.0 + b, stops.1 + z);
                        }
                    }
                }
            }
        }
    }
    assert!(
        stops.0 > 0 && stops.1 > 0,
        "no pair stopped early: {stops:?}"
    );
}

/// Groups' columns are checked against the rank scores in runs of 64: with
/// 140 genes a group's columns span three runs, near copies of one gene
/// (pairs that pass) sit in each, and a gene with missing values in the
/// middle of one; whole planes (n = 57) and chunks of words (n = 330).
#[test]
fn early_exit_across_runs_of_columns() {
    let mut rng = SmallRng::seed_from_u64(4_764);
    let g = 140;
    for n in [57usize, 330] {
        let base: Vec<f64> = (0..n)
            .map(|_| f64::from(rng.random_range(0..n as u32)))
            .collect();
        let mut values = Vec::with_capacity(g * n);
        for k in 0..g {
            for &b in &base {
                let x = if k % 33 == 1 && rng.random::<f64>() < 0.95 {
                    b
                } else {
                    f64::from(rng.random_range(0..n as u32))
                };
                values.push(if k == 100 && rng.random::<f64>() < 0.1 {
                    f64::NAN
                } else {
                    x
                });
            }
        }
        let m = RankedMatrix::from_values(g, n, &values);
        let mut stopped = 0;
        for (t, variant) in [(0.5, Variant::A), (0.8, Variant::B)] {
            stopped += check(&m, &abs(col("tau")).gt_eq(lit(t)), variant).0;
        }
        assert!(stopped > 0, "n {n}: no pair stopped");
        // The runs were screened: the scores stopped pairs before a word.
        let pred = TauPredicate::from_expr(&abs(col("tau")).gt_eq(lit(0.8))).unwrap();
        let bound = SBound::new(&pred, Variant::B, &m).map(Arc::new);
        let planes = Arc::new(BitPlanes::build(&m));
        let kernel = PairKernel::new(KernelKind::Bitset, n, Isa::detect(), Some(planes)).unwrap();
        let mut kernel = kernel.with_early_exit(bound);
        let rows: Vec<u32> = (0..g as u32).collect();
        kernel.block(&m, &rows, 0..g, &mut Vec::new());
        let before = kernel.take_exits().before_count;
        assert!(
            before > g * (g - 1) / 4,
            "n {n}: {before} pairs stopped before a word"
        );
    }
}

/// Where pairs must stop: random genes without ties under `abs(tau) >=
/// 0.8` stop on every instruction set, after a share of their words, and
/// zero-inflated genes stop in the zero-inflated kernel.
#[test]
fn early_exit_counters_count_the_stopped_pairs() {
    let mut rng = SmallRng::seed_from_u64(4747);
    let (g, n) = (24, 200);
    let values: Vec<f64> = (0..g * n).map(|_| rng.random::<f64>()).collect();
    let m = RankedMatrix::from_values(g, n, &values);
    let pred = TauPredicate::from_expr(&abs(col("tau")).gt_eq(lit(0.8))).unwrap();
    let bound = SBound::new(&pred, Variant::B, &m).map(Arc::new);
    assert!(bound.is_some());
    let planes = Arc::new(BitPlanes::build(&m));
    let rows: Vec<u32> = (0..g as u32).collect();
    for isa in Isa::ALL.into_iter().filter(|i| i.is_available()) {
        let kernel = PairKernel::new(KernelKind::Bitset, n, isa, Some(Arc::clone(&planes)));
        let mut kernel = kernel.unwrap().with_early_exit(bound.clone());
        let mut out = Vec::new();
        kernel.block(&m, &rows, 0..g, &mut out);
        let exits = kernel.take_exits();
        // No random pair reaches 0.8: all stop, well before their last word,
        // most before their first (the rank scores' interval: a pair needs
        // a Spearman correlation near 0.7 to reach 0.8, random genes stay
        // far below it).
        assert_eq!(exits.pairs, g * (g - 1) / 2, "{isa}");
        assert!(out.is_empty(), "{isa}");
        assert!(
            exits.words_counted * 2 < exits.words_total,
            "{isa}: {exits:?}"
        );
        assert!(exits.before_count * 2 > exits.pairs, "{isa}: {exits:?}");
        assert_eq!(kernel.take_exits().pairs, 0, "taken once");
    }
    let values = genes(&mut rng, g, 2000, Shape::Zeros(0.95), false);
    let m = RankedMatrix::from_values(g, 2000, &values);
    let bound = SBound::new(&pred, Variant::B, &m).map(Arc::new);
    let kernel = PairKernel::new(KernelKind::Zero, 2000, Isa::detect(), None).unwrap();
    let mut kernel = kernel.with_early_exit(bound);
    let mut out = Vec::new();
    kernel.block(&m, &rows, 0..g, &mut out);
    assert!(kernel.take_exits().pairs > 0);
}

/// One column per gene (`genes_as_columns`), NULL for NaN.
fn write_genes(path: &std::path::Path, values: &[f64], g: usize, n: usize) {
    let columns: Vec<(String, ArrayRef)> = (0..g)
        .map(|k| {
            let column: Float64Array = values[k * n..(k + 1) * n]
                .iter()
                .map(|&x| (!x.is_nan()).then_some(x))
                .collect();
            (format!("g{k:02}"), Arc::new(column) as ArrayRef)
        })
        .collect();
    let batch = datafusion::arrow::array::RecordBatch::try_from_iter(columns).unwrap();
    common::write_parquet(path, &batch);
}

/// In SQL, every kernel and instruction set: a pushed-down filter's rows
/// are the unfiltered rows filtered afterwards, bit for bit; `EXPLAIN
/// ANALYZE`'s metrics show the pairs stopped early and the share of words.
#[tokio::test]
async fn filtered_rows_are_the_unfiltered_rows_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(1447);
    let cases = [
        ("distinct", 140, Shape::Distinct, false),
        ("ties", 140, Shape::Levels(6), false),
        ("missing", 140, Shape::Levels(40), true),
        ("zeros", 400, Shape::Zeros(0.9), false),
    ];
    for (name, n, shape, missing) in cases {
        let g = 30;
        let path = dir.path().join(format!("{name}.parquet"));
        write_genes(&path, &genes(&mut rng, g, n, shape, missing), g, n);
        let path = path.display();
        for (kernel, simd) in [
            ("bitset", "scalar"),
            ("bitset", "avx2"),
            ("bitset", "avx512"),
            ("zero", "auto"),
            ("vse", "auto"),
            ("auto", "auto"),
        ] {
            if !common::simd_available(simd) {
                continue;
            }
            for variant in ["a", "b", "c"] {
                let set = format!(
                    "SET kendall.layout = 'genes_as_columns'; SET kendall.kernel = '{kernel}'; \
                     SET kendall.simd = '{simd}'; SET kendall.variant = '{variant}'"
                );
                let ctx = common::ctx(2);
                let select = "SELECT gene_i, gene_j, tau, p_value, n";
                let all = common::run(
                    &ctx,
                    &format!("{set}; {select} FROM kendall_all_pairs('{path}')"),
                )
                .await
                .unwrap();
                let all = common::sorted_bits(&all);
                for (filter, keep) in [
                    (
                        "abs(tau) >= 0.8",
                        (|t: f64| t.is_nan() || t.abs() >= 0.8) as fn(f64) -> bool,
                    ),
                    ("abs(tau) >= 0.3", |t: f64| t.is_nan() || t.abs() >= 0.3),
                    ("tau >= 0.5", |t: f64| t.is_nan() || t >= 0.5),
                    ("tau <= -0.2", |t: f64| t <= -0.2),
                    ("abs(tau) >= 0", |_| true),
                    ("abs(tau) >= 1", |t: f64| t.is_nan() || t.abs() >= 1.0),
                ] {
                    let sql = format!("{select} FROM kendall_all_pairs('{path}') WHERE {filter}");
                    let got = common::run(&ctx, &format!("{set}; {sql}")).await.unwrap();
                    let got = common::sorted_bits(&got);
                    let expected: Vec<_> = all
                        .iter()
                        .filter(|r| keep(f64::from_bits(r.2)))
                        .cloned()
                        .collect();
                    let what =
                        format!("{name} kernel={kernel} simd={simd} variant={variant} {filter}");
                    assert_eq!(got, expected, "{what}");
                    // Without p-values: the stream's tight loop.
                    let sql = format!(
                        "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{path}') WHERE {filter}"
                    );
                    let got = common::run(&ctx, &format!("{set}; {sql}")).await.unwrap();
                    let expected: Vec<_> = expected
                        .iter()
                        .map(|r| (r.0.clone(), r.1.clone(), r.2))
                        .collect();
                    assert_eq!(common::sorted_tau_bits(&got), expected, "{what}, tau only");
                }
                // Metrics: the network filter stops pairs in the bit-plane
                // and zero-inflated kernels; the share of words is shown.
                let sql = format!(
                    "{set}; SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{path}') \
                     WHERE abs(tau) >= 0.8"
                );
                let mut plan = None;
                for stmt in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
                    let df = ctx.sql(stmt).await.unwrap();
                    let physical = df.create_physical_plan().await.unwrap();
                    collect(Arc::clone(&physical), ctx.task_ctx())
                        .await
                        .unwrap();
                    plan = Some(physical);
                }
                let plan = plan.unwrap();
                let stopped = common::kendall_metric(&plan, "early_exit_pairs");
                let before = common::kendall_metric(&plan, "early_exit_before_count");
                assert!(before <= stopped, "{name} {kernel} {simd} {variant}");
                let rejected = common::kendall_metric(&plan, "bound_rejected_pairs");
                let stops_here = matches!(
                    (kernel, name),
                    ("bitset", "distinct" | "ties") | ("zero", "zeros")
                );
                if stops_here {
                    assert!(
                        stopped > 0,
                        "{name} {kernel} {simd} {variant}: none stopped"
                    );
                }
                if (kernel, name) == ("bitset", "distinct") {
                    // Random tie-free genes: the rank scores stop pairs
                    // before their first word.
                    assert!(before > 0, "{name} {simd} {variant}: none before counting");
                }
                if kernel == "vse" {
                    // VSE has no early exit: every pair is counted in
                    // full and the bound decides from S.
                    assert_eq!(stopped, 0);
                    assert!(rejected > 0, "{name} vse {variant}");
                }
                let text = common::plan(
                    &ctx,
                    &format!(
                        "EXPLAIN ANALYZE SELECT gene_i, gene_j, tau FROM \
                         kendall_all_pairs('{path}') WHERE abs(tau) >= 0.8"
                    ),
                )
                .await;
                for needle in [
                    "early_exit_pairs=",
                    "early_exit_before_count=",
                    "early_exit_word_share=",
                    "bound_rejected_pairs=",
                ] {
                    assert!(text.contains(needle), "{needle} missing:\n{text}");
                }
            }
        }
    }
}

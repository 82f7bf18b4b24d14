//! Listed pairs computed without a query (`exec::cross_listed_tau`, what
//! Python's `batch_kendall_tau` calls): the taus of
//! `kendall_candidate_pairs` over the same two sparse tables, bit for bit,
//! aligned with the list (unsorted, repeated pairs too), for every kernel
//! and 1–3 threads; errors name what is wrong.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use datafusion::arrow::array::{Array, Float64Array, Int32Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigField;
use datafusion::prelude::SessionContext;
use datafusion_kendall::exec::cross_listed_tau;
use datafusion_kendall::{KendallOptions, SparseTable};

use crate::common::{batch, ctx, draws, run};

/// Features (`prefix0`, ...) over `cells` cells (`c0`, ...) as a sparse
/// table of their non-zero values (scipy's CSC form of cells x features).
fn table(prefix: &str, features: &[Vec<f64>]) -> SparseTable {
    let cells = features[0].len();
    let (mut indptr, mut indices, mut data) = (vec![0i32], Vec::new(), Vec::new());
    for f in features {
        for (c, &v) in f.iter().enumerate() {
            if v != 0.0 {
                indices.push(c as i32);
                data.push(v);
            }
        }
        indptr.push(indices.len() as i32);
    }
    SparseTable::try_new(
        &StringArray::from_iter_values((0..features.len()).map(|f| format!("{prefix}{f}"))),
        &StringArray::from_iter_values((0..cells).map(|c| format!("c{c}"))),
        &Int32Array::from(indptr),
        &Int32Array::from(indices),
        &Float64Array::from(data),
    )
    .unwrap()
}

/// RNA-like features (zero-inflated counts with ties, one constant, one
/// untied) and binarised peaks (rare and common, one constant) over 240
/// cells.
fn matrices() -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let cells = 240;
    let mut rna: Vec<Vec<f64>> = (0..7)
        .map(|g| {
            draws(g, cells, 12)
                .iter()
                .map(|&v| (v - 6.0).max(0.0) * 0.37)
                .collect()
        })
        .collect();
    rna.push(vec![0.0; cells]);
    rna.push(draws(77, cells, 1 << 30).iter().map(|v| v + 1.0).collect());
    let mut atac: Vec<Vec<f64>> = (0..9)
        .map(|p| {
            draws(100 + p, cells, 20)
                .iter()
                .map(|&v| f64::from(v < 1.0 + p as f64 * 2.0))
                .collect()
        })
        .collect();
    atac.push(vec![1.0; cells]);
    (rna, atac)
}

/// Every (gene, peak) pair, in a scrambled order, some listed twice.
fn listed(genes: usize, peaks: usize) -> (Vec<u32>, Vec<u32>) {
    let mut pairs: Vec<(u32, u32)> = (0..genes as u32)
        .flat_map(|g| (0..peaks as u32).map(move |p| (g, p)))
        .collect();
    let order = draws(5, pairs.len(), 1 << 40);
    let mut keyed: Vec<(u64, (u32, u32))> = order
        .iter()
        .map(|&k| k as u64)
        .zip(pairs.drain(..))
        .collect();
    keyed.sort_unstable();
    let mut pairs: Vec<(u32, u32)> = keyed.into_iter().map(|(_, p)| p).collect();
    pairs.extend_from_within(3..20);
    pairs.into_iter().unzip()
}

fn options(kernel: &str) -> KendallOptions {
    let mut options = KendallOptions::default();
    options.set("kernel", kernel).unwrap();
    options
}

/// Each (gene, peak) pair's tau bits from `kendall_candidate_pairs`.
async fn query_taus(
    ctx: &SessionContext,
    (first, second): (&[u32], &[u32]),
    kernel: &str,
) -> HashMap<(String, String), u64> {
    let gene = StringArray::from_iter_values(first.iter().map(|g| format!("g{g}")));
    let peak = StringArray::from_iter_values(second.iter().map(|p| format!("p{p}")));
    let list = batch(vec![("gene", Arc::new(gene)), ("peak", Arc::new(peak))]);
    ctx.register_batch("cand", list).unwrap();
    let sql = format!(
        "SET kendall.kernel = '{kernel}'; \
         SELECT gene_i, gene_j, tau FROM kendall_candidate_pairs('cand', 'x', 'y')"
    );
    let mut taus = HashMap::new();
    let text = |a: &Arc<dyn Array>| cast(a, &DataType::Utf8).unwrap();
    for b in run(ctx, &sql).await.unwrap() {
        let (genes, peaks) = (text(b.column(0)), text(b.column(1)));
        let genes = genes.as_any().downcast_ref::<StringArray>().unwrap();
        let peaks = peaks.as_any().downcast_ref::<StringArray>().unwrap();
        let tau = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        for r in 0..b.num_rows() {
            taus.insert(
                (genes.value(r).to_string(), peaks.value(r).to_string()),
                tau.value(r).to_bits(),
            );
        }
    }
    taus
}

/// Case: every kernel, 1–3 threads, a scrambled list with repeats: each
/// listed pair's tau has the query's bits (NaN for the constant features),
/// in the list's order.
#[tokio::test]
async fn listed_pairs_without_a_query_are_the_querys_taus() {
    let (rna, atac) = matrices();
    let (x, y) = (table("g", &rna), table("p", &atac));
    let (first, second) = listed(rna.len(), atac.len());
    for kernel in ["auto", "naive", "gse", "vse", "bitset", "zero"] {
        let ctx = ctx(2);
        ctx.register_table("x", Arc::new(x.clone())).unwrap();
        ctx.register_table("y", Arc::new(y.clone())).unwrap();
        let expected = query_taus(&ctx, (&first, &second), kernel).await;
        assert_eq!(expected.len(), rna.len() * atac.len(), "kernel {kernel}");
        for threads in 1..=3 {
            let stop = AtomicBool::new(false);
            let taus = cross_listed_tau(
                &x,
                &y,
                (&first, &second),
                &options(kernel),
                Some(threads),
                &stop,
            )
            .unwrap();
            assert_eq!(taus.len(), first.len());
            for (k, tau) in taus.iter().enumerate() {
                let key = (format!("g{}", first[k]), format!("p{}", second[k]));
                assert_eq!(
                    tau.to_bits(),
                    expected[&key],
                    "kernel {kernel}, {threads} thread(s), pair {k} {key:?}: {tau}"
                );
            }
            let constant = (0..first.len())
                .filter(|&k| {
                    first[k] as usize == rna.len() - 2 || second[k] as usize == atac.len() - 1
                })
                .collect::<Vec<_>>();
            assert!(!constant.is_empty() && constant.iter().all(|&k| taus[k].is_nan()));
            assert!(taus.iter().filter(|t| !t.is_nan()).count() > first.len() / 2);
        }
    }
}

/// Case: the list in order (no reordering), an empty list, and a list
/// with one pair give what the whole list gives for those pairs.
#[test]
fn ordered_empty_and_single_lists() {
    let (rna, atac) = matrices();
    let (x, y) = (table("g", &rna), table("p", &atac));
    let stop = AtomicBool::new(false);
    let (first, second): (Vec<u32>, Vec<u32>) = (0..rna.len() as u32)
        .flat_map(|g| (0..atac.len() as u32).map(move |p| (g, p)))
        .unzip();
    let all =
        cross_listed_tau(&x, &y, (&first, &second), &options("auto"), Some(2), &stop).unwrap();
    let none = cross_listed_tau(&x, &y, (&[], &[]), &options("auto"), Some(2), &stop).unwrap();
    assert!(none.is_empty());
    let k = 23;
    let one = cross_listed_tau(
        &x,
        &y,
        (&first[k..=k], &second[k..=k]),
        &options("auto"),
        None,
        &stop,
    )
    .unwrap();
    assert_eq!(one[0].to_bits(), all[k].to_bits());
    assert!(!all[k].is_nan());
}

/// Case: a position outside its matrix, sides of different lengths, and a
/// set stop flag are errors that say so.
#[test]
fn bad_lists_and_a_stop_are_errors() {
    let (rna, atac) = matrices();
    let (x, y) = (table("g", &rna), table("p", &atac));
    let stop = AtomicBool::new(false);
    let error = |first: &[u32], second: &[u32], stop: &AtomicBool| {
        cross_listed_tau(&x, &y, (first, second), &options("auto"), Some(2), stop)
            .unwrap_err()
            .to_string()
    };
    let e = error(&[0, 9], &[1, 1], &stop);
    assert!(
        e.contains("first position (9)") && e.contains("9 features"),
        "{e}"
    );
    let e = error(&[0], &[10], &stop);
    assert!(
        e.contains("second position (10)") && e.contains("10 features"),
        "{e}"
    );
    let e = error(&[0, 1], &[1], &stop);
    assert!(e.contains("2 first and 1 second"), "{e}");
    let e = error(&[0, 1], &[1, 2], &AtomicBool::new(true));
    assert!(e.contains("stopped"), "{e}");
}

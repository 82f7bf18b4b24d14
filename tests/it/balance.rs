//! Gene-targeted queries keep every partition busy (issue 15, item 8).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::physical_plan::{ExecutionPlan, collect};

use crate::common::{ctx, kendall_exec, read_parquet, sorted_tau_bits};

/// (gene_i, gene_j) -> tau bits of a (gene_i, gene_j, tau) result.
fn rows(batches: &[datafusion::arrow::array::RecordBatch]) -> BTreeMap<(String, String), u64> {
    let listed = sorted_tau_bits(batches);
    let out: BTreeMap<_, _> = listed
        .iter()
        .map(|(i, j, t)| ((i.clone(), j.clone()), *t))
        .collect();
    assert_eq!(out.len(), listed.len(), "a pair twice");
    out
}

#[tokio::test]
async fn gene_filters_spread_pairs_over_every_partition() {
    let path = "data/demo_expression.parquet";
    let all = read_parquet(path);
    let ids = all.column(0).as_string::<i32>();
    let genes = ids.len();
    let middle = ids.value(genes / 3).to_string();
    let last = ids.value(genes - 1).to_string();
    for (filter, expected) in [
        (
            format!("gene_i = '{middle}' OR gene_j = '{middle}'"),
            genes - 1,
        ),
        (format!("gene_j = '{last}'"), genes - 1),
        (
            format!("gene_i IN ('{middle}', '{last}')"),
            genes - 1 - genes / 3,
        ),
    ] {
        let sql =
            format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{path}') WHERE {filter}");
        // Not pushed down (a computed column): every pair, filtered after.
        let unpushed = sql
            .replace("gene_i =", "concat(gene_i, '') =")
            .replace("gene_j =", "concat(gene_j, '') =")
            .replace("gene_i IN", "concat(gene_i, '') IN");
        let reference = rows(
            &ctx(2)
                .sql(&unpushed)
                .await
                .unwrap()
                .collect()
                .await
                .unwrap(),
        );
        assert_eq!(reference.len(), expected, "{filter}");
        for partitions in [1usize, 3, 4, 8] {
            let ctx = ctx(partitions);
            let plan = ctx
                .sql(&sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let got = rows(&collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap());
            assert_eq!(got, reference, "{filter} over {partitions}");
            let metrics = kendall_exec(&plan).metrics().unwrap();
            let mut per = vec![0usize; partitions];
            for m in metrics
                .iter()
                .filter(|m| m.value().name() == "pairs_computed")
            {
                per[m.partition().unwrap()] += m.value().as_usize();
            }
            let total: usize = per.iter().sum();
            assert_eq!(total, expected, "{filter}: pairs computed");
            let (lo, hi) = (total / partitions, total.div_ceil(partitions));
            assert!(
                per.iter().all(|&n| (lo..=hi).contains(&n)),
                "{filter}: pairs per partition {per:?}, mean {}",
                total as f64 / partitions as f64
            );
        }
    }
}

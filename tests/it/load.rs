//! One load of the input per query, its error remembered, stopped when the
//! query is cancelled (issue 15, item 4).

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, Float64Array, StringArray};
use datafusion::physical_plan::{ExecutionPlan, collect};
use futures::TryStreamExt;

use crate::common::{self, ctx, kendall_exec, kendall_metric, run};

#[tokio::test]
async fn an_error_found_late_is_found_once() {
    // 20,000 genes; the last one repeats the first id: found when the last
    // batch is read.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.parquet");
    let genes = 20_000;
    let mut ids: Vec<String> = (0..genes).map(|g| format!("g{g}")).collect();
    ids[genes - 1] = "g0".to_string();
    let column = |k: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(
            (0..genes).map(|g| ((g * 7 + k * 13) % 101) as f64),
        ))
    };
    let batch = common::batch(vec![
        ("gene", Arc::new(StringArray::from(ids)) as ArrayRef),
        ("s1", column(1)),
        ("s2", column(2)),
        ("s3", column(3)),
    ]);
    common::write_parquet(&path, &batch);
    let ctx = ctx(4);
    let sql = format!("SELECT * FROM kendall_all_pairs('{}')", path.display());
    let plan = ctx
        .sql(&sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let exec = kendall_exec(&plan);
    // Every partition, one after another, each to its end: each gets the
    // error of the one load.
    for p in 0..4 {
        let stream = exec.execute(p, ctx.task_ctx()).unwrap();
        let err = stream
            .try_collect::<Vec<_>>()
            .await
            .unwrap_err()
            .to_string();
        common::assert_contains(&err, &["duplicate gene id 'g0'", "dup.parquet"]);
    }
    // And the whole plan again.
    let err = collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap_err();
    common::assert_contains(&err.to_string(), &["duplicate gene id 'g0'"]);
    assert_eq!(kendall_metric(&plan, "input_loads"), 1);
    assert_eq!(kendall_metric(&plan, "input_loads_stopped"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_query_stops_its_load() {
    // n = 1,000 without ties and exact p-values: preparing builds the exact
    // distribution of n = 1,000 (O(n³) steps, a good fraction of a second).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.parquet");
    let n = 1000;
    let gene = |k: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(
            (0..n).map(|s| ((s * (2 * k + 1) * 7919) % 10007) as f64),
        ))
    };
    common::write_parquet(
        &path,
        &common::batch(vec![("a", gene(0)), ("b", gene(1)), ("c", gene(2))]),
    );
    let ctx = ctx(2);
    run(
        &ctx,
        "SET kendall.layout = 'genes_as_columns'; SET kendall.pvalue = 'exact'",
    )
    .await
    .unwrap();
    let sql = format!(
        "SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('{}')",
        path.display()
    );
    let plan: Arc<dyn ExecutionPlan> = ctx
        .sql(&sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let task = tokio::spawn(collect(Arc::clone(&plan), ctx.task_ctx()));
    // Cancel as soon as the load has started.
    let started = Instant::now();
    while kendall_metric(&plan, "input_loads") == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "no load");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let aborted = Instant::now();
    while kendall_metric(&plan, "input_loads_stopped") == 0 {
        assert!(
            aborted.elapsed() < Duration::from_secs(10),
            "the load went on after the query was cancelled"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    eprintln!("load stopped {:?} after the abort", aborted.elapsed());
    // The plan still runs: a new load, to the end.
    let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
    assert_eq!(kendall_metric(&plan, "input_loads"), 2);
    assert_eq!(kendall_metric(&plan, "input_loads_stopped"), 1);
}

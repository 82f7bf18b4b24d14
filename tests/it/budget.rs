//! Every poll of a partition's stream ends near its budget, however costly
//! a pair is, so `LIMIT` and cancellation take effect at once (issue 15,
//! item 3). Measured on wall-clock time: a bound with 100 ms to spare, not a
//! speed claim.

use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_kendall::exec::POLL_BUDGET;
use futures::StreamExt;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common::{self, ctx, kendall_exec, run};

/// Most a poll may take: the budget and 100 ms.
fn bound() -> Duration {
    POLL_BUDGET + Duration::from_millis(100)
}

/// `genes` genes over `samples` samples (genes_as_columns), no ties, gene g
/// missing its first g samples: pair (i, j) shares `samples - j` samples,
/// so every partner gene needs its own exact distribution, each costing
/// O(n³) steps (milliseconds) to build.
fn staggered_gaps(path: &std::path::Path, genes: usize, samples: usize) {
    let mut rng = SmallRng::seed_from_u64(15);
    let columns: Vec<(String, ArrayRef)> = (0..genes)
        .map(|g| {
            let values: Float64Array = (0..samples)
                .map(|s| (s >= g).then(|| rng.random::<f64>()))
                .collect();
            (format!("g{g:03}"), Arc::new(values) as ArrayRef)
        })
        .collect();
    let batch = datafusion::arrow::array::RecordBatch::try_from_iter(columns).unwrap();
    common::write_parquet(path, &batch);
}

const SETUP: &str = "SET kendall.layout = 'genes_as_columns'; SET kendall.pvalue = 'exact'";

fn query(path: &std::path::Path) -> String {
    format!(
        "SELECT gene_i, gene_j, p_value FROM kendall_all_pairs('{}')",
        path.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn costly_pairs_do_not_hold_a_poll() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gaps.parquet");
    staggered_gaps(&path, 150, 250);
    let ctx = ctx(1);
    run(&ctx, SETUP).await.unwrap();
    let plan = ctx
        .sql(&query(&path))
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let exec = kendall_exec(&plan);
    let mut stream = exec.execute(0, ctx.task_ctx()).unwrap();
    let started = Instant::now();
    let (mut longest, mut polls, mut rows) = (Duration::ZERO, 0usize, 0usize);
    // Poll by hand, timing every poll, for up to 1.5 s of work.
    while started.elapsed() < Duration::from_millis(1500) {
        let next = futures::future::poll_fn(|cx| {
            // The poll's own CPU time: on a loaded machine the thread may
            // wait for a core mid-poll, which is not the stream holding it.
            let t = common::thread_cpu_time();
            let r = stream.poll_next_unpin(cx);
            longest = longest.max(common::thread_cpu_time() - t);
            polls += 1;
            match r {
                Poll::Pending => Poll::Ready(Some(None)),
                Poll::Ready(Some(b)) => Poll::Ready(Some(Some(b))),
                Poll::Ready(None) => Poll::Ready(None),
            }
        })
        .await;
        match next {
            None => break,
            Some(Some(batch)) => rows += batch.unwrap().num_rows(),
            Some(None) => tokio::task::yield_now().await,
        }
    }
    let took = started.elapsed();
    eprintln!("{polls} polls, {rows} rows in {took:?}, longest poll {longest:?} of CPU time");
    // The work spans many budgets (else the test shows nothing)...
    assert!(
        took > 10 * POLL_BUDGET,
        "finished too soon: {rows} rows in {took:?}"
    );
    // ...yet no poll held the thread for long.
    assert!(longest <= bound(), "a poll took {longest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_query_stops_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gaps.parquet");
    staggered_gaps(&path, 150, 250);
    // One partition: the query's stream is polled by the spawned task itself,
    // so the task ends exactly when the poll running at the abort returns.
    let ctx = ctx(1);
    run(&ctx, SETUP).await.unwrap();
    let df = ctx.sql(&query(&path)).await.unwrap();
    let task = tokio::spawn(async move { df.collect().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !task.is_finished(),
        "the query ended before it was cancelled"
    );
    let aborted = Instant::now();
    task.abort();
    let ended = task.await;
    let took = aborted.elapsed();
    assert!(ended.unwrap_err().is_cancelled());
    eprintln!("cancelled query ended {took:?} after the abort");
    assert!(took <= bound(), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_over_a_selective_filter_returns_promptly() {
    // A filter no pair passes until late: LIMIT 1 still has to look, but
    // every poll ends within the budget, so a timeout on the query works.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gaps.parquet");
    staggered_gaps(&path, 150, 250);
    let ctx = ctx(1);
    run(&ctx, SETUP).await.unwrap();
    let sql = format!("{} WHERE p_value < 0 LIMIT 1", query(&path));
    let df = ctx.sql(&sql).await.unwrap();
    let started = Instant::now();
    let r = tokio::time::timeout(Duration::from_millis(200), df.collect()).await;
    let took = started.elapsed();
    assert!(r.is_err(), "the query finished: nothing was slow");
    eprintln!("timed out after {took:?}");
    assert!(took <= Duration::from_millis(200) + bound(), "{took:?}");
}

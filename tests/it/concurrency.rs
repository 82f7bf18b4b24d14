//! Two queries at once in one process, and two shells at once on the same
//! file: each gives the rows it gives alone, cancelling one leaves the other
//! to finish, and each progress reading counts its own plan only.
//!
//! The queries use the naive kernel, so that the demo's 1,999,000 pairs take
//! seconds and queries started together really overlap; the tests assert
//! that they did (both computing at the same moment), not just that they
//! were started together.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::{ExecutionPlan, collect, execute_stream};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use datafusion_kendall::exec::{Progress, live_progress_of, plan_progress};
use futures::StreamExt;

use crate::common;

/// A file of the repository, by absolute path.
fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(name)
        .display()
        .to_string()
}

/// Pairs of the demo matrix (2,000 genes).
const DEMO_PAIRS: u64 = 2000 * 1999 / 2;

/// Genes of the second matrix of the progress test (the demo's first ones).
const HEAD: usize = 1500;

/// A context with 2 partitions and the naive kernel, and the demo matrix
/// registered under a name of this test's own: progress by source then
/// counts this test's scans only (the other tests of the binary run at the
/// same time, some on the same file).
async fn setup() -> (SessionContext, String) {
    let ctx = common::ctx(2);
    let demo = format!("concurrency_demo_{:08x}", rand::random::<u32>());
    ctx.register_parquet(
        &demo,
        data("data/demo_expression.parquet"),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    common::run(&ctx, "SET kendall.kernel = 'naive'")
        .await
        .unwrap();
    (ctx, demo)
}

/// The strongest pairs, in order (every pair computed, few rows out).
fn strong(source: &str) -> String {
    format!(
        "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{source}') \
         WHERE abs(tau) >= 0.8 ORDER BY gene_i, gene_j"
    )
}

/// Another query of the same source: other columns, other filter.
fn anticorrelated(source: &str) -> String {
    format!(
        "SELECT gene_j, gene_i, tau, p_value, n FROM kendall_all_pairs('{source}') \
         WHERE tau <= -0.5 ORDER BY gene_j, gene_i"
    )
}

async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

/// The rows of `sql` run alone, as a table (its ORDER BY fixes the order).
async fn alone(ctx: &SessionContext, sql: &str) -> String {
    let started = Instant::now();
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    eprintln!("alone: {rows} rows in {:?}", started.elapsed());
    assert!(rows > 0, "no rows: the comparison would show nothing");
    pretty_format_batches(&batches).unwrap().to_string()
}

/// Runs `plan` to the end in a task of its own; its rows as a table.
fn spawn(ctx: &SessionContext, plan: &Arc<dyn ExecutionPlan>) -> tokio::task::JoinHandle<String> {
    let (plan, task) = (Arc::clone(plan), ctx.task_ctx());
    tokio::spawn(async move {
        let batches = collect(plan, task).await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    })
}

fn progress(plan: &Arc<dyn ExecutionPlan>) -> Progress {
    plan_progress(plan).expect("a Kendall scan in the plan")
}

/// The total is known and some, not all, of the pairs are done.
fn midway(p: Progress) -> bool {
    p.total.is_some_and(|total| p.done > 0 && p.done < total)
}

/// Waits (at most 60 s) until `ready` holds.
async fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_queries_on_one_context_give_the_rows_they_give_alone() {
    let (ctx, demo) = setup().await;
    let (a_sql, b_sql) = (strong(&demo), anticorrelated(&demo));
    let (a_alone, b_alone) = (alone(&ctx, &a_sql).await, alone(&ctx, &b_sql).await);

    let (a, b) = (plan(&ctx, &a_sql).await, plan(&ctx, &b_sql).await);
    let started = Instant::now();
    let (a_task, b_task) = (spawn(&ctx, &a), spawn(&ctx, &b));
    // Both computing at the same moment, at least once.
    let mut overlapped = false;
    while !(a_task.is_finished() && b_task.is_finished()) {
        overlapped |= midway(progress(&a)) && midway(progress(&b));
        assert!(started.elapsed() < Duration::from_secs(120), "hung");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    eprintln!("both at once: {:?}", started.elapsed());
    assert!(
        overlapped,
        "the two queries never computed at the same time"
    );
    assert_eq!(a_task.await.unwrap(), a_alone);
    assert_eq!(b_task.await.unwrap(), b_alone);
    for p in [&a, &b] {
        assert_eq!(
            progress(p),
            Progress {
                done: DEMO_PAIRS,
                total: Some(DEMO_PAIRS)
            }
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_one_query_mid_stream_leaves_the_other_to_finish() {
    let (ctx, demo) = setup().await;
    let b_sql = strong(&demo);
    let b_alone = alone(&ctx, &b_sql).await;

    // A streams every pair (no ORDER BY: rows come while it computes); its
    // task reads them as they come, until aborted, which drops the stream.
    let a = plan(
        &ctx,
        &format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{demo}')"),
    )
    .await;
    let mut stream = execute_stream(Arc::clone(&a), ctx.task_ctx()).unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.num_rows() > 0);
    let a_task = tokio::spawn(async move {
        let mut rows = first.num_rows();
        while let Some(batch) = stream.next().await {
            rows += batch.unwrap().num_rows();
        }
        rows
    });
    let b = plan(&ctx, &b_sql).await;
    let b_task = spawn(&ctx, &b);
    wait_until("both queries computing", || {
        midway(progress(&a)) && midway(progress(&b))
    })
    .await;
    a_task.abort();
    let a_ended = a_task.await;
    assert!(
        a_ended.as_ref().is_err_and(|e| e.is_cancelled()),
        "A ended on its own before it was dropped: {a_ended:?}"
    );
    assert!(
        !b_task.is_finished(),
        "B was not running when A was dropped"
    );
    // A computes no more pairs (its partitions' tasks went with its
    // stream; give a poll in flight time to end)...
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped = progress(&a);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(progress(&a), stopped, "A went on computing after its drop");
    assert!(stopped.done < DEMO_PAIRS, "{stopped:?}");
    // ...while B, running on, completes with its rows.
    assert_eq!(b_task.await.unwrap(), b_alone);
    assert_eq!(progress(&b).done, DEMO_PAIRS);
    eprintln!("A dropped at {stopped:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_live_progress_readings_report_each_plans_own_total() {
    let (ctx, demo) = setup().await;
    // A second matrix with another total: the demo's first 1,500 genes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("head.parquet");
    common::head_parquet(&data("data/demo_expression.parquet"), HEAD, &path);
    let head = format!("{demo}_head");
    ctx.register_parquet(
        &head,
        path.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let head_pairs = (HEAD * (HEAD - 1) / 2) as u64;
    let query = |source: &str| {
        format!("SELECT count(*) FROM kendall_all_pairs('{source}') WHERE abs(tau) >= 0.8")
    };
    let (a, b) = (
        plan(&ctx, &query(&demo)).await,
        plan(&ctx, &query(&head)).await,
    );
    let scans = [
        (&a, demo.as_str(), DEMO_PAIRS),
        (&b, head.as_str(), head_pairs),
    ];
    for (_, source, _) in scans {
        // Planned, not started: a total not yet known.
        assert_eq!(
            live_progress_of(source),
            Some(Progress {
                done: 0,
                total: None
            })
        );
    }
    let started = Instant::now();
    let (a_task, b_task) = (spawn(&ctx, &a), spawn(&ctx, &b));
    let (mut readings, mut both_midway) = (0, 0);
    while !(a_task.is_finished() && b_task.is_finished()) {
        let mut midways = 0;
        for (plan, source, pairs) in scans {
            // By plan (the shell's bar) and by source (the Python bars):
            // each its own total, whatever the other query has done.
            for p in [progress(plan), live_progress_of(source).unwrap()] {
                assert!(p.total.is_none_or(|t| t == pairs), "{source}: {p:?}");
                assert!(p.done <= pairs, "{source}: {p:?}");
                midways += usize::from(midway(p));
            }
        }
        readings += 1;
        both_midway += usize::from(midways == 4);
        assert!(started.elapsed() < Duration::from_secs(120), "hung");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    eprintln!(
        "{readings} readings in {:?}, {both_midway} with both queries midway",
        started.elapsed()
    );
    assert!(both_midway > 0, "the two queries never computed at once");
    a_task.await.unwrap();
    b_task.await.unwrap();
    for (plan, source, pairs) in scans {
        let whole = Progress {
            done: pairs,
            total: Some(pairs),
        };
        assert_eq!(progress(plan), whole, "{source}");
        assert_eq!(live_progress_of(source), Some(whole), "{source}");
    }
    drop((a, b));
    assert_eq!(live_progress_of(&demo), None);
    assert_eq!(live_progress_of(&head), None);
}

// --- two shells on the same file ---------------------------------------------

const BIN: &str = env!("CARGO_BIN_EXE_datafusion-kendall");

/// The strongest pairs of the demo file as CSV: every pair computed (the
/// naive kernel, one partition: seconds), a few hundred rows out.
fn shell_query() -> Command {
    let mut c = Command::new(BIN);
    c.args(["-q", "-p", "1", "--format", "csv", "-c"]);
    c.arg(format!(
        "SET kendall.kernel = 'naive'; {}",
        strong(&data("data/demo_expression.parquet"))
    ));
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// The shell query's output run alone (once for both shell tests).
fn shell_alone() -> &'static Output {
    static ALONE: OnceLock<Output> = OnceLock::new();
    ALONE.get_or_init(|| {
        let started = Instant::now();
        let out = shell_query().output().unwrap();
        eprintln!("shell alone: {:?}", started.elapsed());
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with("gene_i,gene_j,tau\n"));
        assert!(text(&out.stdout).lines().count() > 10);
        out
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Both children still running (neither has exited).
fn running(children: &mut [&mut std::process::Child]) -> bool {
    children.iter_mut().all(|c| c.try_wait().unwrap().is_none())
}

#[test]
fn two_shells_on_the_same_file_give_the_output_they_give_alone() {
    let alone = shell_alone();
    let started = Instant::now();
    let (mut a, mut b) = (
        shell_query().spawn().unwrap(),
        shell_query().spawn().unwrap(),
    );
    // Each takes seconds; both still at it after a while: they overlap.
    std::thread::sleep(Duration::from_millis(500));
    let overlapped = running(&mut [&mut a, &mut b]);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    eprintln!("two shells at once: {:?}", started.elapsed());
    assert!(overlapped, "a shell ended within 0.5 s: no overlap");
    for out in [a, b] {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), text(&alone.stdout));
    }
}

#[test]
fn ctrl_c_to_one_shell_leaves_the_other_to_finish() {
    let alone = shell_alone();
    // The one to interrupt: four scans of the same file, far longer.
    let scan = format!(
        "SELECT gene_i FROM kendall_all_pairs('{}')",
        data("data/demo_expression.parquet")
    );
    let long = format!(
        "SET kendall.kernel = 'naive'; SELECT count(*) FROM ({})",
        [scan.as_str(); 4].join(" UNION ALL ")
    );
    let mut victim = Command::new(BIN)
        .args(["-p", "1", "-c", &long])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut other = shell_query().spawn().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        running(&mut [&mut victim, &mut other]),
        "a shell ended within 0.7 s: no overlap"
    );
    let status = Command::new("kill")
        .args(["-INT", &victim.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let sent = Instant::now();
    let victim = victim.wait_with_output().unwrap();
    let stopped = sent.elapsed();
    let still_running = other.try_wait().unwrap().is_none();
    let other = other.wait_with_output().unwrap();
    eprintln!(
        "interrupted shell ended {stopped:?} after SIGINT; the other was {}",
        if still_running {
            "still running"
        } else {
            "done"
        }
    );
    assert_eq!(victim.status.code(), Some(130), "{}", text(&victim.stderr));
    assert!(
        text(&victim.stderr).contains("Query cancelled (Ctrl-C)"),
        "{}",
        text(&victim.stderr)
    );
    assert!(stopped < Duration::from_secs(6), "{stopped:?}");
    assert!(other.status.success(), "{}", text(&other.stderr));
    assert_eq!(text(&other.stdout), text(&alone.stdout));
}

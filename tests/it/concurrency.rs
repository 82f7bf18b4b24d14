//! Two queries at once in one process, and two shells at once on the same
//! file: each gives the rows it gives alone, cancelling one leaves the other
//! to finish, and each progress reading counts its own plan only.
//!
//! The queries use the naive kernel on the demo's first 800 genes (319,600
//! pairs: about a second on an idle core, more on a loaded one), so that
//! queries started together really overlap; the tests assert that they did
//! (both computing at the same moment), not just that they were started
//! together.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Genes of the matrix the queries read: the demo's first ones.
const GENES: usize = 800;

/// Its pairs.
const PAIRS: u64 = (GENES * (GENES - 1) / 2) as u64;

/// The demo's first `genes` genes, as a Parquet file in `dir`.
fn head(dir: &tempfile::TempDir, genes: usize) -> String {
    let path = dir.path().join(format!("head_{genes}.parquet"));
    common::head_parquet(&data("data/demo_expression.parquet"), genes, &path);
    path.display().to_string()
}

/// A context with 2 partitions and the naive kernel, and the matrix
/// ([`GENES`] genes, in `dir`) registered under a name of this test's own:
/// progress by source then counts this test's scans only (the other tests
/// of the binary run at the same time).
async fn setup(dir: &tempfile::TempDir) -> (SessionContext, String) {
    let ctx = common::ctx(2);
    let demo = format!("concurrency_demo_{:08x}", rand::random::<u32>());
    ctx.register_parquet(&demo, head(dir, GENES), ParquetReadOptions::default())
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

/// Calls a probe every millisecond on a thread of its own (the runtime's
/// workers are busy computing: a task of theirs would rarely get to look).
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(usize, usize)>,
}

impl Sampler {
    fn start(mut probe: impl FnMut() -> bool + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let (mut hits, mut samples) = (0, 0);
            while !stopped.load(Ordering::Relaxed) {
                hits += usize::from(probe());
                samples += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            (hits, samples)
        });
        Self { stop, thread }
    }

    /// Stops sampling: how many samples the probe held in, of how many (a
    /// panic of the probe is the caller's).
    fn finish(self) -> (usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }
}

/// Waits (at most 60 s, on a blocking thread) until `ready` holds.
async fn wait_until(what: &'static str, mut ready: impl FnMut() -> bool + Send + 'static) {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        while !ready() {
            assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_queries_on_one_context_give_the_rows_they_give_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, demo) = setup(&dir).await;
    let (a_sql, b_sql) = (strong(&demo), anticorrelated(&demo));
    let (a_alone, b_alone) = (alone(&ctx, &a_sql).await, alone(&ctx, &b_sql).await);

    // On a loaded machine the scheduler may run one query's partitions
    // before the other's: the pair runs again (up to five times) until both
    // were seen computing at the same moment; each run's rows are checked.
    let mut overlapped = false;
    for attempt in 1..=5 {
        let (a, b) = (plan(&ctx, &a_sql).await, plan(&ctx, &b_sql).await);
        let started = Instant::now();
        let (a_task, b_task) = (spawn(&ctx, &a), spawn(&ctx, &b));
        // Both computing at the same moment, at least once.
        let sampler = {
            let (a, b) = (Arc::clone(&a), Arc::clone(&b));
            Sampler::start(move || midway(progress(&a)) && midway(progress(&b)))
        };
        let (a_rows, b_rows) = (a_task.await.unwrap(), b_task.await.unwrap());
        let (both, samples) = sampler.finish();
        eprintln!(
            "attempt {attempt}: both at once: {:?}, both computing in {both} of {samples} samples",
            started.elapsed()
        );
        assert_eq!(a_rows, a_alone);
        assert_eq!(b_rows, b_alone);
        for p in [&a, &b] {
            assert_eq!(
                progress(p),
                Progress {
                    done: PAIRS,
                    total: Some(PAIRS)
                }
            );
        }
        if both > 0 {
            overlapped = true;
            break;
        }
    }
    assert!(
        overlapped,
        "the two queries never computed at the same time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_one_query_mid_stream_leaves_the_other_to_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, demo) = setup(&dir).await;
    let b_sql = strong(&demo);
    let b_alone = alone(&ctx, &b_sql).await;
    // A is held after its first batch until B is midway, so both are seen
    // computing at once even on a loaded machine; should B still end before
    // A computes again beside it, the run shows nothing and the pair runs
    // again (at most five times). Every run that saw both is checked in full.
    for run in 1..=5 {
        if drop_a_while_b_runs(&ctx, &demo, &b_sql, &b_alone).await {
            return;
        }
        eprintln!("run {run}: the two queries were never seen computing at once");
    }
    panic!("in five runs the two queries were never seen computing at once");
}

/// One run of [`dropping_one_query_mid_stream_leaves_the_other_to_finish`]:
/// `false` when the two queries were never seen computing at once (nothing
/// checked), else `true` with every check passed.
async fn drop_a_while_b_runs(ctx: &SessionContext, demo: &str, b_sql: &str, b_alone: &str) -> bool {
    // A streams every pair (no ORDER BY: rows come while it computes). Its
    // task reads the first batch, then holds until told to go on: its
    // partitions then wait on the full buffers between them and the reader,
    // so on a loaded machine A cannot run to its end before B gets going.
    // Once B is seen midway, A's reader goes on (A computes again, beside
    // B) until aborted, which drops the stream.
    let a = plan(
        ctx,
        &format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{demo}')"),
    )
    .await;
    let mut stream = execute_stream(Arc::clone(&a), ctx.task_ctx()).unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.num_rows() > 0);
    let (go, held) = tokio::sync::oneshot::channel::<()>();
    let a_task = tokio::spawn(async move {
        let mut rows = first.num_rows();
        if held.await.is_err() {
            return rows;
        }
        while let Some(batch) = stream.next().await {
            rows += batch.unwrap().num_rows();
        }
        rows
    });
    let b = plan(ctx, b_sql).await;
    let b_task = spawn(ctx, &b);
    let done = |p: Progress| p.total.is_some_and(|t| p.done >= t);
    // B midway while A is held (or B done, or a minute gone: nothing seen).
    let b_midway = {
        let b = Arc::clone(&b);
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(60) {
                let pb = progress(&b);
                if midway(pb) {
                    return true;
                }
                if done(pb) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            false
        })
        .await
        .unwrap()
    };
    // Then A goes on, and both are seen computing at once: A's count past
    // where it was held, B still midway.
    let held_at = progress(&a);
    eprintln!("B midway: {b_midway}; A held at {held_at:?}");
    let _ = go.send(());
    let both = b_midway && midway(held_at) && {
        let (a, b) = (Arc::clone(&a), Arc::clone(&b));
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(60) {
                let (pa, pb) = (progress(&a), progress(&b));
                if midway(pa) && pa.done > held_at.done && midway(pb) {
                    return true;
                }
                // One of them is done: they can no longer be seen at once.
                if done(pa) || done(pb) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            false
        })
        .await
        .unwrap()
    };
    a_task.abort();
    let at_abort = progress(&a);
    let a_ended = a_task.await;
    // A may also have computed its last pair between being seen midway and
    // the abort (its rows still unread): nothing is then left to stop.
    if !both || a_ended.as_ref().is_ok() || b_task.is_finished() || at_abort.done >= PAIRS {
        // Not seen at once, or A ended on its own before the drop, or B
        // before it: let B end and try again.
        let _ = b_task.await;
        return false;
    }
    assert!(
        a_ended.as_ref().is_err_and(|e| e.is_cancelled()),
        "A's task failed: {a_ended:?}"
    );
    // A computes no more pairs (its partitions' tasks went with its
    // stream; a poll in flight may end first: on a loaded machine it can
    // take longer than a few hundred milliseconds, so wait, up to 10 s,
    // until A's count holds for 300 ms)...
    let settle = Instant::now();
    loop {
        let before = progress(&a);
        tokio::time::sleep(Duration::from_millis(300)).await;
        if progress(&a) == before || settle.elapsed() > Duration::from_secs(10) {
            break;
        }
    }
    let stopped = progress(&a);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(progress(&a), stopped, "A went on computing after its drop");
    assert!(stopped.done < PAIRS, "{stopped:?}");
    // ...while B, running on, completes with its rows.
    assert_eq!(b_task.await.unwrap(), b_alone);
    assert_eq!(progress(&b).done, PAIRS);
    eprintln!("A dropped at {stopped:?}");
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_live_progress_readings_report_each_plans_own_total() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, demo) = setup(&dir).await;
    // A second matrix with another total: the demo's first 600 genes.
    let fewer = 600;
    let head_pairs = (fewer * (fewer - 1) / 2) as u64;
    let head = format!("{demo}_head");
    ctx.register_parquet(
        &head,
        self::head(&dir, fewer),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let query = |source: &str| {
        format!("SELECT count(*) FROM kendall_all_pairs('{source}') WHERE abs(tau) >= 0.8")
    };
    // On a loaded machine one query may finish before the other gets going:
    // the pair runs again (up to five times) until some reading saw both
    // midway; every reading of every run checks the totals.
    let mut overlapped = false;
    for _ in 0..5 {
        let run = async {
            let (a, b) = (
                plan(&ctx, &query(&demo)).await,
                plan(&ctx, &query(&head)).await,
            );
            let scans = [(&a, demo.as_str(), PAIRS), (&b, head.as_str(), head_pairs)];
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
            let sampler = {
                let scans: Vec<_> = scans
                    .iter()
                    .map(|(plan, source, pairs)| (Arc::clone(plan), source.to_string(), *pairs))
                    .collect();
                Sampler::start(move || {
                    let mut midways = 0;
                    for (plan, source, pairs) in &scans {
                        // By plan (the shell's bar) and by source (the Python
                        // bars): each its own total, whatever the other query has
                        // done.
                        for p in [progress(plan), live_progress_of(source).unwrap()] {
                            assert!(p.total.is_none_or(|t| t == *pairs), "{source}: {p:?}");
                            assert!(p.done <= *pairs, "{source}: {p:?}");
                            midways += usize::from(midway(p));
                        }
                    }
                    midways == 4
                })
            };
            a_task.await.unwrap();
            b_task.await.unwrap();
            let (both_midway, readings) = sampler.finish();
            eprintln!(
                "{readings} readings in {:?}, {both_midway} with both queries midway",
                started.elapsed()
            );
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
            both_midway > 0
        };
        if run.await {
            overlapped = true;
            break;
        }
    }
    assert!(overlapped, "the two queries never computed at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_stream_keeps_its_progress_once_its_plan_is_dropped() {
    // As datafusion-python's execute_stream does: the plan goes, the
    // stream stays; its progress by source must stay too.
    let dir = tempfile::tempdir().unwrap();
    let (ctx, demo) = setup(&dir).await;
    let a = plan(
        &ctx,
        &format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{demo}')"),
    )
    .await;
    let mut stream = execute_stream(a, ctx.task_ctx()).unwrap();
    assert!(stream.next().await.unwrap().unwrap().num_rows() > 0);
    let p = live_progress_of(&demo).expect("the scan of a running stream");
    assert_eq!(p.total, Some(PAIRS));
    assert!(p.done > 0 && p.done <= PAIRS, "{p:?}");
    drop(stream);
    // Gone with the stream's partition tasks (aborted, dropped soon after).
    wait_until("the scan gone from the registry", move || {
        live_progress_of(&demo).is_none()
    })
    .await;
}

// --- two shells on the same file ---------------------------------------------

const BIN: &str = env!("CARGO_BIN_EXE_datafusion-kendall");

/// The strongest pairs of `file` as CSV: every pair computed (the naive
/// kernel, one partition), a few rows out.
fn shell_query(file: &str) -> Command {
    let mut c = Command::new(BIN);
    c.args(["-q", "-p", "1", "--format", "csv", "-c"]);
    c.arg(format!("SET kendall.kernel = 'naive'; {}", strong(file)));
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// The shell query's output run alone, and how long it took.
fn shell_alone(file: &str) -> (Output, Duration) {
    let started = Instant::now();
    let out = shell_query(file).output().unwrap();
    let took = started.elapsed();
    eprintln!("shell alone: {took:?}");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    assert!(csv.starts_with("gene_i,gene_j,tau\n"), "{csv}");
    assert!(
        csv.lines().count() > 1,
        "no rows: the comparison would show nothing"
    );
    (out, took)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits for `child` in a thread of its own: its output and when it ended.
fn ended(child: Child) -> std::thread::JoinHandle<(Output, Instant)> {
    std::thread::spawn(move || {
        let out = child.wait_with_output().unwrap();
        (out, Instant::now())
    })
}

#[test]
fn two_shells_on_the_same_file_give_the_output_they_give_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = head(&dir, GENES);
    let (alone, took) = shell_alone(&file);
    let started = Instant::now();
    let a = ended(shell_query(&file).spawn().unwrap());
    let b = ended(shell_query(&file).spawn().unwrap());
    let (a, a_end) = a.join().unwrap();
    let (b, b_end) = b.join().unwrap();
    // Both ran together for at least half of what one takes alone (their
    // start-up is a small part of it): they computed at the same time.
    let together = a_end.min(b_end) - started;
    eprintln!("two shells at once: together {together:?}, one alone {took:?}");
    assert!(
        together >= took / 2,
        "together only {together:?} (one alone: {took:?})"
    );
    for out in [a, b] {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), text(&alone.stdout));
    }
}

#[test]
fn ctrl_c_to_one_shell_leaves_the_other_to_finish() {
    let dir = tempfile::tempdir().unwrap();
    let file = head(&dir, GENES);
    let (alone, took) = shell_alone(&file);
    // The one to interrupt: four scans of the same file, far longer.
    let scan = format!("SELECT gene_i FROM kendall_all_pairs('{file}')");
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
    let mut other = shell_query(&file).spawn().unwrap();
    // Half-way through the other's work (as long as it took alone).
    std::thread::sleep(took / 2);
    assert!(victim.try_wait().unwrap().is_none(), "ended by itself");
    assert!(
        other.try_wait().unwrap().is_none(),
        "the other shell ended before the Ctrl-C: no overlap"
    );
    let status = Command::new("kill")
        .args(["-INT", &victim.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let sent = Instant::now();
    let victim = victim.wait_with_output().unwrap();
    let stopped = sent.elapsed();
    let other = other.wait_with_output().unwrap();
    eprintln!(
        "interrupted shell ended {stopped:?} after SIGINT, the other {:?} after SIGINT",
        sent.elapsed()
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

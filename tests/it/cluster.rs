//! Ballista (feature `ballista`): the same SQL on an in-process cluster and
//! on a cluster of separate processes gives the same rows as a local
//! session.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::common::{ctx, run};

const BIN: &str = env!("CARGO_BIN_EXE_datafusion-kendall");
const DEMO: &str = "data/demo_expression.parquet";

/// The queries compared, each after its settings.
fn queries() -> Vec<(Vec<&'static str>, String)> {
    vec![
        (
            vec![],
            format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{DEMO}') WHERE abs(tau) >= 0.8"),
        ),
        (
            vec!["SET kendall.variant = 'c'"],
            format!(
                "SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{DEMO}') \
                 WHERE gene_i = '1007_s_at' OR p_value < 1e-12"
            ),
        ),
        (
            vec![],
            "SELECT gene_i, gene_j, tau, q_value FROM kendall_all_pairs('tests/data/bladder_ties.parquet') \
             WHERE q_value < 0.001"
                .to_string(),
        ),
        (
            vec![],
            format!("SELECT gene, partner, tau, rank FROM kendall_top_partners('{DEMO}', 3)"),
        ),
        (
            vec!["SET kendall.gene_ids = 'dictionary'"],
            "SELECT gene_i, gene_j, tau FROM kendall_cross_pairs('tests/data/cross_left.csv', \
             'tests/data/cross_right.csv')"
                .to_string(),
        ),
        (
            vec![],
            format!("SELECT count(*) AS pairs, count(tau) AS taus FROM kendall_all_pairs('{DEMO}')"),
        ),
    ]
}

/// The rows of `sql` after `settings`, as sorted lines (floats printed in
/// their shortest round-trip form, so equal lines are equal bits).
async fn rows(ctx: &SessionContext, settings: &[&str], sql: &str) -> Vec<String> {
    for s in settings {
        run(ctx, s).await.unwrap();
    }
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text
        .lines()
        .skip(3)
        .filter(|l| !l.starts_with('+'))
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_cluster_gives_the_local_rows() {
    let cluster = datafusion_kendall::ballista::standalone_context(
        SessionConfig::new().with_target_partitions(2),
    )
    .await
    .unwrap();
    for (settings, sql) in queries() {
        let local = rows(&ctx(2), &settings, &sql).await;
        assert!(!local.is_empty(), "{sql}: no rows");
        let remote = rows(&cluster, &settings, &sql).await;
        assert_eq!(local, remote, "{sql} after {settings:?}");
        // Settings stay on the session: back to the defaults.
        for s in &settings {
            let key = s
                .trim_start_matches("SET ")
                .split('=')
                .next()
                .unwrap()
                .trim();
            let default = match key {
                "kendall.variant" => "'b'",
                "kendall.gene_ids" => "'string'",
                other => panic!("no default known for {other}"),
            };
            run(&cluster, &format!("SET {key} = {default}"))
                .await
                .unwrap();
        }
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Whether the process still runs (an executor the scheduler declared
    /// dead is told to stop, so a falsely expired one ends).
    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }

    /// CPU seconds (user + system) the process has used.
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) in parentheses.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: f64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()))
            .sum();
        ticks / 100.0
    }
}

fn spawn(args: &[String], env: &[(&str, String)]) -> Process {
    Process(
        Command::new(BIN)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Elsewhere than the client (the crate's directory), as on a
            // real cluster: relative paths must not reach them as such.
            .current_dir(std::env::temp_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Waits until something listens on `port` (or panics after 60 s).
fn wait_for(port: u16) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "nothing on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A scheduler and two executors (one task slot each) on loopback, with
/// the default liveness settings.
struct Cluster {
    scheduler_port: u16,
    executors: Vec<Process>,
    _scheduler: Process,
}

impl Cluster {
    fn start() -> Cluster {
        Cluster::start_with(&[])
    }

    /// A cluster whose processes have `env` in their environment. The
    /// liveness settings (heartbeats, executor timeout) are the defaults.
    fn start_with(env: &[(&str, String)]) -> Cluster {
        let scheduler_port = free_port();
        let scheduler = spawn(
            &[
                "scheduler".into(),
                "--bind-host".into(),
                "127.0.0.1".into(),
                "--bind-port".into(),
                scheduler_port.to_string(),
            ],
            env,
        );
        wait_for(scheduler_port);
        let executors = (0..2)
            .map(|_| {
                let (port, grpc) = (free_port(), free_port());
                let e = spawn(
                    &[
                        "executor".into(),
                        "--scheduler-host".into(),
                        "127.0.0.1".into(),
                        "--scheduler-port".into(),
                        scheduler_port.to_string(),
                        "--bind-host".into(),
                        "127.0.0.1".into(),
                        "--bind-port".into(),
                        port.to_string(),
                        "--bind-grpc-port".into(),
                        grpc.to_string(),
                        "--concurrent-tasks".into(),
                        "1".into(),
                    ],
                    env,
                );
                wait_for(port);
                e
            })
            .collect();
        // Executors register with their first heartbeat.
        std::thread::sleep(Duration::from_secs(3));
        Cluster {
            scheduler_port,
            executors,
            _scheduler: scheduler,
        }
    }

    fn url(&self) -> String {
        format!("df://127.0.0.1:{}", self.scheduler_port)
    }
}

/// Runs the shell on `sql` (csv, quiet), on the cluster at `remote` if
/// given: (success, sorted output lines, stderr).
fn shell(remote: Option<&str>, sql: &str) -> (bool, Vec<String>, String) {
    shell_with(remote, sql, &[])
}

/// Longest a shell run may take before the test fails (a hung query must
/// fail the test, not stall CI).
const SHELL_LIMIT: Duration = Duration::from_secs(300);

fn shell_with(
    remote: Option<&str>,
    sql: &str,
    env: &[(&str, String)],
) -> (bool, Vec<String>, String) {
    let mut command = Command::new(BIN);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(url) = remote {
        command.args(["--remote", url]);
    }
    let child = command
        .args(["-q", "--format", "csv", "-c", sql])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let out = match finished.recv_timeout(SHELL_LIMIT) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the shell ran longer than {SHELL_LIMIT:?} on {sql}");
        }
    };
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    (
        out.status.success(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_cluster_of_processes_gives_the_local_rows_and_shares_the_work() {
    let mut cluster = Cluster::start();
    let url = cluster.url();
    for (settings, sql) in queries() {
        let script = settings.iter().map(|s| format!("{s};")).collect::<String>() + &sql;
        let (ok, local, err) = shell(None, &script);
        assert!(ok, "local {sql}: {err}");
        let (ok, remote, err) = shell(Some(&url), &script);
        assert!(ok, "cluster {sql}: {err}");
        assert_eq!(local, remote, "{sql}");
    }
    // A COPY to a relative directory lands where the client is, though the
    // executors that write it run elsewhere.
    let dir = tempfile::tempdir_in(".").unwrap();
    let network = format!(
        "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{DEMO}') WHERE abs(tau) >= 0.8"
    );
    // Relative to the test's directory (tempfile names it absolutely).
    let name = dir.path().file_name().unwrap().to_string_lossy();
    let target = format!("{name}/net/");
    let (ok, _, err) = shell(Some(&url), &format!("COPY ({network}) TO '{target}'"));
    assert!(ok, "{err}");
    let (ok, written, err) = shell(None, &format!("SELECT gene_i, gene_j, tau FROM '{target}'"));
    assert!(ok, "reading back {target}: {err}");
    let (_, local, _) = shell(None, &network);
    assert!(local.len() > 1);
    assert_eq!(written, local, "the network the cluster wrote to {target}");
    // The pairs of the demo data with the naive kernel: long enough that
    // both executors get tasks (8 partitions, one slot each).
    let before: Vec<f64> = cluster.executors.iter().map(Process::cpu_seconds).collect();
    let sql = format!(
        "SET kendall.kernel = 'naive'; SELECT count(*) FROM kendall_all_pairs('{DEMO}') WHERE abs(tau) >= 0.5"
    );
    let (ok, local, err) = shell(None, &sql);
    assert!(ok, "{err}");
    let (ok, remote, err) = shell(Some(&url), &sql);
    assert!(ok, "{err}");
    assert_eq!(local, remote);
    let used: Vec<f64> = cluster
        .executors
        .iter()
        .zip(&before)
        .map(|(e, b)| e.cpu_seconds() - b)
        .collect();
    println!("executor CPU seconds for the naive pairs: {used:?}");
    assert!(
        used.iter().all(|&s| s > 0.2),
        "an executor did no share: {used:?}"
    );
    // Busy executors keep heartbeating: none was taken for dead (and
    // stopped) while it computed.
    for (i, e) in cluster.executors.iter_mut().enumerate() {
        assert!(e.alive(), "executor {i} ended: declared dead while busy?");
    }
}

/// Genes of the failover test's input: with the GSE kernel (57 samples)
/// about 17 CPU seconds, 9 to 17 s for the two one-slot executors on
/// 2 cores (idle to loaded).
const FAILOVER_GENES: usize = 5_000;

/// A Parquet matrix of `genes` genes from the demo's 2,000 × 57: the demo
/// itself, then its genes again with their samples rotated (by 7, 14, ...
/// columns) under new names, so strong pairs are spread over every tile range.
fn demo_genes(genes: usize, out: &std::path::Path) {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray};
    use datafusion::arrow::compute::{cast, concat_batches};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    let demo = crate::common::read_parquet(DEMO);
    let ids = cast(demo.column(0), &DataType::Utf8).unwrap();
    let ids = ids.as_string::<i32>();
    let samples: Vec<ArrayRef> = demo.columns()[1..]
        .iter()
        .map(|c| cast(c, &DataType::Float64).unwrap())
        .collect();
    let mut fields = vec![Field::new(
        demo.schema().field(0).name(),
        DataType::Utf8,
        false,
    )];
    fields.extend(
        demo.schema().fields()[1..]
            .iter()
            .map(|f| Field::new(f.name(), DataType::Float64, true)),
    );
    let schema = Arc::new(Schema::new(fields));
    let n = samples.len();
    let mut parts = Vec::new();
    let mut made = 0;
    for copy in 0.. {
        if made >= genes {
            break;
        }
        let rows = (genes - made).min(demo.num_rows());
        let names: StringArray = (0..rows)
            .map(|r| {
                let id = ids.value(r);
                if copy == 0 {
                    id.to_string()
                } else {
                    format!("{id}~{copy}")
                }
            })
            .map(Some)
            .collect();
        let mut columns: Vec<ArrayRef> = vec![Arc::new(names)];
        columns.extend((0..n).map(|c| samples[(c + 7 * copy) % n].slice(0, rows)));
        parts.push(RecordBatch::try_new(schema.clone(), columns).unwrap());
        made += rows;
    }
    crate::common::write_parquet(out, &concat_batches(&schema, &parts).unwrap());
}

/// The failover: a cluster with the default liveness settings (no
/// flags), a 5,000-gene query of 9 to 17 s, one executor killed (SIGKILL)
/// 4 s after the query started, once it computes. The scheduler notices within
/// seconds (heartbeats every 2 s, dead after 10 s without one), the
/// survivor runs the lost tasks again, and the query completes with the
/// local rows within 60 s of its start on a quiet machine (twice the local
/// run plus 20 s on a loaded one; Ballista's own defaults: ~195 s).
#[test]
fn a_killed_executor_is_replaced_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("genes.parquet");
    demo_genes(FAILOVER_GENES, &input);
    let network = format!(
        "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}') WHERE abs(tau) >= 0.7",
        input.display()
    );
    // All kernels give the same integers: the quick default kernel makes
    // the local reference, the slower O(n log n) GSE kernel the cluster's
    // work (the naive one would be four times as much).
    let (ok, local, err) = shell(None, &network);
    assert!(ok && local.len() > 100, "local: {err}");
    let sql = format!("SET kendall.kernel = 'gse'; {network}");
    // The cluster's work, timed in the local shell: how loaded the machine
    // is now (the bound below grows with it).
    let local_start = Instant::now();
    let (ok, _, err) = shell(None, &sql);
    assert!(ok, "local GSE: {err}");
    let local_gse = local_start.elapsed();
    let mut cluster = Cluster::start();
    let url = cluster.url();
    let before: Vec<f64> = cluster.executors.iter().map(Process::cpu_seconds).collect();
    let started = Instant::now();
    let query = std::thread::spawn(move || {
        let start = Instant::now();
        let result = shell(Some(&url), &sql);
        (result, start.elapsed())
    });
    // The first executor dies 4 s in, once it computes (on a loaded
    // machine that can be later).
    let victim = cluster.executors.remove(0);
    while started.elapsed() < Duration::from_secs(4) || victim.cpu_seconds() < before[0] + 0.5 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the executor never computed"
        );
        assert!(
            !query.is_finished(),
            "the query ended before the executor was killed: nothing was tested \
             (make FAILOVER_GENES larger for this machine)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed_at = started.elapsed();
    drop(victim);
    let ((ok, remote, err), took) = query.join().unwrap();
    println!(
        "killed {killed_at:?} after the start; the query ended after {took:?} \
         (success {ok}); stderr: {err}"
    );
    // docs/cluster.md's promise: the lost tasks run again on the survivor and
    // the query completes with the same rows, in seconds, not minutes.
    assert!(ok, "the query failed after the kill: {err}");
    assert_eq!(local, remote, "the survivor's result");
    // Within 60 s on a quiet machine (the whole query, the lost tasks run
    // again included); on a loaded one, within twice the local run plus the
    // time to notice the death (13 s at most). Ballista's defaults take
    // about 195 s just to notice.
    let bound = Duration::from_secs(60).max(local_gse * 2 + Duration::from_secs(20));
    assert!(
        took < bound,
        "the query took {took:?} after a kill {killed_at:?} in (bound {bound:?}, the local \
         run {local_gse:?}): the dead executor was noticed too late"
    );
    let survivor = &mut cluster.executors[0];
    assert!(survivor.alive(), "the survivor ended");
    println!(
        "survivor CPU seconds: {:.1}",
        survivor.cpu_seconds() - before[1]
    );
}

/// The example: an `s3://` input read by the executors and the
/// network written back to `s3://` by them (moto's S3 server on loopback),
/// equal to the local rows.
#[cfg(feature = "cloud")]
#[test]
fn a_cluster_reads_and_writes_s3() {
    let server = match crate::stores::cloud::moto() {
        Ok(s) => s,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let bucket = "kendall-cluster-test";
    let (status, text) = server.request("PUT", &format!("/{bucket}"), b"");
    assert_eq!(status, 200, "creating the bucket: {text}");
    let data = std::fs::read(DEMO).unwrap();
    let (status, text) = server.request("PUT", &format!("/{bucket}/expr.parquet"), &data);
    assert_eq!(status, 200, "uploading: {text}");
    let aws = [
        ("AWS_ACCESS_KEY_ID", "test".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
        ("AWS_ENDPOINT", format!("http://127.0.0.1:{}", server.port)),
        ("AWS_ALLOW_HTTP", "true".to_string()),
    ];
    let cluster = Cluster::start_with(&aws);
    let url = cluster.url();
    let network = |source: &str| {
        format!(
            "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{source}') WHERE abs(tau) >= 0.8"
        )
    };
    let (ok, local, err) = shell(None, &network(DEMO));
    assert!(ok && local.len() > 1, "{err}");
    let source = format!("s3://{bucket}/expr.parquet");
    let (ok, remote, err) = shell_with(Some(&url), &network(&source), &aws);
    assert!(ok, "{err}");
    assert_eq!(local, remote, "{source} on the cluster");
    // The command as it stands: no STORED AS, a directory target
    // (the shell writes Parquet there).
    let copy = format!("COPY ({}) TO 's3://{bucket}/net/'", network(&source));
    let (ok, _, err) = shell_with(Some(&url), &copy, &aws);
    assert!(ok, "{copy}: {err}");
    // What the executors wrote, read back through S3 by a local shell.
    let (ok, written, err) = shell_with(
        None,
        &format!("SELECT gene_i, gene_j, tau FROM 's3://{bucket}/net/'"),
        &aws,
    );
    assert!(ok, "reading the network back: {err}");
    assert_eq!(local, written, "the network the cluster wrote");
}

//! The shell (`datafusion-kendall`) as a user meets it: run as a child
//! process, through pipes, and through a pseudo-terminal (tmux) for line
//! editing, Ctrl-C and the progress bar.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_datafusion-kendall");

/// The demo matrix (2,000 genes: 1,999,000 pairs), by absolute path.
pub(crate) fn demo() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/demo_expression.parquet")
        .display()
        .to_string()
}

/// A query over the demo that takes seconds (the naive kernel on one
/// partition), for cancelling.
fn slow_sql() -> String {
    format!(
        "SET kendall.kernel = 'naive'; SELECT count(*) FROM kendall_all_pairs('{}') \
         CROSS JOIN (VALUES (1), (2), (3)) AS t(x)",
        demo()
    )
}

/// A query for Ctrl-C to interrupt: four scans of the demo pairs with the
/// naive kernel, so that on a loaded machine it is still running when the
/// key arrives (seconds, even on an idle core); cancelled, it costs nothing.
fn cancelled_sql() -> String {
    let scan = format!("SELECT gene_i FROM kendall_all_pairs('{}')", demo());
    format!(
        "SET kendall.kernel = 'naive'; SELECT count(*) FROM ({})",
        [scan.as_str(); 4].join(" UNION ALL ")
    )
}

pub(crate) fn shell(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    c
}

pub(crate) fn output(args: &[&str]) -> Output {
    shell(args).output().unwrap()
}

/// The shell running with its stdout and stderr piped to the test.
pub(crate) fn spawn(args: &[&str]) -> Child {
    shell(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Sends SIGINT to `child`, as Ctrl-C does.
pub(crate) fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn table_output_is_capped_and_shows_the_first_rows_before_the_query_ends() {
    let mut child = spawn(&[
        "-p",
        "1",
        "-c",
        &format!(
            "SET kendall.kernel = 'naive'; SELECT * FROM kendall_all_pairs('{}')",
            demo()
        ),
    ]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut table = String::new();
    // Header (3 lines) + 40 rows + closing line.
    for _ in 0..44 {
        stdout.read_line(&mut table).unwrap();
    }
    // The first 40 rows are out while the 1,999,000 pairs are still being
    // computed (the naive kernel on one partition takes seconds).
    let still_running = child.try_wait().unwrap().is_none();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{stderr}");
    assert!(still_running, "the table came only at the end:\n{table}");
    assert_eq!(
        table.lines().filter(|l| l.starts_with("| ")).count(),
        41,
        "{table}"
    );
    assert!(rest.trim().is_empty(), "more than 40 rows printed:\n{rest}");
    assert!(
        stderr.contains("1999000 row(s) fetched (40 shown; --maxrows to change)"),
        "{stderr}"
    );
}

#[test]
fn maxrows_sets_the_cap() {
    // One partition: the first rows are those of the first tile.
    let out = output(&[
        "-p",
        "1",
        "--maxrows",
        "3",
        "-c",
        &format!(
            "SELECT gene_i FROM kendall_all_pairs('{}') LIMIT 10",
            demo()
        ),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(lines.len(), 4, "a header and 3 rows:\n{stdout}");
    assert!(lines[1].starts_with("| 1007_s_at"), "{stdout}");
    assert!(text(&out.stderr).contains("10 row(s) fetched (3 shown"));
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_code_0() {
    let mut child = spawn(&[
        "--format",
        "csv",
        "-c",
        &format!(
            "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}')",
            demo()
        ),
    ]);
    {
        // `| head -2`
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "gene_i,gene_j,tau");
        stdout.read_line(&mut line).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("Error"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn quiet_hides_copy_counts_and_timings() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("net.csv");
    let copy = format!(
        "COPY (SELECT * FROM kendall_all_pairs('{}') WHERE tau > 0.9) TO '{}'",
        demo(),
        target.display()
    );
    let loud = output(&["-c", &copy]);
    assert!(loud.status.success(), "{}", text(&loud.stderr));
    assert!(
        text(&loud.stdout).contains("count"),
        "{}",
        text(&loud.stdout)
    );
    assert!(text(&loud.stderr).contains("row(s) fetched"));
    let quiet = output(&["-q", "-c", &copy]);
    assert!(quiet.status.success(), "{}", text(&quiet.stderr));
    assert_eq!(text(&quiet.stdout), "");
    assert_eq!(text(&quiet.stderr), "");
    assert!(target.exists());
}

/// `COPY ... TO 'dir/'` without `STORED AS` (DataFusion alone refuses it)
/// writes Parquet files there, which read back as the same rows.
#[test]
fn copy_to_a_directory_writes_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!("{}/net/", dir.path().display());
    let network = format!(
        "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}') WHERE abs(tau) >= 0.8",
        demo()
    );
    let out = output(&["-q", "-c", &format!("COPY ({network}) TO '{target}'")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files: Vec<PathBuf> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty());
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        assert!(
            bytes.starts_with(b"PAR1"),
            "{} is not Parquet",
            file.display()
        );
    }
    let sorted = |sql: &str| {
        let out = output(&["-q", "--format", "csv", "-c", sql]);
        assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
        let mut lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
        lines.sort();
        lines
    };
    let written = sorted(&format!("SELECT gene_i, gene_j, tau FROM '{target}'"));
    assert!(written.len() > 1, "{written:?}");
    assert_eq!(written, sorted(&network));
}

/// Unknown flags and bad values stop the shell before it runs anything,
/// with exit code 2 and an error naming the flag.
#[test]
fn bad_flags_and_values_are_refused_naming_the_flag() {
    for (args, needles) in [
        (
            &["--quite", "-c", "SELECT 1"][..],
            &["unexpected argument '--quite'", "'--quiet'"][..],
        ),
        (&["--format", "xml"], &["'xml'", "'--format <FORMAT>'"]),
        (&["--maxrows=many"], &["'many'", "'--maxrows <N|inf>'"]),
        (&["-p", "0"], &["'--partitions <N>'", "positive"]),
        (&["-c"], &["'--command <SQL>'"]),
        (&["schedular"], &["'schedular'", "'scheduler'"]),
    ] {
        let out = output(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        for needle in needles {
            assert!(
                stderr.contains(needle),
                "{args:?}: '{needle}' missing from {stderr}"
            );
        }
    }
    // --flag=value and a SQL comment as -c's value.
    let out = output(&["--format=csv", "-q", "-c", "-- a comment\nSELECT 7 AS v"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "v\n7\n");
}

#[test]
fn shell_commands_and_settings() {
    let mut child = shell(&[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"\\?\nCREATE VIEW strong AS SELECT 1 AS x;\n\\d\n\\d strong\n\
              SHOW ALL VERBOSE;\n\\q\nSELECT 'not reached' AS never;\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{}", stdout, text(&out.stderr));
    for needle in [
        "\\d NAME     describe table NAME",
        "| strong ",
        "| x  ",
        "kendall.tile_size",
        "Edge of a square tile of the gene × gene job matrix",
        "kendall.simd",
    ] {
        assert!(
            stdout.contains(needle),
            "'{needle}' missing from:\n{stdout}"
        );
    }
    assert!(!stdout.contains("not reached"), "{stdout}");
}

#[test]
fn ctrl_c_cancels_a_command_and_says_so() {
    let child = spawn(&["-p", "1", "-c", &cancelled_sql()]);
    std::thread::sleep(Duration::from_millis(700));
    let sent = Instant::now();
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("Query cancelled (Ctrl-C)"), "{stderr}");
    // Wall time, so generous: a from-empty CI run with tests in parallel on
    // 2 cores once took 2.7 s here. How fast a poll gives way is bounded by
    // thread CPU time in the budget test; this one guards against a hang.
    assert!(
        sent.elapsed() < Duration::from_secs(6),
        "{:?}",
        sent.elapsed()
    );
}

/// A COPY stopped by Ctrl-C or by an error leaves no file at its target.
#[test]
fn interrupted_or_failed_exports_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["net.parquet", "net.csv"] {
        let target = dir.path().join(name);
        let copy = format!(
            "SET kendall.kernel = 'naive'; COPY (SELECT * FROM kendall_all_pairs('{}')) TO '{}'",
            demo(),
            target.display()
        );
        let child = spawn(&["-p", "1", "-c", &copy]);
        std::thread::sleep(Duration::from_millis(1500));
        interrupt(&child);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
        let left: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "{name}: left behind {left:?}");
    }
    // An error half-way (a cast that fails on some gene id) writes nothing.
    let target = dir.path().join("bad.csv");
    let copy = format!(
        "COPY (SELECT CAST(gene_j AS INT) FROM kendall_all_pairs('{}')) TO '{}'",
        demo(),
        target.display()
    );
    let out = output(&["-c", &copy]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Error"), "{}", text(&out.stderr));
    assert!(!target.exists());
}

#[test]
fn progress_bar_only_on_a_terminal() {
    // stderr is a pipe here: no bar, whatever the query.
    let out = output(&["-p", "1", "-c", &slow_sql()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("pairs/s"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn instruction_set_cap_is_honoured() {
    // With the cap at scalar, forcing AVX2 is refused naming the cap (or the
    // CPU, where it lacks AVX2), and auto runs the scalar kernels.
    let out = shell(&[
        "-c",
        &format!(
            "SET kendall.kernel = 'vse'; SET kendall.simd = 'avx2'; \
             SELECT count(*) FROM kendall_all_pairs('{}')",
            demo()
        ),
    ])
    .env("KENDALL_MAX_ISA", "scalar")
    .output()
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("kendall.simd = 'avx2' but avx2 is disabled by KENDALL_MAX_ISA=scalar")
            || stderr.contains("this CPU does not support avx2"),
        "{stderr}"
    );
    let out = shell(&[
        "-c",
        &format!(
            "SET kendall.kernel = 'vse'; EXPLAIN SELECT * FROM kendall_all_pairs('{}')",
            demo()
        ),
    ])
    .env("KENDALL_MAX_ISA", "scalar")
    .output()
    .unwrap();
    assert!(
        text(&out.stdout).contains("simd=scalar"),
        "{}",
        text(&out.stdout)
    );
}

/// A shell in a tmux pseudo-terminal; `None` (with the reason printed)
/// where tmux is not installed.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(cmd: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: tmux is not installed (apt-get install tmux) — pty tests not run");
            return None;
        }
        let socket = format!(
            "kendall-test-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "60",
            ])
            .arg(cmd)
            .env("HOME", std::env::temp_dir())
            .status()
            .unwrap();
        assert!(status.success());
        Some(Tmux { socket })
    }

    /// Sends keys: text, or tmux key names (`Enter`, `Up`, `C-c`). A `;`
    /// ending an argument would end tmux's command, so it is escaped.
    fn keys(&self, keys: &[&str]) {
        let keys: Vec<String> = keys
            .iter()
            .map(|k| match k.strip_suffix(';') {
                Some(head) => format!("{head}\\;"),
                None => k.to_string(),
            })
            .collect();
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0"])
            .args(&keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "capture-pane",
                "-p",
                "-t",
                "0",
                "-S",
                "-200",
            ])
            .output()
            .unwrap();
        text(&out.stdout)
    }

    /// Waits until the screen shows `needle` `times` times (at most 60 s).
    fn wait_for(&self, needle: &str, times: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= times {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "'{needle}' x{times} never appeared:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

#[test]
fn terminal_line_editing_ctrl_c_and_progress() {
    let Some(t) = Tmux::start(&format!("{BIN} -p 1")) else {
        return;
    };
    t.wait_for("kendall>", 1);
    // Keep a setting, to see that Ctrl-C keeps the session.
    t.keys(&["SET kendall.variant = 'a';", "Enter"]);
    t.wait_for("kendall>", 2);
    // History and line editing: recall the last line, edit it.
    t.keys(&["SELECT 12 AS v;", "Enter"]);
    t.wait_for("| 12 |", 1);
    t.keys(&[
        "Up", "Left", "Left", "Left", "Left", "Left", "Left", "BSpace", "7", "Enter",
    ]);
    t.wait_for("| 17 |", 1);
    // A long query shows a progress bar, and Ctrl-C cancels it.
    t.keys(&[&format!("{};", cancelled_sql()), "Enter"]);
    let screen = t.wait_for("pairs/s", 1);
    assert!(screen.contains("ETA"), "{screen}");
    t.keys(&["C-c"]);
    t.wait_for("Query cancelled", 1);
    t.keys(&["SHOW kendall.variant;", "Enter"]);
    let screen = t.wait_for("| kendall.variant | a ", 1);
    assert!(!screen.contains("^[[A"), "{screen}");
    // Ctrl-C at the prompt clears the line; \q leaves.
    t.keys(&["SELECT 'half typed", "C-c"]);
    t.keys(&["\\q", "Enter"]);
}

#[test]
fn quiet_terminal_shows_no_progress() {
    let Some(t) = Tmux::start(&format!("{BIN} -q -p 1")) else {
        return;
    };
    t.wait_for("kendall>", 1);
    t.keys(&[&format!("{};", slow_sql()), "Enter"]);
    // Watch the screen while the query runs: never a bar.
    let start = Instant::now();
    let screen = loop {
        let screen = t.screen();
        assert!(!screen.contains("pairs/s"), "{screen}");
        if screen.contains("| count(*) |") {
            break screen;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{screen}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!screen.contains("row(s) fetched"), "{screen}");
}

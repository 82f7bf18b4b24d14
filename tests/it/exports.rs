//! Exports that fail or are cancelled leave every file they did not create
//! exactly as it was: the shell's `COPY` writes under a staging name and
//! moves its output into place only once the query completed.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::shell::{demo, interrupt, output, shell, spawn, text};

/// A COPY of the demo's strong pairs that takes seconds (the naive kernel
/// on one partition), for cancelling.
fn slow_copy(target: &Path, stored_as: &str) -> String {
    format!(
        "SET kendall.kernel = 'naive'; COPY (SELECT gene_i, gene_j, tau FROM \
         kendall_all_pairs('{}') WHERE abs(tau) > 0.5) TO '{}'{stored_as}",
        demo(),
        target.display()
    )
}

/// Whether two CSV files hold the same header and the same rows, in any order.
fn same_rows(a: &[u8], b: &[u8]) -> bool {
    let lines = |x: &[u8]| {
        let text = String::from_utf8_lossy(x).into_owned();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let header = if lines.is_empty() {
            String::new()
        } else {
            lines.remove(0)
        };
        lines.sort_unstable();
        (header, lines)
    };
    lines(a) == lines(b)
}

/// The names in `dir`, sorted, hidden ones (a staging directory) included.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Another program writing in `dir` while a COPY runs: it appends a line to
/// `notes.txt` (a file from before the statement) and creates `other-N.txt`
/// every 20 ms until stopped; returns what `notes.txt` must hold then.
struct Neighbour {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(String, Vec<String>)>>,
}

impl Neighbour {
    fn start(dir: &Path) -> Neighbour {
        let notes = dir.join("notes.txt");
        std::fs::write(&notes, "precious\n").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let dir = dir.to_path_buf();
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            use std::io::Write;
            let mut expected = "precious\n".to_string();
            let mut created = Vec::new();
            let mut i = 0;
            while !flag.load(Ordering::Relaxed) {
                let line = format!("line {i}\n");
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&notes)
                    .unwrap()
                    .write_all(line.as_bytes())
                    .unwrap();
                expected.push_str(&line);
                let other = format!("other-{i}.txt");
                std::fs::write(dir.join(&other), &line).unwrap();
                created.push(other);
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            (expected, created)
        });
        Neighbour {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the writer: what `notes.txt` holds and the files it created.
    fn stop(mut self) -> (String, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

fn wait(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}

/// The first case: Ctrl-C during a long COPY into a directory while
/// another program appends to a file there and creates others.
#[test]
fn a_cancelled_copy_keeps_files_written_beside_it() {
    for stored_as in ["", " STORED AS PARQUET", " STORED AS CSV"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let neighbour = Neighbour::start(&out);
        let child = spawn(&[
            "-p",
            "1",
            "-c",
            &slow_copy(&PathBuf::from(format!("{}/", out.display())), stored_as),
        ]);
        std::thread::sleep(Duration::from_millis(1500));
        interrupt(&child);
        let (code, stderr) = wait(child);
        let (notes, created) = neighbour.stop();
        assert_eq!(code, Some(130), "{stored_as}: {stderr}");
        assert!(stderr.contains("left its target as it was"), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(out.join("notes.txt")).unwrap(),
            notes,
            "{stored_as}: notes.txt changed"
        );
        let mut expected: Vec<String> = created;
        expected.push("notes.txt".into());
        expected.sort();
        assert_eq!(names(&out), expected, "{stored_as}");
        assert_eq!(names(dir.path()), ["out"], "{stored_as}: left beside out/");
    }
}

/// The second case: yesterday's `net.csv` and a COPY onto it that
/// fails at run time (division by zero): the file keeps its bytes.
#[test]
fn a_failing_copy_leaves_an_existing_target_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let yesterday = b"gene_i,gene_j,tau\nA,B,0.5\n";
    for name in ["net.csv", "net.parquet"] {
        let target = dir.path().join(name);
        std::fs::write(&target, yesterday).unwrap();
        let copy = format!(
            "COPY (SELECT gene_i, gene_j, tau, n / (n - n) AS boom FROM \
             kendall_all_pairs('{}')) TO '{}'",
            demo(),
            target.display()
        );
        let out = output(&["-c", &copy]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("Divide by zero"), "{stderr}");
        assert_eq!(std::fs::read(&target).unwrap(), yesterday, "{name}");
        // A COPY whose plan fails (an unknown column) too.
        let copy = format!(
            "COPY (SELECT no_such FROM kendall_all_pairs('{}')) TO '{}'",
            demo(),
            target.display()
        );
        assert_eq!(output(&["-c", &copy]).status.code(), Some(1));
        assert_eq!(std::fs::read(&target).unwrap(), yesterday, "{name}");
    }
    assert_eq!(names(dir.path()), ["net.csv", "net.parquet"]);
}

/// Ctrl-C at several moments (while the input loads, mid-stream, near the
/// end): either the statement was cancelled and the target is exactly as
/// before, or it completed and the target holds the whole answer.
#[test]
fn cancelling_at_any_moment_leaves_the_old_file_or_the_whole_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("net.csv");
    let yesterday = b"gene_i,gene_j,tau\nA,B,0.5\n".to_vec();
    // The whole answer, for comparison.
    let whole = dir.path().join("whole.csv");
    let done = output(&["-p", "1", "-c", &slow_copy(&whole, "")]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let whole = std::fs::read(&whole).unwrap();
    assert!(
        whole.len() > 1000,
        "the strong pairs: {} bytes",
        whole.len()
    );
    std::fs::remove_file(dir.path().join("whole.csv")).unwrap();

    let mut outcomes = Vec::new();
    for delay_ms in [0, 30, 150, 600, 1500, 3000, 6000] {
        std::fs::write(&target, &yesterday).unwrap();
        let mut child = spawn(&["-p", "1", "-c", &slow_copy(&target, "")]);
        std::thread::sleep(Duration::from_millis(delay_ms));
        let (code, stderr) = match child.try_wait().unwrap() {
            // Finished before the key: nothing to interrupt.
            Some(_) => wait(child),
            None => {
                interrupt(&child);
                wait(child)
            }
        };
        let now = std::fs::read(&target).unwrap();
        match code {
            Some(130) => assert_eq!(now, yesterday, "Ctrl-C at {delay_ms} ms"),
            // Killed by SIGINT before the shell listened for it (it was
            // still starting): nothing was staged yet.
            None => assert_eq!(now, yesterday, "killed at {delay_ms} ms"),
            // The same rows: a COPY without ORDER BY promises no row order
            // (a loaded machine paces the kernel's blocks differently).
            Some(0) => assert!(
                same_rows(&now, &whole),
                "completed at {delay_ms} ms: {} bytes, {} expected",
                now.len(),
                whole.len()
            ),
            other => panic!("Ctrl-C at {delay_ms} ms: exit {other:?}: {stderr}"),
        }
        assert_eq!(names(dir.path()), ["net.csv"], "at {delay_ms} ms");
        outcomes.push(code);
    }
    println!("exit codes by delay: {outcomes:?}");
    assert!(
        outcomes.contains(&Some(130)),
        "no Ctrl-C landed while a COPY ran: nothing was tested"
    );
}

/// Ctrl-C while a finished directory output is being moved into place: the
/// move completes (the statement had completed) and nothing is left staged.
#[test]
fn ctrl_c_during_the_final_move_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let copy = format!(
        "COPY (SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}') \
         WHERE abs(tau) > 0.5) TO '{}/' STORED AS PARQUET",
        demo(),
        out.display()
    );
    // Four partitions: four files, moved one every 400 ms.
    let child = shell(&["-p", "4", "-c", &copy])
        .env("KENDALL_TEST_COPY_COMMIT_PAUSE_MS", "400")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !out.is_dir() || names(&out).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no file was moved into place"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let moved = names(&out).len();
    interrupt(&child);
    let (code, stderr) = wait(child);
    assert_eq!(code, Some(0), "{stderr}");
    let files = names(&out);
    assert!(files.len() > moved, "the move was not under way: {files:?}");
    assert_eq!(names(dir.path()), ["out"], "staging left behind");
    // The files hold the whole answer.
    let count = |source: &str| {
        let sql = format!("SELECT count(*) FROM {source}");
        let out = output(&["--format", "csv", "-q", "-c", &sql]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(
        count(&format!("'{}/'", out.display())),
        count(&format!(
            "kendall_all_pairs('{}') WHERE abs(tau) > 0.5",
            demo()
        ))
    );
}

/// A COPY into a directory that does not exist yet, cancelled: the
/// directories it would have made are not left behind.
#[test]
fn a_cancelled_copy_into_new_directories_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("a/b/net.csv");
    let child = spawn(&["-p", "1", "-c", &slow_copy(&target, "")]);
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let (code, stderr) = wait(child);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

/// Case: `COPY ... TO 'file:/dir/net.csv'` (a file URL with one slash)
/// writes `/dir/net.csv`, where DataFusion puts it, and makes no `file:`
/// directory; a target DataFusion would read as a pattern is refused before
/// the query runs, and nothing is written.
#[test]
fn a_copy_to_a_file_url_writes_the_file_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let target = dir.path().join("net.csv");
    let sql = format!(
        "COPY (SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}') \
         WHERE abs(tau) > 0.8) TO 'file:{}'",
        demo(),
        target.display()
    );
    let out = shell(&["-q", "-c", &sql])
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&target).expect("the file the URL names");
    assert!(written.starts_with("gene_i,gene_j,tau\n"), "{written}");
    assert!(written.lines().count() > 1, "{written}");
    assert!(names(work.path()).is_empty(), "{:?}", names(work.path()));
    assert_eq!(names(dir.path()), ["net.csv"]);

    let sql = format!(
        "COPY (SELECT 1 AS x) TO '{}/net[1].csv'",
        dir.path().display()
    );
    let out = shell(&["-q", "-c", &sql])
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("glob character"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(names(dir.path()), ["net.csv"]);
    assert!(names(work.path()).is_empty(), "{:?}", names(work.path()));
}

//! Every SQL example in `sql/` runs, statement by statement, as the CLI runs it.

use std::path::Path;
use std::process::Command;

#[test]
fn sql_examples_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Run in a scratch directory holding a copy of the demo data, so the
    // examples' relative paths resolve and their exports land there. The CLI
    // runs as a child process there: tests share this process, and its
    // working directory must not change under them.
    let scratch = tempfile::tempdir().unwrap();
    copy_dir(&root.join("data"), &scratch.path().join("data"));
    copy_dir(
        &root.join("tests/data/h5"),
        &scratch.path().join("tests/data/h5"),
    );

    let mut files: Vec<_> = std::fs::read_dir(root.join("sql"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        // HDF5 files are read only with the `hdf5` feature.
        .filter(|p| cfg!(feature = "hdf5") || p.file_name().is_none_or(|n| n != "hdf5.sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let mut outputs = String::new();
    for file in &files {
        let out = Command::new(env!("CARGO_BIN_EXE_datafusion-kendall"))
            .args(["-q", "-p", "2", "-f"])
            .arg(file)
            .current_dir(scratch.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{} failed:\n{stdout}\n{}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push_str(&stdout);
    }
    // The demo's strongest pair, the network export and the plan metrics.
    for needle in [
        "200088_x_at | 200809_x_at | 0.8943905171239965",
        "| 17    |",
        "KendallExec",
        "pairs_computed=2.00 M",
        // sql/groups.sql: strong pairs per clinical group.
        "| sTCC-CIS | 91    | 16      |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/layouts.sql: the same pairs from all three layouts.
    let layouts = "| 19900 | -0.6432603145134929 | 0.8295739348370927 | 4467.598823 |";
    assert_eq!(outputs.matches(layouts).count(), 3, "{outputs}");
    // ... and sparse triples with kendall.absent = 'zero' those of the dense.
    assert_eq!(
        outputs.matches("| 19900 | 4542.198027 |").count(),
        2,
        "{outputs}"
    );
    // sql/missing.sql: all pairs, those with 55 shared samples, the fewest.
    assert!(
        outputs.contains("| 124750 | 11766    | 42            |"),
        "{outputs}"
    );
    // sql/inputs.sql: the TSV.gz gives the demo's 17 strong pairs, the view
    // fewer genes, the annotation join symbols.
    for needle in [
        "| 17           |",
        "| 1677196 | 14           |",
        "| THRA     | CYP2A6   | 0.6115      |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/top_partners.sql: kendall_top_partners gives the demo's strongest
    // pair as 200088_x_at's first partner, and 201012_at's strongest partner
    // as the one-gene query above it finds.
    for needle in [
        "| 200088_x_at | 200809_x_at | 0.8943905171239965 | 1    |",
        "| 201012_at   | 201939_at   | 0.5739348370927319 | 1    |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/fdr.sql: edges at 5 % FDR (BH, then BY) over all 1,999,000 pairs,
    // the strongest with its q-value (scipy's false_discovery_control gives
    // the same numbers for this matrix's p-values).
    for needle in [
        "| 1089266 | 0.02712127719415562 |",
        "| 200088_x_at | 200809_x_at | 0.8943905171239965 | 8.920503833175741e-23  | 1.7832087162518306e-16 |",
        "| 692322   |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/single_cell.sql: the 10x directory's 780 pairs (77 with one of
    // its two all-zero genes), its strongest pair at 1 % FDR.
    for needle in [
        "| 780   | 82     | 77                    |",
        "| ENSG00000000006 | ENSG00000000038 | 0.3614488398340953  | 3.1308696662950594e-8 |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/candidates.sql: the listed (_s_at, _x_at) pairs, between the two
    // views and within the whole matrix, and the strongest (cross.sql's).
    for needle in [
        "| 66608 | 25568       |",
        "| 200764_s_at | 200765_x_at | 0.7568922305764411 | 9.12203601925921e-17   |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/cross.sql: the (_s_at, _x_at) pairs and the strongest of them.
    for needle in [
        "| 173544 | 64091       |",
        "| 201466_s_at | 201464_x_at | 0.814164878587296  |",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/hdf5.sql: the .h5ad file's 66 pairs (11 with its all-zero gene)
    // and the 10x .h5 file's 11 strongest edges (none for that gene), as those of the TSV.
    if cfg!(feature = "hdf5") {
        for needle in ["| 66    | 11                    |", "| 11    | 11       |"] {
            assert!(
                outputs.contains(needle),
                "'{needle}' missing from:\n{outputs}"
            );
        }
    }
    assert!(scratch.path().join("demo_expression.tsv.gz").exists());
    assert!(scratch.path().join("network.parquet").exists());
    assert!(scratch.path().join("network.csv").exists());
    // sql/graphml.sql: the networks, through the shell's staged COPY.
    for name in [
        "network.graphml",
        "network_annotated.graphml",
        "top_partners.graphml",
    ] {
        let text = std::fs::read_to_string(scratch.path().join(name)).unwrap();
        assert!(text.trim_end().ends_with("</graphml>"), "{name}");
    }
}

/// The shell's documented informational commands run: `--help` (generated
/// from the flag definitions), `--version` and `completions bash`.
#[test]
fn shell_help_version_and_completions_run() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_datafusion-kendall"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let help = run(&["--help"]);
    for needle in [
        "Usage: datafusion-kendall [OPTIONS]",
        "-c, --command <SQL>",
        "-f, --file <FILE>",
        "--format <FORMAT>",
        "--maxrows <N|inf>",
        "-q, --quiet",
        "-p, --partitions <N>",
        "--remote <URL>",
        "-V, --version",
        "scheduler",
        "executor",
        "completions",
    ] {
        assert!(help.contains(needle), "'{needle}' missing from:\n{help}");
    }
    assert_eq!(
        run(&["--version"]).trim(),
        format!("datafusion-kendall {}", env!("CARGO_PKG_VERSION"))
    );
    let bash = run(&["completions", "bash"]);
    for needle in [
        "_datafusion-kendall()",
        "--maxrows",
        "scheduler",
        "complete -F",
    ] {
        assert!(bash.contains(needle), "'{needle}' missing from:\n{bash}");
    }
    if cfg!(feature = "ballista") {
        let scheduler = run(&["scheduler", "--help"]);
        assert!(scheduler.contains("--bind-port <PORT>"), "{scheduler}");
        assert!(scheduler.contains("[default: 50050]"), "{scheduler}");
    }
}

/// Copies the directory `from` (files and subdirectories) to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

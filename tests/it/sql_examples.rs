//! Every SQL example in `sql/` runs, statement by statement, as the CLI runs it.

use crate::common;

use std::path::Path;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::sql::parser::DFParser;

#[tokio::test]
async fn sql_examples_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Run in a scratch directory holding a copy of the demo data, so the
    // examples' relative paths resolve and their exports land there.
    let scratch = tempfile::tempdir().unwrap();
    std::fs::create_dir(scratch.path().join("data")).unwrap();
    for entry in std::fs::read_dir(root.join("data")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            scratch.path().join("data").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    std::env::set_current_dir(scratch.path()).unwrap();

    let mut files: Vec<_> = std::fs::read_dir(root.join("sql"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let mut outputs = String::new();
    for file in &files {
        let ctx = common::ctx(2);
        let sql = std::fs::read_to_string(file).unwrap();
        for statement in DFParser::parse_sql(&sql).unwrap() {
            let plan = ctx.state().statement_to_plan(statement).await.unwrap();
            let batches = ctx
                .execute_logical_plan(plan)
                .await
                .unwrap()
                .collect()
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            outputs.push_str(&pretty_format_batches(&batches).unwrap().to_string());
        }
    }
    // The demo's strongest pair, the network export and the plan metrics.
    for needle in [
        "200088_x_at | 200809_x_at | 0.8943905171239965",
        "| 17    |",
        "KendallExec",
        "pairs_computed=2.00 M",
    ] {
        assert!(
            outputs.contains(needle),
            "'{needle}' missing from:\n{outputs}"
        );
    }
    // sql/layouts.sql: the same pairs from all three layouts.
    let layouts = "| 19900 | -0.6432603145134929 | 0.8295739348370927 | 4467.598823 |";
    assert_eq!(outputs.matches(layouts).count(), 3, "{outputs}");
    assert!(scratch.path().join("network.parquet").exists());
    assert!(scratch.path().join("network.csv").exists());
}

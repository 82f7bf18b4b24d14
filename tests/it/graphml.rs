//! `COPY ... TO 'x.graphml'` through SQL: the edges of a query, nodes with
//! degrees and annotation from a table, the options and the refusals
//! (reading GraphML as a table among them).

use std::collections::HashMap;

use crate::common::{assert_contains, ctx, error, run};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/demo_expression.parquet");

/// The `<node .../>` and `<edge .../>` lines of a GraphML file.
fn lines(path: &std::path::Path, what: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(what))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn copy_writes_every_edge_and_each_node_with_its_degree() {
    let ctx = ctx(2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.graphml");
    let query = format!(
        "SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('{DEMO}') WHERE abs(tau) >= 0.7"
    );
    let rows = run(&ctx, &query).await.unwrap();
    let expected: usize = rows.iter().map(|b| b.num_rows()).sum();
    assert!(expected > 50, "{expected}");
    let count = run(&ctx, &format!("COPY ({query}) TO '{}'", path.display()))
        .await
        .unwrap();
    let written = count[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::UInt64Array>()
        .unwrap()
        .value(0);
    assert_eq!(written as usize, expected);
    let edges = lines(&path, "<edge ");
    assert_eq!(edges.len(), expected);
    assert!(
        edges
            .iter()
            .all(|e| e.contains("<data key=\"e0\">") && e.contains("<data key=\"e1\">"))
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_contains(
        &text,
        &[
            "attr.name=\"tau\" attr.type=\"double\"",
            "attr.name=\"p_value\" attr.type=\"double\"",
            "edgedefault=\"undirected\"",
        ],
    );
    // Degrees: each node's count of edges.
    let mut degree: HashMap<String, usize> = HashMap::new();
    for e in &edges {
        for end in ["source=\"", "target=\""] {
            let at = e.find(end).unwrap() + end.len();
            let id = &e[at..at + e[at..].find('"').unwrap()];
            *degree.entry(id.to_string()).or_default() += 1;
        }
    }
    let nodes = lines(&path, "<node ");
    assert_eq!(nodes.len(), degree.len());
    for (id, d) in &degree {
        let line = format!(
            "<node id=\"{id}\"><data key=\"name\">{id}</data><data key=\"degree\">{d}</data></node>"
        );
        assert!(nodes.contains(&line), "{line}");
    }
    // Only the file itself is left in the directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn stored_as_graphml_with_a_node_table_and_all_nodes() {
    let ctx = ctx(2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("network.out");
    run(
        &ctx,
        &format!(
            "CREATE VIEW annotation AS SELECT gene_id AS probe, length(gene_id) AS len \
             FROM '{DEMO}' WHERE gene_id LIKE '2000%'; \
             COPY (SELECT gene, partner, tau FROM kendall_top_partners('{DEMO}', 1)) \
             TO '{}' STORED AS GRAPHML \
             OPTIONS ('nodes' 'annotation', 'node_key' 'probe', 'directed' 'true', 'all_nodes' 'true')",
            path.display()
        ),
    )
    .await
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_contains(
        &text,
        &[
            "edgedefault=\"directed\"",
            "attr.name=\"len\" attr.type=\"int\"",
            "<node id=\"200000_s_at\"><data key=\"name\">200000_s_at</data>",
            "<data key=\"n0\">11</data>",
        ],
    );
    // Every gene has one partner: 2,000 edges, 2,000 nodes.
    assert_eq!(lines(&path, "<edge ").len(), 2000);
    assert_eq!(lines(&path, "<node ").len(), 2000);
}

#[tokio::test]
async fn bad_options_targets_and_reads_are_refused() {
    let ctx = ctx(1);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x.graphml");
    let copy = |options: &str| {
        format!(
            "COPY (SELECT 'a' AS s, 'b' AS t) TO '{}' {options}",
            target.display()
        )
    };
    assert_contains(
        &error(&ctx, &copy("OPTIONS ('colour' 'red')")).await,
        &["no option 'colour'", "nodes, node_key, directed, all_nodes"],
    );
    assert_contains(
        &error(&ctx, &copy("OPTIONS ('directed' 'yes')")).await,
        &["'true' or 'false'"],
    );
    assert_contains(
        &error(&ctx, &copy("OPTIONS ('nodes' 'nowhere')")).await,
        &["no table or view 'nowhere'"],
    );
    assert_contains(
        &error(&ctx, "COPY (SELECT 1 AS x) TO 'one.graphml'").await,
        &["two columns"],
    );
    assert_contains(
        &error(
            &ctx,
            "COPY (SELECT 'a' AS s, 'b' AS t) TO 's3://b/x.graphml'",
        )
        .await,
        &["local files only"],
    );
    assert_contains(
        &error(
            &ctx,
            &format!(
                "COPY (SELECT CAST(NULL AS VARCHAR) AS s, 'b' AS t) TO '{}'",
                target.display()
            ),
        )
        .await,
        &["NULL endpoint"],
    );
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert_contains(
        &error(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE g STORED AS GRAPHML LOCATION '{}'",
                dir.path().display()
            ),
        )
        .await,
        // DataFusion has no table factory for it: GraphML is write-only.
        &["GRAPHML"],
    );
}

/// Ids with a tab and with a space are two nodes (the tab is written as
/// `&#9;`, which XML parsers keep); ids with control characters XML cannot
/// hold are refused naming the edge row, not merged into one U+FFFD node;
/// an endpoint the node table (with a `name` column) does not list is
/// named by its id.
#[tokio::test]
async fn copy_keeps_ids_apart_refuses_control_characters_and_names_every_node() {
    let ctx = ctx(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.graphml");
    run(
        &ctx,
        &format!(
            "CREATE VIEW ann AS VALUES ('G' || chr(9) || '1', 'tabbed'); \
             COPY (SELECT column1 AS a, column2 AS b FROM (VALUES \
               ('G' || chr(9) || '1', 'G 1'), ('G 1', 'H'))) TO '{}' \
             OPTIONS ('nodes' 'ann')",
            path.display()
        ),
    )
    .await
    .unwrap();
    let nodes = lines(&path, "<node ");
    assert_eq!(
        nodes,
        [
            "<node id=\"G&#9;1\"><data key=\"name\">G&#9;1</data><data key=\"degree\">1</data>\
             <data key=\"n0\">tabbed</data></node>",
            "<node id=\"G 1\"><data key=\"name\">G 1</data><data key=\"degree\">2</data></node>",
            "<node id=\"H\"><data key=\"name\">H</data><data key=\"degree\">1</data></node>",
        ]
    );
    run(
        &ctx,
        "CREATE VIEW named AS SELECT column1 AS id, column2 AS name FROM ann",
    )
    .await
    .unwrap();
    run(
        &ctx,
        &format!(
            "COPY (SELECT 'G' || chr(9) || '1' AS a, 'H' AS b) TO '{}' OPTIONS ('nodes' 'named')",
            path.display()
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        lines(&path, "<node "),
        [
            "<node id=\"G&#9;1\"><data key=\"degree\">1</data><data key=\"n0\">tabbed</data></node>",
            "<node id=\"H\"><data key=\"degree\">1</data><data key=\"n0\">H</data></node>",
        ]
    );
    std::fs::remove_file(&path).unwrap();
    assert_contains(
        &error(
            &ctx,
            &format!(
                "COPY (SELECT column1 AS a, column2 AS b FROM (VALUES ('A', 'B'), \
                 ('G' || chr(1), 'G' || chr(2)))) TO '{}'",
                path.display()
            ),
        )
        .await,
        &["edge row 2, column a is \"G\\u{1}\"", "U+0001", "XML 1.0"],
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

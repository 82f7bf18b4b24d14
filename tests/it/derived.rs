//! Tables derived from this library's own tables (a sparse table, a 10x
//! directory) — a view that filters genes, one that changes values, a
//! `CREATE TABLE AS` copy — are read as their rows, never swapped back for
//! the table they come from (DataFusion keeps a schema's metadata through
//! all of them, so nothing may be found again through it).

use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, Int32Array, StringArray};
use datafusion::prelude::SessionContext;
use datafusion_kendall::SparseTable;
use datafusion_kendall::input::tenx::{TenxTable, detect};

use crate::common::{self, ctx, run, sorted_bits};

const COLUMNS: &str = "gene_i, gene_j, tau, p_value, n";

/// Genes x, y, z over samples a..f; every sample has an entry of x or y,
/// so the triples of x and y alone name every sample.
fn sparse_table() -> SparseTable {
    SparseTable::try_new(
        &StringArray::from_iter_values(["x", "y", "z"]),
        &StringArray::from_iter_values(["a", "b", "c", "d", "e", "f"]),
        &Int32Array::from(vec![0, 4, 7, 9]),
        &Int32Array::from(vec![0, 1, 3, 5, 1, 2, 4, 0, 4]),
        &Float64Array::from(vec![3.0, 1.0, 2.0, 5.0, 4.0, 1.0, 2.0, 7.0, 1.0]),
    )
    .unwrap()
}

/// The pairs `sql` returns, as exact bits.
async fn pairs(ctx: &SessionContext, sql: &str) -> Vec<common::RowBits> {
    sorted_bits(&run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// Case: a view of a sparse table that keeps two genes gives their one
/// pair (not every pair of the table), one that negates a gene negates its
/// taus, and a `CREATE TABLE AS` copy of the two genes gives one pair.
#[tokio::test]
async fn views_and_copies_of_a_sparse_table_are_read_as_their_rows() {
    let ctx = ctx(1);
    ctx.register_table("rna", Arc::new(sparse_table())).unwrap();
    let whole = pairs(
        &ctx,
        &format!("SELECT {COLUMNS} FROM kendall_all_pairs('rna')"),
    )
    .await;
    assert_eq!(whole.len(), 3);
    let xy = whole
        .iter()
        .find(|r| (r.0.as_str(), r.1.as_str()) == ("x", "y"))
        .unwrap()
        .clone();
    // The triples of a derived table are read as any long table is.
    run(
        &ctx,
        "SET kendall.layout = 'long'; SET kendall.absent = 'zero'",
    )
    .await
    .unwrap();
    run(
        &ctx,
        "CREATE VIEW two AS SELECT * FROM rna WHERE gene IN ('x', 'y')",
    )
    .await
    .unwrap();
    let two = pairs(
        &ctx,
        &format!("SELECT {COLUMNS} FROM kendall_all_pairs('two')"),
    )
    .await;
    assert_eq!(two, vec![xy.clone()], "a view of two genes");
    run(
        &ctx,
        "CREATE TABLE copied AS SELECT * FROM rna WHERE gene IN ('x', 'y')",
    )
    .await
    .unwrap();
    let copied = pairs(
        &ctx,
        &format!("SELECT {COLUMNS} FROM kendall_all_pairs('copied')"),
    )
    .await;
    assert_eq!(copied, vec![xy.clone()], "a copy of two genes");
    run(
        &ctx,
        "CREATE VIEW negated AS SELECT gene, sample, \
         CASE WHEN gene = 'x' THEN -value ELSE value END AS value FROM rna",
    )
    .await
    .unwrap();
    let negated = pairs(
        &ctx,
        &format!(
            "SELECT {COLUMNS} FROM kendall_all_pairs('negated') WHERE gene_i = 'x' AND gene_j = 'y'"
        ),
    )
    .await;
    assert_eq!(negated.len(), 1);
    assert_eq!(
        f64::from_bits(negated[0].2),
        -f64::from_bits(xy.2),
        "negated x"
    );
}

/// Case: a registered 10x directory is read as the sparse matrix it is
/// (no option to set); a view of two of its genes gives their one pair.
#[tokio::test]
async fn views_of_a_10x_directory_are_read_as_their_rows() {
    let ctx = ctx(1);
    let files = detect("data/tenx_demo").unwrap().expect("a 10x directory");
    ctx.register_table("tx", Arc::new(TenxTable::try_new(files).unwrap()))
        .unwrap();
    let whole = pairs(
        &ctx,
        &format!("SELECT {COLUMNS} FROM kendall_all_pairs('tx')"),
    )
    .await;
    assert_eq!(
        whole,
        common::all_pairs_bits("data/tenx_demo", "auto").await
    );
    run(
        &ctx,
        "SET kendall.layout = 'long'; SET kendall.absent = 'zero'; \
         CREATE VIEW two AS SELECT * FROM tx \
         WHERE gene IN ('ENSG00000000003', 'ENSG00000000005')",
    )
    .await
    .unwrap();
    let two = pairs(
        &ctx,
        &format!("SELECT {COLUMNS} FROM kendall_all_pairs('two')"),
    )
    .await;
    assert_eq!(two.len(), 1, "a view of two genes: {two:?}");
}

/// A sparse table or 10x directory is read in place (its arrays, its matrix
/// file) when the scan the load reads is the table's own (the table, or a
/// view that is the table as it is), and as its rows for any view that
/// filters it and for a copy: as `EXPLAIN ANALYZE` counts them.
#[tokio::test]
async fn own_tables_are_read_in_place_and_derived_ones_as_their_rows() {
    let ctx = ctx(1);
    ctx.register_table("rna", Arc::new(sparse_table())).unwrap();
    let files = detect("data/tenx_demo").unwrap().expect("a 10x directory");
    ctx.register_table("tx", Arc::new(TenxTable::try_new(files).unwrap()))
        .unwrap();
    run(
        &ctx,
        "SET kendall.layout = 'long'; SET kendall.absent = 'zero'; \
         CREATE VIEW rna_all AS SELECT * FROM rna; \
         CREATE VIEW rna_two AS SELECT * FROM rna WHERE gene IN ('x', 'y'); \
         CREATE TABLE rna_copy AS SELECT * FROM rna; \
         CREATE VIEW tx_two AS SELECT * FROM tx \
         WHERE gene IN ('ENSG00000000003', 'ENSG00000000005')",
    )
    .await
    .unwrap();
    for (table, in_place) in [
        ("rna", 1),
        ("rna_all", 1),
        ("rna_two", 0),
        ("rna_copy", 0),
        ("tx", 1),
        ("tx_two", 0),
    ] {
        let plan = common::plan(
            &ctx,
            &format!("EXPLAIN ANALYZE SELECT count(*) FROM kendall_all_pairs('{table}')"),
        )
        .await;
        let counted = format!("inputs_read_in_place={in_place}");
        assert!(plan.contains(&counted), "{table}: want {counted} in {plan}");
    }
}

/// Case: a `.mtx` file's table (`STORED AS MTX`) and tables derived from
/// it — a view that filters genes, one that changes values, a
/// `CREATE TABLE AS` copy of some cells — answer exactly (bit for bit) as
/// their rows written out to Parquet and read as long triples would; the
/// table itself is read in place, the others as their rows.
#[tokio::test]
async fn tables_of_an_mtx_file_answer_as_their_rows_written_out() {
    let ctx = ctx(1);
    let dir = tempfile::tempdir().unwrap();
    run(
        &ctx,
        "CREATE EXTERNAL TABLE rna STORED AS MTX LOCATION 'data/sce2g/rna.mtx' \
         OPTIONS ('rows' 'data/sce2g/rna_genes.txt'); \
         CREATE VIEW few AS SELECT * FROM rna WHERE gene IN ('GENE001', 'GENE004', 'GENE007', 'GENE030'); \
         CREATE VIEW scaled AS SELECT gene, sample, CASE WHEN gene = 'GENE002' THEN -2 * value \
         ELSE value END AS value FROM rna; \
         CREATE TABLE copied AS SELECT * FROM rna WHERE CAST(sample AS INT) <= 200; \
         SET kendall.layout = 'long'; SET kendall.absent = 'zero'",
    )
    .await
    .unwrap();
    for (table, in_place) in [("rna", 1), ("few", 0), ("scaled", 0), ("copied", 0)] {
        let plan = common::plan(
            &ctx,
            &format!("EXPLAIN ANALYZE SELECT count(*) FROM kendall_all_pairs('{table}')"),
        )
        .await;
        let counted = format!("inputs_read_in_place={in_place}");
        assert!(plan.contains(&counted), "{table}: want {counted} in {plan}");
        let written = dir.path().join(format!("{table}.parquet"));
        let written = written.display();
        run(
            &ctx,
            &format!(
                "COPY (SELECT CAST(gene AS VARCHAR) AS gene, CAST(sample AS VARCHAR) AS sample, \
                 value FROM {table}) TO '{written}'"
            ),
        )
        .await
        .unwrap();
        let read = |source: String| {
            let ctx = &ctx;
            async move {
                pairs(
                    ctx,
                    &format!("SELECT {COLUMNS} FROM kendall_all_pairs('{source}')"),
                )
                .await
            }
        };
        let direct = read(table.to_string()).await;
        let from_file = read(written.to_string()).await;
        assert!(!direct.is_empty(), "{table}");
        assert_eq!(direct, from_file, "{table}");
    }
}

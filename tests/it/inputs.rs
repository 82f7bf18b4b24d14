//! Inputs from wherever DataFusion reads them: CSV and TSV files (plain and
//! compressed), directories and globs, registered tables, views and memory
//! tables give bit-identical rows to the same matrix as Parquet.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, Float64Array, Int64Array, StringArray};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::common::{self, RowBits, assert_contains, batch, ctx, read_parquet, run, write_parquet};

/// 61 genes x 57 samples, every gene with ties, one constant gene.
const TIES: &str = "tests/data/bladder_ties.parquet";

/// Every output row of `source` as exact bits, sorted (see
/// [`common::sorted_bits`]).
async fn rows(ctx: &SessionContext, source: &str) -> Vec<RowBits> {
    rows_of(ctx, &format!("'{source}'")).await
}

/// [`rows`] of `kendall_all_pairs(args)`.
async fn rows_of(ctx: &SessionContext, args: &str) -> Vec<RowBits> {
    let sql = format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs({args})");
    let batches = run(ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    common::sorted_bits(&batches)
}

/// Writes `TIES` to `path` with DataFusion's own writer (`options`: the
/// `COPY ... OPTIONS` of the format).
async fn copy_ties(path: &Path, options: &str) {
    let ctx = ctx(1);
    run(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{TIES}') TO '{}' STORED AS CSV OPTIONS ({options})",
            path.display()
        ),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn csv_and_tsv_plain_and_compressed_equal_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(2);
    let expected = rows(&c, TIES).await;
    assert_eq!(expected.len(), 61 * 60 / 2);
    let tab = "'format.delimiter' '\t'";
    for (name, options) in [
        ("ties.csv", "'format.has_header' 'true'".to_string()),
        ("ties.tsv", format!("'format.has_header' 'true', {tab}")),
        (
            "ties.tsv.gz",
            format!("'format.has_header' 'true', {tab}, 'format.compression' 'gzip'"),
        ),
        (
            "ties.csv.bz2",
            "'format.has_header' 'true', 'format.compression' 'bzip2'".to_string(),
        ),
        (
            "ties.txt.zst",
            format!("'format.has_header' 'true', {tab}, 'format.compression' 'zstd'"),
        ),
    ] {
        let path = dir.path().join(name);
        copy_ties(&path, &options).await;
        let got = rows(&c, &path.display().to_string()).await;
        assert!(
            got == expected,
            "{name}: rows differ from the Parquet input"
        );
    }
    // A name that says nothing: the format is set.
    let odd = dir.path().join("matrix.data");
    std::fs::copy(dir.path().join("ties.tsv"), &odd).unwrap();
    let msg = common::error(
        &c,
        &format!(
            "SELECT count(*) FROM kendall_all_pairs('{}')",
            odd.display()
        ),
    )
    .await;
    assert_contains(&msg, &["cannot tell the format", "kendall.format"]);
    run(&c, "SET kendall.format = 'tsv'").await.unwrap();
    assert!(rows(&c, &odd.display().to_string()).await == expected);
}

#[tokio::test]
async fn directories_and_globs_read_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(3);
    let expected = rows(&c, TIES).await;
    // The 61 genes split over three files whose names order them.
    let all = read_parquet(TIES);
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).unwrap();
    for (k, (start, len)) in [(0, 20), (20, 25), (45, 16)].into_iter().enumerate() {
        write_parquet(
            &parts.join(format!("part-{k}.parquet")),
            &all.slice(start, len),
        );
    }
    let dir_rows = rows(&c, &format!("{}/", parts.display())).await;
    assert!(dir_rows == expected, "directory");
    let glob_rows = rows(&c, &format!("{}/part-*.parquet", parts.display())).await;
    assert!(glob_rows == expected, "glob");
    // A directory of TSV files: the format from the files' names.
    let tsvs = dir.path().join("tsvs");
    std::fs::create_dir(&tsvs).unwrap();
    let ctx1 = ctx(1);
    for (k, (start, len)) in [(0, 30), (30, 31)].into_iter().enumerate() {
        let sql = format!(
            "COPY (SELECT * FROM '{TIES}' LIMIT {len} OFFSET {start}) TO '{}' STORED AS CSV \
             OPTIONS ('format.has_header' 'true', 'format.delimiter' '\t')",
            tsvs.join(format!("{k}.tsv")).display()
        );
        run(&ctx1, &sql).await.unwrap();
    }
    assert!(
        rows(&c, &tsvs.display().to_string()).await == expected,
        "tsv directory"
    );
}

#[tokio::test]
async fn registered_tables_views_and_memory_tables_are_inputs_by_name() {
    let c = ctx(2);
    let expected = rows(&c, TIES).await;
    run(
        &c,
        &format!("CREATE EXTERNAL TABLE expr STORED AS PARQUET LOCATION '{TIES}'"),
    )
    .await
    .unwrap();
    assert!(rows(&c, "expr").await == expected, "external table");

    // A view that filters genes: the pairs of the genes it keeps.
    run(
        &c,
        "CREATE VIEW expressed AS SELECT * FROM expr WHERE gene_id <> 'CONSTANT_PROBE'",
    )
    .await
    .unwrap();
    let filtered: Vec<_> = expected
        .iter()
        .filter(|r| r.0 != "CONSTANT_PROBE" && r.1 != "CONSTANT_PROBE")
        .cloned()
        .collect();
    assert_eq!(filtered.len(), 60 * 59 / 2);
    assert!(rows(&c, "expressed").await == filtered, "view");

    // A memory table of two partitions: their rows in partition order.
    let all = read_parquet(TIES);
    let table = MemTable::try_new(
        all.schema(),
        vec![vec![all.slice(0, 33)], vec![all.slice(33, 28)]],
    )
    .unwrap();
    c.register_table("in_memory", Arc::new(table)).unwrap();
    assert!(rows(&c, "in_memory").await == expected, "memory table");
    // Qualified names resolve too.
    assert!(rows(&c, "datafusion.public.in_memory").await == expected);

    // EXPLAIN shows the source's scan under the Kendall node, reading only
    // the columns needed.
    let plan = common::plan(&c, "EXPLAIN SELECT * FROM kendall_all_pairs('expressed')").await;
    let kendall = plan.find("KendallExec").expect(&plan);
    let scan = plan.find("DataSourceExec").expect(&plan);
    assert!(kendall < scan, "{plan}");
    assert!(plan.contains("source=table 'expressed'"), "{plan}");
}

#[tokio::test]
async fn integer_gene_ids_and_annotation_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("entrez.parquet");
    let values = |k: usize| -> Arc<dyn Array> {
        Arc::new(Float64Array::from_iter_values(
            (0..4).map(|g| ((g * 7 + k * 3) % 11) as f64),
        ))
    };
    write_parquet(
        &path,
        &batch(vec![
            (
                "symbol",
                Arc::new(StringArray::from(vec!["A", "B", "C", "D"])),
            ),
            (
                "entrez",
                Arc::new(Int64Array::from(vec![7157, 672, 675, 1956])),
            ),
            ("s1", values(1)),
            ("s2", values(2)),
            ("s3", values(3)),
            ("s4", values(4)),
        ]),
    );
    let c = ctx(2);
    // Named, an integer column is the gene id; the string column then is
    // not a sample and is refused with the way out.
    let msg = common::error(
        &c,
        &format!(
            "SELECT * FROM kendall_all_pairs('{}', 'entrez')",
            path.display()
        ),
    )
    .await;
    assert_contains(&msg, &["sample column 'symbol'", "EXCLUDE (symbol)"]);
    run(
        &c,
        &format!(
            "CREATE VIEW by_entrez AS SELECT * EXCLUDE (symbol) FROM '{}'",
            path.display()
        ),
    )
    .await
    .unwrap();
    let by_entrez = rows_of(&c, "'by_entrez', 'entrez'").await;
    // By default the symbol is the gene id and the integer column a sample:
    // leave it out with a view, as docs/sql.md shows.
    run(
        &c,
        &format!(
            "CREATE VIEW by_symbol AS SELECT * EXCLUDE (entrez) FROM '{}'",
            path.display()
        ),
    )
    .await
    .unwrap();
    let by_symbol = rows(&c, "by_symbol").await;
    assert_eq!(by_entrez.len(), 6);
    let ids = |rows: &[RowBits]| -> Vec<u64> { rows.iter().map(|r| r.2).collect() };
    let names = [("A", "7157"), ("B", "672"), ("C", "675"), ("D", "1956")];
    let entrez_of = |s: &str| names.iter().find(|n| n.0 == s).unwrap().1.to_string();
    // The same pairs, named by symbol or by Entrez id, with the same tau.
    let mut renamed: Vec<_> = by_symbol
        .iter()
        .map(|r| (entrez_of(&r.0), entrez_of(&r.1), r.2, r.3, r.4))
        .collect();
    renamed.sort();
    assert_eq!(ids(&renamed), ids(&by_entrez));
    assert!(by_symbol.iter().all(|r| r.4 == 4), "4 samples, not 5");
    // The view with the entrez column left in would have 5 samples.
    let with_annotation = rows(&c, &path.display().to_string()).await;
    assert!(with_annotation.iter().all(|r| r.4 == 5));
}

#[tokio::test]
async fn source_errors_name_what_was_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(2);
    let error = |sql: String| {
        let c = c.clone();
        async move { common::error(&c, &sql).await }
    };
    // Neither a registered table nor a file.
    let msg = error("SELECT * FROM kendall_all_pairs('expresion')".to_string()).await;
    assert_contains(
        &msg,
        &[
            "cannot open 'expresion'",
            "no table or view of that name is registered",
        ],
    );

    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    // A ragged row.
    let ragged = write("ragged.csv", "gene,s1,s2,s3\nA,1,2,3\nB,4,5\nC,7,8,9\n");
    let msg = error(format!("SELECT * FROM kendall_all_pairs('{ragged}')")).await;
    assert_contains(&msg, &["cannot read", "ragged.csv"]);
    // A sample that is not a number: its column is text.
    let text = write("text.tsv", "gene\ts1\ts2\nA\t1\tx\nB\t3\t4\n");
    let msg = error(format!("SELECT * FROM kendall_all_pairs('{text}')")).await;
    assert_contains(
        &msg,
        &["sample column 's2'", "text.tsv", "Utf8", "EXCLUDE (s2)"],
    );
    // ... or turns out not to be one far down the file, past schema inference.
    let mut late = String::from("gene,s1,s2\n");
    for g in 0..3000 {
        late.push_str(&format!("G{g},{g},{}\n", 3000 - g));
    }
    late.push_str("LAST,1,oops\n");
    let late = write("late.csv", &late);
    let msg = error(format!("SELECT count(*) FROM kendall_all_pairs('{late}')")).await;
    assert_contains(&msg, &["cannot read", "late.csv", "oops"]);
    // A gene column of the wrong type.
    let numbers = write("numbers.csv", "gene,s1,s2\n1.5,1,2\n2.5,3,4\n");
    let msg = error(format!(
        "SELECT * FROM kendall_all_pairs('{numbers}', 'gene')"
    ))
    .await;
    assert_contains(
        &msg,
        &[
            "gene column 'gene'",
            "numbers.csv",
            "Float64",
            "strings or integers",
        ],
    );
    // Missing values in a TSV are empty fields; an NA makes the column text,
    // and the message says how to write it.
    let na = write("na.tsv", "gene\ts1\ts2\nA\t1\tNA\nB\t3\t4\nC\t2\t1\n");
    let msg = error(format!("SELECT * FROM kendall_all_pairs('{na}')")).await;
    assert_contains(
        &msg,
        &["sample column 's2'", "write missing values as empty fields"],
    );
    let nas = write(
        "nas.tsv",
        "gene\ts1\ts2\ts3\ts4\nA\t1\t\t3\t4\nB\t\t2\t\t1\nC\t4\t3\t2\t1\n",
    );
    let got = rows(&c, &nas).await;
    let n: Vec<i64> = got.iter().map(|r| r.4).collect();
    // (A,B) share s4; (A,C) s1, s3, s4; (B,C) s2, s4.
    assert_eq!(n, vec![1, 3, 2]);
}

/// A Parquet file whose embedded Arrow schema is corrupt (two bits of
/// `bladder_ties.parquet` flipped, found by the mutation test, now in `fuzz.rs`) makes
/// arrow-ipc 59 panic while decoding it; the query gets an error naming the
/// file instead, and the session goes on.
#[tokio::test]
async fn a_reader_panic_is_an_error_naming_the_file() {
    let c = ctx(2);
    let msg = common::error(
        &c,
        "SELECT count(*) FROM kendall_all_pairs('tests/data/corrupt_arrow_schema.parquet')",
    )
    .await;
    assert_contains(
        &msg,
        &[
            "cannot read 'tests/data/corrupt_arrow_schema.parquet'",
            "panicked",
        ],
    );
    assert_eq!(rows(&c, TIES).await.len(), 61 * 60 / 2);
}

//! Every bad input gets a clear error naming the file, column or gene.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use crate::common::{assert_contains, batch, ctx, run, write_parquet};
use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, StringArray,
};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};

async fn error_of(sql: &str) -> String {
    common::error(&ctx(2), sql).await
}

async fn error_for(path: &Path) -> String {
    error_of(&format!(
        "SELECT * FROM kendall_all_pairs('{}')",
        path.display()
    ))
    .await
}

fn genes(ids: &[Option<&str>]) -> Arc<dyn Array> {
    Arc::new(StringArray::from(ids.to_vec()))
}

fn floats(v: &[Option<f64>]) -> Arc<dyn Array> {
    Arc::new(Float64Array::from(v.to_vec()))
}

#[tokio::test]
async fn missing_path_and_not_parquet() {
    let msg = error_of("SELECT * FROM kendall_all_pairs('no/such/file.parquet')").await;
    assert_contains(
        &msg,
        &["kendall_all_pairs", "cannot open 'no/such/file.parquet'"],
    );

    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("matrix.parquet");
    std::fs::write(&text, "gene,s1,s2\nA,1,2\n").unwrap();
    let msg = error_for(&text).await;
    assert_contains(&msg, &["cannot read", "matrix.parquet", "as parquet"]);

    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    let msg = error_for(&empty_dir).await;
    assert_contains(&msg, &["holds no .parquet, .csv or .tsv files"]);
}

#[tokio::test]
async fn bad_arguments() {
    let msg = error_of("SELECT * FROM kendall_all_pairs()").await;
    assert_contains(&msg, &["takes string literals", "got 0 arguments"]);
    let msg = error_of("SELECT * FROM kendall_all_pairs(42)").await;
    assert_contains(&msg, &["the source must be a string"]);
    let msg =
        error_of("SELECT * FROM kendall_all_pairs('tests/data/bladder_ties.parquet', 'b', 'c')")
            .await;
    assert_contains(
        &msg,
        &["layout 'genes_as_rows' takes (source [, gene_column])"],
    );
    let msg = error_of("SELECT * FROM kendall_all_pairs('a', 'b', 'c', 'd', 'e')").await;
    assert_contains(&msg, &["got 5 arguments"]);
}

#[tokio::test]
async fn gene_column_problems() {
    let dir = tempfile::tempdir().unwrap();
    let no_strings = dir.path().join("no_strings.parquet");
    write_parquet(
        &no_strings,
        &batch(vec![
            ("s1", floats(&[Some(1.0), Some(2.0)])),
            ("s2", floats(&[Some(1.0), Some(2.0)])),
        ]),
    );
    let msg = error_for(&no_strings).await;
    assert_contains(&msg, &["no_strings.parquet", "no string column", "s1, s2"]);

    let good = dir.path().join("good.parquet");
    write_parquet(
        &good,
        &batch(vec![
            ("probe", genes(&[Some("A"), Some("B")])),
            ("s1", floats(&[Some(1.0), Some(2.0)])),
            ("s2", floats(&[Some(1.0), Some(3.0)])),
        ]),
    );
    let msg = error_of(&format!(
        "SELECT * FROM kendall_all_pairs('{}', 'gene')",
        good.display()
    ))
    .await;
    assert_contains(
        &msg,
        &[
            "gene column 'gene' not found",
            "good.parquet",
            "probe, s1, s2",
        ],
    );
    let msg = error_of(&format!(
        "SELECT * FROM kendall_all_pairs('{}', 's1')",
        good.display()
    ))
    .await;
    assert_contains(&msg, &["gene column 's1'", "must be strings"]);
}

#[tokio::test]
async fn sample_column_problems() {
    let dir = tempfile::tempdir().unwrap();
    let text_sample = dir.path().join("text_sample.parquet");
    write_parquet(
        &text_sample,
        &batch(vec![
            ("gene", genes(&[Some("A"), Some("B")])),
            ("s1", floats(&[Some(1.0), Some(2.0)])),
            ("label", genes(&[Some("x"), Some("y")])),
            ("flag", Arc::new(BooleanArray::from(vec![true, false]))),
        ]),
    );
    let msg = error_for(&text_sample).await;
    assert_contains(
        &msg,
        &["sample column 'label'", "text_sample.parquet", "Utf8"],
    );

    let one_sample = dir.path().join("one_sample.parquet");
    write_parquet(
        &one_sample,
        &batch(vec![
            ("gene", genes(&[Some("A"), Some("B")])),
            ("s1", floats(&[Some(1.0), Some(2.0)])),
        ]),
    );
    let msg = error_for(&one_sample).await;
    assert_contains(
        &msg,
        &[
            "one_sample.parquet",
            "1 sample column",
            "at least 2 samples",
        ],
    );
}

#[tokio::test]
async fn gene_id_problems() {
    let dir = tempfile::tempdir().unwrap();
    let dup = dir.path().join("dup.parquet");
    write_parquet(
        &dup,
        &batch(vec![
            ("gene", genes(&[Some("A"), Some("B"), Some("A")])),
            ("s1", floats(&[Some(1.0), Some(2.0), Some(3.0)])),
            ("s2", floats(&[Some(1.0), Some(2.0), Some(0.0)])),
        ]),
    );
    let msg = error_for(&dup).await;
    assert_contains(
        &msg,
        &["duplicate gene id 'A'", "row 1", "row 3", "dup.parquet"],
    );

    let null_id = dir.path().join("null_id.parquet");
    write_parquet(
        &null_id,
        &batch(vec![
            ("gene", genes(&[Some("A"), None])),
            ("s1", floats(&[Some(1.0), Some(2.0)])),
            ("s2", floats(&[Some(1.0), Some(2.0)])),
        ]),
    );
    let msg = error_for(&null_id).await;
    assert_contains(&msg, &["gene id is null", "row 2", "null_id.parquet"]);
}

#[tokio::test]
async fn value_problems() {
    let dir = tempfile::tempdir().unwrap();
    // NaN and null are refused under kendall.missing = 'error' (by default
    // they are missing values); infinite values always.
    for (name, bad, what, setting) in [
        ("nan", Some(f64::NAN), "a NaN value", "error"),
        ("inf", Some(f64::INFINITY), "an infinite value", "pairwise"),
        ("null", None, "a null value", "error"),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        write_parquet(
            &path,
            &batch(vec![
                ("gene", genes(&[Some("A"), Some("TP53")])),
                ("s1", floats(&[Some(1.0), Some(2.0)])),
                ("s2", floats(&[Some(1.0), bad])),
            ]),
        );
        let msg = error_of(&format!(
            "SET kendall.missing = '{setting}'; SELECT * FROM kendall_all_pairs('{}')",
            path.display()
        ))
        .await;
        assert_contains(
            &msg,
            &[
                "gene 'TP53'",
                "row 2",
                what,
                "sample column 's2'",
                &format!("{name}.parquet"),
            ],
        );
        if setting == "error" {
            // By default the pair uses its one shared sample: tau is NaN.
            let ctx = ctx(1);
            let sql = format!("SELECT tau, n FROM kendall_all_pairs('{}')", path.display());
            let rows = run(&ctx, &sql).await.unwrap();
            let b = &rows[0];
            assert_eq!(b.num_rows(), 1);
            assert!(b.column(0).as_primitive::<Float64Type>().value(0).is_nan());
            assert_eq!(b.column(1).as_primitive::<Int64Type>().value(0), 1);
        }
    }
}

#[tokio::test]
async fn zero_or_one_gene_gives_zero_rows() {
    let dir = tempfile::tempdir().unwrap();
    for ids in [vec![], vec![Some("A")]] {
        let path = dir.path().join(format!("genes{}.parquet", ids.len()));
        let values: Vec<Option<f64>> = ids.iter().map(|_| Some(1.0)).collect();
        write_parquet(
            &path,
            &batch(vec![
                ("gene", genes(&ids)),
                ("s1", floats(&values)),
                ("s2", floats(&values)),
            ]),
        );
        let ctx = ctx(4);
        let rows = common::pairs(
            &ctx,
            &format!("SELECT * FROM kendall_all_pairs('{}')", path.display()),
        )
        .await;
        assert!(rows.is_empty());
    }
}

#[tokio::test]
async fn directories_and_integer_samples() {
    let dir = tempfile::tempdir().unwrap();
    let part = |ids: &[&str], a: &[i32], b: &[i64], c: &[f32]| {
        batch(vec![
            (
                "gene",
                genes(&ids.iter().map(|s| Some(*s)).collect::<Vec<_>>()),
            ),
            (
                "s1",
                Arc::new(Int32Array::from(a.to_vec())) as Arc<dyn Array>,
            ),
            ("s2", Arc::new(Int64Array::from(b.to_vec()))),
            ("s3", Arc::new(Float32Array::from(c.to_vec()))),
        ])
    };
    write_parquet(
        &dir.path().join("part-0.parquet"),
        &part(&["A", "B"], &[1, 2], &[1, 3], &[1.0, 4.0]),
    );
    write_parquet(
        &dir.path().join("part-1.parquet"),
        &part(&["C"], &[3], &[2], &[9.5]),
    );
    std::fs::write(dir.path().join("_SUCCESS"), "").unwrap();
    let ctx = ctx(2);
    let rows = common::pairs(
        &ctx,
        &format!(
            "SELECT * FROM kendall_all_pairs('{}') ORDER BY gene_i, gene_j",
            dir.path().display()
        ),
    )
    .await;
    let got: Vec<(&str, &str, f64)> = rows
        .iter()
        .map(|p| (p.gene_i.as_str(), p.gene_j.as_str(), p.tau))
        .collect();
    // A = (1,1,1), B = (2,3,4), C = (3,2,9.5): A-B and A-C have no pairs
    // of samples with a tie in A... A is constant, so tau-b is NaN.
    assert_eq!(got.len(), 3);
    assert!(got[0].2.is_nan() && got[1].2.is_nan());
    assert_eq!((got[2].0, got[2].1), ("B", "C"));
    assert!((got[2].2 - 1.0 / 3.0).abs() < 1e-15, "{}", got[2].2);

    // A file whose column types conflict with the others' is refused (files
    // with other columns are merged, as DataFusion's listing tables do).
    write_parquet(
        &dir.path().join("part-2.parquet"),
        &batch(vec![
            ("gene", genes(&[Some("D")])),
            ("s1", floats(&[Some(1.0)])),
        ]),
    );
    let msg = error_for(dir.path()).await;
    assert_contains(&msg, &["cannot read", "Fail to merge schema field 's1'"]);
}

#[tokio::test]
async fn long_column_lists_are_cut() {
    // A single-cell-sized schema: 20,000 numeric columns and no gene column.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cells.parquet");
    let columns: Vec<(String, Arc<dyn Array>)> = (0..20_000)
        .map(|c| (format!("cell_{c}"), floats(&[Some(c as f64)])))
        .collect();
    write_parquet(
        &path,
        &batch(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), Arc::clone(a)))
                .collect(),
        ),
    );
    let msg = error_for(&path).await;
    assert_contains(
        &msg,
        &[
            "has no string column",
            "cell_0, cell_1",
            "cell_7 and 19992 more",
        ],
    );
    assert!(!msg.contains("cell_8,"), "{msg}");
    assert!(msg.len() < 600, "{} bytes: {msg}", msg.len());

    // Two files of a directory whose schemas conflict far into them: the
    // message names the conflict, not both schemas in full.
    let dir = tempfile::tempdir().unwrap();
    let wide = |last: &str| {
        let mut cols: Vec<(String, Arc<dyn Array>)> =
            vec![("gene".to_string(), genes(&[Some("A")]))];
        cols.extend((0..5_000).map(|c| (format!("s{c}"), floats(&[Some(1.0)]))));
        cols.push((last.to_string(), floats(&[Some(1.0)])));
        cols
    };
    for (file, last) in [("part-1.parquet", false), ("part-2.parquet", true)] {
        let mut cols = wide("s_last");
        if last {
            cols.last_mut().unwrap().1 = genes(&[Some("x")]);
        }
        write_parquet(
            &dir.path().join(file),
            &batch(
                cols.iter()
                    .map(|(n, a)| (n.as_str(), Arc::clone(a)))
                    .collect(),
            ),
        );
    }
    let msg = error_for(dir.path()).await;
    assert_contains(
        &msg,
        &[
            "cannot read",
            "Fail to merge schema field 's_last'",
            "Float64",
            "Utf8",
        ],
    );
    assert!(msg.len() < 600, "{} bytes: {msg}", msg.len());
}

#[tokio::test]
async fn option_values_are_checked_and_named() {
    for (sql, needles) in [
        (
            "SET kendall.tile_size = 0",
            &["kendall.tile_size must be a whole number >= 1, got '0'"][..],
        ),
        (
            "SET kendall.tile_size = -5",
            &["kendall.tile_size", "'-5'", ">= 1"],
        ),
        (
            "SET kendall.tile_size = 1e3",
            &["kendall.tile_size", "'1e3'"],
        ),
        (
            "SET kendall.min_periods = -1",
            &["kendall.min_periods", ">= 0", "'-1'"],
        ),
        (
            "SET kendall.memory_limit = '4 parsecs'",
            &["kendall.memory_limit", "'4 parsecs'", "GiB"],
        ),
        (
            "SET kendall.fdr = 'holm'",
            &["kendall.fdr", "'holm'", "'bh'", "'by'"],
        ),
        (
            "SET kendall.gene_ids = 'int'",
            &["kendall.gene_ids", "'int'", "'string' or 'dictionary'"],
        ),
        (
            "SET kendall.partitions = -2",
            &["kendall.partitions", ">= 0", "'-2'"],
        ),
        (
            "SET kendall.partitions = 100000000",
            &["kendall.partitions", "at most 65536", "'100000000'"],
        ),
        (
            "SET kendall.no_such_option = 1",
            &["kendall.no_such_option", "kendall.tile_size"],
        ),
    ] {
        assert_contains(&error_of(sql).await, needles);
    }
    // Accepted forms, read back through information_schema under their
    // full names (what SHOW ALL lists and SHOW takes).
    let config = datafusion_kendall::with_kendall_options(
        datafusion::prelude::SessionConfig::new().with_information_schema(true),
    );
    let ctx = datafusion::prelude::SessionContext::new_with_config(config);
    datafusion_kendall::register(&ctx).unwrap();
    for (set, name, value) in [
        (
            "SET kendall.memory_limit = '4GB'",
            "kendall.memory_limit",
            "4000000000",
        ),
        (
            "SET kendall.memory_limit = '512MiB'",
            "kendall.memory_limit",
            "536870912",
        ),
        ("SET kendall.tile_size = 64", "kendall.tile_size", "64"),
        ("SET kendall.min_periods = 0", "kendall.min_periods", "0"),
        ("SET kendall.fdr = 'BY'", "kendall.fdr", "by"),
        ("SET kendall.partitions = 12", "kendall.partitions", "12"),
    ] {
        run(&ctx, set).await.unwrap();
        let batches = run(&ctx, &format!("SHOW {name}")).await.unwrap();
        let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        assert!(
            shown.contains(&format!("| {name} | {value} ")),
            "{set}: {shown}"
        );
    }
    let batches = run(
        &ctx,
        "SELECT name, description FROM information_schema.df_settings \
         WHERE name LIKE 'kendall.%' ORDER BY name",
    )
    .await
    .unwrap();
    let names: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let col = b.column(0).as_string::<i32>().clone();
            (0..col.len()).map(move |i| col.value(i).to_string())
        })
        .collect();
    assert_eq!(
        names,
        [
            "kendall.absent",
            "kendall.alternative",
            "kendall.continuity",
            "kendall.fdr",
            "kendall.format",
            "kendall.gene_ids",
            "kendall.groups",
            "kendall.kernel",
            "kendall.layout",
            "kendall.memory_limit",
            "kendall.min_periods",
            "kendall.missing",
            "kendall.partitions",
            "kendall.pvalue",
            "kendall.simd",
            "kendall.tile_size",
            "kendall.variant"
        ]
    );
}

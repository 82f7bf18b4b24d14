//! Metamorphic tests at every door: for each kind of input (Parquet, CSV,
//! TSV.gz, long triples, a 10x directory), a view that keeps some genes, one
//! that keeps some samples, one that changes values, and a
//! `CREATE TABLE AS` copy, and views whose ids are of each other text
//! type (`LargeUtf8`, `Utf8View`, a dictionary) give the same rows as the same data written out
//! to Parquet and read back — through `kendall_all_pairs`, as the second
//! input of `kendall_cross_pairs`, and as the matrix and the second matrix
//! of `kendall_candidate_pairs`. An AnnData `.h5ad` file, which SQL reads
//! by its location only (nothing can be derived from it in SQL), gives at
//! every door the rows of its matrix written to Parquet. Python's sparse
//! tables and pandas frames are tested from Python.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::prelude::SessionContext;
use datafusion_kendall::input::tenx::{TenxTable, detect};

use crate::common::{self, ctx, run};

/// The matrix every kind of input holds (genes as rows, missing values,
/// ties, a constant gene): its first genes.
const MATRIX: &str = "tests/data/bladder_missing.parquet";

/// Genes of [`MATRIX`] the inputs keep.
const GENES: usize = 24;

/// The text types a derived table's ids are cast to (name, `arrow_cast`
/// type): each is read as the input's own ids are.
const ID_TYPES: [(&str, &str); 3] = [
    ("large_ids", "LargeUtf8"),
    ("view_ids", "Utf8View"),
    ("dictionary_ids", "Dictionary(Int32, Utf8)"),
];

/// Tables made of each input: itself, the four derivations, and one per
/// [`ID_TYPES`].
const TABLES: usize = 5 + ID_TYPES.len();

/// One pair's row, oriented (the lesser gene first), as exact bits.
type Row = (String, String, u64, u64, i64);

/// The rows of `sql` (`gene_i`, `gene_j`, `tau`, `p_value`, `n`), oriented
/// and sorted.
async fn rows(ctx: &SessionContext, sql: &str) -> Vec<Row> {
    let batches = run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out: Vec<Row> = common::sorted_bits(&batches)
        .into_iter()
        .map(|(i, j, tau, p, n)| {
            let (i, j) = if i <= j { (i, j) } else { (j, i) };
            (i, j, tau, p, n)
        })
        .collect();
    out.sort();
    out
}

/// How an input lays out its values.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// A gene column, then one column per sample.
    Rows,
    /// `gene`, `sample`, `value` triples.
    Long,
}

/// One kind of input: a table (or location) of the session, the options
/// that read it, its gene ids and sample names.
struct Kind {
    name: &'static str,
    /// What SQL reads it as a table (a registered name).
    table: String,
    /// What the table functions are given for the input itself.
    source: String,
    settings: &'static str,
    shape: Shape,
    genes: Vec<String>,
    samples: Vec<String>,
}

impl Kind {
    /// The derived tables: (name, statement making it).
    fn derivations(&self) -> Vec<(&'static str, String)> {
        let t = &self.table;
        let quoted = |ids: &[String]| {
            ids.iter()
                .map(|g| format!("'{g}'"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let kept_genes: Vec<String> = self.genes.iter().step_by(2).cloned().collect();
        let kept_samples: Vec<String> = self
            .samples
            .iter()
            .enumerate()
            .filter(|(k, _)| k % 3 != 1)
            .map(|(_, s)| s.clone())
            .collect();
        let negated = quoted(&self.genes[..self.genes.len() / 3]);
        let (genes, samples, values) = match self.shape {
            Shape::Rows => {
                let g = "gene_id";
                let columns = |ids: &[String]| {
                    ids.iter()
                        .map(|s| format!("\"{s}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let changed = self
                    .samples
                    .iter()
                    .map(|s| {
                        format!(
                            "CASE WHEN {g} IN ({negated}) THEN -\"{s}\" ELSE \"{s}\" * 3 + 1 END \
                             AS \"{s}\""
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                (
                    format!("SELECT * FROM {t} WHERE {g} IN ({})", quoted(&kept_genes)),
                    format!("SELECT {g}, {} FROM {t}", columns(&kept_samples)),
                    format!("SELECT {g}, {changed} FROM {t}"),
                )
            }
            Shape::Long => (
                format!("SELECT * FROM {t} WHERE gene IN ({})", quoted(&kept_genes)),
                format!(
                    "SELECT * FROM {t} WHERE sample IN ({})",
                    quoted(&kept_samples)
                ),
                format!(
                    "SELECT gene, sample, CASE WHEN gene IN ({negated}) THEN -value \
                     ELSE value * 3 + 1 END AS value FROM {t}"
                ),
            ),
        };
        let mut made = vec![
            ("genes", format!("CREATE VIEW d_genes AS {genes}")),
            ("samples", format!("CREATE VIEW d_samples AS {samples}")),
            ("values", format!("CREATE VIEW d_values AS {values}")),
            ("copy", format!("CREATE TABLE d_copy AS SELECT * FROM {t}")),
        ];
        // The same rows with ids of each other text type DataFusion has.
        for (what, to) in ID_TYPES {
            let ids = match self.shape {
                Shape::Rows => format!(
                    "SELECT arrow_cast(gene_id, '{to}') AS gene_id, * EXCLUDE (gene_id) FROM {t}"
                ),
                Shape::Long => format!(
                    "SELECT arrow_cast(gene, '{to}') AS gene, arrow_cast(sample, '{to}') AS sample, \
                     value FROM {t}"
                ),
            };
            made.push((what, format!("CREATE VIEW d_{what} AS {ids}")));
        }
        made
    }

    /// Two genes for candidate lists: kept by every derivation.
    fn listed(&self) -> (String, String) {
        (self.genes[0].clone(), self.genes[2].clone())
    }
}

/// `MATRIX`'s first [`GENES`] genes as one batch (genes as rows), NaN
/// written as null (CSV has no NaN its reader infers as a number).
fn matrix() -> RecordBatch {
    let all = common::read_parquet(MATRIX).slice(0, GENES);
    let columns = all
        .columns()
        .iter()
        .enumerate()
        .map(|(c, column)| {
            if c == 0 {
                return Arc::clone(column);
            }
            let values = column.as_primitive::<Float64Type>();
            let nulled: Float64Array = values.iter().map(|x| x.filter(|x| !x.is_nan())).collect();
            Arc::new(nulled) as Arc<dyn Array>
        })
        .collect();
    RecordBatch::try_new(all.schema(), columns).unwrap()
}

/// `batch` (genes as rows) as `gene`, `sample`, `value` triples.
fn triples(batch: &RecordBatch) -> RecordBatch {
    let ids = batch.column(0).as_string::<i32>();
    let (mut gene, mut sample, mut value) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..batch.num_rows() {
        for (c, field) in batch.schema().fields().iter().enumerate().skip(1) {
            let column = batch.column(c).as_primitive::<Float64Type>();
            gene.push(ids.value(r).to_string());
            sample.push(field.name().clone());
            value.push(column.is_valid(r).then(|| column.value(r)));
        }
    }
    common::batch(vec![
        ("gene", Arc::new(StringArray::from(gene))),
        ("sample", Arc::new(StringArray::from(sample))),
        ("value", Arc::new(Float64Array::from(value))),
    ])
}

/// Every kind of input, written below `dir` and registered in `ctx`.
async fn kinds(ctx: &SessionContext, dir: &Path) -> Vec<Kind> {
    let batch = matrix();
    let genes: Vec<String> = (0..batch.num_rows())
        .map(|r| batch.column(0).as_string::<i32>().value(r).to_string())
        .collect();
    let samples: Vec<String> = batch.schema().fields()[1..]
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert!(
        batch.schema().fields()[1..]
            .iter()
            .all(|f| f.data_type() == &DataType::Float64)
    );
    let parquet = dir.join("m.parquet");
    common::write_parquet(&parquet, &batch);
    let (csv, tsv) = (dir.join("m.csv"), dir.join("m.tsv.gz"));
    let long = dir.join("long.parquet");
    common::write_parquet(&long, &triples(&batch));
    run(
        ctx,
        &format!(
            "CREATE EXTERNAL TABLE m_parquet STORED AS PARQUET LOCATION '{}'; \
             COPY (SELECT * FROM m_parquet) TO '{}' STORED AS CSV; \
             COPY (SELECT * FROM m_parquet) TO '{}' STORED AS CSV \
             OPTIONS ('format.delimiter' E'\\t', 'format.compression' 'gzip'); \
             CREATE EXTERNAL TABLE m_csv STORED AS CSV LOCATION '{}' \
             OPTIONS ('format.has_header' 'true'); \
             CREATE EXTERNAL TABLE m_tsv STORED AS CSV LOCATION '{}' \
             OPTIONS ('format.has_header' 'true', 'format.delimiter' E'\\t', \
             'format.compression' 'gzip'); \
             CREATE EXTERNAL TABLE m_long STORED AS PARQUET LOCATION '{}'",
            parquet.display(),
            csv.display(),
            tsv.display(),
            csv.display(),
            tsv.display(),
            long.display()
        ),
    )
    .await
    .unwrap();
    let files = detect("data/tenx_demo").unwrap().expect("a 10x directory");
    ctx.register_table("m_tenx", Arc::new(TenxTable::try_new(files).unwrap()))
        .unwrap();
    let tenx_genes: Vec<String> = (1..=40).map(|g| format!("ENSG{g:011}")).collect();
    let tenx_samples =
        rows_of_column(ctx, "SELECT DISTINCT CAST(sample AS VARCHAR) FROM m_tenx").await;
    let by_rows = |name: &'static str, table: &str, source: String| Kind {
        name,
        table: table.to_string(),
        source,
        settings: "SET kendall.layout = 'genes_as_rows'",
        shape: Shape::Rows,
        genes: genes.clone(),
        samples: samples.clone(),
    };
    vec![
        by_rows("Parquet", "m_parquet", format!("'{}'", parquet.display())),
        by_rows("CSV", "m_csv", format!("'{}'", csv.display())),
        by_rows("TSV.gz", "m_tsv", format!("'{}'", tsv.display())),
        Kind {
            name: "long triples",
            table: "m_long".into(),
            source: format!("'{}'", long.display()),
            settings: "SET kendall.layout = 'long'",
            shape: Shape::Long,
            genes: genes.clone(),
            samples: samples.clone(),
        },
        Kind {
            name: "10x directory",
            table: "m_tenx".into(),
            source: "'m_tenx'".into(),
            settings: "SET kendall.layout = 'long'; SET kendall.absent = 'zero'",
            shape: Shape::Long,
            genes: tenx_genes,
            samples: tenx_samples,
        },
    ]
}

/// The first column of `sql`'s rows, as text (whatever string type the
/// query gives: `CAST(.. AS VARCHAR)` is a string view in DataFusion 55).
async fn rows_of_column(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in run(ctx, sql).await.unwrap() {
        let column = cast(b.column(0), &DataType::Utf8).unwrap();
        let column = column.as_string::<i32>();
        out.extend((0..b.num_rows()).map(|r| column.value(r).to_string()));
    }
    out.sort();
    out
}

/// The queries each derived table is read by, with `{d}` standing for it:
/// (what, SQL).
fn doors(kind: &Kind) -> Vec<(&'static str, String)> {
    let columns = "gene_i, gene_j, tau, p_value, n";
    let left = &kind.source;
    vec![
        (
            "all pairs",
            format!("SELECT {columns} FROM kendall_all_pairs({{d}})"),
        ),
        (
            "cross pairs (right)",
            format!("SELECT {columns} FROM kendall_cross_pairs({left}, {{d}})"),
        ),
        (
            "candidate pairs (matrix)",
            format!("SELECT {columns} FROM kendall_candidate_pairs('cand', {{d}})"),
        ),
        (
            "candidate pairs (right)",
            format!("SELECT {columns} FROM kendall_candidate_pairs('cand', {left}, {{d}})"),
        ),
    ]
}

/// Every derived table of every kind of input, through every door, gives
/// the rows of its Parquet copy; prints the number of cases.
#[tokio::test]
async fn derived_tables_equal_their_parquet_copies_at_every_door() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(1);
    let kinds = kinds(&ctx, dir.path()).await;
    let mut cases = 0;
    for kind in &kinds {
        run(&ctx, kind.settings).await.unwrap();
        let (a, b) = kind.listed();
        run(
            &ctx,
            &format!(
                "CREATE OR REPLACE VIEW cand AS VALUES ('{a}', '{b}'), ('{b}', '{}'), ('{a}', '{a}')",
                kind.genes[4]
            ),
        )
        .await
        .unwrap();
        // The input itself and its Parquet copy, as a check of the copy.
        let mut derived = vec![(
            "itself",
            format!("CREATE VIEW d_itself AS SELECT * FROM {}", kind.table),
        )];
        derived.extend(kind.derivations());
        for (what, statement) in derived {
            let name = format!("d_{what}");
            let copy = dir
                .path()
                .join(format!("{}-{what}.parquet", kind.name.replace(' ', "_")));
            run(
                &ctx,
                &format!(
                    "{statement}; COPY (SELECT * FROM {name}) TO '{}' STORED AS PARQUET",
                    copy.display()
                ),
            )
            .await
            .unwrap_or_else(|e| panic!("{}, {what}: {e}", kind.name));
            for (door, sql) in doors(kind) {
                let derived = rows(&ctx, &sql.replace("{d}", &format!("'{name}'"))).await;
                let parquet =
                    rows(&ctx, &sql.replace("{d}", &format!("'{}'", copy.display()))).await;
                assert!(
                    !derived.is_empty(),
                    "{}, {what}, {door}: no rows",
                    kind.name
                );
                assert_eq!(derived, parquet, "{}, {what}, {door}", kind.name);
                cases += 1;
            }
            let drop = if what == "copy" {
                "DROP TABLE"
            } else {
                "DROP VIEW"
            };
            run(&ctx, &format!("{drop} {name}")).await.unwrap();
        }
        run(
            &ctx,
            "SET kendall.layout = 'genes_as_rows'; SET kendall.absent = 'error'",
        )
        .await
        .unwrap();
    }
    eprintln!(
        "metamorphic: {cases} cases ({} kinds of input x {TABLES} tables x 4 doors), each equal \
         to its Parquet copy",
        kinds.len()
    );
    assert_eq!(cases, kinds.len() * TABLES * 4);
}

/// An AnnData file (`tests/data/h5/csr.h5ad`) at every door gives the rows
/// of the same matrix (`dense.tsv`) written to Parquet; prints the number
/// of cases.
#[tokio::test]
async fn an_h5ad_file_equals_its_parquet_copy_at_every_door() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(1);
    let copy = dir.path().join("dense.parquet");
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE dense STORED AS CSV LOCATION 'tests/data/h5/dense.tsv' \
             OPTIONS ('format.has_header' 'true', 'format.delimiter' E'\\t'); \
             COPY (SELECT * FROM dense) TO '{}' STORED AS PARQUET; \
             CREATE VIEW cand AS VALUES ('ENSG00000000001', 'ENSG00000000003'), \
             ('ENSG00000000003', 'ENSG00000000005'), ('ENSG00000000001', 'ENSG00000000001')",
            copy.display()
        ),
    )
    .await
    .unwrap();
    let h5ad = "'tests/data/h5/csr.h5ad'";
    let parquet = format!("'{}'", copy.display());
    let kind = Kind {
        name: ".h5ad",
        table: String::new(),
        source: parquet.clone(),
        settings: "",
        shape: Shape::Rows,
        genes: Vec::new(),
        samples: Vec::new(),
    };
    let mut cases = 0;
    for (door, sql) in doors(&kind) {
        let file = rows(&ctx, &sql.replace("{d}", h5ad)).await;
        let copied = rows(&ctx, &sql.replace("{d}", &parquet)).await;
        assert!(!file.is_empty(), ".h5ad, {door}: no rows");
        assert_eq!(file, copied, ".h5ad, {door}");
        cases += 1;
    }
    eprintln!(
        "metamorphic: {cases} cases (an .h5ad file x 4 doors), each equal to its Parquet copy"
    );
    assert_eq!(cases, 4);
}

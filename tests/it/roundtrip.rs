//! CSV and Parquet exports of pairs whose gene ids are drawn from all of
//! Unicode — controls, tabs, newlines, quotes, `&<>`, combining marks,
//! byte-order and direction marks, the last code point, empty strings —
//! read back by DataFusion equal to the rows written, id for id and bit for
//! bit. CSV writes an empty id and a null alike, as an empty field, which
//! DataFusion's CSV reader reads as null whatever `format.null_regex` says
//! (it guides schema inference only); gene ids are never null, so the
//! read-back restores empty ids with `coalesce(.., '')`, as docs/sql.md
//! tells users to, after checking that the nulls are exactly the empty
//! ids. Ids holding a newline need `newlines_in_values`.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::common::{self, ctx, run};

/// Ids that writers and readers are known to trip on, then `random` more
/// drawn from every plane (any Unicode scalar value), from a fixed seed.
fn ids(random: usize, seed: u64) -> Vec<String> {
    let mut ids: Vec<String> = [
        "",
        " ",
        "\t",
        "G\t1",
        "G 1",
        "G\u{1}",
        "G\u{2}",
        "\u{0}",
        "line\nbreak",
        "cr\r\nlf",
        "\"quoted\"",
        "'single'",
        "a,b",
        "&amp;<tag>",
        "e\u{301}",
        "\u{e9}",
        "\u{FEFF}bom",
        "\u{200F}rtl",
        "\u{FFFD}",
        "\u{10FFFF}",
        "\u{1F9EC}",
        "NaN",
        "NULL",
        "\\N",
        "#comment",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut state = seed;
    let mut next = move |k: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % k
    };
    while ids.len() < 25 + random {
        let len = 1 + next(4) as usize;
        let id: String = (0..len)
            .filter_map(|_| char::from_u32(next(0x11_0000) as u32))
            .collect();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The pairs of `sql`, as (gene_i, gene_j, tau bits), as a set.
fn pairs(batches: &[RecordBatch]) -> BTreeSet<(String, String, u64)> {
    let mut out = BTreeSet::new();
    for b in batches {
        let cast = |name: &str| {
            datafusion::arrow::compute::cast(
                b.column_by_name(name).unwrap(),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap()
        };
        let (gi, gj) = (cast("gene_i"), cast("gene_j"));
        let (gi, gj) = (gi.as_string::<i32>(), gj.as_string::<i32>());
        let tau = b
            .column_by_name("tau")
            .unwrap()
            .as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            out.insert((
                gi.value(r).to_string(),
                gj.value(r).to_string(),
                tau.value(r).to_bits(),
            ));
        }
    }
    out
}

/// A genes-as-rows matrix of `ids` (8 samples, ties) registered as `m`.
fn register(ctx: &SessionContext, ids: &[String]) {
    let mut columns: Vec<(&str, Arc<dyn datafusion::arrow::array::Array>)> =
        vec![("gene", Arc::new(StringArray::from_iter_values(ids)))];
    let names: Vec<String> = (0..8).map(|s| format!("s{s}")).collect();
    for (s, name) in names.iter().enumerate() {
        let column: Float64Array = (0..ids.len())
            .map(|g| Some(((g * 7 + s * s * 3 + g * s) % 5) as f64))
            .collect();
        columns.push((name.as_str(), Arc::new(column)));
    }
    let batch = common::batch(columns);
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table("m", Arc::new(table)).unwrap();
}

/// Pairs of ids from all of Unicode, exported to CSV and to Parquet, read
/// back equal; prints the number of ids and pairs.
#[tokio::test]
async fn exports_of_unicode_ids_read_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ids(40, 0x5eed);
    let ctx = ctx(1);
    register(&ctx, &ids);
    let query = "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('m')";
    let expected = pairs(&run(&ctx, query).await.unwrap());
    assert_eq!(expected.len(), ids.len() * (ids.len() - 1) / 2);
    let mut checked = 0;
    for gene_ids in ["string", "dictionary"] {
        run(&ctx, &format!("SET kendall.gene_ids = '{gene_ids}'"))
            .await
            .unwrap();
        let csv = dir.path().join(format!("pairs-{gene_ids}.csv"));
        let parquet = dir.path().join(format!("pairs-{gene_ids}.parquet"));
        run(
            &ctx,
            &format!(
                "COPY ({query}) TO '{}' STORED AS CSV; COPY ({query}) TO '{}' STORED AS PARQUET",
                csv.display(),
                parquet.display()
            ),
        )
        .await
        .unwrap();
        let reader = SessionContext::new();
        run(&reader, "DROP TABLE IF EXISTS c; DROP TABLE IF EXISTS p")
            .await
            .unwrap();
        run(
            &reader,
            &format!(
                "CREATE EXTERNAL TABLE c (gene_i VARCHAR, gene_j VARCHAR, tau DOUBLE NOT NULL) \
                 STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true', \
                 'format.newlines_in_values' 'true')",
                csv.display()
            ),
        )
        .await
        .unwrap();
        // The ids read back as null are the empty ones, and only those.
        let null_ids = run(
            &reader,
            "SELECT count(*) FILTER (WHERE gene_i IS NULL) + \
             count(*) FILTER (WHERE gene_j IS NULL) FROM c",
        )
        .await
        .unwrap();
        let null_ids = null_ids[0].column(0).as_primitive::<Int64Type>().value(0);
        let empty_ids = expected
            .iter()
            .map(|(i, j, _)| usize::from(i.is_empty()) + usize::from(j.is_empty()))
            .sum::<usize>();
        assert!(empty_ids > 0);
        assert_eq!(null_ids as usize, empty_ids, "CSV, gene ids {gene_ids}");
        let back_csv = run(
            &reader,
            "SELECT coalesce(gene_i, '') AS gene_i, coalesce(gene_j, '') AS gene_j, tau FROM c",
        )
        .await
        .unwrap();
        assert_eq!(pairs(&back_csv), expected, "CSV, gene ids {gene_ids}");
        let back_parquet = run(
            &reader,
            &format!(
                "CREATE EXTERNAL TABLE p STORED AS PARQUET LOCATION '{}'; SELECT * FROM p",
                parquet.display()
            ),
        )
        .await
        .unwrap();
        assert_eq!(
            pairs(&back_parquet),
            expected,
            "Parquet, gene ids {gene_ids}"
        );
        checked += 2;
    }
    eprintln!(
        "round trip: {} ids, {} pairs, {checked} exports (CSV and Parquet, string and \
         dictionary ids) read back equal",
        ids.len(),
        expected.len()
    );
    assert_eq!(checked, 4);
    assert_eq!(expected.len(), 65 * 64 / 2);
}

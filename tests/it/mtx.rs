//! MatrixMarket files (`.mtx`, `.mtx.gz`) as inputs: what
//! `scipy.io.mmread` reads from them, their errors, both orientations, and
//! scE2G's Kendall step from its files (`sql/sce2g_step.sql`) against its
//! Python step (fast_kendall_sc).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};

use crate::common::{all_pairs_bits, assert_contains, ctx, error, run, sorted_bits};

/// (gene, sample) -> value bits.
type Values = BTreeMap<(String, String), u64>;

/// The non-zero values of `batches` (`gene`, `sample`, `value`).
fn values(batches: &[RecordBatch]) -> Values {
    let mut out = Values::new();
    for b in batches {
        let text = |c: usize| cast(b.column(c), &DataType::Utf8).unwrap();
        let (genes, samples) = (text(0), text(1));
        let values = b.column(2).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            let key = (
                genes.as_string::<i32>().value(r).to_string(),
                samples.as_string::<i32>().value(r).to_string(),
            );
            assert!(out.insert(key, values.value(r).to_bits()).is_none());
        }
    }
    out
}

/// `tests/data/mtx/mmread_reference.tsv`, by file.
fn mmread_reference() -> BTreeMap<String, Values> {
    let text = std::fs::read_to_string("tests/data/mtx/mmread_reference.tsv").unwrap();
    let mut out: BTreeMap<String, Values> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let value: f64 = f[3].parse().unwrap();
        out.entry(f[0].to_string())
            .or_default()
            .insert((f[1].to_string(), f[2].to_string()), value.to_bits());
    }
    out
}

/// The table options of a fixture: its row names, and its column names
/// when it has them.
fn fixture_options(file: &str) -> String {
    let stem = file.trim_end_matches(".gz").trim_end_matches(".mtx");
    let dir = "tests/data/mtx";
    let mut options = format!("'rows' '{dir}/{stem}.rows.txt'");
    let columns = format!("{dir}/{stem}.columns.txt");
    if Path::new(&columns).exists() {
        options.push_str(&format!(", 'columns' '{columns}'"));
    }
    options
}

/// Case: every fixture (integer, real and pattern entries; general and
/// symmetric; comments; plain and gzip) holds, as a table, exactly the
/// non-zero values scipy.io.mmread reads from it, named by its name files
/// (or, without a column file, by column position from 1); and read by its
/// path, with the name files beside it found by name, it gives the same
/// pairs as the table.
#[tokio::test]
async fn fixtures_read_as_scipy_mmread_reads_them() {
    let reference = mmread_reference();
    assert_eq!(reference.len(), 6);
    let ctx = ctx(2);
    for (k, (file, want)) in reference.iter().enumerate() {
        let sql = format!(
            "CREATE EXTERNAL TABLE t{k} STORED AS MTX LOCATION 'tests/data/mtx/{file}' \
             OPTIONS ({})",
            fixture_options(file)
        );
        run(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let got = values(
            &run(&ctx, &format!("SELECT * FROM t{k} WHERE value <> 0"))
                .await
                .unwrap(),
        );
        assert_eq!(&got, want, "{file}");
        let by_path = all_pairs_bits(&format!("tests/data/mtx/{file}"), "auto").await;
        let by_table = sorted_bits(
            &run(
                &ctx,
                &format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('t{k}')"),
            )
            .await
            .unwrap(),
        );
        assert_eq!(by_path, by_table, "{file}");
    }
}

/// The MatrixMarket text of `entries` (`row col value`, from 1).
fn mtx(rows: usize, cols: usize, entries: &[(usize, usize, i32)]) -> String {
    let mut text = format!(
        "%%MatrixMarket matrix coordinate integer general\n{rows} {cols} {}\n",
        entries.len()
    );
    for (r, c, v) in entries {
        text.push_str(&format!("{r} {c} {v}\n"));
    }
    text
}

/// Writes `text` to `dir/name`; its path as text.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path.display().to_string()
}

/// Case: with orientation 'cells_by_genes', the transposed file gives
/// the same pairs, bit for bit; cells named by position pair with those of
/// the other orientation.
#[tokio::test]
async fn both_orientations_give_the_same_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<(usize, usize, i32)> = (0..60)
        .map(|k| ((k % 5 + 1, (k * 7) % 12 + 1), (k * 13 % 17) as i32))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .map(|((r, c), v)| (r, c, v))
        .collect();
    let transposed: Vec<_> = entries.iter().map(|&(r, c, v)| (c, r, v)).collect();
    let genes = write(dir.path(), "genes.txt", "a\nb\nc\nd\ne\n");
    let by_genes = write(dir.path(), "g.mtx", &mtx(5, 12, &entries));
    let by_cells = write(dir.path(), "c.mtx", &mtx(12, 5, &transposed));
    let ctx = ctx(2);
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE g STORED AS MTX LOCATION '{by_genes}' OPTIONS ('rows' '{genes}'); \
             CREATE EXTERNAL TABLE c STORED AS MTX LOCATION '{by_cells}' \
             OPTIONS ('columns' '{genes}', 'orientation' 'cells_by_genes')"
        ),
    )
    .await
    .unwrap();
    let pairs =
        |t: &str| format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{t}')");
    let g = sorted_bits(&run(&ctx, &pairs("g")).await.unwrap());
    let c = sorted_bits(&run(&ctx, &pairs("c")).await.unwrap());
    assert_eq!(g.len(), 10);
    assert_eq!(g, c);
    let cross = |l: &str, r: &str| {
        format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_cross_pairs('{l}', '{r}')")
    };
    let gc = sorted_bits(&run(&ctx, &cross("g", "c")).await.unwrap());
    assert_eq!(gc.len(), 25);
    let same: Vec<_> = gc.iter().filter(|r| r.0 == r.1).collect();
    assert!(same.iter().all(|r| f64::from_bits(r.2) == 1.0), "{same:?}");
}

/// Case: malformed files are errors naming the file and the line.
#[tokio::test]
async fn errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let genes = write(d, "genes.txt", "g1\ng2\n");
    let ctx = ctx(1);
    let head = "%%MatrixMarket matrix coordinate integer general\n% comment\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "header",
            "%%MatrixMarket matrix array real general\n2 2\n".to_string(),
            vec!["header.mtx line 1", "coordinate"],
        ),
        (
            "size",
            format!("{head}2 2 x\n"),
            vec!["size.mtx line 3", "size line"],
        ),
        (
            "fewer",
            format!("{head}2 2 2\n1 1 4\n"),
            vec!["fewer.mtx has 1 entries", "size line (line 3) says 2"],
        ),
        (
            "more",
            format!("{head}2 2 1\n1 1 4\n2 2 1\n"),
            vec!["more.mtx line 5", "more entries than the 1"],
        ),
        (
            "range",
            format!("{head}2 2 1\n3 1 4\n"),
            vec!["range.mtx line 4", "row index 3 out of range 1..=2"],
        ),
        (
            "number",
            format!("{head}2 2 2\n1 1 4\n2 2 four\n"),
            vec![
                "number.mtx line 5",
                "expected a number as the value, got 'four'",
            ],
        ),
        (
            "twice",
            format!("{head}2 2 2\n1 1 4\n1 1 5\n"),
            vec!["twice.mtx gives gene 'g1', cell '1' twice", "mtx file"],
        ),
        (
            "names",
            format!("{head}3 2 1\n1 1 4\n"),
            vec![
                "genes.txt has 2 lines, but",
                "names.mtx (line 3) has 3 rows",
            ],
        ),
    ];
    for (name, text, needles) in cases {
        let path = write(d, &format!("{name}.mtx"), &text);
        let msg = error(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE {name} STORED AS MTX LOCATION '{path}' \
                 OPTIONS ('rows' '{genes}'); SELECT * FROM {name}"
            ),
        )
        .await;
        assert_contains(&msg, &needles);
    }
}

/// Case: bad options, missing files and name files beside a path that are
/// missing or of the wrong length are errors naming the option and the
/// file; with the right name file the path is read.
#[tokio::test]
async fn options_and_name_files_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let genes = write(d, "genes.txt", "g1\ng2\n");
    let ctx = ctx(1);
    let good = write(d, "good.mtx", &mtx(2, 3, &[(1, 1, 4), (2, 3, 1)]));
    for (options, needles) in [
        (
            "'rows' 'nowhere.txt'".to_string(),
            vec!["cannot open 'nowhere.txt' (option 'rows')"],
        ),
        (
            "'row' 'x'".to_string(),
            vec!["unknown option 'row'", "'rows', 'columns', 'orientation'"],
        ),
        (
            format!("'rows' '{genes}', 'orientation' 'sideways'"),
            vec!["orientation must be", "'cells_by_genes', got 'sideways'"],
        ),
        (
            "'columns' 'x'".to_string(),
            vec!["cannot open 'x' (option 'columns')"],
        ),
        (
            format!("'columns' '{genes}'"),
            vec![
                "option 'rows'",
                "is required with orientation 'genes_by_cells'",
            ],
        ),
    ] {
        let msg = error(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE bad STORED AS MTX LOCATION '{good}' OPTIONS ({options})"
            ),
        )
        .await;
        assert_contains(&msg, &needles);
    }
    let msg = error(
        &ctx,
        "CREATE EXTERNAL TABLE bad STORED AS MTX LOCATION 'nowhere.mtx'",
    )
    .await;
    assert_contains(&msg, &["cannot open 'nowhere.mtx'"]);
    // By path: the name files beside it, looked for by name.
    let msg = error(&ctx, &format!("SELECT * FROM kendall_all_pairs('{good}')")).await;
    assert_contains(
        &msg,
        &[
            "has no row names beside it",
            "good.rows.txt, good.rows.txt.gz",
        ],
    );
    write(d, "good.rows.txt", "a\n");
    let msg = error(&ctx, &format!("SELECT * FROM kendall_all_pairs('{good}')")).await;
    assert_contains(
        &msg,
        &["good.rows.txt has 1 lines", "good.mtx (line 2) has 2 rows"],
    );
    write(d, "good.rows.txt", "a\nb\n");
    let rows = run(
        &ctx,
        &format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{good}')"),
    )
    .await
    .unwrap();
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
}

/// Case: `sql/sce2g_step.sql`, run by the shell on the files scE2G's R side
/// writes (`data/sce2g/`), writes what its Python step (fast_kendall_sc
/// 1.0.0, `scripts/sce2g_step.py`) writes: one line per pair, in order, tau
/// equal to 1e-12 and NA lines where it writes NA.
#[test]
fn sce2g_step_writes_what_fast_kendall_sc_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(scratch.path().join("data/sce2g")).unwrap();
    for entry in std::fs::read_dir(root.join("data/sce2g")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            scratch
                .path()
                .join("data/sce2g")
                .join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    let out = crate::shell::shell(&["-q", "-f"])
        .arg(root.join("sql/sce2g_step.sql"))
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let got = std::fs::read_to_string(scratch.path().join("sce2g_tau.txt")).unwrap();
    let want = std::fs::read_to_string(root.join("tests/data/sce2g_tau_reference.txt")).unwrap();
    let (got, want): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    assert_eq!(got.len(), want.len());
    let pairs = std::fs::read_to_string(root.join("data/sce2g/pairs.tsv")).unwrap();
    assert_eq!(got.len(), pairs.lines().count());
    let mut na = 0;
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        if *w == "NA" {
            assert_eq!(*g, "NA", "line {}", k + 1);
            na += 1;
            continue;
        }
        let (g, w): (f64, f64) = (g.parse().unwrap(), w.parse().unwrap());
        assert!((g - w).abs() <= 1e-12, "line {}: {g} vs {w}", k + 1);
    }
    assert!(na >= 4, "{na}");
}

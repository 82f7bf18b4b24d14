//! Fuzzing at every door: mutated inputs of every kind the table functions
//! read give rows or an error naming the source, never an uncaught panic, an
//! abort or a hang.
//!
//! The doors: Parquet, CSV, TSV, gzipped TSV (its compressed bytes mutated,
//! or its text before compressing), 10x Genomics matrix directories (each of
//! `matrix.mtx`, `matrix.mtx.gz`, the features/genes and barcodes files) and
//! the long layout (TSV, gzipped CSV and Parquet triples). Mutations are
//! byte-level (bit flips, truncation, zeroed, overwritten, deleted and
//! duplicated runs) and structure-aware (lines swapped, deleted, duplicated;
//! fields replaced by huge, negative, NaN, infinite, empty or non-numeric
//! strings; delimiters inserted; a MatrixMarket header, size line or entry
//! out of range; duplicate entries and ids).
//!
//! Each case is a fresh session running one query under a timeout. A hang,
//! a panic that escapes as a Rust panic, an error that names neither a
//! function nor the source, and any panic located in this crate's code (even
//! one our boundary catches and turns into an error) fail the test naming
//! the case. A dependency's panic that our boundary catches (the error says
//! "panicked") is counted apart and printed with the dependency's name and
//! message. A panic hook records where every panic happened.
//!
//! A fixed seed and a bounded number of cases keep CI repeatable and quick;
//! `KENDALL_FUZZ_CASES=3000` runs more (and `KENDALL_FUZZ_SEED` another
//! seed; `KENDALL_FUZZ_VERBOSE=1` prints each case before it runs, so that
//! an abort, which ends the process, names its case).

use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, Float64Array, StringArray};
use datafusion::arrow::datatypes::Float64Type;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common::{batch, ctx, read_parquet, run, write_parquet};

/// 61 genes x 57 samples, every gene with ties, one constant gene.
const TIES: &str = "tests/data/bladder_ties.parquet";
/// 40 genes x 300 cells, gzipped 10x files.
const TENX: &str = "data/tenx_demo";
/// Genes of the long-layout originals (x 57 samples).
const LONG_GENES: usize = 24;
/// Cases per door in CI (times 13 doors).
const CASES_PER_DOOR: usize = 40;
const SEED: u64 = 0x6b656e64;
/// A case running longer than this has hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(30);
/// The table functions; an error must name one of them or the source.
const FUNCTIONS: [&str; 3] = [
    "kendall_all_pairs",
    "kendall_top_partners",
    "kendall_cross_pairs",
];

/// What one door reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Door {
    Parquet,
    Csv,
    Tsv,
    /// The compressed bytes of a `.tsv.gz` mutated.
    TsvGzBytes,
    /// The text of a `.tsv.gz` mutated, then compressed.
    TsvGzText,
    TenxMatrix,
    TenxMatrixGzBytes,
    TenxMatrixGzText,
    TenxFeatures,
    TenxBarcodes,
    LongTsv,
    LongCsvGz,
    LongParquet,
}

const DOORS: [Door; 13] = [
    Door::Parquet,
    Door::Csv,
    Door::Tsv,
    Door::TsvGzBytes,
    Door::TsvGzText,
    Door::TenxMatrix,
    Door::TenxMatrixGzBytes,
    Door::TenxMatrixGzText,
    Door::TenxFeatures,
    Door::TenxBarcodes,
    Door::LongTsv,
    Door::LongCsvGz,
    Door::LongParquet,
];

impl fmt::Display for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Door::Parquet => "parquet",
            Door::Csv => "csv",
            Door::Tsv => "tsv",
            Door::TsvGzBytes => "tsv.gz (compressed bytes)",
            Door::TsvGzText => "tsv.gz (text)",
            Door::TenxMatrix => "10x matrix.mtx",
            Door::TenxMatrixGzBytes => "10x matrix.mtx.gz (compressed bytes)",
            Door::TenxMatrixGzText => "10x matrix.mtx.gz (text)",
            Door::TenxFeatures => "10x features/genes",
            Door::TenxBarcodes => "10x barcodes",
            Door::LongTsv => "long tsv",
            Door::LongCsvGz => "long csv.gz",
            Door::LongParquet => "long parquet",
        })
    }
}

impl Door {
    fn tenx(self) -> bool {
        matches!(
            self,
            Door::TenxMatrix
                | Door::TenxMatrixGzBytes
                | Door::TenxMatrixGzText
                | Door::TenxFeatures
                | Door::TenxBarcodes
        )
    }

    fn long(self) -> bool {
        matches!(self, Door::LongTsv | Door::LongCsvGz | Door::LongParquet)
    }
}

/// How a text file splits into fields, for structure-aware mutations.
#[derive(Debug, Clone, Copy)]
enum Text {
    /// A table with a header line, fields split by the delimiter.
    Table(char),
    /// A MatrixMarket coordinate file.
    Mtx,
    /// A features or barcodes file: ids, tab-separated columns.
    Ids,
}

impl Text {
    fn separator(self) -> char {
        match self {
            Text::Table(c) => c,
            Text::Mtx => ' ',
            Text::Ids => '\t',
        }
    }
}

/// Replacements for a field: numbers too large for every integer type,
/// negative, NaN, infinite, empty, not numbers, quotes and delimiters.
const WEIRD: &[&str] = &[
    "",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "99999999999999999999999",
    "18446744073709551616",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "4294967295",
    "1e308",
    "-1.7976931348623157e308",
    "5e-324",
    "9007199254740993",
    "-9007199254740993",
    "-1",
    "-0",
    "0",
    "0.5",
    "1,5",
    "0x1F",
    "NA",
    "null",
    "\"\"",
    "\"1\"",
    " 1",
    "abc",
    "é",
    "1e",
    "--1",
    "+1",
    ".",
    "1.2.3",
    "\t",
    ",",
    "\"",
    "%",
    "\r",
];

/// Characters inserted into a line: delimiters, quotes, line ends.
const INSERTED: &[char] = &['\t', ',', ' ', '"', '\n', '\r', '%', ';', '\'', '\0'];

fn pick<'a, T>(rng: &mut SmallRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// A weird field value, now and then a very long one.
fn weird(rng: &mut SmallRng) -> String {
    match rng.random_range(0..20) {
        0 => "9".repeat(rng.random_range(20..400)),
        1 => "x".repeat(rng.random_range(100..400)),
        _ => pick(rng, WEIRD).to_string(),
    }
}

/// Mutates `bytes` in place (never left as it was unless it is empty);
/// says how.
fn mutate_bytes(rng: &mut SmallRng, bytes: &mut Vec<u8>) -> String {
    if bytes.is_empty() {
        bytes.push(rng.random());
        return "one random byte".into();
    }
    let len = bytes.len();
    let run = |rng: &mut SmallRng| {
        let start = rng.random_range(0..len);
        (start, (start + rng.random_range(1..256)).min(len))
    };
    match rng.random_range(0..6) {
        0 => {
            let mut at = Vec::new();
            for _ in 0..rng.random_range(1..8) {
                let i = rng.random_range(0..len);
                bytes[i] ^= 1 << rng.random_range(0..8);
                at.push(i);
            }
            format!("bits flipped at bytes {at:?}")
        }
        1 => {
            let at = rng.random_range(0..len);
            bytes.truncate(at);
            format!("truncated to {at} of {len} bytes")
        }
        2 => {
            let (a, b) = run(rng);
            bytes[a..b].fill(0);
            format!("bytes {a}..{b} zeroed")
        }
        3 => {
            let (a, b) = run(rng);
            let fill = if rng.random_bool(0.5) {
                0xff
            } else {
                rng.random()
            };
            bytes[a..b].fill(fill);
            format!("bytes {a}..{b} set to {fill:#04x}")
        }
        4 => {
            let (a, b) = run(rng);
            bytes.drain(a..b);
            format!("bytes {a}..{b} deleted")
        }
        _ => {
            let (a, b) = run(rng);
            let chunk = bytes[a..b].to_vec();
            let at = rng.random_range(0..=len);
            bytes.splice(at..at, chunk);
            format!("bytes {a}..{b} copied to {at}")
        }
    }
}

/// A line index, the first lines (headers, size lines) more often.
fn line_index(rng: &mut SmallRng, lines: &[String]) -> usize {
    if rng.random_bool(0.3) {
        rng.random_range(0..lines.len().min(3))
    } else {
        rng.random_range(0..lines.len())
    }
}

/// Replaces field `f` (wrapped to the line's fields) of line `i`.
fn set_field(lines: &mut [String], i: usize, f: usize, sep: char, value: &str) -> usize {
    let mut fields: Vec<&str> = lines[i].split(sep).collect();
    let f = f % fields.len();
    fields[f] = value;
    lines[i] = fields.join(&sep.to_string());
    f
}

/// The size line of a MatrixMarket text (its index and three numbers).
fn size_line(lines: &[String]) -> Option<(usize, [i64; 3])> {
    let i = lines
        .iter()
        .skip(1)
        .position(|l| !l.trim().is_empty() && !l.starts_with('%'))?
        + 1;
    let nums: Vec<i64> = lines[i]
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    Some((i, nums.try_into().ok()?))
}

/// One mutation that knows the file's kind; says what it did.
fn mutate_structure(rng: &mut SmallRng, lines: &mut Vec<String>, kind: Text) -> String {
    let sep = kind.separator();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let i = line_index(rng, lines);
    match rng.random_range(0..9) {
        0 => {
            let j = rng.random_range(0..lines.len());
            lines.swap(i, j);
            format!("lines {} and {} swapped", i + 1, j + 1)
        }
        1 => {
            lines.remove(i);
            format!("line {} deleted", i + 1)
        }
        2 => {
            let j = if rng.random_bool(0.5) {
                i + 1
            } else {
                rng.random_range(0..=lines.len())
            };
            let line = lines[i].clone();
            lines.insert(j, line);
            format!("line {} duplicated as line {}", i + 1, j + 1)
        }
        3 => {
            let value = weird(rng);
            let f = set_field(lines, i, rng.random_range(0..64), sep, &value);
            format!("line {} field {} set to {value:?}", i + 1, f + 1)
        }
        4 => {
            let c = *pick(rng, INSERTED);
            let mut chars: Vec<char> = lines[i].chars().collect();
            let at = rng.random_range(0..=chars.len());
            chars.insert(at, c);
            lines[i] = chars.into_iter().collect();
            format!("{c:?} inserted in line {} at {at}", i + 1)
        }
        5 => {
            if rng.random_bool(0.5) {
                let mut fields: Vec<&str> = lines[i].split(sep).collect();
                fields.pop();
                lines[i] = fields.join(&sep.to_string());
                format!("last field of line {} dropped", i + 1)
            } else {
                let value = weird(rng);
                lines[i].push(sep);
                lines[i].push_str(&value);
                format!("field {value:?} appended to line {}", i + 1)
            }
        }
        6 => {
            let extra = pick(rng, &["", " ", "\t", "%", "%%comment", ",,,", "\r"]).to_string();
            lines.insert(i, extra.clone());
            format!("line {extra:?} inserted at line {}", i + 1)
        }
        7 => {
            let keep = rng.random_range(0..=lines.len());
            lines.truncate(keep);
            format!("only the first {keep} lines kept")
        }
        _ => match kind {
            Text::Mtx => mutate_mtx(rng, lines),
            Text::Ids => mutate_ids(rng, lines),
            Text::Table(_) => mutate_table(rng, lines, sep),
        },
    }
}

/// MatrixMarket specifics: the header line, the size line, entries out of
/// range, duplicate entries.
fn mutate_mtx(rng: &mut SmallRng, lines: &mut Vec<String>) -> String {
    let Some((size, [rows, cols, entries])) = size_line(lines) else {
        lines.insert(0, "%%MatrixMarket matrix coordinate integer general".into());
        return "a header line inserted".into();
    };
    match rng.random_range(0..4) {
        0 => {
            let word = *pick(
                rng,
                &[
                    "array",
                    "real",
                    "pattern",
                    "complex",
                    "symmetric",
                    "hermitian",
                    "integer",
                    "%%MatrixMarket",
                    "%MatrixMarket",
                    "vector",
                    "",
                    "Coordinate",
                ],
            );
            let f = set_field(lines, 0, rng.random_range(0..5), ' ', word);
            format!("header word {} set to {word:?}", f + 1)
        }
        1 => {
            let old = [rows, cols, entries];
            let f = rng.random_range(0..3);
            let value = match rng.random_range(0..8) {
                0 => (old[f] - 1).to_string(),
                1 => (old[f] + 1).to_string(),
                2 => "0".into(),
                3 => "1".into(),
                4 => pick(rng, &["18446744073709551616", "4294967296", "99999999999"]).to_string(),
                5 => "-1".into(),
                6 => (old[f] * 2).to_string(),
                _ => weird(rng),
            };
            set_field(lines, size, f, ' ', &value);
            format!("size line field {} set to {value:?}", f + 1)
        }
        2 => {
            if lines.len() <= size + 2 {
                return "no entry to change".into();
            }
            let e = rng.random_range(size + 1..lines.len() - 1);
            let f = rng.random_range(0..3);
            let max = [rows, cols, 0][f];
            let value = match rng.random_range(0..8) {
                0 => "0".into(),
                1 => max.to_string(),
                2 => (max + 1).to_string(),
                3 => "4294967296".into(),
                4 => "18446744073709551615".into(),
                5 => "-1".into(),
                6 => "1.5".into(),
                _ => weird(rng),
            };
            set_field(lines, e, f, ' ', &value);
            format!("line {} field {} set to {value:?}", e + 1, f + 1)
        }
        _ => {
            if lines.len() <= size + 2 {
                return "no entry to duplicate".into();
            }
            let e = rng.random_range(size + 1..lines.len() - 1);
            let mut copy = lines[e].clone();
            if rng.random_bool(0.5) {
                set_field(std::slice::from_mut(&mut copy), 0, 2, ' ', "7");
            }
            let at = rng.random_range(size + 1..=lines.len());
            lines.insert(at, copy);
            format!("entry of line {} duplicated at line {}", e + 1, at + 1)
        }
    }
}

/// Features and barcodes specifics: empty, duplicate and odd ids.
fn mutate_ids(rng: &mut SmallRng, lines: &mut [String]) -> String {
    let i = rng.random_range(0..lines.len());
    match rng.random_range(0..4) {
        0 => {
            let j = rng.random_range(0..lines.len());
            lines[i] = lines[j].clone();
            format!("line {} made a copy of line {}", i + 1, j + 1)
        }
        1 => {
            lines[i] = pick(rng, &["", "\t", "\tx", " ", "\r"]).to_string();
            format!("line {} emptied", i + 1)
        }
        2 => {
            lines[i].push('\r');
            format!("CR added to line {}", i + 1)
        }
        _ => {
            let value = weird(rng);
            set_field(lines, i, 0, '\t', &value);
            format!("id of line {} set to {value:?}", i + 1)
        }
    }
}

/// Table specifics: header names duplicated or emptied, gene ids
/// duplicated or emptied.
fn mutate_table(rng: &mut SmallRng, lines: &mut [String], sep: char) -> String {
    let fields = lines[0].split(sep).count();
    match rng.random_range(0..3) {
        0 => {
            let j = rng.random_range(0..fields);
            let name = lines[0].split(sep).nth(j).unwrap_or("").to_string();
            let f = set_field(lines, 0, rng.random_range(0..fields), sep, &name);
            format!("header field {} renamed {name:?}", f + 1)
        }
        1 => {
            let f = set_field(lines, 0, rng.random_range(0..fields), sep, "");
            format!("header field {} emptied", f + 1)
        }
        _ => {
            let i = rng.random_range(0..lines.len());
            let j = rng.random_range(0..lines.len());
            let id = lines[j].split(sep).next().unwrap_or("").to_string();
            let id = if rng.random_bool(0.3) {
                String::new()
            } else {
                id
            };
            set_field(lines, i, 0, sep, &id);
            format!("first field of line {} set to {id:?}", i + 1)
        }
    }
}

/// Mutates a text file: one to three structure-aware mutations (three times
/// in four), else a byte mutation of the text.
fn mutate_text(rng: &mut SmallRng, text: &str, kind: Text) -> (Vec<u8>, String) {
    if rng.random_range(0..4) == 0 {
        let mut bytes = text.as_bytes().to_vec();
        let how = mutate_bytes(rng, &mut bytes);
        return (bytes, how);
    }
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let mut how = Vec::new();
    for _ in 0..rng.random_range(1..=3) {
        how.push(mutate_structure(rng, &mut lines, kind));
    }
    (lines.join("\n").into_bytes(), how.join("; "))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn gunzip(path: &str) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// The unmutated inputs, as bytes or text.
struct Originals {
    parquet: Vec<u8>,
    csv: String,
    tsv: String,
    long_tsv: String,
    long_csv: String,
    long_parquet: Vec<u8>,
    matrix: String,
    features: String,
    barcodes: String,
    gene_column: String,
}

impl Originals {
    fn new(dir: &Path) -> Self {
        let ties = read_parquet(TIES);
        let schema = ties.schema();
        let gene_column = schema.field(0).name().clone();
        let genes: Vec<String> = ties
            .column(0)
            .as_string::<i32>()
            .iter()
            .map(|g| g.unwrap().to_string())
            .collect();
        let samples: Vec<String> = schema.fields()[1..]
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let value = |g: usize, s: usize| {
            ties.column(s + 1)
                .as_primitive::<Float64Type>()
                .value(g)
                .to_string()
        };
        let wide = |sep: &str| {
            let mut text = format!("{gene_column}{sep}{}\n", samples.join(sep));
            for (g, gene) in genes.iter().enumerate() {
                text.push_str(gene);
                for s in 0..samples.len() {
                    text.push_str(sep);
                    text.push_str(&value(g, s));
                }
                text.push('\n');
            }
            text
        };
        let (mut g_col, mut s_col, mut v_col) = (Vec::new(), Vec::new(), Vec::new());
        for (s, sample) in samples.iter().enumerate() {
            for (g, gene) in genes.iter().enumerate().take(LONG_GENES) {
                g_col.push(gene.clone());
                s_col.push(sample.clone());
                v_col.push(value(g, s));
            }
        }
        let long = |sep: &str| {
            let mut text = format!("gene{sep}sample{sep}value\n");
            for k in 0..g_col.len() {
                text.push_str(&format!("{}{sep}{}{sep}{}\n", g_col[k], s_col[k], v_col[k]));
            }
            text
        };
        let long_path = dir.join("long.parquet");
        write_parquet(
            &long_path,
            &batch(vec![
                (
                    "gene",
                    std::sync::Arc::new(StringArray::from(g_col.clone())),
                ),
                (
                    "sample",
                    std::sync::Arc::new(StringArray::from(s_col.clone())),
                ),
                (
                    "value",
                    std::sync::Arc::new(Float64Array::from_iter_values(
                        v_col.iter().map(|v| v.parse::<f64>().unwrap()),
                    )) as std::sync::Arc<dyn Array>,
                ),
            ]),
        );
        Self {
            parquet: std::fs::read(TIES).unwrap(),
            csv: wide(","),
            tsv: wide("\t"),
            long_tsv: long("\t"),
            long_csv: long(","),
            long_parquet: std::fs::read(&long_path).unwrap(),
            matrix: gunzip(&format!("{TENX}/matrix.mtx.gz")),
            features: gunzip(&format!("{TENX}/features.tsv.gz")),
            barcodes: gunzip(&format!("{TENX}/barcodes.tsv.gz")),
            gene_column,
        }
    }

    /// Writes the unmutated input of `door` under `dir`; returns its
    /// location (a file, or a 10x directory).
    fn write(&self, door: Door, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        match door {
            Door::Parquet => file("ties.parquet", &self.parquet),
            Door::Csv => file("ties.csv", self.csv.as_bytes()),
            Door::Tsv => file("ties.tsv", self.tsv.as_bytes()),
            Door::TsvGzBytes | Door::TsvGzText => file("ties.tsv.gz", &gzip(self.tsv.as_bytes())),
            Door::LongTsv => file("long.tsv", self.long_tsv.as_bytes()),
            Door::LongCsvGz => file("long.csv.gz", &gzip(self.long_csv.as_bytes())),
            Door::LongParquet => file("long.parquet", &self.long_parquet),
            _ => {
                file("matrix.mtx.gz", &gzip(self.matrix.as_bytes()));
                file("features.tsv.gz", &gzip(self.features.as_bytes()));
                file("barcodes.tsv.gz", &gzip(self.barcodes.as_bytes()));
                dir.to_path_buf()
            }
        }
    }

    /// Writes a mutated input of `door` under `dir`: (its location, the
    /// mutated file, how it was mutated).
    fn mutated(&self, rng: &mut SmallRng, door: Door, dir: &Path) -> (PathBuf, PathBuf, String) {
        std::fs::create_dir_all(dir).unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let bytes_of = |rng: &mut SmallRng, original: &[u8]| {
            let mut bytes = original.to_vec();
            let how = mutate_bytes(rng, &mut bytes);
            (bytes, how)
        };
        // Text, or now and then its bytes.
        let text_of = |rng: &mut SmallRng, text: &str, kind: Text| mutate_text(rng, text, kind);
        let (name, (bytes, how)) = match door {
            Door::Parquet => ("ties.parquet", bytes_of(rng, &self.parquet)),
            Door::Csv => ("ties.csv", text_of(rng, &self.csv, Text::Table(','))),
            Door::Tsv => ("ties.tsv", text_of(rng, &self.tsv, Text::Table('\t'))),
            Door::TsvGzBytes => ("ties.tsv.gz", bytes_of(rng, &gzip(self.tsv.as_bytes()))),
            Door::TsvGzText => {
                let (text, how) = text_of(rng, &self.tsv, Text::Table('\t'));
                ("ties.tsv.gz", (gzip(&text), how))
            }
            Door::LongTsv => ("long.tsv", text_of(rng, &self.long_tsv, Text::Table('\t'))),
            Door::LongCsvGz => {
                if rng.random_range(0..4) == 0 {
                    (
                        "long.csv.gz",
                        bytes_of(rng, &gzip(self.long_csv.as_bytes())),
                    )
                } else {
                    let (text, how) = text_of(rng, &self.long_csv, Text::Table(','));
                    ("long.csv.gz", (gzip(&text), how))
                }
            }
            Door::LongParquet => ("long.parquet", bytes_of(rng, &self.long_parquet)),
            _ => return self.mutated_tenx(rng, door, dir),
        };
        let path = file(name, &bytes);
        (path.clone(), path, how)
    }

    /// [`Originals::mutated`] of a 10x directory: the door's file mutated,
    /// the other two plain or gzipped (features as `features.tsv` or
    /// `genes.tsv`).
    fn mutated_tenx(
        &self,
        rng: &mut SmallRng,
        door: Door,
        dir: &Path,
    ) -> (PathBuf, PathBuf, String) {
        let features = if rng.random_bool(0.5) {
            "features.tsv"
        } else {
            "genes.tsv"
        };
        let mut target = PathBuf::new();
        let mut how = String::new();
        for (role, base, text, kind) in [
            (Door::TenxMatrix, "matrix.mtx", &self.matrix, Text::Mtx),
            (Door::TenxFeatures, features, &self.features, Text::Ids),
            (
                Door::TenxBarcodes,
                "barcodes.tsv",
                &self.barcodes,
                Text::Ids,
            ),
        ] {
            let mutated = role == door
                || (role == Door::TenxMatrix
                    && matches!(door, Door::TenxMatrixGzBytes | Door::TenxMatrixGzText));
            let gz = match door {
                Door::TenxMatrix if mutated => false,
                Door::TenxMatrixGzBytes | Door::TenxMatrixGzText if mutated => true,
                _ => rng.random_bool(0.5),
            };
            let name = if gz {
                format!("{base}.gz")
            } else {
                base.to_string()
            };
            let bytes = if !mutated {
                text.as_bytes().to_vec()
            } else if door == Door::TenxMatrixGzBytes
                || (gz && door != Door::TenxMatrixGzText && rng.random_range(0..4) == 0)
            {
                // The compressed bytes: truncated gz, flipped bits, ...
                let mut bytes = gzip(text.as_bytes());
                how = format!("compressed: {}", mutate_bytes(rng, &mut bytes));
                target = dir.join(&name);
                std::fs::write(&target, &bytes).unwrap();
                continue;
            } else {
                let (bytes, h) = mutate_text(rng, text, kind);
                how = h;
                bytes
            };
            let path = dir.join(&name);
            std::fs::write(&path, if gz { gzip(&bytes) } else { bytes }).unwrap();
            if mutated {
                target = path;
            }
        }
        (dir.to_path_buf(), target, how)
    }
}

/// A panic seen by the hook: where and what.
#[derive(Debug, Clone)]
struct Panic {
    file: String,
    line: u32,
    message: String,
}

impl Panic {
    /// Whether it happened in this crate's code (a bug to fix, caught or not).
    fn ours(&self) -> bool {
        self.file.starts_with("src/")
    }

    /// Whether it happened in the tests (another test failing).
    fn in_tests(&self) -> bool {
        self.file.starts_with("tests/")
    }

    /// The crate the panic happened in: `arrow-ipc-59.0.0`, say.
    fn origin(&self) -> String {
        let parts: Vec<&str> = self.file.split('/').collect();
        for (anchor, skip) in [("registry", 3), ("checkouts", 1)] {
            if let Some(k) = parts.iter().position(|p| *p == anchor)
                && let Some(name) = parts.get(k + skip)
            {
                return name.to_string();
            }
        }
        if self.file.starts_with("/rustc/") {
            return "the Rust standard library".into();
        }
        if self.ours() {
            return "datafusion-kendall".into();
        }
        self.file.clone()
    }
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} panicked at {}:{}: {}",
            self.origin(),
            self.file,
            self.line,
            self.message
        )
    }
}

static PANICS: Mutex<Vec<Panic>> = Mutex::new(Vec::new());

/// While set, a dependency's panic is only recorded (the fuzz report shows
/// it with its case), not printed with its backtrace as it happens.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Installs (once) a panic hook that records every panic, then runs the
/// hook that was there before.
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let (file, line) = info
                .location()
                .map_or((String::new(), 0), |l| (l.file().to_string(), l.line()));
            let message = info.payload_as_str().unwrap_or("").to_string();
            let panic = Panic {
                file,
                line,
                message,
            };
            let quiet = QUIET.load(Ordering::Relaxed) && !panic.ours() && !panic.in_tests();
            PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(panic);
            if !quiet {
                previous(info);
            }
        }));
    });
}

/// The panics recorded since the last call, other tests' assertions left
/// out.
fn take_panics() -> Vec<Panic> {
    let mut panics = std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner()));
    panics.retain(|p| !p.in_tests());
    panics
}

/// Outcomes of one door's cases.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    cases: usize,
    read: usize,
    refused: usize,
    /// Refused with an error naming a function but not the file.
    unnamed_file: usize,
    /// A dependency's panic, caught and turned into an error.
    contained: usize,
}

/// One case: a query over a mutated input.
struct Case {
    index: usize,
    door: Door,
    how: String,
    location: PathBuf,
    target: PathBuf,
    sql: String,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "case {} ({}, {}: {}): {}",
            self.index,
            self.door,
            self.target.display(),
            self.how,
            self.sql
        )
    }
}

/// The query of a case over `location` (`pristine`: the unmutated input of
/// the same door, the other side of `kendall_cross_pairs`).
fn query(
    rng: &mut SmallRng,
    door: Door,
    location: &Path,
    pristine: &Path,
    gene_column: &str,
) -> String {
    let mut sql = String::new();
    if door.long() {
        let absent = pick(rng, &["error", "zero", "missing"]);
        sql.push_str(&format!(
            "SET kendall.layout = 'long'; SET kendall.absent = '{absent}'; "
        ));
    }
    if rng.random_range(0..10) == 0 {
        sql.push_str("SET kendall.missing = 'error'; ");
    }
    let args = match rng.random_range(0..3) {
        0 if door.long() => ", 'gene', 'sample', 'value'".to_string(),
        0 if !door.tenx() => format!(", '{gene_column}'"),
        _ => String::new(),
    };
    let (source, other) = (location.display(), pristine.display());
    sql.push_str(&match rng.random_range(0..10) {
        0..=6 => format!("SELECT count(*), sum(tau) FROM kendall_all_pairs('{source}'{args})"),
        7 | 8 => {
            format!("SELECT count(*), sum(tau) FROM kendall_top_partners('{source}', 3{args})")
        }
        _ if rng.random_bool(0.5) => {
            format!("SELECT count(*), sum(tau) FROM kendall_cross_pairs('{source}', '{other}')")
        }
        _ => format!("SELECT count(*), sum(tau) FROM kendall_cross_pairs('{other}', '{source}')"),
    });
    sql
}

fn env_number(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// The text of a panic payload.
fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// How a case ended, when it did not fail the test.
#[derive(Debug)]
enum Verdict {
    /// Rows (with the panics some reader caught on its own, if any).
    Read { panics: Vec<Panic> },
    /// An error; `names_file`: it names the input's location or file.
    Refused { msg: String, names_file: bool },
    /// A dependency's panic, caught and turned into an error.
    Contained {
        msg: String,
        panics: Vec<Panic>,
        names_file: bool,
    },
}

/// Who panicked, for the report.
fn origin(panics: &[Panic]) -> String {
    if panics.is_empty() {
        return "an unrecorded panic".into();
    }
    panics
        .iter()
        .map(Panic::origin)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `case` in a fresh session under [`CASE_TIMEOUT`]. An error (what
/// fails the test) when it hangs, panics past our boundary, panics in our
/// code (caught or not), or ends with an error naming neither a function
/// nor the source.
async fn check(case: &Case) -> Result<Verdict, String> {
    take_panics();
    let task = {
        let sql = case.sql.clone();
        tokio::spawn(async move { run(&ctx(2), &sql).await.map(|_| ()) })
    };
    let outcome = match tokio::time::timeout(CASE_TIMEOUT, task).await {
        Err(_) => return Err(format!("{case}\nhung: no answer after {CASE_TIMEOUT:?}")),
        Ok(Err(join)) => {
            let why = if join.is_panic() {
                payload_text(&*join.into_panic())
            } else {
                join.to_string()
            };
            return Err(format!(
                "{case}\nescaped as a Rust panic: {why}\n{}",
                panic_lines(&take_panics())
            ));
        }
        Ok(Ok(outcome)) => outcome,
    };
    let panics = take_panics();
    if panics.iter().any(Panic::ours) {
        return Err(format!(
            "{case}\nour code panicked (the query ended with {:?}):\n{}",
            outcome.as_ref().map_err(|e| e.to_string()),
            panic_lines(&panics)
        ));
    }
    let msg = match outcome {
        Ok(()) => return Ok(Verdict::Read { panics }),
        Err(e) => e.to_string(),
    };
    let location = case.location.display().to_string();
    let file_name = case
        .target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let names_file = msg.contains(&location) || msg.contains(&file_name);
    if !names_file && !FUNCTIONS.iter().any(|f| msg.contains(f)) {
        return Err(format!(
            "{case}\nthe error names neither a function nor the source: {msg}"
        ));
    }
    Ok(if msg.contains("panicked") || !panics.is_empty() {
        Verdict::Contained {
            msg,
            panics,
            names_file,
        }
    } else {
        Verdict::Refused { msg, names_file }
    })
}

/// Runs `cases` cases; the summary, or what failed.
async fn fuzz(dir: &Path, cases: usize, seed: u64) -> Result<String, String> {
    let originals = Originals::new(dir);
    let pristine: BTreeMap<Door, PathBuf> = DOORS
        .iter()
        .map(|&d| {
            (
                d,
                originals.write(d, &dir.join(format!("pristine{}", d as u8))),
            )
        })
        .collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut tallies: BTreeMap<Door, Tally> = BTreeMap::new();
    let mut contained: Vec<String> = Vec::new();
    let mut by_dependency: BTreeMap<String, usize> = BTreeMap::new();
    let mut unnamed: Vec<String> = Vec::new();
    let verbose = std::env::var_os("KENDALL_FUZZ_VERBOSE").is_some();
    let started = Instant::now();
    for index in 0..cases {
        let door = DOORS[index % DOORS.len()];
        let case_dir = dir.join(format!("case{index}"));
        let (location, target, how) = originals.mutated(&mut rng, door, &case_dir);
        let sql = query(
            &mut rng,
            door,
            &location,
            &pristine[&door],
            &originals.gene_column,
        );
        let case = Case {
            index,
            door,
            how,
            location,
            target,
            sql,
        };
        if verbose {
            // Before it runs: an abort (which ends the process) names its case.
            eprintln!("{case}");
        }
        let tally = tallies.entry(door).or_default();
        tally.cases += 1;
        match check(&case).await? {
            Verdict::Read { panics } => {
                tally.read += 1;
                if !panics.is_empty() {
                    // Caught somewhere, and the query still answered.
                    contained.push(format!(
                        "  {case}\n    answered, but {} panicked:\n{}",
                        origin(&panics),
                        panic_lines(&panics)
                    ));
                }
            }
            Verdict::Refused { msg, names_file } => {
                tally.refused += 1;
                if !names_file {
                    tally.unnamed_file += 1;
                    if unnamed.len() < 10 {
                        unnamed.push(format!("  {case}\n    {msg}"));
                    }
                }
            }
            Verdict::Contained {
                msg,
                panics,
                names_file,
            } => {
                tally.contained += 1;
                if !names_file {
                    tally.unnamed_file += 1;
                    if unnamed.len() < 10 {
                        unnamed.push(format!("  {case}\n    {msg}"));
                    }
                }
                let origin = origin(&panics);
                *by_dependency.entry(origin.clone()).or_default() += 1;
                contained.push(format!(
                    "  {case}\n    contained panic of {origin}: {msg}\n{}",
                    panic_lines(&panics)
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&case_dir);
    }
    let elapsed = started.elapsed();
    let mut total = Tally::default();
    let mut report = String::new();
    for (door, t) in &tallies {
        total.cases += t.cases;
        total.read += t.read;
        total.refused += t.refused;
        total.unnamed_file += t.unnamed_file;
        total.contained += t.contained;
        report.push_str(&format!(
            "  {:<38} {:>4} cases: {:>4} read, {:>4} refused, {} contained panics ({} errors not naming the file)\n",
            door.to_string(),
            t.cases,
            t.read,
            t.refused,
            t.contained,
            t.unnamed_file
        ));
        if t.cases >= 20 && t.refused + t.contained == 0 {
            return Err(format!(
                "{door}: no mutation of {} was refused: the test mutates nothing",
                t.cases
            ));
        }
    }
    if !contained.is_empty() {
        report.push_str(
            "contained dependency panics (caught at our boundary, reported as errors):\n",
        );
        for c in &contained {
            report.push_str(c);
            report.push('\n');
        }
    }
    if !unnamed.is_empty() {
        report.push_str("errors naming the function but not the file (first 10):\n");
        for u in &unnamed {
            report.push_str(u);
            report.push('\n');
        }
    }
    let dependencies: Vec<String> = by_dependency
        .iter()
        .map(|(d, n)| format!("{d}: {n}"))
        .collect();
    report.push_str(&format!(
        "fuzz summary (seed {seed:#x}, {:.1} s): {} cases, {} read, {} refused, {} contained dependency panics{}",
        elapsed.as_secs_f64(),
        total.cases,
        total.read,
        total.refused,
        total.contained,
        if dependencies.is_empty() {
            String::new()
        } else {
            format!(" ({})", dependencies.join(", "))
        }
    ));
    Ok(report)
}

fn panic_lines(panics: &[Panic]) -> String {
    panics
        .iter()
        .map(|p| format!("    {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fuzz test and the regressions run one at a time: the panic hook's
/// records are the process's, taken case by case.
static SERIAL: Mutex<()> = Mutex::new(());

/// A runtime for [`check`]: two workers, so that a case's timeout fires
/// even while a worker is stuck.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Mutated inputs at every door give rows or errors naming the source:
/// none hangs, none panics past our boundary, none panics in our code; a
/// dependency's panic our boundary catches is counted and named.
#[test]
fn mutated_inputs_at_every_door_give_rows_or_errors() {
    record_panics();
    let cases =
        env_number("KENDALL_FUZZ_CASES").map_or(CASES_PER_DOOR * DOORS.len(), |n| n as usize);
    let seed = env_number("KENDALL_FUZZ_SEED").unwrap_or(SEED);
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime();
    QUIET.store(true, Ordering::Relaxed);
    let result = runtime.block_on(fuzz(dir.path(), cases, seed));
    QUIET.store(false, Ordering::Relaxed);
    match result {
        Ok(report) => eprintln!("{report}"),
        Err(failure) => {
            // A hung load may hold a blocking thread: do not wait for it.
            runtime.shutdown_background();
            let kept = dir.keep();
            panic!(
                "{failure}\n(inputs kept in {}; seed {seed:#x})",
                kept.display()
            );
        }
    }
}

/// A minimal 10x directory: how its case is named, its three files (name,
/// text; gzipped when the name ends in `.gz`), what the error must say.
type TenxDir = (
    &'static str,
    [(&'static str, String); 3],
    &'static [&'static str],
);

/// A 10x size line of no genes (or no cells) made the reader give the cells
/// (genes) without entries an explicit zero for gene (cell) 1 of an empty
/// list: an index out of range in `tenx.rs`, caught at our boundary as
/// "loading the input panicked: index out of bounds". Now an error naming
/// the file and its size line.
#[test]
fn a_10x_size_line_of_no_genes_or_no_cells_is_an_error_naming_the_file() {
    record_panics();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let head = "%%MatrixMarket matrix coordinate integer general\n";
    let cases: [TenxDir; 3] = [
        (
            "no genes, two cells",
            [
                ("matrix.mtx", format!("{head}0 2 0\n")),
                ("features.tsv", String::new()),
                ("barcodes.tsv", "c1\nc2\n".into()),
            ],
            &["matrix.mtx line 2", "0 rows (genes) and 2 columns"],
        ),
        (
            "two genes, no cells",
            [
                ("matrix.mtx", format!("{head}2 0 0\n")),
                ("features.tsv", "g1\ng2\n".into()),
                ("barcodes.tsv", String::new()),
            ],
            &["matrix.mtx line 2", "2 rows (genes) and 0 columns"],
        ),
        (
            "no genes, no cells, gzipped",
            [
                ("matrix.mtx.gz", format!("{head}%c\n0 0 0\n")),
                ("genes.tsv.gz", String::new()),
                ("barcodes.tsv.gz", String::new()),
            ],
            &["matrix.mtx.gz line 3", "0 rows (genes) and 0 columns"],
        ),
    ];
    let runtime = runtime();
    for (index, (how, files, needles)) in cases.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in &files {
            let bytes = if name.ends_with(".gz") {
                gzip(text.as_bytes())
            } else {
                text.clone().into_bytes()
            };
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let location = dir.path().to_path_buf();
        let case = Case {
            index,
            door: Door::TenxMatrix,
            how: how.into(),
            target: location.join(files[0].0),
            sql: format!(
                "SELECT count(*), sum(tau) FROM kendall_all_pairs('{}')",
                location.display()
            ),
            location,
        };
        match runtime.block_on(check(&case)) {
            Ok(Verdict::Refused { msg, names_file }) => {
                assert!(names_file, "{case}: {msg}");
                crate::common::assert_contains(&msg, needles);
            }
            other => panic!("{case}: {other:?}"),
        }
    }
}

/// A reader's panic while the input is loaded (parquet 59's RLE decoder
/// shifting past 64 bits on a corrupt page, found by the fuzz test: the
/// long-layout Parquet triples with bytes 627..756 set to 0xff) is an error
/// naming the file, as a panic while planning is; it only said "loading the
/// input panicked".
#[test]
fn a_reader_panic_while_loading_names_the_file() {
    record_panics();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Originals::new(dir.path()).long_parquet;
    bytes[627..756].fill(0xff);
    let target = dir.path().join("corrupt_page.parquet");
    std::fs::write(&target, bytes).unwrap();
    let case = Case {
        index: 0,
        door: Door::LongParquet,
        how: "bytes 627..756 set to 0xff".into(),
        location: target.clone(),
        sql: format!(
            "SET kendall.layout = 'long'; \
             SELECT count(*), sum(tau) FROM kendall_all_pairs('{}')",
            target.display()
        ),
        target,
    };
    QUIET.store(true, Ordering::Relaxed);
    let verdict = runtime().block_on(check(&case));
    QUIET.store(false, Ordering::Relaxed);
    match verdict {
        Ok(Verdict::Contained {
            msg,
            panics,
            names_file,
        }) => {
            assert!(names_file, "{case}: {msg}");
            crate::common::assert_contains(
                &msg,
                &["cannot read '", "reading it panicked", "shift left"],
            );
            assert!(
                panics.iter().any(|p| p.origin().starts_with("parquet-")),
                "{case}: {}",
                panic_lines(&panics)
            );
        }
        // A parquet that no longer panics here makes this case moot: find
        // another with the fuzz test.
        other => panic!("{case}: {other:?}"),
    }
}

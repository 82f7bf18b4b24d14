//! The MatrixMarket coordinate format (`.mtx`, plain or gzip-compressed)
//! and the name files beside it (one name per line, the first
//! tab-separated field): the parser that a 10x directory (`tenx.rs`) is
//! read with, and that a plain `.mtx` file with its name files would be.
//!
//! It reads what the files say, nothing more: the header (`%%MatrixMarket
//! matrix coordinate integer|real|pattern general`), the size line, and
//! the entries as `(row, column)` positions (from 0) and values, in file
//! order. What the rows and columns are (genes or cells) and how entries
//! are grouped is its caller's. Every error names the file and the line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use datafusion::error::{DataFusionError, Result};

use crate::memory::{Reservation, try_with_capacity};

/// An error reading the files (raised when the query runs, or when it is
/// planned for the header and size line).
pub(super) fn error(msg: String) -> DataFusionError {
    DataFusionError::Execution(msg)
}

/// How messages name a file.
pub(super) fn file_name(p: &Path) -> String {
    p.display().to_string()
}

/// The lines of a plain or gzip-compressed (`.gz`) text file.
fn lines(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let file =
        File::open(path).map_err(|e| error(format!("cannot open {}: {e}", file_name(path))))?;
    let gz = path.extension().is_some_and(|e| e == "gz");
    Ok(if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// Reads line `k` (1-based, for messages) of `path` into `buf`; false at the end.
fn next_line(reader: &mut dyn BufRead, buf: &mut String, path: &Path, k: usize) -> Result<bool> {
    buf.clear();
    match reader.read_line(buf) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(error(format!(
            "{} line {k}: cannot read: {e}",
            file_name(path)
        ))),
    }
}

/// The names of a name file: the first tab-separated field of each line
/// (10x's `features.tsv` and `barcodes.tsv`, or one name per line); an
/// empty one is an error naming the line.
pub(super) fn names(path: &Path) -> Result<Vec<String>> {
    let mut reader = lines(path)?;
    let mut buf = String::new();
    let mut out = Vec::new();
    while next_line(&mut *reader, &mut buf, path, out.len() + 1)? {
        let id = buf
            .trim_end_matches(['\n', '\r'])
            .split('\t')
            .next()
            .unwrap_or("");
        if id.is_empty() {
            return Err(error(format!(
                "{} line {}: empty id",
                file_name(path),
                out.len() + 1
            )));
        }
        out.push(id.to_string());
    }
    Ok(out)
}

/// What the header and size line of a MatrixMarket file say.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    /// Rows, columns and entries, as the size line says.
    pub rows: usize,
    pub cols: usize,
    pub entries: usize,
    /// `pattern` matrices list positions only (value 1).
    pub pattern: bool,
    /// Line number of the size line.
    pub size_line: usize,
}

/// A MatrixMarket file opened and read up to its first entry.
pub(super) struct Opened {
    /// What its header and size line say.
    pub header: Header,
    reader: Box<dyn BufRead + Send>,
}

/// Opens the MatrixMarket file `path` and reads its header and size line
/// (`rows`/`cols` name the rows and columns in the message about an empty
/// matrix: `genes`, `cells`).
pub(super) fn open(path: &Path, (rows, cols): (&str, &str)) -> Result<Opened> {
    let mut reader = lines(path)?;
    let header = header(&mut *reader, path, (rows, cols))?;
    Ok(Opened { header, reader })
}

/// Reads the header and size line, leaving `reader` at the first entry.
fn header(reader: &mut dyn BufRead, path: &Path, (rows, cols): (&str, &str)) -> Result<Header> {
    let mut buf = String::new();
    let name = file_name(path);
    if !next_line(reader, &mut buf, path, 1)? {
        return Err(error(format!(
            "{name} is empty; expected a MatrixMarket header"
        )));
    }
    let words: Vec<String> = buf
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let ok = words.len() == 5
        && words[0] == "%%matrixmarket"
        && words[1] == "matrix"
        && words[2] == "coordinate"
        && matches!(words[3].as_str(), "integer" | "real" | "pattern")
        && words[4] == "general";
    if !ok {
        return Err(error(format!(
            "{name} line 1: expected '%%MatrixMarket matrix coordinate integer|real|pattern general', got '{}'",
            buf.trim()
        )));
    }
    let pattern = words[3] == "pattern";
    let mut k = 1;
    loop {
        k += 1;
        if !next_line(reader, &mut buf, path, k)? {
            return Err(error(format!("{name} ends before its size line")));
        }
        let line = buf.trim();
        if line.is_empty() || line.starts_with('%') {
            continue;
        }
        let nums: Vec<Option<usize>> = line.split_whitespace().map(|w| w.parse().ok()).collect();
        return match nums.as_slice() {
            // Without a row or a column there is no entry to list, and the
            // explicit zeros of empty rows and columns would have none to
            // pair with.
            [Some(r), Some(c), Some(_)] if *r == 0 || *c == 0 => Err(error(format!(
                "{name} line {k}: the size line says {r} rows ({rows}) and {c} columns \
                 ({cols}); a matrix needs at least one of each"
            ))),
            [Some(rows), Some(cols), Some(entries)] => Ok(Header {
                rows: *rows,
                cols: *cols,
                entries: *entries,
                pattern,
                size_line: k,
            }),
            _ => Err(error(format!(
                "{name} line {k}: expected the size line 'rows columns entries', got '{line}'"
            ))),
        };
    }
}

/// A matrix file's entries, in file order.
pub(super) struct Coordinates {
    /// Each entry's `(row, column)`, from 0.
    pub cells: Vec<(u32, u32)>,
    /// Each entry's value (1 in a `pattern` matrix), finite.
    pub values: Vec<f64>,
}

/// Bytes an entry takes as read ([`Coordinates`]).
const ENTRY_BYTES: usize = size_of::<(u32, u32)>() + size_of::<f64>();

impl Opened {
    /// The entries (as many as the size line says, each in range), their
    /// memory reserved in `reservation` before they are read.
    pub(super) fn entries(
        mut self,
        path: &Path,
        reservation: &mut Reservation,
    ) -> Result<Coordinates> {
        let header = self.header;
        reservation.try_grow(header.entries.saturating_mul(ENTRY_BYTES))?;
        let mut cells: Vec<(u32, u32)> = try_with_capacity(header.entries, "matrix entries")?;
        let mut values: Vec<f64> = try_with_capacity(header.entries, "matrix entries")?;
        let name = file_name(path);
        let mut buf = String::new();
        let mut k = header.size_line;
        loop {
            k += 1;
            if !next_line(&mut *self.reader, &mut buf, path, k)? {
                break;
            }
            let line = buf.trim();
            if line.is_empty() || line.starts_with('%') {
                continue;
            }
            let (row, col, value) = entry(line, &header, &name, k)?;
            if cells.len() == header.entries {
                return Err(error(format!(
                    "{name} line {k}: more entries than the {} its size line (line {}) says",
                    header.entries, header.size_line
                )));
            }
            cells.push((row, col));
            values.push(value);
        }
        if cells.len() != header.entries {
            return Err(error(format!(
                "{name} has {} entries, but its size line (line {}) says {}",
                cells.len(),
                header.size_line,
                header.entries
            )));
        }
        Ok(Coordinates { cells, values })
    }
}

/// One entry line `line` (line `k` of the file `name`): its row and column
/// (from 0, in range) and value.
fn entry(line: &str, header: &Header, name: &str, k: usize) -> Result<(u32, u32, f64)> {
    let mut words = line.split_whitespace();
    let mut index = |what: &str, max: usize| -> Result<u32> {
        let w = words.next().unwrap_or("");
        match w.parse::<usize>() {
            Ok(x) if (1..=max).contains(&x) => Ok((x - 1) as u32),
            Ok(x) => Err(error(format!(
                "{name} line {k}: {what} index {x} out of range 1..={max}"
            ))),
            Err(_) => Err(error(format!(
                "{name} line {k}: expected 'row column value', got '{line}'"
            ))),
        }
    };
    let row = index("row", header.rows)?;
    let col = index("column", header.cols)?;
    let value = if header.pattern {
        1.0
    } else {
        let w = words.next().unwrap_or("");
        w.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| {
                error(format!(
                    "{name} line {k}: expected a number as the value, got '{w}'"
                ))
            })?
    };
    Ok((row, col, value))
}

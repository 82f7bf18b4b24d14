//! The MatrixMarket coordinate format (`.mtx`, plain or gzip-compressed)
//! and the name files beside it (one name per line, the first
//! tab-separated field): the one parser that a plain `.mtx` file and a 10x
//! directory (`matrix_files.rs`) are read with.
//!
//! It reads what the files say, nothing more: the header (`%%MatrixMarket
//! matrix coordinate integer|real|pattern general|symmetric`), the size
//! line, and the entries as `(row, column)` positions (from 0) and values.
//! A symmetric matrix lists the entries of one triangle: each off-diagonal
//! one is given at its mirrored position too, as `scipy.io.mmread` does.
//! Comment lines (`%`) and blank lines may come anywhere after the header.
//! What the rows and columns are (genes or cells) and how entries are
//! grouped is its caller's. Every error names the file and the line.
//!
//! The entries are parsed on all cores: the body is read (and, for `.gz`,
//! decompressed) in blocks of whole lines, sequentially, while the blocks
//! read before it are parsed on rayon's threads, each block's line numbers
//! counted from where the blocks before it ended.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use datafusion::error::{DataFusionError, Result};
use rayon::prelude::*;

use crate::memory::Reservation;

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
    /// Rows, columns and entries listed, as the size line says.
    pub rows: usize,
    pub cols: usize,
    pub entries: usize,
    /// `pattern` matrices list positions only (value 1).
    pub pattern: bool,
    /// `symmetric` matrices list one triangle; off-diagonal entries stand
    /// for two.
    pub symmetric: bool,
    /// Line number of the size line.
    pub size_line: usize,
}

impl Header {
    /// The most entries the matrix has: those listed, twice over for a
    /// symmetric one.
    pub fn max_entries(&self) -> usize {
        if self.symmetric {
            self.entries.saturating_mul(2)
        } else {
            self.entries
        }
    }
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

/// The header line's words: (`pattern`, `symmetric`), or an error naming
/// what it should be.
fn header_kind(line: &str, name: &str) -> Result<(bool, bool)> {
    let words: Vec<String> = line
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let ok = words.len() == 5
        && words[0] == "%%matrixmarket"
        && words[1] == "matrix"
        && words[2] == "coordinate"
        && matches!(words[3].as_str(), "integer" | "real" | "pattern")
        && matches!(words[4].as_str(), "general" | "symmetric");
    if !ok {
        return Err(error(format!(
            "{name} line 1: expected '%%MatrixMarket matrix coordinate integer|real|pattern \
             general|symmetric', got '{}'",
            line.trim()
        )));
    }
    Ok((words[3] == "pattern", words[4] == "symmetric"))
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
    let (pattern, symmetric) = header_kind(&buf, &name)?;
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
            [Some(r), Some(c), Some(_)] if symmetric && r != c => Err(error(format!(
                "{name} line {k}: a symmetric matrix is square, but the size line says {r} \
                 rows and {c} columns"
            ))),
            [Some(r), Some(c), _] if *r > u32::MAX as usize || *c > u32::MAX as usize => {
                Err(error(format!(
                    "{name} line {k}: {r} rows x {c} columns is too large (at most {} each)",
                    u32::MAX
                )))
            }
            [Some(rows), Some(cols), Some(entries)] => Ok(Header {
                rows: *rows,
                cols: *cols,
                entries: *entries,
                pattern,
                symmetric,
                size_line: k,
            }),
            _ => Err(error(format!(
                "{name} line {k}: expected the size line 'rows columns entries', got '{line}'"
            ))),
        };
    }
}

/// A matrix file's entries in file order, as the runs its blocks were
/// parsed into (kept, not copied into one array: their grouping by gene
/// reads them where they are).
pub(super) struct Coordinates {
    /// The blocks' entries, in file order.
    pub runs: Vec<Entries>,
}

/// The entries of one block of a matrix file.
pub(super) struct Entries {
    /// Each entry's `(row, column)`, from 0.
    pub cells: Vec<(u32, u32)>,
    /// Their values (1 in a `pattern` matrix), finite.
    pub values: Values,
}

/// The values of a block's entries: one each, or one for all when every
/// entry of the block has the same (the 1s of a binarised or `pattern`
/// matrix, held once rather than 8 bytes per entry).
pub(super) enum Values {
    /// Entry `k`'s value at `k`.
    Each(Vec<f64>),
    /// Every entry's value.
    All(f64),
}

impl Coordinates {
    /// Every entry's `(row, column)`, in file order.
    pub fn cells(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.runs.iter().flat_map(|r| r.cells.iter().copied())
    }
}

/// Bytes an entry takes as read ([`Coordinates`]).
const ENTRY_BYTES: usize = size_of::<(u32, u32)>() + size_of::<f64>();

/// Bytes of the body a block holds, at least (it ends at a line's end).
const BLOCK_BYTES: usize = 1 << 22;

/// Bytes of the blocks of one batch (one block per thread), at most: with
/// many threads the blocks are smaller (but at least [`MIN_BLOCK_BYTES`]).
const BATCH_BYTES: usize = 1 << 26;

/// Bytes of a block, at least, however many threads parse them.
const MIN_BLOCK_BYTES: usize = 1 << 18;

/// The entries of one block of whole lines.
struct Block {
    entries: Entries,
    /// Entry lines (a symmetric matrix's mirrored entries not counted).
    listed: usize,
    /// Lines in the block.
    lines: usize,
}

/// A problem on line `line` (from 1) of a block.
struct BlockError {
    line: usize,
    msg: String,
}

impl Opened {
    /// The entries (as many as the size line says, each in range; a
    /// symmetric matrix's mirrored), their memory reserved in
    /// `reservation` before they are read. The file is read in blocks of
    /// whole lines, each batch of blocks (one per thread) parsed on rayon's
    /// threads while the next batch is read into the buffers of the batch
    /// before; the blocks in flight are reserved too.
    pub(super) fn entries(self, path: &Path, reservation: &mut Reservation) -> Result<Coordinates> {
        self.entries_in_blocks(path, reservation, BLOCK_BYTES)
    }

    /// [`Opened::entries`], in blocks of at least `block_bytes`.
    fn entries_in_blocks(
        mut self,
        path: &Path,
        reservation: &mut Reservation,
        block_bytes: usize,
    ) -> Result<Coordinates> {
        let header = self.header;
        let most = header.max_entries();
        reservation.try_grow(most.saturating_mul(ENTRY_BYTES))?;
        let mut out = Coordinates { runs: Vec::new() };
        let name = file_name(path);
        let batch_len = rayon::current_num_threads().max(1);
        let block_bytes = block_bytes.min((BATCH_BYTES / batch_len).max(MIN_BLOCK_BYTES));
        // In flight besides the entries (reserved above): a batch being
        // parsed and the next batch, read into the buffers of the one
        // before (as many bytes as this one, at most), reserved as batches
        // are read.
        let before = reservation.size();
        let copies = 2;
        let mut in_flight = 0;
        // Lines before the next block, entries listed before it.
        let (mut line, mut listed) = (header.size_line, 0usize);
        let mut body = Body {
            reader: &mut *self.reader,
            carry: Vec::new(),
            done: false,
            block_bytes,
            spare: Vec::new(),
        };
        let mut batch = body.read_batch(batch_len, &name, line)?;
        while !batch.is_empty() {
            let bytes = copies * batch.iter().map(Vec::capacity).sum::<usize>();
            if bytes > in_flight {
                reservation.try_grow(bytes - in_flight)?;
                in_flight = bytes;
            }
            let (parsed, next) = rayon::join(
                || {
                    batch
                        .par_iter()
                        .map(|b| parse_block(b, &header))
                        .collect::<Vec<_>>()
                },
                || body.read_batch(batch_len, &name, line),
            );
            for (text, parsed) in batch.iter().zip(parsed) {
                let block = parsed
                    .map_err(|e| error(format!("{name} line {}: {}", line + e.line, e.msg)))?;
                if listed + block.listed > header.entries {
                    let k = line + nth_entry_line(text, header.entries - listed + 1);
                    return Err(error(format!(
                        "{name} line {k}: more entries than the {} its size line (line {}) says",
                        header.entries, header.size_line
                    )));
                }
                listed += block.listed;
                line += block.lines;
                out.runs.push(block.entries);
            }
            // This batch's buffers take the batch after the next.
            body.spare.append(&mut batch);
            batch = next?;
        }
        if listed != header.entries {
            return Err(error(format!(
                "{name} has {listed} entries, but its size line (line {}) says {}",
                header.size_line, header.entries
            )));
        }
        reservation.shrink_to(before);
        Ok(out)
    }
}

/// The body of a file after its size line, read in blocks of whole lines.
struct Body<'a> {
    reader: &'a mut (dyn BufRead + Send),
    /// The start of a line the last block did not end.
    carry: Vec<u8>,
    /// Whether the reader is at its end.
    done: bool,
    /// Bytes a block holds, at least.
    block_bytes: usize,
    /// Buffers of blocks parsed, to read the next blocks into (fresh
    /// memory would be zeroed by the system, page by page, first).
    spare: Vec<Vec<u8>>,
}

impl Body<'_> {
    /// Up to `len` blocks of whole lines (fewer at the end of the file;
    /// none after it). `line`: lines read before them, for messages.
    fn read_batch(&mut self, len: usize, name: &str, line: usize) -> Result<Vec<Vec<u8>>> {
        let mut batch = Vec::with_capacity(len);
        while batch.len() < len
            && let Some(block) = self.read_block(name, line)?
        {
            batch.push(block);
        }
        Ok(batch)
    }

    /// The next block: at least `block_bytes` (the rest of the file when
    /// shorter), ending at the end of a line; `None` at the end.
    fn read_block(&mut self, name: &str, line: usize) -> Result<Option<Vec<u8>>> {
        let mut block = self.spare.pop().unwrap_or_default();
        block.clear();
        block.append(&mut self.carry);
        let mut filled = block.len();
        let want = self.block_bytes;
        block.resize(filled.max(want) + (1 << 16).min(want), 0);
        while !self.done && (filled < want || !block[..filled].contains(&b'\n')) {
            if filled == block.len() {
                block.resize(2 * filled, 0);
            }
            match self.reader.read(&mut block[filled..]) {
                Ok(0) => self.done = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(error(format!("{name}: cannot read after line {line}: {e}")));
                }
            }
        }
        block.truncate(filled);
        if self.done {
            // The last block: as many bytes as it holds, not a whole block.
            block.shrink_to_fit();
        }
        if !self.done
            && let Some(end) = block.iter().rposition(|&b| b == b'\n')
        {
            self.carry = block.split_off(end + 1);
        }
        Ok((!block.is_empty()).then_some(block))
    }
}

/// Whether a line holds no entry (blank, or a `%` comment).
fn is_not_entry(line: &[u8]) -> bool {
    line.trim_ascii().first().is_none_or(|&b| b == b'%')
}

/// The lines of `text`, a block of whole lines (the last without its end
/// only at the end of the file): `text.split(|&b| b == b'\n')`, each line's
/// end found by a vector search (memchr) rather than byte by byte.
fn block_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(text.strip_suffix(b"\n").unwrap_or(text));
    std::iter::from_fn(move || {
        let text = rest?;
        Some(match memchr::memchr(b'\n', text) {
            Some(end) => {
                rest = Some(&text[end + 1..]);
                &text[..end]
            }
            None => {
                rest = None;
                text
            }
        })
    })
}

/// The entries of the block `text` (its line `k`, from 1, in messages).
/// A line of the usual form (`row column value`, fields parted by spaces or
/// tabs, nothing after the value) is parsed in one pass over its bytes
/// ([`plain_entry`]); any other line (a comment, a blank line, spaces at its
/// start or end, an error) as [`entry`] parses it, which gives the same
/// entry for a line of the usual form.
fn parse_block(text: &[u8], header: &Header) -> std::result::Result<Block, BlockError> {
    // As many entries as lines (twice for a symmetric matrix), at most.
    let lines = memchr::memchr_iter(b'\n', text).count() + 1;
    let most = lines * if header.symmetric { 2 } else { 1 };
    let mut block = Block {
        entries: Entries {
            cells: Vec::with_capacity(most),
            values: Values::All(1.0),
        },
        listed: 0,
        lines: 0,
    };
    // The values are held once until one differs (in bits) from the first.
    let mut first: Option<f64> = None;
    // The start of the next line; a last line without its end ends the
    // text (as the lines of [`block_lines`] do).
    let mut at = 0;
    let mut i = 0;
    while at < text.len() || i == 0 {
        i += 1;
        let (row, col, value) = match plain_entry(text, &mut at, header) {
            Some(parsed) => parsed,
            None => {
                let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |e| at + e);
                let raw = &text[at..end];
                at = end + 1;
                if is_not_entry(raw) {
                    continue;
                }
                entry(raw, header).map_err(|msg| BlockError { line: i, msg })?
            }
        };
        block.listed += 1;
        let entries = &mut block.entries;
        match first {
            None => {
                first = Some(value);
                entries.values = Values::All(value);
            }
            Some(x)
                if matches!(entries.values, Values::All(_)) && x.to_bits() != value.to_bits() =>
            {
                let mut each = Vec::with_capacity(most);
                each.resize(entries.cells.len(), x);
                entries.values = Values::Each(each);
            }
            Some(_) => {}
        }
        let mirrored = header.symmetric && row != col;
        entries.cells.push((row, col));
        if mirrored {
            entries.cells.push((col, row));
        }
        if let Values::Each(values) = &mut entries.values {
            values.push(value);
            if mirrored {
                values.push(value);
            }
        }
    }
    block.lines = i;
    Ok(block)
}

/// The entry of the line at `text[*at..]` when the line has the usual form
/// (`row column value\n`, or `row column\n` in a `pattern` matrix; the
/// fields parted by spaces or tabs, the line's end or the text's right
/// after the last) and its indices are in range, `*at` then moved to the
/// next line; `None` (and `*at` unmoved) for any other line, which
/// [`entry`] then reads. It gives what [`entry`] gives for the line.
#[inline]
fn plain_entry(text: &[u8], at: &mut usize, header: &Header) -> Option<(u32, u32, f64)> {
    let mut k = *at;
    let row = digits(text, &mut k).filter(|x| (1..=header.rows).contains(x))?;
    gap(text, &mut k)?;
    let col = digits(text, &mut k).filter(|x| (1..=header.cols).contains(x))?;
    let value = if header.pattern {
        1.0
    } else {
        gap(text, &mut k)?;
        let start = k;
        let mut ascii = true;
        while let Some(&b) = text.get(k)
            && !b.is_ascii_whitespace()
        {
            ascii &= b.is_ascii();
            k += 1;
        }
        // (Non-ASCII text is left to [`entry`], whose message shows it.)
        if !ascii {
            return None;
        }
        parse_value(&text[start..k])?
    };
    match text.get(k) {
        None => {}
        Some(b'\n') => k += 1,
        Some(_) => return None,
    }
    *at = k;
    Some(((row - 1) as u32, (col - 1) as u32, value))
}

/// The decimal number of 1 to 19 digits at `text[*k..]` (as
/// [`parse_index`] reads it), `*k` moved past its digits.
#[inline]
fn digits(text: &[u8], k: &mut usize) -> Option<usize> {
    let start = *k;
    let mut x = 0usize;
    while let Some(&b) = text.get(*k)
        && b.is_ascii_digit()
    {
        x = x.wrapping_mul(10).wrapping_add(usize::from(b - b'0'));
        *k += 1;
    }
    (1..=19).contains(&(*k - start)).then_some(x)
}

/// Moves `*k` past the spaces and tabs at `text[*k..]`; `None` when there
/// are none.
#[inline]
fn gap(text: &[u8], k: &mut usize) -> Option<()> {
    let start = *k;
    while let Some(b' ' | b'\t') = text.get(*k) {
        *k += 1;
    }
    (*k > start).then_some(())
}

/// The line (from 1) of the block `text` that holds its entry number `n`
/// (from 1; it has one).
fn nth_entry_line(text: &[u8], n: usize) -> usize {
    block_lines(text)
        .enumerate()
        .filter(|(_, l)| !is_not_entry(l))
        .nth(n - 1)
        .map_or(0, |(i, _)| i + 1)
}

/// One entry line `raw`: its row and column (from 0, in range) and value,
/// or what is wrong with it. Words are found by a scan of the bytes (no
/// iterator of splits), and a value written as a whole number of at most
/// 15 digits (the 0/1 of a binarised matrix, raw counts) is converted
/// directly: every such number is an exact f64, the one parsing its text
/// gives.
fn entry(raw: &[u8], header: &Header) -> std::result::Result<(u32, u32, f64), String> {
    let line = || String::from_utf8_lossy(raw.trim_ascii()).into_owned();
    let mut rest = raw;
    let mut index = |what: &str, max: usize| -> std::result::Result<u32, String> {
        match parse_index(next_word(&mut rest)) {
            Some(x) if (1..=max).contains(&x) => Ok((x - 1) as u32),
            Some(x) => Err(format!("{what} index {x} out of range 1..={max}")),
            None => Err(format!("expected 'row column value', got '{}'", line())),
        }
    };
    let row = index("row", header.rows)?;
    let col = index("column", header.cols)?;
    let value = if header.pattern {
        1.0
    } else {
        let w = next_word(&mut rest);
        parse_value(w).ok_or_else(|| {
            format!(
                "expected a number as the value, got '{}'",
                String::from_utf8_lossy(w)
            )
        })?
    };
    Ok((row, col, value))
}

/// The next whitespace-separated word of `rest` (empty at its end), which
/// moves past it.
#[inline]
fn next_word<'a>(rest: &mut &'a [u8]) -> &'a [u8] {
    let text = *rest;
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    let len = text[start..]
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(text.len() - start);
    *rest = &text[start + len..];
    &text[start..start + len]
}

/// A finite value's text as its f64: a whole number of at most 15 digits
/// (optionally signed) directly, any other text as Rust parses it; `None`
/// when it is no number or not finite.
#[inline]
fn parse_value(w: &[u8]) -> Option<f64> {
    let (negative, digits) = match w.first() {
        Some(b'-') => (true, &w[1..]),
        Some(b'+') => (false, &w[1..]),
        _ => (false, w),
    };
    if !digits.is_empty() && digits.len() <= 15 && digits.iter().all(u8::is_ascii_digit) {
        let x = digits
            .iter()
            .fold(0u64, |x, &b| x * 10 + u64::from(b - b'0')) as f64;
        return Some(if negative { -x } else { x });
    }
    let text = if w.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(w) }
    } else {
        std::str::from_utf8(w).ok()?
    };
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A decimal index (digits only), `None` when it is not one or overflows.
fn parse_index(w: &[u8]) -> Option<usize> {
    if w.is_empty() || w.len() > 19 {
        return None;
    }
    w.iter().try_fold(0usize, |x, &b| {
        b.is_ascii_digit().then(|| x * 10 + usize::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::QueryMemory;
    use std::io::Write;

    /// A file of `text` in a temporary directory, named `name`.
    fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    }

    /// Entries as read: positions and values.
    type Read = (Vec<(u32, u32)>, Vec<f64>);

    /// A block's entries, lines and first error as [`parse_block`] gives
    /// them.
    type Parsed = std::result::Result<(Read, usize, usize), (usize, String)>;

    fn parsed(text: &[u8], header: &Header) -> Parsed {
        parse_block(text, header)
            .map(|b| {
                let values = (0..b.entries.cells.len())
                    .map(|k| match &b.entries.values {
                        Values::Each(values) => values[k],
                        Values::All(value) => *value,
                    })
                    .collect();
                ((b.entries.cells, values), b.listed, b.lines)
            })
            .map_err(|e| (e.line, e.msg))
    }

    /// The block as every line is read by [`entry`] alone.
    fn parsed_line_by_line(text: &[u8], header: &Header) -> Parsed {
        let (mut read, mut listed, mut lines): (Read, usize, usize) = Default::default();
        for (i, raw) in block_lines(text).enumerate() {
            lines = i + 1;
            if is_not_entry(raw) {
                continue;
            }
            let (row, col, value) = entry(raw, header).map_err(|msg| (i + 1, msg))?;
            listed += 1;
            read.0.push((row, col));
            read.1.push(value);
            if header.symmetric && row != col {
                read.0.push((col, row));
                read.1.push(value);
            }
        }
        Ok((read, listed, lines))
    }

    /// Case: the one-pass reading of a line of the usual form gives what
    /// reading its words gives, and every other line (spaces at either end,
    /// tabs, a carriage return, words after the value, comments, blank
    /// lines, indices out of range or too long, no value, a value that is
    /// no number or not ASCII) is read as before: the same entries, lines
    /// and errors, in every kind of matrix, with and without the last
    /// line's end.
    #[test]
    fn lines_of_the_usual_form_read_as_their_words_do() {
        let lines = [
            "3 4 1.5",
            "3\t4\t1.5",
            "3  4 \t 2",
            " 3 4 5",
            "3 4 5 ",
            "3 4 5\r",
            "3 4 5 extra",
            "% a comment",
            "",
            "   ",
            "30 40 -0",
            "1 1 1.1248863780382898e+00",
            "1 1 007",
            "0 4 5",
            "31 4 5",
            "3 0 5",
            "3 41 5",
            "3 4 x",
            "3 4",
            "3",
            "3 4 \u{e9}",
            "3 4 1e400",
            "12345678901234567890 1 1",
            "0000000000000000003 4 1",
            "00000000000000000003 4 1",
            "3a 4 1",
            "3 4a 1",
            "-3 4 1",
        ];
        for (pattern, symmetric) in [(false, false), (false, true), (true, false), (true, true)] {
            let header = Header {
                rows: 30,
                cols: 40,
                entries: 100,
                pattern,
                symmetric,
                size_line: 2,
            };
            for a in lines {
                for b in ["3 4 1", a, "% c"] {
                    for end in ["", "\n"] {
                        let text = format!("{a}\n{b}{end}");
                        let want = parsed_line_by_line(text.as_bytes(), &header);
                        assert_eq!(
                            parsed(text.as_bytes(), &header),
                            want,
                            "{header:?} {text:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn block_lines_are_the_lines_a_split_at_line_ends_gives() {
        let texts: [&[u8]; 9] = [
            b"",
            b"\n",
            b"\n\n",
            b"1 2 3",
            b"1 2 3\n",
            b"1 2 3\n4 5 6",
            b"1 2 3\n\n% c\n4 5 6\n",
            b"\r\n1 2 3\r\n",
            b"a very long line of more than thirty-two bytes, past one vector\nb\n",
        ];
        for text in texts {
            let split: Vec<&[u8]> = text
                .strip_suffix(b"\n")
                .unwrap_or(text)
                .split(|&b| b == b'\n')
                .collect();
            assert_eq!(block_lines(text).collect::<Vec<_>>(), split, "{text:?}");
        }
    }

    /// The entries of `path`, read in blocks of `block` bytes.
    fn read(path: &Path, block: usize) -> Result<Read> {
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let c = open(path, ("genes", "cells"))?.entries_in_blocks(path, &mut r, block)?;
        let values = c
            .runs
            .iter()
            .flat_map(|r| {
                (0..r.cells.len()).map(|k| match &r.values {
                    Values::Each(values) => values[k],
                    Values::All(value) => *value,
                })
            })
            .collect();
        Ok((c.cells().collect(), values))
    }

    /// A general real matrix of 2,000 entries with comment and blank lines
    /// among them (line `k + 3` holds entry `k`, from 0, until the first
    /// comment).
    fn big() -> String {
        let mut text =
            String::from("%%MatrixMarket matrix coordinate real general\n%c\n50 40 2000\n");
        for k in 0..2000u32 {
            text.push_str(&format!("{} {} {}.5\n", k % 50 + 1, k / 50 + 1, k));
            if k % 300 == 299 {
                text.push_str("% a comment\n\n");
            }
        }
        text
    }

    /// Case: blocks of any size (one line each, a few lines, the whole
    /// file) give the same entries in file order, and an error's line
    /// number is the file's, whichever block it falls in.
    /// Case: a value's shortcut for whole numbers gives the bits Rust's
    /// parser gives, for whole numbers up to 15 digits and past them,
    /// signed and zero-padded ones and every other form of number; what is
    /// no finite number is refused.
    #[test]
    fn values_parse_as_rust_parses_them() {
        let mut texts: Vec<String> = [
            "0",
            "1",
            "-1",
            "+7",
            "-0",
            "007",
            "42",
            "999999999999999",
            "1000000000000000",
            "9007199254740993",
            "123456789012345678901",
            "1.5",
            "-2.25e-3",
            "1e300",
            ".5",
            "5.",
            "1E5",
            "0.1",
            "3.141592653589793",
            "1.0000000000000000e+00",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for digits in 1..=18 {
            for _ in 0..50 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let n = x % 10u64.pow(digits.min(19));
                texts.push(n.to_string());
                texts.push(format!("-{n}"));
            }
        }
        for t in &texts {
            let want: f64 = t.parse().unwrap();
            let got = parse_value(t.as_bytes()).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{t}");
        }
        for bad in [
            "", "-", "+", "abc", "1x", "inf", "NaN", "1e999", "--1", "1 2",
        ] {
            assert_eq!(parse_value(bad.as_bytes()), None, "{bad}");
        }
        let mut rest: &[u8] = b"  12\t 7   -3.5 ";
        assert_eq!(next_word(&mut rest), b"12");
        assert_eq!(next_word(&mut rest), b"7");
        assert_eq!(next_word(&mut rest), b"-3.5");
        assert_eq!(next_word(&mut rest), b"");
    }

    #[test]
    fn blocks_of_any_size_give_the_same_entries_and_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(&dir, "m.mtx", &big());
        let whole = read(&path, BLOCK_BYTES).unwrap();
        assert_eq!(whole.0.len(), 2000);
        assert_eq!((whole.0[1999], whole.1[1999]), ((49, 39), 1999.5));
        for block in [1, 7, 64, 1000] {
            assert_eq!(read(&path, block).unwrap(), whole, "blocks of {block}");
        }
        // Entry 1500 is on line 3 + 1500 + 2 * 5 (five comments and blank
        // lines before it) + 1.
        let bad = big().replace("\n1 31 1500.5\n", "\n1 31 x\n");
        let path = file(&dir, "bad.mtx", &bad);
        for block in [1, 64, 1000, BLOCK_BYTES] {
            let msg = read(&path, block).unwrap_err().to_string();
            assert!(
                msg.contains("bad.mtx line 1514: expected a number"),
                "{block}: {msg}"
            );
        }
        let more = format!("{}2 2 1\n", big());
        let path = file(&dir, "more.mtx", &more);
        for block in [1, 64, BLOCK_BYTES] {
            let msg = read(&path, block).unwrap_err().to_string();
            assert!(
                msg.contains("more.mtx line 2016: more entries than the 2000"),
                "{msg}"
            );
        }
    }

    /// Case: a block whose values are all the same holds one (a binarised
    /// matrix's 1s), one whose values differ holds each; read in blocks of
    /// any size, the entries are the same: the same values in the same
    /// order, a value differing at the start, middle or end of a block
    /// included, and 0 and -0 told apart.
    #[test]
    fn blocks_of_one_value_hold_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("%%MatrixMarket matrix coordinate real general\n30 20 600\n");
        let mut want = (Vec::new(), Vec::new());
        for k in 0..600u32 {
            let value = match k {
                250 => "2",
                400 => "-0",
                401 => "0",
                _ => "1",
            };
            text.push_str(&format!("{} {} {value}\n", k % 30 + 1, k / 30 + 1));
            want.0.push((k % 30, k / 30));
            want.1.push(value.parse::<f64>().unwrap());
        }
        let path = file(&dir, "b.mtx", &text);
        for block in [1, 7, 64, 1000, BLOCK_BYTES] {
            let got = read(&path, block).unwrap();
            assert_eq!(got, want, "blocks of {block}");
            let bits: Vec<u64> = got.1.iter().map(|x| x.to_bits()).collect();
            assert_eq!(bits[400], (-0.0f64).to_bits(), "blocks of {block}");
        }
        let mut r = QueryMemory::unbounded("x").reserve("v", 0).unwrap();
        let whole = open(&path, ("genes", "cells"))
            .unwrap()
            .entries_in_blocks(&path, &mut r, BLOCK_BYTES)
            .unwrap();
        assert!(matches!(whole.runs[0].values, Values::Each(_)));
        let small = open(&path, ("genes", "cells"))
            .unwrap()
            .entries_in_blocks(&path, &mut r, 64)
            .unwrap();
        assert!(matches!(small.runs[0].values, Values::All(v) if v == 1.0));
    }

    /// Case: a symmetric matrix's off-diagonal entries are mirrored, its
    /// diagonal ones not; a gzip file with no final line end reads the same.
    #[test]
    fn symmetric_entries_are_mirrored() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n2 1 5\n3 3 7\n3 1 -2";
        let path = file(&dir, "s.mtx", text);
        let want = (
            vec![(1, 0), (0, 1), (2, 2), (2, 0), (0, 2)],
            vec![5.0, 5.0, 7.0, -2.0, -2.0],
        );
        assert_eq!(read(&path, 4).unwrap(), want);
        let gz = dir.path().join("s.mtx.gz");
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap();
        assert_eq!(read(&gz, BLOCK_BYTES).unwrap(), want);
        let path = file(
            &dir,
            "r.mtx",
            "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n",
        );
        let msg = read(&path, 4).err().unwrap().to_string();
        assert!(
            msg.contains("r.mtx line 2: a symmetric matrix is square"),
            "{msg}"
        );
    }
}

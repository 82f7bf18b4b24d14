//! 10x Genomics matrix directories (Cell Ranger's `filtered_feature_bc_matrix/`):
//! `matrix.mtx`, `features.tsv` (or `genes.tsv`) and `barcodes.tsv`, each
//! plain or gzip-compressed, as an input.
//!
//! The MatrixMarket file is a sparse coordinate matrix of counts with
//! features (genes) as rows and barcodes (cells) as columns; entries not
//! listed are 0. The directory becomes a table of `(gene, sample, value)`
//! triples, which the `long` layout reads with absent entries as 0 (the
//! layout and `kendall.absent = 'zero'` are implied). Gene ids are the
//! first column of `features.tsv`, sample ids the barcodes. Genes come in the
//! order of `features.tsv`; a gene or cell without any entry (all zeros) is
//! kept, as one explicit zero.
//!
//! The size line and the lengths of `features.tsv` and `barcodes.tsv` are
//! checked when the query is planned; the entries are read when the input is
//! loaded. A malformed file (bad header, an index out of range, fewer or more
//! entries than the size line says, a features or barcodes file of the
//! wrong length) is an error naming the file and the line.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, DictionaryArray, Float64Array, StringArray, UInt32Array};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::datatypes::UInt32Type;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

use super::resolved::Resolved;
use crate::input::matrix::ExpressionMatrix;
use crate::input::own_scan::{own_scan, own_table};
use crate::input::sparse::SparseValues;
use crate::input::sparse_table::schema;
use crate::memory::{QueryMemory, Reservation, try_filled, try_with_capacity};

/// Rows per batch of triples.
const BATCH_ROWS: usize = 1 << 16;

/// The three files of a 10x matrix directory.
#[derive(Debug, Clone)]
pub struct TenxFiles {
    /// The directory as the query named it.
    pub dir: String,
    matrix: PathBuf,
    features: PathBuf,
    barcodes: PathBuf,
}

/// The 10x directory `source` names, as a table of (gene, sample, value)
/// triples; `None` when it is not one.
pub(super) fn open(source: &str) -> Result<Option<Resolved>> {
    let Some(files) = detect(source)? else {
        return Ok(None);
    };
    Ok(Some(Resolved {
        provider: Arc::new(TenxTable::try_new(files)?),
        what: format!("10x directory '{source}'"),
        sparse: true,
    }))
}

/// The 10x files in `location`, when it is a local directory holding
/// `matrix.mtx[.gz]`; `None` for anything else. An error when the matrix is
/// there but a companion file is not.
pub fn detect(location: &str) -> Result<Option<TenxFiles>> {
    let path = location.strip_prefix("file://").unwrap_or(location);
    let dir = Path::new(path);
    if !dir.is_dir() {
        return Ok(None);
    }
    let find = |names: &[&str]| {
        names
            .iter()
            .flat_map(|n| [dir.join(n), dir.join(format!("{n}.gz"))])
            .find(|p| p.is_file())
    };
    let Some(matrix) = find(&["matrix.mtx"]) else {
        return Ok(None);
    };
    let features = find(&["features.tsv", "genes.tsv"]).ok_or_else(|| {
        error(format!(
            "10x directory '{location}' has {} but no features.tsv(.gz) or genes.tsv(.gz)",
            file_name(&matrix)
        ))
    })?;
    let barcodes = find(&["barcodes.tsv"]).ok_or_else(|| {
        error(format!(
            "10x directory '{location}' has {} but no barcodes.tsv(.gz)",
            file_name(&matrix)
        ))
    })?;
    Ok(Some(TenxFiles {
        dir: location.to_string(),
        matrix,
        features,
        barcodes,
    }))
}

fn error(msg: String) -> DataFusionError {
    DataFusionError::Execution(msg)
}

fn file_name(p: &Path) -> String {
    p.display().to_string()
}

/// The lines of a plain or gzip-compressed text file.
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

/// The first tab-separated field of each line of a features or barcodes file.
fn ids(path: &Path) -> Result<Vec<String>> {
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
struct MtxHeader {
    rows: usize,
    cols: usize,
    entries: usize,
    /// `pattern` matrices list positions only (value 1).
    pattern: bool,
    /// Line number of the size line.
    size_line: usize,
}

/// Reads the header and size line, leaving `reader` at the first entry.
fn header(reader: &mut dyn BufRead, path: &Path) -> Result<MtxHeader> {
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
            // Without a gene or a cell there is no (gene, cell) to list, and
            // the explicit zeros of empty genes and cells would have none
            // to pair with.
            [Some(rows), Some(cols), Some(_)] if *rows == 0 || *cols == 0 => Err(error(format!(
                "{name} line {k}: the size line says {rows} rows (genes) and {cols} columns \
                 (cells); a matrix needs at least one of each"
            ))),
            [Some(rows), Some(cols), Some(entries)] => Ok(MtxHeader {
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

/// The directory's ids, checked against the matrix's size line.
#[derive(Debug)]
struct Shape {
    genes: Vec<String>,
    cells: Vec<String>,
    header: MtxHeader,
}

/// The directory's shape, checked, and the matrix file's reader at its
/// first entry.
fn shape(files: &TenxFiles) -> Result<(Shape, Box<dyn BufRead + Send>)> {
    let mut reader = lines(&files.matrix)?;
    let header = header(&mut *reader, &files.matrix)?;
    let genes = ids(&files.features)?;
    let cells = ids(&files.barcodes)?;
    let matrix = file_name(&files.matrix);
    for (ids, what, path) in [
        (&genes, "rows", &files.features),
        (&cells, "columns", &files.barcodes),
    ] {
        let want = if what == "rows" {
            header.rows
        } else {
            header.cols
        };
        if ids.len() != want {
            return Err(error(format!(
                "{} has {} lines, but {matrix} (line {}) has {want} {what}",
                file_name(path),
                ids.len(),
                header.size_line
            )));
        }
    }
    Ok((
        Shape {
            genes,
            cells,
            header,
        },
        reader,
    ))
}

/// Bytes a `String` id takes besides its text (its `String` and the
/// allocation's rounding and header).
const ID_BYTES: usize = 48;

/// Entries of the matrix left to hand out when it is shrunk to them.
const SHRINK_ENTRIES: usize = 1 << 20;

/// A 10x matrix's entries as `(gene, cell, value)` triples, sorted for
/// reading and handed out as batches of [`BATCH_ROWS`] rows, genes in file
/// order, with one explicit zero for a gene or cell that has none. The
/// entries are reserved in the query's memory pool before they are read and
/// released as they are handed out.
struct Triples {
    /// The batches' schema (before projection).
    schema: SchemaRef,
    /// Sorted by gene, then cell, last first: the next batch is at the end.
    entries: Vec<(u32, u32, f64)>,
    /// Gene and cell ids: the dictionaries of every batch's id columns.
    genes: ArrayRef,
    cells: ArrayRef,
    /// The columns of the batches.
    projection: Vec<usize>,
    /// The entries' and ids' memory.
    reservation: Reservation,
    /// Bytes of the ids.
    id_bytes: usize,
}

/// A matrix file's entries as read (see [`parse_entries`]).
struct Parsed {
    shape: Shape,
    /// `(gene, cell, value)` in file order.
    entries: Vec<(u32, u32, f64)>,
    /// The entries' and ids' memory.
    reservation: Reservation,
    /// Bytes of the ids in `reservation`.
    id_bytes: usize,
}

/// The matrix's entries in file order (with room for an explicit zero per
/// gene and cell, and a flag for each, when `with_zeros`), reserved in
/// `memory` before they are read.
fn parse_entries(files: &TenxFiles, memory: &QueryMemory, with_zeros: bool) -> Result<Parsed> {
    let (shape, mut reader) = shape(files)?;
    let header = &shape.header;
    // Per gene and cell: room for an entry, and a byte for its flag.
    let extra = if with_zeros {
        header.rows.saturating_add(header.cols)
    } else {
        0
    };
    let path = &files.matrix;
    let name = file_name(path);
    let id_bytes = shape
        .genes
        .iter()
        .chain(&shape.cells)
        .map(|id| id.len() + ID_BYTES)
        .sum::<usize>();
    let room = header.entries.saturating_add(extra);
    let entry_bytes = room.saturating_mul(size_of::<(u32, u32, f64)>());
    let reservation = memory.reserve(
        &format!(
            "entries of {name} ({} values of {} genes x {} cells, as (gene, cell, value) \
             triples)",
            header.entries, header.rows, header.cols
        ),
        id_bytes.saturating_add(entry_bytes).saturating_add(extra),
    )?;
    let mut entries: Vec<(u32, u32, f64)> = try_with_capacity(room, "10x matrix entries")?;
    let mut buf = String::new();
    let mut k = header.size_line;
    loop {
        k += 1;
        if !next_line(&mut *reader, &mut buf, path, k)? {
            break;
        }
        let line = buf.trim();
        if line.is_empty() || line.starts_with('%') {
            continue;
        }
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
        if entries.len() == header.entries {
            return Err(error(format!(
                "{name} line {k}: more entries than the {} its size line (line {}) says",
                header.entries, header.size_line
            )));
        }
        entries.push((row, col, value));
    }
    if entries.len() != header.entries {
        return Err(error(format!(
            "{name} has {} entries, but its size line (line {}) says {}",
            entries.len(),
            header.size_line,
            header.entries
        )));
    }
    Ok(Parsed {
        shape,
        entries,
        reservation,
        id_bytes,
    })
}

/// Reads the matrix's entries (see [`Triples`]), reserving them in
/// `memory` first.
fn read_entries(
    files: &TenxFiles,
    memory: &QueryMemory,
    schema: SchemaRef,
    projection: Vec<usize>,
) -> Result<Triples> {
    let Parsed {
        shape: Shape {
            genes,
            cells,
            header,
        },
        mut entries,
        mut reservation,
        id_bytes,
    } = parse_entries(files, memory, true)?;
    let entry_bytes = entries.capacity() * size_of::<(u32, u32, f64)>();
    // Genes and cells without entries get one explicit zero.
    let (mut gene_seen, mut cell_seen) = (
        try_filled(header.rows, false, "10x genes seen")?,
        try_filled(header.cols, false, "10x cells seen")?,
    );
    for &(r, c, _) in &entries {
        gene_seen[r as usize] = true;
        cell_seen[c as usize] = true;
    }
    for (r, _) in gene_seen.iter().enumerate().filter(|(_, s)| !**s) {
        entries.push((r as u32, 0, 0.0));
    }
    for (c, _) in cell_seen.iter().enumerate().filter(|(_, s)| !**s) {
        entries.push((0, c as u32, 0.0));
    }
    drop((gene_seen, cell_seen));
    reservation.shrink_to(id_bytes + entry_bytes);
    // Gene order is features.tsv's (the long layout numbers genes as met);
    // last first, so that each batch is taken from the end (an entry given
    // twice still comes in file order).
    entries.sort_by_key(|&(r, c, _)| (r, c));
    entries.reverse();
    Ok(Triples {
        schema,
        entries,
        genes: Arc::new(StringArray::from(genes)),
        cells: Arc::new(StringArray::from(cells)),
        projection,
        reservation,
        id_bytes,
    })
}

/// The matrix as its non-zero values (the long layout's reading of it,
/// without triples): its entries grouped by gene with a counting sort, each
/// gene's in cell order; genes in the order of `features.tsv`, cells in
/// that of `barcodes.tsv`. Held dense instead when more than
/// [`SPARSE_MAX_DENSITY`](super::sparse::SPARSE_MAX_DENSITY) of the values
/// are non-zero. Reserved in `memory`;
/// at the peak the entries as read (16 bytes each) and the non-zero values
/// (12) are held at once. An entry given twice or a repeated gene or cell id
/// is an error naming it.
pub(crate) fn read_matrix(files: &TenxFiles, memory: &QueryMemory) -> Result<ExpressionMatrix> {
    let Parsed {
        shape: Shape { genes, cells, .. },
        entries,
        reservation,
        ..
    } = parse_entries(files, memory, false)?;
    let (m, n) = (genes.len(), cells.len());
    let dir = &files.dir;
    for (ids, file) in [(&genes, &files.features), (&cells, &files.barcodes)] {
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        if let Some(id) = ids.iter().find(|id| !seen.insert(id.as_str())) {
            return Err(error(format!(
                "{} names '{id}' twice (10x directory '{dir}')",
                file_name(file)
            )));
        }
    }
    if n < 2 {
        return Err(DataFusionError::Execution(format!(
            "10x directory '{dir}' has {n} cell(s); Kendall's tau needs at least 2"
        )));
    }
    let mut values_memory =
        memory.reserve(&format!("non-zero values ({m} genes x {n} cells)"), 0)?;
    values_memory.try_grow(SparseValues::bytes_for(m, entries.len(), true))?;
    // Counting sort by gene (stable: file order within a gene).
    let mut start = vec![0usize; m + 1];
    for &(g, _, _) in &entries {
        start[g as usize + 1] += 1;
    }
    for g in 0..m {
        start[g + 1] += start[g];
    }
    let mut next = start.clone();
    let mut sparse_cells = try_filled(entries.len(), 0u32, "non-zero values")?;
    let mut sparse_values = try_filled(entries.len(), 0f64, "non-zero values")?;
    for &(g, c, x) in &entries {
        let at = &mut next[g as usize];
        sparse_cells[*at] = c;
        sparse_values[*at] = x;
        *at += 1;
    }
    drop(entries);
    drop(reservation);
    // Each gene's entries in cell order (a file sorted by cell has them so),
    // none twice; zeros dropped.
    let mut kept = 0usize;
    let mut scratch: Vec<(u32, f64)> = Vec::new();
    let mut kept_start = Vec::with_capacity(m + 1);
    kept_start.push(0);
    for g in 0..m {
        let range = start[g]..start[g + 1];
        if !sparse_cells[range.clone()].is_sorted() {
            scratch.clear();
            scratch.extend(range.clone().map(|k| (sparse_cells[k], sparse_values[k])));
            scratch.sort_by_key(|&(c, _)| c);
            for (k, &(c, x)) in range.clone().zip(&scratch) {
                sparse_cells[k] = c;
                sparse_values[k] = x;
            }
        }
        for k in range {
            let (c, x) = (sparse_cells[k], sparse_values[k]);
            if k > start[g] && sparse_cells[k - 1] == c {
                return Err(error(format!(
                    "{} gives gene '{}', cell '{}' twice (10x directory '{dir}')",
                    file_name(&files.matrix),
                    genes[g],
                    cells[c as usize]
                )));
            }
            if x != 0.0 {
                sparse_cells[kept] = c;
                sparse_values[kept] = x;
                kept += 1;
            }
        }
        kept_start.push(kept);
    }
    sparse_cells.truncate(kept);
    sparse_values.truncate(kept);
    sparse_cells.shrink_to_fit();
    sparse_values.shrink_to_fit();
    let sparse = SparseValues::from_vecs(kept_start, sparse_cells, sparse_values, Vec::new());
    values_memory.shrink_to(sparse.heap_bytes());
    ExpressionMatrix::from_sparse(StringArray::from(genes), cells, sparse, values_memory)
        .dense_above_max_density(memory)
}

/// The 10x directory a plan reads, when the plan is a [`TenxExec`] (see
/// [`own_scan`]: also one that went through the FFI and came back, not a
/// plan that filters, projects or copies its rows), so that the long layout
/// reads its matrix with [`read_matrix`].
pub(crate) fn files_of(plan: &dyn ExecutionPlan) -> Option<Arc<TenxFiles>> {
    own_scan::<TenxExec>(plan).map(|scan| Arc::clone(&scan.files))
}

/// Whether `provider` is a 10x directory's table itself (not a table
/// derived from one).
pub(crate) fn is_tenx_table(provider: &dyn TableProvider) -> bool {
    own_table::<TenxTable>(provider).is_some()
}

impl Triples {
    /// The next batch, taken off the end of the entries.
    fn batch(&mut self) -> Result<RecordBatch> {
        let len = self.entries.len();
        let chunk = &self.entries[len - len.min(BATCH_ROWS)..];
        // Ids as keys into the shared dictionaries: the long layout numbers
        // a dictionary's ids once.
        let ids = |ids: &ArrayRef, pick: &dyn Fn(&(u32, u32, f64)) -> u32| -> Result<ArrayRef> {
            let keys = UInt32Array::from_iter_values(chunk.iter().rev().map(pick));
            Ok(Arc::new(DictionaryArray::<UInt32Type>::try_new(
                keys,
                Arc::clone(ids),
            )?) as ArrayRef)
        };
        let gene = ids(&self.genes, &|e| e.0)?;
        let cell = ids(&self.cells, &|e| e.1)?;
        let value: ArrayRef = Arc::new(Float64Array::from_iter_values(
            chunk.iter().rev().map(|e| e.2),
        ));
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), vec![gene, cell, value])?;
        self.entries.truncate(len - chunk.len());
        if self.entries.capacity() - self.entries.len() >= SHRINK_ENTRIES {
            self.entries.shrink_to_fit();
            self.reservation
                .shrink_to(self.id_bytes + self.entries.capacity() * size_of::<(u32, u32, f64)>());
        }
        Ok(batch.project(&self.projection)?)
    }
}

impl Iterator for Triples {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        (!self.entries.is_empty()).then(|| self.batch())
    }
}

/// Every entry of the matrix as `(gene, cell, value)` triples (see
/// [`Triples`]), all batches at once.
#[cfg(test)]
fn read_triples(files: &TenxFiles) -> Result<Vec<RecordBatch>> {
    read_entries(files, &QueryMemory::unbounded("x"), schema(), vec![0, 1, 2])?.collect()
}

/// A 10x matrix directory as a table of `(gene, sample, value)` triples.
#[derive(Debug)]
pub struct TenxTable {
    files: Arc<TenxFiles>,
}

impl TenxTable {
    /// The table over `files`, its shape checked now (the header, size line
    /// and the lengths of the features and barcodes files).
    pub fn try_new(files: TenxFiles) -> Result<Self> {
        // Read again when the input is loaded, as every source is.
        shape(&files)?;
        Ok(Self {
            files: Arc::new(files),
        })
    }
}

#[async_trait]
impl TableProvider for TenxTable {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection.cloned().unwrap_or_else(|| vec![0, 1, 2]);
        let full = schema();
        let schema = Arc::new(full.project(&projection)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Arc::new(TenxExec {
            files: Arc::clone(&self.files),
            full,
            projection,
            schema,
            properties: Arc::new(properties),
        }))
    }
}

/// Reads a 10x directory's triples (on a blocking thread) when executed.
#[derive(Debug)]
pub struct TenxExec {
    files: Arc<TenxFiles>,
    /// The table's schema (the batches' before projection).
    full: SchemaRef,
    projection: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for TenxExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "TenxExec: dir='{}', matrix={}",
            self.files.dir,
            file_name(&self.files.matrix)
        )
    }
}

impl ExecutionPlan for TenxExec {
    fn name(&self) -> &str {
        "TenxExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (files, projection) = (Arc::clone(&self.files), self.projection.clone());
        let full = Arc::clone(&self.full);
        let memory = QueryMemory::new(
            Arc::clone(context.memory_pool()),
            "10x reader",
            &format!("10x directory '{}'", files.dir),
        );
        let read = async move {
            let triples = tokio::task::spawn_blocking(move || {
                read_entries(&files, &memory, full, projection)
            })
            .await
            .map_err(|e| error(format!("reading the 10x directory failed: {e}")))??;
            Ok::<_, DataFusionError>(futures::stream::iter(triples))
        };
        let stream = futures::TryStreamExt::try_flatten(futures::stream::once(read));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use std::io::Write;

    fn dir_with(matrix: &str, features: &str, barcodes: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("matrix.mtx", matrix),
            ("features.tsv", features),
            ("barcodes.tsv", barcodes),
        ] {
            File::create(dir.path().join(name))
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        dir
    }

    const HEAD: &str = "%%MatrixMarket matrix coordinate integer general\n%comment\n";

    fn read(dir: &tempfile::TempDir) -> Result<Vec<RecordBatch>> {
        let files = detect(dir.path().to_str().unwrap())?.expect("a 10x directory");
        read_triples(&files)
    }

    #[test]
    fn triples_in_gene_order_with_empty_genes_and_cells_kept() {
        let dir = dir_with(
            &format!("{HEAD}3 3 3\n2 1 5\n1 2 7\n1 1 1\n"),
            "g1\tA\tGene Expression\ng2\tB\tGene Expression\ng3\tC\tGene Expression\n",
            "c1\nc2\nc3\n",
        );
        let batches = read(&dir).unwrap();
        let b = &batches[0];
        let strings = |c: usize| -> Vec<String> {
            let text = datafusion::arrow::compute::cast(
                b.column(c),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            text.as_string::<i32>()
                .iter()
                .map(|s| s.unwrap().to_string())
                .collect()
        };
        let (genes, cells) = (strings(0), strings(1));
        let values = b
            .column(2)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .values()
            .to_vec();
        // g3 and c3 have no entries: one explicit zero each.
        assert_eq!(genes, ["g1", "g1", "g1", "g2", "g3"]);
        assert_eq!(cells, ["c1", "c2", "c3", "c1", "c1"]);
        assert_eq!(values, [1.0, 7.0, 0.0, 5.0, 0.0]);
    }

    #[test]
    fn malformed_files_name_file_and_line() {
        let f = "g1\ng2\n";
        let c = "c1\nc2\n";
        for (matrix, features, barcodes, needles) in [
            (
                "%%MatrixMarket matrix array real general\n2 2\n",
                f,
                c,
                vec!["matrix.mtx line 1", "coordinate"],
            ),
            (
                &format!("{HEAD}2 2 x\n") as &str,
                f,
                c,
                vec!["line 3", "size line"],
            ),
            (
                &format!("{HEAD}2 2 1\n3 1 4\n"),
                f,
                c,
                vec!["line 4", "row index 3 out of range 1..=2"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 0 4\n"),
                f,
                c,
                vec!["line 4", "column index 0"],
            ),
            (
                &format!("{HEAD}2 2 2\n1 1 4\n"),
                f,
                c,
                vec!["has 1 entries", "line 3", "says 2"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 4\n2 2 1\n"),
                f,
                c,
                vec!["line 5", "more entries"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 four\n"),
                f,
                c,
                vec!["line 4", "'four'"],
            ),
            // No genes, or no cells: not an index out of range when the
            // cells (genes) without entries get their explicit zero.
            (
                &format!("{HEAD}0 2 0\n") as &str,
                "",
                c,
                vec!["matrix.mtx line 3", "0 rows (genes) and 2 columns"],
            ),
            (
                &format!("{HEAD}2 0 0\n"),
                f,
                "",
                vec!["matrix.mtx line 3", "2 rows (genes) and 0 columns"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 4\n"),
                "g1\n",
                c,
                vec!["features.tsv has 1 lines", "2 rows", "line 3"],
            ),
            (
                &format!("{HEAD}2 2 1\n1 1 4\n"),
                f,
                "c1\nc2\nc3\n",
                vec!["barcodes.tsv has 3 lines", "2 columns"],
            ),
        ] {
            let dir = dir_with(matrix, features, barcodes);
            let msg = read(&dir).unwrap_err().to_string();
            for n in needles {
                assert!(msg.contains(n), "'{n}' missing from: {msg}");
            }
        }
    }

    #[test]
    fn gzip_files_and_missing_companions() {
        let dir = tempfile::tempdir().unwrap();
        let gz = |name: &str, text: &str| {
            let mut e = flate2::write::GzEncoder::new(
                File::create(dir.path().join(name)).unwrap(),
                flate2::Compression::default(),
            );
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap();
        };
        gz("matrix.mtx.gz", &format!("{HEAD}2 2 2\n1 1 3\n2 2 4\n"));
        gz("features.tsv.gz", "g1\tA\ng2\tB\n");
        let path = dir.path().to_str().unwrap();
        let msg = detect(path).unwrap_err().to_string();
        assert!(msg.contains("no barcodes.tsv"), "{msg}");
        gz("barcodes.tsv.gz", "c1\nc2\n");
        let files = detect(path).unwrap().unwrap();
        let batches = read_triples(&files).unwrap();
        assert_eq!(batches[0].num_rows(), 2);
        assert!(detect("tests").unwrap().is_none());
        assert!(detect("Cargo.toml").unwrap().is_none());
    }
}

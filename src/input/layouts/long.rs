//! The long (tidy) layout: one row per (gene, sample, value); 10x
//! directories are read as this layout with absent entries 0.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::error::Result;

use super::grow;
use crate::error::{data_error, plan_error};
use crate::input::matrix::ExpressionMatrix;
use crate::input::missing::MissingValues;
use crate::input::names::{ID_OVERHEAD, column_list, is_string, is_text};
use crate::input::read::InputBatches;
use crate::input::sparse::{RepeatedSample, SPARSE_MAX_DENSITY, SparseValues};
use crate::input::spec::{Absent, Columns, InputSpec};
use crate::input::values::{Exact, NumericColumn, ValueBuffer};
use crate::memory::{Reservation, try_filled};

/// Default column names of the long layout: gene, sample, value.
const LONG_DEFAULTS: [&str; 3] = ["gene", "sample", "value"];

/// Checks a long input: gene, sample and value columns, named by `names`
/// or by default `gene`, `sample`, `value`.
pub(in crate::input) fn inspect_long(
    what: &str,
    schema: &SchemaRef,
    names: &[String],
    missing: MissingValues,
    absent: Absent,
) -> Result<InputSpec> {
    if names.len() > 3 {
        return Err(plan_error(format!(
            "layout 'long' takes (source [, gene_column [, sample_column [, value_column]]]), got {} column names",
            names.len()
        )));
    }
    let name = |k: usize| {
        names
            .get(k)
            .map_or(LONG_DEFAULTS[k], String::as_str)
            .to_string()
    };
    let (gene, sample, value) = (name(0), name(1), name(2));
    let mut projection = Vec::new();
    for (role, column) in [("gene", &gene), ("sample", &sample), ("value", &value)] {
        let (index, field) = schema.column_with_name(column).ok_or_else(|| {
            plan_error(format!(
                "{role} column '{column}' not found in {what} (columns: {}); with layout 'long' name them \
                 after the source: (source, 'gene_column', 'sample_column', 'value_column')",
                column_list(schema)
            ))
        })?;
        projection.push(index);
        let dt = field.data_type();
        let ok = match role {
            "value" => dt.is_integer() || dt.is_floating(),
            _ => is_text(dt) || dt.is_integer(),
        };
        if !ok {
            let want = match role {
                "value" => "an integer or floating-point number",
                _ => "a string, an integer or a dictionary of strings",
            };
            return Err(plan_error(format!(
                "{role} column '{column}' in {what} has type {dt}; it must be {want}"
            )));
        }
    }
    Ok(InputSpec {
        what: what.to_string(),
        genes: None,
        samples: None,
        columns: Columns::Long {
            gene,
            sample,
            value,
            absent,
        },
        projection,
        missing,
    })
}

/// Distinct ids of a long input, numbered in order of first appearance.
#[derive(Debug, Default)]
struct IdIndex {
    index: HashMap<String, u32>,
    names: Vec<String>,
    /// Bytes the ids take (each twice, see [`ID_OVERHEAD`]).
    bytes: usize,
    /// Numbers of the integer ids below [`SMALL_INTEGERS`] met so far, by
    /// value (`u32::MAX` where not met): cell and feature positions.
    small: Vec<u32>,
    /// The last dictionary of ids met and the numbers of its entries
    /// (`u32::MAX` where not met): batches sharing a dictionary (a 10x
    /// directory's) number each entry once.
    dictionary: Option<(ArrayRef, Vec<u32>)>,
}

/// Integer ids below this are numbered through [`IdIndex::small`].
const SMALL_INTEGERS: i64 = 1 << 24;

impl IdIndex {
    /// The number of `key`, given to it now if it is new.
    fn number(&mut self, key: &str, role: &str, what: &str) -> Result<u32> {
        if let Some(&k) = self.index.get(key) {
            return Ok(k);
        }
        let k = u32::try_from(self.names.len()).map_err(|_| {
            data_error(format!(
                "{what} has more than {} distinct {role} ids",
                u32::MAX
            ))
        })?;
        self.names.push(key.to_string());
        self.index.insert(key.to_string(), k);
        self.bytes += 2 * key.len() + ID_OVERHEAD;
        Ok(k)
    }

    /// The numbers of the ids in column `name` of `batch` (`row0` rows
    /// before it), new ones numbered in row order; a null id is an error
    /// naming its row. Ids are strings, integers (named by their decimal
    /// text) or dictionaries of strings; an integer or a dictionary entry
    /// is looked up once, not once per row as text.
    fn number_column(
        &mut self,
        batch: &RecordBatch,
        name: &str,
        [role, what]: [&str; 2],
        row0: usize,
    ) -> Result<Vec<u32>> {
        let column = batch
            .column_by_name(name)
            .ok_or_else(|| data_error(format!("column '{name}' missing from {what}")))?;
        let null = (column.null_count() > 0)
            .then(|| (0..column.len()).find(|&r| column.is_null(r)))
            .flatten();
        if let Some(r) = null {
            return Err(data_error(format!(
                "null in column '{name}' in row {} of {what}",
                row0 + r + 1
            )));
        }
        match column.data_type() {
            DataType::Dictionary(_, value) if is_string(value) => {
                let dictionary = column.as_any_dictionary();
                let (mut numbers, known) = match self.dictionary.take() {
                    Some((known, numbers)) if Arc::ptr_eq(&known, dictionary.values()) => {
                        (numbers, known)
                    }
                    _ => (
                        vec![u32::MAX; dictionary.values().len()],
                        Arc::clone(dictionary.values()),
                    ),
                };
                let values = cast(dictionary.values(), &DataType::Utf8)?;
                let values = values.as_string::<i32>();
                let found = dictionary
                    .normalized_keys()
                    .into_iter()
                    .map(|key| {
                        if numbers[key] == u32::MAX {
                            numbers[key] = self.number(values.value(key), role, what)?;
                        }
                        Ok(numbers[key])
                    })
                    .collect();
                self.dictionary = Some((known, numbers));
                found
            }
            dt if dt.is_integer() => {
                let ints = cast(column, &DataType::Int64)?;
                ints.as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .map(|&v| {
                        if !(0..SMALL_INTEGERS).contains(&v) {
                            return self.number(&v.to_string(), role, what);
                        }
                        let slot = v as usize;
                        if slot >= self.small.len() {
                            self.small.resize(slot + 1, u32::MAX);
                        }
                        if self.small[slot] == u32::MAX {
                            self.small[slot] = self.number(&v.to_string(), role, what)?;
                        }
                        Ok(self.small[slot])
                    })
                    .collect()
            }
            DataType::Utf8View => {
                let text = column.as_string_view();
                // Equal views are equal ids (an id of up to 12 bytes is
                // held in its view, a longer one names the same bytes of
                // the same buffer): runs are found without reading bytes.
                let views = text.views();
                self.number_strings(text.len(), |r| views[r], |r| text.value(r), [role, what])
            }
            DataType::LargeUtf8 => {
                let text = column.as_string::<i64>();
                self.number_strings(
                    text.len(),
                    |r| text.value(r),
                    |r| text.value(r),
                    [role, what],
                )
            }
            _ => {
                let text = cast(column, &DataType::Utf8)?;
                let text = text.as_string::<i32>();
                self.number_strings(
                    text.len(),
                    |r| text.value(r),
                    |r| text.value(r),
                    [role, what],
                )
            }
        }
    }

    /// The numbers of `rows` ids `id(r)`: a run of rows with one id (a
    /// file sorted by gene) is looked up once, rows of equal `same(r)`
    /// being taken as one id (the text itself, or a string view).
    fn number_strings<'a, K: PartialEq>(
        &mut self,
        rows: usize,
        same: impl Fn(usize) -> K,
        id: impl Fn(usize) -> &'a str,
        [role, what]: [&str; 2],
    ) -> Result<Vec<u32>> {
        let mut numbers = Vec::with_capacity(rows);
        let mut last: Option<(K, u32)> = None;
        for r in 0..rows {
            let key = same(r);
            let k = match &last {
                Some((previous, k)) if *previous == key => *k,
                _ => self.number(id(r), role, what)?,
            };
            last = Some((key, k));
            numbers.push(k);
        }
        Ok(numbers)
    }

    fn len(&self) -> usize {
        self.names.len()
    }
}

/// What is wrong with gene `g` of a long input, whose rows are not one per
/// sample: a sample given twice (both rows named), else a sample without a
/// row. `cells` are the (gene, sample) numbers of the rows, in row order.
fn gene_problem(
    cells: &[(u32, u32)],
    g: u32,
    genes: &IdIndex,
    samples: &IdIndex,
    what: &str,
) -> String {
    let name = &genes.names[g as usize];
    let mut first: HashMap<u32, usize> = HashMap::new();
    for (row, &(gene, s)) in cells.iter().enumerate() {
        if gene != g {
            continue;
        }
        if let Some(&row0) = first.get(&s) {
            return format!(
                "gene '{name}' has two values for sample '{}': row {} and row {} of {what}",
                samples.names[s as usize],
                row0 + 1,
                row + 1
            );
        }
        first.insert(s, row);
    }
    match (0..samples.len() as u32).find(|s| !first.contains_key(s)) {
        Some(s) => format!(
            "gene '{name}' has no value for sample '{}' in {what}",
            samples.names[s as usize]
        ),
        None => format!("gene '{name}' has not one row per sample in {what}"),
    }
}

/// Reads a long input into `values` in one pass: ids are numbered in order
/// of first appearance and each row kept as (gene, sample, value) until
/// all are read. Every gene must have one row for every sample; that is
/// checked on the counts before the genes × samples matrix is allocated, so
/// a sparse input (a few samples per gene) fails without allocating it.
///
/// Four stages: the rows read ([`LongRows::read`]), the counts checked
/// ([`LongRows::check_counts`]), then the matrix built sparse
/// ([`LongRows::into_sparse`]: absent rows are zeros and most values are)
/// or dense ([`LongRows::into_dense`]).
pub(in crate::input) fn load_long(
    spec: &InputSpec,
    batches: InputBatches,
    [gene, sample, value]: [&str; 3],
    absent: Absent,
    values: ValueBuffer,
    mut scratch: Reservation,
) -> Result<ExpressionMatrix> {
    let rows = LongRows::read(spec, batches, [gene, sample, value], &mut scratch)?;
    rows.check_counts(absent, sample, &spec.what)?;
    if absent == Absent::Zero && rows.sparse_enough() {
        rows.into_sparse(values.reservation, &mut scratch, &spec.what)
    } else {
        rows.into_dense(absent, values, &mut scratch, &spec.what)
    }
}

/// The rows of a long input as read: each one's (gene, sample) numbers and
/// its value, and the ids behind the numbers.
struct LongRows {
    genes: IdIndex,
    samples: IdIndex,
    /// Per row, its (gene, sample) numbers.
    cells: Vec<(u32, u32)>,
    /// Per row, its value as read.
    read: Vec<f64>,
    /// Per row, what a 64-bit integer lost as f64; empty while every value
    /// so far was exact.
    read_residuals: Vec<i16>,
    /// Some value so far was not exact (`read_residuals` are then kept).
    inexact: bool,
    /// Per gene, how many rows name it.
    rows_per_gene: Vec<u64>,
    /// Bytes of the ids reserved in the load's scratch reservation.
    ids_held: usize,
}

impl LongRows {
    /// Reads every batch, the rows' arrays and the ids reserved in `scratch`
    /// (a batch's new ids once it is read).
    fn read(
        spec: &InputSpec,
        batches: InputBatches,
        [gene, sample, value]: [&str; 3],
        scratch: &mut Reservation,
    ) -> Result<Self> {
        let what = spec.what.as_str();
        let mut rows = LongRows {
            genes: IdIndex::default(),
            samples: IdIndex::default(),
            cells: Vec::new(),
            read: Vec::new(),
            read_residuals: Vec::new(),
            inexact: false,
            rows_per_gene: Vec::new(),
            ids_held: 0,
        };
        let mut row0 = 0usize;
        for batch in batches {
            let batch = batch?;
            let gene_numbers = rows
                .genes
                .number_column(&batch, gene, ["gene", what], row0)?;
            let sample_numbers =
                rows.samples
                    .number_column(&batch, sample, ["sample", what], row0)?;
            let column = NumericColumn::read(&batch, value, what)?;
            rows.push_batch(spec, &gene_numbers, &sample_numbers, &column, row0, scratch)?;
            let ids = rows.genes.bytes + rows.samples.bytes;
            scratch.try_grow(ids - rows.ids_held)?;
            rows.ids_held = ids;
            row0 += batch.num_rows();
        }
        Ok(rows)
    }

    /// Appends the rows of one batch: their (gene, sample) numbers and
    /// `column`'s values (checked as `spec.missing` says; `row0` rows came
    /// before them).
    fn push_batch(
        &mut self,
        spec: &InputSpec,
        gene_numbers: &[u32],
        sample_numbers: &[u32],
        column: &NumericColumn,
        row0: usize,
        scratch: &mut Reservation,
    ) -> Result<()> {
        let what = spec.what.as_str();
        let rows = gene_numbers.len();
        grow(&mut self.cells, rows, scratch, "(gene, sample) ids as read")?;
        grow(&mut self.read, rows, scratch, "input values as read")?;
        self.rows_per_gene.resize(self.genes.len(), 0);
        // The common case, floats without nulls, all finite (one
        // vectorised pass), while every value so far was exact: the rows
        // taken whole, as the loop below would take them one by one.
        if let (NumericColumn::Float(floats), false) = (column, self.inexact)
            && floats.null_count() == 0
            && floats.values().iter().all(|x| x.is_finite())
        {
            for &g in gene_numbers {
                self.rows_per_gene[g as usize] += 1;
            }
            self.cells.extend(
                gene_numbers
                    .iter()
                    .zip(sample_numbers)
                    .map(|(&g, &s)| (g, s)),
            );
            self.read.extend_from_slice(floats.values());
            return Ok(());
        }
        for r in 0..rows {
            let (g, s) = (gene_numbers[r], sample_numbers[r]);
            self.rows_per_gene[g as usize] += 1;
            self.cells.push((g, s));
            let x = column.value(r, spec.missing, || {
                format!(
                    "gene '{}', sample '{}' (row {} of {what})",
                    self.genes.names[g as usize],
                    self.samples.names[s as usize],
                    row0 + r + 1
                )
            })?;
            if x.residual != 0 && !self.inexact {
                // The first value f64 cannot hold: remainders from now on.
                self.inexact = true;
                grow(
                    &mut self.read_residuals,
                    self.read.capacity(),
                    scratch,
                    "input values as read",
                )?;
                self.read_residuals.resize(self.read.len(), 0);
            }
            self.read.push(x.value);
            if self.inexact {
                self.read_residuals.push(x.residual);
            }
        }
        Ok(())
    }

    /// Checks the counts before any matrix is built: at least two samples,
    /// and every gene with every sample once (rows = genes × samples), so a
    /// sparse input fails here unless absent rows have a meaning (then only
    /// a sample given twice is wrong). `sample` names the sample column.
    fn check_counts(&self, absent: Absent, sample: &str, what: &str) -> Result<()> {
        let (m, n) = (self.genes.len(), self.samples.len());
        if n < 2 {
            return Err(data_error(format!(
                "{what} has {n} distinct sample(s) in column '{sample}'; Kendall's tau needs at least 2"
            )));
        }
        let complete = |&r: &u64| match absent {
            Absent::Error => r != n as u64,
            Absent::Zero | Absent::Missing => r > n as u64,
        };
        if let Some(g) = self.rows_per_gene.iter().position(complete) {
            let problem = self.gene_problem(g as u32, what);
            return Err(data_error(format!(
                "{problem}; with layout 'long' every gene needs one row for every sample (a null \
                 value marks it missing; SET kendall.absent = 'zero' reads absent rows as 0, as \
                 sparse counts list them, or 'missing'), and {what} has {} rows for {m} genes x \
                 {n} samples ({} values)",
                self.cells.len(),
                m as u128 * n as u128
            )));
        }
        Ok(())
    }

    /// What is wrong with gene `g` (see [`gene_problem`]).
    fn gene_problem(&self, g: u32, what: &str) -> String {
        gene_problem(&self.cells, g, &self.genes, &self.samples, what)
    }

    /// The residual of row `k` (0 while every value was exact).
    fn residual(&self, k: usize) -> i16 {
        self.read_residuals.get(k).copied().unwrap_or(0)
    }

    /// Whether the rows may be kept sparse when absent rows are zeros: no
    /// value is missing and at most [`SPARSE_MAX_DENSITY`] of the genes ×
    /// samples values are non-zero.
    fn sparse_enough(&self) -> bool {
        let (m, n) = (self.genes.len(), self.samples.len());
        let nonzero = (0..self.read.len())
            .filter(|&k| self.read[k] != 0.0 || self.residual(k) != 0)
            .count();
        let no_missing = self.read.iter().all(|x| !x.is_nan());
        no_missing && nonzero as f64 <= SPARSE_MAX_DENSITY * m as f64 * n as f64
    }

    /// Numbers the samples in order of their ids (integers by value), not
    /// as met: two inputs then number their shared samples alike (stacking
    /// them copies nothing), and rows sorted by gene and sample id come
    /// sorted (nothing to sort).
    fn number_samples_by_id(&mut self) {
        let n = self.samples.len();
        let samples = &self.samples;
        let mut by_id: Vec<u32> = (0..n as u32).collect();
        let id_key = |s: u32| {
            let name = &samples.names[s as usize];
            (name.parse::<i64>().ok(), name)
        };
        by_id.sort_by(|&a, &b| id_key(a).cmp(&id_key(b)));
        if by_id
            .iter()
            .enumerate()
            .all(|(new, &old)| new as u32 == old)
        {
            return;
        }
        let mut renumber = vec![0u32; n];
        for (new, &old) in by_id.iter().enumerate() {
            renumber[old as usize] = new as u32;
        }
        for cell in self.cells.iter_mut() {
            cell.1 = renumber[cell.1 as usize];
        }
        let mut names = std::mem::take(&mut self.samples.names);
        self.samples.names = by_id
            .iter()
            .map(|&old| std::mem::take(&mut names[old as usize]))
            .collect();
        self.samples.index.clear();
    }

    /// The matrix kept sparse, nothing of size genes × samples allocated
    /// (`input::sparse`), its values reserved in `reservation`.
    fn into_sparse(
        mut self,
        mut reservation: Reservation,
        scratch: &mut Reservation,
        what: &str,
    ) -> Result<ExpressionMatrix> {
        self.number_samples_by_id();
        let (m, n) = (self.genes.len(), self.samples.len());
        let sparse = if self.cells.is_sorted_by(|a, b| a < b) {
            // Rows by gene, then sample (as most files come): their arrays
            // become the matrix's, and move from `scratch` (which keeps the
            // ids) to the matrix's reservation.
            scratch.shrink_to(self.ids_held);
            let (cells, read, residuals) = (
                std::mem::take(&mut self.cells),
                std::mem::take(&mut self.read),
                std::mem::take(&mut self.read_residuals),
            );
            SparseValues::from_sorted_triples(m, cells, read, residuals, &mut reservation)?
        } else {
            let triples = SparseValues::from_triples(
                (m, n),
                &self.cells,
                &self.read,
                &self.read_residuals,
                &mut reservation,
            )?;
            match triples {
                Ok(sparse) => sparse,
                Err(RepeatedSample { gene: g }) => {
                    let problem = self.gene_problem(g, what);
                    return Err(data_error(format!(
                        "{problem}; with layout 'long' a gene has at most one row per sample"
                    )));
                }
            }
        };
        Ok(ExpressionMatrix::from_sparse(
            StringArray::from_iter_values(&self.genes.names),
            self.samples.names,
            sparse,
            reservation,
        ))
    }

    /// The matrix dense: every row's value scattered into its (gene,
    /// sample) cell of `values`, cells without a row missing when `absent`
    /// says so (zero when it says zero); a cell given twice is an error.
    fn into_dense(
        self,
        absent: Absent,
        mut values: ValueBuffer,
        scratch: &mut Reservation,
        what: &str,
    ) -> Result<ExpressionMatrix> {
        let (m, n) = (self.genes.len(), self.samples.len());
        let matrix_cells = m.checked_mul(n).ok_or_else(|| {
            data_error(format!(
                "{what} has {m} genes x {n} samples, more than memory can address"
            ))
        })?;
        values.grow_to(matrix_cells)?;
        if absent == Absent::Missing {
            // Every cell missing until its row is read.
            for cell in 0..matrix_cells {
                values.set(cell, Exact::MISSING)?;
            }
        }
        // One bit per (gene, sample): a sample given twice leaves another
        // unset, and is found when it comes again.
        let words = matrix_cells.div_ceil(64);
        scratch.try_grow(words * 8)?;
        let mut seen = try_filled(words, 0u64, "bitmap of (gene, sample) rows")?;
        for (k, &(g, s)) in self.cells.iter().enumerate() {
            let x = Exact {
                value: self.read[k],
                residual: self.residual(k),
            };
            let cell = g as usize * n + s as usize;
            if seen[cell / 64] >> (cell % 64) & 1 == 1 {
                let problem = self.gene_problem(g, what);
                return Err(data_error(format!(
                    "{problem}; with layout 'long' a gene has at most one row per sample"
                )));
            }
            seen[cell / 64] |= 1 << (cell % 64);
            values.set(cell, x)?;
        }
        Ok(ExpressionMatrix::new(
            StringArray::from_iter_values(&self.genes.names),
            n,
            values,
            self.samples.names,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{StringViewArray, StringViewBuilder};
    use datafusion::arrow::datatypes::{Field, Schema};

    /// Ids read from string views (runs recognised by their views) are
    /// numbered as the same ids read as strings: short and long ids, runs,
    /// a long id repeated in another view, an id coming back later.
    #[test]
    fn ids_from_string_views_number_as_strings() {
        let long = "a_gene_name_longer_than_twelve_bytes";
        let ids = [
            "a",
            "a",
            long,
            long,
            "b",
            long,
            "a",
            "b",
            "twelve_bytes",
            "twelve_bytes",
            "x",
        ];
        let number = |array: ArrayRef| {
            let schema = Arc::new(Schema::new(vec![Field::new(
                "gene",
                array.data_type().clone(),
                false,
            )]));
            let batch = RecordBatch::try_new(schema, vec![array]).unwrap();
            let mut index = IdIndex::default();
            let numbers = index
                .number_column(&batch, "gene", ["gene", "test"], 0)
                .unwrap();
            (numbers, index.names)
        };
        let views = number(Arc::new(StringViewArray::from_iter_values(ids)));
        let strings = number(Arc::new(StringArray::from_iter_values(ids)));
        assert_eq!(views, strings);
        // A long id written once, its repeats sharing its bytes (equal
        // views), as a reader that deduplicates writes them.
        let mut shared = StringViewBuilder::new().with_deduplicate_strings();
        for id in ids {
            shared.append_value(id);
        }
        let shared = shared.finish();
        assert_eq!(shared.views()[2], shared.views()[3]);
        assert_eq!(number(Arc::new(shared)), strings);
        assert_eq!(views.0, vec![0, 0, 1, 1, 2, 1, 0, 2, 3, 3, 4]);
    }
}

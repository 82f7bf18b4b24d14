//! A candidate list: the pairs `kendall_candidate_pairs` computes, read
//! from any source (table, view, file) whose first two columns are the ids
//! of `gene_i` and `gene_j`, and turned into gene positions once the
//! matrix (or the two stacked matrices) is loaded.
//!
//! The rules, as a join of the list with the matrices would have them:
//! - a listed pair naming a gene the matrix does not have (or a NULL id) is
//!   left out; a list none of whose pairs names two genes is an error (it
//!   is read by its first two columns: another column order is the usual
//!   cause);
//! - a pair listed more than once is computed once; in one matrix `(a, b)`
//!   and `(b, a)` are the same pair, reported as first listed;
//! - in one matrix a gene with itself is no pair, and is left out;
//! - an empty list gives no rows.
//!
//! For `kendall_candidate_taus` each line also keeps its pair (or none), so
//! that the lines can be answered in the list's order.

use std::collections::HashMap;
use std::hash::BuildHasher;

use datafusion::arrow::array::builder::make_view;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, StringArray, StringViewArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema};
use datafusion::common::plan_err;
use datafusion::error::Result;
use rayon::prelude::*;

use super::read::InputBatches;
use crate::error::plan_error;
use crate::memory::{QueryMemory, Reservation};

/// The pairs of a candidate list, as gene positions, sorted by first gene:
/// pair `k` is `(first[k], second[k])`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ListedPairs {
    /// First genes (`gene_i`), ascending.
    pub first: Vec<u32>,
    /// Second genes (`gene_j`), ascending within a first gene.
    pub second: Vec<u32>,
    /// When asked for: the pair of each line (row) of the list, in its
    /// order, or [`ListedPairs::NO_PAIR`] for a line naming none.
    pub lines: Vec<u32>,
}

impl ListedPairs {
    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// Whether no pair is listed.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// A line of [`ListedPairs::lines`] that names no pair of the genes (an
    /// unknown or NULL id, a gene with itself).
    pub const NO_PAIR: u32 = u32::MAX;

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        (self.first.capacity() + self.second.capacity() + self.lines.capacity())
            * std::mem::size_of::<u32>()
    }
}

/// Where a candidate list is read from: its source and its two id columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairListSpec {
    /// How errors name the list (`table 'cand'`, `'cand.parquet'`).
    pub what: String,
    /// The id columns of `gene_i` and `gene_j`.
    pub columns: [String; 2],
}

impl PairListSpec {
    /// The list read from the first two columns of `schema`, which must hold
    /// ids: strings or integers.
    pub fn inspect(what: &str, schema: &Schema) -> Result<Self> {
        let columns = first_two_ids(schema).map_err(|bad| match bad {
            NotIds::Few(n) => plan_error(format!(
                "the candidate list {what} has {n} column(s); its first two columns must be the \
                 ids of gene_i and gene_j"
            )),
            NotIds::Type(name, t) => plan_error(format!(
                "column '{name}' of the candidate list {what} has type {t}; the first two \
                 columns must be gene ids (strings or integers)"
            )),
        })?;
        Ok(Self {
            what: what.to_string(),
            columns,
        })
    }

    /// Reads the list from `batches` (the two id columns) and finds each
    /// id among `genes`: the first id among positions `first_genes`, the
    /// second among `second_genes` (the same range for one matrix; left and
    /// right for two stacked ones); with `lines`, also each line's pair
    /// ([`ListedPairs::lines`]). The pairs are reserved in `memory`, in
    /// the reservation returned with them.
    pub fn read(
        &self,
        batches: InputBatches,
        genes: &StringArray,
        first_genes: std::ops::Range<usize>,
        second_genes: std::ops::Range<usize>,
        lines: bool,
        memory: &QueryMemory,
    ) -> Result<(ListedPairs, Reservation)> {
        let one_matrix = first_genes == second_genes;
        let first_index = IdIndex::new(genes, first_genes.clone());
        let second_index = if one_matrix {
            None
        } else {
            Some(IdIndex::new(genes, second_genes))
        };
        let second_of = second_index.as_ref().unwrap_or(&first_index);
        let mut reservation = memory.reserve(&format!("candidate pairs of {}", self.what), 0)?;
        // first << 32 | second of every pair naming two genes, in listed
        // order.
        let mut found: Vec<u64> = Vec::new();
        // With `lines`: every line's key (NONE for no pair), in order.
        let mut line_keys: Vec<u64> = Vec::new();
        let (mut listed, mut example) = (0u64, None);
        // A pair that names no two genes (genes are fewer than u32::MAX).
        const NONE: u64 = u64::MAX;
        let mut batches = batches;
        let mut next = batches.next();
        while let Some(batch) = next {
            // (The batches stop a load asked to stop.)
            let batch = batch?;
            // Each batch's ids are looked up here while the next batch is
            // read on a thread of its own; the batch held here is reserved
            // here (the batches reserve the one they read last).
            reservation.try_grow(batch.get_array_memory_size())?;
            let look_up = || -> Result<()> {
                let (a, b) = (Ids::of(batch.column(0))?, Ids::of(batch.column(1))?);
                let rows = batch.num_rows();
                let per_row = match lines {
                    true => size_of::<[u64; 4]>(),
                    false => size_of::<[u64; 3]>(),
                };
                reservation.try_grow(rows * per_row)?;
                // The ids looked up on rayon's threads, those a few rows
                // ahead fetched while a row is looked up.
                const AHEAD: usize = 8;
                let keys: Vec<u64> = (0..rows)
                    .into_par_iter()
                    .with_min_len(1 << 12)
                    .map(|k| {
                        first_index.prefetch(&a, k + AHEAD);
                        second_of.prefetch(&b, k + AHEAD);
                        (first_index.find(&a, k), second_of.find(&b, k))
                    })
                    .map(|found| match found {
                        (Some(i), Some(j)) if !(one_matrix && i == j) => {
                            (u64::from(i) << 32) | u64::from(j)
                        }
                        _ => NONE,
                    })
                    .collect();
                found.reserve(rows);
                for (k, &key) in keys.iter().enumerate() {
                    if key != NONE {
                        found.push(key);
                    } else if example.is_none()
                        && let (Some(x), Some(y)) = (a.text(k), b.text(k))
                    {
                        example = Some((x, y));
                    }
                }
                listed += rows as u64;
                if lines {
                    line_keys.extend_from_slice(&keys);
                }
                Ok(())
            };
            let ((), following) = crate::load::join(look_up, || Ok(batches.next()))?;
            reservation.shrink_to((found.capacity() + line_keys.capacity()) * size_of::<u64>());
            next = following;
        }
        if lines && listed >= u64::from(ListedPairs::NO_PAIR) {
            return plan_err!(
                "the candidate list {} has {listed} lines; at most {} can be given in order",
                self.what,
                ListedPairs::NO_PAIR - 1
            );
        }
        if listed > 0 && found.is_empty() {
            let (x, y) = example.unwrap_or_default();
            return plan_err!(
                "none of the {listed} pairs of the candidate list {} names two genes of the \
                 matrix (the first: '{x}' and '{y}', from its columns '{}' and '{}'); the list's \
                 first two columns must be the ids of gene_i and gene_j",
                self.what,
                self.columns[0],
                self.columns[1]
            );
        }
        // A pair listed more than once is computed once (in one matrix in
        // either order), as first listed: in one matrix the orientation
        // kept is that of the first listing (found pairs are in listed
        // order); between two a pair's orientation is fixed, so the keys
        // alone are sorted (not at all when listed in order).
        if one_matrix {
            let unordered = |key: u64| {
                let (i, j) = (key >> 32, key & u64::from(u32::MAX));
                (i.min(j) << 32) | i.max(j)
            };
            let mut listed_order: Vec<(u64, usize)> = found.iter().copied().zip(0..).collect();
            listed_order.par_sort_unstable_by_key(|&(key, k)| (unordered(key), k));
            listed_order.dedup_by_key(|&mut (key, _)| unordered(key));
            found = listed_order.into_iter().map(|(key, _)| key).collect();
        }
        if !found.is_sorted() {
            found.par_sort_unstable();
        }
        found.dedup();
        // Each line's pair: its key among the pairs kept (in one matrix
        // in either order).
        let slot = |key: u64| {
            let swapped = key.rotate_left(32);
            match found.binary_search(&key) {
                Ok(k) => k as u32,
                Err(_) if one_matrix => found
                    .binary_search(&swapped)
                    .map_or(ListedPairs::NO_PAIR, |k| k as u32),
                Err(_) => ListedPairs::NO_PAIR,
            }
        };
        let lines = line_keys
            .par_iter()
            .map(|&key| match key {
                NONE => ListedPairs::NO_PAIR,
                key => slot(key),
            })
            .collect();
        drop(line_keys);
        let pairs = ListedPairs {
            first: found.iter().map(|&key| (key >> 32) as u32).collect(),
            second: found.iter().map(|&key| key as u32).collect(),
            lines,
        };
        drop(found);
        reservation.shrink_to(pairs.heap_bytes());
        Ok((pairs, reservation))
    }
}

/// Why a schema's first two columns are not ids.
pub(super) enum NotIds {
    /// The schema has this many columns, fewer than two.
    Few(usize),
    /// This column (name, type) holds no ids.
    Type(String, DataType),
}

/// The names of `schema`'s first two columns when both hold ids (see
/// [`is_id_type`]): a candidate list's, a groups source's.
pub(super) fn first_two_ids(schema: &Schema) -> std::result::Result<[String; 2], NotIds> {
    let fields = schema.fields();
    if fields.len() < 2 {
        return Err(NotIds::Few(fields.len()));
    }
    for field in &fields[..2] {
        if !is_id_type(field.data_type()) {
            return Err(NotIds::Type(
                field.name().clone(),
                field.data_type().clone(),
            ));
        }
    }
    Ok([fields[0].name().clone(), fields[1].name().clone()])
}

/// Whether a column of type `t` holds ids: strings (or a dictionary of
/// them) or integers.
fn is_id_type(t: &DataType) -> bool {
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    t.is_integer() || text(t) || matches!(t, DataType::Dictionary(_, v) if text(v))
}

/// One id column of a batch of the list: text (string views, as
/// DataFusion reads `VARCHAR` columns, taken as they are; other text cast
/// to strings), or integers (looked up as integers among the genes whose
/// id is an integer's decimal form, which is what the integer cast to text
/// would match, without making strings).
enum Ids {
    Text(StringArray),
    Views(StringViewArray),
    Integers(Int64Array),
}

impl Ids {
    fn of(column: &ArrayRef) -> Result<Self> {
        if column.data_type().is_integer()
            && let Ok(integers) = cast(column, &DataType::Int64)
        {
            return Ok(Ids::Integers(integers.as_primitive::<Int64Type>().clone()));
        }
        if let Some(views) = column.as_string_view_opt() {
            return Ok(Ids::Views(views.clone()));
        }
        let text = cast(column, &DataType::Utf8)?;
        Ok(Ids::Text(text.as_string::<i32>().clone()))
    }

    /// Row `k`'s id when it is text and not NULL.
    #[inline]
    fn str(&self, k: usize) -> Option<&str> {
        match self {
            Ids::Text(a) => a.is_valid(k).then(|| a.value(k)),
            Ids::Views(a) => a.is_valid(k).then(|| a.value(k)),
            Ids::Integers(_) => None,
        }
    }

    /// Row `k`'s id as text (`None` when NULL), for messages.
    fn text(&self, k: usize) -> Option<String> {
        match self {
            Ids::Integers(a) => a.is_valid(k).then(|| a.value(k).to_string()),
            text => text.str(k).map(str::to_string),
        }
    }
}

/// Genes (a range of positions) by id, and by integer for those whose id
/// is one written as Rust (and Arrow's cast) writes it.
struct IdIndex<'a> {
    text: HashMap<&'a str, u32, foldhash::fast::RandomState>,
    /// Genes whose id is at most [`INLINE_ID`] bytes, by the string view
    /// that holds it (its length and bytes in 16 bytes): a view column's
    /// short ids are found by their views, without reading their text.
    short: ShortIds,
    integers: IntegerIds,
}

/// Genes by the views of their short ids: open addressing, a slot per
/// view (and its gene) at the first free place from its hash's, at most
/// half the slots full. Unlike a general map, it tells where a view's
/// slot is before looking, so that the list's ids a few rows ahead are
/// fetched from memory while the row at hand is looked up.
struct ShortIds {
    slots: Vec<(u128, u32)>,
    mask: usize,
    hasher: foldhash::fast::RandomState,
}

impl ShortIds {
    /// A free slot's gene.
    const FREE: u32 = u32::MAX;

    fn new(ids: &[(u128, u32)]) -> Self {
        let len = (2 * ids.len()).next_power_of_two().max(16);
        let mut table = ShortIds {
            slots: vec![(0, Self::FREE); len],
            mask: len - 1,
            hasher: Default::default(),
        };
        for &(view, gene) in ids {
            let mut at = table.home(view);
            while table.slots[at].1 != Self::FREE {
                at = (at + 1) & table.mask;
            }
            table.slots[at] = (view, gene);
        }
        table
    }

    /// Where the slot of `view` is looked for first.
    #[inline]
    fn home(&self, view: u128) -> usize {
        (self.hasher.hash_one(view) as usize) & self.mask
    }

    /// The gene of `view`, if any.
    #[inline]
    fn get(&self, view: u128) -> Option<u32> {
        let mut at = self.home(view);
        loop {
            let (held, gene) = self.slots[at];
            if gene == Self::FREE {
                return None;
            }
            if held == view {
                return Some(gene);
            }
            at = (at + 1) & self.mask;
        }
    }

    /// Asks the processor to fetch the slot `view` is looked for first in
    /// (a hint: nothing is read).
    #[inline]
    fn prefetch(&self, view: u128) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let slot = self.slots[self.home(view)..].as_ptr();
            // SAFETY: a prefetch reads nothing and cannot fault (the slot
            // is in the table anyway); SSE is in every x86_64 processor.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = view;
    }
}

/// The longest id a string view holds in itself (Arrow's layout: the
/// length in its first 4 bytes, the text in the next 12).
const INLINE_ID: usize = 12;

/// The view of an id of at most [`INLINE_ID`] bytes, whatever bytes follow
/// the id in it (zeros, as Arrow writes them, but not relied on).
#[inline]
fn inline_view(view: u128) -> u128 {
    let kept = 32 + 8 * (view as u32);
    if kept >= 128 {
        view
    } else {
        view & ((1u128 << kept) - 1)
    }
}

/// Genes by integer id: a table from the smallest id when the ids are
/// compact (numbered features, as Python passes them), else a map.
enum IntegerIds {
    /// Gene of id `lo + k` at `k`, or [`u32::MAX`] for none.
    Table {
        lo: i64,
        genes: Vec<u32>,
    },
    Map(HashMap<i64, u32, foldhash::fast::RandomState>),
}

impl<'a> IdIndex<'a> {
    fn new(genes: &'a StringArray, range: std::ops::Range<usize>) -> Self {
        let text: HashMap<&str, u32, _> = range.map(|g| (genes.value(g), g as u32)).collect();
        let short: Vec<(u128, u32)> = text
            .iter()
            .filter(|(id, _)| id.len() <= INLINE_ID)
            .map(|(id, &g)| (make_view(id.as_bytes(), 0, 0), g))
            .collect();
        let short = ShortIds::new(&short);
        let map: HashMap<i64, u32, _> = text
            .iter()
            .filter_map(|(&id, &g)| {
                let x: i64 = id.parse().ok()?;
                (x.to_string() == id).then_some((x, g))
            })
            .collect();
        let lo = map.keys().copied().min().unwrap_or(0);
        let hi = map.keys().copied().max().unwrap_or(0);
        let span = usize::try_from(hi.abs_diff(lo)).unwrap_or(usize::MAX);
        let integers = if !map.is_empty() && span < 2 * map.len() + 1024 {
            let mut table = vec![u32::MAX; span + 1];
            for (&x, &g) in &map {
                table[(x - lo) as usize] = g;
            }
            IntegerIds::Table { lo, genes: table }
        } else {
            IntegerIds::Map(map)
        };
        IdIndex {
            text,
            short,
            integers,
        }
    }

    /// Asks the processor to fetch where row `k`'s id is looked for, when
    /// it is a string view's short id (a hint: see [`ShortIds`]).
    #[inline]
    fn prefetch(&self, ids: &Ids, k: usize) {
        if let Ids::Views(a) = ids
            && let Some(&view) = a.views().get(k)
            && (view as u32) as usize <= INLINE_ID
        {
            self.short.prefetch(inline_view(view));
        }
    }

    /// The gene row `k` of `ids` names, if any.
    #[inline]
    fn find(&self, ids: &Ids, k: usize) -> Option<u32> {
        match ids {
            Ids::Views(a) => {
                let view = *a.views().get(k).filter(|_| a.is_valid(k))?;
                if (view as u32) as usize <= INLINE_ID {
                    self.short.get(inline_view(view))
                } else {
                    self.text.get(a.value(k)).copied()
                }
            }
            Ids::Text(_) => self.text.get(ids.str(k)?).copied(),
            Ids::Integers(a) => {
                let x = a.is_valid(k).then(|| a.value(k))?;
                match &self.integers {
                    IntegerIds::Table { lo, genes } => {
                        let at = usize::try_from(x.checked_sub(*lo)?).ok()?;
                        genes.get(at).copied().filter(|&g| g != u32::MAX)
                    }
                    IntegerIds::Map(map) => map.get(&x).copied(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;

    /// Ids in a string-view column are found as in a string column: short
    /// ones by their views (whatever follows the id in the view), long ones
    /// by their text; ids that differ only after 12 bytes, or are a prefix
    /// of another, are told apart.
    #[test]
    fn view_ids_are_found_as_text_ids_are() {
        let names: Vec<String> = (0..=20)
            .map(|n| "abcdefghijklmnopqrstu"[..n].to_string())
            .chain(
                [
                    "abcdefghijklX",
                    "abcdefghijkX",
                    "p1",
                    "p12",
                    "\u{e9}t\u{e9}",
                ]
                .map(String::from),
            )
            .collect();
        let genes = StringArray::from_iter_values(&names);
        let index = IdIndex::new(&genes, 1..genes.len());
        let mut asked = names.clone();
        asked.extend(["abcdefghijklY", "abcdefghijkY", "p2", "p123", "\u{e9}t"].map(String::from));
        let text = Ids::Text(StringArray::from_iter_values(&asked));
        let views = Ids::Views(StringViewArray::from_iter_values(&asked));
        for (k, name) in asked.iter().enumerate() {
            let want = names[1..]
                .iter()
                .position(|n| n == name)
                .map(|g| g as u32 + 1);
            assert_eq!(index.find(&text, k), want, "{name:?}");
            assert_eq!(index.find(&views, k), want, "{name:?}");
        }
        let nulls = Ids::Views(StringViewArray::from(vec![None, Some("p1")]));
        assert_eq!(index.find(&nulls, 0), None);
        assert_eq!(index.find(&nulls, 1), Some(23));
        // Many short ids, each found, none of the others.
        let many = StringArray::from_iter_values((0..5000).map(|k| format!("p{k}")));
        let index = IdIndex::new(&many, 0..many.len());
        let asked = StringViewArray::from_iter_values((0..10000).map(|k| format!("p{k}")));
        let views = Ids::Views(asked);
        for k in 0..10000 {
            index.prefetch(&views, k);
            assert_eq!(
                index.find(&views, k),
                (k < 5000).then_some(k as u32),
                "p{k}"
            );
        }
        // The bytes after a short id in its view are not part of it.
        let view = make_view(b"p12", 0, 0);
        assert_eq!(inline_view(view | (0xff << 120)), view);
        assert_eq!(
            inline_view(make_view(b"abcdefghijkl", 0, 0)),
            make_view(b"abcdefghijkl", 0, 0)
        );
    }

    #[test]
    fn the_first_two_columns_must_be_ids() {
        let schema = |a: DataType, b: DataType| {
            Schema::new(vec![Field::new("g", a, true), Field::new("p", b, true)])
        };
        let ok = PairListSpec::inspect("'c.csv'", &schema(DataType::Utf8, DataType::Int64));
        assert_eq!(ok.unwrap().columns, ["g".to_string(), "p".to_string()]);
        let err = PairListSpec::inspect("'c.csv'", &schema(DataType::Utf8, DataType::Float64))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("column 'p'") && err.contains("'c.csv'"),
            "{err}"
        );
        let one = Schema::new(vec![Field::new("g", DataType::Utf8, true)]);
        let err = PairListSpec::inspect("t", &one).unwrap_err().to_string();
        assert!(err.contains("1 column(s)"), "{err}");
    }
}

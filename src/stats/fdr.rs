//! False discovery rate: the `q_value` column, exact, without sorting pairs.
//!
//! `q_value` is the Benjamini–Hochberg (or, with `kendall.fdr = 'by'`,
//! Benjamini–Yekutieli) adjusted p-value of a pair over **every pair of the
//! input** whose p-value is a number: all m(m−1)/2 pairs less those sharing
//! fewer than `kendall.min_periods` samples (NULL p-value) and those with a
//! constant gene (NaN p-value). The family never depends on the query's
//! `WHERE` clause, gene filters included: a row's `q_value` is a property of
//! the table, as every column is, so `WHERE gene_i = 'TP53'` shows the same
//! q-values as the whole network filtered afterwards (and the adjustment
//! counts every test that was made, which is what makes it honest).
//!
//! With M tests sorted by p-value, `p_(1) ≤ … ≤ p_(M)`, scipy's
//! `false_discovery_control` (and R's `p.adjust`) computes
//! `g_j = p_(j) · (M / j)` (BY: `· Σ_{i≤M} 1/i`) and
//! `q_(i) = min(1, min_{j ≥ i} g_j)`. Here it is computed from counts:
//!
//! - A pair's p-value is a function of its *context* — the number of samples
//!   it shares and each gene's tie statistics on them (what
//!   [`PairStats`] holds) — and of its numerator S. So a counting pass over
//!   all pairs keeps, per context, how many pairs have each S: the *cells*.
//!   Without missing values and ties there is one context and at most
//!   n(n−1)/2 + 1 cells, whatever the number of pairs.
//! - Each cell's p-value is computed once. Sorted by p-value, with C(p) the
//!   number of tests whose p-value is at most p, the equal p-values of a tie
//!   group share one q: `min_{j ≥ i} g_j` over the group reaches its last
//!   index `j = C(p)` (`M / j` only falls with j), so
//!   `q(p) = min(1, g(p), q(next larger p))` with `g(p) = p · (M / C(p))`,
//!   the same floating-point operations as scipy's on the same numbers.
//! - The output pass then finds each pair's q by its context and S.
//!
//! So reading `q_value` costs one extra pass of the kernel over all pairs
//! (no p-value per pair, no sort, no materialised pairs), and memory
//! proportional to the cells: a few thousand for complete data, more with
//! missing values or ties (each distinct pair context has its own cells;
//! at most one per pair). A filter `q_value < α` is then exact like any
//! other pushed-down filter: q is known for every pair before it becomes a
//! row, and since q is non-decreasing in p the rows kept are exactly those
//! with p at most the Benjamini–Hochberg cut-off.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::error::{DataFusionError, Result};
use rayon::prelude::*;

use super::pvalue::PValues;
use crate::input::ListedPairs;
use crate::kernel::bitset::BitPlanes;
use crate::kernel::isa::Isa;
use crate::kernel::{KernelKind, PairKernel, PairNumerator};
use crate::memory::{Reservation, try_filled};
use crate::rank::{PairStats, RankedMatrix};
use crate::sort::sort_keys;
use crate::work::{MAX_BLOCK_PAIRS, WorkSplit};

crate::option_enum::option_enum! {
    /// The multiple-testing adjustment of `q_value` (`SET kendall.fdr = ...`).
    pub enum FdrMethod: "kendall.fdr" {
        /// Benjamini–Hochberg: FDR control for independent or positively
        /// dependent tests.
        #[default]
        Bh = "bh",
        /// Benjamini–Yekutieli: FDR control under any dependence (BH times
        /// `Σ_{i≤M} 1/i`).
        By = "by",
    }
}

/// A cheap hasher for small keys of whole words (the multiply-rotate of
/// rustc's FxHash): cells are looked up once per pair.
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn write_i64(&mut self, word: i64) {
        self.write_u64(word as u64)
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type WordMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// What a pair's p-value depends on besides S: its shared samples and both
/// genes' tie statistics on them ([`PairStats`], as bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Context([u64; 9]);

impl Context {
    #[inline]
    fn of(s: &PairStats) -> Self {
        Context([
            s.n as u64,
            s.u.tie_pairs,
            u64::from(s.u.distinct),
            s.u_variance.t2.to_bits(),
            s.u_variance.t5.to_bits(),
            s.v.tie_pairs,
            u64::from(s.v.distinct),
            s.v_variance.t2.to_bits(),
            s.v_variance.t5.to_bits(),
        ])
    }
}

/// Most gene classes for which pairs of complete genes find their context
/// by a table of classes × classes (beyond, by hashing).
const MAX_CLASSES: usize = 1024;

/// Most cells a [`Cells`] keeps in dense arrays (8 MiB of counts); contexts
/// beyond it keep theirs in hash maps.
const DENSE_BUDGET: usize = 1 << 20;

/// Largest S range (`2·n(n−1)/2 + 1`) kept densely.
const DENSE_MAX_RANGE: usize = 1 << 16;

/// How pairs find their context. Genes without missing values fall into
/// classes of equal tie statistics (one class for all tie-free genes); a
/// pair of two such genes has the context of its two classes, found by
/// table. Pairs touching a gene with gaps have contexts of their own
/// statistics on their shared samples, found by hashing.
#[derive(Debug)]
pub struct ContextIndex {
    /// Class of each gene; `u32::MAX` for genes with missing values (or
    /// when there are too many classes for the table).
    class: Vec<u32>,
    /// Number of classes.
    classes: usize,
}

impl ContextIndex {
    /// The classes of the genes of `m`.
    pub fn new(m: &RankedMatrix) -> Self {
        let mut ids: WordMap<[u64; 4], u32> = WordMap::default();
        let mut class: Vec<u32> = (0..m.genes())
            .map(|g| {
                if m.has_gaps(g) {
                    return u32::MAX;
                }
                let (t, v) = (m.ties(g), m.variance_terms(g));
                let key = [
                    t.tie_pairs,
                    u64::from(t.distinct),
                    v.t2.to_bits(),
                    v.t5.to_bits(),
                ];
                let next = ids.len() as u32;
                *ids.entry(key).or_insert(next)
            })
            .collect();
        let mut classes = ids.len();
        if classes > MAX_CLASSES {
            class.iter_mut().for_each(|c| *c = u32::MAX);
            classes = 0;
        }
        ContextIndex { class, classes }
    }

    /// The table slot of pair (i, j), when both genes have a class.
    #[inline]
    fn fixed(&self, i: usize, j: usize) -> Option<usize> {
        let (ci, cj) = (self.class[i], self.class[j]);
        (ci != u32::MAX && cj != u32::MAX).then(|| ci as usize * self.classes + cj as usize)
    }
}

/// The values of one context by S: an array over S's range, or a map.
#[derive(Debug)]
enum Store<V> {
    Dense { offset: i64, values: Vec<V> },
    Sparse(WordMap<i64, V>),
}

impl<V: Copy + Default + PartialEq> Store<V> {
    #[inline]
    fn get(&self, s: i64) -> Option<V> {
        match self {
            Store::Dense { offset, values } => values.get((s + offset) as usize).copied(),
            Store::Sparse(map) => map.get(&s).copied(),
        }
    }

    #[inline]
    fn entry(&mut self, s: i64) -> &mut V {
        match self {
            Store::Dense { offset, values } => &mut values[(s + *offset) as usize],
            Store::Sparse(map) => map.entry(s).or_default(),
        }
    }

    /// Every (S, value) with a value other than the default.
    fn cells(&self) -> Vec<(i64, V)> {
        match self {
            Store::Dense { offset, values } => values
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != V::default())
                .map(|(k, v)| (k as i64 - offset, *v))
                .collect(),
            Store::Sparse(map) => map.iter().map(|(s, v)| (*s, *v)).collect(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Store::Dense { values, .. } => values.capacity() * std::mem::size_of::<V>(),
            Store::Sparse(map) => map.capacity() * (8 + std::mem::size_of::<V>() + 1),
        }
    }

    /// Values other than the default.
    fn set_cells(&self) -> usize {
        match self {
            Store::Dense { values, .. } => values.iter().filter(|v| **v != V::default()).count(),
            Store::Sparse(map) => map.len(),
        }
    }
}

/// Per context, its values by S, with the last context looked up
/// remembered (consecutive pairs mostly share one).
#[derive(Debug)]
struct Cells<V> {
    /// Contexts of pairs of two classed genes, by class pair.
    fixed: Vec<Option<(PairStats, Store<V>)>>,
    /// Contexts of the other pairs.
    index: WordMap<Context, u32>,
    dynamic: Vec<(PairStats, Store<V>)>,
    /// Cells left to keep densely.
    dense_left: usize,
    /// The slots of `fixed` that hold a store, in order of creation.
    fixed_created: Vec<usize>,
    /// Bytes of the stores when they were created.
    created_bytes: usize,
}

impl<V: Copy + Default + PartialEq> Cells<V> {
    fn new(contexts: &ContextIndex) -> Self {
        Cells {
            fixed: (0..contexts.classes * contexts.classes)
                .map(|_| None)
                .collect(),
            index: WordMap::default(),
            dynamic: Vec::new(),
            dense_left: DENSE_BUDGET,
            fixed_created: Vec::new(),
            created_bytes: 0,
        }
    }

    /// Bytes the table of fixed contexts of a `Cells` for `contexts` takes.
    fn table_bytes(contexts: &ContextIndex) -> usize {
        (contexts.classes * contexts.classes)
            .saturating_mul(std::mem::size_of::<Option<(PairStats, Store<V>)>>())
    }

    /// An empty store for pairs of `n` samples.
    fn store(&mut self, n: usize) -> Store<V> {
        let n0 = (n * n.saturating_sub(1) / 2) as i64;
        let range = 2 * n0 as usize + 1;
        if range <= DENSE_MAX_RANGE && range <= self.dense_left {
            self.dense_left -= range;
            Store::Dense {
                offset: n0,
                values: vec![V::default(); range],
            }
        } else {
            Store::Sparse(WordMap::default())
        }
    }

    /// The store of fixed context `k` (pairs with statistics `stats`),
    /// created if new.
    fn fixed_mut(&mut self, k: usize, stats: &PairStats) -> &mut Store<V> {
        if self.fixed[k].is_none() {
            let store = self.store(stats.n);
            self.created_bytes += store.bytes();
            self.fixed[k] = Some((*stats, store));
            self.fixed_created.push(k);
        }
        match &mut self.fixed[k] {
            Some((_, store)) => store,
            None => unreachable!("created above"),
        }
    }

    /// The slot of the hashed context `context` (pairs with statistics
    /// `stats`), created if new.
    fn dynamic_slot(&mut self, context: Context, stats: &PairStats) -> u32 {
        if let Some(&slot) = self.index.get(&context) {
            return slot;
        }
        let slot = self.dynamic.len() as u32;
        let store = self.store(stats.n);
        self.created_bytes += store.bytes();
        self.index.insert(context, slot);
        self.dynamic.push((*stats, store));
        slot
    }

    /// The store of pair (i, j) with statistics `stats`, created if new.
    #[inline]
    fn store_mut(
        &mut self,
        contexts: &ContextIndex,
        last: &mut LastContext,
        (i, j): (usize, usize),
        stats: &PairStats,
    ) -> &mut Store<V> {
        if let Some(k) = contexts.fixed(i, j) {
            return self.fixed_mut(k, stats);
        }
        let context = Context::of(stats);
        let slot = match last {
            Some((c, slot)) if *c == context => *slot,
            _ => {
                let slot = self.dynamic_slot(context, stats);
                *last = Some((context, slot));
                slot
            }
        };
        &mut self.dynamic[slot as usize].1
    }

    /// The store of `slot` (a context of pairs with statistics `stats`),
    /// created if new.
    fn slot_mut(&mut self, slot: Slot, stats: &PairStats) -> &mut Store<V> {
        match slot {
            Slot::Fixed(k) => self.fixed_mut(k, stats),
            Slot::Dynamic(_) => {
                // A hashed context is found by its statistics: the other
                // side's slot number need not be this one's.
                let k = self.dynamic_slot(Context::of(stats), stats);
                &mut self.dynamic[k as usize].1
            }
        }
    }

    /// The store of pair (i, j) with statistics `stats`, if it has one.
    #[inline]
    fn store_of(
        &self,
        contexts: &ContextIndex,
        last: &mut LastContext,
        (i, j): (usize, usize),
        stats: &PairStats,
    ) -> Option<&Store<V>> {
        if let Some(slot) = contexts.fixed(i, j) {
            return self.fixed[slot].as_ref().map(|(_, store)| store);
        }
        let context = Context::of(stats);
        let slot = match last {
            Some((c, slot)) if *c == context => *slot,
            _ => {
                let slot = *self.index.get(&context)?;
                *last = Some((context, slot));
                slot
            }
        };
        Some(&self.dynamic[slot as usize].1)
    }

    /// Every context: (slot, its statistics, its store); fixed slots first.
    fn contexts(&self) -> impl Iterator<Item = (Slot, &PairStats, &Store<V>)> {
        let fixed = self
            .fixed
            .iter()
            .enumerate()
            .filter_map(|(k, c)| c.as_ref().map(|(st, store)| (Slot::Fixed(k), st, store)));
        let dynamic = self
            .dynamic
            .iter()
            .enumerate()
            .map(|(k, (st, store))| (Slot::Dynamic(k), st, store));
        fixed.chain(dynamic)
    }

    /// Heap bytes, roughly (a walk over every store).
    fn bytes(&self) -> usize {
        self.bytes_with(
            self.fixed_created
                .iter()
                .filter_map(|&k| self.fixed[k].as_ref())
                .chain(&self.dynamic)
                .map(|(_, store)| store.bytes())
                .sum::<usize>(),
        )
    }

    /// [`Cells::bytes`] with the stores' bytes given, in O(1).
    fn bytes_with(&self, stores: usize) -> usize {
        let per = std::mem::size_of::<Option<(PairStats, Store<V>)>>();
        self.fixed.len() * per
            + self.fixed_created.capacity() * std::mem::size_of::<usize>()
            + self.dynamic.capacity() * (per + std::mem::size_of::<(Context, u32)>() + 8)
            + stores
    }

    /// Cells with a value other than the default.
    fn set_cells(&self) -> usize {
        self.contexts().map(|(_, _, store)| store.set_cells()).sum()
    }
}

/// Where a context's store is.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Fixed(usize),
    Dynamic(usize),
}

/// The counting pass's result: how many pairs of each context have each S.
#[derive(Debug)]
pub struct TestCounts {
    cells: Cells<u64>,
    last: LastContext,
    /// Bytes the stores grew by since they were created.
    grown: usize,
}

impl TestCounts {
    /// No pairs counted yet.
    pub fn new(contexts: &ContextIndex) -> Self {
        TestCounts {
            cells: Cells::new(contexts),
            last: None,
            grown: 0,
        }
    }

    /// Counts one pair (i, j) of numerator `s` and statistics `stats`.
    #[inline]
    fn add(&mut self, contexts: &ContextIndex, pair: (usize, usize), stats: &PairStats, s: i64) {
        let store = self.cells.store_mut(contexts, &mut self.last, pair, stats);
        let before = store.bytes();
        *store.entry(s) += 1;
        self.grown += store.bytes() - before;
    }

    /// Adds the counts of `other`.
    fn merge(mut self, other: TestCounts) -> TestCounts {
        for (slot, stats, store) in other.cells.contexts() {
            let into = self.cells.slot_mut(slot, stats);
            for (s, count) in store.cells() {
                *into.entry(s) += count;
            }
        }
        self.last = None;
        self.grown = self.cells.bytes() - self.cells.bytes_with(self.cells.created_bytes);
        self
    }

    /// Heap bytes, roughly, in O(1): what pairs are counted into grows in
    /// step (a walk over every store after each block of pairs was
    /// quadratic in the contexts, millions for a long candidate list).
    fn bytes(&self) -> usize {
        self.cells.bytes_with(self.cells.created_bytes + self.grown)
    }

    /// Pairs counted.
    #[cfg(test)]
    fn pairs(&self) -> u64 {
        self.cells
            .contexts()
            .flat_map(|(_, _, store)| store.cells())
            .map(|(_, count)| count)
            .sum()
    }
}

/// How long one block of the counting pass should take.
const BLOCK_TIME: std::time::Duration = std::time::Duration::from_millis(10);

/// What the counting pass computes with: the kernel and its data.
pub struct CountingPass<'a> {
    /// The ranked input.
    pub matrix: &'a RankedMatrix,
    /// The kernel, as the query resolved it.
    pub kernel: KernelKind,
    /// Its instruction set.
    pub isa: Isa,
    /// Bit-planes, for the bitset kernel.
    pub planes: Option<Arc<BitPlanes>>,
    /// Pairs with a two-valued gene as rank sums (`auto`).
    pub rank_sums: bool,
    /// Pairs sharing fewer samples are not tests.
    pub min_periods: usize,
    /// Tile edge.
    pub tile_size: usize,
    /// `kendall_cross_pairs`: the family is the left × right pairs of this
    /// many left and right genes (stacked left first), not all pairs.
    pub cross: Option<(usize, usize)>,
    /// `kendall_candidate_pairs`: the family is the listed pairs.
    pub listed: Option<Arc<ListedPairs>>,
    /// `kendall.missing = 'propagate'`: pairs touching a gene with a
    /// missing value have NaN p-values, so they are not tests.
    pub propagate: bool,
    /// Set when the query no longer wants the result (checked between blocks).
    pub stop: Option<Arc<AtomicBool>>,
    /// The p-values (a candidate list's are computed in this pass).
    pub pvalues: &'a PValues,
}

/// What the counting pass found.
pub struct Counted {
    /// The pairs' contexts.
    pub contexts: ContextIndex,
    /// The tests, by context and S (none for a candidate list's family
    /// counted pair by pair, [`Counted::listed`]).
    pub counts: TestCounts,
    /// A candidate list's family, pair by pair.
    pub listed: Option<ListedTests>,
}

/// A candidate list's numerators and p-values, pair by pair in list order:
/// what the counting pass keeps of a list, rather than counts by context
/// (a list's pairs rarely share one: most would be a context of their own).
/// Kept where every S of the matrix fits in an `i32` (up to 65,536
/// samples): 12 bytes a pair.
pub struct ListedTests {
    /// Each pair's S, read again by the pass that writes the rows.
    pub numerators: Arc<Vec<i32>>,
    /// Each pair's p-value; NaN for a pair that is no test (too few shared
    /// samples, a propagated missing value, an undefined p-value).
    p_values: Vec<f64>,
}

impl CountingPass<'_> {
    /// Counts every pair of the matrix that shares at least `min_periods`
    /// samples, by context and S, on rayon's threads. The counts' memory is
    /// reserved in `memory` (the classes and each chunk's table of contexts
    /// before they are allocated, the counts' growth block by block); on
    /// return it holds the returned counts' bytes, and `kept` those of a
    /// candidate list's kept numerators.
    pub fn run(&self, memory: &mut Reservation, kept: &mut Reservation) -> Result<Counted> {
        let m = self.matrix;
        // A candidate list's numerators are kept when every S fits in an
        // i32 (|S| <= n(n - 1)/2).
        let n = m.samples() as u64;
        let keep = self
            .listed
            .as_ref()
            .filter(|_| n * n.saturating_sub(1) / 2 <= i32::MAX as u64)
            .map(|pairs| pairs.len());
        let kept_bytes = keep
            .unwrap_or(0)
            .saturating_mul(std::mem::size_of::<(i32, f64)>());
        kept.try_grow(kept_bytes)?;
        let what = "the candidate pairs' numerators and p-values";
        let mut numerators: Vec<i32> = try_filled(keep.unwrap_or(0), 0, what)?;
        let mut p_values: Vec<f64> = try_filled(keep.unwrap_or(0), f64::NAN, what)?;
        memory.try_grow(m.genes().saturating_mul(std::mem::size_of::<u32>()))?;
        let contexts = ContextIndex::new(m);
        // A few chunks per thread, so that a slow one does not hold the rest.
        let chunks = (rayon::current_num_threads() * 2).max(1);
        let table = Cells::<u64>::table_bytes(&contexts);
        memory.try_grow(table.saturating_mul(chunks))?;
        let base = memory.size();
        let shared = std::sync::Mutex::new(&mut *memory);
        let work = match (&self.listed, self.cross) {
            (Some(pairs), _) => WorkSplit::listed(Arc::clone(pairs), chunks),
            (None, Some((left, right))) => WorkSplit::cross(left, right, chunks),
            (None, None) => WorkSplit::tiles(m.genes(), self.tile_size, chunks),
        };
        // Each chunk's share of the kept numerators (its range of the list).
        let mut shares: Vec<(&mut [i32], &mut [f64])> = Vec::with_capacity(chunks);
        match &work {
            WorkSplit::Listed { ranges, .. } if keep.is_some() => {
                let (mut rest, mut rest_p) = (numerators.as_mut_slice(), p_values.as_mut_slice());
                for range in ranges {
                    let (share, after) = rest.split_at_mut(range.len());
                    let (share_p, after_p) = rest_p.split_at_mut(range.len());
                    shares.push((share, share_p));
                    (rest, rest_p) = (after, after_p);
                }
            }
            _ => shares.resize_with(chunks, Default::default),
        }
        let counts = shares
            .into_par_iter()
            .enumerate()
            .map(|(chunk, share)| self.count_chunk(&work, chunk, &contexts, share, &shared))
            .collect::<Result<Vec<_>>>()?;
        // Merged into the first: the others' memory (reserved) is freed as
        // the first grows.
        let mut all = counts.into_iter();
        let counts = match all.next() {
            Some(first) => all.fold(first, TestCounts::merge),
            None => TestCounts::new(&contexts),
        };
        memory.shrink_to(
            base.saturating_sub(table.saturating_mul(chunks))
                .saturating_add(counts.bytes()),
        );
        Ok(Counted {
            contexts,
            counts,
            listed: keep.map(|_| ListedTests {
                numerators: Arc::new(numerators),
                p_values,
            }),
        })
    }

    /// Counts the pairs of `work`'s chunk `chunk` by context and S (a kept
    /// candidate list's into `share`, its numerators and p-values, instead),
    /// the counts' growth reserved in `shared` block by block. Blocks of
    /// about 10 ms whatever a pair costs, so that a cancelled query stops
    /// the pass within about that.
    fn count_chunk(
        &self,
        work: &WorkSplit,
        chunk: usize,
        contexts: &ContextIndex,
        (share, share_p): (&mut [i32], &mut [f64]),
        shared: &std::sync::Mutex<&mut Reservation>,
    ) -> Result<TestCounts> {
        let m = self.matrix;
        let mut kernel = PairKernel::new(self.kernel, m.samples(), self.isa, self.planes.clone())?;
        if self.rank_sums {
            kernel = kernel.with_rank_sums();
        }
        let mut cursor = work.cursor(chunk);
        let mut pending: Vec<PairNumerator> = Vec::new();
        let mut counts = TestCounts::new(contexts);
        // Numerators of `share` written so far.
        let mut written = 0usize;
        // Bytes of `counts` reserved (its table, reserved by the caller).
        let mut held = counts.bytes();
        let mut block = 64usize;
        loop {
            let started = std::time::Instant::now();
            if self
                .stop
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
            {
                return Err(DataFusionError::Execution(
                    "input load stopped: the query was cancelled".to_string(),
                ));
            }
            pending.clear();
            if !cursor.compute_next(work, m, block, &mut kernel, &mut pending) {
                break;
            }
            let shares = (&mut *share, &mut *share_p);
            self.count_block(&pending, contexts, &mut counts, shares, written);
            written += pending.len();
            let now = counts.bytes();
            if now > held {
                shared
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .try_grow(now - held)?;
                held = now;
            }
            let took = started.elapsed();
            if took < BLOCK_TIME / 2 {
                block = (block * 2).min(MAX_BLOCK_PAIRS);
            } else if took > BLOCK_TIME * 2 {
                block = (block / 2).max(1);
            }
        }
        Ok(counts)
    }

    /// Counts one block of computed pairs: each test (a pair sharing at
    /// least `min_periods` samples, not propagated) into `counts` by
    /// context and S, or, for a kept candidate list (`share` not empty:
    /// the block's pairs come in list order), each pair's S into `share`
    /// and its p-value into `share_p`, after the `written` before them.
    fn count_block(
        &self,
        pending: &[PairNumerator],
        contexts: &ContextIndex,
        counts: &mut TestCounts,
        (share, share_p): (&mut [i32], &mut [f64]),
        written: usize,
    ) {
        let m = self.matrix;
        let listed = !share.is_empty();
        for (k, p) in pending.iter().enumerate() {
            if listed {
                // S fits (checked by the caller).
                share[written + k] = p.s as i32;
            }
            let pair = (p.i as usize, p.j as usize);
            if self.propagate && (m.has_gaps(pair.0) || m.has_gaps(pair.1)) {
                continue;
            }
            let stats = m.pair_stats(pair.0, pair.1);
            if stats.n < self.min_periods {
                continue;
            }
            if listed {
                share_p[written + k] = self.pvalues.p_value(
                    stats.n,
                    p.s,
                    (stats.u, stats.u_variance),
                    (stats.v, stats.v_variance),
                );
            } else {
                counts.add(contexts, pair, &stats, p.s);
            }
        }
    }
}

/// The q-value of every cell: each pair's `q_value` by its context and S.
#[derive(Debug)]
pub struct QValues {
    contexts: ContextIndex,
    cells: Cells<f64>,
    /// A candidate list's q-values, pair by pair in list order (then
    /// `cells` is empty).
    listed: Option<Vec<f64>>,
    /// Tests in the family (pairs with a p-value that is a number).
    tests: u64,
}

impl QValues {
    /// [`QValues::new`] with its memory reserved in `memory` (which holds
    /// the bytes of `counts`) before it is built: the q-values' stores, as
    /// large as the counts', and the sorted p-values of the counted cells;
    /// on return it holds [`QValues::bytes`].
    ///
    /// A candidate list's family ([`Counted::listed`]) is adjusted pair by
    /// pair: its p-values sorted (their order reserved in `memory` while
    /// it is built) and turned into q-values in place, in the memory the
    /// counting pass reserved for them; the numbers are the same.
    pub fn try_new(
        counted: Counted,
        pvalues: &PValues,
        method: FdrMethod,
        memory: &mut Reservation,
    ) -> Result<Self> {
        let Counted {
            contexts,
            counts,
            listed,
        } = counted;
        if let Some(listed) = listed {
            let tests = listed.p_values.iter().filter(|p| !p.is_nan()).count();
            let base = memory.size();
            memory.try_grow(tests.saturating_mul(std::mem::size_of::<(f64, usize)>()))?;
            let (q, tests) = listed_q_values(listed.p_values, method);
            memory.shrink_to(base);
            return Ok(QValues {
                cells: Cells::new(&contexts),
                contexts,
                listed: Some(q),
                tests,
            });
        }
        // Per cell with a count: its entry (p, pairs, slot, S) and at most
        // one group of equal p-values.
        let per_cell = std::mem::size_of::<(f64, u64, Slot, i64)>()
            + std::mem::size_of::<(f64, usize, usize)>();
        memory.try_grow(
            counts
                .bytes()
                .saturating_add(counts.cells.set_cells().saturating_mul(per_cell)),
        )?;
        let q = Self::new(contexts, counts, pvalues, method);
        memory.shrink_to(q.bytes());
        Ok(q)
    }

    /// Adjusts the p-values of the counted pairs (`pvalues` computes them
    /// as the `p_value` column does).
    pub fn new(
        contexts: ContextIndex,
        counts: TestCounts,
        pvalues: &PValues,
        method: FdrMethod,
    ) -> Self {
        // The q-values' stores, laid out as the counts'.
        let mut q = Cells::<f64>::new(&contexts);
        // Every cell's p-value, once: (p, pairs, where).
        let mut cells: Vec<(f64, u64, Slot, i64)> = Vec::new();
        let mut nan_cells = Vec::new();
        for (slot, stats, store) in counts.cells.contexts() {
            // Created in the counts' order: the same slots.
            q.slot_mut(slot, stats);
            for (s, count) in store.cells() {
                let p = pvalues.p_value(
                    stats.n,
                    s,
                    (stats.u, stats.u_variance),
                    (stats.v, stats.v_variance),
                );
                if p.is_nan() {
                    nan_cells.push((slot, s));
                } else {
                    cells.push((p, count, slot, s));
                }
            }
        }
        let tests: u64 = cells.iter().map(|c| c.1).sum();
        cells.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let m = tests as f64;
        let scale = match method {
            FdrMethod::Bh => 1.0,
            FdrMethod::By => harmonic(tests),
        };
        // g(p) for each group of equal p-values, at the group's last index.
        let mut groups: Vec<(f64, usize, usize)> = Vec::new(); // (g, its cells' range)
        let mut below = 0u64;
        let mut start = 0;
        while start < cells.len() {
            let p = cells[start].0;
            let mut end = start;
            while end < cells.len() && cells[end].0.to_bits() == p.to_bits() {
                below += cells[end].1;
                end += 1;
            }
            // scipy's operations (times 1.0, exact, for BH).
            groups.push((p * (m / below as f64) * scale, start, end));
            start = end;
        }
        let mut set = |slot: Slot, s: i64, value: f64| {
            let store = match slot {
                Slot::Fixed(k) => &mut q.fixed[k].as_mut().expect("created above").1,
                Slot::Dynamic(k) => &mut q.dynamic[k].1,
            };
            *store.entry(s) = value;
        };
        // q = min(1, min of g from this group on): a running minimum from the top.
        let mut running = f64::INFINITY;
        for &(g, start, end) in groups.iter().rev() {
            running = running.min(g);
            let value = if running > 1.0 { 1.0 } else { running.max(0.0) };
            for &(_, _, slot, s) in &cells[start..end] {
                set(slot, s, value);
            }
        }
        for (slot, s) in nan_cells {
            set(slot, s, f64::NAN);
        }
        QValues {
            contexts,
            cells: q,
            listed: None,
            tests,
        }
    }

    /// Tests in the family.
    pub fn tests(&self) -> u64 {
        self.tests
    }

    /// Bytes the q-values take, roughly.
    pub fn bytes(&self) -> usize {
        self.cells.bytes() + self.contexts.class.len() * 4
    }

    /// The q-value of pair (i, j) of numerator `s` and statistics `stats`,
    /// at `position` in a candidate list (NaN when its p-value is NaN;
    /// `last` remembers the last hashed context between calls of one
    /// stream).
    #[inline]
    pub fn q_value(
        &self,
        last: &mut LastContext,
        pair: (usize, usize),
        stats: &PairStats,
        s: i64,
        position: Option<usize>,
    ) -> f64 {
        if let Some(q) = &self.listed {
            return position.and_then(|k| q.get(k).copied()).unwrap_or(f64::NAN);
        }
        self.cells
            .store_of(&self.contexts, last, pair, stats)
            .and_then(|store| store.get(s))
            .unwrap_or(f64::NAN)
    }
}

/// The q-values of `p_values` (one per pair; NaN for a pair that is no
/// test, which stays NaN), in place, and the number of tests: the
/// operations of [`QValues::new`] (scipy's), pair by pair.
fn listed_q_values(mut values: Vec<f64>, method: FdrMethod) -> (Vec<f64>, u64) {
    let mut order: Vec<(f64, usize)> = if values.len() <= u32::MAX as usize {
        // p-values are >= 0 (-0 made +0): their bits sort as they do.
        let mut keys: Vec<(u64, u32)> = values
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_nan())
            .map(|(k, &p)| ((p + 0.0).to_bits(), k as u32))
            .collect();
        debug_assert!(values.iter().all(|p| p.is_nan() || *p >= 0.0));
        sort_keys(&mut keys);
        keys.into_iter()
            .map(|(bits, k)| (f64::from_bits(bits), k as usize))
            .collect()
    } else {
        let mut order: Vec<(f64, usize)> = values
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_nan())
            .map(|(k, &p)| (p, k))
            .collect();
        order.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        order
    };
    let tests = order.len() as u64;
    let m = tests as f64;
    let scale = match method {
        FdrMethod::Bh => 1.0,
        FdrMethod::By => harmonic(tests),
    };
    // g(p) of each group of equal p-values, at the group's last index,
    // written over its members' p-values.
    let mut start = 0;
    while start < order.len() {
        let p = order[start].0;
        let mut end = start;
        while end < order.len() && order[end].0.to_bits() == p.to_bits() {
            end += 1;
        }
        let g = p * (m / end as f64) * scale;
        for entry in &mut order[start..end] {
            entry.0 = g;
        }
        start = end;
    }
    // q = min(1, min of g from this pair on): a running minimum from the top.
    let mut running = f64::INFINITY;
    for &(g, k) in order.iter().rev() {
        running = running.min(g);
        values[k] = if running > 1.0 { 1.0 } else { running.max(0.0) };
    }
    (values, tests)
}

/// The context cache of a stream's [`QValues::q_value`] lookups.
pub type LastContext = Option<(Context, u32)>;

/// `Σ_{i=1..m} 1/i`: summed for m up to 10⁶, beyond by its asymptotic
/// expansion (relative error below 1e-15 there).
fn harmonic(m: u64) -> f64 {
    if m <= 1_000_000 {
        // Smallest terms first.
        (1..=m).rev().map(|i| 1.0 / i as f64).sum()
    } else {
        let x = m as f64;
        let x2 = x * x;
        x.ln() + 0.577_215_664_901_532_9 + 1.0 / (2.0 * x) - 1.0 / (12.0 * x2)
            + 1.0 / (120.0 * x2 * x2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::GeneTies;

    /// scipy's algorithm on a plain list: sort, scale, running minimum, clip.
    fn reference(ps: &[f64], by: bool) -> Vec<f64> {
        let m = ps.len();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
        let scale = harmonic(m as u64);
        let mut g: Vec<f64> = order
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let v = ps[i] * (m as f64 / (k + 1) as f64);
                if by { v * scale } else { v }
            })
            .collect();
        for k in (0..m.saturating_sub(1)).rev() {
            g[k] = g[k].min(g[k + 1]);
        }
        let mut q = vec![0.0; m];
        for (k, &i) in order.iter().enumerate() {
            q[i] = g[k].clamp(0.0, 1.0);
        }
        q
    }

    fn stats(n: usize) -> PairStats {
        PairStats {
            n,
            u: GeneTies {
                tie_pairs: 0,
                distinct: n as u32,
            },
            v: GeneTies {
                tie_pairs: 0,
                distinct: n as u32,
            },
            u_variance: Default::default(),
            v_variance: Default::default(),
        }
    }

    #[test]
    fn cells_give_scipys_q_values() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let pvalues = PValues::new(
            super::super::pvalue::PValueOptions::method(super::super::pvalue::PValueMethod::Auto),
            400,
        );
        // No gene classes: every context hashed (the classed path is the
        // one of the SQL tests on complete data).
        let contexts = ContextIndex {
            class: vec![u32::MAX; 2],
            classes: 0,
        };
        for &by in &[false, true] {
            // 12 and 40: dense stores; 400: S's range is kept in a map.
            for n in [5usize, 12, 40, 400] {
                let mut counts = TestCounts::new(&contexts);
                let mut other = TestCounts::new(&contexts);
                let mut pairs = Vec::new();
                for k in 0..500 {
                    // Two contexts (all samples, and two fewer), skewed S.
                    let st = stats(if k % 3 == 0 { n - 2 } else { n });
                    let n0 = (st.n * (st.n - 1) / 2) as i64;
                    let s = (rng.random_range(-n0..=n0) + rng.random_range(0..=n0)) / 2;
                    let s = s - (s - n0).rem_euclid(2); // S has n0's parity without ties
                    // Counted in two halves, merged as partitions are.
                    let into = if k % 2 == 0 { &mut counts } else { &mut other };
                    into.add(&contexts, (0, 1), &st, s);
                    pairs.push((st, s));
                }
                let counts = counts.merge(other);
                assert_eq!(counts.pairs(), 500);
                let method = if by { FdrMethod::By } else { FdrMethod::Bh };
                let q = QValues::new(
                    ContextIndex {
                        class: vec![u32::MAX; 2],
                        classes: 0,
                    },
                    counts,
                    &pvalues,
                    method,
                );
                let ps: Vec<f64> = pairs
                    .iter()
                    .map(|(st, s)| {
                        pvalues.p_value(st.n, *s, (st.u, st.u_variance), (st.v, st.v_variance))
                    })
                    .collect();
                let expected = reference(&ps, by);
                assert_eq!(q.tests(), 500);
                // A candidate list's family, pair by pair (with pairs that
                // are no tests among them): bit for bit the cells' values.
                let mut listed_ps = ps.clone();
                listed_ps.extend([f64::NAN, f64::NAN]);
                let (listed, tests) = listed_q_values(listed_ps, method);
                assert_eq!(tests, 500);
                assert!(listed[500..].iter().all(|q| q.is_nan()));
                let mut last = None;
                for (k, ((st, s), e)) in pairs.iter().zip(&expected).enumerate() {
                    let got = q.q_value(&mut last, (0, 1), st, *s, None);
                    assert!(
                        (got - e).abs() <= 1e-12 * e.abs(),
                        "n={n} by={by}: {got} vs {e}"
                    );
                    assert_eq!(listed[k].to_bits(), got.to_bits(), "n={n} by={by} pair {k}");
                }
            }
        }
    }

    #[test]
    fn harmonic_numbers() {
        assert_eq!(harmonic(1), 1.0);
        assert!((harmonic(4) - 25.0 / 12.0).abs() < 1e-15);
        // The expansion agrees with the sum where they meet.
        let summed: f64 = (1..=1_000_001u64).rev().map(|i| 1.0 / i as f64).sum();
        assert!((harmonic(1_000_001) - summed).abs() < 1e-13 * summed);
    }

    #[test]
    fn method_names() {
        assert_eq!("BY".parse::<FdrMethod>().unwrap(), FdrMethod::By);
        assert_eq!(FdrMethod::default().to_string(), "bh");
        assert!("holm".parse::<FdrMethod>().is_err());
    }
}

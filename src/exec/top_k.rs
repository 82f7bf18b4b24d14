//! The state behind `kendall_top_partners(source, k [, column names])`:
//! each gene's `k` strongest partners by |tau|.
//!
//! The same [`KendallExec`](super::KendallExec) computes the pairs, in its
//! top-partners mode ([`ScanConfig::top_k`](super::ScanConfig::top_k)):
//! instead of turning pairs into rows, each partition feeds every pair's tau
//! into a bounded per-gene [`TopPartners`] state (gene indices and numbers,
//! no strings), offering the pair to both of its genes. When a partition's
//! pairs are all computed it merges its state into the query's
//! `TopCollector`; the last partition to finish takes the merged state and
//! emits the rows. Memory: at most `m · min(k, m − 1)` entries of 24 bytes
//! per partition.
//!
//! Order of partners (the rank): larger |tau| first, then the partner that
//! comes first in the input. This is a strict total order over a gene's
//! partners, so the result does not depend on the number of partitions or
//! on the order pairs are computed in. Pairs whose tau is NaN (a constant
//! gene) or NULL (fewer shared samples than `kendall.min_periods`) are
//! never partners.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result};

use crate::rank::RankedMatrix;
use crate::schema::{TOP_PARTNERS, top_column};
use crate::stats::pvalue::PValues;

/// One kept partner of a gene.
#[derive(Debug, Clone, Copy)]
struct Entry {
    tau: f64,
    /// `S = nc − nd` of the pair, for its p-value at emission.
    s: i64,
    partner: u32,
}

impl Entry {
    /// `Less` when `self` ranks before `other`: larger |tau|, then the
    /// partner first in the input.
    fn rank_cmp(&self, other: &Self) -> Ordering {
        other
            .tau
            .abs()
            .total_cmp(&self.tau.abs())
            .then(self.partner.cmp(&other.partner))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.rank_cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Greater means ranked later: a max-heap of entries has the weakest
    /// kept partner on top.
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank_cmp(other)
    }
}

/// Each gene's best `k` partners seen so far (one partition's, or merged).
#[derive(Debug)]
pub struct TopPartners {
    k: usize,
    heaps: Vec<BinaryHeap<Entry>>,
}

impl TopPartners {
    /// Empty state for `genes` genes keeping `k` partners each.
    pub fn new(genes: usize, k: usize) -> Self {
        Self {
            k: k.min(genes.saturating_sub(1)),
            heaps: (0..genes).map(|_| BinaryHeap::new()).collect(),
        }
    }

    /// Offers the pair `(i, j)` with its `tau` (not NaN) and `s` to both genes.
    #[inline]
    pub fn offer(&mut self, i: u32, j: u32, tau: f64, s: i64) {
        self.keep(i, Entry { tau, s, partner: j });
        self.keep(j, Entry { tau, s, partner: i });
    }

    #[inline]
    fn keep(&mut self, gene: u32, entry: Entry) {
        let k = self.k;
        let heap = &mut self.heaps[gene as usize];
        if heap.len() < k {
            heap.push(entry);
        } else if let Some(mut weakest) = heap.peek_mut()
            && entry < *weakest
        {
            *weakest = entry;
        }
    }

    /// Adds another partition's state (of the same genes and `k`).
    fn merge(&mut self, other: TopPartners) {
        for (gene, heap) in other.heaps.into_iter().enumerate() {
            for entry in heap {
                self.keep(gene as u32, entry);
            }
        }
    }

    /// The rows, gene by gene in input order, each gene's partners by rank.
    fn into_rows(self) -> TopRows {
        let mut rows = TopRows::default();
        for (gene, heap) in self.heaps.into_iter().enumerate() {
            for (rank, e) in heap.into_sorted_vec().into_iter().enumerate() {
                rows.gene.push(gene as u32);
                rows.partner.push(e.partner);
                rows.tau.push(e.tau);
                rows.s.push(e.s);
                rows.rank.push(rank as i64 + 1);
            }
        }
        rows
    }
}

/// Where a query's partitions merge their [`TopPartners`]: the last to
/// finish takes the merged state.
#[derive(Debug)]
pub(crate) struct TopCollector {
    partitions: usize,
    state: Mutex<(usize, Option<TopPartners>)>,
}

impl TopCollector {
    /// A collector expecting the states of `partitions` partitions.
    pub(crate) fn new(partitions: usize) -> Self {
        Self {
            partitions,
            state: Mutex::new((0, None)),
        }
    }

    /// Merges one partition's state; the rows once every partition's is in.
    pub(crate) fn finish(&self, part: TopPartners) -> Option<TopRows> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (done, merged) = &mut *guard;
        match merged {
            Some(m) => m.merge(part),
            None => *merged = Some(part),
        }
        *done += 1;
        if *done == self.partitions {
            merged.take().map(TopPartners::into_rows)
        } else {
            None
        }
    }
}

/// The result rows, as gene indices and numbers, emitted batch by batch.
#[derive(Debug, Default)]
pub(crate) struct TopRows {
    gene: Vec<u32>,
    partner: Vec<u32>,
    tau: Vec<f64>,
    s: Vec<i64>,
    rank: Vec<i64>,
    /// Rows already emitted.
    pos: usize,
}

/// What emitting needs from the prepared input.
pub(crate) struct EmitContext<'a> {
    pub genes: &'a StringArray,
    pub matrix: &'a RankedMatrix,
    pub pvalues: Option<&'a PValues>,
    pub projection: &'a [usize],
    pub schema: &'a SchemaRef,
}

impl TopRows {
    /// Whether every row has been emitted.
    pub(crate) fn is_done(&self) -> bool {
        self.pos >= self.gene.len()
    }

    /// The next batch of at most `batch_size` rows, of the projected columns;
    /// `p_value` and `n` computed for these rows only when projected.
    pub(crate) fn next_batch(
        &mut self,
        batch_size: usize,
        cx: &EmitContext<'_>,
    ) -> Result<RecordBatch> {
        let range = self.pos..(self.pos + batch_size).min(self.gene.len());
        self.pos = range.end;
        let rows = range.len();
        let stats = |r: usize| {
            let (g, p) = (self.gene[r], self.partner[r]);
            let (i, j) = (g.min(p) as usize, g.max(p) as usize);
            cx.matrix.pair_stats(i, j)
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(cx.projection.len());
        for &c in cx.projection {
            columns.push(match c {
                top_column::GENE => take(
                    cx.genes,
                    &UInt32Array::from(self.gene[range.clone()].to_vec()),
                    None,
                )?,
                top_column::PARTNER => take(
                    cx.genes,
                    &UInt32Array::from(self.partner[range.clone()].to_vec()),
                    None,
                )?,
                top_column::TAU => Arc::new(Float64Array::from(self.tau[range.clone()].to_vec())),
                top_column::RANK => Arc::new(Int64Array::from(self.rank[range.clone()].to_vec())),
                top_column::P_VALUE => {
                    Arc::new(Float64Array::from_iter_values(range.clone().map(|r| {
                        let st = stats(r);
                        cx.pvalues.map_or(f64::NAN, |pv| {
                            pv.p_value(
                                st.n,
                                self.s[r],
                                (st.u, st.u_variance),
                                (st.v, st.v_variance),
                            )
                        })
                    })))
                }
                top_column::N => Arc::new(Int64Array::from_iter_values(
                    range.clone().map(|r| stats(r).n as i64),
                )),
                other => {
                    return Err(DataFusionError::Internal(format!(
                        "{TOP_PARTNERS} has no column {other}"
                    )));
                }
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(cx.schema),
            columns,
            &options,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_k_strongest_with_the_documented_tie_break() {
        let mut top = TopPartners::new(5, 2);
        top.offer(0, 1, 0.5, 1);
        top.offer(0, 2, -0.5, 1);
        top.offer(0, 3, 0.9, 1);
        top.offer(0, 4, -0.5, 1);
        let rows = top.into_rows();
        // Gene 0: 3 (0.9), then 1 (|0.5|, first in input).
        assert_eq!(&rows.partner[..2], &[3, 1]);
        assert_eq!(&rows.rank[..2], &[1, 2]);
    }

    #[test]
    fn merging_gives_the_same_as_one_pass() {
        let pairs = [
            (0, 1, 0.1),
            (0, 2, 0.7),
            (1, 2, -0.7),
            (2, 3, 0.3),
            (0, 3, 0.7),
        ];
        let mut one = TopPartners::new(4, 2);
        let (mut a, mut b) = (TopPartners::new(4, 2), TopPartners::new(4, 2));
        for (n, &(i, j, t)) in pairs.iter().enumerate() {
            one.offer(i, j, t, 0);
            if n % 2 == 0 { &mut a } else { &mut b }.offer(i, j, t, 0);
        }
        a.merge(b);
        let (x, y) = (one.into_rows(), a.into_rows());
        assert_eq!(x.gene, y.gene);
        assert_eq!(x.partner, y.partner);
        assert_eq!(x.tau, y.tau);
    }
}

//! One partition's pairs turned into record batches ([`PairStream`]): the
//! kernel computes a block of pair numerators, the loop turns them into
//! rows (tau, and p-, q-values and `n` when read), applying pushed-down
//! filters before a pair becomes a row; in top-partners mode the pairs feed
//! the partition's bounded per-gene state instead.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::Result;
use datafusion::execution::RecordBatchStream;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, RatioMetrics, Time,
};
use futures::Stream;

use super::ScanConfig;
use super::prepare::Prepared;
use super::rows::RowBuilder;
use super::top_k::{EmitContext, TopPartners, TopRows};
use crate::filter::{PairValues, TauPredicate};
use crate::kernel::bound::SBound;
use crate::kernel::{PairKernel, PairNumerator, Variant, tau};
use crate::pace::{POLL_BUDGET, Pacer};
use crate::rank::RankedMatrix;
use crate::schema::pair_column;
use crate::stats::fdr::LastContext;
use crate::stats::pvalue::PValues;
use crate::work::PairCursor;

/// Per-partition metrics shown by `EXPLAIN ANALYZE`.
#[derive(Debug, Clone)]
pub(super) struct StreamMetrics {
    baseline: BaselineMetrics,
    pairs: Count,
    /// Time in the kernels' counts (each block of pairs' numerators).
    kernel_time: Time,
    /// Time turning numerators into rows outside the kernels: the bound
    /// and filter tests, tau, p- and q-values, appending rows.
    pair_rows_time: Time,
    /// Time assembling the batches from the rows (gene ids and arrays).
    emit_time: Time,
    /// Pairs whose count the kernel stopped early under a filter's bound.
    early_exit_pairs: Count,
    /// Of those, pairs stopped before their first word was counted.
    early_exit_before_count: Count,
    /// Bit-plane words those pairs counted, of the words of their planes.
    early_exit_words: RatioMetrics,
    /// Pairs the filter rejected from `S` and per-gene factors, without
    /// computing tau.
    bound_rejected: Count,
}

impl StreamMetrics {
    /// The output rows and compute time, and the pairs computed: what a
    /// stream of candidate taus in list order records.
    pub(super) fn rows_and_pairs(&self) -> (&BaselineMetrics, &Count) {
        (&self.baseline, &self.pairs)
    }

    pub(super) fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            baseline: BaselineMetrics::new(set, partition),
            pairs: MetricBuilder::new(set).counter("pairs_computed", partition),
            kernel_time: MetricBuilder::new(set).subset_time("kernel_time", partition),
            pair_rows_time: MetricBuilder::new(set).subset_time("pair_rows_time", partition),
            emit_time: MetricBuilder::new(set).subset_time("emit_time", partition),
            early_exit_pairs: MetricBuilder::new(set).counter("early_exit_pairs", partition),
            early_exit_before_count: MetricBuilder::new(set)
                .counter("early_exit_before_count", partition),
            early_exit_words: MetricBuilder::new(set)
                .ratio_metrics("early_exit_word_share", partition)
                .with_display_raw_values(true),
            bound_rejected: MetricBuilder::new(set).counter("bound_rejected_pairs", partition),
        }
    }
}

/// The batch stream of one partition.
pub(super) struct PairStream {
    prepared: Arc<Prepared>,
    cursor: PairCursor,
    /// The partition's blocks are all computed.
    exhausted: bool,
    kernel: PairKernel,
    variant: Variant,
    min_periods: usize,
    predicate: Option<Arc<TauPredicate>>,
    /// The predicate's bound on `S` (not in top-partners mode): pairs of
    /// complete genes it proves fail are dropped without tau.
    bound: Option<Arc<SBound>>,
    /// The predicate compares `p_value` (else it is decided on tau alone).
    filter_reads_p: bool,
    /// The predicate compares `q_value`.
    filter_reads_q: bool,
    /// The last pair context whose q-values were looked up.
    q_last: LastContext,
    batch_size: usize,
    remaining: Option<usize>,
    projection: Vec<usize>,
    schema: SchemaRef,
    /// Numerators of the last block, not yet turned into rows.
    pending: Vec<PairNumerator>,
    pending_pos: usize,
    /// A candidate list's position of `pending[0]`.
    pending_listed: Option<usize>,
    /// The rows of the batch being built.
    rows: RowBuilder,
    /// Block sizes and clock reads, by measured cost.
    pacer: Pacer,
    metrics: StreamMetrics,
    /// Top-partners mode: this partition's per-gene state, until its pairs
    /// are all computed.
    top: Option<TopPartners>,
    /// Top-partners mode: the merged rows, when this partition finished last.
    top_rows: Option<TopRows>,
}

impl PairStream {
    pub(super) fn try_new(
        prepared: Arc<Prepared>,
        partition: usize,
        config: &ScanConfig,
        projection: Vec<usize>,
        schema: SchemaRef,
        metrics: StreamMetrics,
    ) -> Result<Self> {
        let samples = prepared.matrix.samples();
        let wants_n = config.reads_n(&projection);
        let top = config
            .top_k
            .map(|k| TopPartners::new(datafusion::arrow::array::Array::len(&prepared.genes), k));
        let (keep_p, keep_q) = match config.top_k {
            Some(_) => (false, false),
            None => (
                projection.contains(&pair_column::P_VALUE),
                projection.contains(&pair_column::Q_VALUE),
            ),
        };
        // Top-partners mode ranks every pair: no bound there.
        let bound = match (&config.predicate, config.top_k) {
            (Some(pred), None) => SBound::new(pred, config.variant, &prepared.matrix).map(Arc::new),
            _ => None,
        };
        Ok(Self {
            rows: RowBuilder::new([keep_p, keep_q, wants_n]),
            kernel: {
                let kernel = PairKernel::new(
                    prepared.kernel,
                    samples,
                    config.kernel.isa,
                    prepared.planes.clone(),
                )?;
                let kernel = kernel.with_early_exit(bound.clone());
                match config.kernel.rank_sums() {
                    true => kernel.with_rank_sums(),
                    false => kernel,
                }
            },
            bound,
            cursor: prepared.work.cursor(partition),
            prepared,
            exhausted: false,
            variant: config.variant,
            min_periods: config.min_periods,
            predicate: config.predicate.clone(),
            filter_reads_p: config.predicate.as_ref().is_some_and(|p| p.reads_p_value()),
            filter_reads_q: config.predicate.as_ref().is_some_and(|p| p.reads_q_value()),
            q_last: None,
            batch_size: config.batch_size,
            remaining: config.limit,
            projection,
            schema,
            pending: Vec::new(),
            pending_pos: 0,
            pending_listed: None,
            pacer: Pacer::new(),
            metrics,
            top,
            top_rows: None,
        })
    }

    /// Rows this batch may still take.
    fn capacity(&self) -> usize {
        self.batch_size.min(self.remaining.unwrap_or(usize::MAX))
    }

    fn finished(&self) -> bool {
        self.remaining == Some(0) || (self.exhausted && self.pending_pos >= self.pending.len())
    }

    /// The next `run` pending pairs of a matrix without gaps into rows (or,
    /// for top partners, offered to the genes' bounded state), for a query
    /// that reads no p-value and has no gene filter: the same rows as
    /// [`PairStream::fill`]'s general loop, without its per-pair checks. At
    /// most `run` rows are added.
    fn fill_plain(&mut self, m: &RankedMatrix, run: usize) {
        let prepared = Arc::clone(&self.prepared);
        let pairs = &self.pending[self.pending_pos..self.pending_pos + run];
        // A candidate list's position of `pairs[k]`.
        let first = self.pending_listed.map(|f| f + self.pending_pos);
        self.pending_pos += run;
        let n = m.samples();
        // Every pair shares all n samples: valid for all or for none.
        let valid = n >= self.min_periods;
        let variant = self.variant;
        // A function, not a closure: LLVM left the closure out of line (a
        // call per pair) once several loops called it.
        #[inline(always)]
        fn pair_tau(
            m: &RankedMatrix,
            variant: Variant,
            n: usize,
            valid: bool,
            p: &PairNumerator,
        ) -> f64 {
            if valid {
                tau(variant, p.s, n, m.ties(p.i as usize), m.ties(p.j as usize))
            } else {
                f64::NAN
            }
        }
        if let Some(top) = &mut self.top {
            if valid {
                for p in pairs {
                    let t = pair_tau(m, variant, n, valid, p);
                    if !t.is_nan() {
                        top.offer(p.i, p.j, t, p.s);
                    }
                }
            }
            return;
        }
        let q_last = &mut self.q_last;
        let mut q_of = |k: usize, p: &PairNumerator| match &prepared.qvalues {
            Some(q) if valid => {
                let stats = m.pair_stats(p.i as usize, p.j as usize);
                let position = first.map(|f| f + k);
                q.q_value(q_last, (p.i as usize, p.j as usize), &stats, p.s, position)
            }
            _ => f64::NAN,
        };
        let rows = &mut self.rows;
        let before = rows.len();
        match &self.predicate {
            None if !rows.keeps_q() => {
                rows.extend_run(pairs, |p| pair_tau(m, variant, n, valid, p));
            }
            None => {
                for (k, p) in pairs.iter().enumerate() {
                    let t = pair_tau(m, variant, n, valid, p);
                    rows.push_in_run((p.i, p.j), t, || q_of(k, p));
                }
            }
            // A NULL tau passes no comparison.
            Some(_) if !valid => {}
            // A filter on tau alone, nothing else to keep: the hot loop of a
            // thresholded network (most pairs fail), kept free of q.
            Some(pred) if !self.filter_reads_q && !rows.keeps_q() => {
                let mut rejected = 0;
                for p in pairs {
                    // Pairs the bound proves fail: no tau (the others are
                    // decided on tau as without it).
                    if let Some(b) = &self.bound
                        && b.surely_fails(p.i as usize, p.j as usize, p.s)
                    {
                        rejected += 1;
                        continue;
                    }
                    let t = pair_tau(m, variant, n, valid, p);
                    if pred.eval(&PairValues::tau(t)) {
                        rows.push_in_run((p.i, p.j), t, || f64::NAN);
                    }
                }
                self.metrics.bound_rejected.add(rejected);
            }
            Some(pred) => {
                for (k, p) in pairs.iter().enumerate() {
                    if let Some(b) = &self.bound
                        && b.surely_fails(p.i as usize, p.j as usize, p.s)
                    {
                        self.metrics.bound_rejected.add(1);
                        continue;
                    }
                    let t = pair_tau(m, variant, n, valid, p);
                    let mut values = PairValues::tau(t);
                    let mut q = None;
                    if self.filter_reads_q {
                        values.q_value = *q.insert(q_of(k, p));
                    }
                    if pred.eval(&values) {
                        rows.push_in_run((p.i, p.j), t, || q.unwrap_or_else(|| q_of(k, p)));
                    }
                }
            }
        }
        rows.end_run(before, valid, n);
    }

    /// Whether [`PairStream::fill`] must stop before the next pair: the
    /// batch holds `capacity` rows, or `built` pairs (since the clock was
    /// last read, at most `spacing` before the next read) took the poll
    /// past `deadline`. Reading the clock resets `built` and `spacing`.
    #[inline(always)]
    fn must_pause(
        &mut self,
        capacity: usize,
        deadline: Instant,
        built: &mut usize,
        spacing: &mut usize,
    ) -> bool {
        if self.rows.len() >= capacity {
            return true;
        }
        if *built >= *spacing {
            if self.pacer.rows_done(*built, deadline) {
                return true;
            }
            (*built, *spacing) = (0, self.pacer.rows_per_check());
        }
        false
    }

    /// Computes pairs until the batch is full, the partition is done, or the
    /// poll budget (ending at `deadline`, set at `now`) is spent.
    fn fill(&mut self, now: Instant, deadline: Instant) {
        // The kernel's own time is taken in `next_block`; the rest of this
        // call is the per-pair work around it.
        let kernel_before = self.metrics.kernel_time.value();
        self.fill_pairs(now, deadline);
        let kernel = self.metrics.kernel_time.value() - kernel_before;
        let elapsed = now.elapsed().as_nanos() as usize;
        self.metrics
            .pair_rows_time
            .add_duration(std::time::Duration::from_nanos(
                elapsed.saturating_sub(kernel) as u64,
            ));
    }

    /// [`PairStream::fill`]'s loop.
    fn fill_pairs(&mut self, now: Instant, deadline: Instant) {
        let capacity = self.capacity();
        let prepared = Arc::clone(&self.prepared);
        let m = &prepared.matrix;
        self.pacer.resume(now);
        let computed = || prepared.pvalues.as_ref().map_or(0, PValues::computed);
        let mut distributions = computed();
        // Rows built since the clock was last read, and how many may be
        // before the next read (locals: this loop runs once per pair).
        let (mut built, mut spacing) = (0usize, self.pacer.rows_per_check());
        // The common case — every gene complete, no gene filter, no
        // p-value read — takes a tight loop per run of pairs (`fill_plain`):
        // at tens of nanoseconds a pair, the general loop's checks cost as
        // much as the kernel.
        let plain = prepared.gene_filter.is_none()
            && !self.rows.keeps_p()
            && !self.filter_reads_p
            && !m.any_gaps();
        loop {
            if plain {
                while self.pending_pos < self.pending.len() {
                    if self.must_pause(capacity, deadline, &mut built, &mut spacing) {
                        return;
                    }
                    // Pairs looked at, not rows kept, as below.
                    let run = (self.pending.len() - self.pending_pos)
                        .min(spacing - built)
                        .min(capacity - self.rows.len());
                    self.fill_plain(m, run);
                    built += run;
                }
            }
            while self.pending_pos < self.pending.len() {
                if self.must_pause(capacity, deadline, &mut built, &mut spacing) {
                    return;
                }
                built += 1;
                let p = self.pending[self.pending_pos];
                let position = self.pending_listed.map(|f| f + self.pending_pos);
                self.pending_pos += 1;
                self.general_pair(&prepared, p, position);
                // A p-value that needed a distribution of its own costs up
                // to O(n³): not a row to count on the measured spacing.
                if prepared.pvalues.is_some() && computed() != distributions {
                    distributions = computed();
                    spacing = 0;
                }
            }
            if self.rows.len() >= capacity || self.exhausted {
                return;
            }
            let start = Instant::now();
            if start >= deadline {
                return;
            }
            if self.next_block(&prepared, start) {
                built = 0;
            }
        }
    }

    /// One pending pair `p` (at `position` of a candidate list) through
    /// the general loop of [`PairStream::fill`]: the gene filter, the
    /// bound, the pair's statistics and tau; then offered to the top
    /// partners, or turned into a row if it passes the pushed-down filter.
    #[inline(always)]
    fn general_pair(&mut self, prepared: &Prepared, p: PairNumerator, position: Option<usize>) {
        let m = &prepared.matrix;
        if prepared
            .gene_filter
            .as_ref()
            .is_some_and(|g| !g.eval(p.i, p.j))
        {
            return;
        }
        // A pair of complete genes the bound proves fails: no
        // statistics, no tau (not in top-partners mode, which has
        // no bound).
        if let Some(b) = &self.bound
            && !m.has_gaps(p.i as usize)
            && !m.has_gaps(p.j as usize)
            && b.surely_fails(p.i as usize, p.j as usize, p.s)
        {
            self.metrics.bound_rejected.add(1);
            return;
        }
        let stats = m.pair_stats(p.i as usize, p.j as usize);
        // `kendall.missing = 'propagate'`: a pair touching a gene
        // with a missing value is NaN (tau, p and q), as in scipy.
        let propagated =
            prepared.propagate && (m.has_gaps(p.i as usize) || m.has_gaps(p.j as usize));
        // Too few shared samples: tau and p-value are NULL, and so is
        // every pushed-down comparison of them (the row never passes).
        let valid = propagated || stats.n >= self.min_periods;
        let t = if propagated {
            f64::NAN
        } else if valid {
            tau(self.variant, p.s, stats.n, stats.u, stats.v)
        } else {
            f64::NAN
        };
        // Top-partners mode: a pair with a tau is offered to both
        // genes' bounded state, and never becomes a row here.
        if let Some(top) = &mut self.top {
            if valid && !t.is_nan() {
                top.offer(p.i, p.j, t, p.s);
            }
            return;
        }
        let p_value = || match &prepared.pvalues {
            Some(pv) if valid && !propagated => pv.p_value(
                stats.n,
                p.s,
                (stats.u, stats.u_variance),
                (stats.v, stats.v_variance),
            ),
            _ => f64::NAN,
        };
        let q_value = |last: &mut LastContext| match &prepared.qvalues {
            Some(q) if valid && !propagated => {
                q.q_value(last, (p.i as usize, p.j as usize), &stats, p.s, position)
            }
            _ => f64::NAN,
        };
        // A filter on tau alone is decided before any p-value is
        // computed; p-values are then computed for kept rows only.
        let (mut pv, mut qv) = (None, None);
        let pass = match &self.predicate {
            None => true,
            Some(_) if !valid => false,
            Some(pred) => {
                let mut values = PairValues::tau(t);
                if self.filter_reads_p {
                    values.p_value = *pv.insert(p_value());
                }
                if self.filter_reads_q {
                    values.q_value = *qv.insert(q_value(&mut self.q_last));
                }
                pred.eval(&values)
            }
        };
        if pass {
            // p-values, q-values and n are kept only when the query reads them.
            let q_last = &mut self.q_last;
            self.rows.push(
                (p.i, p.j),
                t,
                valid,
                stats.n,
                || *pv.get_or_insert_with(p_value),
                || qv.unwrap_or_else(|| q_value(q_last)),
            );
        }
    }

    /// Computes the partition's next block of pairs into `pending` (its
    /// kernel started at `start`), recording the kernel's early exits;
    /// whether there was one (else the partition is exhausted).
    fn next_block(&mut self, prepared: &Prepared, start: Instant) -> bool {
        let m = &prepared.matrix;
        self.pending.clear();
        self.pending_pos = 0;
        let kernel_time = self.metrics.kernel_time.timer();
        let more = self.cursor.compute_next(
            &prepared.work,
            m,
            self.pacer.block_pairs(),
            &mut self.kernel,
            &mut self.pending,
        );
        kernel_time.done();
        self.pending_listed = self.cursor.listed_start();
        // Pairs the kernel stopped under the filter's bound were
        // computed (in part) but are not pending.
        let exits = self.kernel.take_exits();
        if exits.pairs > 0 {
            self.metrics.early_exit_pairs.add(exits.pairs);
            self.metrics.early_exit_before_count.add(exits.before_count);
            self.metrics.early_exit_words.add_part(exits.words_counted);
            self.metrics.early_exit_words.add_total(exits.words_total);
        }
        if more {
            let visited = self.pending.len() + exits.pairs;
            self.pacer.block_done(visited, start, Instant::now());
            self.metrics.pairs.add(visited);
        } else {
            self.exhausted = true;
        }
        more
    }

    /// Turns the collected rows into a batch of the projected columns.
    fn emit(&mut self) -> Result<RecordBatch> {
        let _emit_time = self.metrics.emit_time.timer();
        let rows = self.rows.len();
        let genes = &self.prepared.genes;
        let dictionary = self.prepared.dictionary.as_ref();
        let columns = self
            .rows
            .take_columns(&self.projection, |indices| match dictionary {
                Some(d) => d.column(indices),
                None => Ok(take(genes, &UInt32Array::from(indices), None)?),
            })?;
        if let Some(r) = &mut self.remaining {
            *r -= rows;
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &options,
        )?)
    }
}

impl Stream for PairStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.top.is_some() || this.top_rows.is_some() {
            return this.poll_top(cx);
        }
        if this.finished() && this.rows.is_empty() {
            return Poll::Ready(None);
        }
        let compute = this.metrics.baseline.elapsed_compute().clone();
        let timer = compute.timer();
        let now = Instant::now();
        this.fill(now, now + POLL_BUDGET);
        let full = this.rows.len() >= this.capacity();
        if full || (this.finished() && !this.rows.is_empty()) {
            let batch = this.emit();
            timer.done();
            return this.metrics.baseline.record_poll(Poll::Ready(Some(batch)));
        }
        timer.done();
        if this.finished() {
            return Poll::Ready(None);
        }
        // Budget spent with a partial batch: let other tasks run, then resume.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl PairStream {
    /// [`Stream::poll_next`] in top-partners mode: compute (paced as for
    /// rows), hand the partition's state to the query's collector when its
    /// pairs are done, and emit the merged rows if it was the last.
    fn poll_top(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<RecordBatch>>> {
        let compute = self.metrics.baseline.elapsed_compute().clone();
        let timer = compute.timer();
        if self.top.is_some() {
            let now = Instant::now();
            self.fill(now, now + POLL_BUDGET);
            if !self.finished() {
                timer.done();
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let part = self.top.take();
            if let (Some(part), Some(collector)) = (part, &self.prepared.top) {
                self.top_rows = collector.finish(part);
            }
        }
        let Some(rows) = self.top_rows.as_mut().filter(|r| !r.is_done()) else {
            self.top_rows = None;
            timer.done();
            return Poll::Ready(None);
        };
        let prepared = &self.prepared;
        let emit = EmitContext {
            genes: &prepared.genes,
            matrix: &prepared.matrix,
            pvalues: prepared.pvalues.as_ref(),
            projection: &self.projection,
            schema: &self.schema,
        };
        let batch = rows.next_batch(self.batch_size, &emit);
        timer.done();
        self.metrics.baseline.record_poll(Poll::Ready(Some(batch)))
    }
}

impl RecordBatchStream for PairStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

impl Drop for PairStream {
    fn drop(&mut self) {
        self.metrics.baseline.done();
    }
}

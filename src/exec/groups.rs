//! Grouped samples (`kendall.groups`): how a partition of a grouped scan
//! runs. The input (and a candidate list) is read and checked once per
//! query ([`GroupedInput`]); then every partition walks the groups in label
//! order, and for each takes the group's preparation (its samples ranked,
//! its work split, its p- and q-values: shared by the partitions, made by
//! the first to ask, released once all have streamed it) and streams its
//! share of the group's pairs, a constant `group` column in front. At most
//! the groups the partitions are computing at once are held ranked.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::Count;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{StreamExt, TryStreamExt};

use super::ScanConfig;
use super::prepare::{Loaded, Prepared, StageMetrics, prepare_loaded};
use super::stream::{PairStream, StreamMetrics};
use crate::input::{Group, MissingValues, SampleGroups};
use crate::load::SharedLoad;
use crate::memory::{QueryMemory, Reservation};

/// A grouped scan's input: read and checked once, kept for the query.
#[derive(Debug)]
pub(super) struct GroupedInput {
    /// The whole matrix, unranked, and what its groups share.
    loaded: Loaded,
    /// The groups computed (those a filter on `group` keeps), in label
    /// order.
    groups: Vec<Group>,
    /// Each group's preparation, shared by the partitions.
    prepared: Vec<Arc<SharedLoad<Prepared>>>,
    /// The groups source's rows.
    _groups_memory: Reservation,
}

/// Counters of the groups' preparations (`group_preparations` and
/// `group_preparations_stopped` in `EXPLAIN ANALYZE`).
#[derive(Debug, Clone)]
pub(super) struct GroupCounters {
    pub(super) started: Count,
    pub(super) stopped: Count,
}

impl GroupedInput {
    /// The groups of `loaded`'s samples that `sample_groups` makes and the
    /// scan's filter on `group` keeps (with `kendall.missing = 'complete'`,
    /// each group's complete samples only), each to be prepared once for
    /// `partitions` partitions.
    pub(super) fn new(
        loaded: Loaded,
        (sample_groups, groups_memory): (SampleGroups, Reservation),
        missing: MissingValues,
        config: &ScanConfig,
        counters: &GroupCounters,
    ) -> Self {
        let complete =
            (missing == MissingValues::Complete).then(|| loaded.matrix.complete_samples());
        let groups = sample_groups.of_samples(
            loaded.matrix.samples,
            &loaded.matrix.sample_ids,
            complete.as_deref(),
            config.group_predicate.as_deref(),
        );
        let prepared = groups
            .iter()
            .map(|_| {
                Arc::new(SharedLoad::new(
                    config.partitions,
                    counters.started.clone(),
                    counters.stopped.clone(),
                ))
            })
            .collect();
        Self {
            loaded,
            groups,
            prepared,
            _groups_memory: groups_memory,
        }
    }

    /// Pairs the scan computes: each group's (every group has every gene).
    pub(super) fn total_pairs(&self, per_group: u64) -> u64 {
        per_group.saturating_mul(self.groups.len() as u64)
    }

    /// The whole matrix, unranked (each group's samples are cut from it).
    pub(super) fn matrix(&self) -> &crate::input::ExpressionMatrix {
        &self.loaded.matrix
    }
}

/// What one partition of a grouped scan streams.
pub(super) struct GroupedPartition {
    pub(super) partition: usize,
    /// The scan's settings for one group (not grouped).
    pub(super) config: ScanConfig,
    /// The output columns (indices into the grouped schema).
    pub(super) projection: Vec<usize>,
    /// The pair columns among them (indices into one group's schema).
    pub(super) pair_columns: Vec<usize>,
    /// The output schema (projected).
    pub(super) schema: SchemaRef,
    pub(super) wants: (bool, bool),
    pub(super) memory: QueryMemory,
    pub(super) metrics: StreamMetrics,
    /// Where each group's ranking and other stages are timed.
    pub(super) stage_metrics: StageMetrics,
}

impl GroupedPartition {
    /// The partition's batches: each group's share in label order.
    pub(super) fn stream(self, input: Arc<GroupedInput>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        let this = Arc::new(self);
        let groups = futures::stream::iter(0..input.groups.len())
            .then(move |g| {
                let (this, input) = (Arc::clone(&this), Arc::clone(&input));
                async move { this.group_stream(input, g).await }
            })
            .try_flatten();
        Box::pin(RecordBatchStreamAdapter::new(schema, groups))
    }

    /// Group `g`'s batches of this partition, `group` in front.
    async fn group_stream(
        self: Arc<Self>,
        input: Arc<GroupedInput>,
        g: usize,
    ) -> Result<futures::stream::BoxStream<'static, Result<RecordBatch>>> {
        let load = Arc::clone(&input.prepared[g]);
        let interest = load.interest();
        let prepared = load
            .get(&interest, || {
                let (input, this) = (Arc::clone(&input), Arc::clone(&self));
                move || {
                    let matrix = input.matrix();
                    let samples = &input.groups[g].samples;
                    let subset = matrix.select_samples(samples, &this.memory)?;
                    let prepared = prepare_loaded(
                        subset,
                        &input.loaded.shared,
                        &this.config,
                        this.wants,
                        &this.memory,
                    )?;
                    this.stage_metrics.record(&prepared.stage_times);
                    Ok(prepared)
                }
            })
            .await?;
        drop(interest);
        tokio::task::yield_now().await;
        let pair_columns = self.pair_columns.clone();
        let pair_schema = Arc::new(self.config.pair_schema().project(&pair_columns)?);
        let pairs = PairStream::try_new(
            prepared,
            self.partition,
            &self.config,
            pair_columns,
            pair_schema,
            self.metrics.clone(),
        )?;
        let label = input.groups[g].label.clone();
        let this = Arc::clone(&self);
        Ok(pairs
            .map(move |batch| with_group(&batch?, &label, &this.projection, &this.schema))
            .boxed())
    }
}

/// `batch` (one group's pair columns) with the `group` column `label`
/// placed where `projection` has it (index 0 of the grouped schema).
fn with_group(
    batch: &RecordBatch,
    label: &str,
    projection: &[usize],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let group: ArrayRef = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
        label, rows,
    )));
    let mut pairs = batch.columns().iter();
    let columns = projection
        .iter()
        .map(|&c| match c {
            0 => Ok(Arc::clone(&group)),
            _ => pairs.next().cloned().ok_or_else(|| {
                DataFusionError::Internal("a group's batch lacks a projected column".into())
            }),
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &options,
    )?)
}

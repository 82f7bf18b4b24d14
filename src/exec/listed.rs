//! `kendall_candidate_taus`: a candidate list's taus line by line, in the
//! list's order, from one output partition.
//!
//! The distinct listed pairs are computed once each, on the scan's
//! `partitions` threads, into one array of taus, as `batch_kendall_tau`
//! computes them ([`super::batch::compute`]); each line of the list then
//! takes its pair's tau ([`ListedPairs::lines`]; NULL for a line naming no
//! pair). So a caller wanting one value per line, in order, needs no join
//! of the list with the pairs' rows and no sort.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, RecordBatchOptions,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalSortExpr};
use futures::{StreamExt, TryStreamExt};

use super::batch::compute;
use super::config::ScanConfig;
use super::prepare::Prepared;
use super::stream::StreamMetrics;
use crate::input::pair_list::ListedPairs;
use crate::memory::QueryMemory;
use crate::schema::{LINE, line_column};

/// The plan's equivalences: in list order, the rows ordered by `line`
/// (when projected), so that `ORDER BY line` sorts nothing.
pub(super) fn equivalences(
    config: &ScanConfig,
    projection: &[usize],
    schema: SchemaRef,
) -> EquivalenceProperties {
    match projection.iter().position(|&c| c == line_column::LINE) {
        Some(at) if config.in_list_order => {
            let line = PhysicalSortExpr::new_default(Arc::new(Column::new(LINE, at)));
            EquivalenceProperties::new_with_orderings(schema, [[line]])
        }
        _ => EquivalenceProperties::new(schema),
    }
}

/// Sets its flag when dropped: a stream dropped before its taus are all
/// computed stops the threads computing them.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The rows of the one partition in list order: every listed pair
/// computed (on a blocking thread, which runs `config.partitions` threads),
/// then the list's lines, `config.batch_size` per batch, with the columns
/// `projection` of `schema`.
pub(super) fn lines_stream(
    prepared: Arc<Prepared>,
    config: ScanConfig,
    projection: Vec<usize>,
    schema: SchemaRef,
    metrics: StreamMetrics,
    memory: QueryMemory,
) -> futures::stream::BoxStream<'static, Result<RecordBatch>> {
    let computed = async move {
        // In list order the list keeps each line's pair (a non-empty list
        // without them was read for another mode).
        let Some(listed) = prepared
            .listed
            .clone()
            .filter(|l| l.is_empty() || !l.lines.is_empty())
        else {
            return Err(DataFusionError::Internal(
                "candidate taus in list order without the list's lines".into(),
            ));
        };
        let reservation =
            memory.reserve("the listed pairs' taus", listed.len() * size_of::<f64>())?;
        let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
        let flag = Arc::clone(&stop.0);
        let (baseline, pairs) = metrics.rows_and_pairs();
        let (elapsed, pairs) = (baseline.elapsed_compute().clone(), pairs.clone());
        let work = Arc::clone(&prepared);
        let batch_size = config.batch_size.max(1);
        let taus = tokio::task::spawn_blocking(move || {
            let _timer = elapsed.timer();
            let taus = compute(&work, &config, &flag)?;
            pairs.add(taus.len());
            Ok::<_, DataFusionError>(taus)
        })
        .await
        .map_err(|e| {
            DataFusionError::Execution(format!("computing the listed pairs failed: {e}"))
        })??;
        drop(stop);
        let rows = Lines {
            taus,
            listed,
            projection,
            schema,
            batch_size,
        };
        let batches = (0..rows.listed.lines.len())
            .step_by(rows.batch_size)
            .map(move |start| {
                let batch = rows.batch(start);
                if let Ok(b) = &batch {
                    metrics.rows_and_pairs().0.record_output(b.num_rows());
                }
                let _ = &reservation;
                batch
            });
        Ok(futures::stream::iter(batches))
    };
    futures::stream::once(computed).try_flatten().boxed()
}

/// The lines' rows, built a batch at a time.
struct Lines {
    /// Each distinct listed pair's tau.
    taus: Vec<f64>,
    listed: Arc<ListedPairs>,
    projection: Vec<usize>,
    schema: SchemaRef,
    batch_size: usize,
}

impl Lines {
    /// The rows of lines `start..start + batch_size` (from 0).
    fn batch(&self, start: usize) -> Result<RecordBatch> {
        let lines = &self.listed.lines;
        let end = (start + self.batch_size).min(lines.len());
        let slots = &lines[start..end];
        let columns: Vec<ArrayRef> = self
            .projection
            .iter()
            .map(|&c| -> ArrayRef {
                match c {
                    line_column::LINE => Arc::new(Int64Array::from_iter_values(
                        (start..end).map(|k| k as i64 + 1),
                    )),
                    _ => {
                        let values: Vec<f64> = slots
                            .iter()
                            .map(|&s| match s {
                                ListedPairs::NO_PAIR => f64::NAN,
                                s => self.taus[s as usize],
                            })
                            .collect();
                        let nulls = slots.contains(&ListedPairs::NO_PAIR).then(|| {
                            NullBuffer::from_iter(slots.iter().map(|&s| s != ListedPairs::NO_PAIR))
                        });
                        Arc::new(Float64Array::new(values.into(), nulls))
                    }
                }
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(end - start));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &options,
        )?)
    }
}

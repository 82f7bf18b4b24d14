//! The source's record batches, read from its DataFusion plan on the load's
//! blocking thread, in batches of bounded size, with the reader's memory
//! reserved in the query's memory pool.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::physical_plan::ParquetSource;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::parquet::basic::Compression;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::Count;
use futures::StreamExt;

use crate::error::data_error;
// Up a floor, on purpose: between batches the reader asks the query's load
// whether it is still wanted, so that a cancelled query stops reading.
use crate::load::{Relay, checkpoint};
use crate::memory::{QueryMemory, Reservation, human};

/// Bytes of values a batch of the source holds at most (when its rows are
/// not fewer than [`MIN_BATCH_ROWS`] and the session's batch size allows):
/// a wide matrix (tens of thousands of samples) is read a few rows at a time.
const BATCH_BYTES: usize = 4 << 20;

/// The fewest rows a batch is asked for, however wide the source.
const MIN_BATCH_ROWS: usize = 16;

/// What a Parquet reader holds of one column chunk decompressed: its current
/// page, at most the data page size of Parquet writers' default (1 MiB in
/// arrow-rs, parquet-mr and pyarrow), or the whole chunk when it is smaller;
/// a dictionary-encoded chunk also its dictionary, decoded (at most the
/// writers' default dictionary page size, 1 MiB, too).
const PARQUET_PAGE_BYTES: u64 = 1 << 20;

/// Every batch of a plan, partition after partition in partition order (so a
/// listing table's files are read in name order and a memory table's
/// partitions in order: gene order is the source's order), one at a time.
///
/// The plan is executed with a batch size of at most `BATCH_BYTES` of
/// values per batch, and each batch is reserved in the query's memory pool
/// as it arrives; [`InputBatches::reserve_reader`] reserves, before anything
/// is read, what a Parquet reader holds while it reads a row group (the
/// compressed column chunks and a decompressed page of each). Both are
/// released when the last batch has been read.
///
/// Iterate it on a blocking thread inside the Tokio runtime (the load's): each
/// batch is awaited with the runtime's handle. A read error names the
/// source; a load asked to stop stops between batches
/// ([`checkpoint`]).
pub struct InputBatches {
    plan: Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
    what: String,
    next_partition: usize,
    stream: Option<SendableRecordBatchStream>,
    handle: tokio::runtime::Handle,
    /// Where a plan of another copy of DataFusion is executed and polled
    /// (see [`Relay`]); `None` for this library's own plans, read here.
    relay: Option<Relay>,
    /// Counts the loads that read this source in place
    /// ([`InputBatches::read_in_place`]).
    in_place: Option<Count>,
    /// The reader's buffers (a Parquet row group), reserved before reading.
    reader: Option<Reservation>,
    /// The batch last read, reserved as it arrives.
    batch: Option<Reservation>,
}

impl InputBatches {
    /// The batches of `plan`, executed in `context` (with a batch size
    /// bounded as `BATCH_BYTES` says); `what` names the source in errors.
    /// Call it inside the Tokio runtime.
    pub fn new(
        plan: Arc<dyn ExecutionPlan>,
        context: Arc<TaskContext>,
        what: &str,
    ) -> Result<Self> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| data_error(format!("cannot read {what}: {e}")))?;
        let columns = plan.schema().fields().len().max(1);
        let context = with_batch_size(&context, batch_rows(columns, &context));
        let relay = if has_foreign(plan.as_ref()) {
            Some(crate::load::relay().ok_or_else(|| {
                data_error(format!(
                    "cannot read {what}: a plan of another copy of DataFusion is read only by \
                     a query's load"
                ))
            })?)
        } else {
            None
        };
        Ok(Self {
            plan,
            context,
            what: what.to_string(),
            next_partition: 0,
            stream: None,
            handle,
            relay,
            in_place: None,
            reader: None,
            batch: None,
        })
    }

    /// These batches, counting in `count` each load that reads their
    /// source in place (its sparse table's arrays or files).
    pub fn counting_in_place(mut self, count: Count) -> Self {
        self.in_place = Some(count);
        self
    }

    /// Counts a read of the source in place.
    pub(crate) fn read_in_place(&self) {
        if let Some(count) = &self.in_place {
            count.add(1);
        }
    }

    /// The sparse table the plan scans, when the plan is the table's own
    /// scan (the long layout then reads its entries in place: its arrays,
    /// or its files without triples); never a table a plan derives from
    /// one (see
    /// [`SparseTable::of_scan`](super::sparse_table::SparseTable::of_scan)).
    pub(crate) fn sparse_table(&self) -> Option<super::sparse_table::SparseTable> {
        super::sparse_table::SparseTable::of_scan(self.plan.as_ref())
    }

    /// Reserves in `memory`, before anything is read, what the source's
    /// reader holds at once while it reads: for Parquet files, the largest
    /// row group's compressed column chunks (the reader fetches a row group
    /// whole) and a decompressed page (and dictionary) of each. An error
    /// naming the row group
    /// when the pool cannot grant it. Other sources read a bounded batch at
    /// a time, reserved as it arrives.
    pub fn reserve_reader(&mut self, memory: &QueryMemory) -> Result<()> {
        let largest = self
            .handle
            .block_on(largest_row_group(&self.plan, &self.context))
            .map_err(|e| self.read_error(e))?;
        if let Some(group) = largest {
            let what = format!(
                "Parquet reader's buffers (the largest row group, {} rows: {} compressed, {} \
                 of decompressed pages and dictionaries; files written with smaller row groups \
                 need less)",
                group.rows,
                human(group.compressed as usize),
                human(group.pages as usize)
            );
            let bytes = usize::try_from(group.compressed + group.pages).unwrap_or(usize::MAX);
            self.reader = Some(memory.reserve(&what, bytes)?);
        }
        self.batch = Some(memory.reserve("input batch as read", 0)?);
        Ok(())
    }

    fn read_error(&self, e: impl std::fmt::Display) -> datafusion::error::DataFusionError {
        data_error(format!("cannot read {}: {e}", self.what))
    }

    /// Reserves `batch` (in place of the batch before).
    fn account(&mut self, batch: &RecordBatch) -> Result<()> {
        if let Some(reservation) = self.batch.as_mut() {
            let bytes = batch.get_array_memory_size();
            reservation.shrink_to(bytes);
            let held = reservation.size();
            reservation.try_grow(bytes.saturating_sub(held))?;
        }
        Ok(())
    }
}

/// Rows per batch: [`BATCH_BYTES`] of 8-byte values of `columns` columns,
/// within [`MIN_BATCH_ROWS`] and the session's batch size.
fn batch_rows(columns: usize, context: &TaskContext) -> usize {
    let session = context.session_config().batch_size().max(1);
    (BATCH_BYTES / 8 / columns).max(MIN_BATCH_ROWS).min(session)
}

/// `context` with batches of `rows` rows (itself when it has that already).
fn with_batch_size(context: &Arc<TaskContext>, rows: usize) -> Arc<TaskContext> {
    if context.session_config().batch_size() == rows {
        return Arc::clone(context);
    }
    Arc::new(TaskContext::new(
        context.task_id(),
        context.session_id(),
        context.session_config().clone().with_batch_size(rows),
        context.scalar_functions().clone(),
        context.higher_order_functions().clone(),
        context.aggregate_functions().clone(),
        context.window_functions().clone(),
        context.runtime_env(),
    ))
}

/// What a Parquet reader holds while it reads one row group.
#[derive(Debug, Clone, Copy)]
struct RowGroupNeed {
    rows: i64,
    /// The read columns' compressed chunks.
    compressed: u64,
    /// A decompressed page of each read column (and its decoded dictionary).
    pages: u64,
}

/// The row group of the Parquet files scanned in `plan` that needs the most
/// memory to read (its read columns only); `None` when `plan` scans no
/// Parquet file. Footers come from the session's metadata cache when they
/// are there (the query's planning read them).
async fn largest_row_group(
    plan: &Arc<dyn ExecutionPlan>,
    context: &TaskContext,
) -> Result<Option<RowGroupNeed>> {
    let mut largest: Option<RowGroupNeed> = None;
    let mut stack = vec![Arc::clone(plan)];
    let runtime = context.runtime_env();
    while let Some(node) = stack.pop() {
        stack.extend(node.children().into_iter().cloned());
        let Some(exec) = node.downcast_ref::<DataSourceExec>() else {
            continue;
        };
        let Some((config, _)) = exec.downcast_to_file_source::<ParquetSource>() else {
            continue;
        };
        let schema = node.schema();
        let read: HashSet<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let store = runtime.object_store(&config.object_store_url)?;
        let cache = runtime.cache_manager.get_file_metadata_cache();
        let mut seen = HashSet::new();
        for file in config.file_groups.iter().flat_map(|g| g.files()) {
            // A file split into byte ranges is listed once per range.
            if !seen.insert(file.object_meta.location.clone()) {
                continue;
            }
            let metadata = DFParquetMetadata::new(store.as_ref(), &file.object_meta)
                .with_file_metadata_cache(Some(Arc::clone(&cache)))
                .fetch_metadata()
                .await?;
            for group in metadata.row_groups() {
                let mut need = RowGroupNeed {
                    rows: group.num_rows(),
                    compressed: 0,
                    pages: 0,
                };
                for column in group.columns() {
                    let top = column.column_path().parts().first();
                    if !top.is_some_and(|name| read.contains(name.as_str())) {
                        continue;
                    }
                    let size = |x: i64| u64::try_from(x).unwrap_or(0);
                    need.compressed += size(column.compressed_size());
                    // An uncompressed page is read in place, a dictionary
                    // is decoded whatever the compression.
                    let page = size(column.uncompressed_size()).min(PARQUET_PAGE_BYTES);
                    let compressed = column.compression() != Compression::UNCOMPRESSED;
                    let dictionary = column.dictionary_page_offset().is_some();
                    need.pages += page * (u64::from(compressed) + u64::from(dictionary));
                }
                if largest.is_none_or(|l| need.compressed + need.pages > l.compressed + l.pages) {
                    largest = Some(need);
                }
            }
        }
    }
    Ok(largest)
}

impl InputBatches {
    /// A stream of partition `partition` of the plan: executed here, or by
    /// the relay.
    fn execute(&self, partition: usize) -> Result<SendableRecordBatchStream> {
        match &self.relay {
            None => self.plan.execute(partition, Arc::clone(&self.context)),
            Some(relay) => relay.run(|| {
                let (plan, context) = (Arc::clone(&self.plan), Arc::clone(&self.context));
                async move { plan.execute(partition, context) }
            })?,
        }
    }
}

/// The next batch of `*stream` (which must be `Some`), polled by `relay`:
/// the stream goes to the job and comes back with the batch, or (the job
/// dropped before it ended) with nothing, to be polled again.
fn relayed_next(
    relay: &Relay,
    stream: &mut Option<SendableRecordBatchStream>,
) -> Result<Option<Result<RecordBatch>>> {
    /// Puts the stream back in the slot when the job ends or is dropped.
    struct Lent {
        stream: Option<SendableRecordBatchStream>,
        slot: Arc<std::sync::Mutex<Option<SendableRecordBatchStream>>>,
    }
    impl Drop for Lent {
        fn drop(&mut self) {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            *slot = self.stream.take();
        }
    }
    let slot = Arc::new(std::sync::Mutex::new(stream.take()));
    let next = relay.run(|| {
        let slot = Arc::clone(&slot);
        async move {
            let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            let mut lent = Lent {
                stream: taken,
                slot,
            };
            match lent.stream.as_mut() {
                Some(stream) => stream.next().await,
                None => Some(Err(data_error("the input stream was lost".to_string()))),
            }
        }
    });
    *stream = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    next
}

/// Whether `plan` holds a plan of another copy of DataFusion (through
/// `datafusion-ffi`, feature `ffi`), which must be executed and polled by
/// the [`Relay`].
fn has_foreign(plan: &dyn ExecutionPlan) -> bool {
    #[cfg(feature = "ffi")]
    if plan.is::<datafusion_ffi::execution_plan::ForeignExecutionPlan>() {
        return true;
    }
    plan.children()
        .into_iter()
        .any(|child| has_foreign(child.as_ref()))
}

impl Iterator for InputBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if let Err(e) = checkpoint() {
                return Some(Err(e));
            }
            let Some(stream) = self.stream.as_mut() else {
                let partitions = self.plan.properties().partitioning.partition_count();
                if self.next_partition >= partitions {
                    // Read: the reader's memory is free again.
                    self.reader = None;
                    self.batch = None;
                    return None;
                }
                match self.execute(self.next_partition) {
                    Ok(s) => self.stream = Some(s),
                    Err(e) => return Some(Err(self.read_error(e))),
                }
                self.next_partition += 1;
                continue;
            };
            let next = match &self.relay {
                None => Ok(self.handle.block_on(stream.next())),
                Some(relay) => relayed_next(relay, &mut self.stream),
            };
            let next = match next {
                Ok(next) => next,
                Err(e) => {
                    self.stream = None;
                    self.next_partition = usize::MAX;
                    return Some(Err(e));
                }
            };
            match next {
                Some(Ok(batch)) if batch.num_rows() == 0 => continue,
                Some(Ok(batch)) => {
                    if let Err(e) = self.account(&batch) {
                        self.stream = None;
                        self.next_partition = usize::MAX;
                        return Some(Err(e));
                    }
                    return Some(Ok(batch));
                }
                Some(Err(e)) => {
                    self.stream = None;
                    self.next_partition = usize::MAX;
                    return Some(Err(self.read_error(e)));
                }
                None => self.stream = None,
            }
        }
    }
}

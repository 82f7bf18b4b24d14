//! The source's record batches, read from its DataFusion plan on the load's
//! blocking thread.

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::ExecutionPlan;
use futures::StreamExt;

use super::data_error;
use crate::load::checkpoint;

/// Every batch of a plan, partition after partition in partition order (so a
/// listing table's files are read in name order and a memory table's
/// partitions in order: gene order is the source's order), one at a time.
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
}

impl InputBatches {
    /// The batches of `plan`, executed in `context`; `what` names the source
    /// in errors. Call it inside the Tokio runtime.
    pub fn new(
        plan: Arc<dyn ExecutionPlan>,
        context: Arc<TaskContext>,
        what: &str,
    ) -> Result<Self> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| data_error(format!("cannot read {what}: {e}")))?;
        Ok(Self {
            plan,
            context,
            what: what.to_string(),
            next_partition: 0,
            stream: None,
            handle,
        })
    }

    fn read_error(&self, e: impl std::fmt::Display) -> datafusion::error::DataFusionError {
        data_error(format!("cannot read {}: {e}", self.what))
    }
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
                    return None;
                }
                match self
                    .plan
                    .execute(self.next_partition, Arc::clone(&self.context))
                {
                    Ok(s) => self.stream = Some(s),
                    Err(e) => return Some(Err(self.read_error(e))),
                }
                self.next_partition += 1;
                continue;
            };
            match self.handle.block_on(stream.next()) {
                Some(Ok(batch)) if batch.num_rows() == 0 => continue,
                Some(Ok(batch)) => return Some(Ok(batch)),
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

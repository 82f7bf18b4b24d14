//! Which tile ranges a cluster task computes: a `KendallExec` planned for
//! a Ballista cluster has one child, an in-memory scan with one partition
//! per tile range, whose partitions Ballista hands out to its tasks.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, UInt32Array};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use futures::TryStreamExt;

/// An in-memory scan with one partition per tile range of `ranges`, holding
/// one row: the range's number. On a cluster it is a `KendallExec`'s only
/// child: Ballista restricts a task's plan to the task's partitions by
/// cutting the partitions of such leaves (it cannot cut ours), so what is
/// left of it tells each task which ranges it computes. Without it, a task
/// for partition 5 would run the plan's partition 0.
pub fn partition_slices(ranges: std::ops::Range<usize>) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;
    let schema = Arc::new(Schema::new(vec![Field::new(
        "kendall_range",
        DataType::UInt32,
        false,
    )]));
    let partitions = ranges
        .map(|r| {
            let range = u32::try_from(r).map_err(|_| {
                DataFusionError::Plan(format!("{r} partitions: too many for one scan"))
            })?;
            let column: ArrayRef = Arc::new(UInt32Array::from(vec![range]));
            Ok(vec![RecordBatch::try_new(
                Arc::clone(&schema),
                vec![column],
            )?])
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(MemorySourceConfig::try_new_exec(&partitions, schema, None)?)
}

/// The tile range that partition `partition` of a cluster plan computes:
/// the number in that partition of its `slices` child.
pub(super) async fn slice_of(
    slices: &Arc<dyn ExecutionPlan>,
    partition: usize,
    context: Arc<TaskContext>,
) -> Result<usize> {
    let batches: Vec<RecordBatch> = slices.execute(partition, context)?.try_collect().await?;
    batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<UInt32Array>()
                .map(|a| a.value(0))
        })
        .map(|r| r as usize)
        .ok_or_else(|| {
            DataFusionError::Internal(format!(
                "KendallExec: partition {partition} of its task has no tile range"
            ))
        })
}

//! Two matrices stacked into one for `kendall_cross_pairs`: the left
//! matrix's genes, then the right one's, each on the samples both have,
//! matched by name, in the left matrix's order.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, StringArray};
use datafusion::error::{DataFusionError, Result};

use super::matrix::{ExpressionMatrix, MatrixValues};
use super::sparse::SparseValues;
use crate::memory::{QueryMemory, try_with_capacity};

/// The left matrix's genes, then the right one's, on the samples both have
/// (by name, in the left matrix's order). An error when fewer than 2
/// samples are shared; `left_what` and `right_what` name the two inputs in
/// it.
pub(crate) fn stack(
    mut left: ExpressionMatrix,
    left_what: &str,
    mut right: ExpressionMatrix,
    right_what: &str,
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    let right_index: HashMap<&str, usize> = right
        .sample_ids
        .iter()
        .enumerate()
        .map(|(k, s)| (s.as_str(), k))
        .collect();
    // (left column, right column) of each shared sample.
    let shared: Vec<(usize, usize)> = left
        .sample_ids
        .iter()
        .enumerate()
        .filter_map(|(k, s)| right_index.get(s.as_str()).map(|&r| (k, r)))
        .collect();
    if shared.len() < 2 {
        return Err(DataFusionError::Execution(format!(
            "{} and {} share {} sample name(s) ({} and {} samples); \
             at least 2 are needed (samples are matched by column name, or by sample id with \
             layout 'long')",
            left_what,
            right_what,
            shared.len(),
            left.samples,
            right.samples
        )));
    }
    let ids = StringArray::from_iter_values(
        (0..left.genes.len())
            .map(|g| left.genes.value(g))
            .chain((0..right.genes.len()).map(|g| right.genes.value(g))),
    );
    let sample_ids: Vec<String> = shared
        .iter()
        .map(|&(k, _)| left.sample_ids[k].clone())
        .collect();
    let n = shared.len();
    let genes = left.genes.len() + right.genes.len();
    if let (MatrixValues::Sparse(l), MatrixValues::Sparse(r)) =
        (&mut left.values, &mut right.values)
    {
        // Both sparse: stacked sparse, each side's samples renumbered
        // (taken as they are where they already are the shared samples,
        // in order).
        let renumber = |samples: usize, column: fn(&(usize, usize)) -> usize| {
            let mut to = vec![u32::MAX; samples];
            for (new, pair) in shared.iter().enumerate() {
                to[column(pair)] = new as u32;
            }
            to
        };
        let side = |m: &mut SparseValues, to: Vec<u32>| {
            if to.iter().enumerate().all(|(s, &t)| t == s as u32) {
                Ok(std::mem::take(m))
            } else {
                m.remap_samples(&to)
            }
        };
        let mut stacked = side(l, renumber(left.samples, |p| p.0))?;
        stacked.append(side(r, renumber(right.samples, |p| p.1))?);
        let mut reservation = memory.reserve(
            &format!("stacked non-zero values ({genes} genes x {n} shared samples)"),
            0,
        )?;
        reservation.try_grow(stacked.heap_bytes())?;
        return Ok(ExpressionMatrix::from_sparse(
            ids,
            sample_ids,
            stacked,
            reservation,
        ));
    }
    // Otherwise dense, a sparse side expanded.
    stack_dense(left, right, (ids, sample_ids), &shared, memory)
}

/// Two matrices stacked dense (a sparse one expanded first) on the
/// `shared` samples (left column, right column), as `(ids, sample_ids)`.
fn stack_dense(
    left: ExpressionMatrix,
    right: ExpressionMatrix,
    (ids, sample_ids): (StringArray, Vec<String>),
    shared: &[(usize, usize)],
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    let n = shared.len();
    let genes = left.genes.len() + right.genes.len();
    let (left, right) = (left.into_dense(memory)?, right.into_dense(memory)?);
    /// A dense matrix's values and residuals.
    fn dense(m: &ExpressionMatrix) -> (&[f64], &[i16]) {
        match &m.values {
            MatrixValues::Dense { values, residuals } => (values, residuals),
            MatrixValues::Sparse(_) => unreachable!("expanded above"),
        }
    }
    let (left_values, right_values) = (dense(&left), dense(&right));
    let exact = left_values.1.is_empty() && right_values.1.is_empty();
    let per_value = if exact { 8 } else { 10 };
    let mut reservation = memory.reserve(
        &format!("stacked input values ({genes} genes x {n} shared samples)"),
        0,
    )?;
    reservation.try_grow(genes * n * per_value)?;
    let mut values = try_with_capacity::<f64>(genes * n, "stacked input values")?;
    let mut residuals = if exact {
        Vec::new()
    } else {
        try_with_capacity::<i16>(genes * n, "stacked input values")?
    };
    let left_columns: Vec<usize> = shared.iter().map(|&(l, _)| l).collect();
    let right_columns: Vec<usize> = shared.iter().map(|&(_, r)| r).collect();
    let sides = [
        (&left, left_values, &left_columns),
        (&right, right_values, &right_columns),
    ];
    for (matrix, (matrix_values, matrix_residuals), columns) in sides {
        for g in 0..matrix.genes.len() {
            let row = g * matrix.samples;
            for &column in columns {
                values.push(matrix_values[row + column]);
                if !exact {
                    residuals.push(matrix_residuals.get(row + column).copied().unwrap_or(0));
                }
            }
        }
    }
    // The two matrices' own values are released when they are dropped here.
    Ok(ExpressionMatrix::from_parts(
        ids,
        sample_ids,
        values,
        residuals,
        reservation,
    ))
}

//! Reading numeric columns so that their order survives exactly.
//!
//! Kendall's tau depends only on the order of each gene's values. A Float64
//! holds every integer up to 2^53 exactly, but not the 64-bit integers above
//! it: cast to f64, 2^53 and 2^53 + 1 become equal and would rank as a tie.
//! So Int64 and UInt64 values are split into the nearest f64 plus the integer
//! remainder the rounding lost (at most 2^10 in magnitude, an `i16`); the
//! pair `(f64, remainder)` orders exactly as the integers do, and also
//! against floating-point values (whose remainder is 0) of other columns.
//! Every other numeric type is exact as f64.

use datafusion::arrow::array::{Array, AsArray, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use datafusion::error::{DataFusionError, Result};

use super::missing::{MissingValues, checked_value, missing_value};
use super::names::column_as;
use crate::error::data_error;
use crate::memory::{Reservation, try_extend};

/// A value: its nearest f64 (NaN when missing) and, for a 64-bit integer,
/// the remainder `integer - f64` that f64 cannot hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exact {
    /// The nearest f64; NaN for a missing value.
    pub value: f64,
    /// `integer - value`, exact; 0 for every value an f64 holds exactly.
    pub residual: i16,
}

impl Exact {
    /// A missing value.
    pub const MISSING: Exact = Exact {
        value: f64::NAN,
        residual: 0,
    };
}

/// Splits an integer into its nearest f64 and the remainder.
fn split(x: i128) -> Exact {
    let value = x as f64;
    // |x| < 2^64: the rounding error is at most half an ulp of 2^64, 2^11,
    // and the rounded value, an integer of at most 2^64, is exact in i128.
    let residual = x - value as i128;
    Exact {
        value,
        residual: residual as i16,
    }
}

/// A numeric column of a batch, read without losing order.
pub(super) enum NumericColumn {
    /// Floating-point and integer types of up to 32 bits, as f64 (exact).
    Float(Float64Array),
    /// Int64: exact with a remainder.
    Int64(datafusion::arrow::array::Int64Array),
    /// UInt64: exact with a remainder.
    UInt64(datafusion::arrow::array::UInt64Array),
}

impl NumericColumn {
    /// Column `name` of `batch` (read from `file`).
    pub(super) fn read(batch: &RecordBatch, name: &str, what: &str) -> Result<Self> {
        let column = batch
            .column_by_name(name)
            .ok_or_else(|| data_error(format!("column '{name}' missing from {what}")))?;
        Ok(match column.data_type() {
            DataType::Int64 => Self::Int64(column.as_primitive::<Int64Type>().clone()),
            DataType::UInt64 => Self::UInt64(column.as_primitive::<UInt64Type>().clone()),
            _ => Self::Float(
                column_as(batch, name, what, &DataType::Float64)?
                    .as_primitive::<Float64Type>()
                    .clone(),
            ),
        })
    }

    /// Value `r`, checked as [`checked_value`] does (`what` names the gene and
    /// sample in errors).
    pub(super) fn value(
        &self,
        r: usize,
        missing: MissingValues,
        what: impl Fn() -> String,
    ) -> Result<Exact> {
        let integer = match self {
            Self::Float(column) => {
                return Ok(Exact {
                    value: checked_value(column, r, missing, what)?,
                    residual: 0,
                });
            }
            Self::Int64(column) if !column.is_null(r) => i128::from(column.value(r)),
            Self::UInt64(column) if !column.is_null(r) => i128::from(column.value(r)),
            // A null integer: missing, as the policy says.
            _ => {
                return Ok(Exact {
                    value: missing_value(true, missing, what)?,
                    residual: 0,
                });
            }
        };
        Ok(split(integer))
    }
}

/// The values of a genes × samples matrix as they are read: f64s, plus the
/// remainders of 64-bit integers once one of them needs any. Both are
/// reserved in the query's memory pool before they are allocated.
#[derive(Debug)]
pub(super) struct ValueBuffer {
    pub(super) values: Vec<f64>,
    /// Empty while every value is exact as f64; then one per value.
    pub(super) residuals: Vec<i16>,
    pub(super) reservation: Reservation,
}

impl ValueBuffer {
    /// An empty buffer accounted in `reservation`.
    pub(super) fn new(reservation: Reservation) -> Self {
        Self {
            values: Vec::new(),
            residuals: Vec::new(),
            reservation,
        }
    }

    /// Makes the reservation hold at least `bytes`.
    fn reserve_total(&mut self, bytes: usize) -> Result<()> {
        let held = self.reservation.size();
        if bytes > held {
            self.reservation.try_grow(bytes - held)?;
        }
        Ok(())
    }

    /// Room for `len` values without reallocating (when the size is known
    /// before reading), reserved first.
    pub(super) fn reserve_values(&mut self, len: usize) -> Result<()> {
        if len <= self.values.capacity() {
            return Ok(());
        }
        let per_value = if self.residuals.is_empty() { 8 } else { 10 };
        self.reserve_total(len.saturating_mul(per_value))?;
        self.values
            .try_reserve_exact(len - self.values.len())
            .map_err(|e| {
                DataFusionError::ResourcesExhausted(format!(
                    "cannot allocate the input values ({len} values): {e}"
                ))
            })
    }

    /// Grows the buffer to `len` values (0.0), reserving them first. Capacity
    /// grows geometrically (by half), so that a source read batch by batch
    /// is copied a bounded number of times; a size reserved up front with
    /// [`Self::reserve_values`] is used first.
    pub(super) fn grow_to(&mut self, len: usize) -> Result<()> {
        if len <= self.values.len() {
            return Ok(());
        }
        if len > self.values.capacity() {
            let room = len.max(
                self.values
                    .capacity()
                    .saturating_add(self.values.capacity() / 2),
            );
            self.reserve_values(room)?;
        }
        let per_value = if self.residuals.is_empty() { 8 } else { 10 };
        self.reserve_total(len.saturating_mul(per_value))?;
        try_extend(&mut self.values, len, 0.0, "input values")?;
        if !self.residuals.is_empty() {
            try_extend(&mut self.residuals, len, 0, RESIDUALS)?;
        }
        Ok(())
    }

    /// Stores `x` at `index` (below the length).
    #[inline]
    pub(super) fn set(&mut self, index: usize, x: Exact) -> Result<()> {
        self.values[index] = x.value;
        if x.residual != 0 && self.residuals.is_empty() {
            // The first integer beyond f64: remainders from now on.
            let len = self.values.len();
            self.reserve_total(len.saturating_mul(10))?;
            try_extend(&mut self.residuals, len, 0, RESIDUALS)?;
        }
        if !self.residuals.is_empty() {
            self.residuals[index] = x.residual;
        }
        Ok(())
    }
}

const RESIDUALS: &str = "remainders of 64-bit integer values";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_split_exactly() {
        let two53 = 1i128 << 53;
        assert_eq!(
            split(two53),
            Exact {
                value: 2f64.powi(53),
                residual: 0
            }
        );
        assert_eq!(
            split(two53 + 1),
            Exact {
                value: 2f64.powi(53),
                residual: 1
            }
        );
        let max = i128::from(u64::MAX);
        let e = split(max);
        assert_eq!(e.value, 2f64.powi(64));
        assert_eq!(e.value as i128 + i128::from(e.residual), max);
        let min = i128::from(i64::MIN);
        let e = split(min + 1);
        assert_eq!(e.value as i128 + i128::from(e.residual), min + 1);
        // The pair orders as the integers do.
        let mut xs: Vec<i128> = vec![max, max - 1, two53 + 1, two53, -two53 - 1, 0, min, min + 1];
        let mut keys: Vec<(f64, i16, i128)> = xs
            .iter()
            .map(|&x| {
                let e = split(x);
                (e.value, e.residual, x)
            })
            .collect();
        keys.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        xs.sort();
        assert_eq!(keys.iter().map(|k| k.2).collect::<Vec<_>>(), xs);
    }
}

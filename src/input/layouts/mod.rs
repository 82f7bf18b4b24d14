//! The three layouts of an expression matrix, one file each: genes as rows
//! ([`rows`]), genes as columns ([`columns`]) and long (tidy) triples
//! ([`long`]). Each checks a source's schema for its layout (`inspect_*`)
//! and reads its batches into an [`ExpressionMatrix`](crate::input::ExpressionMatrix)
//! (`load_*`).

mod columns;
mod long;
mod rows;

pub(super) use columns::{inspect_columns, load_columns};
pub(super) use long::{inspect_long, load_long};
pub(super) use rows::{load_rows, rows_columns};

use datafusion::error::{DataFusionError, Result};

use crate::memory::Reservation;

/// Grows `v` to hold `extra` more elements, accounting the capacity in
/// `reservation` first; capacity grows by half, so that a source read batch
/// by batch is copied a bounded number of times.
pub(in crate::input) fn grow<T>(
    v: &mut Vec<T>,
    extra: usize,
    reservation: &mut Reservation,
    what: &str,
) -> Result<()> {
    let need = v.len().saturating_add(extra);
    if need <= v.capacity() {
        return Ok(());
    }
    let room = need.max(v.capacity().saturating_add(v.capacity() / 2));
    reservation.try_grow((room - v.capacity()).saturating_mul(std::mem::size_of::<T>()))?;
    v.try_reserve_exact(room - v.len()).map_err(|e| {
        DataFusionError::ResourcesExhausted(format!(
            "cannot allocate the {what} ({room} values): {e}"
        ))
    })
}

//! Names and columns as messages show them and a load reads them: which
//! types are text, lists of names kept short, one column cast for reading.

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::Result;

use crate::error::data_error;

/// Whether `dt` is a string type.
pub(super) fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Whether `dt` holds text: a string type, or a dictionary of strings (a
/// pandas categorical, a Parquet column written with its dictionary).
pub(super) fn is_text(dt: &DataType) -> bool {
    is_string(dt) || matches!(dt, DataType::Dictionary(_, v) if is_string(v))
}

/// How many names an error message lists before "and N more".
const LISTED_NAMES: usize = 8;

/// `a, b, c`, or `a, b, …, h and 19,992 more` past [`LISTED_NAMES`]: a
/// single-cell matrix has tens of thousands of columns, and an error message
/// that lists them all buries the message itself.
pub(crate) fn short_list<I>(names: I) -> String
where
    I: IntoIterator,
    I::Item: std::fmt::Display,
{
    let mut shown = Vec::with_capacity(LISTED_NAMES);
    let mut rest = 0usize;
    for name in names {
        if shown.len() < LISTED_NAMES {
            shown.push(name.to_string());
        } else {
            rest += 1;
        }
    }
    let mut list = shown.join(", ");
    if rest > 0 {
        list.push_str(&format!(" and {rest} more"));
    }
    list
}

/// The column names of `schema`, shortened by [`short_list`].
pub(super) fn column_list(schema: &SchemaRef) -> String {
    short_list(schema.fields().iter().map(|f| f.name()))
}

/// Column `name` of `batch` (read from the source `what`), cast to `to`.
pub(super) fn column_as(
    batch: &RecordBatch,
    name: &str,
    what: &str,
    to: &DataType,
) -> Result<ArrayRef> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| data_error(format!("column '{name}' missing from {what}")))?;
    Ok(cast(column, to)?)
}

/// Bytes an id takes besides its text where a load keeps it (an id of the
/// genes' `StringArray` and the key of a `HashMap<String, _>`): the map's
/// slot and control byte at its load factor, doubled while it grows, the
/// key's `String` and its allocation's rounding and header, an offset.
pub(super) const ID_OVERHEAD: usize = 128;

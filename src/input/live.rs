//! Tables this library made, found again by number when they come back
//! through the FFI.
//!
//! A table registered in a Python `SessionContext` (the `datafusion`
//! package, which holds its own copy of DataFusion) reaches the table
//! functions as a foreign provider, and its scan as a foreign plan: neither
//! can be downcast to the type this library made. Their schemas cross
//! intact, metadata included, so a table made here carries its number in
//! its schema's metadata ([`TABLE_KEY`]) and its registry (`Live`) finds
//! it again while it is alive. Only tables of this process are found: a
//! schema naming any other number (a file's metadata, say) finds nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use datafusion::arrow::datatypes::Schema;

/// The schema metadata key whose value numbers a table among the live
/// tables of the process.
pub const TABLE_KEY: &str = "datafusion_kendall.table";

/// The next table's number (one sequence for every kind of table).
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The live tables of one kind, by number; dead ones are dropped as new
/// ones come.
#[derive(Debug)]
pub(crate) struct Live<T> {
    tables: Mutex<Vec<(u64, Weak<T>)>>,
}

impl<T> Live<T> {
    /// An empty registry.
    pub(crate) const fn new() -> Self {
        Self {
            tables: Mutex::new(Vec::new()),
        }
    }

    /// Adds `table`, numbered `number` (from [`number`]).
    pub(crate) fn add(&self, number: u64, table: &Arc<T>) {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables.retain(|(_, t)| t.strong_count() > 0);
        tables.push((number, Arc::downgrade(table)));
    }

    /// The live table `schema` names, if it is one of these.
    pub(crate) fn find(&self, schema: &Schema) -> Option<Arc<T>> {
        let number: u64 = schema.metadata().get(TABLE_KEY)?.parse().ok()?;
        let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables
            .iter()
            .find(|(n, _)| *n == number)
            .and_then(|(_, t)| t.upgrade())
    }
}

/// A new table's number (one sequence for every kind of table): given
/// before the table is made, as its schema holds it.
pub(crate) fn number() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Schema metadata naming table `number`.
pub(crate) fn metadata(number: u64) -> HashMap<String, String> {
    [(TABLE_KEY.to_string(), number.to_string())].into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field};

    #[test]
    fn a_live_table_is_found_by_its_schema_and_a_dead_one_is_not() {
        static LIVE: Live<String> = Live::new();
        let table = Arc::new("t".to_string());
        let number = number();
        LIVE.add(number, &table);
        let fields = vec![Field::new("x", DataType::Int32, false)];
        let schema = Schema::new_with_metadata(fields.clone(), metadata(number));
        assert_eq!(LIVE.find(&schema).as_deref(), Some(&"t".to_string()));
        assert!(LIVE.find(&Schema::new(fields.clone())).is_none());
        let other = Schema::new_with_metadata(fields, metadata(number + 1000));
        assert!(LIVE.find(&other).is_none());
        drop(table);
        assert!(LIVE.find(&schema).is_none());
    }
}

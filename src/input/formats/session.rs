//! A table or view registered in the session: DataFusion's rule, a name
//! registered in the session wins over a location of that name.

use std::sync::Arc;

use datafusion::catalog::{Session, TableProvider};
use datafusion::common::TableReference;
use datafusion::error::Result;

use super::resolved::Resolved;
use crate::input::sparse_table::SparseTable;

/// The table or view registered under `source`, if any.
pub(super) async fn open(state: &dyn Session, source: &str) -> Result<Option<Resolved>> {
    let Some(provider) = registered(state, source).await? else {
        return Ok(None);
    };
    // A sparse table of this library (a 10x directory's too; also one
    // that went through the FFI and came back) is read as the table
    // itself; a table derived from one (a view, a copy) as its rows.
    let sparse = SparseTable::of_provider(provider.as_ref()).is_some();
    Ok(Some(Resolved {
        provider,
        what: format!("table '{source}'"),
        sparse,
    }))
}

/// The table registered under `name` (exactly, or as `schema.table` /
/// `catalog.schema.table`), if any.
async fn registered(state: &dyn Session, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
    let defaults = &state.config_options().catalog;
    let mut candidates = vec![TableReference::bare(name)];
    if name.contains('.') && !name.contains('/') {
        candidates.push(TableReference::from(name));
    }
    let catalogs = state.catalog_list();
    for reference in candidates {
        let reference = reference.resolve(&defaults.default_catalog, &defaults.default_schema);
        let Some(catalog) = catalogs.catalog(&reference.catalog) else {
            continue;
        };
        let Some(schema) = catalog.schema(&reference.schema) else {
            continue;
        };
        if schema.table_exist(&reference.table)
            && let Some(table) = schema.table(&reference.table).await?
        {
            return Ok(Some(table));
        }
    }
    Ok(None)
}

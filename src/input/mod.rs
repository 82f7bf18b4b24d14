//! Input: a gene-expression matrix from anything DataFusion can scan,
//! checked and loaded.
//!
//! The source is a table or view registered in the session, or a location
//! (file, directory, glob or URL) in Parquet, CSV or TSV; a 10x Genomics
//! directory, a MatrixMarket `.mtx` file, or an AnnData `.h5ad` or 10x
//! `.h5` file (feature `hdf5`), is a sparse matrix ([`formats`]). With the default layout it holds one row
//! per gene: a gene-id column (named by the caller, else the first string
//! column) and every other column one sample of any integer or
//! floating-point type.
//!
//! The schema is checked when the query is planned ([`inspect`]); the values
//! are read from the DataFusion plan of the source and checked once per
//! query, when it runs ([`load`]). Every problem is a `DataFusionError`
//! naming the source, column or gene.
//!
//! The files, in the order a query meets them:
//! - [`formats`]: the one place a source is resolved ([`resolve`]), and the
//!   formats, one file each (a registered table, 10x directories,
//!   MatrixMarket files, HDF5 files, Parquet / CSV / TSV locations;
//!   `formats/mtx.rs`, the MatrixMarket parser 10x directories and `.mtx`
//!   files are read with; `STORED AS MTX`, [`MtxTableFactory`]); `stores`: a URL's
//!   object store, set up on first use (cloud stores need the `cloud`
//!   feature);
//! - `spec`: the layout options and a checked [`InputSpec`]; `layouts/`:
//!   each layout's check of a schema and its read of the batches;
//! - `read`: the source's batches as a load reads them ([`InputBatches`]),
//!   memory reserved as they arrive;
//! - `values` and `missing`: one value of a column, checked as
//!   `kendall.missing` says; `names`: text columns, names in messages;
//! - `matrix`: the [`ExpressionMatrix`] a load builds; [`sparse`]: the one
//!   by-gene sparse form ([`sparse::SparseValues`], with the one grouping
//!   of triples by gene), for an input that is mostly zeros;
//! - [`sparse_table`]: the one sparse table type and its one scan, whatever
//!   holds the entries (Python's sparse matrices and `.h5ad` files in
//!   memory, a 10x directory's files), read in place when it is the input
//!   itself: [`load`] asks the batches for their table
//!   (`read`'s `sparse_table`), which is found only when the plan is the
//!   table's own scan (`own_scan`: this library's own providers and plans,
//!   by what they are, also through the FFI; never a view or copy);
//! - `listwise`: listwise deletion (`kendall.missing = 'complete'`);
//!   `stack`: the two matrices of cross pairs as one; [`pair_list`]: a
//!   candidate list's pairs; [`groups`]: grouped samples
//!   (`kendall.groups`) and the groups of a matrix's samples.
//!
//! Ranking the loaded matrix is [`crate::rank`]'s.

pub mod formats;
pub mod groups;
mod layouts;
mod listwise;
mod matrix;
mod missing;
mod names;
mod own_scan;
pub mod pair_list;
mod read;
pub mod sparse;
pub mod sparse_table;
mod spec;
pub(crate) mod stack;
mod stores;
mod values;

pub use formats::tenx;
pub use formats::{
    InputFormat, MTX_FILE_TYPE, MatrixFiles, MtxTableFactory, Orientation, Resolved, resolve,
};
pub use groups::{Group, GroupsSpec, SampleGroups};
pub use matrix::{ExpressionMatrix, MatrixValues};
pub use missing::MissingValues;
pub use pair_list::{ListedPairs, PairListSpec};
pub use read::InputBatches;
pub use spec::{Absent, Columns, InputSpec, Layout};
pub use stores::OnDemandStores;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;

use crate::error::{Panicked, data_error, panicked, plan_error};
use crate::memory::QueryMemory;
use values::ValueBuffer;

/// Checks the schema of the source `what` for `layout`, naming columns with
/// `names` (genes_as_rows: `[gene_column]`; long: `[gene, sample, value]`
/// columns; genes_as_columns: none). Null and NaN values are treated as
/// `missing` says, a (gene, sample) without a row of a long input as
/// `absent` says.
pub fn inspect(
    what: &str,
    schema: &SchemaRef,
    layout: Layout,
    names: &[String],
    missing: MissingValues,
    absent: Absent,
) -> Result<InputSpec> {
    match layout {
        Layout::GenesAsRows => {
            if names.len() > 1 {
                return Err(plan_error(format!(
                    "layout 'genes_as_rows' takes (source [, gene_column]), got {} column names",
                    names.len()
                )));
            }
            let (gene, samples) =
                layouts::rows_columns(what, schema, names.first().map(String::as_str))?;
            let projection = std::iter::once(&gene)
                .chain(&samples)
                .map(|c| schema.index_of(c))
                .collect::<std::result::Result<_, _>>()?;
            Ok(InputSpec {
                what: what.to_string(),
                samples: Some(samples.len()),
                columns: Columns::GenesAsRows { gene, samples },
                projection,
                genes: None,
                missing,
            })
        }
        Layout::GenesAsColumns => layouts::inspect_columns(what, schema, names, missing),
        Layout::Long => layouts::inspect_long(what, schema, names, missing, absent),
    }
}

/// Reads the source's `batches`, checking gene ids (non-null, unique) and
/// values (finite, or missing as `spec.missing` allows). The values are
/// reserved in `memory` before they are allocated.
///
/// A panic while reading (a reader of a corrupt file: parquet's RLE decoder
/// shifting past 64 bits, say) is an error naming the source, as it is when
/// the query is planned (`table::guard_panics`), not one that says only that
/// the load panicked.
pub fn load(
    spec: &InputSpec,
    batches: InputBatches,
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load_unguarded(spec, batches, memory)
    }))
    .unwrap_or_else(|panic| Err(data_error(panicked(Panicked::Reading(&spec.what), &*panic))))
}

/// [`load`] without its guard against panics.
fn load_unguarded(
    spec: &InputSpec,
    mut batches: InputBatches,
    memory: &QueryMemory,
) -> Result<ExpressionMatrix> {
    let shape = match (spec.genes, spec.samples) {
        (Some(genes), Some(samples)) => format!(" ({genes} genes x {samples} samples)"),
        _ => String::new(),
    };
    let reservation = memory.reserve(&format!("input values{shape}"), 0)?;
    let mut buffer = ValueBuffer::new(reservation);
    // The values of a shape known before reading first, then what the
    // reader holds: both are reserved before anything is read.
    if let (Columns::GenesAsRows { .. }, Some(genes), Some(samples)) =
        (&spec.columns, spec.genes, spec.samples)
    {
        buffer.reserve_values(genes.saturating_mul(samples))?;
    }
    // The fast path: a sparse table read by its own scan is read in place
    // (its arrays, or its files without triples), not as its rows.
    if let Columns::Long { absent, .. } = &spec.columns
        && *absent == Absent::Zero
        && let Some(table) = batches.sparse_table()
    {
        batches.read_in_place();
        return table.matrix(memory, &spec.what);
    }
    batches.reserve_reader(memory)?;
    // What the other layouts hold while reading, before the matrix is built.
    let scratch = || memory.reserve("input as read", 0);
    match &spec.columns {
        Columns::GenesAsRows { gene, samples } => {
            let ids = memory.reserve("gene ids and their index", 0)?;
            layouts::load_rows(spec, batches, gene, samples, buffer, ids)
        }
        Columns::GenesAsColumns { genes } => {
            layouts::load_columns(spec, batches, genes, buffer, scratch()?)
        }
        Columns::Long {
            gene,
            sample,
            value,
            absent,
        } => layouts::load_long(
            spec,
            batches,
            [gene, sample, value],
            *absent,
            buffer,
            scratch()?,
        ),
    }
}

//! Where the input comes from: a table or view registered in the session, or
//! a location (a file, a directory, a glob or a URL) read by DataFusion's
//! listing tables in Parquet, CSV or TSV (plain or compressed).
//!
//! Name resolution follows DataFusion's rule: a name registered in the
//! session wins; anything else is a location. A local file named `.h5ad`
//! or `.h5` is read by the HDF5 reader (`h5`, feature `hdf5`).

use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::Result;
use futures::TryStreamExt;

use super::h5_kind::Hdf5Kind;
use crate::error::plan_error;

crate::option_enum::option_enum! {
    /// The file format of a location (`SET kendall.format = ...`).
    pub enum InputFormat: "kendall.format" {
        /// From the file name: `.parquet`; `.csv`; `.tsv`, `.tab` or `.txt`,
        /// each optionally followed by `.gz`, `.bz2`, `.xz` or `.zst`. A
        /// directory or glob takes the format of its first such file.
        #[default]
        Auto = "auto",
        /// Apache Parquet.
        Parquet = "parquet",
        /// Comma-separated values with a header row.
        Csv = "csv",
        /// Tab-separated values with a header row.
        Tsv = "tsv",
    }
}

/// An input ready to be scanned.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The table: the registered one, or a listing table over the location.
    pub provider: Arc<dyn TableProvider>,
    /// How errors name it: `table 'expr'` or `'data/expr.tsv.gz'`.
    pub what: String,
    /// A sparse matrix (a 10x Genomics matrix directory or a
    /// [`SparseTable`](super::sparse_table::SparseTable)): (gene, sample,
    /// value) triples, read with the `long` layout and absent entries as zero.
    pub sparse: bool,
}

/// The table `source` names: a table or view registered in the session, else
/// a 10x Genomics matrix directory (see [`super::tenx`]), else the files at
/// the location `source` (format as `format` says).
pub async fn resolve(state: &dyn Session, source: &str, format: InputFormat) -> Result<Resolved> {
    if let Some(provider) = registered(state, source).await? {
        // A sparse table or 10x directory of this library (also one that
        // went through the FFI and came back) is read as the table itself;
        // a table derived from one (a view, a copy) as its rows.
        let sparse = super::sparse_table::SparseTable::of_provider(provider.as_ref()).is_some()
            || super::tenx::is_tenx_table(provider.as_ref());
        return Ok(Resolved {
            provider,
            what: format!("table '{source}'"),
            sparse,
        });
    }
    if let Some(files) = super::tenx::detect(source)? {
        return Ok(Resolved {
            provider: Arc::new(super::tenx::TenxTable::try_new(files)?),
            what: format!("10x directory '{source}'"),
            sparse: true,
        });
    }
    if let Some(kind) = Hdf5Kind::of_name(source) {
        return hdf5_file(state, source, kind).await;
    }
    Ok(Resolved {
        provider: listing(state, source, format).await?,
        what: format!("'{source}'"),
        sparse: false,
    })
}

/// The error for an HDF5 file in a build without the `hdf5` feature.
#[cfg_attr(feature = "hdf5", allow(dead_code))]
fn without_hdf5(source: &str, kind: Hdf5Kind) -> datafusion::error::DataFusionError {
    plan_error(format!(
        "cannot read {} '{source}': this build reads no HDF5 files; build datafusion-kendall \
         with its default feature `hdf5` (a pure-Rust reader, nothing to install first), or convert \
         the file in Python (docs/single-cell.md)",
        kind.label()
    ))
}

/// The HDF5 file `source` (a local path) as a sparse table, read now.
#[cfg(feature = "hdf5")]
async fn hdf5_file(state: &dyn Session, source: &str, kind: Hdf5Kind) -> Result<Resolved> {
    let what = format!("{} '{source}'", kind.label());
    if is_glob(source) || (source.contains("://") && !source.starts_with("file://")) {
        return Err(plan_error(format!(
            "cannot read {what}: HDF5 files are read from a local path, one file at a time"
        )));
    }
    let path = std::path::PathBuf::from(source.strip_prefix("file://").unwrap_or(source));
    let memory = crate::memory::QueryMemory::new(
        Arc::clone(&state.runtime_env().memory_pool),
        "HDF5 reader",
        &what,
    );
    let named = what.clone();
    let table = tokio::task::spawn_blocking(move || super::h5::read(&path, kind, &named, &memory))
        .await
        .map_err(|e| plan_error(format!("reading {what} failed: {e}")))??;
    Ok(Resolved {
        provider: Arc::new(table),
        what,
        sparse: true,
    })
}

/// The HDF5 file `source`: an error saying to build with the feature.
#[cfg(not(feature = "hdf5"))]
async fn hdf5_file(_state: &dyn Session, source: &str, kind: Hdf5Kind) -> Result<Resolved> {
    Err(without_hdf5(source, kind))
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

/// Whether `s` holds a glob character (as DataFusion's listing tables read it).
fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Format and compression of a file name; `None` if the name says neither.
fn format_of_name(name: &str) -> Option<(InputFormat, FileCompressionType)> {
    let lower = name.to_ascii_lowercase();
    let (stem, compression) = match lower.rsplit_once('.') {
        Some((stem, ext)) => match FileCompressionType::from_str(ext) {
            Ok(c) if c.is_compressed() => (stem.to_string(), c),
            _ => (lower.clone(), FileCompressionType::UNCOMPRESSED),
        },
        None => (lower.clone(), FileCompressionType::UNCOMPRESSED),
    };
    let format = match stem.rsplit_once('.').map(|(_, ext)| ext) {
        Some("parquet") if !compression.is_compressed() => InputFormat::Parquet,
        Some("csv") => InputFormat::Csv,
        Some("tsv" | "tab" | "txt") => InputFormat::Tsv,
        _ if compression.is_compressed() => InputFormat::Auto,
        _ => return None,
    };
    Some((format, compression))
}

/// The extension a compression type adds (`.gz`), or "".
fn compression_extension(c: FileCompressionType) -> &'static str {
    [
        (FileCompressionType::GZIP, ".gz"),
        (FileCompressionType::BZIP2, ".bz2"),
        (FileCompressionType::XZ, ".xz"),
        (FileCompressionType::ZSTD, ".zst"),
    ]
    .into_iter()
    .find_map(|(t, ext)| (t == c).then_some(ext))
    .unwrap_or("")
}

/// A listing table over the location `source`.
async fn listing(
    state: &dyn Session,
    source: &str,
    format: InputFormat,
) -> Result<Arc<dyn TableProvider>> {
    let not_found = |detail: String| {
        plan_error(format!(
            "cannot open '{source}': {detail}, and no table or view of that name is registered \
             in the session"
        ))
    };
    let url = ListingTableUrl::parse(source)
        .map_err(|e| not_found(format!("not a path or URL ({e})")))?;
    if url.scheme() == "file" && !is_glob(source) {
        // A `file://` URL names its file by the URL's path.
        let path = match source.strip_prefix("file://") {
            Some(_) => url.get_url().to_file_path().unwrap_or_default(),
            None => std::path::PathBuf::from(source),
        };
        if let Err(e) = std::fs::metadata(&path) {
            return Err(not_found(e.to_string()));
        }
    }
    super::stores::ensure(state, source, &url)?;
    let store = state.runtime_env().object_store(&url).map_err(|e| {
        plan_error(format!(
            "cannot read '{source}': no object store for '{}' ({e})",
            url.object_store()
        ))
    })?;
    // The format: as set, else from the name, else (a directory or a glob)
    // from the first file listed that has a known extension.
    let named = format_of_name(source.trim_end_matches('/'));
    let (mut chosen, mut compression) = match (format, named) {
        (InputFormat::Auto, Some(found)) => found,
        (InputFormat::Auto, None) | (_, None) => (format, FileCompressionType::UNCOMPRESSED),
        (set, Some((_, compression))) => (set, compression),
    };
    let collection = url.is_collection() || is_glob(source);
    let mut files: Vec<String> = Vec::new();
    if collection {
        files = url
            .list_all_files(state, store.as_ref(), "")
            .await
            .map_err(|e| plan_error(format!("cannot list '{source}': {e}")))?
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .map_err(|e| plan_error(format!("cannot list '{source}': {e}")))?;
        files.retain(|f| {
            let name = f.rsplit('/').next().unwrap_or(f);
            !name.starts_with('.') && !name.starts_with('_')
        });
        files.sort();
        if chosen == InputFormat::Auto {
            let first = files
                .iter()
                .filter_map(|f| format_of_name(f))
                .find(|(f, _)| *f != InputFormat::Auto);
            match first {
                Some((f, c)) => (chosen, compression) = (f, c),
                None => {
                    return Err(plan_error(format!(
                        "'{source}' holds no .parquet, .csv or .tsv files{}; name the format with \
                         SET kendall.format = 'parquet' | 'csv' | 'tsv'",
                        if files.is_empty() {
                            String::new()
                        } else {
                            format!(" (found {})", super::names::short_list(files.iter()))
                        }
                    )));
                }
            }
        }
    }
    if chosen == InputFormat::Auto {
        return Err(plan_error(format!(
            "cannot tell the format of '{source}' from its name; name it with \
             SET kendall.format = 'parquet' | 'csv' | 'tsv'"
        )));
    }
    let file_format: Arc<dyn FileFormat> = match chosen {
        InputFormat::Parquet => {
            Arc::new(ParquetFormat::default().with_options(state.table_options().parquet.clone()))
        }
        InputFormat::Csv | InputFormat::Tsv => Arc::new(
            CsvFormat::default()
                .with_options(state.table_options().csv.clone())
                .with_has_header(true)
                .with_delimiter(if chosen == InputFormat::Tsv {
                    b'\t'
                } else {
                    b','
                })
                .with_file_compression_type(compression),
        ),
        InputFormat::Auto => unreachable!("resolved above"),
    };
    // A named file is read whatever its name; a directory's files by extension.
    let extension = if collection && !is_glob(source) {
        format!(".{chosen}{}", compression_extension(compression))
    } else {
        String::new()
    };
    if collection && !is_glob(source) && !files.iter().any(|f| f.ends_with(&extension)) {
        return Err(plan_error(format!(
            "'{source}' holds no {extension} files{}",
            if files.is_empty() {
                String::new()
            } else {
                format!(" (found {})", super::names::short_list(files.iter()))
            }
        )));
    }
    let options = ListingOptions::new(file_format).with_file_extension(extension);
    let schema = options
        .infer_schema(state, &url)
        .await
        .map_err(|e| plan_error(format!("cannot read '{source}' as {chosen}: {e}")))?;
    // Every column nullable: a directory's files may differ in columns
    // (DataFusion merges their schemas), and a sample a file lacks is
    // missing for its genes, not an error about nullability.
    let schema = Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ));
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .with_schema(schema);
    Ok(Arc::new(ListingTable::try_new(config)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_names() {
        let gz = FileCompressionType::GZIP;
        let none = FileCompressionType::UNCOMPRESSED;
        assert_eq!(
            format_of_name("a/expr.parquet"),
            Some((InputFormat::Parquet, none))
        );
        assert_eq!(
            format_of_name("GSE1_series_matrix.TXT.GZ"),
            Some((InputFormat::Tsv, gz))
        );
        assert_eq!(
            format_of_name("x.csv.bz2").map(|f| f.0),
            Some(InputFormat::Csv)
        );
        assert_eq!(format_of_name("x.tab").map(|f| f.0), Some(InputFormat::Tsv));
        assert_eq!(format_of_name("data.gz"), Some((InputFormat::Auto, gz)));
        assert_eq!(format_of_name("dir"), None);
        assert_eq!(format_of_name("x.json"), None);
    }

    #[test]
    fn hdf5_files_by_name_and_the_message_without_the_feature() {
        assert_eq!(Hdf5Kind::of_name("a/X.H5AD"), Some(Hdf5Kind::AnnData));
        assert_eq!(Hdf5Kind::of_name("file:///a/x.h5"), Some(Hdf5Kind::Tenx));
        assert_eq!(Hdf5Kind::of_name("x.h5.parquet"), None);
        assert_eq!(Hdf5Kind::of_name("x.hdf5"), None);
        let msg = without_hdf5("x.h5ad", Hdf5Kind::AnnData).to_string();
        for needle in ["h5ad file 'x.h5ad'", "feature `hdf5`", "nothing to install"] {
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
    }
}

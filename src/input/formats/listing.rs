//! Parquet, CSV and TSV: a location (a file, a directory, a glob or a URL)
//! read by DataFusion's listing tables, plain or compressed.
//!
//! Recognised by the name's extension (`.parquet`; `.csv`; `.tsv`, `.tab`,
//! `.txt`, each optionally `.gz`, `.bz2`, `.xz` or `.zst`), a directory's or
//! glob's by its first such file, or as `kendall.format` says. Every
//! location no other format claims comes here, so a name that is neither
//! is an error saying so. A URL's object store is set up on first use
//! (`stores`).

use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::Result;
use futures::TryStreamExt;

use super::resolved::Resolved;
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

/// The files at the location `source`, in the format `format` says (or
/// their names say): the format every location no other format claims.
pub(super) async fn open(
    state: &dyn Session,
    source: &str,
    format: InputFormat,
) -> Result<Resolved> {
    Ok(Resolved {
        provider: listing(state, source, format).await?,
        what: format!("'{source}'"),
        sparse: false,
    })
}

/// Whether `s` holds a glob character (as DataFusion's listing tables read it).
pub(super) fn is_glob(s: &str) -> bool {
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

/// The files of the directory or glob `source` (`url`, in `store`), in
/// name order, hidden ones (`.`, `_`) left out.
async fn list_files(
    state: &dyn Session,
    source: &str,
    url: &ListingTableUrl,
    store: &dyn datafusion::object_store::ObjectStore,
) -> Result<Vec<String>> {
    let mut files: Vec<String> = url
        .list_all_files(state, store, "")
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
    Ok(files)
}

/// The format and compression of `source`: as `format` sets it, else from
/// the name, else (a directory or a glob, `collection`) from the first of
/// its `files` that has a known extension; an error when none says.
fn choose_format(
    source: &str,
    format: InputFormat,
    collection: bool,
    files: &[String],
) -> Result<(InputFormat, FileCompressionType)> {
    let named = format_of_name(source.trim_end_matches('/'));
    let (mut chosen, mut compression) = match (format, named) {
        (InputFormat::Auto, Some(found)) => found,
        (InputFormat::Auto, None) | (_, None) => (format, FileCompressionType::UNCOMPRESSED),
        (set, Some((_, compression))) => (set, compression),
    };
    if collection && chosen == InputFormat::Auto {
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
                        format!(" (found {})", crate::input::names::short_list(files.iter()))
                    }
                )));
            }
        }
    }
    if chosen == InputFormat::Auto {
        return Err(plan_error(format!(
            "cannot tell the format of '{source}' from its name; name it with \
             SET kendall.format = 'parquet' | 'csv' | 'tsv'"
        )));
    }
    Ok((chosen, compression))
}

/// DataFusion's file format for `chosen` (not `Auto`), with the session's
/// table options.
fn file_format(
    state: &dyn Session,
    chosen: InputFormat,
    compression: FileCompressionType,
) -> Arc<dyn FileFormat> {
    match chosen {
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
    }
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
    crate::input::stores::ensure(state, source, &url)?;
    let store = state.runtime_env().object_store(&url).map_err(|e| {
        plan_error(format!(
            "cannot read '{source}': no object store for '{}' ({e})",
            url.object_store()
        ))
    })?;
    let collection = url.is_collection() || is_glob(source);
    let files = if collection {
        list_files(state, source, &url, store.as_ref()).await?
    } else {
        Vec::new()
    };
    let (chosen, compression) = choose_format(source, format, collection, &files)?;
    let file_format = file_format(state, chosen, compression);
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
                format!(" (found {})", crate::input::names::short_list(files.iter()))
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
}

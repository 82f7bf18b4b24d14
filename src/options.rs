//! Session options: `SET kendall.<name> = <value>`.

use std::fmt;

use std::any::Any;

use datafusion::common::config::{
    ConfigEntry, ConfigExtension, ConfigField, ConfigOptions, ExtensionOptions, Visit,
};
use datafusion::error::{DataFusionError, Result};

use crate::input::{Absent, InputFormat, Layout, MissingValues};
use crate::kernel::isa::SimdChoice;
use crate::kernel::{KernelChoice, Variant};
use crate::schema::GeneIds;
use crate::stats::fdr::FdrMethod;
use crate::stats::pvalue::{Alternative, Continuity, PValueMethod};

/// Default edge of a tile, in genes. Chosen with the `tile_size` benchmark
/// (`cargo bench --bench kernels`, see docs/benchmarks/2026-11-21-kernels-and-end-to-end-zen5.md): for the naive and GSE kernels
/// any edge from 64 to 1024 keeps a tile's ranks in L2, and 256 is within
/// noise of the best while giving enough tiles to balance 8 partitions
/// already at a few thousand genes.
pub const DEFAULT_TILE_SIZE: usize = 256;

/// Default of `kendall.memory_limit`: 4 GiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 4 << 30;

/// Declares [`KendallOptions`]: what DataFusion's `extensions_options!`
/// does, except that [`ExtensionOptions::entries`] names each option with its
/// `kendall.` prefix. DataFusion's macro lists them bare (`tile_size`), so
/// `SHOW ALL` and `information_schema.df_settings` showed names that `SET`
/// does not take, and `SHOW kendall.tile_size` was refused.
macro_rules! kendall_options {
    ($($(#[doc = $doc:literal])* $name:ident: $ty:ty = $default:expr,)*) => {
        /// Options of `kendall_all_pairs`, read when a query is planned.
        ///
        /// Register them with [`crate::register`]; change them with SQL
        /// (`SET kendall.variant = 'a'`); list them with `SHOW ALL VERBOSE`.
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub struct KendallOptions {
            $($(#[doc = $doc])* pub $name: $ty,)*
        }

        impl Default for KendallOptions {
            fn default() -> Self {
                KendallOptions { $($name: $default,)* }
            }
        }

        impl ConfigField for KendallOptions {
            fn set(&mut self, key: &str, value: &str) -> Result<()> {
                match key {
                    $(stringify!($name) => self.$name.set("", value),)*
                    _ => Err(DataFusionError::Configuration(format!(
                        "unknown option 'kendall.{key}'; the options are {}",
                        [$(concat!("kendall.", stringify!($name))),*].join(", ")
                    ))),
                }
            }

            fn visit<V: Visit>(&self, v: &mut V, prefix: &str, _description: &'static str) {
                $(
                    let key = format!("{prefix}.{}", stringify!($name));
                    self.$name.visit(v, &key, concat!($($doc),*).trim());
                )*
            }
        }
    };
}

kendall_options! {
    /// Coefficient: 'b' (tau-b, tie-corrected, the default), 'a' (tau-a) or 'c' (Stuart's tau-c).
    variant: Variant = Variant::B,
    /// Kernel: 'auto' (the fastest for the data), 'naive', 'gse', 'vse', 'bitset' or 'zero' (zero-inflated data).
    kernel: KernelChoice = KernelChoice::Auto,
    /// Instruction set of the SIMD kernels: 'auto', 'avx512', 'avx2' or 'scalar'.
    simd: SimdChoice = SimdChoice::Auto,
    /// Edge of a square tile of the gene × gene job matrix, in genes.
    tile_size: TileSize = TileSize(DEFAULT_TILE_SIZE),
    /// Bytes the per-query kernel data (the bit-planes) may take, at most what DataFusion's memory pool can grant besides the ranks: a whole number of bytes, or with a unit (e.g. '512MiB', '4GiB', '2G'; K, M, G, T and KiB..TiB are powers of 1024, KB..TB of 1000).
    memory_limit: ByteSize = ByteSize(DEFAULT_MEMORY_LIMIT),
    /// Input layout: 'genes_as_rows', 'genes_as_columns' or 'long'.
    layout: Layout = Layout::GenesAsRows,
    /// File format of a location: 'auto' (from the name: .parquet, .csv, .tsv/.tab/.txt, each optionally .gz/.bz2/.xz/.zst), 'parquet', 'csv' or 'tsv'.
    format: InputFormat = InputFormat::Auto,
    /// p-value method: 'auto' (scipy's rule: exact without ties for n <= 33 or at most one discordant or concordant pair), 'asymptotic' or 'exact' (any n; NaN with ties, as scipy refuses them).
    pvalue: PValueMethod = PValueMethod::Auto,
    /// Alternative hypothesis of p_value (and so q_value): 'two-sided', 'less' (tau < 0) or 'greater' (tau > 0), as scipy's and R's alternative.
    alternative: Alternative = Alternative::TwoSided,
    /// R's continuity correction of the asymptotic p-value (S moves 1 towards 0): 'false' or 'true'.
    continuity: Continuity = Continuity::Off,
    /// Multiple-testing adjustment of q_value over all pairs of the input: 'bh' (Benjamini-Hochberg) or 'by' (Benjamini-Yekutieli, any dependence).
    fdr: FdrMethod = FdrMethod::Bh,
    /// Null and NaN values: 'pairwise' (each pair uses the samples both genes have; R's pairwise.complete.obs, scipy's nan_policy='omit'), 'complete' (listwise: a sample missing in any gene is dropped for every pair; R's complete.obs), 'propagate' (a pair in which either gene has a missing value gets NaN tau and p_value; scipy's default) or 'error'.
    missing: MissingValues = MissingValues::Pairwise,
    /// Layout 'long': a (gene, sample) without a row is an 'error', 'zero' (sparse counts) or 'missing'.
    absent: Absent = Absent::Error,
    /// Pairs with fewer complete samples than this get NULL tau and p_value (pandas' min_periods).
    min_periods: MinPeriods = MinPeriods(1),
    /// Type of kendall_all_pairs' and kendall_cross_pairs' gene columns: 'string' or 'dictionary' (4-byte indices into a gene list shared by every batch: smaller, faster outputs).
    gene_ids: GeneIds = GeneIds::String,
    /// Partitions of a pair scan (balanced ranges of tile ids): 0 for the default, datafusion.execution.target_partitions on one machine and four times that on a Ballista cluster (more tasks than executor slots, so a slow or lost executor does not hold the job).
    partitions: Partitions = Partitions(0),
    /// Grouped samples: '' (none, the default), or a source (table, view, file or URL) whose first two columns are a sample id and its group (strings or integers); each group's pairs are then computed over its samples only, with a leading 'group' column, and p- and q-values per group.
    groups: String = String::new(),
}

impl ConfigExtension for KendallOptions {
    const PREFIX: &'static str = "kendall";
}

impl ExtensionOptions for KendallOptions {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        ConfigField::set(self, key, value)
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        /// Collects every option as a `kendall.`-prefixed entry.
        struct Entries(Vec<ConfigEntry>);
        impl Visit for Entries {
            fn some<V: fmt::Display>(&mut self, key: &str, value: V, description: &'static str) {
                self.0.push(ConfigEntry {
                    key: key.to_string(),
                    value: Some(value.to_string()),
                    description,
                })
            }
            fn none(&mut self, key: &str, description: &'static str) {
                self.0.push(ConfigEntry {
                    key: key.to_string(),
                    value: None,
                    description,
                })
            }
        }
        let mut entries = Entries(Vec::new());
        self.visit(&mut entries, Self::PREFIX, "");
        entries.0
    }
}

impl KendallOptions {
    /// `kendall.groups`: the source of (sample, group) rows, when set.
    pub fn groups_source(&self) -> Option<String> {
        let source = self.groups.trim();
        (!source.is_empty()).then(|| source.to_string())
    }

    /// The options set in a session's configuration: our own extension, or
    /// (feature `ffi`, a foreign host such as the Python package) the
    /// `kendall.*` keys of its FFI config extension, checked as a local `SET`
    /// checks them; the defaults when neither is registered.
    pub fn from_config(config: &ConfigOptions) -> Result<Self> {
        if let Some(options) = config.extensions.get::<KendallOptions>() {
            return Ok(options.clone());
        }
        #[cfg(feature = "ffi")]
        if let Some(options) = options_from_ffi(config) {
            return options;
        }
        Ok(Self::default())
    }
}

#[cfg(feature = "ffi")]
/// The `kendall.*` options carried by a foreign session's FFI config
/// extension, parsed with the checks of a local `SET`; `None` when the
/// session has no FFI extension.
fn options_from_ffi(config: &ConfigOptions) -> Option<Result<KendallOptions>> {
    let ffi = config
        .extensions
        .get::<datafusion_ffi::config::extension_options::FFI_ExtensionOptions>()?;
    let mut options = KendallOptions::default();
    for entry in datafusion::config::ExtensionOptions::entries(ffi) {
        let Some((prefix, key)) = entry.key.split_once('.') else {
            continue;
        };
        if prefix != KendallOptions::PREFIX {
            continue;
        }
        let Some(value) = entry.value else { continue };
        if let Err(e) = datafusion::config::ExtensionOptions::set(&mut options, key, &value) {
            return Some(Err(e));
        }
    }
    Some(Ok(options))
}

/// Defines a whole-number option type with a lower bound, refused with a
/// message naming the option, the value and the allowed range.
macro_rules! whole_number_option {
    ($(#[$doc:meta])* $name:ident, $sql:literal, $min:literal) => {
        whole_number_option!($(#[$doc])* $name, $sql, $min, usize::MAX);
    };
    ($(#[$doc:meta])* $name:ident, $sql:literal, $min:literal, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub usize);

        impl $name {
            /// The value.
            pub fn get(self) -> usize {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl ConfigField for $name {
            fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
                v.some(key, self, description)
            }

            // `n >= 0` is always true for the option whose minimum is 0.
            #[allow(unused_comparisons)]
            fn set(&mut self, _key: &str, value: &str) -> Result<()> {
                let max: usize = $max;
                match value.trim().parse::<usize>() {
                    Ok(n) if n >= $min && n <= max => {
                        self.0 = n;
                        Ok(())
                    }
                    _ if max < usize::MAX => Err(DataFusionError::Configuration(format!(
                        "{} must be a whole number >= {} and at most {max}, got '{value}'",
                        $sql, $min
                    ))),
                    _ => Err(DataFusionError::Configuration(format!(
                        "{} must be a whole number >= {}, got '{value}'",
                        $sql, $min
                    ))),
                }
            }
        }
    };
}

whole_number_option!(
    /// `kendall.tile_size`: a tile edge in genes, at least 1.
    TileSize,
    "kendall.tile_size",
    1
);

/// Most partitions a pair scan may be split into (`kendall.partitions`):
/// each is a stream and, on a cluster, a task with its own plan; a value
/// beyond this is a mistake, not a plan.
pub const MAX_PARTITIONS: usize = 65_536;

whole_number_option!(
    /// `kendall.partitions`: a number of partitions, 0 for the default, at
    /// most [`MAX_PARTITIONS`].
    Partitions,
    "kendall.partitions",
    0,
    MAX_PARTITIONS
);

whole_number_option!(
    /// `kendall.min_periods`: a number of shared samples, at least 0.
    MinPeriods,
    "kendall.min_periods",
    0
);

/// A size in bytes (`kendall.memory_limit`): a whole number of bytes, or a
/// number with a unit. `K`, `M`, `G`, `T` (as DataFusion's own
/// `datafusion.runtime.memory_limit`) and `KiB`..`TiB` are powers of 1024;
/// `KB`..`TB` are powers of 1000; `B` is bytes. Case does not matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub usize);

impl ByteSize {
    /// The size in bytes.
    pub fn bytes(self) -> usize {
        self.0
    }

    /// Parses `"4GiB"`, `"512M"`, `"1000000"`; `None` for anything else
    /// (negative, fractional without a unit, unknown unit, overflow).
    pub fn parse(text: &str) -> Option<usize> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kib" => 1024.0,
            "m" | "mib" => 1024f64.powi(2),
            "g" | "gib" => 1024f64.powi(3),
            "t" | "tib" => 1024f64.powi(4),
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            _ => return None,
        };
        if scale == 1.0 {
            return number.parse::<usize>().ok();
        }
        let x = number.parse::<f64>().ok()? * scale;
        (x.is_finite() && x >= 0.0 && x < usize::MAX as f64).then(|| x.round() as usize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl ConfigField for ByteSize {
    fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
        v.some(key, self, description)
    }

    fn set(&mut self, _key: &str, value: &str) -> Result<()> {
        self.0 = ByteSize::parse(value).ok_or_else(|| {
            DataFusionError::Configuration(format!(
                "kendall.memory_limit must be a size in bytes, a whole number with an optional \
                 unit (B, K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB, TB), e.g. '4GiB'; \
                 got '{value}'"
            ))
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(ByteSize::parse("1000"), Some(1000));
        assert_eq!(ByteSize::parse("4GiB"), Some(4 << 30));
        assert_eq!(ByteSize::parse("4gib"), Some(4 << 30));
        assert_eq!(ByteSize::parse("2G"), Some(2 << 30));
        assert_eq!(ByteSize::parse("1.5 MiB"), Some(3 << 19));
        assert_eq!(ByteSize::parse("3KB"), Some(3000));
        assert_eq!(ByteSize::parse("7B"), Some(7));
        for bad in [
            "-5",
            "1e3",
            "",
            "GB",
            "4 parsecs",
            "1.5",
            "99999999999999999999",
        ] {
            assert_eq!(ByteSize::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn options_are_refused_by_name() {
        let mut t = TileSize(5);
        let err = t.set("", "0").unwrap_err().to_string();
        assert!(
            err.contains("kendall.tile_size must be a whole number >= 1, got '0'"),
            "{err}"
        );
        assert!(t.set("", "-5").is_err());
        assert!(t.set("", "1e3").is_err());
        t.set("", " 64 ").unwrap();
        assert_eq!(t.get(), 64);
        let mut m = MinPeriods(1);
        m.set("", "0").unwrap();
        let err = m.set("", "-1").unwrap_err().to_string();
        assert!(
            err.contains("kendall.min_periods must be a whole number >= 0"),
            "{err}"
        );
        assert_eq!(m.get(), 0);
        let mut b = ByteSize(0);
        let err = b.set("", "4 parsecs").unwrap_err().to_string();
        assert!(
            err.contains("kendall.memory_limit must be a size in bytes"),
            "{err}"
        );
        assert!(err.contains("'4 parsecs'"), "{err}");
    }
}

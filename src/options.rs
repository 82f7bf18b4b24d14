//! Session options: `SET kendall.<name> = <value>`.

use datafusion::common::config::{ConfigExtension, ConfigOptions};
use datafusion::common::extensions_options;

use crate::input::{Layout, MissingValues};
use crate::kernel::isa::SimdChoice;
use crate::kernel::pvalue::PValueMethod;
use crate::kernel::{KernelChoice, Variant};

/// Default edge of a tile, in genes. Chosen with the `tile_size` benchmark
/// (`cargo bench --bench kernels`, see README): for the naive and GSE kernels
/// any edge from 64 to 1024 keeps a tile's ranks in L2, and 256 is within
/// noise of the best while giving enough tiles to balance 8 partitions
/// already at a few thousand genes.
pub const DEFAULT_TILE_SIZE: usize = 256;

/// Default of `kendall.memory_limit`: 4 GiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 4 << 30;

extensions_options! {
    /// Options of `kendall_all_pairs`, read when a query is planned.
    ///
    /// Register them with [`crate::register`]; change them with SQL
    /// (`SET kendall.variant = 'a'`).
    pub struct KendallOptions {
        /// Coefficient: 'b' (tau-b, tie-corrected, the default), 'a' (tau-a) or 'c' (Stuart's tau-c).
        pub variant: Variant, default = Variant::B
        /// Kernel: 'auto' (the fastest for the data), 'naive', 'gse', 'vse' or 'bitset'.
        pub kernel: KernelChoice, default = KernelChoice::Auto
        /// Instruction set of the SIMD kernels: 'auto', 'avx512', 'avx2' or 'scalar'.
        pub simd: SimdChoice, default = SimdChoice::Auto
        /// Edge of a square tile of the gene × gene job matrix, in genes.
        pub tile_size: usize, default = DEFAULT_TILE_SIZE
        /// Bytes the per-query kernel data (the bit-planes) may take.
        pub memory_limit: usize, default = DEFAULT_MEMORY_LIMIT
        /// Input layout: 'genes_as_rows', 'genes_as_columns' or 'long'.
        pub layout: Layout, default = Layout::GenesAsRows
        /// p-value method: 'auto' (scipy's rule), 'asymptotic' or 'exact'.
        pub pvalue: PValueMethod, default = PValueMethod::Auto
        /// Null and NaN values: 'pairwise' (each pair uses the samples both genes have) or 'error'.
        pub missing: MissingValues, default = MissingValues::Pairwise
        /// Pairs with fewer complete samples than this get NULL tau and p_value (pandas' min_periods).
        pub min_periods: usize, default = 1
    }
}

impl ConfigExtension for KendallOptions {
    const PREFIX: &'static str = "kendall";
}

impl KendallOptions {
    /// The options set in a session's configuration (the defaults when the
    /// extension is not registered).
    pub fn from_config(config: &ConfigOptions) -> Self {
        config
            .extensions
            .get::<KendallOptions>()
            .cloned()
            .unwrap_or_default()
    }
}

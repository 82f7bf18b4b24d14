//! # datafusion-kendall
//!
//! All-pairs Kendall rank correlation as an Apache DataFusion table function.
//!
//! ```sql
//! SELECT gene_i, gene_j, tau
//! FROM kendall_all_pairs('data/demo_expression.parquet')
//! WHERE abs(tau) >= 0.8;
//! ```
//!
//! [`register`] adds the table functions `kendall_all_pairs`,
//! `kendall_top_partners` (each gene's k strongest partners),
//! `kendall_cross_pairs` (every pair between two matrices),
//! `kendall_candidate_pairs` (only the listed pairs) and
//! `kendall_candidate_taus` (their taus line by line, in the list's order),
//! described in [`functions`], and the
//! `kendall.*` session options ([`KendallOptions`]) to a `SessionContext`:
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! datafusion_kendall::register(&ctx)?;
//! ctx.sql("SELECT count(*) FROM kendall_all_pairs('data/demo_expression.parquet') \
//!          WHERE abs(tau) >= 0.8").await?.show().await?;
//! # Ok(()) }
//! ```
//!
//! How it works: the input is read and rank-transformed once per query
//! ([`input`]); the upper triangle of the gene × gene matrix is cut into
//! tiles numbered by the LightPCC bijection ([`tiles`]); each DataFusion
//! partition computes a contiguous, pair-balanced range of tiles with a
//! per-pair [`kernel`] and streams `(gene_i, gene_j, tau)` batches
//! ([`exec`]), applying pushed-down filters on `tau` ([`filter`]) before a
//! pair becomes a row. `q_value`, the p-value adjusted for the false
//! discovery rate over all pairs, comes from a counting pass ([`stats::fdr`]).
//! The whole path, file by file: `docs/architecture.md`.

// First: the option enums' macro is used by the modules below.
pub(crate) mod option_enum;

#[cfg(feature = "ballista")]
pub mod ballista;
pub mod error;
pub mod exec;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod filter;
pub mod functions;
pub mod gene_filter;
pub mod graphml;
pub mod group_filter;
pub mod input;
pub mod kernel;
pub mod load;
pub mod memory;
pub mod options;
pub mod pace;
pub mod rank;
pub mod schema;
pub mod sort;
pub mod stats;
pub mod tiles;
pub mod work;

#[cfg(test)]
mod test_rng;

use datafusion::error::Result;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use functions::{KendallAllPairs, KendallCrossPairs, KendallTable, KendallTopPartners};
pub use input::sparse_table::SparseTable;
pub use kernel::{KernelChoice, Variant};
pub use options::KendallOptions;
pub use schema::GeneIds;

/// The SQL name of the all-pairs table function.
pub const FUNCTION_NAME: &str = schema::ALL_PAIRS;

/// Registers every table function ([`functions::FUNCTIONS`]:
/// `kendall_all_pairs`, `kendall_top_partners`, `kendall_cross_pairs`,
/// `kendall_candidate_pairs`, `kendall_candidate_taus`) and
/// the `kendall.*` options on `ctx`, the GraphML writer of `COPY`
/// ([`graphml`]) and the MatrixMarket table format (`STORED AS MTX`,
/// [`input::MtxTableFactory`]).
///
/// Options already set on the context (e.g. via [`with_kendall_options`])
/// are kept.
pub fn register(ctx: &SessionContext) -> Result<()> {
    for (name, function) in functions::table_functions() {
        ctx.register_udtf(name, function);
    }
    let state = ctx.state_ref();
    let mut state = state.write();
    let options = state.config_mut().options_mut();
    if options.extensions.get::<KendallOptions>().is_none() {
        options.extensions.insert(KendallOptions::default());
    }
    // `COPY ... TO 'net.graphml'` / `STORED AS GRAPHML` ([`graphml`]).
    state.register_file_format(std::sync::Arc::new(graphml::GraphmlFormatFactory), true)?;
    // `CREATE EXTERNAL TABLE t STORED AS MTX LOCATION 'x.mtx' OPTIONS (...)`.
    state.table_factories_mut().insert(
        input::MTX_FILE_TYPE.to_string(),
        std::sync::Arc::new(input::MtxTableFactory),
    );
    Ok(())
}

/// Adds the `kendall.*` options to a `SessionConfig` (for contexts built
/// from a config; [`register`] does this for you on an existing context).
pub fn with_kendall_options(config: SessionConfig) -> SessionConfig {
    config.with_option_extension(KendallOptions::default())
}

/// A `SessionContext` with the default configuration and this crate registered.
pub fn new_context() -> Result<SessionContext> {
    let ctx = SessionContext::new_with_config(with_kendall_options(SessionConfig::new()));
    register(&ctx)?;
    Ok(ctx)
}

//! The table functions and the `kendall.*` options for another copy of
//! DataFusion, through DataFusion's stable C ABI (`datafusion-ffi`; feature
//! `ffi`). This is what the Python package (`python/`) hands to the
//! `datafusion` Python package, which carries its own DataFusion.
//!
//! The ABI is stable only within one DataFusion major version: a host built
//! on another major must be refused before anything crosses
//! ([`check_host_major`]).
//!
//! Options: a foreign session cannot hold our [`KendallOptions`] type, so
//! they cross as an [`FFI_ExtensionOptions`], a string map that DataFusion
//! routes every `SET <unknown namespace>.key` to. [`extension_options`] seeds
//! it with the defaults (so `SHOW kendall.*` lists them); when a query is
//! planned, [`KendallOptions::from_config`] parses the map with the same
//! checks as a local `SET`, so a bad value is refused with the same message
//! (at the query rather than at the `SET`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::TableFunctionImpl;
use datafusion::error::{DataFusionError, Result};
use datafusion_ffi::config::extension_options::FFI_ExtensionOptions;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::udtf::FFI_TableFunction;
use tokio::runtime::Handle;

use crate::options::KendallOptions;

/// The DataFusion major version this library was built against (what
/// `datafusion_ffi::version()` reports).
pub fn datafusion_major() -> u64 {
    datafusion_ffi::version()
}

/// Refuses a host DataFusion of another major version than ours: its FFI
/// structs may have another layout, and using them would crash the process.
/// `host` is the host's version string (e.g. the Python package's
/// `datafusion.__version__`).
pub fn check_host_major(host: &str) -> Result<()> {
    let ours = datafusion_major();
    let major = host
        .trim()
        .split(['.', '+', '-'])
        .next()
        .and_then(|m| m.parse::<u64>().ok());
    match major {
        Some(m) if m == ours => Ok(()),
        Some(m) => Err(DataFusionError::Configuration(format!(
            "datafusion-kendall was built for DataFusion {ours}.x, but the host DataFusion is \
             {host} (major {m}); the FFI between them is only stable within one major version. \
             Install a datafusion {ours}.x, or rebuild datafusion-kendall against {m}.x"
        ))),
        None => Err(DataFusionError::Configuration(format!(
            "datafusion-kendall: cannot read a major version from the host DataFusion \
             version '{host}' (expected {ours}.x)"
        ))),
    }
}

/// The SQL names and implementations of every table function of this crate
/// ([`crate::functions::FUNCTIONS`]).
pub fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    crate::functions::table_functions()
}

/// `function` as an [`FFI_TableFunction`] for a host whose logical codec is
/// `codec`. Its scans and streams run on `runtime` (this library's tokio
/// runtime: the host's runtime is another copy of tokio, invisible here).
pub fn ffi_table_function(
    function: Arc<dyn TableFunctionImpl>,
    runtime: Handle,
    codec: FFI_LogicalExtensionCodec,
) -> FFI_TableFunction {
    FFI_TableFunction::new_with_ffi_codec(function, Some(runtime), codec)
}

/// The `kendall.*` options, at their defaults, as an FFI config extension
/// for a host's session configuration.
pub fn extension_options() -> FFI_ExtensionOptions {
    let defaults = KendallOptions::default();
    let map: HashMap<String, String> = datafusion::config::ExtensionOptions::entries(&defaults)
        .into_iter()
        .filter_map(|e| e.value.map(|v| (e.key, v)))
        .collect();
    FFI_ExtensionOptions::from(map)
}

#[cfg(test)]
mod tests {
    use datafusion::common::config::ConfigOptions;

    use super::*;

    #[test]
    fn host_major_checked() {
        let ours = datafusion_major();
        assert!(check_host_major(&format!("{ours}.0.0")).is_ok());
        assert!(check_host_major(&format!("{ours}.1.0rc3")).is_ok());
        let err = check_host_major(&format!("{}.0.0", ours + 1)).unwrap_err();
        assert!(
            err.to_string().contains("only stable within one major"),
            "{err}"
        );
        assert!(check_host_major("unknown").is_err());
    }

    #[test]
    fn ffi_options_round_trip_with_local_checks() {
        let mut config = ConfigOptions::new();
        config.extensions.insert(extension_options());
        // What `SET kendall.variant = 'c'` does on a host session.
        config.set("kendall.variant", "c").unwrap();
        let options = KendallOptions::from_config(&config).unwrap();
        assert_eq!(options.variant.to_string(), "c");
        config.set("kendall.variant", "z").unwrap();
        let err = KendallOptions::from_config(&config).unwrap_err();
        assert!(err.to_string().contains("kendall.variant"), "{err}");
    }
}

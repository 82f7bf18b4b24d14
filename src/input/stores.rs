//! Object stores for URL sources: `s3://`, `gs://`, `az://` / `abfss://`,
//! `http(s)://` and `file://`.
//!
//! A source URL whose store the session does not have yet gets one on first
//! use, built from the usual environment variables (`AWS_*`, `GOOGLE_*`,
//! `AZURE_*`, as `object_store`'s `from_env` builders read them) and
//! registered in the session's runtime, so later queries reuse it. A store
//! the application registered itself always wins.
//!
//! The cloud stores need the `cloud` cargo feature; without it such a URL is
//! a plan error that says so.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::Result;
use datafusion::execution::object_store::{
    DefaultObjectStoreRegistry, ObjectStoreRegistry, ObjectStoreUrl,
};
use datafusion::object_store::ObjectStore;
use datafusion::object_store::local::LocalFileSystem;

use crate::error::plan_error;

/// The URL schemes a store is built for, as error messages list them.
pub const SCHEMES: &str = "file, s3, s3a, gs, az, azure, abfs, abfss, adl, http, https";

/// Which kind of store a URL scheme needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The local file system (`file://`).
    Local,
    /// Amazon S3 or an S3-compatible service (`s3://`, `s3a://`).
    S3,
    /// Google Cloud Storage (`gs://`).
    Gcs,
    /// Azure Blob Storage or Data Lake (`az://`, `abfss://`, ...).
    Azure,
    /// A plain web server (`http://`, `https://`).
    Http,
}

impl Kind {
    fn of(scheme: &str) -> Option<Kind> {
        Some(match scheme {
            "file" => Kind::Local,
            "s3" | "s3a" => Kind::S3,
            "gs" => Kind::Gcs,
            "az" | "azure" | "abfs" | "abfss" | "adl" => Kind::Azure,
            "http" | "https" => Kind::Http,
            _ => return None,
        })
    }

    /// How messages name the store.
    fn name(self) -> &'static str {
        match self {
            Kind::Local => "local file system",
            Kind::S3 => "S3",
            Kind::Gcs => "Google Cloud Storage",
            Kind::Azure => "Azure",
            Kind::Http => "HTTP",
        }
    }
}

/// Makes sure the session can read `url` (the location of `source`): if its
/// runtime has no object store for the URL, builds one for the URL's scheme
/// and registers it.
pub fn ensure(state: &dyn Session, source: &str, url: &ListingTableUrl) -> Result<()> {
    let env = state.runtime_env();
    if env.object_store(url).is_ok() {
        return Ok(());
    }
    let base = url.object_store();
    let scheme = url.scheme();
    let kind = Kind::of(scheme).ok_or_else(|| {
        plan_error(format!(
            "cannot read '{source}': no object store is registered for '{base}' and \
             '{scheme}://' is not a scheme this crate can open (it opens {SCHEMES})"
        ))
    })?;
    let store = build(kind, &base).map_err(|e| {
        plan_error(format!(
            "cannot read '{source}': cannot set up the {} store for '{base}': {e}",
            kind.name()
        ))
    })?;
    env.register_object_store(base.as_ref(), store);
    Ok(())
}

/// The store for the object store URL `base` (scheme and authority), built
/// from the environment as [`ensure`] builds it.
pub(crate) fn store_for(base: &ObjectStoreUrl) -> Result<Arc<dyn ObjectStore>> {
    let scheme = base.as_str().split("://").next().unwrap_or_default();
    let kind = Kind::of(scheme).ok_or_else(|| {
        plan_error(format!(
            "no object store for '{base}': '{scheme}://' is not a scheme this crate can open \
             (it opens {SCHEMES})"
        ))
    })?;
    build(kind, base).map_err(|e| {
        plan_error(format!(
            "cannot set up the {} store for '{base}': {e}",
            kind.name()
        ))
    })
}

/// An object store registry that builds the store of a URL it does not
/// have yet from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`; feature
/// `cloud`), as `ensure` does for a source: for sessions that must open
/// any location a plan names, a `COPY` target or a file queried by its URL
/// as well as a source (the shell, Ballista's schedulers and executors).
#[derive(Debug, Default)]
pub struct OnDemandStores {
    known: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for OnDemandStores {
    fn register_store(
        &self,
        url: &url::Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn deregister_store(&self, url: &url::Url) -> Result<Arc<dyn ObjectStore>> {
        self.known.deregister_store(url)
    }

    fn get_store(&self, url: &url::Url) -> Result<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.known.get_store(url) {
            return Ok(store);
        }
        let base = ObjectStoreUrl::parse(&url[..url::Position::BeforePath])?;
        let store = store_for(&base)?;
        self.known.register_store(url, Arc::clone(&store));
        Ok(store)
    }
}

/// Why a store could not be built (shown after "cannot set up the ... store").
type BuildError = String;

/// The store of `kind` for `base` (scheme and authority of the URL).
fn build(
    kind: Kind,
    base: &ObjectStoreUrl,
) -> std::result::Result<Arc<dyn ObjectStore>, BuildError> {
    match kind {
        Kind::Local => Ok(Arc::new(LocalFileSystem::new())),
        _ => cloud::build(kind, base),
    }
}

#[cfg(not(feature = "cloud"))]
mod cloud {
    use super::*;

    /// Without the `cloud` feature: an error saying how to get it.
    pub(super) fn build(
        kind: Kind,
        base: &ObjectStoreUrl,
    ) -> std::result::Result<Arc<dyn ObjectStore>, BuildError> {
        Err(format!(
            "this build of datafusion-kendall has no {} support; rebuild it with \
             `--features cloud` (cargo feature `cloud`), or register an object store \
             for '{base}' in the session",
            kind.name(),
        ))
    }
}

#[cfg(feature = "cloud")]
mod cloud {
    use std::time::Duration;

    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
    use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
    use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
    use object_store::http::HttpBuilder;
    use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};

    use super::*;

    /// Time to open a connection, unless `<PREFIX>_CONNECT_TIMEOUT` says
    /// otherwise: an unreachable host is an error in seconds.
    const CONNECT_TIMEOUT: &str = "5s";

    /// Time for one whole request, unless `<PREFIX>_TIMEOUT` says otherwise.
    /// DataFusion reads Parquet by column chunk, so one request is one range
    /// of a file, not the whole file.
    const REQUEST_TIMEOUT: &str = "60s";

    /// Retries of a failed request: a few, quickly, so that a refused
    /// connection or a dead host fails the query in seconds rather than after
    /// object_store's default of ten retries over up to three minutes.
    fn retry() -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            max_retries: 3,
            retry_timeout: Duration::from_secs(15),
        }
    }

    /// The client settings we choose, each with the environment variable
    /// suffix that overrides it (`AWS_CONNECT_TIMEOUT`, `GOOGLE_TIMEOUT`, ...).
    fn client_defaults() -> [(ClientConfigKey, &'static str, &'static str); 2] {
        [
            (
                ClientConfigKey::ConnectTimeout,
                "CONNECT_TIMEOUT",
                CONNECT_TIMEOUT,
            ),
            (ClientConfigKey::Timeout, "TIMEOUT", REQUEST_TIMEOUT),
        ]
    }

    /// Our client defaults for a store whose variables start with `prefix`,
    /// leaving out those the environment sets.
    fn unset_defaults(prefix: &str) -> impl Iterator<Item = (ClientConfigKey, &'static str)> {
        let prefix = prefix.to_string();
        client_defaults()
            .into_iter()
            .filter(move |(_, var, _)| std::env::var_os(format!("{prefix}_{var}")).is_none())
            .map(|(key, _, value)| (key, value))
    }

    pub(super) fn build(
        kind: Kind,
        base: &ObjectStoreUrl,
    ) -> std::result::Result<Arc<dyn ObjectStore>, BuildError> {
        let url = base.as_str();
        let store: Arc<dyn ObjectStore> = match kind {
            Kind::S3 => {
                let mut builder = AmazonS3Builder::from_env()
                    .with_url(url)
                    .with_retry(retry());
                for (key, value) in unset_defaults("AWS") {
                    builder = builder.with_config(AmazonS3ConfigKey::Client(key), value);
                }
                Arc::new(builder.build().map_err(|e| e.to_string())?)
            }
            Kind::Gcs => {
                let mut builder = GoogleCloudStorageBuilder::from_env()
                    .with_url(url)
                    .with_retry(retry());
                for (key, value) in unset_defaults("GOOGLE") {
                    builder = builder.with_config(GoogleConfigKey::Client(key), value);
                }
                Arc::new(builder.build().map_err(|e| e.to_string())?)
            }
            Kind::Azure => {
                let mut builder = MicrosoftAzureBuilder::from_env()
                    .with_url(url)
                    .with_retry(retry());
                for (key, value) in unset_defaults("AZURE") {
                    builder = builder.with_config(AzureConfigKey::Client(key), value);
                }
                Arc::new(builder.build().map_err(|e| e.to_string())?)
            }
            Kind::Http => {
                // An http:// source is asked for by name: plain HTTP is allowed.
                let mut builder = HttpBuilder::new()
                    .with_url(url)
                    .with_retry(retry())
                    .with_config(ClientConfigKey::AllowHttp, "true");
                for (key, _, value) in client_defaults() {
                    builder = builder.with_config(key, value);
                }
                Arc::new(builder.build().map_err(|e| e.to_string())?)
            }
            Kind::Local => Arc::new(LocalFileSystem::new()),
        };
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_map_to_stores() {
        assert_eq!(Kind::of("s3a"), Some(Kind::S3));
        assert_eq!(Kind::of("abfss"), Some(Kind::Azure));
        assert_eq!(Kind::of("gs"), Some(Kind::Gcs));
        assert_eq!(Kind::of("https"), Some(Kind::Http));
        assert_eq!(Kind::of("file"), Some(Kind::Local));
        assert_eq!(Kind::of("ftp"), None);
    }

    #[test]
    fn a_local_store_is_always_built() {
        let base = ObjectStoreUrl::parse("file://").unwrap();
        assert!(build(Kind::Local, &base).is_ok());
    }

    #[cfg(not(feature = "cloud"))]
    #[test]
    fn without_the_feature_a_cloud_url_names_the_feature() {
        let base = ObjectStoreUrl::parse("s3://bucket").unwrap();
        let Err(e) = build(Kind::S3, &base) else {
            panic!("an S3 store was built without the cloud feature");
        };
        assert!(e.contains("--features cloud"), "{e}");
    }
}

//! Running the table functions on an Apache Ballista cluster (cargo
//! feature `ballista`).
//!
//! A query is planned on the client as usual: the table function is called
//! there and its provider goes into the logical plan, which the client sends
//! to the scheduler with [`KendallLogicalCodec`]. The scheduler plans the
//! scan (reading the source's metadata), cuts the plan into stages and sends
//! each task its stage with [`KendallPhysicalCodec`]. A `KendallExec` task is
//! one partition: one balanced range of tile ids. Each task reads and ranks
//! the input itself (it is small next to the pairs: 22,283 × 57 values are
//! 10 MB, their pairs 248 million), so every executor must be able to read
//! the source: shared storage or an object store.
//!
//! Planned for a cluster, a pair scan takes four times
//! `datafusion.execution.target_partitions` partitions unless
//! `kendall.partitions` says otherwise (more tasks than executor slots, so a
//! slow or lost executor holds back only a small share); top partners and
//! q-values, which merge state over all pairs, run as one task.
//!
//! The processes must be ours: Ballista's stock scheduler and executor do
//! not know our codecs. [`process`] runs them (the shell's `scheduler` and
//! `executor` subcommands); [`standalone_context`] runs both inside the
//! calling process, [`remote_context`] connects to a running scheduler.

pub mod codec;
pub mod process;

use std::sync::Arc;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::serde::BallistaCodec;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::utils::default_session_builder;
use ballista_executor::new_standalone_executor_from_state;
use ballista_scheduler::standalone::new_standalone_scheduler_with_builder;
use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use codec::{KendallLogicalCodec, KendallPhysicalCodec};

/// `config` made a Ballista session's: Ballista's options, our codecs and
/// the `kendall.*` options. What clients, schedulers and executors use.
pub fn session_config(config: SessionConfig) -> SessionConfig {
    let config = config
        .upgrade_for_ballista()
        .with_ballista_logical_extension_codec(Arc::new(KendallLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(KendallPhysicalCodec::default()));
    if config
        .options()
        .extensions
        .get::<crate::KendallOptions>()
        .is_some()
    {
        config
    } else {
        crate::with_kendall_options(config)
    }
}

/// A context whose queries run on an in-process Ballista scheduler and
/// executor (with our codecs, one task slot per core), the table functions
/// registered: what the tests use, and a way to try a cluster without
/// starting processes.
///
/// Ballista's own `standalone_with_state` gives its scheduler a copy of the
/// state it was built from for every query, so a later `SET kendall.*` never
/// reached the planning; this scheduler builds each query's session from the
/// settings the client sends, as a separate scheduler process does.
pub async fn standalone_context(config: SessionConfig) -> Result<SessionContext> {
    let config = session_config(config);
    let state = SessionStateBuilder::new()
        .with_config(config.clone())
        .with_default_features()
        .build();
    let codec = BallistaCodec::new(
        Arc::new(KendallLogicalCodec::default()),
        Arc::new(KendallPhysicalCodec::default()),
    );
    let address = new_standalone_scheduler_with_builder(
        Arc::new(default_session_builder),
        Arc::new(move || config.clone()),
        codec,
    )
    .await
    .map_err(process::ballista_error)?;
    let url = format!("http://localhost:{}", address.port());
    let scheduler = loop {
        match SchedulerGrpcClient::connect(url.clone()).await {
            Ok(client) => break client,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    };
    let slots = std::thread::available_parallelism().map_or(1, |n| n.get());
    new_standalone_executor_from_state(scheduler, slots, &state)
        .await
        .map_err(process::ballista_error)?;
    let ctx =
        SessionContext::remote_with_state(&format!("df://localhost:{}", address.port()), state)
            .await?;
    crate::register(&ctx)?;
    Ok(ctx)
}

/// A context whose queries run on the cluster of the scheduler at `url`
/// (`df://host:port`), the table functions registered. The scheduler and
/// executors must be this crate's (see [`process`]).
pub async fn remote_context(url: &str, config: SessionConfig) -> Result<SessionContext> {
    let state = SessionStateBuilder::new()
        .with_config(session_config(config))
        .with_runtime_env(
            RuntimeEnvBuilder::new()
                .with_object_store_registry(Arc::new(crate::input::OnDemandStores::default()))
                .build_arc()?,
        )
        .with_default_features()
        .build();
    let ctx = SessionContext::remote_with_state(url, state).await?;
    crate::register(&ctx)?;
    Ok(ctx)
}

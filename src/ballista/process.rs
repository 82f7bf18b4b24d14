//! Ballista scheduler and executor processes that carry our codecs (the
//! shell's `scheduler` and `executor` subcommands). Settings are named as
//! Ballista's own `ballista-scheduler` and `ballista-executor` name them.

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::utils::default_session_builder;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::SessionConfig;

use super::{KendallLogicalCodec, KendallPhysicalCodec, session_config};

/// A scheduler's settings (`datafusion-kendall scheduler --help`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerOptions {
    /// `--bind-host`: the address the gRPC service listens on.
    pub bind_host: String,
    /// `--bind-port`.
    pub bind_port: u16,
    /// `--external-host`: how executors and clients reach this scheduler.
    pub external_host: String,
    /// `--executor-timeout-seconds`: an executor silent this long is dead and
    /// its tasks are run again elsewhere.
    pub executor_timeout_seconds: u64,
    /// `--expire-dead-executor-interval-seconds`: how often that is checked.
    pub expire_dead_executor_interval_seconds: u64,
    /// `--task-max-failures`: attempts of one task before its job fails.
    pub task_max_failures: usize,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        let ballista = SchedulerConfig::default();
        Self {
            bind_host: "127.0.0.1".into(),
            bind_port: 50050,
            external_host: "localhost".into(),
            executor_timeout_seconds: ballista.executor_timeout_seconds,
            expire_dead_executor_interval_seconds: ballista.expire_dead_executor_interval_seconds,
            task_max_failures: ballista.task_max_failures,
        }
    }
}

/// An executor's settings (`datafusion-kendall executor --help`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorOptions {
    /// `--scheduler-host`.
    pub scheduler_host: String,
    /// `--scheduler-port`.
    pub scheduler_port: u16,
    /// `--bind-host`: the address the Flight (shuffle) service listens on.
    pub bind_host: String,
    /// `--bind-port`: the Arrow Flight port other executors and clients
    /// fetch results from.
    pub bind_port: u16,
    /// `--bind-grpc-port`: the port of the executor's gRPC service.
    pub bind_grpc_port: u16,
    /// `--external-host`: how others reach this executor (default: its bind host).
    pub external_host: Option<String>,
    /// `--concurrent-tasks`: task slots (default: the number of cores).
    pub concurrent_tasks: usize,
    /// `--work-dir`: where shuffle files go (default: a temporary directory).
    pub work_dir: Option<String>,
    /// `--executor-heartbeat-interval-seconds`.
    pub heartbeat_interval_seconds: u64,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        let ballista = ExecutorProcessConfig::default();
        Self {
            scheduler_host: "localhost".into(),
            scheduler_port: 50050,
            bind_host: ballista.bind_host,
            bind_port: ballista.port,
            bind_grpc_port: ballista.grpc_port,
            external_host: None,
            concurrent_tasks: ballista.vcores,
            work_dir: None,
            heartbeat_interval_seconds: ballista.executor_heartbeat_interval_seconds,
        }
    }
}

/// A runtime whose object stores come from [`crate::input::OnDemandStores`], spilling to
/// `work_dir` when given.
fn runtime(work_dir: Option<&str>) -> Result<Arc<RuntimeEnv>> {
    let mut builder = RuntimeEnvBuilder::new()
        .with_object_store_registry(Arc::new(crate::input::OnDemandStores::default()));
    if let Some(dir) = work_dir {
        builder = builder.with_temp_file_path(dir);
    }
    builder.build_arc()
}

/// The session configuration schedulers and executors start from: Ballista's
/// with our codecs and options (each query's settings come from its client).
fn cluster_config() -> SessionConfig {
    session_config(SessionConfig::new())
}

pub(super) fn ballista_error(e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::External(e.to_string().into())
}

/// Runs a scheduler until the process ends (an error if it cannot start,
/// e.g. its port is taken).
pub async fn run_scheduler(options: SchedulerOptions) -> Result<()> {
    let address: SocketAddr = format!("{}:{}", options.bind_host, options.bind_port)
        .parse()
        .map_err(|e| {
            DataFusionError::Configuration(format!(
                "scheduler: --bind-host {} --bind-port {} is not an address: {e}",
                options.bind_host, options.bind_port
            ))
        })?;
    let mut config = SchedulerConfig {
        bind_host: options.bind_host.clone(),
        bind_port: options.bind_port,
        external_host: options.external_host.clone(),
        executor_timeout_seconds: options.executor_timeout_seconds,
        expire_dead_executor_interval_seconds: options.expire_dead_executor_interval_seconds,
        no_executors_grace_period_seconds: options.executor_timeout_seconds,
        task_max_failures: options.task_max_failures,
        ..SchedulerConfig::default()
    };
    config.override_config_producer = Some(Arc::new(cluster_config));
    config.override_session_builder = Some(Arc::new(|config: SessionConfig| {
        Ok(
            SessionStateBuilder::new_from_existing(default_session_builder(config)?)
                .with_runtime_env(runtime(None)?)
                .build(),
        )
    }));
    config.override_logical_codec = Some(Arc::new(KendallLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(KendallPhysicalCodec::default()));
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(ballista_error)?;
    eprintln!(
        "datafusion-kendall scheduler listening on {address} (executors and clients: {}:{})",
        options.external_host, options.bind_port
    );
    start_server(cluster, address, Arc::new(config))
        .await
        .map_err(ballista_error)
}

/// Runs an executor until the process ends: registers with the scheduler,
/// then runs the tasks it is given (an error if it cannot start).
pub async fn run_executor(options: ExecutorOptions) -> Result<()> {
    let mut config = ExecutorProcessConfig {
        bind_host: options.bind_host.clone(),
        external_host: options.external_host.clone(),
        port: options.bind_port,
        grpc_port: options.bind_grpc_port,
        scheduler_host: options.scheduler_host.clone(),
        scheduler_port: options.scheduler_port,
        vcores: options.concurrent_tasks.max(1),
        work_dir: options.work_dir.clone(),
        executor_heartbeat_interval_seconds: options.heartbeat_interval_seconds,
        ..ExecutorProcessConfig::default()
    };
    config.override_config_producer = Some(Arc::new(cluster_config));
    let work_dir = options.work_dir.clone();
    config.override_runtime_producer = Some(Arc::new(move |_: &SessionConfig| {
        runtime(work_dir.as_deref())
    }));
    config.override_logical_codec = Some(Arc::new(KendallLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(KendallPhysicalCodec::default()));
    eprintln!(
        "datafusion-kendall executor on {}:{} (gRPC {}), {} task slot(s), scheduler {}:{}",
        options.bind_host,
        options.bind_port,
        options.bind_grpc_port,
        config.vcores,
        options.scheduler_host,
        options.scheduler_port
    );
    start_executor_process(Arc::new(config))
        .await
        .map_err(ballista_error)
}

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

/// Our default of `--executor-heartbeat-interval-seconds` (Ballista's: 60 s):
/// how often an executor tells the scheduler it is alive.
pub const DEFAULT_HEARTBEAT_INTERVAL_SECONDS: u64 = 2;

/// Our default of `--executor-timeout-seconds` (Ballista's: 180 s): an
/// executor whose last heartbeat is older than this is dead. Five heartbeat
/// intervals, so a busy or briefly stalled executor is not declared dead
/// (the scheduler then stops it).
pub const DEFAULT_EXECUTOR_TIMEOUT_SECONDS: u64 = 10;

/// Our default of `--expire-dead-executor-interval-seconds` (Ballista's: 15 s).
pub const DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS: u64 = 2;

/// A scheduler's settings: the flags of `datafusion-kendall scheduler`
/// (clap), whose attributes below are the one home of their defaults and
/// help ([`Default`] parses no flags).
///
/// The liveness defaults are ours, not Ballista's: with Ballista's (a 180 s
/// timeout checked every 15 s, executors heartbeating every 60 s) a killed
/// executor's tasks wait about three minutes before running elsewhere; with
/// ours (10 s, every 2 s, heartbeats every 2 s) the executor is dropped 8
/// to 13 s after the kill (the timeout less the time since its last
/// heartbeat, plus up to one check) and its tasks run again at once.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct SchedulerOptions {
    /// Address to listen on
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1")]
    pub bind_host: String,
    /// Port to listen on
    #[arg(long, value_name = "PORT", default_value_t = 50050)]
    pub bind_port: u16,
    /// How executors and clients reach this scheduler
    #[arg(long, value_name = "HOST", default_value = "localhost")]
    pub external_host: String,
    /// Attempts of a task before its query fails
    #[arg(long, value_name = "N",
          default_value_t = SchedulerConfig::default().task_max_failures)]
    pub task_max_failures: usize,
    /// An executor with no heartbeat for S seconds is dead: it is dropped
    /// (and told to stop) and its tasks, finished ones whose output it held
    /// too, run again on the others. Keep it several times the executors'
    /// heartbeat interval (default 2 s) and more than the check interval
    #[arg(long, value_name = "S", help_heading = LIVENESS,
          default_value_t = DEFAULT_EXECUTOR_TIMEOUT_SECONDS)]
    pub executor_timeout_seconds: u64,
    /// How often executors are checked for that timeout
    #[arg(long, value_name = "S", help_heading = LIVENESS,
          default_value_t = DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS)]
    pub expire_dead_executor_interval_seconds: u64,
    /// Once the last executor is gone, running queries wait S seconds for
    /// one to (re)register, then fail; 0 fails them at once [default: the
    /// executor timeout]
    #[arg(long, value_name = "S", help_heading = LIVENESS)]
    pub no_executors_grace_period_seconds: Option<u64>,
}

/// The help heading of the liveness flags.
const LIVENESS: &str = "Liveness (our defaults, not Ballista's 180 s / 15 s: a killed \
                        executor's tasks run again elsewhere about 10 s after it died)";

/// The value of `T`'s flags when none is given: their defaults.
fn defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = command.get_matches_from(std::iter::empty::<String>());
    T::from_arg_matches(&matches).expect("every flag has a default or is optional")
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        defaults()
    }
}

impl SchedulerOptions {
    /// Checks the settings' values and how they relate: an error naming the
    /// flag for a zero interval or task count, or a timeout that would
    /// declare healthy executors dead.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.expire_dead_executor_interval_seconds == 0 {
            return Err(
                "--expire-dead-executor-interval-seconds must be at least 1, got 0".to_string(),
            );
        }
        if self.executor_timeout_seconds <= DEFAULT_HEARTBEAT_INTERVAL_SECONDS {
            return Err(format!(
                "--executor-timeout-seconds must be more than the executors' heartbeat \
                 interval (default {DEFAULT_HEARTBEAT_INTERVAL_SECONDS} s; a few intervals \
                 are safer), got {}: healthy executors would be declared dead",
                self.executor_timeout_seconds
            ));
        }
        if self.executor_timeout_seconds <= self.expire_dead_executor_interval_seconds {
            return Err(format!(
                "--executor-timeout-seconds ({}) must be more than \
                 --expire-dead-executor-interval-seconds ({})",
                self.executor_timeout_seconds, self.expire_dead_executor_interval_seconds
            ));
        }
        if self.task_max_failures == 0 {
            return Err("--task-max-failures must be at least 1, got 0".to_string());
        }
        Ok(())
    }

    /// Ballista's scheduler configuration for these settings (codecs and
    /// session builders not yet set).
    fn ballista_config(&self) -> SchedulerConfig {
        SchedulerConfig {
            bind_host: self.bind_host.clone(),
            bind_port: self.bind_port,
            external_host: self.external_host.clone(),
            executor_timeout_seconds: self.executor_timeout_seconds,
            expire_dead_executor_interval_seconds: self.expire_dead_executor_interval_seconds,
            no_executors_grace_period_seconds: self
                .no_executors_grace_period_seconds
                .unwrap_or(self.executor_timeout_seconds),
            task_max_failures: self.task_max_failures,
            ..SchedulerConfig::default()
        }
    }
}

/// An executor's settings: the flags of `datafusion-kendall executor`
/// (clap), whose attributes below are the one home of their defaults and
/// help ([`Default`] parses no flags).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ExecutorOptions {
    /// The scheduler
    #[arg(long, value_name = "HOST", default_value = "localhost")]
    pub scheduler_host: String,
    /// Its port
    #[arg(long, value_name = "PORT", default_value_t = 50050)]
    pub scheduler_port: u16,
    /// Address to listen on
    #[arg(long, value_name = "HOST", default_value_t = ExecutorProcessConfig::default().bind_host)]
    pub bind_host: String,
    /// Arrow Flight port, results are fetched from it
    #[arg(long, value_name = "PORT", default_value_t = ExecutorProcessConfig::default().port)]
    pub bind_port: u16,
    /// gRPC port
    #[arg(long, value_name = "PORT",
          default_value_t = ExecutorProcessConfig::default().grpc_port)]
    pub bind_grpc_port: u16,
    /// How others reach it [default: the bind host]
    #[arg(long, value_name = "HOST")]
    pub external_host: Option<String>,
    /// Task slots [default: number of cores]
    #[arg(long, value_name = "N", hide_default_value = true,
          default_value_t = ExecutorProcessConfig::default().vcores)]
    pub concurrent_tasks: usize,
    /// Where shuffle files go [default: a temporary directory]
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<String>,
    /// How often it tells the scheduler it is alive, also while busy (its
    /// heartbeats run at normal priority, tasks on lower-priority threads);
    /// keep it well under the scheduler's --executor-timeout-seconds
    /// (default 10). After 5 failed heartbeats in a row (no scheduler for
    /// about 5 intervals) the executor stops itself
    #[arg(long = "executor-heartbeat-interval-seconds", value_name = "S",
          default_value_t = DEFAULT_HEARTBEAT_INTERVAL_SECONDS)]
    pub heartbeat_interval_seconds: u64,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        defaults()
    }
}

impl ExecutorOptions {
    /// Checks the settings' values: an error naming the flag for a zero
    /// heartbeat interval.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.heartbeat_interval_seconds == 0 {
            return Err(
                "--executor-heartbeat-interval-seconds must be at least 1, got 0".to_string(),
            );
        }
        Ok(())
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
    options
        .validate()
        .map_err(|e| DataFusionError::Configuration(format!("scheduler: {e}")))?;
    let mut config = options.ballista_config();
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
        "datafusion-kendall scheduler listening on {address} (executors and clients: {}:{}); \
         an executor silent for {} s is dead (checked every {} s)",
        options.external_host,
        options.bind_port,
        options.executor_timeout_seconds,
        options.expire_dead_executor_interval_seconds
    );
    start_server(cluster, address, Arc::new(config))
        .await
        .map_err(ballista_error)
}

/// Runs an executor until the process ends: registers with the scheduler,
/// then runs the tasks it is given (an error if it cannot start).
pub async fn run_executor(options: ExecutorOptions) -> Result<()> {
    options
        .validate()
        .map_err(|e| DataFusionError::Configuration(format!("executor: {e}")))?;
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
        "datafusion-kendall executor on {}:{} (gRPC {}), {} task slot(s), scheduler {}:{}, \
         heartbeat every {} s",
        options.bind_host,
        options.bind_port,
        options.bind_grpc_port,
        config.vcores,
        options.scheduler_host,
        options.scheduler_port,
        options.heartbeat_interval_seconds
    );
    start_executor_process(Arc::new(config))
        .await
        .map_err(ballista_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_defaults_notice_a_dead_executor_within_seconds() {
        let scheduler = SchedulerOptions::default();
        assert_eq!(scheduler.validate(), Ok(()));
        let executor = ExecutorOptions::default();
        assert_eq!(executor.validate(), Ok(()));
        // Several heartbeats fit in the timeout: a late one is no death.
        assert!(scheduler.executor_timeout_seconds >= 4 * executor.heartbeat_interval_seconds);
        assert!(
            scheduler.executor_timeout_seconds + scheduler.expire_dead_executor_interval_seconds
                <= 15
        );
        let config = scheduler.ballista_config();
        assert_eq!(config.executor_timeout_seconds, 10);
        assert_eq!(config.expire_dead_executor_interval_seconds, 2);
        assert_eq!(config.no_executors_grace_period_seconds, 10);
        assert_eq!(config.task_max_failures, 4);
        let grace = SchedulerOptions {
            no_executors_grace_period_seconds: Some(0),
            ..SchedulerOptions::default()
        };
        assert_eq!(grace.ballista_config().no_executors_grace_period_seconds, 0);
    }

    #[test]
    fn bad_liveness_settings_are_refused() {
        let with = |f: fn(&mut SchedulerOptions)| {
            let mut o = SchedulerOptions::default();
            f(&mut o);
            o.validate().unwrap_err()
        };
        let e = with(|o| o.expire_dead_executor_interval_seconds = 0);
        assert!(e.contains("--expire-dead-executor-interval-seconds"), "{e}");
        let e = with(|o| o.executor_timeout_seconds = 2);
        assert!(e.contains("heartbeat"), "{e}");
        let e = with(|o| o.expire_dead_executor_interval_seconds = 10);
        assert!(e.contains("must be more than --expire"), "{e}");
        let e = with(|o| o.task_max_failures = 0);
        assert!(e.contains("--task-max-failures"), "{e}");
        let executor = ExecutorOptions {
            heartbeat_interval_seconds: 0,
            ..ExecutorOptions::default()
        };
        let e = executor.validate().unwrap_err();
        assert!(e.contains("--executor-heartbeat-interval-seconds"), "{e}");
    }
}

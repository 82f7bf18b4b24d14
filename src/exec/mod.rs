//! `KendallExec`: the execution plan that computes and streams the pairs.
//!
//! The input is loaded and ranked once per query, lazily, by whichever
//! partition starts first; all partitions share it, and its outcome, error
//! included (see [`crate::load`]). Partition `p` owns a contiguous range of
//! tile ids, balanced by pair count, and streams batches of at most
//! `batch_size` rows. Each poll computes for about [`POLL_BUDGET`] before
//! handing control back to the runtime, paced by measured cost (see
//! [`crate::pace`]), so `LIMIT`, cancellation and other tasks are never
//! starved, however selective the pushed-down filter or costly a pair.
//!
//! - [`config`]: what a scan computes, fixed at planning ([`ScanConfig`]);
//! - [`node`]: the plan node ([`KendallExec`]) and how it runs a partition;
//! - `prepare`: the input loaded, ranked and split into work, once per query;
//! - `stream`: one partition's pairs turned into batches, their rows
//!   built by `rows`;
//! - [`top_k`]: `kendall_top_partners`' bounded per-gene state;
//! - `groups`: a grouped scan (`kendall.groups`): the input read once,
//!   each group prepared once and streamed group after group;
//! - `dictionary`: dictionary-typed gene columns;
//! - [`slices`]: which tile ranges a cluster task computes;
//! - [`progress`]: how far scans have come, for progress displays;
//! - `batch`: listed pairs of two in-memory matrices computed straight into
//!   an array, without a query ([`cross_listed_tau`]);
//! - `listed`: `kendall_candidate_taus`' one partition: the listed pairs
//!   computed into an array as `batch` does, then the list's lines in order.

mod batch;
pub mod config;
mod dictionary;
mod groups;
mod listed;
pub mod node;
mod prepare;
pub mod progress;
mod rows;
pub mod slices;
mod stream;
pub mod top_k;

pub use crate::pace::POLL_BUDGET;
pub use batch::cross_listed_tau;
pub use config::ScanConfig;
pub use node::KendallExec;
pub use progress::{Progress, live_progress, live_progress_of, plan_progress};
pub use slices::partition_slices;

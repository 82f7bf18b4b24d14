//! The integration tests, gathered in one test binary.
//!
//! Every test binary links all of DataFusion, so one binary instead of one per
//! file keeps `cargo test` quicker to link and far smaller on disk.

mod balance;
mod batch;
mod budget;
mod candidates;
#[cfg(feature = "ballista")]
mod cluster;
mod common;
mod concurrency;
mod cross;
mod derived;
mod early_exit;
mod errors;
mod exports;
mod fdr;
mod fuzz;
mod graphml;
mod groups;
#[cfg(feature = "hdf5")]
mod h5;
mod inputs;
mod integers;
mod kernels;
mod layouts;
mod load;
mod memory;
mod metamorphic;
mod missing;
mod mtx;
mod parity;
mod pvalues;
mod roundtrip;
mod shell;
mod sparse;
mod sql;
mod sql_examples;
mod stores;
mod tenx;
mod top_partners;

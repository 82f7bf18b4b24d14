//! Statistics of a pair beyond tau: its p-value ([`pvalue`]) and the
//! q-value that adjusts it for the false discovery rate over all pairs
//! ([`fdr`]).

pub mod fdr;
pub mod pvalue;

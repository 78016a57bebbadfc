//! The benchmarks themselves, each a `ubt bench` subcommand.
//!
//! * [`store`]: `ubt bench store`, the store's figures on random keys
//!   beside the device's limits.
//! * [`overlay`]: `ubt bench overlay`, the state root over an overlay of
//!   updated accounts and the persistence threshold.
//! * [`runner`]: `ubt bench run` and `ubt bench sweep`, the studies'
//!   workloads on ubt and the go-ethereum peer from the same state, cold,
//!   with metrics and a report.

pub mod overlay;
pub mod runner;
pub mod store;

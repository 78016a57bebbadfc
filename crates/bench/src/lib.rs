//! # ubt-bench
//!
//! Benchmarks of ubt.
//!
//! * [`studies`]: the benchmarks: `ubt bench store` ([`studies::store`]),
//!   `ubt bench overlay` ([`studies::overlay`]), and `ubt bench run` and
//!   `sweep` ([`studies::runner`]: the studies' workloads on ubt and the
//!   go-ethereum peer from the same state, cold, with metrics and a
//!   report).
//! * [`measure`]: the device's own limits, the cold-cache protocol
//!   (`mincore(2)`-checked), device write counters and machine facts.
//! * [`gen`]: the workload generator (raw, chain-like and hot-contracts
//!   states, the ERC20 token) and the conversion of a state file into
//!   sorted tree entries.
//! * [`formats`]: the per-block metrics lines of `ubt bench run` and the
//!   go-ethereum peer (docs/workload-format.md), bounded line reading, the
//!   natural order of labels (`gd2 < gd10`).
//! * [`statistics`]: medians, quantiles (both conventions), CV, the
//!   Mann-Whitney U test and bootstrap confidence intervals of ratios of
//!   medians.
//! * [`report`]: the figures of a block-metrics report (medians,
//!   comparisons), its Markdown and its SVG charts.
//! * [`error`]: the crate's error, [`BenchError`].

pub mod error;
pub mod formats;
pub mod gen;
pub mod measure;
pub mod report;
pub mod statistics;
pub mod studies;

pub use error::BenchError;

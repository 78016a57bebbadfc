//! # ubt-bench
//!
//! Benchmarks of ubt.
//!
//! * [`device`]: the device's own limits (QD1 latency, QD32 IOPS,
//!   sequential write bandwidth), measured in the same run as the store's
//!   figures.
//! * [`cold`]: the cold-cache protocol: drop files from the page cache and
//!   check with `mincore(2)` that they are gone.
//! * [`store_bench`]: `ubt bench store`, the store's figures beside the
//!   device's.
//! * [`diskstats`], [`machine`], [`stats`]: device write counters, machine
//!   facts and percentiles for reports.
//! * [`statistics`]: medians, CV, the Mann-Whitney U test and bootstrap
//!   confidence intervals of ratios of medians.
//! * [`metrics`]: the per-block metrics lines of `ubt bench run` and the
//!   go-ethereum peer (docs/workload-format.md), grouped without the
//!   warm-up run; [`natural`]: the natural order of labels (`gd2 < gd10`).
//! * [`summary`], [`report`], [`svg`]: the figures of a block-metrics
//!   report (medians, comparisons), its Markdown and its SVG charts.
//! * [`gen`]: the workload generator (raw and chain-like states, the
//!   ERC20 token) and the conversion of a state file into sorted tree
//!   entries.
//! * [`runner`]: `ubt bench run` and `ubt bench sweep`: the studies'
//!   workloads on ubt and the go-ethereum peer from the same state, cold,
//!   with metrics and a report.
//! * [`error`]: the crate's error, [`BenchError`].

pub mod cold;
pub mod device;
pub mod diskstats;
pub mod error;
pub mod gen;
pub mod lines;
pub mod machine;
pub mod metrics;
pub mod natural;
pub mod overlay_bench;
pub mod report;
pub mod runner;
pub mod statistics;
pub mod stats;
pub mod store_bench;
pub mod summary;
pub mod svg;

pub use error::BenchError;

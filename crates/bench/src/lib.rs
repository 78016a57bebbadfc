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
//! * [`error`]: the crate's error type, [`BenchError`].

pub mod cold;
pub mod device;
pub mod diskstats;
pub mod error;
pub mod machine;
pub mod stats;
pub mod store_bench;

pub use error::BenchError;

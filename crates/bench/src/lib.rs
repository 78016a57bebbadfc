//! # ubt-bench
//!
//! Benchmarks of ubt.
//!
//! * [`device`]: the device's own limits (QD1 latency, QD32 IOPS,
//!   sequential write bandwidth), measured in the same run as the store's
//!   figures.
//! * [`cold`]: the cold-cache protocol: drop files from the page cache and
//!   check with `mincore(2)` that they are gone.
//! * [`error`]: [`BenchError`], the error of both.

pub mod cold;
pub mod device;
pub mod error;

pub use error::BenchError;

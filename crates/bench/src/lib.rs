//! # ubt-bench
//!
//! Benchmarks of ubt.
//!
//! * [`cold`]: the cold-cache protocol: drop files from the page cache and
//!   check with `mincore(2)` that they are gone.
//! * [`error`]: [`BenchError`], the error of the crate.

pub mod cold;
pub mod error;

pub use error::BenchError;

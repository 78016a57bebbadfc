//! # ubt-bench
//!
//! Benchmarks of ubt.

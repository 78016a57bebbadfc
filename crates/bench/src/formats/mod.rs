//! The line-oriented result files of the benchmarks, read back.
//!
//! * [`metrics`]: the per-block metrics lines of `ubt bench run` and the
//!   go-ethereum peer (docs/workload-format.md), grouped without the
//!   warm-up run.
//! * [`lines`]: lines read with a bound on their length.
//! * [`natural`]: the natural order of the labels they carry (`gd2 <
//!   gd10`).
//!
//! The workload files (`state.jsonl`, `blocks.jsonl`) are written by the
//! generator's one line writer (`gen::write`) and read by
//! [`crate::gen::StateRecord`] and [`crate::studies::runner::blocks`].

pub mod lines;
pub mod metrics;
pub mod natural;

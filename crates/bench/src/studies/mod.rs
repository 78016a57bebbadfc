//! The benchmarks themselves, each a `ubt bench` subcommand.
//!
//! * [`store`]: `ubt bench store`, the store's figures on random keys
//!   beside the device's limits.
//! * [`overlay`]: `ubt bench overlay`, the state root over an overlay of
//!   updated accounts and the persistence threshold.
//! * [`proofs`]: `ubt bench proofs`, multiproofs of recorded blocks'
//!   accesses beside per-key proofs and go-ethereum's witness.
//! * [`runner`]: `ubt bench run` and `ubt bench sweep`, the studies'
//!   workloads on ubt and the go-ethereum peer from the same state, cold,
//!   with metrics and a report.
//! * [`witness_keys`]: the tree keys go-ethereum's trie looks up for a recorded block.

pub mod overlay;
pub mod proofs;
pub mod runner;
pub mod store;
pub mod store_reference;
pub mod witness_keys;

//! # ubt-revm
//!
//! revm's database traits over a ubt database.

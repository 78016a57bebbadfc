//! # ubt-engine
//!
//! The public database API of ubt.

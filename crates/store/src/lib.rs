//! # ubt-store
//!
//! The on-disk store of ubt. See ARCHITECTURE.md and docs/file-format.md.

pub mod io;

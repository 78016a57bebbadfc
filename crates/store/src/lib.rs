//! # ubt-store
//!
//! The on-disk store of ubt. See ARCHITECTURE.md and docs/file-format.md.

pub mod bucket;
pub mod error;
pub mod format;
pub mod io;
pub mod prefix;
pub mod summary;

pub use error::{Result, StoreError, Structure};

//! # ubt-store
//!
//! The crash-safe on-disk store of ubt. See ARCHITECTURE.md for the design
//! and docs/file-format.md for every byte on disk.
//!
//! * [`Store`]: open (writable or read-only, with recovery), get, get_many,
//!   apply, persist, commit, revert, snapshots, prefetch, checkpoint,
//!   build, verify; [`Options`], [`Stats`] and the reports.
//! * [`io`]: the narrow file traits a database directory implements
//!   ([`io::StoreDir`], [`io::StoreFile`]) and real files ([`io::os`],
//!   io_uring or a pread pool).
//! * [`wal`]: the write-ahead log's format and its limits (the most writes
//!   one block may hold, [`wal::LAYER_OPS_MAX`]).
//! * [`StoreError`]: every error, typed.
//!
//! The other internals (buckets, the upper trie and its pages, summaries,
//! meta slots, the allocator, the cache, the revert segment) are private.
//! Two features expose test support, both off by default:
//!
//! * `testing`: the simulated disk (`io::sim`) for crash and fault tests,
//!   and the on-disk structures that tests decode and damage (`bucket`,
//!   `format`, `meta`, `prefix`, `summary`, `upper`).
//! * `fuzzing` (implies `testing`): the fuzz target bodies
//!   (`ubt_store::fuzzing`) that `fuzz/` and `tests/fuzz_bodies.rs` run.

mod alloc;
// `len` serves the cache's unit tests only; `is_empty` nothing.
#[allow(dead_code)]
mod cache;
mod error;
mod options;
mod revert_log;
mod stats;
mod store;

pub mod io;
pub mod wal;

// Public with `testing` (tests decode and damage these structures),
// crate-private otherwise; then the helpers only tests call are unused.
#[cfg(feature = "testing")]
pub mod bucket;
#[cfg(not(feature = "testing"))]
#[allow(dead_code)]
mod bucket;
#[cfg(feature = "testing")]
pub mod format;
#[cfg(not(feature = "testing"))]
#[allow(dead_code)]
mod format;
#[cfg(feature = "testing")]
pub mod meta;
#[cfg(not(feature = "testing"))]
mod meta;
#[cfg(feature = "testing")]
pub mod prefix;
#[cfg(not(feature = "testing"))]
#[allow(dead_code)]
mod prefix;
#[cfg(feature = "testing")]
pub mod summary;
#[cfg(not(feature = "testing"))]
mod summary;
#[cfg(feature = "testing")]
pub mod upper;
#[cfg(not(feature = "testing"))]
#[allow(dead_code)]
mod upper;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

pub use error::{Result, StoreError, Structure};
pub use format::FORMAT_VERSION;
pub use options::{Options, SyncMode, DEFAULT_GROUP_DEPTH, WAL_BYTES_MAX};
pub use stats::Stats;
pub use store::{
    ApplyTiming, BuildReport, IoCounters, LayerInfo, Snapshot, Store, VerifyReport, DATA_FILE,
    META_FILE, WAL_FILE,
};

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
//! * The write-ahead log's limits: a block holds at most
//!   [`LAYER_OPS_MAX`] writes (one log record must hold it), and
//!   [`Options::wal_bytes_max`] is at most [`WAL_BYTES_MAX`].
//! * [`StoreError`]: every error, typed.
//!
//! The other internals (the write-ahead log, buckets, the upper trie and
//! its pages, summaries, meta slots, the allocator, the cache, the revert
//! segment) are private.
//! Two features expose test support, both off by default:
//!
//! * `testing`: the simulated disk (`io::sim`) for crash and fault tests,
//!   and the on-disk structures that tests decode and damage (`bucket`,
//!   `flat`, `format`, `meta`, `prefix`, `summary`, `upper`, `wal`), with the
//!   helpers only tests and fuzz bodies call.
//! * `fuzzing` (implies `testing`): the fuzz target bodies
//!   (`ubt_store::fuzzing`) that `fuzz/` and `tests/fuzz_bodies.rs` run.

mod alloc;
mod cache;
mod error;
mod options;
mod revert_log;
mod stats;
mod store;

pub mod io;

// Public with `testing` (tests decode and damage these structures),
// crate-private otherwise; helpers only tests call are gated the same way.
#[cfg(feature = "testing")]
pub mod bucket;
#[cfg(not(feature = "testing"))]
mod bucket;
#[cfg(feature = "testing")]
pub mod flat;
#[cfg(not(feature = "testing"))]
mod flat;
#[cfg(feature = "testing")]
pub mod format;
#[cfg(not(feature = "testing"))]
mod format;
#[cfg(feature = "testing")]
pub mod meta;
#[cfg(not(feature = "testing"))]
mod meta;
#[cfg(feature = "testing")]
pub mod prefix;
#[cfg(not(feature = "testing"))]
mod prefix;
#[cfg(feature = "testing")]
pub mod summary;
#[cfg(not(feature = "testing"))]
mod summary;
#[cfg(feature = "testing")]
pub mod upper;
#[cfg(not(feature = "testing"))]
mod upper;
#[cfg(feature = "testing")]
pub mod wal;
#[cfg(not(feature = "testing"))]
mod wal;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

pub use bucket::{bucket_bytes_valid, BUCKET_BYTES_DEFAULT, BUCKET_BYTES_LARGEST};
pub use error::{Result, StoreError, Structure};
pub use format::FORMAT_VERSION;
pub use options::{Options, SyncMode, DEFAULT_GROUP_DEPTH, WAL_BYTES_MAX};
pub use stats::Stats;
pub use store::{
    ApplyTiming, BuildReport, FlatBuildReport, IoCounters, LayerInfo, Snapshot, Store,
    VerifyReport, DATA_FILE, META_FILE, WAL_FILE,
};
pub use wal::LAYER_OPS_MAX;

//! # ubt-store
//!
//! The crash-safe on-disk store of ubt. See ARCHITECTURE.md for the design
//! and docs/file-format.md for every byte on disk.
//!
//! * [`bucket`]: the flat stem store's unit: all stems under a bit prefix,
//!   about one 4 KiB block, hashed through four sub-bucket summaries.
//! * [`upper`]: the resident upper trie of bucket prefixes, stored in pages
//!   of G levels (the group depth, 1..8).
//! * [`summary`]: the rule that combines subtrees, shared by every level.
//! * [`wal`], [`meta`], [`alloc`]: commits, checkpoints and free space.
//! * [`io`]: the narrow file traits, real files (io_uring or a pread pool)
//!   and a simulated disk for crash and fault tests.
//! * [`Store`]: open, get, get_many, apply, commit, checkpoint, build,
//!   verify.

pub mod alloc;
pub mod bucket;
pub mod cache;
pub mod error;
pub mod format;
pub mod io;
pub mod meta;
pub mod options;
pub mod prefix;
pub mod revert_log;
pub mod stats;
mod store;
pub mod summary;
pub mod upper;
pub mod wal;

pub use error::{Result, StoreError, Structure};
pub use options::{Options, SyncMode, DEFAULT_GROUP_DEPTH};
pub use stats::Stats;
pub use store::{
    ApplyTiming, BuildReport, IoCounters, Layer, LayerInfo, Snapshot, Store, VerifyReport,
    DATA_FILE, META_FILE, WAL_FILE,
};

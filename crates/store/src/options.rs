//! Options for opening or creating a store.

use crate::error::{Result, StoreError};
use crate::io::ReadBackendChoice;

/// Group depth used when creating a database without one: one 4 KiB page
/// holds a dense group of 6 levels (126 hashes).
pub const DEFAULT_GROUP_DEPTH: u8 = 6;

/// The largest `wal_bytes_max` (1 GiB): the WAL is checkpointed before it
/// holds more than one record's worth of bytes (a record's largest size).
pub const WAL_BYTES_MAX: u64 = crate::wal::RECORD_BYTES_MAX as u64;

/// When commits reach the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// Every commit syncs its WAL record before returning: an acknowledged
    /// commit survives power loss.
    #[default]
    Always,
    /// Commits write their WAL record without syncing: a process crash
    /// loses nothing, a power loss may lose the latest commits, but the
    /// database always reopens consistent (at some earlier commit).
    /// Checkpoints still sync.
    Never,
}

/// How to open a store.
#[derive(Clone, Debug)]
pub struct Options {
    /// Group depth (1..=8) of the upper-trie pages. Fixed at creation:
    /// `None` accepts the stored value (or [`DEFAULT_GROUP_DEPTH`] when
    /// creating); `Some(g)` must equal the stored value.
    pub group_depth: Option<u8>,
    /// Bucket capacity in encoded bytes: a bucket that grows past it is
    /// split. A power of two from 4 KiB (the default,
    /// [`crate::BUCKET_BYTES_DEFAULT`]) to 64 KiB. Fixed at
    /// creation like the group depth: `None` accepts the stored value (or
    /// the default when creating); `Some(b)` must equal the stored value.
    /// Doubling it halves the buckets, and with them the resident upper
    /// trie and bucket table (about 2.5-2.9 bytes per value at 4 KiB), at
    /// the price of twice the bytes read, decoded and rewritten per changed
    /// bucket (ARCHITECTURE.md, "Bucket capacity"; docs/benchmarks.md).
    pub bucket_bytes: Option<usize>,
    /// Memory for caches and unflushed changes, in bytes. Half of it bounds
    /// the changed buckets held between checkpoints; the clean bucket cache
    /// gets the rest. The upper trie (about 2.5 bytes per stored value) is
    /// resident on top of this.
    pub memory_budget_bytes: usize,
    /// When commits are synced.
    pub sync: SyncMode,
    /// Create an empty database if the directory holds none.
    pub create_if_missing: bool,
    /// Which batched-read backend to use.
    pub read_backend: ReadBackendChoice,
    /// WAL size that triggers a checkpoint, in bytes (at most
    /// [`WAL_BYTES_MAX`]).
    pub wal_bytes_max: u64,
    /// How many of the latest persisted blocks can be reverted (their
    /// reverse diffs are kept in memory and on disk).
    pub revert_depth: usize,
    /// Open for reading only: a shared lock (any number of read-only
    /// handles at once, none beside a writer), every file opened
    /// read-only, nothing written, not even by recovery (the WAL is
    /// replayed in memory). Writes fail with
    /// [`StoreError::ReadOnly`]; `create_if_missing` is ignored.
    pub read_only: bool,
    /// When creating a database: keep a flat index of account values
    /// (every write must then name its account; ARCHITECTURE.md, "Read
    /// locality"). Ignored when opening an existing database, which keeps
    /// one if it was created with one or had one built
    /// ([`crate::Store::build_flat_index`]). A bulk build
    /// ([`crate::Store::build`]) makes a database without one, whatever
    /// this says: its entries name no accounts; `build_flat_index` adds
    /// the index after it.
    pub flat_index: bool,
    /// Read the data file around the operating system's page cache
    /// (`O_DIRECT` on Linux) where the file system allows it: a bucket
    /// not in the store's own cache costs one device read, without the
    /// page cache's copy, bookkeeping and second copy of what the store
    /// caches itself (docs/benchmarks.md, "Direct reads"). The price:
    /// buckets evicted from the store's cache are no longer found in
    /// spare memory the kernel would otherwise lend, so give the store
    /// the memory instead ([`Self::memory_budget_bytes`]). Writes and
    /// the other files keep the page cache. Off by default. Where direct
    /// reads are refused (tmpfs, other systems), reads stay buffered;
    /// [`crate::Stats::direct_reads`] says which.
    pub direct_reads: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            group_depth: None,
            bucket_bytes: None,
            memory_budget_bytes: 1 << 30,
            sync: SyncMode::Always,
            create_if_missing: true,
            read_backend: ReadBackendChoice::Auto,
            wal_bytes_max: 256 << 20,
            revert_depth: 128,
            read_only: false,
            flat_index: false,
            direct_reads: false,
        }
    }
}

impl Options {
    /// Checks ranges.
    pub fn validate(&self) -> Result<()> {
        if let Some(g) = self.group_depth {
            if !(1..=8).contains(&g) {
                return Err(StoreError::InvalidOptions(format!(
                    "group depth {g} is outside 1..=8"
                )));
            }
        }
        if let Some(bytes) = self.bucket_bytes {
            if !crate::bucket::bucket_bytes_valid(bytes) {
                return Err(StoreError::InvalidOptions(format!(
                    "bucket capacity {bytes} bytes is not a power of two from {} to {}",
                    crate::bucket::BUCKET_BYTES_DEFAULT,
                    crate::bucket::BUCKET_BYTES_LARGEST
                )));
            }
        }
        if self.wal_bytes_max == 0 || self.wal_bytes_max > WAL_BYTES_MAX {
            return Err(StoreError::InvalidOptions(format!(
                "wal_bytes_max must be between 1 and {WAL_BYTES_MAX} bytes, not {}",
                self.wal_bytes_max
            )));
        }
        Ok(())
    }

    /// Bytes of changed buckets that trigger a checkpoint.
    pub fn dirty_bytes_max(&self) -> usize {
        self.memory_budget_bytes / 2
    }

    /// Bytes of the clean bucket cache.
    pub fn cache_bytes_max(&self) -> usize {
        self.memory_budget_bytes - self.dirty_bytes_max()
    }
}

//! [`Store`]: one database directory, opened for reading and writing.
//!
//! * [`open`](Store::open) recovers the last durable checkpoint, then
//!   replays the WAL records after it ([`open`]).
//! * [`get`](Store::get) and [`get_many`](Store::get_many) find a stem's
//!   bucket in the resident upper trie and read it: one I/O per bucket not
//!   cached, all of a batch in flight at once ([`read`]).
//! * [`apply`](Store::apply) loads the touched buckets (prefetched as one
//!   batch), writes them, splits the ones that overflow, rehashes the
//!   touched buckets in parallel and the upper trie along their paths, and
//!   returns the new root ([`apply`]).
//! * [`commit`](Store::commit) appends one WAL record; when changed buckets
//!   or the WAL outgrow their budget, a checkpoint writes the changed
//!   buckets and pages copy-on-write and switches the meta record
//!   ([`checkpoint`]).
//!
//! The state is held by three owned parts, each keeping its invariants
//! ([`tree`]: buckets and upper trie, the tip; [`history`]: layers, revert
//! window and the durable root; [`durable`]: WAL and meta record); the
//! files above combine them.
//!
//! After a write, sync or commit fails, the handle is poisoned: reads keep
//! working on the last committed state, writes return
//! [`StoreError::Poisoned`] until the database is reopened.

mod apply;
mod bucket_table;
mod build;
mod bulk;
mod checkpoint;
mod durable;
mod flat_ops;
mod history;
mod layers;
mod open;
mod owners;
mod prefetch;
mod prove;
mod read;
mod revert;
mod state_view;
mod tree;
mod verify;
mod verify_flat;
mod window;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ubt_spec::hash::Hash;

use crate::error::{Result, StoreError};
use crate::flat::index::FlatIndex;
use crate::io::{DirLock, StoreDir};
use crate::options::Options;
use crate::stats::Stats;
pub(crate) use bucket_table::{BucketTable, SLOT_EXTENT_LEN_LIMIT};

pub use apply::ApplyTiming;
pub use build::BuildReport;
pub use flat_ops::FlatBuildReport;
pub use layers::{Layer, LayerInfo, Snapshot};
pub use verify::VerifyReport;

/// File holding the two meta slots.
pub const META_FILE: &str = "ubt.meta";
/// File holding buckets and upper-trie pages.
pub const DATA_FILE: &str = "ubt.data";
/// The write-ahead log.
pub const WAL_FILE: &str = "ubt.wal";

/// Counters updated by reads (shared) and writes.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub bucket_reads: AtomicU64,
    pub bucket_read_bytes: AtomicU64,
    pub cache_hits: AtomicU64,
    pub data_bytes_written: AtomicU64,
    pub wal_bytes_written: AtomicU64,
    pub meta_bytes_written: AtomicU64,
    pub commits: AtomicU64,
    pub checkpoints: AtomicU64,
}

impl Counters {
    /// Adds every count of `other` to these (a reloaded handle keeps
    /// counting from where the old one stopped).
    pub fn absorb(&self, other: &Counters) {
        let pairs = [
            (&self.bucket_reads, &other.bucket_reads),
            (&self.bucket_read_bytes, &other.bucket_read_bytes),
            (&self.cache_hits, &other.cache_hits),
            (&self.data_bytes_written, &other.data_bytes_written),
            (&self.wal_bytes_written, &other.wal_bytes_written),
            (&self.meta_bytes_written, &other.meta_bytes_written),
            (&self.commits, &other.commits),
            (&self.checkpoints, &other.checkpoints),
        ];
        for (mine, theirs) in pairs {
            Counters::add(mine, theirs.load(Ordering::Relaxed));
        }
    }

    pub fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }
}

/// I/O counters of a handle (see [`Store::io_counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bucket reads issued to the data file.
    pub bucket_reads: u64,
    /// Bytes those reads returned.
    pub bytes_read: u64,
    /// Bytes written to the WAL, data and meta files.
    pub bytes_written: u64,
}

/// An open database. See the module documentation.
///
/// Three owned parts hold the state, each with its own invariants: the
/// `tree` (buckets, upper trie, data file: the tip), the `history`
/// (layers and revert window, and the durable root they lead to) and the
/// `durable` state (WAL and checkpoint). `Store` orchestrates them and
/// owns the handle's health: a failure part-way through an operation
/// poisons it.
#[derive(Debug)]
pub struct Store {
    dir: Arc<dyn StoreDir>,
    /// Shared with a handle reloaded in place (see [`bulk`]).
    lock: Arc<dyn DirLock>,
    options: Options,
    tree: tree::Tree,
    history: history::History,
    durable: durable::Durable,
    /// Why the handle refuses writes, if it does.
    poisoned: Option<String>,
    /// Memory holds part of a change (a panic, or a failed bulk apply
    /// whose reload from the files failed too): reads are refused too
    /// until the database is reopened.
    reads_poisoned: bool,
    /// Opened with [`Options::read_only`]: writes refused, nothing written.
    read_only: bool,
    counters: Arc<Counters>,
    last_apply: apply::ApplyTiming,
}

impl Store {
    /// The state root of everything applied (committed or not).
    pub fn root(&self) -> Hash {
        if self.reads_poisoned {
            // Memory may hold part of a change: the last durable root.
            return self.history.persisted_root();
        }
        self.tree.root
    }

    /// The root of the last commit (the newest persisted layer).
    pub fn committed_root(&self) -> Hash {
        self.history.persisted_root()
    }

    /// Sequence number of the last commit (0 for a new database).
    pub fn commit_seq(&self) -> u64 {
        self.durable.commit_seq()
    }

    /// Group depth of the upper-trie pages.
    pub fn group_depth(&self) -> u8 {
        self.tree.trie.group_depth()
    }

    /// Why the handle refuses writes, if it does.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly(self.dir.describe()));
        }
        match &self.poisoned {
            Some(reason) => Err(StoreError::Poisoned(reason.clone())),
            None => Ok(()),
        }
    }

    /// Marks the handle unusable after a panic interrupted one of its
    /// operations (its memory may hold part of a change): reads and writes
    /// return [`StoreError::Poisoned`] until the database is reopened, and
    /// [`Store::root`] reports the last durable root. The disk holds the
    /// last durable state, as after any failure.
    pub fn poison_after_panic(&mut self) {
        if !self.reads_poisoned {
            self.poisoned
                .get_or_insert_with(|| "a panic interrupted an operation of this handle".into());
            self.reads_poisoned = true;
        }
    }

    /// Refuses reads after a failed bulk apply (see [`bulk`]).
    fn check_readable(&self) -> Result<()> {
        match (&self.poisoned, self.reads_poisoned) {
            (Some(reason), true) => Err(StoreError::Poisoned(reason.clone())),
            _ => Ok(()),
        }
    }

    /// Whether the handle was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Appends one WAL record holding `layers` as the next commit (synced
    /// in [`crate::SyncMode::Always`]); an error poisons the handle.
    fn append_record(&mut self, root: &Hash, layers: &[crate::wal::WalLayer]) -> Result<()> {
        let sync = self.options.sync == crate::SyncMode::Always;
        self.durable
            .append(sync, root, layers, &self.counters)
            .inspect_err(|error| self.poison(error))
    }

    fn poison(&mut self, error: &StoreError) {
        if self.poisoned.is_none() {
            self.poisoned = Some(error.to_string());
        }
    }

    /// Statistics about the database and this handle.
    pub fn stats(&self) -> Stats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let flat = self.tree.flat.as_ref();
        let (depth_max, depth_sum, leaves) = self.tree.trie.leaf_depths();
        let dirty_buckets = self
            .tree
            .buckets
            .iter()
            .filter(|b| b.dirty.is_some())
            .count();
        Stats {
            read_backend: self.tree.data.read_backend().name().to_string(),
            direct_reads: self.tree.data.reads_direct(),
            group_depth: self.tree.trie.group_depth(),
            bucket_bytes: self.tree.bucket_bytes as u64,
            generation: self.durable.meta.generation,
            commit_seq: self.durable.commit_seq(),
            root: alloy_primitives::B256::from(self.root()),
            stem_count: self.tree.stem_count,
            leaf_count: self.tree.leaf_count,
            bucket_count: self.tree.buckets.len() as u64,
            upper_node_count: self.tree.trie.node_count() as u64,
            page_count: self.tree.trie.page_count() as u64,
            bucket_depth_max: depth_max as u64,
            bucket_depth_mean: if leaves == 0 {
                0.0
            } else {
                depth_sum as f64 / leaves as f64
            },
            data_file_bytes: self.tree.alloc.end() * crate::format::BLOCK_BYTES as u64,
            data_used_bytes: self.tree.alloc.used_blocks() * crate::format::BLOCK_BYTES as u64,
            page_blocks: self.tree.page_blocks.block_count(),
            page_live_bytes: self.tree.page_blocks.live_bytes(),
            wal_bytes: self.durable.wal.len(),
            dirty_buckets: dirty_buckets as u64,
            dirty_bytes: self.tree.dirty_bytes as u64,
            cache_bytes: self.tree.cache.bytes() as u64,
            upper_trie_bytes: (self.tree.trie.memory_bytes() + self.tree.buckets.memory_bytes())
                as u64,
            memory_budget_bytes: self.options.memory_budget_bytes as u64,
            bucket_reads: load(&self.counters.bucket_reads),
            bucket_read_bytes: load(&self.counters.bucket_read_bytes),
            cache_hits: load(&self.counters.cache_hits),
            data_bytes_written: load(&self.counters.data_bytes_written),
            wal_bytes_written: load(&self.counters.wal_bytes_written),
            meta_bytes_written: load(&self.counters.meta_bytes_written),
            commits: load(&self.counters.commits),
            checkpoints: load(&self.counters.checkpoints),
            poisoned: self.poisoned.clone(),
            meta_slot_damaged: self.durable.meta_slot_damaged,
            revert_window_damaged: self.history.window_damaged.clone(),
            flat_index: self.tree.flat.is_some(),
            flat_records: flat.map_or(0, FlatIndex::stored_records),
            flat_leaves: flat.map_or(0, |f| f.directory().leaves().len() as u64),
            flat_nodes: flat.map_or(0, |f| f.directory().node_count() as u64),
            flat_changes: flat.map_or(0, |f| f.changes().len() as u64),
            flat_dense_stems: flat.map_or(0, |f| f.dense_stems().len() as u64),
            flat_stem_changes: flat.map_or(0, |f| f.stem_changes().len() as u64),
            flat_directory_bytes: flat.map_or(0, |f| {
                (f.directory().memory_bytes() + f.dense_stems_bytes()) as u64
            }),
        }
    }

    /// Bucket reads issued to the data file since open (cheap, unlike
    /// [`Store::stats`], which walks the upper trie).
    pub fn bucket_reads(&self) -> u64 {
        self.counters.bucket_reads.load(Ordering::Relaxed)
    }

    /// I/O counters since open (cheap).
    pub fn io_counters(&self) -> IoCounters {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IoCounters {
            bucket_reads: load(&self.counters.bucket_reads),
            bytes_read: load(&self.counters.bucket_read_bytes),
            bytes_written: load(&self.counters.wal_bytes_written)
                + load(&self.counters.data_bytes_written)
                + load(&self.counters.meta_bytes_written),
        }
    }

    /// Drops the clean bucket cache (for cold-read measurements).
    pub fn clear_cache(&self) {
        self.tree.cache.clear();
    }

    /// The directory, for messages.
    pub fn location(&self) -> String {
        self.dir.describe()
    }
}

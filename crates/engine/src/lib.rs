//! # ubt-engine
//!
//! The public database API of ubt: an EIP-7864 binary trie stored on disk,
//! bit-exact with go-ethereum.
//!
//! ```no_run
//! use alloy_primitives::B256;
//! use ubt_engine::{Db, Options};
//!
//! # fn main() -> Result<(), ubt_engine::Error> {
//! let mut db = Db::open("/tmp/state.ubt", Options::default())?;
//! let (a, b) = (B256::repeat_byte(0x11), B256::repeat_byte(0x22));
//!
//! // Blocks stack up in memory as layers; each returns its root at once.
//! let root1 = db.apply(&[(a, b)])?;
//! let root2 = db.apply(&[(a, B256::repeat_byte(0x33))])?;
//!
//! // A reader sees exactly the state at its root while the writer goes on.
//! let reader = db.reader(&root1)?;
//! db.persist(&root1)?; // block 1 is durable; block 2 is still in memory
//! assert_eq!(reader.get(&a)?, Some(b));
//! assert_eq!(db.get(&a)?, Some(B256::repeat_byte(0x33)));
//!
//! // Reorg: drop block 2 (and any persisted block within the revert depth).
//! db.revert(&root1)?;
//! assert_eq!(db.root(), root1);
//! let _ = root2;
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! * [`Db::apply`] puts a block's writes on top of the latest layer and
//!   returns the new root without touching the disk; reading at the tip and
//!   computing the next root cost the same however many layers are kept.
//! * [`Db::persist`] makes the oldest layers durable as one WAL record;
//!   [`Db::commit`] all of them; [`Db::apply_block`] applies and commits.
//! * [`Db::revert`] drops layers, and undoes persisted blocks back to any of
//!   the last [`Options::revert_depth`] (128 by default) from reverse diffs
//!   kept in memory and on disk.
//! * [`Db::reader`] gives a consistent snapshot at any root in memory that
//!   lives while the writer applies, persists and checkpoints.
//! * [`Db::prefetch`] starts reading the buckets of keys about to be used
//!   (one deep batch); `apply` then waits only for what has not arrived.
//! * Reads ([`Db::get`], [`Db::get_many`]) cost at most one I/O per bucket
//!   not in memory; a batch issues all its reads at once.

mod account;
mod account_proof;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use alloy_primitives::{Address, B256};
pub use ubt_store::io::{
    DirLock, ReadBackendChoice, ReadBackendKind, ReadRequest, StoreDir, StoreFile,
};
pub use ubt_store::{
    bucket_bytes_valid, ApplyTiming, BuildReport, FlatBuildReport, IoCounters, LayerInfo, Options,
    Stats, StoreError as Error, Structure, SyncMode, VerifyReport, BUCKET_BYTES_DEFAULT,
    BUCKET_BYTES_LARGEST, DATA_FILE, DEFAULT_GROUP_DEPTH, META_FILE, WAL_BYTES_MAX, WAL_FILE,
};
use ubt_store::{Snapshot, Store};

pub use account::CodeError;
pub use account_proof::{
    AccountProof, AccountProofError, ProofField, ProofPart, StorageProof, VerifiedAccount,
    ACCOUNT_PROOF_FORMAT,
};
pub use ubt_spec::account::{CodeReadError, MissingCodeChunk};
pub use ubt_spec::geth::{GethNode, NodeKind};
pub use ubt_spec::proof::{verify as verify_proof, Proof, ProofError};
pub use ubt_spec::{Account, AccountBatch, AccountOp};

/// The on-disk format version this build reads and writes.
pub const FORMAT_VERSION: u16 = ubt_store::FORMAT_VERSION;

/// The most writes one [`Db::apply`] block may hold (~16.7 M).
pub const MAX_BLOCK_WRITES: usize = ubt_store::LAYER_OPS_MAX;

/// A state root: 32 bytes, printed and parsed as `0x` and 64 hex digits
/// (`Display`, `FromStr`), the same type as keys and values.
pub type Root = B256;

/// Cheap measurements of a handle (see [`Db::diagnostics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Where the time of the last [`Db::apply`] went.
    pub last_apply: ApplyTiming,
    /// Reads and bytes of the data file, bytes written, since open.
    pub io: IoCounters,
}

/// Result alias of the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// What the writer and the readers share.
#[derive(Debug)]
struct Shared {
    store: RwLock<Store>,
    /// Open snapshots: layer number -> how many readers hold it.
    readers: Mutex<BTreeMap<u64, usize>>,
}

impl Shared {
    /// The store for reading. If a thread panicked while it held the
    /// store (a panic inside an apply, say, after buckets were taken out),
    /// the store may be half-changed: the first access after that marks it
    /// poisoned for reads and writes, so every later call returns
    /// [`Error::Poisoned`] until the database is reopened.
    fn read(&self) -> RwLockReadGuard<'_, Store> {
        if let Ok(guard) = self.store.read() {
            return guard;
        }
        // The poisoned read guard is dropped with the statement above:
        // marking the store poisoned needs the write lock; then read again.
        drop(self.write());
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The store for writing; see [`Shared::read`] for poisoning.
    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(|poisoned| {
            let mut store = poisoned.into_inner();
            store.poison_after_panic();
            store
        })
    }

    /// Tells the store the oldest open snapshot.
    fn publish_min(&self, readers: &BTreeMap<u64, usize>, store: &Store) {
        store.set_min_reader_seq(readers.keys().next().copied());
    }
}

/// An open database. One writer per directory (a lock file enforces it);
/// readers from [`Db::reader`] may live on other threads.
#[derive(Debug)]
pub struct Db {
    shared: Arc<Shared>,
}

impl Db {
    fn wrap(store: Store) -> Db {
        Db {
            shared: Arc::new(Shared {
                store: RwLock::new(store),
                readers: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// Opens the database in directory `path`, creating it if
    /// `options.create_if_missing` (the default).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Ok(Db::wrap(Store::open_path(path.as_ref(), options)?))
    }

    /// Opens the database in directory `path` for reading only: a shared
    /// lock (any number of read-only handles, in any processes, at once;
    /// none while a writer has it open, and no writer while one is open),
    /// every file opened read-only, nothing written, not even by recovery
    /// (the WAL is replayed in memory). Works on read-only media. Writes
    /// fail with [`Error::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let options = Options {
            read_only: true,
            create_if_missing: false,
            ..options
        };
        Ok(Db::wrap(Store::open_path(path.as_ref(), options)?))
    }

    /// Opens the database in any [`StoreDir`] (for example a simulated disk).
    pub fn open_dir(dir: Arc<dyn StoreDir>, options: Options) -> Result<Db> {
        Ok(Db::wrap(Store::open(dir, options)?))
    }

    /// Builds a new database in `path` from key/value pairs sorted by key
    /// (equal keys: the last wins), at hashing speed, and returns it open.
    pub fn build(
        path: impl AsRef<Path>,
        options: Options,
        sorted_entries: impl IntoIterator<Item = (B256, B256)>,
    ) -> Result<(Db, BuildReport)> {
        let path = path.as_ref();
        let dir = ubt_store::io::os::OsDir::open(path, true, options.read_backend)
            .map_err(Error::io("creating the database directory"))?;
        Db::build_dir(Arc::new(dir), options, sorted_entries)
    }

    /// [`Db::build`] into any [`StoreDir`].
    pub fn build_dir(
        dir: Arc<dyn StoreDir>,
        options: Options,
        sorted_entries: impl IntoIterator<Item = (B256, B256)>,
    ) -> Result<(Db, BuildReport)> {
        let (store, report) = Store::build(dir, options, sorted_entries)?;
        Ok((Db::wrap(store), report))
    }

    /// Builds the flat index of account values of a database just built
    /// ([`Db::build`], no block applied since) from `records`
    /// `(account, tree key, value)`, strictly ascending by account then
    /// tree key, each value the tree's; makes it durable. From then on
    /// account-level reads are served by the index (one account's values
    /// share leaves) and every write must name its account
    /// ([`Db::apply_accounts`]; tree-key writes fail with
    /// [`Error::OwnersRequired`]). See ARCHITECTURE.md, "Read locality".
    pub fn build_flat_index<I>(&mut self, records: I) -> Result<FlatBuildReport>
    where
        I: IntoIterator<Item = Result<(Address, B256, B256)>>,
    {
        self.shared.write().build_flat_index(records)
    }

    /// The values at tree keys, each given with the account it belongs to
    /// (`(owner, key)`, the key derived from the owner's address), at the
    /// tip, in order: served by the flat index when the database keeps one
    /// (an account's values share leaves; every leaf needed is read once,
    /// all in one batch), else like [`Db::get_many`]. The account-level
    /// reads ([`Db::account`], [`Db::storage`], [`Db::code`]) go through
    /// it.
    pub fn get_owned(&self, keys: &[(Address, B256)]) -> Result<Vec<Option<B256>>> {
        self.shared.read().get_owned(keys)
    }

    /// Applies a block of tree-key writes, each with the account it
    /// belongs to (`(owner, key, value)`, the key derived from the owner's
    /// address), like [`Db::apply`]; the owners file the values in the
    /// flat index when the database keeps one. For clients that derive
    /// tree keys themselves; [`Db::apply_accounts`] derives them. On a
    /// database with a flat index the layer also keeps each key's owner
    /// (about 60 bytes per write more than [`Db::apply`]'s) until it
    /// leaves the revert window.
    pub fn apply_owned(&mut self, writes: &[(Address, B256, B256)]) -> Result<Root> {
        self.shared.write().apply_owned(writes).map(Root::from)
    }

    /// Like [`Db::prefetch`] for keys of the account at `owner`: on a
    /// database with a flat index, its leaves holding them.
    pub fn prefetch_owned(&self, owner: &Address, keys: &[B256]) -> usize {
        self.shared.read().prefetch_owned(owner, keys)
    }

    /// Whether the database keeps a flat index of account values.
    pub fn has_flat_index(&self) -> bool {
        self.shared.read().has_flat_index()
    }

    /// The value at `key` at the tip, if present.
    pub fn get(&self, key: &B256) -> Result<Option<B256>> {
        self.shared.read().get(key)
    }

    /// The values at `keys` at the tip, in order; all reads of the batch in
    /// flight at once.
    pub fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>> {
        self.shared.read().get_many(keys)
    }

    /// Applies a block's writes (in order; later writes to a key win) as a
    /// new layer and returns its root. Nothing reaches the disk. A block
    /// holds at most [`MAX_BLOCK_WRITES`] writes (one WAL record must hold
    /// it; larger: [`Error::BlockTooLarge`], use [`Db::apply_bulk`]). The
    /// layer keeps the block's writes until persisted and every touched
    /// key's previous value while it is within the revert window (about
    /// 200 bytes per write), on top of the memory budget.
    pub fn apply(&mut self, writes: &[(B256, B256)]) -> Result<Root> {
        self.shared.write().apply(writes).map(Root::from)
    }

    /// Makes the layers up to the one with `root` durable, as one WAL
    /// record (synced in [`SyncMode::Always`]).
    pub fn persist(&mut self, root: &Root) -> Result<()> {
        self.shared.write().persist(&root.0)
    }

    /// Makes every layer durable and returns the root.
    pub fn commit(&mut self) -> Result<Root> {
        self.shared.write().commit().map(Root::from)
    }

    /// One block of any size, its writes sorted by key (equal keys: the
    /// last wins), made durable atomically by a checkpoint instead of a WAL
    /// record, in memory bounded by the budget: changed buckets beyond
    /// half the budget are staged copy-on-write into free blocks that no
    /// checkpoint refers to until the block's own. Returns the new root.
    ///
    /// Unpersisted layers are committed first. The block cannot be
    /// reverted, ends the revert window, and voids readers at older roots
    /// ([`Error::SnapshotReverted`]). If it fails, the state on disk is the
    /// one before it and the handle reloads itself from the files, so it
    /// reads that state at once; it then refuses writes until reopened,
    /// unless the failure was bad input ([`Error::UnsortedInput`]), which
    /// leaves it fully usable.
    /// For blocks larger than [`Db::apply`] accepts, or whenever memory
    /// matters more than revertibility (loads, imports).
    pub fn apply_bulk(
        &mut self,
        sorted_writes: impl IntoIterator<Item = (B256, B256)>,
    ) -> Result<Root> {
        self.shared
            .write()
            .apply_bulk(sorted_writes)
            .map(Root::from)
    }

    /// [`Db::apply`] then [`Db::commit`]: one durable block.
    pub fn apply_block(&mut self, writes: &[(B256, B256)]) -> Result<Root> {
        let mut store = self.shared.write();
        store.apply(writes)?;
        store.commit().map(Root::from)
    }

    /// Reverts to `root`: a layer in memory, or one of the last
    /// [`Options::revert_depth`] persisted blocks. Durable on return when
    /// persisted blocks are undone. Readers of reverted roots get
    /// [`Error::SnapshotReverted`].
    pub fn revert(&mut self, root: &Root) -> Result<()> {
        self.shared.write().revert(&root.0)
    }

    /// Drops every unpersisted layer.
    pub fn discard_uncommitted(&mut self) {
        self.shared.write().discard_uncommitted();
    }

    /// The layers in memory, oldest first.
    pub fn layers(&self) -> Vec<LayerInfo> {
        self.shared.read().layers()
    }

    /// A consistent snapshot at `root` (the tip, a layer in memory, or the
    /// state before the oldest layer), usable from any thread while the
    /// writer goes on.
    pub fn reader(&self, root: &Root) -> Result<Reader> {
        let root = &root.0;
        if matches!(
            self.shared.read().snapshot(root),
            Err(Error::UnknownRoot(_))
        ) {
            // After a reopen, older roots of the revert window are read
            // from disk the first time they are asked for.
            self.shared.write().ensure_revert_window()?;
        }
        let store = self.shared.read();
        let snapshot = store.snapshot(root)?;
        let mut readers = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *readers.entry(snapshot.seq).or_insert(0) += 1;
        self.shared.publish_min(&readers, &store);
        Ok(Reader {
            shared: Arc::clone(&self.shared),
            snapshot,
        })
    }

    /// A multiproof of `keys` (tree keys, any order, duplicates ignored)
    /// at the tip: their values or absence, verifiable against
    /// [`Db::root`] with [`verify_proof`] (format: `docs/proof-format.md`).
    /// Reads each bucket not in memory once, all in one batch (plus one
    /// more batch for the bucket of a stem that sits where an absent key's
    /// stem would be).
    pub fn prove(&self, keys: &[B256]) -> Result<Proof> {
        let store = self.shared.read();
        store.prove_at(keys, &store.tip_snapshot())
    }

    /// go-ethereum's witness for accessing `keys` at the tip: exactly the
    /// node blobs (stem and group blobs at `group_depth`, 1..=8) that
    /// go-ethereum v1.17.10's `BinaryTrie.Witness()` returns after the same
    /// reads and writes, sorted by path. See `docs/proof-format.md`.
    pub fn witness(&self, keys: &[B256], group_depth: u8) -> Result<Vec<GethNode>> {
        let store = self.shared.read();
        store.witness_at(keys, &store.tip_snapshot(), group_depth)
    }

    /// Starts reading the buckets of `keys` in the background (one deep
    /// batch); returns how many reads it started.
    pub fn prefetch(&self, keys: &[B256]) -> usize {
        self.shared.read().prefetch(keys)
    }

    /// The root of everything applied (the tip).
    pub fn root(&self) -> Root {
        Root::from(self.shared.read().root())
    }

    /// The root of the last persisted layer.
    pub fn committed_root(&self) -> Root {
        Root::from(self.shared.read().committed_root())
    }

    /// Writes changed buckets and pages to the data file now (persists
    /// every layer first).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.shared.write().checkpoint()
    }

    /// Full check of the database: every checksum, every hash recomputed.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.shared.read().verify()
    }

    /// Shape, memory and I/O counters.
    pub fn stats(&self) -> Stats {
        self.shared.read().stats()
    }

    /// What measurements need, cheaply (unlike [`Db::stats`], which walks
    /// the upper trie): where the last [`Db::apply`] spent its time, and
    /// the I/O counters since open.
    pub fn diagnostics(&self) -> Diagnostics {
        let store = self.shared.read();
        Diagnostics {
            last_apply: store.last_apply_timing(),
            io: store.io_counters(),
        }
    }

    /// Drops the clean bucket cache (for cold-read measurements).
    pub fn clear_cache(&self) {
        self.shared.read().clear_cache();
    }

    /// Persists every layer, checkpoints and closes. Open readers keep
    /// working on the data in memory.
    pub fn close(self) -> Result<()> {
        self.shared.write().checkpoint()
    }
}

/// A consistent snapshot of the state at one root (see [`Db::reader`]).
#[derive(Debug)]
pub struct Reader {
    shared: Arc<Shared>,
    snapshot: Snapshot,
}

impl Reader {
    /// The snapshot's root.
    pub fn root(&self) -> Root {
        Root::from(self.snapshot.root)
    }

    /// The value at `key` in the snapshot.
    pub fn get(&self, key: &B256) -> Result<Option<B256>> {
        self.shared.read().get_at(key, &self.snapshot)
    }

    /// The values at `keys` in the snapshot, in order.
    pub fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>> {
        self.shared.read().get_many_at(keys, &self.snapshot)
    }

    /// A multiproof of `keys` at the snapshot's root, as [`Db::prove`]
    /// gives at the tip. For a root older than the tip, the buckets the
    /// newer layers touched are read too (into copies: the writer is not
    /// disturbed).
    pub fn prove(&self, keys: &[B256]) -> Result<Proof> {
        self.shared.read().prove_at(keys, &self.snapshot)
    }

    /// go-ethereum's witness for accessing `keys` at the snapshot's root,
    /// as [`Db::witness`] gives at the tip.
    pub fn witness(&self, keys: &[B256], group_depth: u8) -> Result<Vec<GethNode>> {
        self.shared
            .read()
            .witness_at(keys, &self.snapshot, group_depth)
    }

    /// Starts reading the buckets of `keys` in the background, as
    /// [`Db::prefetch`] does: for a helper thread that discovers what the
    /// writer is about to read (a speculative execution) while it works.
    pub fn prefetch(&self, keys: &[B256]) -> usize {
        self.shared.read().prefetch(keys)
    }

    /// Starts reading what the writer's account-level reads of `keys` (of
    /// the account at `owner`) will need, as [`Db::prefetch_owned`] does.
    pub fn prefetch_owned(&self, owner: &Address, keys: &[B256]) -> usize {
        self.shared.read().prefetch_owned(owner, keys)
    }
}

impl Clone for Reader {
    fn clone(&self) -> Reader {
        let store = self.shared.read();
        let mut readers = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *readers.entry(self.snapshot.seq).or_insert(0) += 1;
        self.shared.publish_min(&readers, &store);
        Reader {
            shared: Arc::clone(&self.shared),
            snapshot: self.snapshot,
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let store = self.shared.read();
        let mut readers = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(count) = readers.get_mut(&self.snapshot.seq) {
            *count -= 1;
            if *count == 0 {
                readers.remove(&self.snapshot.seq);
            }
        }
        self.shared.publish_min(&readers, &store);
    }
}

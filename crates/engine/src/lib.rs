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
//! let key = B256::repeat_byte(0x11);
//! let root = db.apply_block(&[(key, B256::repeat_byte(0x22))])?; // durable on return
//! assert_eq!(db.get(&key)?, Some(B256::repeat_byte(0x22)));
//! assert_eq!(db.root(), root);
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! Reads ([`Db::get`], [`Db::get_many`]) cost at most one I/O per bucket not
//! in memory; a batch issues all its reads at once. Writes are applied with
//! [`Db::apply`] (returns the new root) and made durable with
//! [`Db::commit`]; [`Db::apply_block`] does both. Group depth, memory budget
//! and sync mode are [`Options`].

use std::path::Path;
use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::hash::Hash;
pub use ubt_store::io::{ReadBackendChoice, StoreDir};
use ubt_store::Store;
pub use ubt_store::{
    ApplyTiming, BuildReport, Options, Stats, StoreError as Error, SyncMode, VerifyReport,
    DEFAULT_GROUP_DEPTH,
};

/// Result alias of the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// An open database. One writer per directory (a lock file enforces it);
/// `&Db` may be shared between reader threads while no write runs.
#[derive(Debug)]
pub struct Db {
    store: Store,
}

impl Db {
    /// Opens the database in directory `path`, creating it if
    /// `options.create_if_missing` (the default).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Ok(Db {
            store: Store::open_path(path.as_ref(), options)?,
        })
    }

    /// Opens the database in any [`StoreDir`] (for example a simulated disk).
    pub fn open_dir(dir: Arc<dyn StoreDir>, options: Options) -> Result<Db> {
        Ok(Db {
            store: Store::open(dir, options)?,
        })
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
        Ok((Db { store }, report))
    }

    /// The value at `key`, if present.
    pub fn get(&self, key: &B256) -> Result<Option<B256>> {
        self.store.get(key)
    }

    /// The values at `keys`, in order; all reads of the batch in flight at once.
    pub fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>> {
        self.store.get_many(keys)
    }

    /// Applies writes in order (later writes to a key win) and returns the
    /// new root. Not durable until [`Db::commit`].
    pub fn apply(&mut self, writes: &[(B256, B256)]) -> Result<Hash> {
        self.store.apply(writes)
    }

    /// Makes every applied write durable (one WAL record, synced in
    /// [`SyncMode::Always`]) and returns the committed root.
    pub fn commit(&mut self) -> Result<Hash> {
        self.store.commit()
    }

    /// [`Db::apply`] then [`Db::commit`]: one block.
    pub fn apply_block(&mut self, writes: &[(B256, B256)]) -> Result<Hash> {
        self.store.apply(writes)?;
        self.store.commit()
    }

    /// Drops writes applied since the last commit.
    pub fn discard_uncommitted(&mut self) {
        self.store.discard_uncommitted();
    }

    /// The root of everything applied.
    pub fn root(&self) -> Hash {
        self.store.root()
    }

    /// The root of the last commit.
    pub fn committed_root(&self) -> Hash {
        self.store.committed_root()
    }

    /// Writes changed buckets and pages to the data file now (commits run
    /// one automatically when their memory or WAL budget is exceeded).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.store.checkpoint()
    }

    /// Full check of the database: every checksum, every hash recomputed.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.store.verify()
    }

    /// Shape, memory and I/O counters.
    pub fn stats(&self) -> Stats {
        self.store.stats()
    }

    /// Where the time of the last [`Db::apply`] went.
    pub fn last_apply_timing(&self) -> ApplyTiming {
        self.store.last_apply_timing()
    }

    /// Bucket reads issued to the data file since open (cheap).
    pub fn bucket_reads(&self) -> u64 {
        self.store.bucket_reads()
    }

    /// Drops the clean bucket cache (for cold-read measurements).
    pub fn clear_cache(&self) {
        self.store.clear_cache();
    }

    /// Commits, checkpoints and closes.
    pub fn close(self) -> Result<()> {
        self.store.close()
    }
}

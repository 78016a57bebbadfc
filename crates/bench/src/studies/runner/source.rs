//! The EVM's view of ubt: tree-key reads from an open database, and a
//! hint-only source for the speculative pass of the prefetch variant.

use std::sync::atomic::{AtomicBool, Ordering};

use alloy_primitives::B256;
use ubt_engine::{Db, Reader};
use ubt_evm::StateSource;

/// Reads through an open [`Db`] at its tip: one `get` per storage slot,
/// one batched `get_many` per account, as the executor asks.
pub struct DbSource {
    /// The database the blocks run on.
    pub db: Db,
}

impl StateSource for DbSource {
    type Error = ubt_engine::Error;

    fn get(&mut self, key: &B256) -> Result<Option<B256>, Self::Error> {
        self.db.get(key)
    }

    fn get_many(&mut self, keys: &[B256]) -> Result<Vec<Option<B256>>, Self::Error> {
        self.db.get_many(keys)
    }
}

/// Storage keys a speculative pass collects before handing them to the
/// prefetcher as one batch.
pub const HINT_BATCH: usize = 32;

/// Why a speculative pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum HintError {
    /// The real execution finished first: nothing left to prefetch.
    #[error("the block's execution finished first")]
    Stopped,
    /// An account read failed.
    #[error(transparent)]
    Read(#[from] ubt_engine::Error),
}

/// The source of a speculative pass, run on a helper thread beside the
/// real execution (as go-ethereum's prefetcher runs a block's transactions
/// ahead of it): accounts are read for real from a snapshot (their nonce
/// and code decide what runs); storage slots are read as absent, so the
/// pass never waits for a slot, and their keys go to
/// [`Reader::prefetch`] in batches of [`HINT_BATCH`]. The real execution
/// then finds the buckets cached or in flight.
///
/// The workloads' control flow does not depend on slot values (the
/// token's `balanceOf` returns whatever it finds, `approve` and the
/// sequential contract store without reading), so the pass hints exactly
/// the slots the real execution touches, far ahead of it.
pub struct HintSource<'a> {
    reader: Reader,
    pending: Vec<B256>,
    stop: &'a AtomicBool,
    /// Keys hinted so far.
    pub hinted: usize,
}

impl<'a> HintSource<'a> {
    /// A pass over `reader` that gives up once `stop` is set.
    pub fn new(reader: Reader, stop: &'a AtomicBool) -> Self {
        HintSource {
            reader,
            pending: Vec::with_capacity(HINT_BATCH),
            stop,
            hinted: 0,
        }
    }

    /// Hands the collected keys to the prefetcher.
    pub fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.reader.prefetch(&self.pending);
            self.hinted += self.pending.len();
            self.pending.clear();
        }
    }
}

impl StateSource for HintSource<'_> {
    type Error = HintError;

    fn get(&mut self, key: &B256) -> Result<Option<B256>, Self::Error> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(HintError::Stopped);
        }
        self.pending.push(*key);
        if self.pending.len() >= HINT_BATCH {
            self.flush();
        }
        Ok(None)
    }

    fn get_many(&mut self, keys: &[B256]) -> Result<Vec<Option<B256>>, Self::Error> {
        Ok(self.reader.get_many(keys)?)
    }
}

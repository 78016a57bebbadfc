//! The EVM's view of ubt: reads from an open database (account values
//! through the flat index when the database keeps one), and a hint-only
//! source for the speculative pass of the prefetch variant.

use std::sync::atomic::{AtomicBool, Ordering};

use alloy_primitives::{Address, B256};
use ubt_engine::{Db, Reader};
use ubt_evm::StateSource;

/// Reads through an open [`Db`] at its tip: one read per storage slot, one
/// batch per account, as the executor asks; an account's values through
/// [`Db::get_owned`] (its flat-index leaves, when the database keeps
/// them).
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

    fn get_account_value(
        &mut self,
        owner: &Address,
        key: &B256,
    ) -> Result<Option<B256>, Self::Error> {
        Ok(self.db.get_owned(&[(*owner, *key)])?.pop().flatten())
    }

    fn get_account_values(
        &mut self,
        owner: &Address,
        keys: &[B256],
    ) -> Result<Vec<Option<B256>>, Self::Error> {
        let owned: Vec<(Address, B256)> = keys.iter().map(|key| (*owner, *key)).collect();
        self.db.get_owned(&owned)
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
    /// Keys collected, with their accounts when known.
    pending: Vec<(Option<Address>, B256)>,
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

    /// Hands the collected keys to the prefetcher, one call per account.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_unstable_by_key(|(owner, _)| *owner);
        for group in self.pending.chunk_by(|a, b| a.0 == b.0) {
            let keys: Vec<B256> = group.iter().map(|(_, key)| *key).collect();
            match &group[0].0 {
                Some(owner) => self.reader.prefetch_owned(owner, &keys),
                None => self.reader.prefetch(&keys),
            };
        }
        self.hinted += self.pending.len();
        self.pending.clear();
    }

    fn hint(&mut self, owner: Option<Address>, key: B256) -> Result<Option<B256>, HintError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(HintError::Stopped);
        }
        self.pending.push((owner, key));
        if self.pending.len() >= HINT_BATCH {
            self.flush();
        }
        Ok(None)
    }
}

impl StateSource for HintSource<'_> {
    type Error = HintError;

    fn get(&mut self, key: &B256) -> Result<Option<B256>, Self::Error> {
        // A key of no known account: its bucket.
        self.hint(None, *key)
    }

    fn get_many(&mut self, keys: &[B256]) -> Result<Vec<Option<B256>>, Self::Error> {
        Ok(self.reader.get_many(keys)?)
    }

    fn get_account_value(
        &mut self,
        owner: &Address,
        key: &B256,
    ) -> Result<Option<B256>, Self::Error> {
        self.hint(Some(*owner), *key)
    }
}

//! The durability state: the WAL and the checkpoint it follows (the meta
//! record), with the sequence number of the last commit.
//!
//! Every WAL record goes through [`Durable::append`] (encode, append,
//! count, advance `commit_seq`), and every meta record through
//! [`Durable::write_meta`] (two copies, each synced before the next), so
//! the ordering rules of docs/file-format.md live in one place.
//! Invariant: `commit_seq` is the sequence number of the last record
//! appended (or of the checkpoint, when none was appended since), and
//! never decreases.

use std::sync::Arc;

use ubt_spec::hash::Hash;

use super::Counters;
use crate::error::{Result, StoreError};
use crate::io::StoreFile;
use crate::meta::{Meta, META_SLOT_BYTES};
use crate::wal::{self, Wal, WalLayer};

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Durable {
    /// The file of the two meta slots.
    pub meta_file: Arc<dyn StoreFile>,
    /// The write-ahead log.
    pub wal: Wal,
    /// The last durable checkpoint.
    pub meta: Meta,
    /// Sequence number of the last commit.
    commit_seq: u64,
    /// Whether a meta slot was found or left damaged (a torn checkpoint,
    /// or one bad copy of a pair).
    pub meta_slot_damaged: bool,
}

impl Durable {
    /// The durability state of a database opened at checkpoint `meta`.
    pub fn new(meta_file: Arc<dyn StoreFile>, wal: Wal, meta: Meta, slot_damaged: bool) -> Durable {
        Durable {
            meta_file,
            wal,
            commit_seq: meta.commit_seq,
            meta,
            meta_slot_damaged: slot_damaged,
        }
    }

    /// Sequence number of the last commit (0 for a new database).
    pub fn commit_seq(&self) -> u64 {
        self.commit_seq
    }

    /// Appends one record holding `layers`, leading to `root`, as the next
    /// commit (synced when `sync`). On error nothing is counted and
    /// `commit_seq` stays: the caller poisons the handle.
    pub fn append(
        &mut self,
        sync: bool,
        root: &Hash,
        layers: &[WalLayer],
        counters: &Counters,
    ) -> Result<()> {
        let seq = self.commit_seq + 1;
        let record = wal::encode(sync, self.wal.epoch(), seq, root, layers)?;
        self.wal.append(seq, &record, sync)?;
        Counters::add(&counters.wal_bytes_written, record.len() as u64);
        Counters::add(&counters.commits, 1);
        self.commit_seq = seq;
        Ok(())
    }

    /// Takes `seq` as the last commit: a replayed record, or a commit made
    /// durable by a checkpoint instead of a record (a bulk block).
    pub fn set_commit_seq(&mut self, seq: u64) {
        debug_assert!(seq >= self.commit_seq, "commit numbers never go back");
        self.commit_seq = seq;
    }

    /// Writes `meta` to both slots: the first copy, synced, then the
    /// second. A crash tears at most one. Once the first copy is durable
    /// the checkpoint stands: a failure writing the second leaves one good
    /// copy (a damaged slot), which is returned as `Ok(Some(error))` for
    /// the caller to poison the handle with; a failure on the first copy
    /// is an error and `meta` is not adopted.
    pub fn write_meta(&mut self, meta: Meta, counters: &Counters) -> Result<Option<StoreError>> {
        let mut second_copy_error = None;
        for (copy, slot) in meta.slots().into_iter().enumerate() {
            let written = self
                .meta_file
                .write_all_at(&meta.encode(slot), (slot * META_SLOT_BYTES) as u64)
                .map_err(StoreError::io("writing the meta record"))
                .and_then(|()| {
                    self.meta_file
                        .sync_data()
                        .map_err(StoreError::io("syncing the meta record"))
                });
            match written {
                Ok(()) => Counters::add(&counters.meta_bytes_written, META_SLOT_BYTES as u64),
                Err(error) if copy == 0 => return Err(error),
                Err(error) => {
                    self.meta_slot_damaged = true;
                    second_copy_error = Some(error);
                }
            }
        }
        Counters::add(&counters.checkpoints, 1);
        self.meta = meta;
        Ok(second_copy_error)
    }

    /// Restarts the WAL in the epoch of the checkpoint just written (its
    /// mark written and synced).
    pub fn restart_wal(&mut self) -> Result<()> {
        self.wal.restart(self.meta.generation, self.meta.commit_seq)
    }
}

//! Bulk apply: one block of any size, sorted by key, committed atomically
//! by a checkpoint rather than a WAL record, in memory bounded by the
//! budget.
//!
//! The writes are applied in chunks. When the changed buckets outgrow half
//! the memory budget they are **staged**: encoded and written copy-on-write
//! to blocks that the durable checkpoint does not use, and dropped from
//! memory (their new extents are referenced only by the in-memory upper
//! trie). Nothing on disk refers to a staged block until the final
//! checkpoint writes the pages above them and switches the meta record; a
//! crash or an error before that leaves the previous checkpoint and its WAL
//! exactly as they were, and the staged blocks are free space at the next
//! open (free space is derived, never stored). So the block lands whole or
//! not at all, and memory holds one chunk of writes plus at most the budget
//! of changed buckets, whatever the block's size.
//!
//! A bulk block cannot be reverted: its previous values are not kept. It
//! ends the revert window (earlier blocks can no longer be reverted either)
//! and every snapshot at an older root ([`StoreError::SnapshotReverted`]).
//! If it fails, its memory holds part of the block: the handle reloads
//! itself from the files as a reopen would (syncing them first), so reads
//! serve the last good state at once. A block refused as bad input
//! (unsorted) leaves the handle fully usable; any other failure leaves it
//! refusing writes until reopened, like every failed write. If the reload
//! fails too, the handle refuses reads as well. Snapshots older than the
//! layers the reload rebuilds are void.

use std::sync::Arc;

use alloy_primitives::B256;
use rayon::prelude::*;

use super::checkpoint::RunWriter;
use super::{Counters, Store};
use crate::bucket::codec;
use crate::error::{Result, StoreError};
use crate::format::{blocks_for, Extent};

/// Writes applied per chunk, at least (the budget may allow more).
const CHUNK_WRITES_MIN: usize = 1024;
/// Memory of a changed bucket in the worst case a chunk is sized for
/// (a full 4 KiB bucket decoded, with its stems' cached hashes).
const BUCKET_MEMORY_BYTES: usize = 16 << 10;
/// Buckets encoded and written at a time when staging.
const STAGE_GROUP_BUCKETS: usize = 1024;

impl Store {
    /// Applies `sorted_writes` (ascending keys; equal keys allowed, the
    /// last wins) as one block and makes it durable by a checkpoint; returns
    /// the new root. Unpersisted layers are committed first.
    ///
    /// Atomic: the block is committed by one checkpoint; a crash or an error
    /// before it leaves the previous state (docs/file-format.md, "Bulk
    /// apply"). Memory: one chunk of writes plus at most half the budget of
    /// changed buckets, whatever the block's size. It cannot be reverted,
    /// ends the revert window and voids older snapshots. After a failure
    /// the handle reloads the last good state from the files (see the
    /// module documentation). A database with a flat index refuses it
    /// ([`StoreError::OwnersRequired`]): bulk writes name no accounts.
    pub fn apply_bulk(
        &mut self,
        sorted_writes: impl IntoIterator<Item = (B256, B256)>,
    ) -> Result<[u8; 32]> {
        self.check_writable()?;
        if self.tree.flat.is_some() {
            return Err(StoreError::OwnersRequired);
        }
        self.commit()?;
        // The commit may have been durable while the checkpoint it
        // triggered failed and poisoned the handle: stop there.
        self.check_writable()?;
        let durable = (
            self.history.persisted_root(),
            self.history.persisted_counts(),
        );
        match self.apply_bulk_inner(sorted_writes.into_iter()) {
            Ok(root) => Ok(root),
            Err(error) => {
                self.history.roll_back_restart(durable.0, durable.1);
                // Part of the block is in memory: reload from the files, or
                // refuse reads too (the handle reports the last durable
                // root).
                if self.reload_after(&error).is_err() {
                    self.poison(&error);
                    self.reads_poisoned = true;
                }
                Err(error)
            }
        }
    }

    /// Replaces the handle's state with what the files hold (recovery, as
    /// at open, under the same lock), keeping its counters and open
    /// snapshots (those the rebuilt layers cannot serve become void).
    /// Unless `error` was bad input, the handle then refuses writes.
    fn reload_after(&mut self, error: &StoreError) -> Result<()> {
        let names = self
            .dir
            .list()
            .map_err(StoreError::io("listing the database directory"))?;
        let mut fresh = Store::recover(
            Arc::clone(&self.dir),
            Arc::clone(&self.lock),
            self.options.clone(),
            &names,
            true,
        )?;
        let oldest_reader = self.history.min_reader_seq();
        fresh.history.void_unservable(oldest_reader);
        fresh.history.set_min_reader_seq(oldest_reader);
        fresh.counters.absorb(&self.counters);
        if !matches!(error, StoreError::UnsortedInput { .. }) {
            fresh.poison(error);
        }
        *self = fresh;
        Ok(())
    }

    fn apply_bulk_inner(&mut self, writes: impl Iterator<Item = (B256, B256)>) -> Result<[u8; 32]> {
        // Each write of a chunk may land in a bucket of its own: a chunk
        // must fit the changed buckets' share of the budget on its own.
        let chunk_len = (self.options.dirty_bytes_max() / BUCKET_MEMORY_BYTES / 2)
            .clamp(CHUNK_WRITES_MIN, crate::wal::LAYER_OPS_MAX);
        let mut chunk: Vec<(B256, Option<B256>)> = Vec::with_capacity(chunk_len.min(1 << 20));
        let mut last: Option<B256> = None;
        for (index, (key, value)) in writes.enumerate() {
            if last.is_some_and(|previous| key < previous) {
                return Err(StoreError::UnsortedInput {
                    index: index as u64,
                });
            }
            last = Some(key);
            chunk.push((key, Some(value)));
            if chunk.len() == chunk_len {
                self.apply_bulk_chunk(&chunk)?;
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            self.apply_bulk_chunk(&chunk)?;
        }
        // The block ends the revert window (never read if still on disk;
        // the checkpoint frees its segment) and every older snapshot.
        self.history.restart_at(self.tree.root, self.tree.counts());
        self.durable.set_commit_seq(self.durable.commit_seq() + 1);
        self.write_checkpoint()?;
        Ok(self.tree.root)
    }

    /// Applies one chunk, then stages the changed buckets if they outgrew
    /// their share of the budget.
    fn apply_bulk_chunk(&mut self, chunk: &[(B256, Option<B256>)]) -> Result<()> {
        self.apply_ops(chunk)?;
        if self.tree.dirty_bytes > self.options.dirty_bytes_max() {
            self.stage_dirty_buckets()?;
        }
        Ok(())
    }

    /// Writes every changed bucket to fresh blocks and drops it from
    /// memory (see the module documentation: no meta record refers to
    /// these blocks until the bulk apply's checkpoint). Buckets are encoded
    /// [`STAGE_GROUP_BUCKETS`] at a time, so staging holds at most that many
    /// encodings beside the buckets it frees; staged buckets do not enter
    /// the clean cache (sorted writes move on and do not come back).
    fn stage_dirty_buckets(&mut self) -> Result<()> {
        let dirty = self.tree.dirty_ids();
        let data = Arc::clone(&self.tree.data);
        let mut writer = RunWriter::new(data.as_ref());
        for group in dirty.chunks(STAGE_GROUP_BUCKETS) {
            let encoded: Vec<Option<Vec<u8>>> = group
                .par_iter()
                .map(|&id| {
                    self.tree.buckets[id as usize]
                        .dirty
                        .as_deref()
                        .filter(|contents| !contents.is_empty())
                        .map(codec::encode)
                })
                .collect();
            for (&id, bytes) in group.iter().zip(encoded) {
                let extent = match &bytes {
                    Some(bytes) => {
                        let block = self.tree.alloc.alloc(blocks_for(bytes.len()));
                        let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                        writer.write(block, bytes)?;
                        Some(Extent::at_block(block, bytes.len(), crc))
                    }
                    None => None,
                };
                let slot = &mut self.tree.buckets[id as usize];
                // The old extent stays the durable checkpoint's (or was
                // staged earlier): freed once the bulk apply's checkpoint
                // is durable.
                if let Some(old) = slot.set_extent(extent) {
                    self.tree.released.push(old.blocks());
                }
                if let Some(contents) = slot.dirty.take() {
                    self.tree.dirty_bytes = self
                        .tree
                        .dirty_bytes
                        .saturating_sub(contents.memory_bytes());
                }
            }
        }
        writer.flush()?;
        Counters::add(&self.counters.data_bytes_written, writer.written);
        self.tree.dirty_bytes = 0;
        Ok(())
    }
}

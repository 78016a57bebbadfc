//! Commits and checkpoints (docs/file-format.md, "Commit and recovery").
//!
//! A commit appends one WAL record (synced in [`SyncMode::Always`]) and is
//! acknowledged when that returns. A checkpoint moves the changed buckets
//! and pages into the data file, copy-on-write:
//!
//! 1. every changed bucket, then every changed page (deepest first, so a
//!    page knows where its children went), is written to blocks that the
//!    durable checkpoint does not use;
//! 2. the data file is synced;
//! 3. the meta record of the new generation is written to the slot of the
//!    older one, and synced;
//! 4. only then are the replaced extents freed, and the WAL restarts with
//!    the new generation as its epoch.
//!
//! A crash before step 3 completes leaves the previous meta record and
//! every block it references untouched, and the WAL still holds every
//! commit since; after step 3 the new checkpoint holds them all and the
//! WAL's old records carry an old epoch, so replay ignores them.

use std::sync::Arc;

use rayon::prelude::*;
use ubt_spec::hash::Hash;

use super::{Counters, Store};
use crate::bucket::codec;
use crate::error::{Result, StoreError};
use crate::format::{blocks_for, Extent, BLOCK_BYTES};
use crate::io::StoreFile;
use crate::meta::{Meta, META_SLOT_BYTES};
use crate::options::SyncMode;
use crate::upper::page::{self, Entry};
use crate::upper::{BucketId, Link, ROOT};
use crate::wal;

/// Coalesced writes of consecutive blocks are flushed at this size.
const WRITE_RUN_BYTES_MAX: usize = 4 << 20;
/// Page blocks may hold this many dead bytes beyond the live ones before
/// every page is rewritten.
const PAGE_SLACK_BYTES: u64 = 64 << 10;

/// Packs the pages of one checkpoint back to back into fresh blocks (a
/// block holding live data of the durable checkpoint is never written).
#[derive(Default)]
struct PagePacker {
    /// First block of the current run, and the bytes placed in it.
    run: Option<(u64, Vec<u8>)>,
}

impl PagePacker {
    /// Places `bytes`; returns their offset in the data file.
    fn append(
        &mut self,
        alloc: &mut crate::alloc::BlockAllocator,
        writer: &mut RunWriter<'_>,
        bytes: &[u8],
    ) -> Result<u64> {
        if let Some((start, buffer)) = &mut self.run {
            let have = buffer.len().div_ceil(BLOCK_BYTES) as u64;
            let need = (buffer.len() + bytes.len()).div_ceil(BLOCK_BYTES) as u64;
            if need == have || alloc.alloc_at(*start + have..*start + need) {
                let offset = *start * BLOCK_BYTES as u64 + buffer.len() as u64;
                buffer.extend_from_slice(bytes);
                return Ok(offset);
            }
            self.finish(writer)?;
        }
        let start = alloc.alloc(blocks_for(bytes.len()));
        self.run = Some((start, bytes.to_vec()));
        Ok(start * BLOCK_BYTES as u64)
    }

    /// Hands the current run to the writer.
    fn finish(&mut self, writer: &mut RunWriter<'_>) -> Result<()> {
        if let Some((start, buffer)) = self.run.take() {
            writer.write(start, &buffer)?;
        }
        Ok(())
    }
}

/// Gathers writes to consecutive blocks into one `write_all_at`.
pub(super) struct RunWriter<'a> {
    file: &'a dyn StoreFile,
    start_block: u64,
    buffer: Vec<u8>,
    /// Bytes written so far.
    pub written: u64,
}

impl<'a> RunWriter<'a> {
    pub(super) fn new(file: &'a dyn StoreFile) -> Self {
        RunWriter {
            file,
            start_block: 0,
            buffer: Vec::new(),
            written: 0,
        }
    }

    /// Writes `bytes` (padded to whole blocks) at `block`.
    pub(super) fn write(&mut self, block: u64, bytes: &[u8]) -> Result<()> {
        let next = self.start_block + (self.buffer.len() / BLOCK_BYTES) as u64;
        if !self.buffer.is_empty() && (block != next || self.buffer.len() >= WRITE_RUN_BYTES_MAX) {
            self.flush()?;
        }
        if self.buffer.is_empty() {
            self.start_block = block;
        }
        self.buffer.extend_from_slice(bytes);
        let padded = self.buffer.len().div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
        self.buffer.resize(padded, 0);
        Ok(())
    }

    pub(super) fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.file
            .write_all_at(&self.buffer, self.start_block * BLOCK_BYTES as u64)
            .map_err(StoreError::io("writing the data file"))?;
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }
}

impl Store {
    /// Makes the writes applied since the last commit durable (one WAL
    /// record) and returns the committed root. Checkpoints when changed
    /// buckets or the WAL exceed their budgets.
    ///
    /// If the WAL write fails, the pending writes are undone in memory, the
    /// handle is poisoned and the error returned; the last committed state
    /// stays readable. If the checkpoint that follows a successful commit
    /// fails, the commit stands (its WAL record is durable) and the handle
    /// is poisoned: the next write reports why.
    pub fn commit(&mut self) -> Result<Hash> {
        self.check_writable()?;
        if self.pending.is_empty() {
            return Ok(self.root);
        }
        let seq = self.commit_seq + 1;
        let sync = self.options.sync == SyncMode::Always;
        let record = wal::encode(sync, self.wal.epoch(), seq, &self.root, &self.pending);
        if let Err(error) = self.wal.append(&record, sync) {
            self.discard_uncommitted();
            self.poison(&error);
            return Err(error);
        }
        Counters::add(&self.counters.wal_bytes_written, record.len() as u64);
        Counters::add(&self.counters.commits, 1);
        self.commit_seq = seq;
        self.committed_root = self.root;
        self.committed_counts = (self.stem_count, self.leaf_count);
        self.pending.clear();
        self.undo.clear();
        if self.dirty_bytes > self.options.dirty_bytes_max()
            || self.wal.len() > self.options.wal_bytes_max
        {
            if let Err(error) = self.write_checkpoint() {
                self.poison(&error);
            }
        }
        Ok(self.root)
    }

    /// Commits pending writes, then writes a checkpoint if anything changed
    /// since the last one.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.commit()?;
        self.check_writable()?;
        let changed = self.buckets.iter().any(|b| b.dirty.is_some()) || !self.wal.is_empty();
        if !changed {
            return Ok(());
        }
        self.write_checkpoint()
            .inspect_err(|error| self.poison(error))
    }

    /// Checkpoints and closes the database. Uncommitted writes are
    /// committed first.
    pub fn close(mut self) -> Result<()> {
        self.checkpoint()
    }

    /// The checkpoint protocol of the module documentation.
    fn write_checkpoint(&mut self) -> Result<()> {
        debug_assert!(
            self.pending.is_empty(),
            "checkpoint with uncommitted writes"
        );
        let dirty: Vec<BucketId> = (0..self.buckets.len() as BucketId)
            .filter(|&id| self.buckets[id as usize].dirty.is_some())
            .collect();
        let encoded: Vec<Option<Vec<u8>>> = dirty
            .par_iter()
            .map(|&id| {
                let contents = self.buckets[id as usize].dirty.as_deref()?;
                (!contents.is_empty()).then(|| codec::encode(contents))
            })
            .collect();
        let data = Arc::clone(&self.data);
        let mut writer = RunWriter::new(data.as_ref());
        let mut new_refs: Vec<Option<Extent>> = Vec::with_capacity(dirty.len());
        for bytes in &encoded {
            let Some(bytes) = bytes else {
                new_refs.push(None);
                continue;
            };
            let blocks = blocks_for(bytes.len());
            let block = self.alloc.alloc(blocks);
            let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            writer.write(block, bytes)?;
            new_refs.push(Some(Extent::at_block(block, bytes.len(), crc)));
        }
        // Bucket references must be final before pages are encoded. The old
        // extents stay in use until the new meta record is durable.
        for (&id, new_ref) in dirty.iter().zip(&new_refs) {
            let slot = &mut self.buckets[id as usize];
            if let Some(old) = std::mem::replace(&mut slot.extent, *new_ref) {
                self.released.push(old.blocks());
            }
        }
        self.write_pages_and_meta(&mut writer)?;
        self.after_checkpoint();
        for ((id, bytes), new_ref) in dirty.into_iter().zip(encoded).zip(new_refs) {
            self.buckets[id as usize].dirty = None;
            if let (Some(bytes), Some(at)) = (bytes, new_ref) {
                self.cache.insert(id, at, Arc::from(bytes));
            }
        }
        self.dirty_bytes = 0;
        Ok(())
    }

    /// Steps 1 (pages) to 3 of the protocol: writes every dirty page
    /// deepest first through `writer` (which may already hold bucket
    /// writes), syncs the data file, then writes and syncs the meta record
    /// of the next generation.
    pub(super) fn write_pages_and_meta(&mut self, writer: &mut RunWriter<'_>) -> Result<()> {
        if self.page_blocks.block_count() * BLOCK_BYTES as u64
            > 2 * self.page_blocks.live_bytes() + PAGE_SLACK_BYTES
        {
            // Half the page blocks' bytes are dead: rewrite every page, so
            // the old page blocks all empty out.
            self.trie.mark_all_pages_dirty();
        }
        let mut packer = PagePacker::default();
        for page_root in self.trie.dirty_pages() {
            let prefix = self.prefix_of_node(page_root);
            let buckets = &self.buckets;
            let bytes = page::encode(&self.trie, page_root, &prefix, &|bucket| {
                buckets[bucket as usize].extent
            });
            let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let offset = packer.append(&mut self.alloc, writer, &bytes)?;
            let written = Extent {
                offset,
                len: bytes.len() as u32,
                crc,
            };
            self.page_blocks.add(written.offset, written.len);
            if let Some(old) = self.trie.set_page_written(page_root, written) {
                for block in self.page_blocks.remove(old.offset, old.len) {
                    self.released.push(block..block + 1);
                }
            }
        }
        packer.finish(writer)?;
        writer.flush()?;
        Counters::add(&self.counters.data_bytes_written, writer.written);
        writer.written = 0;
        self.data
            .sync_data()
            .map_err(StoreError::io("syncing the data file"))?;

        let root_node = self.trie.node(ROOT);
        let root = match root_node.link {
            Link::Leaf(bucket) => Entry {
                summary: root_node.summary,
                leaf: true,
                extent: self.buckets[bucket as usize].extent,
            },
            Link::Internal(_) => Entry {
                summary: root_node.summary,
                leaf: false,
                extent: root_node.page.and_then(|p| p.extent),
            },
        };
        let meta = Meta {
            generation: self.meta.generation + 1,
            group_depth: self.trie.group_depth(),
            commit_seq: self.commit_seq,
            data_blocks: self.alloc.end(),
            bucket_count: self.buckets.len() as u64,
            stem_count: self.stem_count,
            leaf_count: self.leaf_count,
            root,
        };
        // First copy, synced, then the second: a crash tears at most one.
        for slot in meta.slots() {
            self.meta_file
                .write_all_at(&meta.encode(slot), (slot * META_SLOT_BYTES) as u64)
                .map_err(StoreError::io("writing the meta record"))?;
            self.meta_file
                .sync_data()
                .map_err(StoreError::io("syncing the meta record"))?;
            Counters::add(&self.counters.meta_bytes_written, META_SLOT_BYTES as u64);
        }
        Counters::add(&self.counters.checkpoints, 1);
        self.meta = meta;
        Ok(())
    }

    /// Step 4: the new checkpoint is durable, so the extents the previous
    /// one used are free, and the WAL restarts in the new epoch.
    pub(super) fn after_checkpoint(&mut self) {
        for old in std::mem::take(&mut self.released) {
            self.alloc.free(old);
        }
        self.wal.restart(self.meta.generation);
    }
}

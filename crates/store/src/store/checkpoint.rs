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

use alloy_primitives::map::{B256Map, HashMap};
use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::key::{sub_index, Stem};

use rayon::prelude::*;

use super::{Counters, Store};
use crate::bucket::codec;
use crate::error::{Result, StoreError};
use crate::flat::index::FlatIndex;
use crate::format::{blocks_for, Extent, BLOCK_BYTES};
use crate::io::StoreFile;
use crate::meta::Meta;
use crate::summary::Summary;
use crate::upper::page::{self, Entry};
use crate::upper::{BucketId, Link, NodeId, ROOT};

/// Coalesced writes of consecutive blocks are flushed at this size.
const WRITE_RUN_BYTES_MAX: usize = 1 << 20;
/// A checkpoint encodes and writes the changed buckets in chunks of at
/// most this many bytes (counted at the database's bucket capacity) and a
/// sixteenth of the dirty budget, so the encodings it holds beside the
/// changed buckets' contents stay a small part of the budget.
const CHECKPOINT_CHUNK_BYTES: usize = 16 << 20;
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
            // A run is handed to the writer at the writer's run size, so a
            // checkpoint that rewrites many pages never holds them all.
            let room = buffer.len() + bytes.len() <= WRITE_RUN_BYTES_MAX;
            if room && (need == have || alloc.alloc_at(*start + have..*start + need)) {
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
    /// Persists every applied layer, then writes a checkpoint if anything
    /// changed since the last one.
    pub fn checkpoint(&mut self) -> Result<()> {
        if self.read_only {
            // Nothing to write: a read-only handle never changes anything.
            return Ok(());
        }
        self.commit()?;
        self.check_writable()?;
        let changed = self.tree.buckets.iter().any(|b| b.dirty.is_some())
            || !self.durable.wal.is_empty()
            || self.tree.flat.as_ref().is_some_and(FlatIndex::has_changes);
        if !changed {
            return Ok(());
        }
        self.write_checkpoint()
            .inspect_err(|error| self.poison(error))
    }

    /// Persists every applied layer, checkpoints and closes the database.
    pub fn close(mut self) -> Result<()> {
        self.checkpoint()
    }

    /// The value at the persisted root of every key that unpersisted layers
    /// touched, grouped by the bucket holding the key now.
    fn persisted_values(&self) -> HashMap<BucketId, Vec<(B256, Option<B256>)>> {
        let mut value_at_persisted: B256Map<Option<B256>> = B256Map::default();
        for layer in self.history.layers().iter().filter(|l| !l.persisted) {
            for (key, old) in &layer.old {
                value_at_persisted.entry(*key).or_insert(*old);
            }
        }
        let mut by_bucket: HashMap<BucketId, Vec<(B256, Option<B256>)>> = HashMap::default();
        for (key, value) in value_at_persisted {
            let (_, bucket) = self.tree.trie.locate(&Stem::of_key(&key));
            by_bucket.entry(bucket).or_default().push((key, value));
        }
        by_bucket
    }

    /// The checkpoint protocol of the module documentation. It writes the
    /// persisted state: a bucket that unpersisted layers changed is written
    /// as a copy with those changes undone, and the pages above it carry
    /// the summaries of that persisted state.
    pub(crate) fn write_checkpoint(&mut self) -> Result<()> {
        let unpersisted = self.persisted_values();
        let dirty = self.tree.dirty_ids();
        let data = Arc::clone(&self.tree.data);
        let mut writer = RunWriter::new(data.as_ref());
        let mut new_refs: Vec<Option<Extent>> = Vec::with_capacity(dirty.len());
        // The summary at the persisted root, where it differs from the tip's.
        let mut persisted_summaries: Vec<Option<Summary>> = Vec::with_capacity(dirty.len());
        // Encoded and written a chunk at a time, so the encodings held at
        // once stay a small part of the budget whatever the number of
        // changed buckets.
        let chunk_bytes = CHECKPOINT_CHUNK_BYTES.min(self.options.dirty_bytes_max() / 16);
        let chunk_buckets = (chunk_bytes / self.tree.bucket_bytes).max(1);
        for chunk in dirty.chunks(chunk_buckets) {
            let encoded = self.encode_persisted(chunk, &unpersisted);
            let first = new_refs.len();
            for (bytes, _) in &encoded {
                let Some(bytes) = bytes else {
                    new_refs.push(None);
                    continue;
                };
                let blocks = blocks_for(bytes.len());
                let block = self.tree.alloc.alloc(blocks);
                let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                writer.write(block, bytes)?;
                new_refs.push(Some(Extent::at_block(block, bytes.len(), crc)));
            }
            writer.flush()?;
            // The chunk is in the file: its encodings are the bytes at
            // their new extents, so the clean cache may hold them now (an
            // entry matches only the extent it was written at, and a bucket
            // keeps its old extent until the loop below). A bucket that
            // unpersisted layers changed was written without those changes
            // and keeps its tip in memory: nothing to cache.
            for ((&id, (bytes, summary)), new_ref) in
                chunk.iter().zip(encoded).zip(&new_refs[first..])
            {
                if let (Some(bytes), Some(at), None) = (bytes, new_ref, summary) {
                    // Encoded here: its checksum is the one referenced.
                    debug_assert!(crate::bucket::codec::checksum_matches(&bytes, at.crc));
                    self.tree.cache.insert(id, *at, Arc::from(bytes));
                }
                persisted_summaries.push(summary);
            }
        }
        // Bucket references must be final before pages are encoded. The old
        // extents stay in use until the new meta record is durable.
        let mut leaf_overrides: HashMap<NodeId, Summary> = HashMap::default();
        for ((&id, new_ref), summary) in dirty.iter().zip(&new_refs).zip(&persisted_summaries) {
            let slot = &mut self.tree.buckets[id as usize];
            if let Some(old) = slot.set_extent(*new_ref) {
                self.tree.released.push(old.blocks());
            }
            if let Some(summary) = summary {
                let leaf = self.tree.trie.leaf_of(&self.tree.buckets.prefix(id));
                leaf_overrides.insert(leaf, *summary);
            }
        }
        let overrides = self.tree.trie.summaries_with(&leaf_overrides, |leaf| {
            match self.tree.trie.node(leaf).link() {
                Link::Leaf(bucket) => self.tree.buckets.prefix(bucket),
                Link::Internal(_) => unreachable!("overrides are for leaves"),
            }
        });
        self.write_flat(&mut writer)?;
        let revert_log = self.write_revert_log(&mut writer)?;
        self.write_pages_and_meta(&mut writer, &overrides, revert_log)?;
        self.settle_flat();
        // The checkpoint is durable from here on: a failure to restart the
        // WAL poisons the handle (no commit could follow) but does not
        // undo it, and a reopen restarts the log.
        if let Err(error) = self.after_checkpoint() {
            self.poison(&error);
        }
        for (id, summary) in dirty.into_iter().zip(persisted_summaries) {
            if summary.is_none() {
                // Written as it is: its bytes are on disk (and cached).
                // Otherwise unpersisted layers changed it: the tip stays.
                self.tree.buckets[id as usize].dirty = None;
            }
        }
        self.tree.recount_dirty_bytes();
        Ok(())
    }

    /// The persisted state of each of `chunk`'s changed buckets, encoded
    /// (`None` for an empty bucket), with its summary when unpersisted
    /// layers changed it (the encoding then undoes their changes).
    fn encode_persisted(
        &self,
        chunk: &[BucketId],
        unpersisted: &HashMap<BucketId, Vec<(B256, Option<B256>)>>,
    ) -> Vec<(Option<Vec<u8>>, Option<Summary>)> {
        chunk
            .par_iter()
            .map(|&id| {
                let Some(contents) = self.tree.buckets[id as usize].dirty.as_deref() else {
                    return (None, None);
                };
                match unpersisted.get(&id) {
                    None => (
                        (!contents.is_empty()).then(|| codec::encode(contents)),
                        None,
                    ),
                    Some(values) => {
                        let mut persisted = contents.clone();
                        for (key, value) in values {
                            let (stem, sub) = (Stem::of_key(key), sub_index(key));
                            match value {
                                Some(value) => {
                                    persisted.set(&stem, sub, *value);
                                }
                                None => persisted.remove(&stem, sub),
                            }
                        }
                        let summary = persisted.summary();
                        let bytes = (!persisted.is_empty()).then(|| codec::encode(&persisted));
                        (bytes, Some(summary))
                    }
                }
            })
            .collect()
    }

    /// Steps 1 (pages) to 3 of the protocol: writes every dirty page
    /// deepest first through `writer` (which may already hold bucket
    /// writes), syncs the data file, then writes and syncs the meta record
    /// of the next generation.
    pub(super) fn write_pages_and_meta(
        &mut self,
        writer: &mut RunWriter<'_>,
        overrides: &HashMap<NodeId, Summary>,
        revert_log: Option<Extent>,
    ) -> Result<()> {
        if self.tree.page_blocks.block_count() * BLOCK_BYTES as u64
            > 2 * self.tree.page_blocks.live_bytes() + PAGE_SLACK_BYTES
        {
            // Half the page blocks' bytes are dead: rewrite every page, so
            // the old page blocks all empty out.
            self.tree.trie.mark_all_pages_dirty();
        }
        let mut packer = PagePacker::default();
        for page_root in self.tree.trie.dirty_pages() {
            let prefix = self.tree.prefix_of_node(page_root);
            let buckets = &self.tree.buckets;
            let trie = &self.tree.trie;
            // A page holding summaries other than the tip's must be written
            // again at the next checkpoint.
            let differs = std::cell::Cell::new(false);
            let bytes = page::encode(
                &self.tree.trie,
                page_root,
                &prefix,
                &|bucket| buckets[bucket as usize].extent(),
                &|node| {
                    let tip = trie.node(node).summary();
                    let stored = overrides.get(&node).copied().unwrap_or(tip);
                    if stored != tip {
                        differs.set(true);
                    }
                    stored
                },
            );
            let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let offset = packer.append(&mut self.tree.alloc, writer, &bytes)?;
            // A page is a few KiB (`page::encode`).
            #[allow(clippy::cast_possible_truncation)]
            let written = Extent {
                offset,
                len: bytes.len() as u32,
                crc,
            };
            self.tree.page_blocks.add(written.offset, written.len);
            if let Some(old) = self.tree.trie.set_page_written(page_root, written) {
                for block in self.tree.page_blocks.remove(old.offset, old.len) {
                    self.tree.released.push(block..block + 1);
                }
            }
            if differs.get() {
                self.tree.trie.mark_page_dirty(page_root);
            }
        }
        packer.finish(writer)?;
        writer.flush()?;
        Counters::add(&self.counters.data_bytes_written, writer.written);
        writer.written = 0;
        self.tree
            .data
            .sync_data()
            .map_err(StoreError::io("syncing the data file"))?;

        let root_node = self.tree.trie.node(ROOT);
        let root_summary = overrides.get(&ROOT).copied().unwrap_or(root_node.summary());
        debug_assert_eq!(
            root_summary.hash,
            self.history.persisted_root(),
            "checkpoint of another root"
        );
        let root = match root_node.link() {
            Link::Leaf(bucket) => Entry {
                summary: root_summary,
                leaf: true,
                extent: self.tree.buckets[bucket as usize].extent(),
            },
            Link::Internal(_) => Entry {
                summary: root_summary,
                leaf: false,
                extent: self.tree.trie.page(ROOT).and_then(|p| p.extent),
            },
        };
        let meta = Meta {
            generation: self.durable.meta.generation + 1,
            group_depth: self.tree.trie.group_depth(),
            commit_seq: self.durable.commit_seq(),
            layer_seq: self.persisted_layer_seq(),
            revert_log,
            data_blocks: self.tree.alloc.end(),
            bucket_count: self.tree.buckets.len() as u64,
            stem_count: self.history.persisted_counts().0,
            leaf_count: self.history.persisted_counts().1,
            root,
            flat: self.flat_meta(),
            bucket_bytes: self.tree.bucket_bytes,
        };
        // Once the first copy is durable the checkpoint stands; a failure
        // writing the second poisons the handle but does not undo it.
        if let Some(error) = self.durable.write_meta(meta, &self.counters)? {
            self.poison(&error);
        }
        Ok(())
    }

    /// Step 5: the new checkpoint is durable, so the extents the previous
    /// one used are free, and the WAL restarts in the new epoch (its mark
    /// written and synced). If that fails the checkpoint stands (a reopen
    /// restarts the log) but the handle cannot commit: the error poisons it.
    pub(super) fn after_checkpoint(&mut self) -> Result<()> {
        self.tree.free_released();
        self.durable.restart_wal()
    }
}

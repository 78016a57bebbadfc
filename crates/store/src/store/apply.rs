//! Applying writes: load the touched buckets (one batch of reads), write
//! them and rehash them in parallel, split those that overflow, rehash the
//! upper trie along the touched paths. Nothing is written to disk here.

use std::time::Instant;

use alloy_primitives::B256;
use rayon::prelude::*;
use ubt_spec::hash::Hash;
use ubt_spec::key::{sub_index, Stem};

use super::{BucketSlot, Store};
use crate::bucket::Bucket;
use crate::error::Result;
use crate::format::Extent;
use crate::summary::Summary;
use crate::upper::BucketId;

/// Where the time of the last [`Store::apply`] went, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyTiming {
    /// Writes applied.
    pub writes: u64,
    /// Buckets written.
    pub buckets_touched: u64,
    /// Buckets that were not in memory (cache hits included).
    pub buckets_read: u64,
    /// Finding each write's bucket in the upper trie.
    pub locate_us: u64,
    /// Reading the buckets not in memory (one batch).
    pub read_us: u64,
    /// Decoding them.
    pub decode_us: u64,
    /// Writing values, splitting, and rehashing the buckets (parallel).
    pub write_and_hash_us: u64,
    /// Rehashing the upper trie.
    pub upper_us: u64,
}

/// Below this many touched buckets, apply them on the calling thread.
const PARALLEL_BUCKETS_MIN: usize = 16;

/// One touched bucket's share of a batch.
struct Work {
    bucket: BucketId,
    contents: Box<Bucket>,
    /// Range into the batch's write order.
    writes: std::ops::Range<usize>,
    undo: Vec<(B256, Option<B256>)>,
    pieces: Vec<(Bucket, Summary)>,
    stems_before: usize,
    leaves_before: usize,
    memory_before: usize,
}

impl Store {
    /// Applies `writes` in order (later writes to a key win) and returns
    /// the new root. The writes are pending until [`Store::commit`].
    pub fn apply(&mut self, writes: &[(B256, B256)]) -> Result<Hash> {
        self.check_writable()?;
        self.apply_unchecked(writes)?;
        self.pending.extend_from_slice(writes);
        Ok(self.root)
    }

    /// [`Store::apply`] without the poison check or pending bookkeeping
    /// (also used by WAL replay).
    pub(crate) fn apply_unchecked(&mut self, writes: &[(B256, B256)]) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        // Group the writes by bucket, keeping their order within a bucket.
        let mut order: Vec<(BucketId, u32)> = writes
            .iter()
            .enumerate()
            .map(|(index, (key, _))| (self.trie.locate(&Stem::of_key(key)).1, index as u32))
            .collect();
        order.sort_unstable();
        let mut groups: Vec<(BucketId, std::ops::Range<usize>)> = Vec::new();
        for (position, (bucket, _)) in order.iter().enumerate() {
            match groups.last_mut() {
                Some((last, range)) if last == bucket => range.end = position + 1,
                _ => groups.push((*bucket, position..position + 1)),
            }
        }

        // Load every touched bucket that is not already in memory, in one
        // batch. Nothing has changed yet, so an error leaves no trace.
        let to_load: Vec<(BucketId, Extent)> = groups
            .iter()
            .filter_map(|(bucket, _)| {
                let slot = &self.buckets[*bucket as usize];
                match (&slot.dirty, slot.extent) {
                    (None, Some(at)) => Some((*bucket, at)),
                    _ => None,
                }
            })
            .collect();
        let locate_done = Instant::now();
        let fetched = self.fetch(&to_load)?;
        let read_done = Instant::now();
        let decoded: Vec<Bucket> = to_load
            .par_iter()
            .zip(fetched.par_iter())
            .map(|((bucket, at), bytes)| self.decode_fetched(*bucket, at, bytes))
            .collect::<Result<_>>()?;
        let mut decoded = to_load.iter().map(|(b, _)| *b).zip(decoded).peekable();

        let mut work: Vec<Work> = Vec::with_capacity(groups.len());
        for (bucket, range) in groups {
            let slot = &mut self.buckets[bucket as usize];
            let (contents, memory_before) = match slot.dirty.take() {
                Some(contents) => {
                    let memory = contents.memory_bytes();
                    (contents, memory)
                }
                None => match decoded.next_if(|(id, _)| *id == bucket) {
                    Some((_, contents)) => {
                        self.cache.remove(bucket);
                        (Box::new(contents), 0)
                    }
                    None => (Box::new(Bucket::new(slot.prefix)), 0),
                },
            };
            work.push(Work {
                bucket,
                stems_before: contents.stem_count(),
                leaves_before: contents.leaf_count(),
                memory_before,
                contents,
                writes: range,
                undo: Vec::new(),
                pieces: Vec::new(),
            });
        }

        let run = |item: &mut Work| {
            for &(_, index) in &order[item.writes.clone()] {
                let (key, value) = writes[index as usize];
                let old = item
                    .contents
                    .set(&Stem::of_key(&key), sub_index(&key), value);
                item.undo.push((key, old));
            }
            let placeholder = Box::new(Bucket::new(crate::prefix::Prefix::ROOT));
            let contents = std::mem::replace(&mut item.contents, placeholder);
            item.pieces = (*contents)
                .split_to_fit()
                .into_iter()
                .map(|mut piece| {
                    let summary = piece.summary();
                    (piece, summary)
                })
                .collect();
        };
        let decode_done = Instant::now();
        if work.len() >= PARALLEL_BUCKETS_MIN {
            work.par_iter_mut().for_each(run);
        } else {
            work.iter_mut().for_each(run);
        }
        let hash_done = Instant::now();
        let buckets_touched = work.len() as u64;
        for item in work {
            self.integrate(item);
        }
        self.root = self.trie.rehash().hash;
        let micros = |from: Instant, to: Instant| to.duration_since(from).as_micros() as u64;
        self.last_apply = ApplyTiming {
            writes: writes.len() as u64,
            buckets_touched,
            buckets_read: to_load.len() as u64,
            locate_us: micros(started, locate_done),
            read_us: micros(locate_done, read_done),
            decode_us: micros(read_done, decode_done),
            write_and_hash_us: micros(decode_done, hash_done),
            upper_us: micros(hash_done, Instant::now()),
        };
        Ok(())
    }

    /// Puts a processed bucket (or its split pieces) back into the table and
    /// the upper trie.
    fn integrate(&mut self, item: Work) {
        let Work {
            bucket,
            undo,
            pieces,
            stems_before,
            leaves_before,
            memory_before,
            ..
        } = item;
        self.undo.extend(undo);
        let prefix = self.buckets[bucket as usize].prefix;
        let leaf = self.trie.mark_path(&prefix);
        let stems_after: usize = pieces.iter().map(|(b, _)| b.stem_count()).sum();
        let leaves_after: usize = pieces.iter().map(|(b, _)| b.leaf_count()).sum();
        let memory_after: usize = pieces.iter().map(|(b, _)| b.memory_bytes()).sum();
        self.stem_count = self.stem_count + stems_after as u64 - stems_before as u64;
        self.leaf_count = self.leaf_count + leaves_after as u64 - leaves_before as u64;
        self.dirty_bytes = self.dirty_bytes + memory_after - memory_before;
        if let [(piece, summary)] = &pieces[..] {
            debug_assert_eq!(piece.prefix(), &prefix);
            self.trie.set_leaf_summary(leaf, *summary);
            let mut pieces = pieces;
            let (piece, _) = pieces.pop().unwrap_or_else(|| unreachable!());
            self.buckets[bucket as usize].dirty = Some(Box::new(piece));
            return;
        }
        // Split: the bucket's old extent belongs to its old prefix.
        if let Some(old) = self.buckets[bucket as usize].extent.take() {
            self.released.push(old.blocks());
        }
        self.cache.remove(bucket);
        let mut ids = Vec::with_capacity(pieces.len());
        let mut plan = Vec::with_capacity(pieces.len());
        for (index, (piece, summary)) in pieces.iter().enumerate() {
            let id = if index == 0 {
                bucket
            } else {
                self.buckets.push(BucketSlot {
                    prefix: *piece.prefix(),
                    leaf: 0,
                    extent: None,
                    dirty: None,
                });
                (self.buckets.len() - 1) as BucketId
            };
            ids.push(id);
            plan.push((*piece.prefix(), id, *summary));
        }
        let leaves = self.trie.replace_leaf(leaf, &prefix, &plan);
        for ((id, leaf), (piece, _)) in ids.into_iter().zip(leaves).zip(pieces) {
            let slot = &mut self.buckets[id as usize];
            slot.prefix = *piece.prefix();
            slot.leaf = leaf;
            slot.dirty = Some(Box::new(piece));
        }
    }

    /// Where the time of the last apply went.
    pub fn last_apply_timing(&self) -> ApplyTiming {
        self.last_apply
    }

    /// Undoes every write applied since the last commit, restoring the
    /// committed state in memory (bucket splits stay; they do not change
    /// the root). No I/O: every bucket touched is in memory.
    pub fn discard_uncommitted(&mut self) {
        let undo = std::mem::take(&mut self.undo);
        let mut touched: Vec<BucketId> = Vec::new();
        for (key, old) in undo.iter().rev() {
            let stem = Stem::of_key(key);
            let (_, bucket) = self.trie.locate(&stem);
            let Some(contents) = self.buckets[bucket as usize].dirty.as_mut() else {
                debug_assert!(false, "undo of a bucket that is not in memory");
                continue;
            };
            match old {
                Some(value) => {
                    contents.set(&stem, sub_index(key), *value);
                }
                None => contents.remove(&stem, sub_index(key)),
            }
            touched.push(bucket);
        }
        touched.sort_unstable();
        touched.dedup();
        for bucket in touched {
            let prefix = self.buckets[bucket as usize].prefix;
            let leaf = self.trie.mark_path(&prefix);
            let summary = self.buckets[bucket as usize]
                .dirty
                .as_mut()
                .map_or(Summary::EMPTY, |b| b.summary());
            self.trie.set_leaf_summary(leaf, summary);
        }
        self.root = self.trie.rehash().hash;
        (self.stem_count, self.leaf_count) = self.committed_counts;
        self.pending.clear();
        debug_assert_eq!(
            self.root, self.committed_root,
            "undo did not restore the root"
        );
    }
}

//! Applying writes: find each write's bucket, issue one batch of reads for
//! the buckets not in memory, and as the buckets arrive (a few at a time)
//! decode them, write them, split any that overflows and rehash them on
//! the thread pool, so that hashing overlaps the reads still in flight.
//! Buckets already at hand go to the pool in chunks, and a chunk's
//! buckets are written first and then hashed together, so the stems of
//! many buckets share the interleaved hasher's lanes. Then the upper trie
//! is rehashed along the touched paths. Nothing is written to disk here.
//! A touched bucket's bytes are taken out of the clean cache, or read
//! without entering it: the bucket is about to change, and its old bytes
//! are never served again.
//!
//! If a read or decode fails, every bucket is put back as it was and the
//! error is returned: a failed apply changes nothing.

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alloy_primitives::B256;
use rayon::prelude::*;
use ubt_spec::key::{sub_index, Stem};

use super::layers::OldValues;
use super::read::BlockAt;
use super::{Counters, Store};
use crate::bucket::codec::{self, Checksum};
use crate::bucket::Bucket;
use crate::error::{Result, StoreError};
use crate::format::Extent;
use crate::io::{ReadRequest, StoreFile};
use crate::prefix::Prefix;
use crate::summary::Summary;
use crate::upper::{BucketId, NodeId};

/// Where the time of the last [`Store::apply`] went, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyTiming {
    /// Writes applied.
    pub writes: u64,
    /// Buckets written.
    pub buckets_touched: u64,
    /// Buckets read from the data file.
    pub buckets_read: u64,
    /// Finding each write's bucket in the upper trie.
    pub locate_us: u64,
    /// From the first read issued to the last read completed (hashing runs
    /// meanwhile on the thread pool).
    pub read_us: u64,
    /// Writing and rehashing buckets after the last read completed.
    pub hash_tail_us: u64,
    /// Putting buckets back and rehashing the upper trie.
    pub upper_us: u64,
}

/// Writes to one bucket at or above which they are merged in one pass.
const MERGE_WRITES_MIN: usize = 32;

/// Writes in a batch at or above which their buckets are located on the
/// thread pool. Below it the pool's wake-up and sort cost more than the
/// walks they split: at 2,048, `sstore_seq` blocks of ~3,300 writes at
/// 10 M were ~10 % slower in alternating pairs (docs/benchmarks.md).
const PARALLEL_LOCATE_MIN: usize = 8_192;

/// One touched bucket's result.
struct Work {
    /// The bucket's pieces (one unless it split), each with its summary.
    pieces: Vec<(Bucket, Summary)>,
    /// Previous values, in write order.
    undo: Vec<(B256, Option<B256>)>,
    stems_before: usize,
    leaves_before: usize,
    /// Memory already counted as dirty (the bucket was in memory).
    memory_before: usize,
}

/// A touched bucket before processing.
enum Input {
    /// In memory already (changed, or new and empty).
    Ready(Box<Bucket>, usize),
    /// Encoded bytes to decode (a cache hit: their checksum verified).
    Bytes(Arc<[u8]>),
    /// To read.
    Read(Extent),
    /// Read: the read's own buffer and whether its checksum matched.
    Arrived(Vec<u8>, Checksum),
}

/// Reads whose buckets go to the pool together: fewer tasks, and their
/// stems share the hasher's lanes as a chunk of buckets at hand does.
const READ_BATCH: usize = 8;

/// What every task of one apply shares.
#[derive(Clone, Copy)]
struct TaskContext<'a> {
    targets: &'a [Target],
    groups: &'a [Group],
    ordered: &'a [(B256, Option<B256>)],
    capacity: usize,
    results: &'a [Mutex<Option<Result<Work>>>],
}

impl TaskContext<'_> {
    /// Writes every bucket of `tasks`, then hashes them together, and
    /// files each one's work (or error) under its group.
    fn process(self, tasks: Vec<(usize, Input)>) {
        let mut written = Vec::with_capacity(tasks.len());
        let mut written_indices = Vec::with_capacity(tasks.len());
        for (index, input) in tasks {
            let writes = &self.ordered[self.groups[index].1.clone()];
            let target = &self.targets[index];
            let outcome = match input {
                Input::Ready(bucket, memory) => Ok(write(*bucket, writes, memory, self.capacity)),
                // Cached bytes passed their checksum when cached.
                Input::Bytes(bytes) => {
                    decode_and_write(&bytes, target, writes, Checksum::Verified, self.capacity)
                }
                Input::Arrived(bytes, checked) => {
                    decode_and_write(&bytes, target, writes, checked, self.capacity)
                }
                Input::Read(_) => unreachable!("reads are issued, not processed"),
            };
            match outcome {
                Ok(bucket) => {
                    written.push(bucket);
                    written_indices.push(index);
                }
                Err(error) => self.file(index, Err(error)),
            }
        }
        for (index, work) in written_indices.into_iter().zip(finish(written)) {
            self.file(index, Ok(work));
        }
    }

    fn file(self, index: usize, result: Result<Work>) {
        *self.results[index]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(result);
    }
}

/// What a task needs to know about its bucket.
#[derive(Clone, Copy)]
struct Target {
    prefix: Prefix,
    crc: u32,
    extent: Option<Extent>,
}

/// A touched bucket with its writes applied, before its pieces are hashed.
struct Written {
    /// The bucket's pieces (one unless it split).
    pieces: Vec<Bucket>,
    undo: Vec<(B256, Option<B256>)>,
    stems_before: usize,
    leaves_before: usize,
    memory_before: usize,
}

/// Applies `writes` to `bucket` and splits it if it grows past `capacity`
/// encoded bytes; the pieces are hashed by [`finish`].
fn write(
    mut bucket: Bucket,
    writes: &[(B256, Option<B256>)],
    memory_before: usize,
    capacity: usize,
) -> Written {
    let stems_before = bucket.stem_count();
    let leaves_before = bucket.leaf_count();
    let undo = if writes.len() >= MERGE_WRITES_MIN {
        // One linear merge instead of an insertion per write: a large batch
        // into one bucket (a fresh database, a bulk load) stays linear.
        let mut sorted = writes.to_vec();
        sorted.sort_by_key(|(key, _)| *key); // stable: the last write of a key stays last
        let mut distinct: Vec<(B256, Option<B256>)> = Vec::with_capacity(sorted.len());
        for write in sorted {
            match distinct.last_mut() {
                Some(last) if last.0 == write.0 => *last = write,
                _ => distinct.push(write),
            }
        }
        bucket.merge_sorted(&distinct)
    } else {
        let mut undo = Vec::with_capacity(writes.len());
        for (key, value) in writes {
            let (stem, sub) = (Stem::of_key(key), sub_index(key));
            let old = match value {
                Some(value) => bucket.set(&stem, sub, *value),
                None => {
                    let old = bucket.get(&stem, sub);
                    bucket.remove(&stem, sub);
                    old
                }
            };
            undo.push((*key, old));
        }
        undo
    };
    Written {
        pieces: bucket.split_to_fit(capacity),
        undo,
        stems_before,
        leaves_before,
        memory_before,
    }
}

impl Written {
    /// Its work, its pieces paired in order with `summaries`.
    fn into_work(self, summaries: &mut impl Iterator<Item = Summary>) -> Work {
        Work {
            pieces: self
                .pieces
                .into_iter()
                .map(|piece| {
                    let summary = summaries
                        .next()
                        .unwrap_or_else(|| unreachable!("one summary per piece"));
                    (piece, summary)
                })
                .collect(),
            undo: self.undo,
            stems_before: self.stems_before,
            leaves_before: self.leaves_before,
            memory_before: self.memory_before,
        }
    }
}

/// Hashes the pieces of every written bucket (their stems in one batched
/// call, [`crate::bucket::summaries`]) into their works, in order.
fn finish(mut written: Vec<Written>) -> Vec<Work> {
    let mut pieces: Vec<&mut Bucket> = written
        .iter_mut()
        .flat_map(|w| w.pieces.iter_mut())
        .collect();
    let mut summaries = crate::bucket::summaries(&mut pieces).into_iter();
    drop(pieces);
    written
        .into_iter()
        .map(|w| w.into_work(&mut summaries))
        .collect()
}

/// Decodes then writes.
fn decode_and_write(
    bytes: &[u8],
    target: &Target,
    writes: &[(B256, Option<B256>)],
    checked: Checksum,
    capacity: usize,
) -> Result<Written> {
    let extent = target
        .extent
        .unwrap_or_else(|| unreachable!("only buckets with an extent are decoded"));
    let location = BlockAt(&extent);
    let bucket = codec::decode_with(bytes, &target.prefix, target.crc, &location, checked)?;
    Ok(write(bucket, writes, 0, capacity))
}

/// Whether a bucket's bytes read for an apply match their extent's
/// checksum. Checked on the calling thread as they arrive (on the pool, in
/// the decode, the overlay's warm and cold roots were 15-30 ms slower:
/// the calling thread then reaps and hands over reads faster than the
/// pool takes them), but not cached: the bucket is about to change, and
/// its old bytes are never served again.
fn checked_not_cached(bytes: &[u8], extent: Option<Extent>) -> Checksum {
    match extent {
        Some(extent) if codec::checksum_matches(bytes, extent.crc) => Checksum::Verified,
        _ => Checksum::Check,
    }
}

/// Writes to one bucket: the bucket and the range of its writes.
type Group = (BucketId, Range<usize>);

/// What the reads and the tasks of one apply produced.
struct Processed {
    /// Each group's work, or its error (`None`: its read never completed).
    results: Vec<Mutex<Option<Result<Work>>>>,
    bucket_reads: usize,
    read_bytes: u64,
    /// When the last read completed, if there were reads.
    last_read: Option<Instant>,
}

/// Issues the reads of the groups whose bucket is not at hand and processes
/// every group on the thread pool: those at hand at once (in chunks), the
/// others as their reads complete.
fn process_groups(
    data: &dyn StoreFile,
    inputs: Vec<Input>,
    targets: &[Target],
    groups: &[Group],
    ordered: &[(B256, Option<B256>)],
    capacity: usize,
) -> Processed {
    let results: Vec<Mutex<Option<Result<Work>>>> =
        (0..groups.len()).map(|_| Mutex::new(None)).collect();
    let mut requests = Vec::new();
    let mut request_groups = Vec::new();
    let mut last_read = None;
    let mut read_bytes = 0u64;
    rayon::scope(|scope| {
        let context = TaskContext {
            targets,
            groups,
            ordered,
            capacity,
            results: &results,
        };
        // Buckets already at hand go to the pool in chunks (one task per
        // bucket would cost more than a small bucket's work).
        let mut at_hand: Vec<(usize, Input)> = Vec::new();
        for (index, input) in inputs.into_iter().enumerate() {
            match input {
                Input::Read(extent) => {
                    requests.push(ReadRequest {
                        offset: extent.offset,
                        len: extent.byte_len(),
                    });
                    request_groups.push(index);
                }
                ready => at_hand.push((index, ready)),
            }
        }
        let chunk = at_hand
            .len()
            .div_ceil(rayon::current_num_threads() * 4)
            .max(1);
        let mut at_hand = at_hand.into_iter().peekable();
        while at_hand.peek().is_some() {
            let tasks: Vec<(usize, Input)> = at_hand.by_ref().take(chunk).collect();
            scope.spawn(move |_| context.process(tasks));
        }
        // Read buckets go to the pool READ_BATCH at a time. The read's own
        // buffer goes with it: not cached, it needs no shared copy.
        let mut arrived: Vec<(usize, Input)> = Vec::with_capacity(READ_BATCH);
        data.read_batch_each(&requests, &mut |request, result| {
            let index = request_groups[request];
            last_read = Some(Instant::now());
            match result {
                Ok(bytes) => {
                    read_bytes += bytes.len() as u64;
                    let checked = checked_not_cached(&bytes, targets[index].extent);
                    arrived.push((index, Input::Arrived(bytes, checked)));
                    if arrived.len() == READ_BATCH {
                        let tasks = std::mem::replace(&mut arrived, Vec::with_capacity(READ_BATCH));
                        scope.spawn(move |_| context.process(tasks));
                    }
                }
                Err(error) => context.file(index, Err(StoreError::io("reading buckets")(error))),
            }
        });
        if !arrived.is_empty() {
            scope.spawn(move |_| context.process(arrived));
        }
    });
    Processed {
        results,
        bucket_reads: requests.len(),
        read_bytes,
        last_read,
    }
}

/// Each group's work, and the first error if any group failed (its work
/// is then `None`).
fn collect_works(
    results: Vec<Mutex<Option<Result<Work>>>>,
) -> (Vec<Option<Work>>, Option<StoreError>) {
    let mut works = Vec::with_capacity(results.len());
    let mut first_error = None;
    for result in results {
        match result.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(work)) => works.push(Some(work)),
            Some(Err(error)) => {
                first_error.get_or_insert(error);
                works.push(None);
            }
            None => {
                first_error.get_or_insert(StoreError::io("reading buckets")(
                    std::io::Error::other("a bucket read never completed"),
                ));
                works.push(None);
            }
        }
    }
    (works, first_error)
}

impl Store {
    /// Applies sets (`Some`) and deletes (`None`) in order to the tip.
    /// Used by reverts and bulk loads. A failed load changes nothing.
    pub(crate) fn apply_ops(&mut self, writes: &[(B256, Option<B256>)]) -> Result<()> {
        self.apply_ops_inner(writes, false).map(drop)
    }

    /// [`Store::apply_ops`], returning the value each written key had
    /// before (a layer's old values: [`Store::apply`] and WAL replay).
    /// The map is built on one pool thread while another puts the buckets
    /// back and rehashes the upper trie (built afterwards on the calling
    /// thread, it was ~2.5 ms of a ~27 ms root at 40,000 writes, the pool
    /// idle meanwhile).
    pub(crate) fn apply_ops_keeping_old(
        &mut self,
        writes: &[(B256, Option<B256>)],
    ) -> Result<OldValues> {
        self.apply_ops_inner(writes, true)
            .map(|old| old.unwrap_or_default())
    }

    /// Applies `writes`; with `keep_old`, also returns each written key's
    /// value before.
    fn apply_ops_inner(
        &mut self,
        writes: &[(B256, Option<B256>)],
        keep_old: bool,
    ) -> Result<Option<OldValues>> {
        if writes.is_empty() {
            return Ok(keep_old.then(OldValues::default));
        }
        let started = Instant::now();
        let (ordered, groups) = self.group_by_bucket(writes);
        let (inputs, targets) = self.take_inputs(&groups);
        let located_at = Instant::now();
        let processed = process_groups(
            self.tree.data.as_ref(),
            inputs,
            &targets,
            &groups,
            &ordered,
            self.tree.bucket_bytes,
        );
        let hashed_at = Instant::now();
        let bucket_reads = processed.bucket_reads as u64;
        Counters::add(&self.counters.bucket_reads, bucket_reads);
        Counters::add(&self.counters.bucket_read_bytes, processed.read_bytes);
        let (works, first_error) = collect_works(processed.results);
        if let Some(error) = first_error {
            self.roll_back_failed_apply(&groups, works);
            return Err(error);
        }
        let buckets_touched = works.len() as u64;
        // Every group has its work here (a failure returned above).
        let mut works: Vec<Work> = works
            .into_iter()
            .map(|work| work.unwrap_or_else(|| unreachable!("an error returned above")))
            .collect();
        // A key's writes all fall in its bucket's group, in write order,
        // so each group's undo list holds the key's value before first.
        let undos: Vec<Vec<(B256, Option<B256>)>> = works
            .iter_mut()
            .map(|work| std::mem::take(&mut work.undo))
            .collect();
        let put_back = |store: &mut Store| {
            // The prefixes are the ones taken with the inputs: a split
            // only moves its own bucket.
            let prefixes: Vec<Prefix> = targets.iter().map(|target| target.prefix).collect();
            let leaves = store.tree.trie.mark_paths(&prefixes);
            for ((((bucket, _), work), leaf), prefix) in
                groups.iter().zip(works).zip(leaves).zip(prefixes)
            {
                store.integrate(*bucket, leaf, prefix, work);
            }
            store.tree.root = store.tree.trie.rehash().hash;
        };
        let old = if keep_old {
            let (old, ()) = rayon::join(|| super::layers::first_old(undos), || put_back(self));
            Some(old)
        } else {
            drop(undos);
            put_back(self);
            None
        };
        let micros = |from: Instant, to: Instant| {
            u64::try_from(to.duration_since(from).as_micros()).unwrap_or(u64::MAX)
        };
        let last_read = processed
            .last_read
            .map_or(located_at, |t| t.max(located_at));
        self.last_apply = ApplyTiming {
            writes: writes.len() as u64,
            buckets_touched,
            buckets_read: bucket_reads,
            locate_us: micros(started, located_at),
            read_us: micros(located_at, last_read),
            hash_tail_us: micros(last_read, hashed_at),
            upper_us: micros(hashed_at, Instant::now()),
        };
        Ok(old)
    }

    /// The writes sorted by bucket (in write order within a bucket) and
    /// their groups, one per bucket.
    fn group_by_bucket(
        &self,
        writes: &[(B256, Option<B256>)],
    ) -> (Vec<(B256, Option<B256>)>, Vec<Group>) {
        // A batch is one block or one replayed WAL layer (a record is at
        // most 1 GiB, 32 bytes or more per write), so its indices fit a u32.
        debug_assert!(u32::try_from(writes.len()).is_ok());
        #[allow(clippy::cast_possible_truncation)]
        let locate = |(index, (key, _)): (usize, &(B256, Option<B256>))| {
            (self.tree.trie.locate(&Stem::of_key(key)).1, index as u32)
        };
        // Each walk down the upper trie waits on memory; a large batch
        // walks on every core (the pool is idle until the buckets go to it).
        let located: Vec<(BucketId, u32)> = if writes.len() >= PARALLEL_LOCATE_MIN {
            let mut located: Vec<(BucketId, u32)> =
                writes.par_iter().enumerate().map(locate).collect();
            located.par_sort_unstable();
            located
        } else {
            let mut located: Vec<(BucketId, u32)> = writes.iter().enumerate().map(locate).collect();
            located.sort_unstable();
            located
        };
        let ordered = located.iter().map(|(_, i)| writes[*i as usize]).collect();
        let mut groups: Vec<Group> = Vec::new();
        for (position, (bucket, _)) in located.iter().enumerate() {
            match groups.last_mut() {
                Some((last, range)) if last == bucket => range.end = position + 1,
                _ => groups.push((*bucket, position..position + 1)),
            }
        }
        (ordered, groups)
    }

    /// Takes each group's bucket out of the tip: in memory, cached bytes,
    /// or an extent to read (after any prefetch of it has landed).
    fn take_inputs(&mut self, groups: &[Group]) -> (Vec<Input>, Vec<Target>) {
        // Buckets a prefetch is still reading: wait for them, not read twice.
        let on_disk: Vec<BucketId> = groups
            .iter()
            .map(|(bucket, _)| *bucket)
            .filter(|&b| self.tree.buckets[b as usize].dirty.is_none())
            .collect();
        self.tree.prefetcher.inflight.wait_for(&on_disk);
        let mut inputs: Vec<Input> = Vec::with_capacity(groups.len());
        let mut targets: Vec<Target> = Vec::with_capacity(groups.len());
        for (bucket, _) in groups {
            let prefix = self.tree.buckets.prefix(*bucket);
            let slot = &mut self.tree.buckets[*bucket as usize];
            targets.push(Target {
                prefix,
                crc: slot.extent().map_or(0, |e| e.crc),
                extent: slot.extent(),
            });
            inputs.push(match (slot.dirty.take(), slot.extent()) {
                (Some(contents), _) => {
                    let memory = contents.memory_bytes();
                    Input::Ready(contents, memory)
                }
                // Taken out of the cache: the bucket is about to change, and
                // its old bytes are then never served again.
                (None, Some(extent)) => match self.tree.cache.take(*bucket, &extent) {
                    Some(bytes) => {
                        Counters::add(&self.counters.cache_hits, 1);
                        Input::Bytes(bytes)
                    }
                    None => Input::Read(extent),
                },
                (None, None) => Input::Ready(Box::new(Bucket::new(prefix)), 0),
            });
        }
        (inputs, targets)
    }

    /// After a failed load: buckets that were in memory get their writes
    /// undone and go back (split or not: splitting changes no content);
    /// buckets loaded for this apply are dropped.
    fn roll_back_failed_apply(&mut self, groups: &[Group], works: Vec<Option<Work>>) {
        for ((bucket, _), work) in groups.iter().zip(works) {
            let Some(mut work) = work else { continue };
            let was_in_memory =
                work.memory_before > 0 || self.tree.buckets[*bucket as usize].extent().is_none();
            if !was_in_memory {
                continue;
            }
            for (key, old) in work.undo.iter().rev() {
                let stem = Stem::of_key(key);
                let Some((piece, _)) = work
                    .pieces
                    .iter_mut()
                    .find(|(p, _)| p.prefix().contains(&stem))
                else {
                    continue;
                };
                match old {
                    Some(value) => {
                        piece.set(&stem, sub_index(key), *value);
                    }
                    None => piece.remove(&stem, sub_index(key)),
                }
            }
            for (piece, summary) in &mut work.pieces {
                *summary = piece.summary();
            }
            work.undo.clear();
            work.stems_before = work.pieces.iter().map(|(p, _)| p.stem_count()).sum();
            work.leaves_before = work.pieces.iter().map(|(p, _)| p.leaf_count()).sum();
            let prefix = self.tree.buckets.prefix(*bucket);
            let leaf = self.tree.trie.mark_path(&prefix);
            self.integrate(*bucket, leaf, prefix, work);
        }
        self.tree.root = self.tree.trie.rehash().hash;
    }

    /// Puts a processed bucket (or its split pieces) back into the table and
    /// the upper trie. `leaf` is the bucket's leaf, `prefix` its prefix,
    /// its path already marked stale
    /// ([`crate::upper::UpperTrie::mark_paths`]).
    fn integrate(&mut self, bucket: BucketId, leaf: NodeId, prefix: Prefix, work: Work) {
        let Work {
            pieces,
            undo: _,
            stems_before,
            leaves_before,
            memory_before,
        } = work;
        let stems_after: usize = pieces.iter().map(|(b, _)| b.stem_count()).sum();
        let leaves_after: usize = pieces.iter().map(|(b, _)| b.leaf_count()).sum();
        let memory_after: usize = pieces.iter().map(|(b, _)| b.memory_bytes()).sum();
        self.tree.stem_count = self.tree.stem_count + stems_after as u64 - stems_before as u64;
        self.tree.leaf_count = self.tree.leaf_count + leaves_after as u64 - leaves_before as u64;
        self.tree.dirty_bytes = self.tree.dirty_bytes + memory_after - memory_before;
        self.tree.cache.remove(bucket);
        let mut pieces = pieces;
        if pieces.len() == 1 {
            let Some((piece, summary)) = pieces.pop() else {
                unreachable!("one piece")
            };
            debug_assert_eq!(piece.prefix(), &prefix);
            self.tree.trie.set_leaf_summary(leaf, summary);
            self.tree.buckets[bucket as usize].dirty = Some(Box::new(piece));
            return;
        }
        // Split: the bucket's old extent belongs to its old prefix.
        if let Some(old) = self.tree.buckets[bucket as usize].set_extent(None) {
            self.tree.released.push(old.blocks());
        }
        let mut ids = Vec::with_capacity(pieces.len());
        let mut plan = Vec::with_capacity(pieces.len());
        for (index, (piece, summary)) in pieces.iter().enumerate() {
            let id = if index == 0 {
                bucket
            } else {
                self.tree.buckets.push(piece.prefix(), None)
            };
            ids.push(id);
            plan.push((*piece.prefix(), id, *summary));
        }
        self.tree.trie.replace_leaf(leaf, &prefix, &plan);
        for (id, (piece, _)) in ids.into_iter().zip(pieces) {
            self.tree.buckets.set_prefix(id, piece.prefix());
            self.tree.buckets[id as usize].dirty = Some(Box::new(piece));
        }
    }

    /// Where the time of the last apply went.
    pub fn last_apply_timing(&self) -> ApplyTiming {
        self.last_apply
    }
}

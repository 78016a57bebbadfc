//! Prefetch: start reading the buckets (or, for account-level reads on a
//! database with a flat index, the flat leaves) of keys an executor is
//! about to touch, so that `apply` and reads find them in the cache. Hints go to one
//! background worker that issues each hint's reads as one batch (deep queue
//! through io_uring or the pread pool) and caches what arrives; `apply`
//! waits for a bucket still in flight rather than reading it a second time.

use alloy_primitives::map::HashMap;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};

use alloy_primitives::B256;
use ubt_spec::key::Stem;

use super::{Counters, Store};
use crate::cache::{BucketCache, CacheKey};
use crate::flat::index::Located;
use crate::flat::key::FlatKey;
use crate::flat::route::Route;
use crate::format::Extent;
use crate::io::coalesce;
use crate::io::{ReadRequest, StoreFile};

/// Buckets and flat leaves being read by the worker.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    buckets: Mutex<HashMap<CacheKey, Extent>>,
    arrived: Condvar,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Extent>> {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True while the worker is reading `bucket`.
    pub(crate) fn contains(&self, bucket: impl Into<CacheKey>) -> bool {
        self.lock().contains_key(&bucket.into())
    }

    /// Waits until none of `buckets` is in flight.
    pub(crate) fn wait_for<K: Into<CacheKey> + Copy>(&self, buckets: &[K]) {
        let mut inflight = self.lock();
        while buckets.iter().any(|b| inflight.contains_key(&(*b).into())) {
            inflight = self
                .arrived
                .wait(inflight)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// One hint: buckets or leaves to read.
type Batch = Vec<(CacheKey, Extent)>;

/// The background worker.
#[derive(Debug)]
pub(crate) struct Prefetcher {
    sender: Mutex<Sender<Batch>>,
    pub(crate) inflight: Arc<InFlight>,
}

impl Prefetcher {
    /// Starts the worker for `data`, caching into `cache`.
    /// Reads it issues count in `counters` like any other bucket read.
    pub(crate) fn start(
        data: Arc<dyn StoreFile>,
        cache: Arc<BucketCache>,
        counters: Arc<Counters>,
    ) -> Prefetcher {
        let (sender, receiver) = channel::<Batch>();
        let inflight = Arc::new(InFlight::default());
        let worker_inflight = Arc::clone(&inflight);
        let spawned = std::thread::Builder::new()
            .name("ubt-prefetch".into())
            .spawn(move || {
                while let Ok(mut batch) = receiver.recv() {
                    // Hints that queued up while the last batch was read
                    // go out together: one deeper queue.
                    while let Ok(more) = receiver.try_recv() {
                        batch.extend(more);
                    }
                    // Adjacent blocks (a leaf's readahead run) go out as
                    // one request.
                    batch.sort_unstable_by_key(|(_, at)| at.offset);
                    let extents: Vec<Extent> = batch.iter().map(|(_, at)| *at).collect();
                    let runs = coalesce::adjacent_runs(&extents);
                    let requests: Vec<ReadRequest> = runs
                        .iter()
                        .map(|run| coalesce::run_request(&extents[run.clone()]))
                        .collect();
                    data.read_batch_each(&requests, &mut |index, result| {
                        if let Ok(bytes) = &result {
                            Counters::add(&counters.bucket_reads, 1);
                            Counters::add(&counters.bucket_read_bytes, bytes.len() as u64);
                        }
                        let start = requests[index].offset;
                        for &(key, at) in &batch[runs[index].clone()] {
                            if let Ok(bytes) = &result {
                                let piece = coalesce::piece(bytes, start, &at);
                                if let Some(piece) = piece.filter(|p| cacheable(key, &at, p)) {
                                    cache.insert(key, at, Arc::from(piece));
                                }
                            }
                            // A failed or damaged read is simply not cached:
                            // the reader reads it again and reports the error.
                            worker_inflight.lock().remove(&key);
                        }
                        worker_inflight.arrived.notify_all();
                    });
                }
            });
        if spawned.is_err() {
            // Without a worker, hints are dropped (the channel's receiver is gone).
        }
        Prefetcher {
            sender: Mutex::new(sender),
            inflight,
        }
    }

    /// Hands `batch` to the worker (nothing when empty); returns how many
    /// reads it holds.
    fn send(&self, batch: Batch) -> usize {
        let started = batch.len();
        if started == 0 {
            return 0;
        }
        {
            let mut inflight = self.inflight.lock();
            for (bucket, at) in &batch {
                inflight.insert(*bucket, *at);
            }
        }
        let sender = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        if sender.send(batch.clone()).is_err() {
            let mut inflight = self.inflight.lock();
            for (bucket, _) in &batch {
                inflight.remove(bucket);
            }
            self.inflight.arrived.notify_all();
            return 0;
        }
        started
    }
}

/// Whether prefetched bytes may go to the cache: a flat leaf only with the
/// checksum its extent gives (readers trust cached leaves; buckets are
/// checked when decoded).
fn cacheable(key: CacheKey, at: &Extent, bytes: &[u8]) -> bool {
    match key {
        // Every cached bucket passed its checksum (see `read::cache_if_checked`).
        CacheKey::Bucket(_) => crate::bucket::codec::checksum_matches(bytes, at.crc),
        CacheKey::FlatLeaf(_) => {
            bytes.len() >= 4
                && crate::format::checksum(&bytes[4..]) == at.crc
                && u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) == at.crc
        }
    }
}

impl Store {
    /// Hints that `keys` will be read or written soon: their buckets that
    /// are neither in memory nor cached are read in the background, as one
    /// batch. Returns how many reads were started. Never blocks on I/O.
    pub fn prefetch(&self, keys: &[B256]) -> usize {
        let mut batch: Batch = Vec::new();
        let mut seen: alloy_primitives::map::HashSet<_> = alloy_primitives::map::HashSet::default();
        let inflight = self.tree.prefetcher.inflight.lock();
        for key in keys {
            let (_, bucket) = self.tree.trie.locate(&Stem::of_key(key));
            let slot = &self.tree.buckets[bucket as usize];
            let Some(at) = slot.extent() else { continue };
            let key = CacheKey::Bucket(bucket);
            if slot.dirty.is_some()
                || !seen.insert(key)
                || inflight.contains_key(&key)
                || self.tree.cache.contains(key, &at)
            {
                continue;
            }
            batch.push((key, at));
        }
        drop(inflight);
        self.tree.prefetcher.send(batch)
    }

    /// Hints that the values at tree keys `keys` of the account at `owner`
    /// will be read soon: on a database with a flat index, the leaves
    /// holding them that are not cached are read in the background as one
    /// batch (otherwise their buckets, as [`Store::prefetch`]; also the
    /// buckets of keys whose stem fills a leaf by itself, which reads take
    /// from the tree: ARCHITECTURE.md, "Read locality"). Returns
    /// how many reads were started. Never blocks on I/O.
    pub fn prefetch_owned(&self, owner: &alloy_primitives::Address, keys: &[B256]) -> usize {
        let Some(flat) = &self.tree.flat else {
            return self.prefetch(keys);
        };
        let leaves = flat.directory().leaves();
        let mut batch: Batch = Vec::new();
        let mut queued: alloy_primitives::map::HashSet<_> =
            alloy_primitives::map::HashSet::default();
        let mut dense: Vec<B256> = Vec::new();
        let inflight = self.tree.prefetcher.inflight.lock();
        for key in keys {
            let position = match flat.route(&FlatKey::new(owner, key)) {
                Route::Index(Located::Leaf(position)) => position,
                Route::Tree => {
                    // Read from its bucket, as `get_owned` will.
                    dense.push(*key);
                    continue;
                }
                // Changed in memory, or an empty index: nothing to read.
                Route::Index(_) => continue,
            };
            let at = leaves[position].extent;
            let cache_key = CacheKey::FlatLeaf(at.offset);
            if queued.contains(&position)
                || inflight.contains_key(&cache_key)
                || self.tree.cache.contains(cache_key, &at)
            {
                continue;
            }
            // The leaf with its readahead run, as a read would fetch it.
            for neighbour in flat.readahead_run(position, owner) {
                let at = leaves[neighbour].extent;
                let key = CacheKey::FlatLeaf(at.offset);
                if queued.insert(neighbour)
                    && !inflight.contains_key(&key)
                    && !self.tree.cache.contains(key, &at)
                {
                    batch.push((key, at));
                }
            }
        }
        drop(inflight);
        let started = self.tree.prefetcher.send(batch);
        if dense.is_empty() {
            started
        } else {
            started + self.prefetch(&dense)
        }
    }
}

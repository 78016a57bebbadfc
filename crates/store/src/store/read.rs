//! Reads: point lookups, batched lookups, and fetching buckets for writes.
//! A stem's bucket is found in the resident upper trie; a bucket not held
//! in memory costs one read of its extent (usually one 4 KiB block), and a
//! batch issues all its reads at once through the directory's backend.

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::key::{sub_index, Stem};

use super::{Counters, Store};
use crate::bucket::codec::{self, Checksum};
use crate::bucket::Bucket;
use crate::cache::BucketCache;
use crate::error::{Result, StoreError};
use crate::format::Extent;
use crate::io::ReadRequest;
use crate::upper::BucketId;

/// Where a bucket's contents come from for a read.
pub(super) enum Source<'a> {
    /// No stem: every lookup is absent.
    Empty,
    /// Changed since the last checkpoint: in memory.
    Dirty(&'a Bucket),
    /// On disk (maybe cached).
    Disk(Extent),
}

pub(crate) fn block_location(extent: &Extent) -> String {
    BlockAt(extent).to_string()
}

/// Caches `bytes` read for `bucket` at `at` if their checksum matches, and
/// says whether it did. Every bucket in the cache passed this check (or
/// was encoded by the store itself), so lookups on cached bytes skip
/// computing it again ([`Checksum::Verified`]); damaged bytes are never
/// cached, and the reader's full check reports them.
pub(crate) fn cache_if_checked(
    cache: &BucketCache,
    bucket: BucketId,
    at: Extent,
    bytes: &Arc<[u8]>,
) -> Checksum {
    if codec::checksum_matches(bytes, at.crc) {
        cache.insert(bucket, at, Arc::clone(bytes));
        Checksum::Verified
    } else {
        Checksum::Check
    }
}

/// A data-file extent as an error location, formatted only on error.
pub(crate) struct BlockAt<'a>(pub(crate) &'a Extent);

impl std::fmt::Display for BlockAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ubt.data offset {} (+{} bytes)",
            self.0.offset, self.0.len
        )
    }
}

impl Store {
    pub(super) fn source(&self, bucket: BucketId) -> Source<'_> {
        let slot = &self.tree.buckets[bucket as usize];
        match (&slot.dirty, slot.extent()) {
            (Some(bucket), _) => Source::Dirty(bucket),
            (None, Some(at)) => Source::Disk(at),
            (None, None) => Source::Empty,
        }
    }

    /// The value at `key`, if present (including writes applied but not
    /// yet committed).
    pub fn get(&self, key: &B256) -> Result<Option<B256>> {
        self.check_readable()?;
        let stem = Stem::of_key(key);
        let (_, bucket) = self.tree.trie.locate(&stem);
        match self.source(bucket) {
            Source::Empty => Ok(None),
            Source::Dirty(contents) => Ok(contents.get(&stem, sub_index(key))),
            Source::Disk(at) => {
                let (bytes, checked) = match self.cached(bucket, &at) {
                    Some(bytes) => {
                        Counters::add(&self.counters.cache_hits, 1);
                        (bytes, Checksum::Verified)
                    }
                    None => self.read_extent(bucket, &at)?,
                };
                let prefix = self.tree.buckets.prefix(bucket);
                codec::lookup_with(
                    &bytes,
                    &prefix,
                    at.crc,
                    &BlockAt(&at),
                    (&stem, sub_index(key)),
                    checked,
                )
            }
        }
    }

    /// The cached bytes of `bucket` at `at`; when the prefetch worker is
    /// reading it, waits for that read instead of issuing a second one.
    fn cached(&self, bucket: BucketId, at: &Extent) -> Option<Arc<[u8]>> {
        if let Some(bytes) = self.tree.cache.get(bucket, at) {
            return Some(bytes);
        }
        if self.tree.prefetcher.inflight.contains(bucket) {
            self.tree.prefetcher.inflight.wait_for(&[bucket]);
            return self.tree.cache.get(bucket, at);
        }
        None
    }

    /// Reads one bucket's extent and caches it if its checksum matches;
    /// says whether it did.
    fn read_extent(&self, bucket: BucketId, at: &Extent) -> Result<(Arc<[u8]>, Checksum)> {
        let bytes = self
            .tree
            .data
            .read_shared(at.offset, at.byte_len())
            .map_err(StoreError::io("reading a bucket"))?;
        Counters::add(&self.counters.bucket_reads, 1);
        Counters::add(&self.counters.bucket_read_bytes, bytes.len() as u64);
        let checked = cache_if_checked(&self.tree.cache, bucket, *at, &bytes);
        Ok((bytes, checked))
    }

    /// The encoded bytes of every listed on-disk bucket (deduplicated by
    /// the caller), from the cache or from one batch of concurrent reads,
    /// each with whether its checksum is already verified. Results are in
    /// the order of `wanted`.
    pub(crate) fn fetch(
        &self,
        wanted: &[(BucketId, Extent)],
    ) -> Result<Vec<(Arc<[u8]>, Checksum)>> {
        let mut out: Vec<Option<(Arc<[u8]>, Checksum)>> = Vec::with_capacity(wanted.len());
        let mut requests = Vec::new();
        let mut request_slots = Vec::new();
        for (position, (bucket, at)) in wanted.iter().enumerate() {
            match self.cached(*bucket, at) {
                Some(bytes) => {
                    Counters::add(&self.counters.cache_hits, 1);
                    out.push(Some((bytes, Checksum::Verified)));
                }
                None => {
                    out.push(None);
                    requests.push(ReadRequest {
                        offset: at.offset,
                        len: at.byte_len(),
                    });
                    request_slots.push(position);
                }
            }
        }
        let mut first_error: Option<std::io::Error> = None;
        let mut read_bytes = 0u64;
        self.tree
            .data
            .read_batch_each(&requests, &mut |index, result| match result {
                Ok(bytes) => {
                    let position = request_slots[index];
                    let (bucket, at) = wanted[position];
                    read_bytes += bytes.len() as u64;
                    let bytes: Arc<[u8]> = Arc::from(bytes);
                    let checked = cache_if_checked(&self.tree.cache, bucket, at, &bytes);
                    out[position] = Some((bytes, checked));
                }
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            });
        Counters::add(&self.counters.bucket_reads, requests.len() as u64);
        Counters::add(&self.counters.bucket_read_bytes, read_bytes);
        if let Some(error) = first_error {
            return Err(StoreError::io("reading buckets")(error));
        }
        out.into_iter()
            .map(|bytes| {
                bytes.ok_or_else(|| {
                    StoreError::io("reading buckets")(std::io::Error::other("read never completed"))
                })
            })
            .collect()
    }

    /// The values at `keys`, in order. Every bucket not in memory is read
    /// once, all reads of the batch in flight together.
    pub fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>> {
        self.check_readable()?;
        let located: Vec<BucketId> = keys
            .iter()
            .map(|key| self.tree.trie.locate(&Stem::of_key(key)).1)
            .collect();
        let mut on_disk: Vec<(BucketId, Extent)> = located
            .iter()
            .filter_map(|&bucket| match self.source(bucket) {
                Source::Disk(at) => Some((bucket, at)),
                _ => None,
            })
            .collect();
        on_disk.sort_unstable_by_key(|(bucket, _)| *bucket);
        on_disk.dedup_by_key(|(bucket, _)| *bucket);
        let fetched = self.fetch(&on_disk)?;
        let mut out = Vec::with_capacity(keys.len());
        for (key, &bucket) in keys.iter().zip(&located) {
            let stem = Stem::of_key(key);
            let value = match self.source(bucket) {
                Source::Empty => None,
                Source::Dirty(contents) => contents.get(&stem, sub_index(key)),
                Source::Disk(at) => {
                    let position =
                        on_disk
                            .binary_search_by_key(&bucket, |(b, _)| *b)
                            .map_err(|_| {
                                StoreError::io("reading buckets")(std::io::Error::other(
                                    "bucket not fetched",
                                ))
                            })?;
                    let prefix = self.tree.buckets.prefix(bucket);
                    let (bytes, checked) = &fetched[position];
                    codec::lookup_with(
                        bytes,
                        &prefix,
                        at.crc,
                        &BlockAt(&at),
                        (&stem, sub_index(key)),
                        *checked,
                    )?
                }
            };
            out.push(value);
        }
        Ok(out)
    }

    /// Decodes a fetched bucket.
    pub(crate) fn decode_fetched(
        &self,
        bucket: BucketId,
        at: &Extent,
        bytes: &[u8],
    ) -> Result<Bucket> {
        let prefix = self.tree.buckets.prefix(bucket);
        codec::decode(bytes, &prefix, at.crc, &BlockAt(at))
    }
}

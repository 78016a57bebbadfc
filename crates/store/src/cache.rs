//! The clean block cache: encoded bucket and flat-leaf bytes as read from
//! (or written to) disk, bounded in bytes, evicted by the CLOCK algorithm.
//! Entries are keyed by bucket (or flat leaf) and carry the [`Extent`]
//! they were read at, so a bucket that moved is never served stale. One
//! budget serves both: a flat leaf holds ~100 values of one account, a
//! bucket ~40 unrelated stems.

use alloy_primitives::map::HashMap;
use std::sync::{Arc, Mutex};

use crate::format::Extent;
use crate::upper::BucketId;

/// What a cache entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKey {
    /// A bucket, by id.
    Bucket(BucketId),
    /// A flat leaf, by the offset it is written at (a leaf is never
    /// rewritten in place: a changed leaf has a new offset).
    FlatLeaf(u64),
}

impl From<BucketId> for CacheKey {
    fn from(bucket: BucketId) -> CacheKey {
        CacheKey::Bucket(bucket)
    }
}

#[derive(Debug)]
struct Slot {
    bucket: CacheKey,
    at: Extent,
    bytes: Arc<[u8]>,
    referenced: bool,
}

#[derive(Debug, Default)]
struct Inner {
    slots: Vec<Slot>,
    index: HashMap<CacheKey, usize>,
    hand: usize,
    bytes: usize,
}

/// See the module documentation. Safe to share between threads.
#[derive(Debug)]
pub struct BucketCache {
    inner: Mutex<Inner>,
    capacity_bytes: usize,
}

impl BucketCache {
    /// A cache holding at most `capacity_bytes` of bucket bytes.
    pub fn new(capacity_bytes: usize) -> Self {
        BucketCache {
            inner: Mutex::new(Inner::default()),
            capacity_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes of `bucket` if cached at `at`.
    pub fn get(&self, bucket: impl Into<CacheKey>, at: &Extent) -> Option<Arc<[u8]>> {
        let bucket = bucket.into();
        let mut inner = self.lock();
        let position = *inner.index.get(&bucket)?;
        let slot = &mut inner.slots[position];
        if slot.at != *at {
            return None;
        }
        slot.referenced = true;
        Some(slot.bytes.clone())
    }

    /// Takes the bytes of `bucket` out of the cache if cached at `at` (a
    /// bucket about to change: its bytes are decoded once and never
    /// served again).
    pub fn take(&self, bucket: impl Into<CacheKey>, at: &Extent) -> Option<Arc<[u8]>> {
        let bucket = bucket.into();
        let mut inner = self.lock();
        let position = *inner.index.get(&bucket)?;
        if inner.slots[position].at != *at {
            return None;
        }
        inner.index.remove(&bucket);
        Some(Self::remove_at(&mut inner, position).bytes)
    }

    /// Whether `bucket` is cached at `at` (does not count as a use).
    pub fn contains(&self, bucket: impl Into<CacheKey>, at: &Extent) -> bool {
        let bucket = bucket.into();
        let inner = self.lock();
        inner
            .index
            .get(&bucket)
            .is_some_and(|&position| inner.slots[position].at == *at)
    }

    /// Caches `bytes` of `bucket` read at `at`, evicting as needed.
    pub fn insert(&self, bucket: impl Into<CacheKey>, at: Extent, bytes: Arc<[u8]>) {
        let bucket = bucket.into();
        if bytes.len() > self.capacity_bytes {
            return;
        }
        let mut inner = self.lock();
        if let Some(&position) = inner.index.get(&bucket) {
            let old = std::mem::replace(
                &mut inner.slots[position],
                Slot {
                    bucket,
                    at,
                    bytes: bytes.clone(),
                    referenced: true,
                },
            );
            inner.bytes = inner.bytes - old.bytes.len() + bytes.len();
        } else {
            inner.bytes += bytes.len();
            let position = inner.slots.len();
            inner.slots.push(Slot {
                bucket,
                at,
                bytes,
                referenced: true,
            });
            inner.index.insert(bucket, position);
        }
        while inner.bytes > self.capacity_bytes && !inner.slots.is_empty() {
            Self::evict_one(&mut inner);
        }
    }

    /// Drops `bucket` from the cache.
    pub fn remove(&self, bucket: impl Into<CacheKey>) {
        let bucket = bucket.into();
        let mut inner = self.lock();
        if let Some(position) = inner.index.remove(&bucket) {
            Self::remove_at(&mut inner, position);
        }
    }

    fn evict_one(inner: &mut Inner) {
        loop {
            if inner.hand >= inner.slots.len() {
                inner.hand = 0;
            }
            let hand = inner.hand;
            if inner.slots[hand].referenced {
                inner.slots[hand].referenced = false;
                inner.hand += 1;
                continue;
            }
            let bucket = inner.slots[hand].bucket;
            inner.index.remove(&bucket);
            Self::remove_at(inner, hand);
            return;
        }
    }

    fn remove_at(inner: &mut Inner, position: usize) -> Slot {
        let removed = inner.slots.swap_remove(position);
        inner.bytes -= removed.bytes.len();
        if let Some(moved) = inner.slots.get(position) {
            inner.index.insert(moved.bucket, position);
        }
        removed
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Buckets held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().slots.len()
    }

    /// Drops everything.
    pub fn clear(&self) {
        let mut inner = self.lock();
        *inner = Inner::default();
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;

    /// The extent of a 1,000-byte entry in block `block`.
    fn at(block: u64) -> Extent {
        Extent {
            offset: block * 4096,
            len: 1000,
            crc: 0,
        }
    }

    #[test]
    fn stays_within_capacity_and_checks_locations() {
        let cache = BucketCache::new(10_000);
        for i in 0..100u32 {
            cache.insert(i, at(u64::from(i)), Arc::from(vec![i as u8; 1000]));
            assert!(cache.bytes() <= 10_000);
            assert_eq!(cache.get(i, &at(u64::from(i))).map(|b| b[0]), Some(i as u8));
        }
        assert!(cache.get(99, &at(7)).is_none(), "moved bucket served stale");
        cache.remove(99);
        assert!(cache.get(99, &at(99)).is_none());
        assert!(cache.len() <= 10);
    }

    #[test]
    fn take_hands_over_matching_bytes_and_forgets_them() {
        let cache = BucketCache::new(10_000);
        for i in 0..3u32 {
            cache.insert(i, at(u64::from(i)), Arc::from(vec![i as u8; 1000]));
        }
        assert!(cache.take(1, &at(5)).is_none(), "another extent's bytes");
        assert_eq!(cache.bytes(), 3000, "a refused take removes nothing");
        let taken = cache.take(1, &at(1)).unwrap();
        assert_eq!((taken.len(), taken[0]), (1000, 1));
        assert_eq!(Arc::strong_count(&taken), 1, "the cache keeps no reference");
        assert_eq!((cache.len(), cache.bytes()), (2, 2000));
        assert!(cache.get(1, &at(1)).is_none());
        // The slot moved into the taken one's place is still found.
        assert_eq!(cache.get(2, &at(2)).map(|b| b[0]), Some(2));
        assert_eq!(cache.get(0, &at(0)).map(|b| b[0]), Some(0));
    }
}

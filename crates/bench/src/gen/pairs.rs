//! N random 32-byte keys and values, produced in ascending key order in
//! bounded memory and readable by index in O(1): the data set of
//! `ubt bench store` at any N.
//!
//! # How
//!
//! Entry `i` is eight draws of one SplitMix64 stream, draws `8i..8i+8`
//! (the stream's state after `n` draws is `seed' + n * GAMMA`, so any
//! draw is computed directly): the first four are the key, the last four
//! the value ([`SplitMix64::fill`]'s little-endian bytes). The key space
//! is cut into `2^b` partitions by the key's top `b` bits, and the
//! entries into `2^b` consecutive index ranges of equal size (the first
//! `N mod 2^b` one entry larger); entry `i` gets the top bits of its
//! range's partition. `b` is the largest that leaves at least
//! [`MIN_PARTITION_ENTRIES`] entries per partition, so a partition holds
//! 2,048-4,095 entries (fewer only when N is below 2,048).
//!
//! Sorting is then local: the sorted stream generates one batch of
//! partitions at a time (in parallel), sorts each partition and hands
//! the entries out in order. Memory is one batch (~64 partitions, about
//! 16 MiB), whatever N.
//!
//! The keys are uniform within each partition and every partition holds
//! `N / 2^b` of them: a stratified sample of uniform keys, indistinguishable
//! from N independent uniform keys for the store (whose buckets split by
//! the same top bits, at depths far below `b` only at N below ~10^4).
//! Two equal keys have probability ~N^2 / 2^257; the sorted stream does
//! not check (`Db::build` refuses unsorted or repeated keys).

use std::time::{Duration, Instant};

use alloy_primitives::B256;
use rayon::prelude::*;
use ubt_spec::rng::SplitMix64;

/// Fewest entries per partition (unless N is smaller).
pub const MIN_PARTITION_ENTRIES: u64 = 2048;
/// Partitions generated per batch of the sorted stream.
const PARTITIONS_PER_BATCH: u64 = 64;
/// Draws per entry: four for the key, four for the value.
const DRAWS_PER_ENTRY: u64 = 8;

/// The data set: N pairs for a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomPairs {
    entries: u64,
    /// The stream's state before its first draw.
    origin: u64,
    /// Partition bits `b`.
    prefix_bits: u32,
    /// Entries per partition, rounded down (`N >> b` with the remainder
    /// spread over the first partitions).
    per_partition: u64,
    /// Partitions holding `per_partition + 1` entries.
    larger_partitions: u64,
}

impl RandomPairs {
    /// `entries` pairs of the stream named by `seed`.
    pub fn new(entries: u64, seed: u64) -> RandomPairs {
        let mut prefix_bits = 0u32;
        while prefix_bits < 48 && entries >> (prefix_bits + 1) >= MIN_PARTITION_ENTRIES {
            prefix_bits += 1;
        }
        let partitions = 1u64 << prefix_bits;
        RandomPairs {
            entries,
            origin: SplitMix64::mix(seed ^ 0x7061_6972_7300_0000),
            prefix_bits,
            per_partition: entries / partitions,
            larger_partitions: entries % partitions,
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> u64 {
        self.entries
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Number of key-space partitions (`2^b`).
    pub fn partitions(&self) -> u64 {
        1u64 << self.prefix_bits
    }

    /// Pair `index` (below [`len`](Self::len)), in generation order.
    pub fn entry(&self, index: u64) -> (B256, B256) {
        debug_assert!(index < self.entries, "index {index} of {}", self.entries);
        self.entry_in(self.partition_of(index), index)
    }

    /// The partition whose index range holds `index`.
    fn partition_of(&self, index: u64) -> u64 {
        let larger_span = self.larger_partitions * (self.per_partition + 1);
        if index < larger_span {
            index / (self.per_partition + 1)
        } else {
            self.larger_partitions + (index - larger_span) / self.per_partition.max(1)
        }
    }

    /// The first index of `partition`'s range, and its length.
    fn partition_range(&self, partition: u64) -> (u64, u64) {
        let larger = partition.min(self.larger_partitions);
        let start = partition * self.per_partition + larger;
        let len = self.per_partition + u64::from(partition < self.larger_partitions);
        (start, len)
    }

    /// Pair `index`, whose key carries `partition` in its top bits.
    fn entry_in(&self, partition: u64, index: u64) -> (B256, B256) {
        let mut key = [0u8; 32];
        let mut value = [0u8; 32];
        let first_draw = index.wrapping_mul(DRAWS_PER_ENTRY);
        for (word, out) in key.chunks_mut(8).chain(value.chunks_mut(8)).enumerate() {
            let draw = first_draw.wrapping_add(word as u64 + 1);
            let state = self
                .origin
                .wrapping_add(draw.wrapping_mul(SplitMix64::GAMMA));
            out.copy_from_slice(&SplitMix64::mix(state).to_le_bytes());
        }
        if self.prefix_bits > 0 {
            let mut head = [0u8; 8];
            head.copy_from_slice(&key[..8]);
            let low_mask = u64::MAX >> self.prefix_bits;
            let head =
                (u64::from_be_bytes(head) & low_mask) | (partition << (64 - self.prefix_bits));
            key[..8].copy_from_slice(&head.to_be_bytes());
        }
        (B256::from(key), B256::from(value))
    }

    /// The pairs of `partition`, sorted by key.
    fn sorted_partition(&self, partition: u64) -> Vec<(B256, B256)> {
        let (start, len) = self.partition_range(partition);
        let mut pairs: Vec<(B256, B256)> = (start..start + len)
            .map(|index| self.entry_in(partition, index))
            .collect();
        pairs.sort_unstable_by_key(|pair| pair.0);
        pairs
    }

    /// Every pair in ascending key order, generated a batch of partitions
    /// at a time.
    pub fn sorted(&self) -> SortedPairs {
        SortedPairs {
            pairs: *self,
            next_partition: 0,
            batch: Vec::new().into_iter(),
            generating: Duration::ZERO,
        }
    }
}

/// The pairs of a [`RandomPairs`] in ascending key order.
#[derive(Debug)]
pub struct SortedPairs {
    pairs: RandomPairs,
    next_partition: u64,
    batch: std::vec::IntoIter<(B256, B256)>,
    generating: Duration,
}

impl SortedPairs {
    /// Time spent generating and sorting so far (for telling it apart from
    /// the consumer's time).
    pub fn generating_time(&self) -> Duration {
        self.generating
    }

    /// Generates the next batch of partitions; false when none are left.
    fn refill(&mut self) -> bool {
        let partitions = self.pairs.partitions();
        if self.next_partition >= partitions {
            return false;
        }
        let started = Instant::now();
        let end = (self.next_partition + PARTITIONS_PER_BATCH).min(partitions);
        let pairs = self.pairs;
        let sorted: Vec<Vec<(B256, B256)>> = (self.next_partition..end)
            .into_par_iter()
            .map(|partition| pairs.sorted_partition(partition))
            .collect();
        self.batch = sorted.concat().into_iter();
        self.next_partition = end;
        self.generating += started.elapsed();
        true
    }
}

impl Iterator for SortedPairs {
    type Item = (B256, B256);

    fn next(&mut self) -> Option<(B256, B256)> {
        loop {
            if let Some(pair) = self.batch.next() {
                return Some(pair);
            }
            if !self.refill() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_sorted_stream_holds_every_entry_once_in_key_order() {
        for entries in [0u64, 1, 5, 2047, 4096, 4097, 70_001] {
            let pairs = RandomPairs::new(entries, 9);
            let by_key: HashMap<B256, B256> = (0..entries).map(|i| pairs.entry(i)).collect();
            assert_eq!(by_key.len() as u64, entries, "distinct keys");
            let sorted: Vec<(B256, B256)> = pairs.sorted().collect();
            assert_eq!(sorted.len() as u64, entries);
            assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0), "ascending");
            assert!(sorted.iter().all(|(k, v)| by_key[k] == *v), "same pairs");
        }
    }

    #[test]
    fn partitions_cover_the_indices_and_carry_their_prefix() {
        let pairs = RandomPairs::new(70_001, 3);
        assert_eq!(pairs.partitions(), 32);
        let mut next = 0;
        for partition in 0..pairs.partitions() {
            let (start, len) = pairs.partition_range(partition);
            assert_eq!(start, next, "ranges are consecutive");
            assert!((MIN_PARTITION_ENTRIES..2 * MIN_PARTITION_ENTRIES + 1).contains(&len));
            for index in [start, start + len - 1] {
                assert_eq!(pairs.partition_of(index), partition);
                assert_eq!(u64::from(pairs.entry(index).0[0] >> 3), partition);
            }
            next = start + len;
        }
        assert_eq!(next, 70_001);
    }

    #[test]
    fn a_seed_gives_the_same_pairs_and_another_seed_others() {
        let a = RandomPairs::new(10_000, 1);
        let b = RandomPairs::new(10_000, 1);
        let c = RandomPairs::new(10_000, 2);
        assert!(a.sorted().eq(b.sorted()));
        assert_ne!(a.entry(17), c.entry(17));
        // A pair depends on the seed and its index, not on N's partition
        // count beyond its top bits.
        let d = RandomPairs::new(20_000, 1);
        assert_eq!(a.entry(5).1, d.entry(5).1);
    }
}

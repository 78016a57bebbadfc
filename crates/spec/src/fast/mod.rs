//! The fast in-memory tree.
//!
//! The tree is cut at depth 8 into 256 `shard`s, one per first stem byte.
//! Each shard is an arena-allocated binary trie with dirty flags, so shards
//! are independent `&mut` values: batches insert and rehash shards in
//! parallel (rayon) without locks or `unsafe`. The top 8 levels are rebuilt
//! from each shard's stem count and root hash (a stem's hash does not depend
//! on its depth, so a shard holding one stem contributes that stem wherever
//! it floats up to), costing at most 255 hashes per root.
//!
//! Same roots as [`crate::reference::ReferenceTree`], proved by the vectors
//! and property tests.

mod shard;
mod stem_node;
mod values;
mod view;

use alloy_primitives::B256;
use rayon::prelude::*;

use crate::hash::{hash_pair, Hash, ZERO_HASH};
use crate::tree::StateTree;
use shard::Shard;
pub use view::{FastNodeId, FastView};

/// Number of shards: one per value of the first stem byte.
const SHARD_COUNT: usize = 256;

/// Batches at least this large are split by shard, inserted in parallel and
/// hashed eagerly in the same pass.
const PARALLEL_BATCH_MIN: usize = 1024;

/// The fast in-memory tree. See the module documentation.
#[derive(Clone, Debug)]
pub struct FastTree {
    shards: Vec<Shard>,
    /// Heap-ordered top levels: index 1 covers all shards, `2i` and `2i + 1`
    /// are the halves of `i`, and `256 + s` is shard `s`.
    top_hashes: Vec<Hash>,
    top_stem_counts: Vec<u64>,
    top_dirty: bool,
}

impl Default for FastTree {
    fn default() -> Self {
        FastTree {
            shards: (0..SHARD_COUNT).map(|_| Shard::default()).collect(),
            top_hashes: vec![ZERO_HASH; 2 * SHARD_COUNT],
            top_stem_counts: vec![0; 2 * SHARD_COUNT],
            top_dirty: false,
        }
    }
}

impl FastTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a tree from unsorted entries in one pass: parallel sort, then
    /// each shard bottom-up, hashing as it goes. Later duplicates win.
    pub fn from_entries(mut entries: Vec<(B256, B256)>) -> Self {
        // Stable sort keeps duplicates in input order; keep the last of each.
        entries.par_sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduped: Vec<(B256, B256)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match deduped.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => deduped.push(entry),
            }
        }
        let mut bounds = [0usize; SHARD_COUNT + 1];
        for (shard, bound) in bounds.iter_mut().enumerate().skip(1) {
            *bound = deduped.partition_point(|(key, _)| usize::from(key[0]) < shard);
        }
        bounds[SHARD_COUNT] = deduped.len();
        let shards: Vec<Shard> = (0..SHARD_COUNT)
            .into_par_iter()
            .map(|s| Shard::from_sorted(&deduped[bounds[s]..bounds[s + 1]]))
            .collect();
        let mut tree = FastTree {
            shards,
            ..FastTree::default()
        };
        tree.top_dirty = true;
        tree.root_hash();
        tree
    }

    /// Number of present leaves.
    pub fn len(&self) -> u64 {
        self.shards.iter().map(|s| s.leaf_count).sum()
    }

    /// Whether the tree has no leaves.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of stem nodes.
    pub fn stem_count(&self) -> u64 {
        self.shards.iter().map(|s| s.stem_count() as u64).sum()
    }

    /// Number of internal nodes (including the top levels).
    pub fn internal_count(&mut self) -> u64 {
        self.root_hash();
        let top = (1..SHARD_COUNT)
            .filter(|&i| self.top_stem_counts[i] >= 2)
            .count() as u64;
        top + self
            .shards
            .iter()
            .map(|s| s.internals.len() as u64)
            .sum::<u64>()
    }

    /// Approximate heap bytes held by the tree.
    pub fn heap_bytes(&self) -> usize {
        self.shards.iter().map(Shard::heap_bytes).sum()
    }

    /// Recomputes dirty hashes (shards in parallel) and returns the root.
    pub fn root_hash(&mut self) -> Hash {
        if !self.top_dirty {
            return self.top_hashes[1];
        }
        self.shards
            .par_iter_mut()
            .filter(|s| s.dirty)
            .for_each(|s| {
                s.rehash();
            });
        for (s, shard) in self.shards.iter().enumerate() {
            self.top_hashes[SHARD_COUNT + s] = shard.hash;
            self.top_stem_counts[SHARD_COUNT + s] = shard.stem_count() as u64;
        }
        for i in (1..SHARD_COUNT).rev() {
            let (left, right) = (2 * i, 2 * i + 1);
            let count = self.top_stem_counts[left] + self.top_stem_counts[right];
            self.top_stem_counts[i] = count;
            self.top_hashes[i] = match count {
                0 => ZERO_HASH,
                // A lone stem floats up: its hash is the node's hash.
                1 if self.top_stem_counts[left] == 1 => self.top_hashes[left],
                1 => self.top_hashes[right],
                _ => hash_pair(&self.top_hashes[left], &self.top_hashes[right]),
            };
        }
        self.top_dirty = false;
        self.top_hashes[1]
    }

    /// A read-only structural view with up-to-date hashes.
    pub fn view(&mut self) -> FastView<'_> {
        self.root_hash();
        FastView::new(self)
    }
}

impl StateTree for FastTree {
    fn insert(&mut self, key: B256, value: B256) {
        self.top_dirty = true;
        self.shards[usize::from(key[0])].insert(&key, value);
    }

    fn get(&self, key: &B256) -> Option<B256> {
        self.shards[usize::from(key[0])].get(key)
    }

    fn root(&mut self) -> Hash {
        self.root_hash()
    }

    fn insert_batch(&mut self, entries: &[(B256, B256)]) {
        if entries.len() < PARALLEL_BATCH_MIN {
            for (key, value) in entries {
                self.insert(*key, *value);
            }
            return;
        }
        self.top_dirty = true;
        // Bucket entry indices by shard, keeping input order within a shard
        // so that later writes still win.
        let mut counts = [0usize; SHARD_COUNT + 1];
        for (key, _) in entries {
            counts[usize::from(key[0]) + 1] += 1;
        }
        for s in 0..SHARD_COUNT {
            counts[s + 1] += counts[s];
        }
        let mut next = counts;
        let mut order = vec![0u32; entries.len()];
        for (i, (key, _)) in entries.iter().enumerate() {
            let s = usize::from(key[0]);
            // A batch of 2^32 entries (256 GiB) cannot be held.
            #[allow(clippy::cast_possible_truncation)]
            let index = i as u32;
            order[next[s]] = index;
            next[s] += 1;
        }
        // Each shard inserts its writes and rehashes at once, while the
        // nodes just written are still in cache: a separate hashing pass
        // would miss on every dirty node again.
        self.shards
            .par_iter_mut()
            .enumerate()
            .for_each(|(s, shard)| {
                let mine = &order[counts[s]..counts[s + 1]];
                if mine.is_empty() {
                    return;
                }
                for &i in mine {
                    let (key, value) = &entries[i as usize];
                    shard.insert(key, *value);
                }
                shard.rehash();
            });
    }
}

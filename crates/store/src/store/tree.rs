//! The tree state: the buckets and the resident upper trie above them, the
//! data file they live in and its free space, and the clean-bucket cache.
//! It is the tip: every applied block is in it (see [`super::layers`]).
//!
//! Invariants: `root` is the hash of the upper trie's root summary (set
//! from its rehash); `dirty_bytes` is the memory of the
//! buckets changed since the last checkpoint; `stem_count`/`leaf_count`
//! count what the buckets hold; an extent in `released` is referenced by
//! the durable checkpoint only, and is freed once the next one is durable.

use std::ops::Range;
use std::sync::Arc;

use ubt_spec::hash::Hash;

use super::prefetch::Prefetcher;
use super::BucketTable;
use crate::alloc::{BlockAllocator, PageBlocks};
use crate::cache::BucketCache;
use crate::io::StoreFile;
use crate::prefix::Prefix;
use crate::upper::{id_of, BucketId, Link, NodeId, UpperTrie};

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Tree {
    /// The file of buckets and pages.
    pub data: Arc<dyn StoreFile>,
    /// The resident upper trie.
    pub trie: UpperTrie,
    /// The bucket table, indexed by [`BucketId`].
    pub buckets: BucketTable,
    /// Free and used blocks of the data file.
    pub alloc: BlockAllocator,
    /// Blocks whose contents were replaced since the last checkpoint: still
    /// needed by it, so freed only once the next checkpoint is durable.
    pub released: Vec<Range<u64>>,
    /// Live page bytes per block holding pages.
    pub page_blocks: PageBlocks,
    /// Clean buckets recently read.
    pub cache: Arc<BucketCache>,
    /// Reads started ahead of an apply.
    pub prefetcher: Prefetcher,
    /// Memory held by changed buckets.
    pub dirty_bytes: usize,
    /// Stems stored at the tip.
    pub stem_count: u64,
    /// Values stored at the tip.
    pub leaf_count: u64,
    /// Root of everything applied (the tip).
    pub root: Hash,
    /// The flat index of account values, if the database keeps one.
    pub flat: Option<crate::flat::index::FlatIndex>,
    /// Bucket capacity in encoded bytes: a bucket over it is split.
    pub bucket_bytes: usize,
}

impl Tree {
    /// Stem and value counts at the tip.
    pub fn counts(&self) -> (u64, u64) {
        (self.stem_count, self.leaf_count)
    }

    /// The buckets changed since the last checkpoint, in id order.
    pub fn dirty_ids(&self) -> Vec<BucketId> {
        (0..self.buckets.len())
            .filter(|&index| self.buckets[index].dirty.is_some())
            .map(id_of)
            .collect()
    }

    /// Recounts the memory of the changed buckets.
    pub fn recount_dirty_bytes(&mut self) {
        self.dirty_bytes = self
            .buckets
            .iter()
            .filter_map(|b| b.dirty.as_ref().map(|d| d.memory_bytes()))
            .sum();
    }

    /// Frees what the previous checkpoint used, once the next is durable.
    pub fn free_released(&mut self) {
        for old in std::mem::take(&mut self.released) {
            self.alloc.free(old);
        }
    }

    /// The prefix of an upper-trie node: its depth's worth of the prefix of
    /// any bucket below it.
    pub fn prefix_of_node(&self, mut id: NodeId) -> Prefix {
        let depth = self.trie.node(id).depth();
        loop {
            match self.trie.node(id).link() {
                Link::Leaf(bucket) => {
                    return self.buckets.prefix(bucket).truncate(depth);
                }
                Link::Internal([left, _]) => id = left,
            }
        }
    }
}

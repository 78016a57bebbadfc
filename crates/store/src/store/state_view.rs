//! The binary trie at one root, seen through the store's structures: the
//! resident upper trie (with summaries overridden where the root is older
//! than the tip) down to the buckets, then the stems inside loaded buckets.
//! It implements the spec's [`TrieView`], so the spec's provers and geth
//! witness walkers run over the store unchanged.
//!
//! A view holds only the buckets it was given. [`TrieView`] cannot fail,
//! so a walk that needs a bucket the view lacks gets a placeholder (an
//! empty subtree) and the bucket is recorded in [`StateView::missing`]:
//! the caller loads those buckets in one batch and walks again (see
//! [`super::prove`]). A walk whose `missing` is empty saw the true tree.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeSet;

use alloy_primitives::map::HashMap;

use alloy_primitives::B256;
use ubt_spec::hash::Hash;
use ubt_spec::key::Stem;
use ubt_spec::view::{TrieView, ViewNode};

use crate::bucket::{combine_subs, compute_stem_hash, Bucket, SUB_BITS};
use crate::summary::{subtrie_summary, Occupancy, Summary};
use crate::upper::{id_of, BucketId, Link, NodeId, UpperTrie, ROOT};

/// A loaded bucket, at the view's root, with its stems' hashes computed on
/// first use.
#[derive(Debug)]
pub(crate) struct ViewBucket {
    bucket: Bucket,
    stem_hashes: Vec<OnceCell<Hash>>,
}

impl ViewBucket {
    /// Wraps `bucket` (already at the view's root).
    pub fn new(mut bucket: Bucket) -> ViewBucket {
        // Refreshes the sub-bucket summaries the view combines.
        bucket.summary();
        let stem_hashes = (0..bucket.stem_count()).map(|_| OnceCell::new()).collect();
        ViewBucket {
            bucket,
            stem_hashes,
        }
    }

    fn stem_hash(&self, index: usize) -> Hash {
        *self.stem_hashes[index].get_or_init(|| {
            let entry = &self.bucket.stems()[index];
            entry
                .hash()
                .unwrap_or_else(|| compute_stem_hash(entry, self.bucket.values_of(entry)))
        })
    }

    /// The summary of stems `lo..hi`, which are every stem of the bucket
    /// under one prefix of `depth` bits.
    fn range_summary(&self, lo: usize, hi: usize, depth: usize) -> Summary {
        match hi - lo {
            0 => return Summary::EMPTY,
            1 => return Summary::one(self.stem_hash(lo)),
            _ => {}
        }
        let prefix_len = self.bucket.prefix().len();
        let subs = self.bucket.sub_summaries();
        if depth <= prefix_len + SUB_BITS {
            // Whole sub-buckets: their stored summaries, combined.
            // The sub-buckets sharing the stems' first `depth` bits.
            let first = crate::bucket::sub_bucket_of(prefix_len, &self.bucket.stems()[lo].stem);
            let width = 1 << (prefix_len + SUB_BITS - depth);
            let start = first & !(width - 1);
            return combine_subs(&subs[start..start + width]);
        }
        let hashed: Vec<(Stem, Hash)> = (lo..hi)
            .map(|index| (self.bucket.stems()[index].stem, self.stem_hash(index)))
            .collect();
        subtrie_summary(&hashed, depth)
    }
}

/// A node of a [`StateView`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// An upper-trie node (internal, or a bucket leaf not yet opened).
    Upper(NodeId),
    /// Stems `lo..hi` of a loaded bucket, under a prefix of `depth` bits.
    Range {
        bucket: BucketId,
        lo: u32,
        hi: u32,
        depth: u16,
    },
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct StateView<'a> {
    trie: &'a UpperTrie,
    /// Summaries that differ from the trie's (the view's root is older).
    overrides: HashMap<NodeId, Summary>,
    buckets: HashMap<BucketId, ViewBucket>,
    missing: RefCell<BTreeSet<BucketId>>,
}

impl<'a> StateView<'a> {
    /// A view of `trie` with `overrides` for changed summaries.
    pub fn new(trie: &'a UpperTrie, overrides: HashMap<NodeId, Summary>) -> StateView<'a> {
        StateView {
            trie,
            overrides,
            buckets: HashMap::default(),
            missing: RefCell::new(BTreeSet::new()),
        }
    }

    /// Adds a loaded bucket.
    pub fn insert(&mut self, id: BucketId, bucket: ViewBucket) {
        self.buckets.insert(id, bucket);
    }

    /// Whether bucket `id` is loaded.
    pub fn has(&self, id: BucketId) -> bool {
        self.buckets.contains_key(&id)
    }

    /// Takes the buckets walks asked for and did not find.
    pub fn take_missing(&self) -> BTreeSet<BucketId> {
        std::mem::take(&mut *self.missing.borrow_mut())
    }

    /// The root's hash as the view sees it.
    pub fn root_hash(&self) -> Hash {
        self.summary(ROOT).hash
    }

    fn summary(&self, id: NodeId) -> Summary {
        self.overrides
            .get(&id)
            .copied()
            .unwrap_or(self.trie.node(id).summary())
    }

    fn bucket(&self, id: BucketId) -> Option<&ViewBucket> {
        let found = self.buckets.get(&id);
        if found.is_none() {
            self.missing.borrow_mut().insert(id);
        }
        found
    }

    /// The view node at upper-trie node `id`.
    fn upper(&self, id: NodeId) -> ViewNode<Place> {
        match self.summary(id).occupancy {
            Occupancy::Empty => ViewNode::Empty,
            Occupancy::One => ViewNode::Stem(Place::Upper(id)),
            Occupancy::Many => ViewNode::Internal(Place::Upper(id)),
        }
    }

    /// The view node of stems `lo..hi` of `bucket` under `depth` bits.
    fn range(bucket: BucketId, lo: usize, hi: usize, depth: usize) -> ViewNode<Place> {
        let place = Place::Range {
            bucket,
            lo: id_of(lo),
            hi: id_of(hi),
            depth: u16::try_from(depth).unwrap_or(u16::MAX),
        };
        match hi - lo {
            0 => ViewNode::Empty,
            1 => ViewNode::Stem(place),
            _ => ViewNode::Internal(place),
        }
    }

    /// The single stem below an upper node of occupancy one: its bucket
    /// and index there (`None` when the bucket is not loaded).
    fn lone_stem(&self, mut id: NodeId) -> Option<(&ViewBucket, usize)> {
        loop {
            match self.trie.node(id).link() {
                Link::Internal([left, right]) => {
                    id = if self.summary(left).occupancy == Occupancy::Empty {
                        right
                    } else {
                        left
                    };
                }
                Link::Leaf(bucket) => {
                    let loaded = self.bucket(bucket)?;
                    debug_assert_eq!(loaded.bucket.stem_count(), 1, "occupancy one");
                    return Some((loaded, 0));
                }
            }
        }
    }

    /// The stem entry a stem node stands for.
    fn stem_at(&self, place: Place) -> Option<(&ViewBucket, usize)> {
        match place {
            Place::Upper(id) => self.lone_stem(id),
            Place::Range { bucket, lo, .. } => Some((self.bucket(bucket)?, lo as usize)),
        }
    }
}

impl TrieView for StateView<'_> {
    type NodeId = Place;

    fn root_node(&self) -> ViewNode<Place> {
        self.upper(ROOT)
    }

    fn child(&self, internal: Place, bit: u8) -> ViewNode<Place> {
        let (bucket, lo, hi, depth) = match internal {
            Place::Upper(id) => {
                let node = self.trie.node(id);
                match node.link() {
                    Link::Internal(children) => return self.upper(children[usize::from(bit)]),
                    Link::Leaf(bucket) => {
                        let Some(loaded) = self.bucket(bucket) else {
                            return ViewNode::Empty;
                        };
                        (bucket, 0, loaded.bucket.stem_count(), node.depth())
                    }
                }
            }
            Place::Range {
                bucket,
                lo,
                hi,
                depth,
            } => (bucket, lo as usize, hi as usize, usize::from(depth)),
        };
        let Some(loaded) = self.bucket(bucket) else {
            return ViewNode::Empty;
        };
        let stems = &loaded.bucket.stems()[lo..hi];
        let split = lo + stems.partition_point(|entry| entry.stem.bit(depth) == 0);
        if bit == 0 {
            Self::range(bucket, lo, split, depth + 1)
        } else {
            Self::range(bucket, split, hi, depth + 1)
        }
    }

    fn node_hash(&self, node: Place) -> Hash {
        match node {
            Place::Upper(id) => self.summary(id).hash,
            Place::Range {
                bucket,
                lo,
                hi,
                depth,
            } => self.bucket(bucket).map_or([0; 32], |loaded| {
                loaded
                    .range_summary(lo as usize, hi as usize, usize::from(depth))
                    .hash
            }),
        }
    }

    fn stem(&self, stem_node: Place) -> Stem {
        self.stem_at(stem_node)
            .map_or(Stem::default(), |(loaded, index)| {
                loaded.bucket.stems()[index].stem
            })
    }

    fn stem_values(&self, stem_node: Place, out: &mut Vec<(u8, B256)>) {
        if let Some((loaded, index)) = self.stem_at(stem_node) {
            let entry = &loaded.bucket.stems()[index];
            out.extend(
                entry
                    .sub_indices()
                    .zip(loaded.bucket.values_of(entry).iter().copied()),
            );
        }
    }
}

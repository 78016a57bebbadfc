//! One shard of the fast tree: the minimal binary trie over the stems whose
//! first byte is the shard's index, rooted at depth [`SHARD_DEPTH`].
//!
//! Nodes live in two arenas (internal nodes and stem nodes) addressed by
//! `u32` indices packed into a [`NodeRef`]; nothing is boxed per node.
//! Every write marks its path dirty, and [`Shard::rehash`] recomputes only
//! dirty nodes.

use alloy_primitives::B256;

use super::stem_node::StemNode;
use super::values::ValueSlab;
use crate::hash::{hash_pair, Hash, ZERO_HASH};
use crate::key::{sub_index, Stem};
use crate::STEM_DEPTH_MAX;

/// Depth of a shard's root: the first byte of the stem selects the shard.
pub(crate) const SHARD_DEPTH: usize = 8;

/// A child pointer: empty, an internal node index, or a stem node index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodeRef(u32);

const EMPTY_REF: u32 = u32::MAX;
const STEM_FLAG: u32 = 1 << 31;

/// What a [`NodeRef`] points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKind {
    Empty,
    Internal(u32),
    Stem(u32),
}

impl NodeRef {
    pub const EMPTY: NodeRef = NodeRef(EMPTY_REF);

    fn internal(index: usize) -> Self {
        assert!(
            index < STEM_FLAG as usize,
            "too many internal nodes in one shard"
        );
        #[allow(clippy::cast_possible_truncation)] // asserted above
        NodeRef(index as u32)
    }

    fn stem(index: usize) -> Self {
        assert!(
            index < STEM_FLAG as usize - 1,
            "too many stems in one shard"
        );
        #[allow(clippy::cast_possible_truncation)] // asserted above
        NodeRef(index as u32 | STEM_FLAG)
    }

    pub fn kind(self) -> NodeKind {
        if self.0 == EMPTY_REF {
            NodeKind::Empty
        } else if self.0 & STEM_FLAG != 0 {
            NodeKind::Stem(self.0 & !STEM_FLAG)
        } else {
            NodeKind::Internal(self.0)
        }
    }
}

/// An internal node: two children and the cached hash.
#[derive(Clone, Debug)]
pub(crate) struct InternalNode {
    pub children: [NodeRef; 2],
    pub hash: Hash,
    pub dirty: bool,
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct Shard {
    pub internals: Vec<InternalNode>,
    pub stems: Vec<StemNode>,
    pub values: ValueSlab,
    pub root: NodeRef,
    pub leaf_count: u64,
    pub dirty: bool,
    pub hash: Hash,
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            internals: Vec::new(),
            stems: Vec::new(),
            values: ValueSlab::default(),
            root: NodeRef::EMPTY,
            leaf_count: 0,
            dirty: false,
            hash: ZERO_HASH,
        }
    }
}

impl Shard {
    /// Number of stems in the shard.
    pub fn stem_count(&self) -> usize {
        self.stems.len()
    }

    fn child_slot(&mut self, parent: Option<(u32, usize)>) -> &mut NodeRef {
        match parent {
            None => &mut self.root,
            Some((index, side)) => &mut self.internals[index as usize].children[side],
        }
    }

    fn push_internal(&mut self, children: [NodeRef; 2]) -> NodeRef {
        let node = NodeRef::internal(self.internals.len());
        self.internals.push(InternalNode {
            children,
            hash: ZERO_HASH,
            dirty: true,
        });
        node
    }

    /// A new stem node holding one value.
    fn push_stem(&mut self, stem: Stem, sub: u8, value: B256) -> NodeRef {
        let node = NodeRef::stem(self.stems.len());
        self.stems.push(StemNode::with_values(
            stem,
            &[(sub, value)],
            &mut self.values,
        ));
        self.leaf_count += 1;
        node
    }

    /// Sets `key` (whose first byte selects this shard) to `value`.
    pub fn insert(&mut self, key: &B256, value: B256) {
        let stem = Stem::of_key(key);
        let sub = sub_index(key);
        self.dirty = true;
        let mut depth = SHARD_DEPTH;
        let mut parent: Option<(u32, usize)> = None;
        loop {
            let node = *self.child_slot(parent);
            match node.kind() {
                NodeKind::Empty => {
                    let new = self.push_stem(stem, sub, value);
                    *self.child_slot(parent) = new;
                    return;
                }
                NodeKind::Internal(index) => {
                    debug_assert!(depth < STEM_DEPTH_MAX, "internal node below depth 248");
                    self.internals[index as usize].dirty = true;
                    parent = Some((index, usize::from(stem.bit(depth))));
                    depth += 1;
                }
                NodeKind::Stem(index) => {
                    let existing = &mut self.stems[index as usize];
                    let Some(split_depth) = stem.first_difference(&existing.stem) else {
                        if existing.set(sub, value, &mut self.values) {
                            self.leaf_count += 1;
                        }
                        return;
                    };
                    // Both stems share the bits above `depth`; push the
                    // existing stem down to the first differing bit.
                    debug_assert!(split_depth >= depth);
                    let new = self.push_stem(stem, sub, value);
                    let mut below = if stem.bit(split_depth) == 0 {
                        self.push_internal([new, node])
                    } else {
                        self.push_internal([node, new])
                    };
                    for chain_depth in (depth..split_depth).rev() {
                        below = if stem.bit(chain_depth) == 0 {
                            self.push_internal([below, NodeRef::EMPTY])
                        } else {
                            self.push_internal([NodeRef::EMPTY, below])
                        };
                    }
                    *self.child_slot(parent) = below;
                    return;
                }
            }
        }
    }

    /// The value at `key`, if present.
    pub fn get(&self, key: &B256) -> Option<B256> {
        let stem = Stem::of_key(key);
        let mut node = self.root;
        let mut depth = SHARD_DEPTH;
        loop {
            match node.kind() {
                NodeKind::Empty => return None,
                NodeKind::Internal(index) => {
                    node = self.internals[index as usize].children[usize::from(stem.bit(depth))];
                    depth += 1;
                }
                NodeKind::Stem(index) => {
                    let found = &self.stems[index as usize];
                    return if found.stem == stem {
                        found.get(sub_index(key), &self.values)
                    } else {
                        None
                    };
                }
            }
        }
    }

    /// Recomputes every dirty hash; returns the shard root's hash.
    pub fn rehash(&mut self) -> Hash {
        if self.dirty {
            self.hash = self.rehash_node(self.root);
            self.dirty = false;
        }
        self.hash
    }

    fn rehash_node(&mut self, node: NodeRef) -> Hash {
        match node.kind() {
            NodeKind::Empty => ZERO_HASH,
            NodeKind::Stem(index) => self.stems[index as usize].rehash(&self.values),
            NodeKind::Internal(index) => {
                let internal = &self.internals[index as usize];
                if !internal.dirty {
                    return internal.hash;
                }
                let [left, right] = internal.children;
                let hash = hash_pair(&self.rehash_node(left), &self.rehash_node(right));
                let internal = &mut self.internals[index as usize];
                internal.hash = hash;
                internal.dirty = false;
                hash
            }
        }
    }

    /// Builds a shard from entries sorted by key with no duplicate keys, all
    /// in this shard. Hashes are computed as the nodes are built.
    pub fn from_sorted(entries: &[(B256, B256)]) -> Self {
        debug_assert!(
            entries.windows(2).all(|w| w[0].0 < w[1].0),
            "not sorted or duplicated"
        );
        let mut shard = Shard::default();
        let mut start = 0;
        let mut values: Vec<(u8, B256)> = Vec::with_capacity(256);
        while start < entries.len() {
            let stem = Stem::of_key(&entries[start].0);
            let mut end = start;
            values.clear();
            while end < entries.len() && entries[end].0[..31] == stem.0 {
                values.push((sub_index(&entries[end].0), entries[end].1));
                end += 1;
            }
            let mut node = StemNode::with_values(stem, &values, &mut shard.values);
            node.rehash(&shard.values);
            shard.stems.push(node);
            start = end;
        }
        shard.leaf_count = entries.len() as u64;
        let stem_count = shard.stems.len();
        let (root, hash) = shard.build_range(0, stem_count, SHARD_DEPTH);
        shard.root = root;
        shard.hash = hash;
        shard
    }

    /// The node over stems `lo..hi` (sorted, sharing their first `depth` bits).
    fn build_range(&mut self, lo: usize, hi: usize, depth: usize) -> (NodeRef, Hash) {
        match hi - lo {
            0 => (NodeRef::EMPTY, ZERO_HASH),
            1 => (NodeRef::stem(lo), self.stems[lo].hash),
            _ => {
                debug_assert!(depth < STEM_DEPTH_MAX, "distinct stems share 248 bits");
                let split = lo + self.stems[lo..hi].partition_point(|s| s.stem.bit(depth) == 0);
                let (left, left_hash) = self.build_range(lo, split, depth + 1);
                let (right, right_hash) = self.build_range(split, hi, depth + 1);
                let hash = hash_pair(&left_hash, &right_hash);
                let node = NodeRef::internal(self.internals.len());
                self.internals.push(InternalNode {
                    children: [left, right],
                    hash,
                    dirty: false,
                });
                (node, hash)
            }
        }
    }

    /// Approximate heap bytes held by the shard.
    pub fn heap_bytes(&self) -> usize {
        self.internals.capacity() * std::mem::size_of::<InternalNode>()
            + self.stems.capacity() * std::mem::size_of::<StemNode>()
            + self.values.heap_bytes()
    }
}

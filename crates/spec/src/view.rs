//! Read-only structural access to a trie: node kinds, children, hashes and
//! stem contents. The geth node-blob exporter and the witness walker are
//! written against [`TrieView`], so they work over any tree that offers it
//! (the reference tree's [`ReferenceView`] and the fast tree's view).

use alloy_primitives::B256;

use crate::hash::{Hash, ZERO_HASH};
use crate::key::Stem;
use crate::reference::ReferenceTree;
use crate::stem::{stem_hash, subtree_root};

/// A node as seen through a [`TrieView`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewNode<I> {
    /// No node (hash `0^32`).
    Empty,
    /// An internal node with two children.
    Internal(I),
    /// A stem node.
    Stem(I),
}

/// Structural, read-only access to a trie whose hashes are up to date.
pub trait TrieView {
    /// Identifies a node within this view.
    type NodeId: Copy;

    /// The root node (at depth 0).
    fn root_node(&self) -> ViewNode<Self::NodeId>;

    /// Child `bit` (0 = left, 1 = right) of an internal node.
    fn child(&self, internal: Self::NodeId, bit: u8) -> ViewNode<Self::NodeId>;

    /// The hash of an internal or stem node.
    fn node_hash(&self, node: Self::NodeId) -> Hash;

    /// The stem bytes of a stem node.
    fn stem(&self, stem_node: Self::NodeId) -> Stem;

    /// Appends the present `(sub_index, value)` pairs of a stem node to
    /// `out`, in ascending sub-index order.
    fn stem_values(&self, stem_node: Self::NodeId, out: &mut Vec<(u8, B256)>);

    /// The hash of any view node (`0^32` for empty).
    fn hash_of(&self, node: ViewNode<Self::NodeId>) -> Hash {
        match node {
            ViewNode::Empty => ZERO_HASH,
            ViewNode::Internal(id) | ViewNode::Stem(id) => self.node_hash(id),
        }
    }
}

/// A [`TrieView`] of a [`ReferenceTree`]: nodes are ranges of its sorted
/// stems, hashes are recomputed on demand (slow, for tests).
pub struct ReferenceView {
    stems: Vec<(Stem, Vec<(u8, B256)>)>,
}

/// A node of a [`ReferenceView`]: the stems `lo..hi` below bit `depth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeNode {
    lo: usize,
    hi: usize,
    depth: usize,
}

impl ReferenceView {
    /// Takes a snapshot of `tree`.
    pub fn new(tree: &ReferenceTree) -> Self {
        let mut stems: Vec<(Stem, Vec<(u8, B256)>)> = Vec::new();
        for (key, value) in tree.entries() {
            let stem = Stem::of_key(key);
            if stems.last().map(|(s, _)| *s) != Some(stem) {
                stems.push((stem, Vec::new()));
            }
            if let Some((_, values)) = stems.last_mut() {
                values.push((key[31], *value));
            }
        }
        ReferenceView { stems }
    }

    fn node(&self, lo: usize, hi: usize, depth: usize) -> ViewNode<RangeNode> {
        match hi - lo {
            0 => ViewNode::Empty,
            1 => ViewNode::Stem(RangeNode { lo, hi, depth }),
            _ => ViewNode::Internal(RangeNode { lo, hi, depth }),
        }
    }
}

impl TrieView for ReferenceView {
    type NodeId = RangeNode;

    fn root_node(&self) -> ViewNode<RangeNode> {
        self.node(0, self.stems.len(), 0)
    }

    fn child(&self, internal: RangeNode, bit: u8) -> ViewNode<RangeNode> {
        let RangeNode { lo, hi, depth } = internal;
        let split = lo + self.stems[lo..hi].partition_point(|(s, _)| s.bit(depth) == 0);
        if bit == 0 {
            self.node(lo, split, depth + 1)
        } else {
            self.node(split, hi, depth + 1)
        }
    }

    fn node_hash(&self, node: RangeNode) -> Hash {
        if node.hi - node.lo == 1 {
            let (stem, values) = &self.stems[node.lo];
            return stem_hash(stem, &subtree_root(values.iter().map(|(i, v)| (*i, v))));
        }
        let left = self.hash_of(self.child(node, 0));
        let right = self.hash_of(self.child(node, 1));
        crate::hash::hash_pair(&left, &right)
    }

    fn stem(&self, stem_node: RangeNode) -> Stem {
        self.stems[stem_node.lo].0
    }

    fn stem_values(&self, stem_node: RangeNode, out: &mut Vec<(u8, B256)>) {
        out.extend_from_slice(&self.stems[stem_node.lo].1);
    }
}

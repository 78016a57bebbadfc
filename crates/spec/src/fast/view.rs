//! [`TrieView`] over a [`FastTree`]: the top 8 levels come from the heap of
//! per-range stem counts and hashes, deeper nodes from the shards' arenas.

use alloy_primitives::B256;

use super::shard::NodeKind;
use super::{FastTree, SHARD_COUNT};
use crate::hash::Hash;
use crate::key::Stem;
use crate::view::{TrieView, ViewNode};

/// A node of a [`FastView`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastNodeId {
    /// An internal node in the top 8 levels, by heap index (1..256).
    Top(u16),
    /// An internal node inside a shard.
    Internal {
        /// Shard index (first stem byte).
        shard: u8,
        /// Arena index.
        index: u32,
    },
    /// A stem node inside a shard.
    Stem {
        /// Shard index (first stem byte).
        shard: u8,
        /// Arena index.
        index: u32,
    },
}

/// A read-only view of a [`FastTree`] whose hashes are up to date (made by
/// [`FastTree::view`]).
pub struct FastView<'a> {
    tree: &'a FastTree,
}

impl<'a> FastView<'a> {
    pub(super) fn new(tree: &'a FastTree) -> Self {
        debug_assert!(!tree.top_dirty, "view of a tree with stale hashes");
        FastView { tree }
    }

    /// The node covering heap range `heap_index`.
    fn range_node(&self, mut heap_index: usize) -> ViewNode<FastNodeId> {
        let counts = &self.tree.top_stem_counts;
        match counts[heap_index] {
            0 => ViewNode::Empty,
            1 => {
                while heap_index < SHARD_COUNT {
                    heap_index = if counts[2 * heap_index] == 1 {
                        2 * heap_index
                    } else {
                        2 * heap_index + 1
                    };
                }
                self.shard_root(heap_index - SHARD_COUNT)
            }
            #[allow(clippy::cast_possible_truncation)] // below SHARD_COUNT (256)
            _ if heap_index < SHARD_COUNT => ViewNode::Internal(FastNodeId::Top(heap_index as u16)),
            _ => self.shard_root(heap_index - SHARD_COUNT),
        }
    }

    fn shard_root(&self, shard: usize) -> ViewNode<FastNodeId> {
        self.convert(shard, self.tree.shards[shard].root.kind())
    }

    fn convert(&self, shard: usize, kind: NodeKind) -> ViewNode<FastNodeId> {
        #[allow(clippy::cast_possible_truncation)] // below SHARD_COUNT (256)
        let shard = shard as u8;
        match kind {
            NodeKind::Empty => ViewNode::Empty,
            NodeKind::Internal(index) => ViewNode::Internal(FastNodeId::Internal { shard, index }),
            NodeKind::Stem(index) => ViewNode::Stem(FastNodeId::Stem { shard, index }),
        }
    }
}

impl TrieView for FastView<'_> {
    type NodeId = FastNodeId;

    fn root_node(&self) -> ViewNode<FastNodeId> {
        self.range_node(1)
    }

    fn child(&self, internal: FastNodeId, bit: u8) -> ViewNode<FastNodeId> {
        match internal {
            FastNodeId::Top(heap_index) => {
                self.range_node(2 * usize::from(heap_index) + usize::from(bit))
            }
            FastNodeId::Internal { shard, index } => {
                let shard_ref = &self.tree.shards[usize::from(shard)];
                let child = shard_ref.internals[index as usize].children[usize::from(bit)];
                self.convert(usize::from(shard), child.kind())
            }
            FastNodeId::Stem { .. } => ViewNode::Empty,
        }
    }

    fn node_hash(&self, node: FastNodeId) -> Hash {
        match node {
            FastNodeId::Top(heap_index) => self.tree.top_hashes[usize::from(heap_index)],
            FastNodeId::Internal { shard, index } => {
                self.tree.shards[usize::from(shard)].internals[index as usize].hash
            }
            FastNodeId::Stem { shard, index } => {
                self.tree.shards[usize::from(shard)].stems[index as usize].hash
            }
        }
    }

    fn stem(&self, stem_node: FastNodeId) -> Stem {
        match stem_node {
            FastNodeId::Stem { shard, index } => {
                self.tree.shards[usize::from(shard)].stems[index as usize].stem
            }
            _ => Stem::default(),
        }
    }

    fn stem_values(&self, stem_node: FastNodeId, out: &mut Vec<(u8, B256)>) {
        if let FastNodeId::Stem { shard, index } = stem_node {
            let shard = &self.tree.shards[usize::from(shard)];
            out.extend(
                shard.stems[index as usize]
                    .values(&shard.values)
                    .map(|(i, v)| (i, *v)),
            );
        }
    }
}

//! The blobs geth resolves from its database to read a set of keys (what
//! `BinaryTrie.Witness()` returns): the root blob (resolved when the trie
//! is opened, so present even for no keys), every group blob on each
//! key's path, and the stem blob the path ends at (also when that stem is a
//! different one, proving absence). Nothing is read past an empty child.
//!
//! Writes resolve the same blobs as reads of the same keys: geth's insert
//! descends the key's path resolving exactly the nodes a lookup resolves,
//! and a binary trie never deletes nodes (a deletion writes a zero value), so
//! the order of a block's reads and writes does not change the set.

use std::collections::BTreeMap;

use alloy_primitives::B256;

use super::export::{encode_node, GethNode, NodeKind};
use super::path::BitPath;
use crate::key::Stem;
use crate::view::{TrieView, ViewNode};

/// The `(path, kind)` of every blob read to look up `keys`, sorted by path
/// bit string.
pub fn witness_paths<V: TrieView>(
    view: &V,
    group_depth: u8,
    keys: &[B256],
) -> Vec<(BitPath, NodeKind)> {
    walk(view, group_depth, keys)
        .into_values()
        .map(|(path, kind, _)| (path, kind))
        .collect()
}

/// Every blob read to look up `keys` (the nodes of [`witness_paths`], in
/// its order), with its hash and its blob exactly as geth stores it at
/// `group_depth` (1..=8): what go-ethereum's `BinaryTrie.Witness()` returns
/// for a trie opened at the root of `view` after it served `keys`. Each
/// group blob is encoded from its own `group_depth` levels only.
pub fn witness_nodes<V: TrieView>(view: &V, group_depth: u8, keys: &[B256]) -> Vec<GethNode> {
    let mut below = Vec::new();
    walk(view, group_depth, keys)
        .into_values()
        .filter_map(|(path, _, node)| {
            below.clear();
            encode_node(view, node, path, group_depth, &mut below)
        })
        .collect()
}

/// The nodes read to look up `keys`, keyed by path bit string.
fn walk<V: TrieView>(
    view: &V,
    group_depth: u8,
    keys: &[B256],
) -> BTreeMap<String, (BitPath, NodeKind, ViewNode<V::NodeId>)> {
    let mut read = BTreeMap::new();
    let mut record = |path: BitPath, kind, node| {
        read.insert(path.to_bit_string(), (path, kind, node));
    };
    // Opening the trie resolves the root blob, whatever is accessed after
    // (so a block that accesses nothing still has it in its witness).
    match view.root_node() {
        ViewNode::Empty => {}
        root @ ViewNode::Stem(_) => record(BitPath::root(), NodeKind::Stem, root),
        root @ ViewNode::Internal(_) => record(BitPath::root(), NodeKind::Group, root),
    }
    for key in keys {
        let stem = Stem::of_key(key);
        let mut node = view.root_node();
        let mut path = BitPath::root();
        loop {
            match node {
                ViewNode::Empty => break,
                ViewNode::Stem(_) => {
                    record(path, NodeKind::Stem, node);
                    break;
                }
                ViewNode::Internal(id) => {
                    if path.len().is_multiple_of(usize::from(group_depth)) {
                        record(path, NodeKind::Group, node);
                    }
                    let bit = stem.bit(path.len());
                    let Some(next) = path.child(bit) else { break };
                    node = view.child(id, bit);
                    path = next;
                }
            }
        }
    }
    read
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use proptest::prelude::*;

    use super::*;
    use crate::geth::export_nodes;
    use crate::hash::Hash;
    use crate::reference::ReferenceTree;
    use crate::tree::StateTree;
    use crate::view::ReferenceView;

    /// A view that counts the child steps taken through it.
    struct CountingView<'a> {
        inner: &'a ReferenceView,
        steps: Cell<usize>,
    }

    impl TrieView for CountingView<'_> {
        type NodeId = <ReferenceView as TrieView>::NodeId;

        fn root_node(&self) -> ViewNode<Self::NodeId> {
            self.inner.root_node()
        }

        fn child(&self, internal: Self::NodeId, bit: u8) -> ViewNode<Self::NodeId> {
            self.steps.set(self.steps.get() + 1);
            self.inner.child(internal, bit)
        }

        fn node_hash(&self, node: Self::NodeId) -> Hash {
            self.inner.node_hash(node)
        }

        fn stem(&self, stem_node: Self::NodeId) -> Stem {
            self.inner.stem(stem_node)
        }

        fn stem_values(&self, stem_node: Self::NodeId, out: &mut Vec<(u8, B256)>) {
            self.inner.stem_values(stem_node, out);
        }
    }

    /// A key from a seed: a few seeds share long stem prefixes, so trees
    /// get deep paths, stems inside groups and stems at group boundaries.
    fn key_of(seed: u64, shared_prefix: u8, suffix: u8) -> B256 {
        let mut key = [0u8; 32];
        let bytes = seed.to_be_bytes();
        let prefix = usize::from(shared_prefix % 4);
        key[prefix..prefix + 8].copy_from_slice(&bytes);
        key[31] = suffix;
        B256::from(key)
    }

    fn tree_of(entries: &[(u64, u8, u8)]) -> ReferenceTree {
        let mut tree = ReferenceTree::new();
        let batch: Vec<(B256, B256)> = entries
            .iter()
            .map(|&(seed, prefix, suffix)| {
                (key_of(seed, prefix, suffix), B256::repeat_byte(suffix | 1))
            })
            .collect();
        tree.insert_batch(&batch);
        tree
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Every witness node is the exported node at the same path, and the
        /// witness lists exactly the paths of `witness_paths`.
        #[test]
        fn witness_nodes_are_the_exported_nodes(
            entries in prop::collection::vec((0u64..64, any::<u8>(), any::<u8>()), 0..40),
            reads in prop::collection::vec((0u64..80, any::<u8>(), any::<u8>()), 1..8),
            group_depth in 1u8..=8,
        ) {
            let tree = tree_of(&entries);
            let view = ReferenceView::new(&tree);
            let keys: Vec<B256> = reads
                .iter()
                .map(|&(seed, prefix, suffix)| key_of(seed, prefix, suffix))
                .collect();
            let exported: BTreeMap<String, GethNode> = export_nodes(&view, group_depth)
                .into_iter()
                .map(|n| (n.path.to_bit_string(), n))
                .collect();
            let nodes = witness_nodes(&view, group_depth, &keys);
            let paths = witness_paths(&view, group_depth, &keys);
            prop_assert_eq!(nodes.len(), paths.len());
            prop_assert_eq!(nodes.is_empty(), entries.is_empty());
            for (node, (path, kind)) in nodes.iter().zip(&paths) {
                prop_assert_eq!(node.path, *path);
                prop_assert_eq!(node.kind, *kind);
                let want = exported.get(&path.to_bit_string());
                prop_assert_eq!(Some(node), want, "path {:?}", path);
            }
            if let Some(root) = nodes.first() {
                prop_assert!(root.path.is_empty());
                prop_assert_eq!(root.hash, view.hash_of(view.root_node()));
            }
        }
    }

    /// Opening the trie reads the root blob: a witness of no keys holds it
    /// (nothing for the empty tree).
    #[test]
    fn no_keys_still_read_the_root() {
        assert!(witness_nodes(&ReferenceView::new(&ReferenceTree::new()), 5, &[]).is_empty());
        for entries in [
            vec![(1u64, 0u8, 0u8)],
            vec![(1, 0, 0), (2, 0, 0), (3, 0, 0)],
        ] {
            let view = ReferenceView::new(&tree_of(&entries));
            for group_depth in 1..=8u8 {
                let nodes = witness_nodes(&view, group_depth, &[]);
                let root = export_nodes(&view, group_depth).into_iter().next();
                assert_eq!(nodes.len(), 1);
                assert_eq!(nodes.first(), root.as_ref());
            }
        }
    }

    /// Encoding a witness walks the keys' paths and each read group's own
    /// levels, not the rest of the tree.
    #[test]
    fn witness_walks_only_the_read_groups() {
        let entries: Vec<(u64, u8, u8)> = (0..4096u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15), 0, 0))
            .collect();
        let tree = tree_of(&entries);
        let inner = ReferenceView::new(&tree);
        let view = CountingView {
            inner: &inner,
            steps: Cell::new(0),
        };
        let key = key_of(entries[17].0, 0, 3);
        for group_depth in 1..=8u8 {
            view.steps.set(0);
            let nodes = witness_nodes(&view, group_depth, &[key]);
            let groups = nodes.iter().filter(|n| n.kind == NodeKind::Group).count();
            // The walk steps at most once per level; each group blob looks
            // at most at its 2^(G+1) - 2 descendants within G levels.
            let bound = 248 + groups * ((2usize << group_depth) - 2);
            assert!(
                view.steps.get() <= bound,
                "G={group_depth}: {} steps, bound {bound}",
                view.steps.get()
            );
            assert!(nodes.last().is_some_and(|n| n.kind == NodeKind::Stem));
            view.steps.set(0);
            let all = export_nodes(&view, group_depth);
            assert!(view.steps.get() > 2 * bound, "G={group_depth}");
            assert!(nodes.iter().all(|n| all.contains(n)));
        }
    }
}

//! A whole tree as geth's node set at group depth G: a stem blob per stem
//! node at its position, a group blob per internal node at a depth that is a
//! multiple of G. Also the difference between two node sets, which is what a
//! geth commit writes and deletes.

use std::collections::BTreeMap;

use alloy_primitives::B256;

use super::group_blob::{GroupBlob, GroupEntry};
use super::path::BitPath;
use super::stem_blob;
use crate::hash::Hash;
use crate::view::{TrieView, ViewNode};

/// Which kind of blob a node is stored as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A group blob (internal node at a group boundary).
    Group,
    /// A stem blob.
    Stem,
}

/// One stored node of geth's node set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GethNode {
    /// The node's path from the root.
    pub path: BitPath,
    /// Blob kind.
    pub kind: NodeKind,
    /// The node's hash.
    pub hash: Hash,
    /// The encoded blob.
    pub blob: Vec<u8>,
}

/// Every blob geth stores for the tree behind `view` at `group_depth`,
/// sorted by path bit string (as the vectors list them).
pub fn export_nodes<V: TrieView>(view: &V, group_depth: u8) -> Vec<GethNode> {
    debug_assert!((1..=8).contains(&group_depth));
    let mut nodes = Vec::new();
    // Explicit stack of (node, path): no recursion on tree depth.
    let mut stack = vec![(view.root_node(), BitPath::root())];
    while let Some((node, path)) = stack.pop() {
        if let Some(encoded) = encode_node(view, node, path, group_depth, &mut stack) {
            nodes.push(encoded);
        }
    }
    nodes.sort_by_cached_key(|n| n.path.to_bit_string());
    nodes
}

/// The blob geth stores for `node` at `path` (group depth `group_depth`):
/// a stem blob for a stem node, a group blob for an internal node (whose
/// depth must be a multiple of `group_depth`), `None` for an empty node.
/// A group blob looks only at the `group_depth` levels below the node; the
/// nodes under its frontier that get blobs of their own (stems inside the
/// group, internal nodes at the next group boundary) are pushed on `below`.
pub(crate) fn encode_node<V: TrieView>(
    view: &V,
    node: ViewNode<V::NodeId>,
    path: BitPath,
    group_depth: u8,
    below: &mut Vec<(ViewNode<V::NodeId>, BitPath)>,
) -> Option<GethNode> {
    match node {
        ViewNode::Empty => None,
        ViewNode::Stem(id) => {
            let mut values: Vec<(u8, B256)> = Vec::new();
            view.stem_values(id, &mut values);
            Some(GethNode {
                path,
                kind: NodeKind::Stem,
                hash: view.node_hash(id),
                blob: stem_blob::encode(&view.stem(id), &values),
            })
        }
        ViewNode::Internal(id) => {
            debug_assert!(path.len().is_multiple_of(usize::from(group_depth)));
            let mut entries = Vec::new();
            collect_frontier(view, id, path, group_depth, 0, 0, &mut entries, below);
            let blob = GroupBlob {
                group_depth,
                entries,
            }
            .encode();
            Some(GethNode {
                path,
                kind: NodeKind::Group,
                hash: view.node_hash(id),
                blob,
            })
        }
    }
}

/// Walks the group below `internal` (at relative `depth`, relative `bits`),
/// appending frontier entries in left-to-right order and queueing the nodes
/// that get blobs of their own.
#[allow(clippy::too_many_arguments)]
fn collect_frontier<V: TrieView>(
    view: &V,
    internal: V::NodeId,
    path: BitPath,
    group_depth: u8,
    depth: u8,
    bits: u8,
    entries: &mut Vec<GroupEntry>,
    queue: &mut Vec<(ViewNode<V::NodeId>, BitPath)>,
) {
    for bit in 0..2u8 {
        let child = view.child(internal, bit);
        let Some(child_path) = path.child(bit) else {
            continue;
        };
        let child_depth = depth + 1;
        let child_bits = (bits << 1) | bit;
        match child {
            ViewNode::Empty => {}
            ViewNode::Stem(id) => {
                entries.push(GroupEntry {
                    depth: child_depth,
                    bits: child_bits,
                    hash: view.node_hash(id),
                });
                queue.push((child, child_path));
            }
            ViewNode::Internal(id) if child_depth == group_depth => {
                entries.push(GroupEntry {
                    depth: child_depth,
                    bits: child_bits,
                    hash: view.node_hash(id),
                });
                queue.push((child, child_path));
            }
            ViewNode::Internal(id) => collect_frontier(
                view,
                id,
                child_path,
                group_depth,
                child_depth,
                child_bits,
                entries,
                queue,
            ),
        }
    }
}

/// What a commit from one node set to the next writes and deletes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSetDiff {
    /// Nodes that are new or whose blob changed, sorted by path bits.
    pub written: Vec<GethNode>,
    /// Paths stored before and not after, sorted by path bits.
    pub deleted: Vec<BitPath>,
}

/// The blobs to write and paths to delete to turn node set `before` into `after`.
pub fn diff_node_sets(before: &[GethNode], after: &[GethNode]) -> NodeSetDiff {
    let old: BTreeMap<String, &GethNode> =
        before.iter().map(|n| (n.path.to_bit_string(), n)).collect();
    let new: BTreeMap<String, &GethNode> =
        after.iter().map(|n| (n.path.to_bit_string(), n)).collect();
    let written = new
        .iter()
        .filter(|(path, node)| old.get(*path).is_none_or(|o| o.blob != node.blob))
        .map(|(_, node)| (*node).clone())
        .collect();
    let deleted = old
        .iter()
        .filter(|(path, _)| !new.contains_key(*path))
        .map(|(_, n)| n.path)
        .collect();
    NodeSetDiff { written, deleted }
}

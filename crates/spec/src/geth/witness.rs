//! The blobs geth resolves from its database to read a set of keys (what
//! `BinaryTrie.Witness()` returns): the root blob, every group blob on each
//! key's path, and the stem blob the path ends at (also when that stem is a
//! different one, proving absence). Nothing is read past an empty child.

use std::collections::BTreeMap;

use alloy_primitives::B256;

use super::export::NodeKind;
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
    let mut read: BTreeMap<String, (BitPath, NodeKind)> = BTreeMap::new();
    let mut record = |path: BitPath, kind| {
        read.insert(path.to_bit_string(), (path, kind));
    };
    for key in keys {
        let stem = Stem::of_key(key);
        let mut node = view.root_node();
        let mut path = BitPath::root();
        loop {
            match node {
                ViewNode::Empty => break,
                ViewNode::Stem(_) => {
                    record(path, NodeKind::Stem);
                    break;
                }
                ViewNode::Internal(id) => {
                    if path.len().is_multiple_of(usize::from(group_depth)) {
                        record(path, NodeKind::Group);
                    }
                    let bit = stem.bit(path.len());
                    let Some(next) = path.child(bit) else { break };
                    node = view.child(id, bit);
                    path = next;
                }
            }
        }
    }
    read.into_values().collect()
}

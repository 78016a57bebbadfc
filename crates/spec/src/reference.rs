//! The reference tree: the simplest obviously-correct definition of the
//! EIP-7864 root, the oracle that every other tree and store is tested
//! against.
//!
//! It keeps a sorted map of key/value pairs and computes the root by
//! recursion over sorted stems, hashing each stem's 256 slots with the spec's
//! pseudo-code literally (streaming SHA-256, dense 8-level subtree). It shares
//! no hashing or shape code with the fast tree on purpose. It is slow; use it
//! for tests.

use std::collections::BTreeMap;

use alloy_primitives::B256;

use crate::hash::{sha256, Hash, ZERO_HASH};
use crate::key::{sub_index, Stem};
use crate::tree::StateTree;

/// The oracle tree. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct ReferenceTree {
    entries: BTreeMap<B256, B256>,
}

impl ReferenceTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of present leaves.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the tree has no leaves.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All present leaves in ascending key order.
    pub fn entries(&self) -> impl Iterator<Item = (&B256, &B256)> {
        self.entries.iter()
    }

    /// The root hash, without needing `&mut`.
    pub fn compute_root(&self) -> Hash {
        let mut stems: Vec<(Stem, [Option<B256>; 256])> = Vec::new();
        for (key, value) in &self.entries {
            let stem = Stem::of_key(key);
            if stems.last().map(|(s, _)| *s) != Some(stem) {
                stems.push((stem, [None; 256]));
            }
            if let Some((_, slots)) = stems.last_mut() {
                slots[usize::from(sub_index(key))] = Some(*value);
            }
        }
        node_hash(&stems, 0)
    }
}

/// Hash of the node covering `stems` (sorted, all sharing their first `depth`
/// bits): empty, a single stem, or an internal node split at bit `depth`.
fn node_hash(stems: &[(Stem, [Option<B256>; 256])], depth: usize) -> Hash {
    match stems {
        [] => ZERO_HASH,
        [(stem, slots)] => reference_stem_hash(stem, slots),
        _ => {
            let split = stems.partition_point(|(stem, _)| stem.bit(depth) == 0);
            let left = node_hash(&stems[..split], depth + 1);
            let right = node_hash(&stems[split..], depth + 1);
            sha256(&[left, right].concat())
        }
    }
}

fn reference_stem_hash(stem: &Stem, slots: &[Option<B256>; 256]) -> Hash {
    let mut level: Vec<Hash> = slots
        .iter()
        .map(|slot| slot.map_or(ZERO_HASH, |v| sha256(v.as_slice())))
        .collect();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| {
                if pair[0] == ZERO_HASH && pair[1] == ZERO_HASH {
                    ZERO_HASH
                } else {
                    sha256(&[pair[0], pair[1]].concat())
                }
            })
            .collect();
    }
    sha256(&[stem.0.as_slice(), &[0u8], &level[0]].concat())
}

impl StateTree for ReferenceTree {
    fn insert(&mut self, key: B256, value: B256) {
        self.entries.insert(key, value);
    }

    fn get(&self, key: &B256) -> Option<B256> {
        self.entries.get(key).copied()
    }

    fn root(&mut self) -> Hash {
        self.compute_root()
    }
}

//! Canonical binary multiproofs: the minimal sibling hashes, stem bytes and
//! values from which a verifier recomputes a root and learns, for each key
//! of a set, its value or its absence.
//!
//! A [`Proof`] has five sections (see `docs/proof-format.md`):
//!
//! * the proven keys, strictly ascending;
//! * the *shape*: a bit string describing the pruned tree in depth-first
//!   order (left before right), one tag per node on a proven key's path;
//! * the non-zero hashes, in the order the walk needs them: the sibling of
//!   every path node whose subtree holds no proven key, inside and above
//!   stems, and the value-subtree root of a stem that holds no proven key;
//! * the stems reached by the walk (31 bytes each);
//! * the present values of proven keys.
//!
//! The shape tags: above stems, 2 bits (`00` empty subtree, `01` internal
//! node, `10` stem node; `11` is invalid); inside a stem's 8-level value
//! subtree, 1 bit (`0` empty subtree or absent leaf, `1` descend or present
//! leaf). A subtree without proven keys has a 1-bit tag: `0` empty (hash
//! zero), `1` its hash is the next one of the hash section (never zero). The walk is a pure function of the keys and the
//! sections, so [`verify`] derives every value and absence itself and only
//! adopts hashes for subtrees it does not have to open.

mod codec;
mod partial;

use alloy_primitives::B256;

use crate::hash::{hash32, hash_pair, Hash, ZERO_HASH};
use crate::key::Stem;
use crate::view::{TrieView, ViewNode};

pub use partial::PartialTree;

/// Why a proof was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The byte string ended inside a section.
    #[error("proof truncated")]
    Truncated,
    /// Bytes follow the last section.
    #[error("trailing bytes after the proof")]
    TrailingBytes,
    /// The keys are not strictly ascending (unsorted or duplicated).
    #[error("keys not strictly ascending")]
    KeysNotSorted,
    /// The padding bits of the shape's last byte are not zero.
    #[error("non-zero padding bits in the shape")]
    ShapePadding,
    /// A top-level shape tag is `11`.
    #[error("invalid shape tag")]
    BadTag,
    /// The walk needed more of a section than the proof holds.
    #[error("proof section {0} exhausted")]
    SectionExhausted(&'static str),
    /// The walk left part of a section unused.
    #[error("proof section {0} not fully used")]
    SectionUnused(&'static str),
    /// An internal node where the tree can only hold a stem (depth 248).
    #[error("internal node at depth {0}")]
    TooDeep(usize),
    /// A stem whose leading bits disagree with its position.
    #[error("stem off its path at depth {0}")]
    StemOffPath(usize),
    /// A shape the tree never has (an internal node over at most one stem,
    /// a descended value subtree that is all empty): the same content has a
    /// shorter encoding.
    #[error("non-minimal shape at depth {0}")]
    NonMinimal(usize),
    /// A value-subtree node opened (tag `1`) although its subtree is empty:
    /// the tag `0` encodes it.
    #[error("opened empty value subtree at stem level {0}")]
    EmptyValueSubtree(usize),
    /// A zero hash in the hash section: an empty subtree is the shape bit
    /// `0`, never a hash.
    #[error("zero hash in the hash section")]
    ZeroHash,
    /// The recomputed root differs from the expected one.
    #[error("root mismatch")]
    RootMismatch,
    /// A stateless write to a key the proof does not prove.
    #[error("write to unproven key {0}")]
    UnprovenWrite(B256),
}

/// A canonical multiproof for a set of keys (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Proof {
    pub(crate) keys: Vec<B256>,
    pub(crate) shape: Vec<u8>,
    pub(crate) shape_bits: usize,
    pub(crate) hashes: Vec<Hash>,
    pub(crate) stems: Vec<Stem>,
    pub(crate) values: Vec<B256>,
}

impl Proof {
    /// The proven keys, strictly ascending.
    pub fn keys(&self) -> &[B256] {
        &self.keys
    }

    /// The canonical byte encoding.
    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    /// Decodes and structurally validates a proof; every byte string other
    /// than the canonical encoding of some proof is rejected.
    pub fn decode(bytes: &[u8]) -> Result<Proof, ProofError> {
        let proof = codec::decode(bytes)?;
        PartialTree::build(&proof)?;
        Ok(proof)
    }

    /// A subtree without proven keys: bit `0` if empty, else bit `1` and
    /// its (non-zero) hash.
    fn push_hash(&mut self, hash: Hash) {
        self.push_bit(hash != ZERO_HASH);
        if hash != ZERO_HASH {
            self.hashes.push(hash);
        }
    }

    fn push_bit(&mut self, bit: bool) {
        if self.shape_bits.is_multiple_of(8) {
            self.shape.push(0);
        }
        if bit {
            if let Some(last) = self.shape.last_mut() {
                *last |= 0x80 >> (self.shape_bits % 8);
            }
        }
        self.shape_bits += 1;
    }
}

/// Proves `keys` (any order, duplicates ignored) against the tree seen
/// through `view`, whose hashes must be up to date.
pub fn prove<V: TrieView>(view: &V, keys: &[B256]) -> Proof {
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut proof = Proof::default();
    prove_node(view, view.root_node(), &sorted, 0, &mut proof);
    proof.keys = sorted;
    proof
}

/// Proves `keys` against a [`crate::ReferenceTree`].
pub fn prove_reference(tree: &crate::ReferenceTree, keys: &[B256]) -> Proof {
    prove(&crate::view::ReferenceView::new(tree), keys)
}

fn prove_node<V: TrieView>(
    view: &V,
    node: ViewNode<V::NodeId>,
    keys: &[B256],
    depth: usize,
    proof: &mut Proof,
) {
    if keys.is_empty() {
        proof.push_hash(view.hash_of(node));
        return;
    }
    match node {
        ViewNode::Empty => {
            proof.push_bit(false);
            proof.push_bit(false);
        }
        ViewNode::Internal(id) => {
            proof.push_bit(false);
            proof.push_bit(true);
            let split = keys.partition_point(|k| Stem::of_key(k).bit(depth) == 0);
            prove_node(view, view.child(id, 0), &keys[..split], depth + 1, proof);
            prove_node(view, view.child(id, 1), &keys[split..], depth + 1, proof);
        }
        ViewNode::Stem(id) => {
            proof.push_bit(true);
            proof.push_bit(false);
            let stem = view.stem(id);
            proof.stems.push(stem);
            let mut values = Vec::new();
            view.stem_values(id, &mut values);
            let levels = value_levels(&values);
            let subs: Vec<u8> = keys
                .iter()
                .filter(|k| Stem::of_key(k) == stem)
                .map(|k| k[31])
                .collect();
            prove_values(&levels, &values, &subs, 0, 0, proof);
        }
    }
}

/// The hashes of a stem's value subtree: `levels[l][p]` is node `p` at level
/// `l` (level 0 the root, level 8 the leaves), with the empty-pair rule.
fn value_levels(values: &[(u8, B256)]) -> Vec<Vec<Hash>> {
    let mut leaves = vec![ZERO_HASH; 256];
    for (index, value) in values {
        leaves[usize::from(*index)] = hash32(&value.0);
    }
    let mut levels = vec![leaves];
    while let Some(below) = levels.last().filter(|l| l.len() > 1) {
        let up = below
            .chunks(2)
            .map(|pair| {
                if pair[0] == ZERO_HASH && pair[1] == ZERO_HASH {
                    ZERO_HASH
                } else {
                    hash_pair(&pair[0], &pair[1])
                }
            })
            .collect();
        levels.push(up);
    }
    levels.reverse();
    levels
}

fn prove_values(
    levels: &[Vec<Hash>],
    values: &[(u8, B256)],
    subs: &[u8],
    level: usize,
    position: usize,
    proof: &mut Proof,
) {
    let hash = levels[level][position];
    if subs.is_empty() {
        proof.push_hash(hash);
        return;
    }
    if level == 8 {
        let present = values.iter().find(|(i, _)| usize::from(*i) == position);
        proof.push_bit(present.is_some());
        if let Some((_, value)) = present {
            proof.values.push(*value);
        }
        return;
    }
    proof.push_bit(hash != ZERO_HASH);
    if hash == ZERO_HASH {
        return;
    }
    let split = subs.partition_point(|s| (s >> (7 - level)) & 1 == 0);
    let (left, right) = subs.split_at(split);
    prove_values(levels, values, left, level + 1, position * 2, proof);
    prove_values(levels, values, right, level + 1, position * 2 + 1, proof);
}

/// Verifies `proof` against `root`: the value (`Some`) or absence (`None`)
/// of every proven key, all derived from the proof's contents.
pub fn verify(
    root: &Hash,
    proof: &Proof,
) -> Result<std::collections::BTreeMap<B256, Option<B256>>, ProofError> {
    let (tree, values) = PartialTree::build(proof)?;
    if tree.root() != *root {
        return Err(ProofError::RootMismatch);
    }
    Ok(values)
}

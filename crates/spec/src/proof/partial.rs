//! The pruned tree a proof describes: opened nodes on the proven keys'
//! paths, hashes for everything else. Built by walking a [`Proof`]; hashed
//! bottom-up for verification; updated in place for stateless execution.

use std::collections::BTreeMap;

use alloy_primitives::B256;

use super::{Proof, ProofError};
use crate::hash::{hash32, hash_pair, Hash, ZERO_HASH};
use crate::key::Stem;
use crate::stem::stem_hash;
use crate::STEM_DEPTH_MAX;

/// A node above the stems.
#[derive(Clone, Debug)]
enum Node {
    Opaque(Hash),
    Empty,
    Internal(Box<Node>, Box<Node>),
    Stem(Stem, Box<Slot>),
}

/// A node of a stem's 8-level value subtree.
#[derive(Clone, Debug)]
enum Slot {
    Opaque(Hash),
    Empty,
    Inner(Box<Slot>, Box<Slot>),
    Leaf(B256),
}

/// The pruned tree of a proof.
#[derive(Clone, Debug)]
pub struct PartialTree {
    root: Node,
}

/// Cursors over a proof's sections.
struct Reader<'a> {
    proof: &'a Proof,
    bit: usize,
    hash: usize,
    stem: usize,
    value: usize,
    out: BTreeMap<B256, Option<B256>>,
}

impl Reader<'_> {
    fn bit(&mut self) -> Result<bool, ProofError> {
        if self.bit >= self.proof.shape_bits {
            return Err(ProofError::SectionExhausted("shape"));
        }
        let byte = self.proof.shape[self.bit / 8];
        let set = byte & (0x80 >> (self.bit % 8)) != 0;
        self.bit += 1;
        Ok(set)
    }

    /// A subtree without proven keys: empty, or the next (non-zero) hash.
    fn opaque(&mut self) -> Result<Hash, ProofError> {
        if !self.bit()? {
            return Ok(ZERO_HASH);
        }
        let hash = *self
            .proof
            .hashes
            .get(self.hash)
            .ok_or(ProofError::SectionExhausted("hashes"))?;
        if hash == ZERO_HASH {
            return Err(ProofError::ZeroHash);
        }
        self.hash += 1;
        Ok(hash)
    }

    fn stem(&mut self) -> Result<Stem, ProofError> {
        let stem = *self
            .proof
            .stems
            .get(self.stem)
            .ok_or(ProofError::SectionExhausted("stems"))?;
        self.stem += 1;
        Ok(stem)
    }

    fn value(&mut self) -> Result<B256, ProofError> {
        let value = *self
            .proof
            .values
            .get(self.value)
            .ok_or(ProofError::SectionExhausted("values"))?;
        self.value += 1;
        Ok(value)
    }

    fn absent(&mut self, keys: &[B256]) {
        for key in keys {
            self.out.insert(*key, None);
        }
    }

    fn node(&mut self, keys: &[B256], depth: usize) -> Result<Node, ProofError> {
        let Some(first) = keys.first() else {
            return Ok(Node::Opaque(self.opaque()?));
        };
        match (self.bit()?, self.bit()?) {
            (false, false) => {
                self.absent(keys);
                Ok(Node::Empty)
            }
            (false, true) => {
                if depth >= STEM_DEPTH_MAX {
                    return Err(ProofError::TooDeep(depth));
                }
                let split = keys.partition_point(|k| Stem::of_key(k).bit(depth) == 0);
                let left = self.node(&keys[..split], depth + 1)?;
                let right = self.node(&keys[split..], depth + 1)?;
                if let (Some(a), Some(b)) = (left.known_stems(), right.known_stems()) {
                    if a + b <= 1 {
                        return Err(ProofError::NonMinimal(depth));
                    }
                }
                Ok(Node::Internal(Box::new(left), Box::new(right)))
            }
            (true, false) => {
                let stem = self.stem()?;
                let on_path = stem
                    .first_difference(&Stem::of_key(first))
                    .is_none_or(|d| d >= depth);
                if !on_path {
                    return Err(ProofError::StemOffPath(depth));
                }
                let lo = keys.partition_point(|k| Stem::of_key(k) < stem);
                let hi = keys.partition_point(|k| Stem::of_key(k) <= stem);
                self.absent(&keys[..lo]);
                self.absent(&keys[hi..]);
                let slot = self.slot(&keys[lo..hi], 0)?;
                Ok(Node::Stem(stem, Box::new(slot)))
            }
            (true, true) => Err(ProofError::BadTag),
        }
    }

    fn slot(&mut self, keys: &[B256], level: usize) -> Result<Slot, ProofError> {
        if keys.is_empty() {
            return Ok(Slot::Opaque(self.opaque()?));
        }
        if !self.bit()? {
            self.absent(keys);
            return Ok(Slot::Empty);
        }
        if level == 8 {
            let value = self.value()?;
            self.out.insert(keys[0], Some(value));
            return Ok(Slot::Leaf(value));
        }
        let split = keys.partition_point(|k| (k[31] >> (7 - level)) & 1 == 0);
        let left = self.slot(&keys[..split], level + 1)?;
        let right = self.slot(&keys[split..], level + 1)?;
        if left.is_zero() && right.is_zero() {
            return Err(ProofError::EmptyValueSubtree(level));
        }
        Ok(Slot::Inner(Box::new(left), Box::new(right)))
    }
}

impl Node {
    /// The number of stems below, where the proof fixes it (an internal
    /// node over fewer than two stems never exists).
    fn known_stems(&self) -> Option<usize> {
        match self {
            Node::Empty => Some(0),
            Node::Opaque(hash) if *hash == ZERO_HASH => Some(0),
            Node::Stem(..) => Some(1),
            Node::Opaque(_) | Node::Internal(..) => None,
        }
    }

    fn hash(&self) -> Hash {
        match self {
            Node::Opaque(hash) => *hash,
            Node::Empty => ZERO_HASH,
            Node::Internal(left, right) => hash_pair(&left.hash(), &right.hash()),
            Node::Stem(stem, slot) => stem_hash(stem, &slot.hash()),
        }
    }

    fn insert(&mut self, key: &B256, value: B256, depth: usize) -> Result<(), ProofError> {
        let stem = Stem::of_key(key);
        match self {
            Node::Opaque(_) => Err(ProofError::UnprovenWrite(*key)),
            Node::Empty => {
                let mut slot = Slot::Empty;
                slot.insert(key, value, 0)?;
                *self = Node::Stem(stem, Box::new(slot));
                Ok(())
            }
            Node::Internal(left, right) => {
                let child = if stem.bit(depth) == 0 { left } else { right };
                child.insert(key, value, depth + 1)
            }
            Node::Stem(existing, slot) => {
                if *existing == stem {
                    return slot.insert(key, value, 0);
                }
                let old = std::mem::replace(self, Node::Empty);
                *self = split(old, key, value, depth)?;
                Ok(())
            }
        }
    }
}

/// Pushes the stem node `old` down until it and `key`'s new stem diverge.
fn split(old: Node, key: &B256, value: B256, depth: usize) -> Result<Node, ProofError> {
    let Node::Stem(existing, _) = &old else {
        return Err(ProofError::UnprovenWrite(*key));
    };
    let stem = Stem::of_key(key);
    if depth >= STEM_DEPTH_MAX {
        return Err(ProofError::TooDeep(depth));
    }
    let (old_bit, new_bit) = (existing.bit(depth), stem.bit(depth));
    let (below, other) = if old_bit == new_bit {
        (split(old, key, value, depth + 1)?, Node::Empty)
    } else {
        let mut fresh = Node::Empty;
        fresh.insert(key, value, depth + 1)?;
        return Ok(if new_bit == 0 {
            Node::Internal(Box::new(fresh), Box::new(old))
        } else {
            Node::Internal(Box::new(old), Box::new(fresh))
        });
    };
    Ok(if old_bit == 0 {
        Node::Internal(Box::new(below), Box::new(other))
    } else {
        Node::Internal(Box::new(other), Box::new(below))
    })
}

impl Slot {
    fn is_zero(&self) -> bool {
        match self {
            Slot::Empty => true,
            Slot::Opaque(hash) => *hash == ZERO_HASH,
            Slot::Inner(..) | Slot::Leaf(_) => false,
        }
    }

    fn hash(&self) -> Hash {
        match self {
            Slot::Opaque(hash) => *hash,
            Slot::Empty => ZERO_HASH,
            Slot::Leaf(value) => hash32(&value.0),
            Slot::Inner(left, right) => {
                let (l, r) = (left.hash(), right.hash());
                if l == ZERO_HASH && r == ZERO_HASH {
                    ZERO_HASH
                } else {
                    hash_pair(&l, &r)
                }
            }
        }
    }

    fn insert(&mut self, key: &B256, value: B256, level: usize) -> Result<(), ProofError> {
        if level == 8 {
            return match self {
                Slot::Opaque(_) => Err(ProofError::UnprovenWrite(*key)),
                _ => {
                    *self = Slot::Leaf(value);
                    Ok(())
                }
            };
        }
        if matches!(self, Slot::Empty) {
            *self = Slot::Inner(Box::new(Slot::Empty), Box::new(Slot::Empty));
        }
        match self {
            Slot::Inner(left, right) => {
                let child = if (key[31] >> (7 - level)) & 1 == 0 {
                    left
                } else {
                    right
                };
                child.insert(key, value, level + 1)
            }
            _ => Err(ProofError::UnprovenWrite(*key)),
        }
    }
}

impl PartialTree {
    /// Walks `proof`, validating its shape, and returns the pruned tree with
    /// the value or absence of every proven key.
    pub fn build(proof: &Proof) -> Result<(PartialTree, BTreeMap<B256, Option<B256>>), ProofError> {
        let mut reader = Reader {
            proof,
            bit: 0,
            hash: 0,
            stem: 0,
            value: 0,
            out: BTreeMap::new(),
        };
        let root = reader.node(&proof.keys, 0)?;
        let unused = [
            (reader.bit < proof.shape_bits, "shape"),
            (reader.hash < proof.hashes.len(), "hashes"),
            (reader.stem < proof.stems.len(), "stems"),
            (reader.value < proof.values.len(), "values"),
        ];
        if let Some((_, section)) = unused.iter().find(|(left, _)| *left) {
            return Err(ProofError::SectionUnused(section));
        }
        Ok((PartialTree { root }, reader.out))
    }

    /// The root hash of the pruned tree.
    pub fn root(&self) -> Hash {
        self.root.hash()
    }

    /// Sets `key` to `value`; the key's path must be open (a proven key).
    pub fn insert(&mut self, key: &B256, value: B256) -> Result<(), ProofError> {
        self.root.insert(key, value, 0)
    }
}

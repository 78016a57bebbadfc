//! Fuzz target bodies for the decoders of this crate (geth's node blobs and
//! path keys), and the input mutator the in-tree fuzz tests of every crate
//! share. Not part of the API: the cargo-fuzz targets in `fuzz/` call these
//! bodies, and `tests/fuzz_bodies.rs` runs them over valid encodings and
//! mutations of them on every `cargo test`, so the bodies are checked even
//! without a nightly toolchain.
//!
//! A body never panics by itself: it returns `Err` with a description when
//! a decoder breaks a property (a decoded value that does not re-encode to
//! the same bytes). A panic inside a decoder is a finding too.

use alloy_primitives::B256;

use crate::geth::{export_nodes, group_blob::GroupBlob, stem_blob, BitPath};
use crate::reference::ReferenceTree;
use crate::rng::SplitMix64;
use crate::tree::StateTree;

/// What a body reports when a property fails.
pub type Finding = String;

/// Stem blob decoder: whatever it accepts re-encodes to the same bytes.
pub fn geth_stem_blob(data: &[u8]) -> Result<(), Finding> {
    if let Ok((stem, values)) = stem_blob::decode(data) {
        let again = stem_blob::encode(&stem, &values);
        if again != data {
            return Err("a decoded stem blob re-encodes differently".into());
        }
    }
    Ok(())
}

/// Group blob decoder: whatever it accepts re-encodes to the same bytes
/// and hashes without failing.
pub fn geth_group_blob(data: &[u8]) -> Result<(), Finding> {
    if let Ok(blob) = GroupBlob::decode(data) {
        if blob.encode() != data {
            return Err("a decoded group blob re-encodes differently".into());
        }
        let _ = blob.root_hash();
    }
    Ok(())
}

/// Path keys and bit strings: whatever parses re-encodes to the input.
pub fn geth_path(data: &[u8]) -> Result<(), Finding> {
    if let Ok(path) = BitPath::from_key_bytes(data) {
        if path.key_bytes() != data {
            return Err("a parsed path key re-encodes differently".into());
        }
        if BitPath::from_bit_str(&path.to_bit_string()) != Ok(path) {
            return Err("a path does not survive its bit string".into());
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(path) = BitPath::from_bit_str(text) {
            if path.to_bit_string() != text {
                return Err("a parsed bit string prints differently".into());
            }
        }
    }
    Ok(())
}

/// Valid blobs of a small tree exported at every group depth: stem blobs
/// and group blobs (the seeds of both blob targets), and their path keys.
pub fn seed_geth_blobs() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut tree = ReferenceTree::new();
    for i in 0u64..40 {
        let mut key = crate::hash::sha256(&i.to_le_bytes());
        if i.is_multiple_of(3) {
            key[..4].fill(0x5a);
        }
        key[31] = ((i * 7) & 0xff) as u8;
        tree.insert(B256::from(key), B256::from(crate::hash::sha256(&key)));
    }
    let view = crate::view::ReferenceView::new(&tree);
    let mut blobs = Vec::new();
    let mut paths = Vec::new();
    for g in crate::geth::GROUP_DEPTH_MIN..=crate::geth::GROUP_DEPTH_MAX {
        for node in export_nodes(&view, g) {
            blobs.push(node.blob);
            paths.push(node.path.key_bytes());
        }
    }
    blobs.sort();
    blobs.dedup();
    paths.sort();
    paths.dedup();
    (blobs, paths)
}

/// A deterministic input mutator (splitmix64-driven) for the in-tree fuzz
/// tests: bit flips, byte overwrites, insertions, deletions, truncations,
/// duplicated ranges and splices with another input.
#[derive(Clone, Debug)]
pub struct Mutator(SplitMix64);

impl Mutator {
    /// A mutator seeded with `seed`.
    pub fn new(seed: u64) -> Mutator {
        Mutator(SplitMix64::new(seed))
    }

    /// The next pseudo-random number.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            #[allow(clippy::cast_possible_truncation)] // below n, a usize
            let index = (self.next_u64() % n as u64) as usize;
            index
        }
    }

    /// `input` with one to four random edits; `other` is spliced from.
    pub fn mutate(&mut self, input: &[u8], other: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(8) {
                0 | 1 if !out.is_empty() => {
                    let i = self.below(out.len());
                    out[i] ^= 1 << self.below(8);
                }
                2 if !out.is_empty() => {
                    let i = self.below(out.len());
                    out[i] = [0, 1, 0x7f, 0x80, 0xff][self.below(5)];
                }
                3 => {
                    let byte = (self.next_u64() & 0xff) as u8;
                    out.insert(at, byte);
                }
                4 if !out.is_empty() => {
                    let end = (at + 1 + self.below(16)).min(out.len());
                    out.drain(at.min(out.len() - 1)..end);
                }
                5 => out.truncate(at),
                6 if !out.is_empty() => {
                    let start = self.below(out.len());
                    let end = (start + 1 + self.below(32)).min(out.len());
                    let copy = out[start..end].to_vec();
                    let to = self.below(out.len() + 1);
                    out.splice(to..to, copy);
                }
                _ if !other.is_empty() => {
                    let start = self.below(other.len());
                    let end = (start + 1 + self.below(64)).min(other.len());
                    let to = self.below(out.len() + 1);
                    out.splice(to..to, other[start..end].iter().copied());
                }
                _ => {}
            }
        }
        out
    }
}

/// Proof decoder: whatever it accepts re-encodes to the same bytes and
/// verifies against the root of the tree it describes, with the same
/// values the decode walk derived.
pub fn proof_decode(data: &[u8]) -> Result<(), Finding> {
    if let Ok(proof) = crate::proof::Proof::decode(data) {
        if proof.encode() != data {
            return Err("a decoded proof re-encodes differently".into());
        }
        let (tree, values) = crate::proof::PartialTree::build(&proof)
            .map_err(|e| format!("a decoded proof does not rebuild: {e}"))?;
        match crate::proof::verify(&tree.root(), &proof) {
            Ok(verified) if verified == values => {}
            Ok(_) => return Err("verify derives other values than the walk".into()),
            Err(e) => return Err(format!("a decoded proof fails its own root: {e}")),
        }
        if values.len() != proof.keys().len() {
            return Err("a proven key has neither a value nor an absence".into());
        }
    }
    Ok(())
}

/// Valid proofs over a small tree (stems sharing long prefixes, present
/// and absent keys): the seeds of the proof target.
pub fn seed_proofs() -> Vec<Vec<u8>> {
    let mut tree = ReferenceTree::new();
    let mut keys = Vec::new();
    for i in 0u64..24 {
        let mut key = crate::hash::sha256(&i.to_le_bytes());
        if i.is_multiple_of(3) {
            key[..28].fill(0x5a);
        }
        key[31] = (i.wrapping_mul(37) & 0xff) as u8;
        let key = B256::from(key);
        if i.is_multiple_of(4) {
            keys.push(key);
        } else {
            tree.insert(key, B256::from(crate::hash::sha256(&key.0)));
            keys.push(key);
        }
    }
    let mut seeds = Vec::new();
    for take in [0usize, 1, 2, 5, 24] {
        seeds.push(crate::proof::prove_reference(&tree, &keys[..take]).encode());
        seeds.push(crate::proof::prove_reference(&ReferenceTree::new(), &keys[..take]).encode());
    }
    seeds.sort();
    seeds.dedup();
    seeds
}

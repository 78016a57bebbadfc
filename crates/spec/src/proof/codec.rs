//! The byte encoding of a [`Proof`]: five length-prefixed sections (counts
//! are big-endian `u32`), nothing else.

use alloy_primitives::B256;

use super::{Proof, ProofError};
use crate::hash::Hash;
use crate::key::{Stem, STEM_BYTES};

fn push_count(out: &mut Vec<u8>, count: usize) {
    // Sections hold at most a few million entries; a proof is far below 4 GiB.
    #[allow(clippy::cast_possible_truncation)]
    out.extend_from_slice(&(count as u32).to_be_bytes());
}

/// Encodes `proof`: keys, shape (bit count then bytes), hashes, stems,
/// values.
pub(super) fn encode(proof: &Proof) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        20 + 32 * (proof.keys.len() + proof.hashes.len() + proof.values.len())
            + STEM_BYTES * proof.stems.len()
            + proof.shape.len(),
    );
    push_count(&mut out, proof.keys.len());
    for key in &proof.keys {
        out.extend_from_slice(key.as_slice());
    }
    push_count(&mut out, proof.shape_bits);
    out.extend_from_slice(&proof.shape);
    push_count(&mut out, proof.hashes.len());
    for hash in &proof.hashes {
        out.extend_from_slice(hash);
    }
    push_count(&mut out, proof.stems.len());
    for stem in &proof.stems {
        out.extend_from_slice(&stem.0);
    }
    push_count(&mut out, proof.values.len());
    for value in &proof.values {
        out.extend_from_slice(value.as_slice());
    }
    out
}

struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProofError> {
        if self.rest.len() < n {
            return Err(ProofError::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn count(&mut self) -> Result<usize, ProofError> {
        let mut word = [0u8; 4];
        word.copy_from_slice(self.take(4)?);
        usize::try_from(u32::from_be_bytes(word)).map_err(|_| ProofError::Truncated)
    }

    /// `count` records of `width` bytes, checked against the remaining
    /// length before anything is allocated.
    fn records(&mut self, width: usize) -> Result<std::slice::ChunksExact<'a, u8>, ProofError> {
        let count = self.count()?;
        let bytes = count.checked_mul(width).ok_or(ProofError::Truncated)?;
        Ok(self.take(bytes)?.chunks_exact(width))
    }
}

fn hash_of(chunk: &[u8]) -> Hash {
    let mut hash = [0u8; 32];
    hash.copy_from_slice(chunk);
    hash
}

/// Parses the sections; the shape walk (in [`Proof::decode`]) does the rest.
pub(super) fn decode(bytes: &[u8]) -> Result<Proof, ProofError> {
    let mut cursor = Cursor { rest: bytes };
    let keys: Vec<B256> = cursor.records(32)?.map(B256::from_slice).collect();
    if keys.windows(2).any(|pair| pair[0] >= pair[1]) {
        return Err(ProofError::KeysNotSorted);
    }
    let shape_bits = cursor.count()?;
    let shape = cursor.take(shape_bits.div_ceil(8))?.to_vec();
    if shape_bits % 8 != 0 {
        let used = shape_bits % 8;
        if shape.last().is_some_and(|last| last & (0xff >> used) != 0) {
            return Err(ProofError::ShapePadding);
        }
    }
    let hashes = cursor.records(32)?.map(hash_of).collect();
    let stems = cursor
        .records(STEM_BYTES)?
        .map(|chunk| {
            let mut stem = [0u8; STEM_BYTES];
            stem.copy_from_slice(chunk);
            Stem(stem)
        })
        .collect();
    let values = cursor.records(32)?.map(B256::from_slice).collect();
    if !cursor.rest.is_empty() {
        return Err(ProofError::TrailingBytes);
    }
    Ok(Proof {
        keys,
        shape,
        shape_bits,
        hashes,
        stems,
        values,
    })
}

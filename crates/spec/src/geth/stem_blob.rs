//! Stem blobs: `0x01 | stem (31) | bitmap (32, bit i MSB-first = sub-index i
//! present) | present values ascending (32 each)`.

use alloy_primitives::B256;

use super::BlobError;
use crate::key::Stem;

/// Type byte of a stem blob.
pub const STEM_BLOB_TYPE: u8 = 0x01;
const HEADER_BYTES: usize = 1 + 31 + 32;

/// Encodes a stem and its present values (ascending sub-index).
pub fn encode(stem: &Stem, values: &[(u8, B256)]) -> Vec<u8> {
    debug_assert!(values.windows(2).all(|w| w[0].0 < w[1].0));
    let mut blob = Vec::with_capacity(HEADER_BYTES + 32 * values.len());
    blob.push(STEM_BLOB_TYPE);
    blob.extend_from_slice(&stem.0);
    let mut bitmap = [0u8; 32];
    for (sub_index, _) in values {
        bitmap[usize::from(*sub_index) / 8] |= 0x80 >> (sub_index % 8);
    }
    blob.extend_from_slice(&bitmap);
    for (_, value) in values {
        blob.extend_from_slice(value.as_slice());
    }
    blob
}

/// Decodes a stem blob into the stem and its present values.
pub fn decode(blob: &[u8]) -> Result<(Stem, Vec<(u8, B256)>), BlobError> {
    let Some(header) = blob.get(..HEADER_BYTES) else {
        return Err(BlobError::Length {
            kind: "stem",
            expected: HEADER_BYTES,
            actual: blob.len(),
        });
    };
    if header[0] != STEM_BLOB_TYPE {
        return Err(BlobError::UnknownType(header[0]));
    }
    let mut stem = Stem::default();
    stem.0.copy_from_slice(&header[1..32]);
    let bitmap = &header[32..64];
    let count: usize = bitmap.iter().map(|b| b.count_ones() as usize).sum();
    let expected = HEADER_BYTES + 32 * count;
    if blob.len() != expected {
        return Err(BlobError::Length {
            kind: "stem",
            expected,
            actual: blob.len(),
        });
    }
    let present = (0..=255u8).filter(|i| bitmap[usize::from(*i) / 8] & (0x80 >> (i % 8)) != 0);
    let values = present
        .zip(blob[HEADER_BYTES..].chunks_exact(32))
        .map(|(i, v)| (i, B256::from_slice(v)))
        .collect();
    Ok((stem, values))
}

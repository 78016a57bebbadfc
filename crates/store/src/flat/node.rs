//! A flat directory node: the fences of up to [`NODE_FANOUT_MAX`] children
//! (leaves for level 1, nodes of the level below otherwise), in one block
//! at most (docs/file-format.md, "Flat directory node"):
//!
//! ```text
//! off  len  field
//! 0    4    CRC-32C of bytes [4, encoded length)
//! 4    1    tag 0xb5
//! 5    1    format version
//! 6    1    level l (1 = the children are leaves)
//! 7    2    child count n (1..=56)
//! 9    68n  per child, first keys strictly ascending: its first key
//!           (52 bytes) and its extent (offset u64, length u32, CRC u32)
//! ```
//!
//! Decoding accepts only canonical bytes and never panics.

use super::key::{FlatKey, FLAT_KEY_BYTES};
use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Extent, Reader, FORMAT_VERSION_BYTE};

/// Tag byte of a flat directory node.
pub const TAG_FLAT_NODE: u8 = 0xb5;
/// The most children a node has (68 bytes each: a node fits one block).
pub const NODE_FANOUT_MAX: usize = 56;
/// The deepest level a directory may have (with at least four children
/// per node below the top, 2^64 leaves need fewer).
pub const LEVEL_MAX: u8 = 40;
const HEADER_BYTES: usize = 9;
const ENTRY_BYTES: usize = FLAT_KEY_BYTES + 16;

/// One child of a node: its first key and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Child {
    /// The smallest key below the child.
    pub key: FlatKey,
    /// Where the child is written.
    pub extent: Extent,
}

/// Encodes a node of `level` over `children` (1..=[`NODE_FANOUT_MAX`],
/// keys ascending).
pub fn encode(level: u8, children: &[Child]) -> Vec<u8> {
    debug_assert!((1..=NODE_FANOUT_MAX).contains(&children.len()));
    debug_assert!(children.windows(2).all(|w| w[0].key < w[1].key));
    let mut out = Vec::with_capacity(HEADER_BYTES + ENTRY_BYTES * children.len());
    out.extend_from_slice(&[0u8; 4]);
    out.push(TAG_FLAT_NODE);
    out.push(FORMAT_VERSION_BYTE);
    out.push(level);
    // At most NODE_FANOUT_MAX.
    #[allow(clippy::cast_possible_truncation)]
    out.extend_from_slice(&(children.len() as u16).to_le_bytes());
    for child in children {
        out.extend_from_slice(child.key.as_bytes());
        child.extent.encode_into(&mut out);
    }
    let crc = checksum(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a node, checking its checksum, its level and that it is
/// canonical.
pub fn decode(bytes: &[u8], level: u8, location: &str) -> Result<Vec<Child>> {
    let corrupt = |detail: String| StoreError::corrupted(Structure::FlatNode, location, detail);
    let short = || corrupt("truncated".into());
    let mut reader = Reader::new(bytes);
    let crc = reader.u32().ok_or_else(short)?;
    if checksum(&bytes[4..]) != crc {
        return Err(corrupt("checksum mismatch".into()));
    }
    if reader.u8().ok_or_else(short)? != TAG_FLAT_NODE {
        return Err(corrupt("not a flat directory node".into()));
    }
    let version = reader.u8().ok_or_else(short)?;
    if version != FORMAT_VERSION_BYTE {
        return Err(corrupt(format!("format version {version}")));
    }
    let found = reader.u8().ok_or_else(short)?;
    if found != level {
        return Err(corrupt(format!(
            "level {found} where level {level} belongs"
        )));
    }
    let count = usize::from(reader.u16().ok_or_else(short)?);
    if !(1..=NODE_FANOUT_MAX).contains(&count) {
        return Err(corrupt(format!("{count} children")));
    }
    let mut children: Vec<Child> = Vec::with_capacity(count);
    for _ in 0..count {
        let key = FlatKey::from_bytes(reader.array().ok_or_else(short)?);
        let extent =
            Extent::decode(&mut reader).ok_or_else(|| corrupt("bad child extent".into()))?;
        if children.last().is_some_and(|last| last.key >= key) {
            return Err(corrupt("children out of order".into()));
        }
        children.push(Child { key, extent });
    }
    if reader.remaining() != 0 {
        return Err(corrupt("trailing bytes".into()));
    }
    Ok(children)
}

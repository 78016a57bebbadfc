//! The on-disk encoding of an upper-trie page (docs/file-format.md, "Trie
//! page"): the nodes at relative depths 1..=G below an internal node at
//! depth `a * G`, stored sparsely.
//!
//! ```text
//! off  len   field
//! 0    4     CRC-32C of bytes [4, encoded length)
//! 4    1     tag 0xb2
//! 5    1     format version (2)
//! 6    1     group depth G (1..=8)
//! 7    1     depth of the page's root node (a multiple of G)
//! 8    4     encoded length in bytes
//! 12   2     number of entries
//! 14   31    prefix of the page's root node (bits past its depth are zero)
//! 45   S/8   presence bitmap over the S = 2^(G+1) - 2 slots, MSB-first;
//!            slot (2^r - 2 + i) is the node at relative depth r whose
//!            relative path, read as a number, is i
//! ...        one entry per present slot, ascending
//! ```
//!
//! An entry is a flags byte (bits 0-1 occupancy, bit 2 leaf, bit 3 has a
//! reference), the 32-byte hash unless the occupancy is empty, and a
//! 16-byte [`Extent`] when flagged: a leaf's bucket (absent only for an
//! empty bucket), or the page below a bottom-row internal node (always).
//! The meta record holds the root node as one such entry.

use super::{Link, NodeId, UpperTrie};
use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Extent, Reader, FORMAT_VERSION, FORMAT_VERSION_BYTE, TAG_TRIE_PAGE};
use crate::prefix::Prefix;
use crate::summary::{Occupancy, Summary};
use crate::upper::BucketId;

const HEADER_BYTES: usize = 45;
const FLAG_LEAF: u8 = 1 << 2;
const FLAG_REF: u8 = 1 << 3;

/// Slots in a page of group depth `g`.
pub fn slot_count(group_depth: u8) -> usize {
    (1usize << (group_depth + 1)) - 2
}

/// The slot of the node at relative depth `r` (1..=G) with relative path `i`.
pub fn slot_of(relative_depth: usize, index: usize) -> usize {
    (1usize << relative_depth) - 2 + index
}

/// One node as stored: in a page, or as the meta record's root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The node's summary.
    pub summary: Summary,
    /// Whether the node is a bucket.
    pub leaf: bool,
    /// The bucket, or the page below a bottom-row internal node.
    pub extent: Option<Extent>,
}

impl Entry {
    /// Appends the encoding.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let mut flags = self.summary.occupancy.code();
        if self.leaf {
            flags |= FLAG_LEAF;
        }
        if self.extent.is_some() {
            flags |= FLAG_REF;
        }
        out.push(flags);
        if self.summary.occupancy != Occupancy::Empty {
            out.extend_from_slice(&self.summary.hash);
        }
        if let Some(extent) = &self.extent {
            extent.encode_into(out);
        }
    }

    /// Decodes one entry; `Err` names the problem.
    pub fn decode(r: &mut Reader<'_>) -> std::result::Result<Entry, &'static str> {
        let flags = r.u8().ok_or("entry truncated")?;
        if flags & !(3 | FLAG_LEAF | FLAG_REF) != 0 {
            return Err("unknown entry flag bits");
        }
        let occupancy = Occupancy::from_code(flags & 3).ok_or("occupancy code 3")?;
        let hash = if occupancy == Occupancy::Empty {
            [0u8; 32]
        } else {
            r.array().ok_or("entry truncated")?
        };
        let extent = if flags & FLAG_REF != 0 {
            Some(Extent::decode(r).ok_or("bad block reference")?)
        } else {
            None
        };
        Ok(Entry {
            summary: Summary { occupancy, hash },
            leaf: flags & FLAG_LEAF != 0,
            extent,
        })
    }
}

/// Encodes the page rooted at `page_root` (an internal node at a depth
/// that is a multiple of G, with prefix `prefix`). `bucket_ref` gives each
/// bucket's current location, `summary_of` each node's summary to store;
/// pages below must have been written.
pub fn encode(
    trie: &UpperTrie,
    page_root: NodeId,
    prefix: &Prefix,
    bucket_ref: &dyn Fn(BucketId) -> Option<Extent>,
    summary_of: &dyn Fn(NodeId) -> Summary,
) -> Vec<u8> {
    let g = usize::from(trie.group_depth());
    let root = trie.node(page_root);
    debug_assert_eq!(root.depth(), prefix.len());
    debug_assert!(trie.is_page_root_depth(prefix.len()));
    let mut present: Vec<(usize, Entry)> = Vec::new();
    // (node, relative depth, relative path)
    let mut stack: Vec<(NodeId, usize, usize)> = Vec::new();
    if let Link::Internal([left, right]) = root.link() {
        stack.push((right, 1, 1));
        stack.push((left, 1, 0));
    }
    while let Some((id, r, i)) = stack.pop() {
        let node = trie.node(id);
        debug_assert!(!node.is_stale(), "encoding a stale node");
        let entry = match node.link() {
            Link::Leaf(bucket) => Entry {
                summary: summary_of(id),
                leaf: true,
                extent: bucket_ref(bucket),
            },
            Link::Internal([left, right]) => {
                if r < g {
                    stack.push((right, r + 1, 2 * i + 1));
                    stack.push((left, r + 1, 2 * i));
                    Entry {
                        summary: summary_of(id),
                        leaf: false,
                        extent: None,
                    }
                } else {
                    let page = trie.page(id).and_then(|p| p.extent);
                    debug_assert!(page.is_some(), "child page not written yet");
                    Entry {
                        summary: summary_of(id),
                        leaf: false,
                        extent: page,
                    }
                }
            }
        };
        present.push((slot_of(r, i), entry));
    }
    present.sort_unstable_by_key(|(slot, _)| *slot);
    let slots = slot_count(trie.group_depth());
    let mut out = Vec::with_capacity(HEADER_BYTES + slots.div_ceil(8) + present.len() * 49);
    out.extend_from_slice(&[0u8; 4]);
    out.push(TAG_TRIE_PAGE);
    out.push(FORMAT_VERSION_BYTE);
    out.push(trie.group_depth());
    out.push(prefix.len_byte());
    out.extend_from_slice(&[0u8; 4]); // encoded length, patched below
    #[allow(clippy::cast_possible_truncation)] // at most one entry per slot, 510 at G = 8
    let entries = present.len() as u16;
    out.extend_from_slice(&entries.to_le_bytes());
    out.extend_from_slice(prefix.bytes());
    let mut bitmap = vec![0u8; slots.div_ceil(8)];
    for (slot, _) in &present {
        bitmap[slot / 8] |= 0x80 >> (slot % 8);
    }
    out.extend_from_slice(&bitmap);
    for (_, entry) in &present {
        entry.encode_into(&mut out);
    }
    // A few KiB: the header and at most 510 entries of 49 bytes.
    #[allow(clippy::cast_possible_truncation)]
    let len = out.len() as u32;
    out[8..12].copy_from_slice(&len.to_le_bytes());
    let crc = checksum(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// A decoded, structurally validated page: its entries by slot.
#[derive(Clone, Debug)]
pub struct DecodedPage {
    /// `(relative depth, relative path, entry)` in slot order.
    pub entries: Vec<(usize, usize, Entry)>,
}

/// Decodes and validates a page read from `bytes` (possibly padded),
/// expected to be rooted at `prefix` with the given checksum.
pub fn decode(
    bytes: &[u8],
    group_depth: u8,
    prefix: &Prefix,
    expected_crc: u32,
    location: &str,
) -> Result<DecodedPage> {
    let bad = |detail: String| StoreError::corrupted(Structure::TriePage, location, detail);
    let mut r = Reader::new(bytes);
    let short = || bad("shorter than its header".into());
    let stored_crc = r.u32().ok_or_else(short)?;
    let tag = r.u8().ok_or_else(short)?;
    let version = r.u8().ok_or_else(short)?;
    let g = r.u8().ok_or_else(short)?;
    let depth = usize::from(r.u8().ok_or_else(short)?);
    let encoded_len = r.u32().ok_or_else(short)? as usize;
    let count = usize::from(r.u16().ok_or_else(short)?);
    let prefix_bytes: [u8; 31] = r.array().ok_or_else(short)?;
    if tag != TAG_TRIE_PAGE {
        return Err(bad(format!("tag {tag:#04x} is not a trie page's")));
    }
    if encoded_len < HEADER_BYTES || encoded_len > bytes.len() {
        return Err(bad(format!("encoded length {encoded_len}")));
    }
    let crc = checksum(&bytes[4..encoded_len]);
    if crc != stored_crc || crc != expected_crc {
        return Err(bad(format!(
            "checksum mismatch (computed {crc:#010x}, stored {stored_crc:#010x}, \
             referenced {expected_crc:#010x})"
        )));
    }
    if u16::from(version) != FORMAT_VERSION {
        return Err(bad(format!("format version {version}")));
    }
    if g != group_depth {
        return Err(bad(format!("group depth {g}, database has {group_depth}")));
    }
    let stored_prefix = Prefix::from_parts(prefix_bytes, depth)
        .ok_or_else(|| bad("prefix bits set past its depth".into()))?;
    if stored_prefix != *prefix {
        return Err(bad(format!(
            "rooted at {stored_prefix:?}, expected {prefix:?}"
        )));
    }
    let slots = slot_count(g);
    let mut body = Reader::new(&bytes[r.position()..encoded_len]);
    let bitmap = body
        .take(slots.div_ceil(8))
        .ok_or_else(|| bad("bitmap truncated".into()))?;
    if !slots.is_multiple_of(8) && bitmap[slots / 8] & (0xffu8 >> (slots % 8)) != 0 {
        return Err(bad("presence bits set past the last slot".into()));
    }
    let is_present = |slot: usize| bitmap[slot / 8] & (0x80 >> (slot % 8)) != 0;
    let g = usize::from(g);
    let mut entries = Vec::with_capacity(count);
    let mut internal = vec![false; slots];
    for rel in 1..=g {
        for index in 0..(1usize << rel) {
            let slot = slot_of(rel, index);
            let parent_internal = rel == 1 || internal[slot_of(rel - 1, index / 2)];
            if !is_present(slot) {
                if parent_internal {
                    return Err(bad(format!("slot {slot} missing below an internal node")));
                }
                continue;
            }
            if !parent_internal {
                return Err(bad(format!("slot {slot} present below a leaf or gap")));
            }
            let entry = Entry::decode(&mut body).map_err(|e| bad(format!("slot {slot}: {e}")))?;
            let expect_ref = if entry.leaf {
                entry.summary.occupancy != Occupancy::Empty
            } else {
                rel == g
            };
            if entry.extent.is_some() != expect_ref {
                return Err(bad(format!(
                    "slot {slot}: block reference present = {}",
                    !expect_ref
                )));
            }
            internal[slot] = !entry.leaf;
            entries.push((rel, index, entry));
        }
    }
    if entries.len() != count {
        return Err(bad(format!(
            "{} entries, header says {count}",
            entries.len()
        )));
    }
    if body.remaining() != 0 {
        return Err(bad("bytes left after the last entry".into()));
    }
    Ok(DecodedPage { entries })
}

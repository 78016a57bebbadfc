//! A flat leaf: sorted `(FlatKey, value)` records in at most one block
//! (docs/file-format.md, "Flat leaf"):
//!
//! ```text
//! off  len  field
//! 0    4    CRC-32C of bytes [4, encoded length)
//! 4    1    tag 0xb4
//! 5    1    format version
//! 6    2    group count g (>= 1)
//! 8    ...  g groups, owners strictly ascending: the owner's 20-byte
//!           address, its record count n (>= 1) as two bytes, then n
//!           records, tree keys strictly ascending: the 32-byte tree key,
//!           the value's length l (0..=32) and its last l bytes (the value
//!           big-endian without leading zero bytes: l = 0 for zero, and
//!           the first stored byte is never zero)
//! ```
//!
//! Values are stored without leading zeros because most state values are
//! small numbers (balances, nonces, counters): an ERC20 balance record
//! takes ~36 bytes, so a leaf holds ~110 of one token's slots.
//!
//! Decoding accepts only canonical bytes (everything it accepts re-encodes
//! to the same bytes) and never panics; [`lookup`] reads one key out of
//! checksummed bytes without allocating.

use alloy_primitives::B256;

use super::key::{FlatKey, FLAT_KEY_BYTES};
use crate::bucket::codec::Location;
use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Reader, BLOCK_BYTES, FORMAT_VERSION_BYTE};

/// Tag byte of a flat leaf.
pub const TAG_FLAT_LEAF: u8 = 0xb4;
/// The most bytes a leaf takes: one block.
pub const LEAF_BYTES_MAX: usize = BLOCK_BYTES;
/// Header bytes: checksum, tag, version, group count.
const HEADER_BYTES: usize = 8;
/// Bytes of a group's header: owner and record count.
const GROUP_HEADER_BYTES: usize = 22;
/// Owner bytes of a flat key.
const OWNER_BYTES: usize = 20;

/// One record: its key and value.
pub type Record = (FlatKey, B256);

/// The stored bytes of `value`: without its leading zero bytes.
fn value_bytes(value: &B256) -> &[u8] {
    let leading = value.iter().take_while(|&&b| b == 0).count();
    &value[leading..]
}

/// Bytes of a record with `value` (its group header not included).
pub fn record_bytes(value: &B256) -> usize {
    32 + 1 + value_bytes(value).len()
}

/// Encoded bytes of a leaf holding no record.
pub const EMPTY_LEAF_BYTES: usize = HEADER_BYTES;

/// Bytes `record` adds to a leaf whose last record is `last`: the record,
/// and a group header when it starts another account's group. Summed from
/// [`EMPTY_LEAF_BYTES`], what [`encoded_len`] gives.
pub fn appended_len(last: Option<&Record>, record: &Record) -> usize {
    let same_owner = last.is_some_and(|(last, _)| {
        last.as_bytes()[..OWNER_BYTES] == record.0.as_bytes()[..OWNER_BYTES]
    });
    let group = if same_owner { 0 } else { GROUP_HEADER_BYTES };
    group + record_bytes(&record.1)
}

/// Encoded bytes of a leaf holding `records` (sorted, unique).
pub fn encoded_len(records: &[Record]) -> usize {
    let mut len = HEADER_BYTES;
    let mut owner: Option<&[u8]> = None;
    for (key, value) in records {
        let this = &key.as_bytes()[..OWNER_BYTES];
        if owner != Some(this) {
            len += GROUP_HEADER_BYTES;
            owner = Some(this);
        }
        len += record_bytes(value);
    }
    len
}

/// Encodes a leaf of `records`: sorted by key, unique, at least one, and
/// fitting [`LEAF_BYTES_MAX`] (what [`pack`] produces).
pub fn encode(records: &[Record]) -> Vec<u8> {
    debug_assert!(!records.is_empty(), "an empty leaf");
    debug_assert!(records.windows(2).all(|w| w[0].0 < w[1].0), "unsorted leaf");
    let mut out = Vec::with_capacity(encoded_len(records));
    out.extend_from_slice(&[0u8; 4]);
    out.push(TAG_FLAT_LEAF);
    out.push(FORMAT_VERSION_BYTE);
    out.extend_from_slice(&[0u8; 2]);
    let mut groups = 0u16;
    let mut start = 0;
    while start < records.len() {
        let owner = &records[start].0.as_bytes()[..OWNER_BYTES];
        let end = start
            + records[start..]
                .iter()
                .take_while(|(key, _)| &key.as_bytes()[..OWNER_BYTES] == owner)
                .count();
        out.extend_from_slice(owner);
        // A leaf of one block holds fewer than 2^16 records.
        #[allow(clippy::cast_possible_truncation)]
        out.extend_from_slice(&((end - start) as u16).to_le_bytes());
        for (key, value) in &records[start..end] {
            out.extend_from_slice(&key.as_bytes()[OWNER_BYTES..]);
            let stored = value_bytes(value);
            // At most 32 bytes.
            #[allow(clippy::cast_possible_truncation)]
            out.push(stored.len() as u8);
            out.extend_from_slice(stored);
        }
        groups += 1;
        start = end;
    }
    out[6..8].copy_from_slice(&groups.to_le_bytes());
    let crc = checksum(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    debug_assert!(out.len() <= LEAF_BYTES_MAX, "leaf of {} bytes", out.len());
    out
}

/// The checksum stored in encoded leaf bytes (the extent's checksum).
pub fn stored_crc(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn corrupt(location: Location<'_>, detail: impl Into<String>) -> StoreError {
    StoreError::corrupted(Structure::FlatLeaf, location.to_string(), detail)
}

/// Reads the header; returns the group count.
fn header(reader: &mut Reader<'_>, bytes: &[u8], location: Location<'_>) -> Result<u16> {
    let short = || corrupt(location, "truncated header");
    if bytes.len() > LEAF_BYTES_MAX {
        return Err(corrupt(location, format!("{} bytes", bytes.len())));
    }
    let crc = reader.u32().ok_or_else(short)?;
    if checksum(&bytes[4..]) != crc {
        return Err(corrupt(location, "checksum mismatch"));
    }
    if reader.u8().ok_or_else(short)? != TAG_FLAT_LEAF {
        return Err(corrupt(location, "not a flat leaf"));
    }
    let version = reader.u8().ok_or_else(short)?;
    if version != FORMAT_VERSION_BYTE {
        return Err(corrupt(location, format!("format version {version}")));
    }
    match reader.u16().ok_or_else(short)? {
        0 => Err(corrupt(location, "no groups")),
        groups => Ok(groups),
    }
}

/// Reads one record's tree key and value.
fn record<'a>(reader: &mut Reader<'a>, location: Location<'_>) -> Result<(&'a [u8], B256)> {
    let short = || corrupt(location, "truncated record");
    let tree_key = reader.take(32).ok_or_else(short)?;
    let len = usize::from(reader.u8().ok_or_else(short)?);
    if len > 32 {
        return Err(corrupt(location, format!("value of {len} bytes")));
    }
    let stored = reader.take(len).ok_or_else(short)?;
    if stored.first() == Some(&0) {
        return Err(corrupt(location, "value with a leading zero byte"));
    }
    let mut value = B256::ZERO;
    value[32 - len..].copy_from_slice(stored);
    Ok((tree_key, value))
}

/// Decodes a leaf, checking its checksum and that it is canonical.
pub fn decode(bytes: &[u8], location: Location<'_>) -> Result<Vec<Record>> {
    let mut reader = Reader::new(bytes);
    let groups = header(&mut reader, bytes, location)?;
    let mut records: Vec<Record> = Vec::new();
    for _ in 0..groups {
        let short = || corrupt(location, "truncated group");
        let owner = reader.take(OWNER_BYTES).ok_or_else(short)?;
        let count = reader.u16().ok_or_else(short)?;
        if count == 0 {
            return Err(corrupt(location, "empty group"));
        }
        for _ in 0..count {
            let (tree_key, value) = record(&mut reader, location)?;
            let mut key = [0u8; FLAT_KEY_BYTES];
            key[..OWNER_BYTES].copy_from_slice(owner);
            key[OWNER_BYTES..].copy_from_slice(tree_key);
            let key = FlatKey::from_bytes(key);
            if records.last().is_some_and(|(last, _)| *last >= key) {
                return Err(corrupt(location, "records out of order"));
            }
            records.push((key, value));
        }
    }
    if reader.remaining() != 0 {
        return Err(corrupt(location, "trailing bytes"));
    }
    Ok(records)
}

/// The value of `key` in checksummed leaf `bytes` (read from an extent
/// whose checksum matched, or from the cache), without allocating. Bytes
/// that do not parse are an error, never a panic.
///
/// The scan is on every cached account read, so it decodes nothing it
/// passes: a record of another key costs a compare of the tree key's
/// first word (random bytes: it decides almost always) and a skip by the
/// value's length; only the matching record's value is decoded (and
/// checked canonical).
pub fn lookup(bytes: &[u8], key: &FlatKey, location: Location<'_>) -> Result<Option<B256>> {
    let short = || corrupt(location, "truncated leaf");
    let groups = bytes
        .get(6..HEADER_BYTES)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(short)?;
    let (owner, tree_key) = key.as_bytes().split_at(OWNER_BYTES);
    let first_word =
        |k: &[u8]| u64::from_be_bytes([k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]]);
    let wanted = first_word(tree_key);
    // Where the record at `at` ends (bounds and length checked).
    let record_end = |at: usize| -> Result<usize> {
        match bytes.get(at + 32) {
            Some(&len) if len <= 32 => Ok(at + 33 + usize::from(len)),
            Some(len) => Err(corrupt(location, format!("value of {len} bytes"))),
            None => Err(short()),
        }
    };
    let mut at = HEADER_BYTES;
    for _ in 0..groups {
        let group = bytes.get(at..at + GROUP_HEADER_BYTES).ok_or_else(short)?;
        let (this_owner, count) = group.split_at(OWNER_BYTES);
        let count = u16::from_le_bytes([count[0], count[1]]);
        at += GROUP_HEADER_BYTES;
        match this_owner.cmp(owner) {
            std::cmp::Ordering::Greater => return Ok(None),
            std::cmp::Ordering::Less => {
                for _ in 0..count {
                    at = record_end(at)?;
                }
            }
            std::cmp::Ordering::Equal => {
                for _ in 0..count {
                    let this_key = bytes.get(at..at + 32).ok_or_else(short)?;
                    let word = first_word(this_key);
                    if word > wanted || (word == wanted && this_key >= tree_key) {
                        if this_key != tree_key {
                            return Ok(None);
                        }
                        let mut reader = Reader::new(bytes.get(at..).ok_or_else(short)?);
                        return record(&mut reader, location).map(|(_, value)| Some(value));
                    }
                    at = record_end(at)?;
                }
                return Ok(None);
            }
        }
    }
    Ok(None)
}

/// Cuts sorted, unique `records` into leaves that each encode to at most
/// `fill_bytes` (clamped to [`LEAF_BYTES_MAX`]), balanced so that the last
/// leaf is not a sliver: every leaf but the last gets about the same
/// share. No leaf is empty; no records give no leaves.
pub fn pack(records: Vec<Record>, fill_bytes: usize) -> Vec<Vec<Record>> {
    let fill_bytes = fill_bytes.clamp(HEADER_BYTES + GROUP_HEADER_BYTES + 65, LEAF_BYTES_MAX);
    let total = encoded_len(&records);
    if total <= fill_bytes {
        return if records.is_empty() {
            Vec::new()
        } else {
            vec![records]
        };
    }
    let leaves = total.div_ceil(fill_bytes);
    // Aim at an equal share; a leaf closes once it reaches the share or
    // the next record would overflow the fill.
    let share = total.div_ceil(leaves);
    let mut out = Vec::with_capacity(leaves + 1);
    let mut current: Vec<Record> = Vec::new();
    let mut len = HEADER_BYTES;
    for record in records {
        let same_owner = current.last().is_some_and(|(last, _)| {
            last.as_bytes()[..OWNER_BYTES] == record.0.as_bytes()[..OWNER_BYTES]
        });
        let grows = record_bytes(&record.1) + if same_owner { 0 } else { GROUP_HEADER_BYTES };
        if !current.is_empty() && (len >= share || len + grows > fill_bytes) {
            out.push(std::mem::take(&mut current));
            len = HEADER_BYTES;
        }
        let grows = if current.is_empty() {
            record_bytes(&record.1) + GROUP_HEADER_BYTES
        } else {
            grows
        };
        len += grows;
        current.push(record);
    }
    if !current.is_empty() {
        out.push(current);
    }
    debug_assert!(out.iter().all(|leaf| encoded_len(leaf) <= LEAF_BYTES_MAX));
    out
}

//! Bodies of the decoder targets: each decodes its input and, when the
//! decoder accepts it, checks that the structure re-encodes to exactly the
//! accepted bytes (decoders accept only canonical encodings) and that the
//! functions reading it agree with each other.

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::key::Stem;

use super::{fix_crc, split_control, u32_at, Finding};
use crate::bucket::codec;
use crate::error::StoreError;
use crate::flat::key::{FlatKey, FLAT_KEY_BYTES};
use crate::flat::{leaf, node};
use crate::io::sim::SimDir;
use crate::io::{StoreDir, StoreFile};
use crate::meta::{choose, Choice, Meta, SlotState, META_SLOTS, META_SLOT_BYTES};
use crate::options::Options;
use crate::prefix::Prefix;
use crate::upper::page;
use crate::{revert_log, wal, Store, DATA_FILE, META_FILE, WAL_FILE};

/// The prefix a bucket or page header claims (length byte at `len_at`,
/// prefix bytes from `bytes_at`), or the root prefix if it is not one.
fn claimed_prefix(bytes: &[u8], len_at: usize, bytes_at: usize) -> Prefix {
    let Some(&len) = bytes.get(len_at) else {
        return Prefix::ROOT;
    };
    let len = usize::from(len);
    let mut bits = [0u8; 31];
    let want = len.div_ceil(8).min(31);
    match bytes.get(bytes_at..bytes_at + want) {
        Some(stored) => bits[..want].copy_from_slice(stored),
        None => return Prefix::ROOT,
    }
    Prefix::from_parts(bits, len).unwrap_or(Prefix::ROOT)
}

/// Bucket: `[control][bucket bytes]`, decoded at the prefix its header
/// claims. An accepted bucket re-encodes to its bytes, passes the checksum
/// check the cache relies on, and `lookup` (checked and verified walks)
/// finds every value `decode` found (and nothing at a stem it does not
/// hold); the verified walk never panics on bytes whose checksum matches.
pub fn bucket(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        fix_crc(&mut bytes, 10);
    }
    let prefix = claimed_prefix(&bytes, 6, 14);
    let crc = u32_at(&bytes, 0).unwrap_or(0);
    let mut absent = Stem(*prefix.bytes());
    absent.0[30] ^= control;
    // The walk for verified bytes takes any bytes whose checksum matches
    // (records it does not check included) without a panic.
    let verified = codec::checksum_matches(&bytes, crc);
    if verified && prefix.contains(&absent) {
        let at = (&absent, control);
        let _ = codec::lookup_with(&bytes, &prefix, crc, &"fuzz", at, codec::Checksum::Verified);
    }
    let Ok(decoded) = codec::decode(&bytes, &prefix, crc, &"fuzz") else {
        return Ok(());
    };
    if !verified {
        return Err("a bucket decodes but its checksum check fails".into());
    }
    let len = u32_at(&bytes, 10).unwrap_or(0) as usize;
    if codec::encode(&decoded) != bytes[..len] {
        return Err("a decoded bucket re-encodes differently".into());
    }
    for entry in decoded.stems() {
        for (sub_index, value) in decoded.pairs_of(entry) {
            let found = codec::lookup(&bytes, &prefix, crc, &"fuzz", &entry.stem, sub_index)
                .map_err(|e| format!("lookup in a bucket that decodes: {e}"))?;
            let at = (&entry.stem, sub_index);
            let walked =
                codec::lookup_with(&bytes, &prefix, crc, &"fuzz", at, codec::Checksum::Verified)
                    .map_err(|e| format!("verified lookup in a bucket that decodes: {e}"))?;
            if found != Some(*value) || walked != found {
                return Err("lookup and decode disagree on a value".into());
            }
        }
    }
    if decoded.stems().iter().all(|e| e.stem != absent) && prefix.contains(&absent) {
        let found = codec::lookup(&bytes, &prefix, crc, &"fuzz", &absent, control)
            .map_err(|e| format!("lookup in a bucket that decodes: {e}"))?;
        let at = (&absent, control);
        let walked =
            codec::lookup_with(&bytes, &prefix, crc, &"fuzz", at, codec::Checksum::Verified)
                .map_err(|e| format!("verified lookup in a bucket that decodes: {e}"))?;
        if found.is_some() || walked.is_some() {
            return Err("lookup found a value at a stem the bucket does not hold".into());
        }
    }
    Ok(())
}

/// Trie page: `[control][page bytes]`, decoded at the prefix and group
/// depth its header claims (bits 1-3 of the control byte choose the group
/// depth when the header's is out of range). An accepted page re-encodes
/// (header, presence bitmap, entries in slot order) to its bytes.
pub fn trie_page(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        fix_crc(&mut bytes, 8);
    }
    let group_depth = match bytes.get(6) {
        Some(&g) if (1..=8).contains(&g) => g,
        _ => 1 + (control >> 1) % 8,
    };
    let prefix = claimed_prefix(&bytes, 7, 14);
    let crc = u32_at(&bytes, 0).unwrap_or(0);
    let Ok(decoded) = page::decode(&bytes, group_depth, &prefix, crc, "fuzz") else {
        return Ok(());
    };
    let len = u32_at(&bytes, 8).unwrap_or(0) as usize;
    let header_bytes = 45;
    let slots = page::slot_count(group_depth);
    let mut again = bytes[..header_bytes].to_vec();
    let mut bitmap = vec![0u8; slots.div_ceil(8)];
    for &(rel, index, _) in &decoded.entries {
        let slot = page::slot_of(rel, index);
        bitmap[slot / 8] |= 0x80 >> (slot % 8);
    }
    again.extend_from_slice(&bitmap);
    for (_, _, entry) in &decoded.entries {
        entry.encode_into(&mut again);
    }
    if again != bytes[..len] {
        return Err("a decoded trie page re-encodes differently".into());
    }
    Ok(())
}

/// Meta slot: `[control][slot bytes]`; bits 1-2 of the control byte give
/// the slot, bit 3 pads or cuts the bytes to a whole slot. An accepted
/// record re-encodes to its bytes.
pub fn meta_slot(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let slot = usize::from((control >> 1) & 3);
    let mut bytes = rest.to_vec();
    if control & 8 != 0 {
        bytes.resize(META_SLOT_BYTES, 0);
    }
    if control & 1 != 0 && bytes.len() >= 4 {
        let crc = crate::format::checksum(&bytes[4..]);
        bytes[..4].copy_from_slice(&crc.to_le_bytes());
    }
    let Ok(meta) = Meta::decode(&bytes, slot) else {
        return Ok(());
    };
    if !meta.slots().contains(&slot) || meta.encode(slot) != bytes {
        return Err("a decoded meta record re-encodes differently".into());
    }
    Ok(())
}

/// The choice of checkpoint: `[control][four slots]` (each slot's CRC
/// recomputed when bit 0 is set, after the bytes are cut or padded to four
/// slots). A chosen checkpoint is one of the valid slots, of the highest
/// generation among them.
pub fn meta_choice(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut file = rest.to_vec();
    file.resize(META_SLOTS * META_SLOT_BYTES, 0);
    if control & 1 != 0 {
        for slot in file.chunks_mut(META_SLOT_BYTES) {
            if slot.iter().any(|b| *b != 0) {
                let crc = crate::format::checksum(&slot[4..]);
                slot[..4].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let slots: [SlotState; META_SLOTS] = std::array::from_fn(|slot| SlotState::read(&file, slot));
    let valid: Vec<Meta> = slots
        .iter()
        .filter_map(|s| match s {
            SlotState::Valid(meta) => Some(*meta),
            _ => None,
        })
        .collect();
    if let Choice::Current(meta, _) = choose(&slots) {
        let newest = valid.iter().map(|m| m.generation).max();
        if !valid.contains(&meta) || Some(meta.generation) != newest {
            return Err("the chosen checkpoint is not the newest valid slot".into());
        }
    }
    Ok(())
}

/// WAL record: `[control][record bytes]`. An accepted record re-encodes to
/// its bytes.
pub fn wal_record(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        fix_crc(&mut bytes, 8);
    }
    let Some(record) = wal::decode(&bytes) else {
        return Ok(());
    };
    let again = wal::encode(
        record.synced,
        record.epoch,
        record.seq,
        &record.root,
        &record.layers,
    )
    .map_err(|e| format!("an accepted record does not encode: {e}"))?;
    if bytes.get(..again.len()) != Some(&again[..]) || again.len() != record.encoded_len() {
        return Err("a decoded WAL record re-encodes differently".into());
    }
    Ok(())
}

/// WAL header marks: `[control][header bytes]`, read as the first bytes
/// of a log (slot `s` from bytes `[512 s, 512 s + 512)`, whichever are
/// there); with bit 0 set, the CRC of each whole slot is recomputed first.
/// The whole input is also decoded as one mark in slot `(control >> 1) & 1`.
/// An accepted mark re-encodes to exactly its bytes and belongs in the
/// slot it was read from, with its base at most its commit and its end at
/// or after the records' start; [`wal::Mark::newest`] over the header is
/// the newest (by epoch, then commit) of the slots that decode.
pub fn wal_mark(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut header = rest.to_vec();
    if control & 1 != 0 {
        for slot in header.chunks_exact_mut(wal::MARK_BYTES) {
            let crc = crate::format::checksum(&slot[4..]);
            slot[..4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let accepted = |bytes: &[u8], slot: usize| -> Result<Option<wal::Mark>, Finding> {
        let Some(mark) = wal::Mark::decode(bytes, slot) else {
            return Ok(None);
        };
        if mark.encode() != bytes {
            return Err("a decoded WAL mark re-encodes differently".into());
        }
        if mark.slot() != slot || mark.seq < mark.base_seq || mark.end < wal::RECORDS_START {
            return Err("an accepted WAL mark breaks its invariants".into());
        }
        Ok(Some(mark))
    };
    accepted(&header, usize::from((control >> 1) & 1))?;
    let mut decoded = Vec::new();
    for slot in 0..2 {
        if let Some(bytes) = header.get(slot * wal::MARK_BYTES..(slot + 1) * wal::MARK_BYTES) {
            decoded.extend(accepted(bytes, slot)?);
        }
    }
    let newest = decoded.iter().copied().max_by_key(|m| (m.epoch, m.seq));
    if wal::Mark::newest(&header) != newest {
        return Err("Mark::newest disagrees with decoding each slot".into());
    }
    Ok(())
}

/// WAL replay: `[control][epoch][base sequence number][log file bytes]`
/// (header marks included). With bit 0 set, the CRC of every record found
/// walking the log by its length fields is recomputed; with bit 1, the CRC
/// of both header marks. Replay returns records of the epoch with
/// consecutive sequence numbers after the base that tile the log from
/// [`wal::RECORDS_START`] up to its end (none, if the log still follows
/// the previous checkpoint), or a `Corrupted` error.
pub fn wal_replay(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let epoch = u64::from(rest.first().copied().unwrap_or(0));
    let base_seq = u64::from(rest.get(1).copied().unwrap_or(0));
    let mut log = rest.get(2..).unwrap_or_default().to_vec();
    let start = wal::RECORDS_START_INDEX;
    if control & 1 != 0 {
        let mut at = start;
        while let Some(len) = u32_at(&log, at + 8) {
            let len = len as usize;
            if len < 68 || at + len > log.len() {
                break;
            }
            fix_crc(&mut log[at..at + len], 8);
            at += len;
        }
    }
    if control & 2 != 0 {
        for slot in 0..2 {
            let range = slot * wal::MARK_BYTES..(slot + 1) * wal::MARK_BYTES;
            if let Some(mark) = log.get_mut(range) {
                let crc = crate::format::checksum(&mark[4..]);
                mark[..4].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let dir = SimDir::new();
    dir.write_raw(WAL_FILE, 0, &log)
        .map_err(|e| format!("simulated disk: {e}"))?;
    let file: Arc<dyn StoreFile> = dir
        .open_file(WAL_FILE, false)
        .map_err(|e| format!("simulated disk: {e}"))?;
    let mut records = Vec::new();
    let replayed = wal::Wal::replay(file.as_ref(), epoch, base_seq, |record| {
        records.push(record);
        Ok(())
    });
    match replayed {
        Ok(end) => {
            let mut at = wal::RECORDS_START;
            for (i, record) in records.iter().enumerate() {
                if record.epoch != epoch || record.seq != base_seq + 1 + i as u64 {
                    return Err("replay returned a record out of sequence".into());
                }
                at += record.encoded_len() as u64;
            }
            if end.restart_pending && !records.is_empty() {
                return Err("replay returned records of a log awaiting its restart".into());
            }
            if at != end.end || (end.end > log.len() as u64 && !records.is_empty()) {
                return Err("replay's end is not the end of its records".into());
            }
            Ok(())
        }
        Err(StoreError::Corrupted { .. }) => Ok(()),
        Err(error) => Err(format!("replay failed with {error}")),
    }
}

/// Revert segment: `[control][segment bytes]`, checked against its stored
/// CRC. An accepted segment re-encodes to its bytes.
pub fn revert_segment(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        fix_crc(&mut bytes, 8);
    }
    let crc = u32_at(&bytes, 0).unwrap_or(0);
    let Ok(diffs) = revert_log::decode_segment(&bytes, crc, "fuzz") else {
        return Ok(());
    };
    let again = revert_log::encode_segment(&diffs);
    if bytes.get(..again.len()) != Some(&again[..]) {
        return Err("a decoded revert segment re-encodes differently".into());
    }
    Ok(())
}

/// Recomputes the CRC-32C in bytes `[0, 4)` over the rest (flat leaves
/// and nodes checksum every byte after it; they have no length field).
fn fix_whole_crc(bytes: &mut [u8]) {
    if bytes.len() >= 4 {
        let crc = crate::format::checksum(&bytes[4..]);
        bytes[..4].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Looks `key` up in any `bytes`: an answer or a `Corrupted` error.
fn flat_lookup(bytes: &[u8], key: &FlatKey) -> Result<(), Finding> {
    match leaf::lookup(bytes, key, &"fuzz") {
        Ok(_) => Ok(()),
        Err(error) if error.is_corruption() => Ok(()),
        Err(error) => Err(format!("flat leaf lookup failed with {error}")),
    }
}

/// Flat leaf: `[control][leaf bytes]`. Lookups of keys taken from the
/// input (its first record's place, the smallest and the largest key)
/// return an answer or a `Corrupted` error, whatever the bytes. An
/// accepted leaf re-encodes to its bytes, and `lookup` finds every record
/// `decode` found, and nothing at a key next to each that the leaf does
/// not hold.
pub fn flat_leaf(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        fix_whole_crc(&mut bytes);
    }
    // Owner of the first group at 8, its first tree key at 30.
    let mut probe = [0u8; FLAT_KEY_BYTES];
    for (at, byte) in probe.iter_mut().enumerate() {
        let from = if at < 20 { 8 + at } else { 10 + at };
        *byte = bytes.get(from).copied().unwrap_or(control);
    }
    for key in [
        FlatKey::from_bytes(probe),
        FlatKey::from_bytes([0; FLAT_KEY_BYTES]),
        FlatKey::from_bytes([0xff; FLAT_KEY_BYTES]),
    ] {
        flat_lookup(&bytes, &key)?;
    }
    let Ok(records) = leaf::decode(&bytes, &"fuzz") else {
        return Ok(());
    };
    if records.is_empty() || leaf::encode(&records) != bytes {
        return Err("a decoded flat leaf re-encodes differently".into());
    }
    let accepted = |key: &FlatKey| {
        leaf::lookup(&bytes, key, &"fuzz")
            .map_err(|e| format!("lookup in a leaf that decodes: {e}"))
    };
    for (key, value) in &records {
        if accepted(key)? != Some(*value) {
            return Err("flat leaf lookup and decode disagree on a value".into());
        }
        let mut next = *key.as_bytes();
        next[FLAT_KEY_BYTES - 1] ^= control | 1;
        let next = FlatKey::from_bytes(next);
        if records.binary_search_by(|(k, _)| k.cmp(&next)).is_err() && accepted(&next)?.is_some() {
            return Err("flat leaf lookup found a key the leaf does not hold".into());
        }
    }
    Ok(())
}

/// Flat directory node: `[control][node bytes]`, decoded at level
/// `control >> 1` (bit 0 recomputes the checksum). An accepted node holds
/// 1..=56 children, first keys strictly ascending, and re-encodes to its
/// bytes.
pub fn flat_node(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let level = control >> 1;
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        fix_whole_crc(&mut bytes);
    }
    let Ok(children) = node::decode(&bytes, level, "fuzz") else {
        return Ok(());
    };
    if !(1..=node::NODE_FANOUT_MAX).contains(&children.len())
        || children.windows(2).any(|w| w[0].key >= w[1].key)
    {
        return Err("an accepted flat node breaks its invariants".into());
    }
    if node::encode(level, &children) != bytes {
        return Err("a decoded flat node re-encodes differently".into());
    }
    Ok(())
}

/// Splits a database image input: `[control][u32 meta length][meta]
/// [u32 data length][data][WAL]` (lengths clamped to the bytes present).
fn split_image(rest: &[u8]) -> [&[u8]; 3] {
    let mut at = 0usize;
    let mut take = |rest: &'_ [u8]| -> (usize, usize) {
        let len = u32_at(rest, at).unwrap_or(0) as usize;
        let start = (at + 4).min(rest.len());
        let end = start.saturating_add(len).min(rest.len());
        at = end;
        (start, end)
    };
    let (meta_start, meta_end) = take(rest);
    let (data_start, data_end) = take(rest);
    [
        &rest[meta_start..meta_end],
        &rest[data_start..data_end],
        &rest[data_end..],
    ]
}

/// A whole database image: `[control][u32 meta length][meta][u32 data
/// length][data][WAL]`, opened on a simulated disk (with bit 0 set, the
/// CRC of every non-blank meta slot is recomputed first). The open fails
/// with a typed error or succeeds; then `verify` and reads of keys taken
/// from the input return typed results too, and a store that verifies
/// clean agrees with itself between single and batched reads.
pub fn store_open(data: &[u8]) -> Result<(), Finding> {
    let (control, rest) = split_control(data);
    let [meta, data_file, wal_file] = split_image(rest);
    let mut meta = meta.to_vec();
    if control & 1 != 0 {
        for slot in meta.chunks_mut(META_SLOT_BYTES) {
            if slot.len() > 4 && slot.iter().any(|b| *b != 0) {
                let crc = crate::format::checksum(&slot[4..]);
                slot[..4].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let dir = SimDir::new();
    for (name, bytes) in [
        (META_FILE, &meta[..]),
        (DATA_FILE, data_file),
        (WAL_FILE, wal_file),
    ] {
        dir.write_raw(name, 0, bytes)
            .map_err(|e| format!("simulated disk: {e}"))?;
    }
    let options = Options {
        create_if_missing: false,
        memory_budget_bytes: 256 << 10,
        ..Options::default()
    };
    let shared: Arc<dyn StoreDir> = Arc::new(dir);
    let Ok(store) = Store::open(shared, options) else {
        return Ok(());
    };
    let clean = store.verify().is_ok_and(|report| report.is_ok());
    let keys: Vec<B256> = rest
        .chunks_exact(32)
        .take(16)
        .map(B256::from_slice)
        .collect();
    let single: Vec<_> = keys.iter().map(|k| store.get(k).ok()).collect();
    if clean {
        if let Ok(batch) = store.get_many(&keys) {
            if single
                .iter()
                .zip(&batch)
                .any(|(a, b)| a.is_some_and(|a| a != *b))
            {
                return Err("single and batched reads disagree on a clean store".into());
            }
        }
    }
    Ok(())
}

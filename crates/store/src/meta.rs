//! The meta record: which checkpoint is current. `ubt.meta` holds four
//! 4 KiB slots: generation `g` is written to slots `2 * (g % 2)` and
//! `2 * (g % 2) + 1`, first copy then second, each synced. A checkpoint
//! overwrites the pair of generation `g - 2`; the other pair, holding
//! `g - 1`, is untouched until the checkpoint after.
//!
//! Why two copies: a crash can tear only the copy being written, and the
//! second copy is written only after the first is durable. So at open
//! ([`choose`]): a newest generation with one good copy is durable; a pair
//! whose first copy is torn while its second still holds an older
//! generation is a checkpoint that never completed (fall back, correctly);
//! and a pair with both copies damaged means the disk lost synced data
//! (report it rather than silently fall back to an older checkpoint).
//! Once any generation >= 1 exists every slot has been written, so a slot
//! that reads back blank (zeros, or cut away by a truncation) counts as
//! damaged. The one case the meta file alone cannot tell, generation 1
//! lost while generation 0 survives, is caught by the WAL, whose header
//! names the checkpoint it follows ([`crate::wal`]).
//!
//! ```text
//! off  len   field (little-endian), slot = one 4 KiB block
//! 0    4     CRC-32C of bytes [4, 4096)
//! 4    8     magic "UBT-META"
//! 12   2     format version (2)
//! 14   1     group depth G
//! 15   1     slot index (2 * (generation % 2) + copy)
//! 16   8     generation (checkpoints since creation; also the WAL epoch)
//! 24   8     commit sequence number included in this checkpoint
//! 32   8     sequence number of the last layer (block) included
//! 40   8     data file length in blocks
//! 48   8     bucket count
//! 56   8     stem count
//! 64   8     leaf (value) count
//! 72   1     1 if a revert log follows, else 0
//! 73   16    revert log extent (only if flagged)
//! ...  ...   root node entry (upper-trie page entry format)
//! ...  1     1 if the database keeps a flat index, else 0; if 1:
//!      1     flat directory height (0: the root is the only leaf)
//!      1     1 if the flat index holds anything, else 0
//!      16    its root's extent (only if it holds anything)
//!      8     records in the flat index
//! ...  1     log2 of the bucket capacity in bytes (13..=16), or 0 for
//!            the default 4 KiB (so a default database's record is the
//!            one it was before the capacity could be chosen)
//! ...        zeros up to 4096
//! ```

use crate::bucket::BUCKET_BYTES_DEFAULT;
use crate::error::{Result, StoreError, Structure};
use crate::flat::directory::FlatRoot;
use crate::format::Extent;
use crate::format::{checksum, Reader, BLOCK_BYTES, FORMAT_VERSION};
use crate::upper::page::Entry;

/// Bytes of one meta slot (a whole block, so no two slots share one).
pub const META_SLOT_BYTES: usize = BLOCK_BYTES;
/// Number of meta slots.
pub const META_SLOTS: usize = 4;
const MAGIC: &[u8; 8] = b"UBT-META";

/// The contents of a meta slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Checkpoints since creation; the WAL records after this checkpoint
    /// carry it as their epoch.
    pub generation: u64,
    /// Group depth of the upper-trie pages.
    pub group_depth: u8,
    /// Last commit whose writes the checkpoint holds.
    pub commit_seq: u64,
    /// Sequence number of the last layer (block) the checkpoint holds.
    pub layer_seq: u64,
    /// Data file length in blocks.
    pub data_blocks: u64,
    /// Buckets in the upper trie.
    pub bucket_count: u64,
    /// Stems stored.
    pub stem_count: u64,
    /// Values stored.
    pub leaf_count: u64,
    /// The segment of reverse diffs of the revert window, if any.
    pub revert_log: Option<Extent>,
    /// The root node of the upper trie.
    pub root: Entry,
    /// The flat index, if the database keeps one.
    pub flat: Option<FlatMeta>,
    /// Bucket capacity in encoded bytes (fixed at creation; see
    /// [`crate::bucket::bucket_bytes_valid`]).
    pub bucket_bytes: usize,
}

/// The byte that stores a bucket capacity: 0 for the default.
fn capacity_code(bytes: usize) -> u8 {
    debug_assert!(crate::bucket::bucket_bytes_valid(bytes), "capacity {bytes}");
    if bytes == BUCKET_BYTES_DEFAULT {
        0
    } else {
        #[allow(clippy::cast_possible_truncation)] // log2 of at most 64 KiB
        let code = bytes.trailing_zeros() as u8;
        code
    }
}

/// The capacity a stored byte names, if it names one.
fn capacity_of_code(code: u8) -> Option<usize> {
    match code {
        0 => Some(BUCKET_BYTES_DEFAULT),
        13..=16 => Some(1 << code),
        _ => None,
    }
}

/// The flat index as a checkpoint holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatMeta {
    /// Where its directory starts (none while it is empty).
    pub root: Option<FlatRoot>,
    /// Records its leaves hold.
    pub records: u64,
}

impl FlatMeta {
    fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(1);
        match &self.root {
            Some(root) => {
                out.push(root.height);
                out.push(1);
                root.extent.encode_into(out);
            }
            None => out.extend_from_slice(&[0, 0]),
        }
        out.extend_from_slice(&self.records.to_le_bytes());
    }

    fn decode(r: &mut Reader<'_>) -> Option<Option<FlatMeta>> {
        match r.u8()? {
            0 => Some(None),
            1 => {
                let height = r.u8()?;
                let root = match r.u8()? {
                    0 if height == 0 => None,
                    1 => Some(FlatRoot {
                        height,
                        extent: Extent::decode(r)?,
                    }),
                    _ => return None,
                };
                let records = r.u64()?;
                Some(Some(FlatMeta { root, records }))
            }
            _ => None,
        }
    }
}

impl Meta {
    /// The slots generation `g`'s two copies go to, in writing order.
    pub fn slots(&self) -> [usize; 2] {
        let base = 2 * (self.generation % 2) as usize;
        [base, base + 1]
    }

    /// Encodes into a full slot for slot `slot` (one of [`Meta::slots`]).
    pub fn encode(&self, slot: usize) -> Vec<u8> {
        debug_assert!(self.slots().contains(&slot));
        let mut out = Vec::with_capacity(META_SLOT_BYTES);
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.push(self.group_depth);
        #[allow(clippy::cast_possible_truncation)] // one of four slots, asserted above
        out.push(slot as u8);
        for field in [
            self.generation,
            self.commit_seq,
            self.layer_seq,
            self.data_blocks,
            self.bucket_count,
            self.stem_count,
            self.leaf_count,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        match &self.revert_log {
            Some(extent) => {
                out.push(1);
                extent.encode_into(&mut out);
            }
            None => out.push(0),
        }
        self.root.encode_into(&mut out);
        match &self.flat {
            Some(flat) => flat.encode_into(&mut out),
            None => out.push(0),
        }
        out.push(capacity_code(self.bucket_bytes));
        out.resize(META_SLOT_BYTES, 0);
        let crc = checksum(&out[4..]);
        out[..4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes slot `slot` (0..4).
    pub fn decode(bytes: &[u8], slot: usize) -> Result<Meta> {
        let location = format!("ubt.meta slot {slot}");
        let bad = |detail: String| StoreError::corrupted(Structure::Meta, location.clone(), detail);
        if bytes.len() != META_SLOT_BYTES {
            return Err(bad(format!(
                "{} bytes, expected {META_SLOT_BYTES}",
                bytes.len()
            )));
        }
        let mut r = Reader::new(bytes);
        let short = || bad("truncated".into());
        let stored = r.u32().ok_or_else(short)?;
        if checksum(&bytes[4..]) != stored {
            return Err(bad("checksum mismatch".into()));
        }
        if r.take(8).ok_or_else(short)? != MAGIC {
            return Err(bad("wrong magic".into()));
        }
        let version = r.u16().ok_or_else(short)?;
        if version != FORMAT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let group_depth = r.u8().ok_or_else(short)?;
        let slot_index = r.u8().ok_or_else(short)?;
        let mut fields = [0u64; 7];
        for field in &mut fields {
            *field = r.u64().ok_or_else(short)?;
        }
        let [generation, commit_seq, layer_seq, data_blocks, bucket_count, stem_count, leaf_count] =
            fields;
        let revert_log = match r.u8().ok_or_else(short)? {
            0 => None,
            1 => Some(Extent::decode(&mut r).ok_or_else(|| bad("bad revert log extent".into()))?),
            other => return Err(bad(format!("revert log flag {other}"))),
        };
        if !(1..=8).contains(&group_depth) {
            return Err(bad(format!("group depth {group_depth}")));
        }
        if generation == u64::MAX {
            // No checkpoint can follow it; never written by a real store.
            return Err(bad("generation u64::MAX leaves no next generation".into()));
        }
        if usize::from(slot_index) != slot || 2 * (generation % 2) != (slot & !1) as u64 {
            return Err(bad(format!(
                "generation {generation} does not belong in slot {slot}"
            )));
        }
        let root = Entry::decode(&mut r).map_err(|e| bad(format!("root entry: {e}")))?;
        let flat = FlatMeta::decode(&mut r).ok_or_else(|| bad("bad flat index root".into()))?;
        let code = r.u8().ok_or_else(short)?;
        let bucket_bytes =
            capacity_of_code(code).ok_or_else(|| bad(format!("bucket capacity code {code}")))?;
        if bytes[r.position()..].iter().any(|b| *b != 0) {
            return Err(bad("non-zero bytes after the bucket capacity".into()));
        }
        Ok(Meta {
            generation,
            group_depth,
            commit_seq,
            layer_seq,
            data_blocks,
            bucket_count,
            stem_count,
            leaf_count,
            revert_log,
            root,
            flat,
            bucket_bytes,
        })
    }
}

/// What one slot holds, as read at open.
#[derive(Clone, Debug)]
pub enum SlotState {
    /// All zero (never written).
    Blank,
    /// A valid record.
    Valid(Meta),
    /// A record of a format version this build does not read.
    Unsupported(u16),
    /// Anything else (torn, damaged).
    Damaged(String),
}

impl SlotState {
    /// Reads slot `slot` from the meta file's bytes.
    pub fn read(file: &[u8], slot: usize) -> SlotState {
        let Some(bytes) = file.get(slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES) else {
            return SlotState::Blank;
        };
        if bytes.iter().all(|b| *b == 0) {
            return SlotState::Blank;
        }
        match Meta::decode(bytes, slot) {
            Ok(meta) => SlotState::Valid(meta),
            Err(StoreError::UnsupportedVersion { found, .. }) => SlotState::Unsupported(found),
            Err(error) => SlotState::Damaged(error.to_string()),
        }
    }

    fn generation(&self) -> Option<u64> {
        match self {
            SlotState::Valid(meta) => Some(meta.generation),
            _ => None,
        }
    }
}

/// The outcome of reading the meta file.
#[derive(Clone, Debug)]
pub enum Choice {
    /// Every slot blank: a creation that never completed.
    Uncreated,
    /// The current checkpoint, and whether any slot was damaged (a torn
    /// checkpoint, or one damaged copy of a pair).
    Current(Meta, bool),
    /// The disk lost a synced meta record: the newest checkpoint cannot be
    /// known.
    Lost(String),
}

/// Chooses the current checkpoint from the four slots (see the module
/// documentation).
pub fn choose(slots: &[SlotState; META_SLOTS]) -> Choice {
    let newest = slots.iter().filter_map(SlotState::generation).max();
    // Creation writes generation 0 to slots 0 and 1, the first checkpoint
    // generation 1 to slots 2 and 3: once a generation >= 1 exists, every
    // slot was written, and one that reads back blank (zeros, or cut away
    // by a truncation) is damage, not a slot never written.
    let blank_is_damage = newest.is_some_and(|g| g >= 1);
    let slots: [SlotState; META_SLOTS] = std::array::from_fn(|i| match &slots[i] {
        SlotState::Blank if blank_is_damage => SlotState::Damaged(format!(
            "ubt.meta slot {i} is blank (zeros or missing) although checkpoints wrote it"
        )),
        other => other.clone(),
    });
    let damaged = slots.iter().any(|s| matches!(s, SlotState::Damaged(_)));
    let Some(best) = slots
        .iter()
        .filter_map(|s| match s {
            SlotState::Valid(meta) => Some(*meta),
            _ => None,
        })
        .max_by_key(|m| m.generation)
    else {
        return if damaged {
            Choice::Lost("no meta slot is valid".into())
        } else {
            Choice::Uncreated
        };
    };
    // The pair the next generation would use: its first copy may be torn
    // by a crash (its second copy then still holds an older generation or
    // is blank); both damaged means synced data was lost.
    debug_assert!(
        best.generation < u64::MAX,
        "decode rejects the last generation"
    );
    let next = 2 * usize::from(best.generation % 2 == 0);
    if let (SlotState::Damaged(first), SlotState::Damaged(second)) =
        (&slots[next], &slots[next + 1])
    {
        return Choice::Lost(format!(
            "both copies of the meta record after generation {} are damaged ({first}; {second})",
            best.generation
        ));
    }
    if slots[next + 1]
        .generation()
        .is_some_and(|g| g > best.generation)
    {
        return Choice::Lost("a newer second copy than any first copy".into());
    }
    Choice::Current(best, damaged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Extent;
    use crate::summary::{Occupancy, Summary};

    fn sample(generation: u64) -> Meta {
        Meta {
            generation,
            group_depth: 6,
            commit_seq: 41,
            layer_seq: 77,
            revert_log: Some(Extent {
                offset: 9 * 4096,
                len: 1000,
                crc: 5,
            }),
            data_blocks: 1000,
            bucket_count: 12,
            stem_count: 400,
            leaf_count: 900,
            root: Entry {
                summary: Summary {
                    occupancy: Occupancy::Many,
                    hash: [9; 32],
                },
                leaf: false,
                extent: Some(Extent {
                    offset: 5 * 4096 + 64,
                    len: 300,
                    crc: 77,
                }),
            },
            flat: None,
            bucket_bytes: BUCKET_BYTES_DEFAULT,
        }
    }

    /// Every capacity a database can be created with round-trips; the
    /// default one is stored as a zero byte, so a default record is the
    /// same bytes as before the capacity was recorded; a checksummed
    /// record naming any other code is damaged.
    #[test]
    fn bucket_capacity_round_trips_and_bad_codes_are_refused() {
        let mut meta = sample(3);
        let encoded_default = meta.encode(2);
        let mut capacity = BUCKET_BYTES_DEFAULT;
        while capacity <= crate::bucket::BUCKET_BYTES_LARGEST {
            meta.bucket_bytes = capacity;
            let bytes = meta.encode(2);
            assert_eq!(Meta::decode(&bytes, 2).unwrap(), meta);
            let differing: Vec<usize> = (4..META_SLOT_BYTES)
                .filter(|&at| bytes[at] != encoded_default[at])
                .collect();
            if capacity == BUCKET_BYTES_DEFAULT {
                assert!(differing.is_empty());
            } else {
                assert_eq!(differing.len(), 1, "only the capacity byte differs");
                assert_eq!(
                    usize::from(bytes[differing[0]]),
                    capacity.trailing_zeros() as usize
                );
            }
            capacity *= 2;
        }
        meta.bucket_bytes = 1 << 13;
        let bytes = meta.encode(2);
        let at = (4..META_SLOT_BYTES)
            .find(|&at| bytes[at] != encoded_default[at])
            .unwrap();
        for code in [1u8, 12, 17, 255] {
            let mut bad = bytes.clone();
            bad[at] = code;
            let crc = checksum(&bad[4..]);
            bad[..4].copy_from_slice(&crc.to_le_bytes());
            let error = Meta::decode(&bad, 2).unwrap_err().to_string();
            assert!(error.contains("bucket capacity code"), "{error}");
        }
    }

    #[test]
    fn round_trip_and_every_bit_flip_detected() {
        let mut flat = sample(3);
        for root in [
            None,
            Some(crate::flat::directory::FlatRoot {
                height: 2,
                extent: Extent {
                    offset: 4096,
                    len: 900,
                    crc: 3,
                },
            }),
        ] {
            flat.flat = Some(FlatMeta {
                root,
                records: 12_345,
            });
            for slot in flat.slots() {
                assert_eq!(Meta::decode(&flat.encode(slot), slot).unwrap(), flat);
            }
        }
        let meta = sample(3);
        assert_eq!(meta.slots(), [2, 3]);
        let bytes = meta.encode(3);
        assert_eq!(Meta::decode(&bytes, 3).unwrap(), meta);
        assert!(Meta::decode(&bytes, 2).is_err(), "slot index checked");
        assert!(
            Meta::decode(&meta.encode(2), 0).is_err(),
            "generation 3 belongs in slots 2 and 3"
        );
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << (at % 8);
            assert!(
                Meta::decode(&bad, 3).is_err(),
                "flip at byte {at} undetected"
            );
        }
    }

    /// Found by the `meta_choice` fuzz target: a checksummed record of
    /// generation u64::MAX made the choice overflow computing the next
    /// generation's pair. It is now a damaged slot, like any record no
    /// real store writes.
    #[test]
    fn the_last_generation_is_rejected_not_overflowed() {
        let last = sample(u64::MAX);
        let slot = last.slots()[0];
        let bytes = last.encode(slot);
        assert!(Meta::decode(&bytes, slot).is_err());
        let mut file = vec![0u8; META_SLOTS * META_SLOT_BYTES];
        file[slot * META_SLOT_BYTES..][..bytes.len()].copy_from_slice(&bytes);
        let slots: [SlotState; META_SLOTS] = std::array::from_fn(|i| SlotState::read(&file, i));
        assert!(matches!(slots[slot], SlotState::Damaged(_)));
        assert!(matches!(choose(&slots), Choice::Lost(_)));
        // The one before it still works, and its next pair is the other one.
        let before = sample(u64::MAX - 1);
        let older = sample(u64::MAX - 2);
        let mut file = vec![0u8; META_SLOTS * META_SLOT_BYTES];
        for meta in [older, before] {
            for slot in meta.slots() {
                let bytes = meta.encode(slot);
                file[slot * META_SLOT_BYTES..][..bytes.len()].copy_from_slice(&bytes);
            }
        }
        let slots: [SlotState; META_SLOTS] = std::array::from_fn(|i| SlotState::read(&file, i));
        assert!(matches!(choose(&slots), Choice::Current(m, false) if m == before));
    }

    fn state(meta: &Meta, slot: usize) -> SlotState {
        SlotState::Valid(Meta::decode(&meta.encode(slot), slot).unwrap())
    }

    /// The adversarial review: both copies of the newest generation read
    /// back as zeros (or were truncated away) and the open silently fell
    /// back to the generation before, losing its commits.
    #[test]
    fn blank_copies_of_a_written_generation_are_damage_not_absence() {
        let (g4, g5) = (sample(4), sample(5));
        let blank = || SlotState::Blank;
        // Generation 5 zeroed in both copies: lost, not a fall back to 4.
        let slots = [state(&g4, 0), state(&g4, 1), blank(), blank()];
        assert!(matches!(choose(&slots), Choice::Lost(_)));
        // One copy zeroed: still generation 5, flagged damaged.
        let slots = [state(&g4, 0), state(&g4, 1), state(&g5, 2), blank()];
        assert!(matches!(choose(&slots), Choice::Current(m, true) if m.generation == 5));
        // The meta file cut after slot 1: slots 2 and 3 (generation 5) read
        // as missing, which is the loss of generation 5, not its absence.
        let mut file = g4.encode(0);
        file.extend_from_slice(&g4.encode(1));
        let cut: [SlotState; META_SLOTS] = std::array::from_fn(|i| SlotState::read(&file, i));
        assert!(matches!(cut[2], SlotState::Blank));
        assert!(matches!(choose(&cut), Choice::Lost(_)));
        // Generation 0 with slots 2 and 3 never written is a new database.
        let g0 = sample(0);
        let slots = [state(&g0, 0), state(&g0, 1), blank(), blank()];
        assert!(matches!(choose(&slots), Choice::Current(m, false) if m.generation == 0));
        let file = g0.encode(0);
        let read: [SlotState; META_SLOTS] = std::array::from_fn(|i| SlotState::read(&file, i));
        assert!(matches!(choose(&read), Choice::Current(m, false) if m.generation == 0));
    }

    #[test]
    fn choice_tells_a_torn_checkpoint_from_lost_data() {
        let (g4, g5) = (sample(4), sample(5));
        let damaged = || SlotState::Damaged("x".into());
        // Both pairs intact: the newest.
        let slots = [state(&g4, 0), state(&g4, 1), state(&g5, 2), state(&g5, 3)];
        assert!(matches!(choose(&slots), Choice::Current(m, false) if m.generation == 5));
        // One damaged copy of the newest: still the newest.
        let slots = [state(&g4, 0), state(&g4, 1), damaged(), state(&g5, 3)];
        assert!(matches!(choose(&slots), Choice::Current(m, true) if m.generation == 5));
        // Generation 6 torn while writing its first copy: 5 is current.
        let slots = [damaged(), state(&g4, 1), state(&g5, 2), state(&g5, 3)];
        assert!(matches!(choose(&slots), Choice::Current(m, true) if m.generation == 5));
        // Both copies of generation 5 damaged: lost, not a silent fall back to 4.
        let slots = [state(&g4, 0), state(&g4, 1), damaged(), damaged()];
        assert!(matches!(choose(&slots), Choice::Lost(_)));
        // Fresh and never written.
        let blank = || SlotState::Blank;
        assert!(matches!(
            choose(&[blank(), blank(), blank(), blank()]),
            Choice::Uncreated
        ));
        let g0 = sample(0);
        let slots = [state(&g0, 0), state(&g0, 1), damaged(), blank()];
        assert!(matches!(choose(&slots), Choice::Current(m, true) if m.generation == 0));
    }
}

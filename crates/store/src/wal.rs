//! The write-ahead log: one record per commit, holding the commit's writes
//! and the root they produce. A commit is acknowledged once its record is
//! written and (in [`crate::SyncMode::Always`]) synced; buckets and pages
//! reach the data file later, at a checkpoint.
//!
//! ```text
//! off  len   field (little-endian)
//! 0    4     CRC-32C of bytes [4, record length)
//! 4    4     magic "UBTW"
//! 8    4     record length in bytes
//! 12   4     flags: bit 0 set when the writer syncs every record
//! 16   8     epoch: the generation of the checkpoint this record follows
//! 24   8     commit sequence number
//! 32   32    state root after the commit
//! 64   4     number of layers L (blocks persisted by this commit)
//! 68   ...   L layers, each:
//!              8    layer sequence number (a revert: the layer reverted to)
//!              32   root after the layer
//!              4    kind: 0 a block, 1 a revert to the layer numbered above
//!              4    number of sets s
//!              4    number of deletes d
//!              64*s sets: 32-byte key, 32-byte value, in application order
//!              32*d deleted keys (a revert restoring absence)
//! ```
//!
//! After a checkpoint the log restarts at offset 0 with the new epoch.
//! Replay reads records from offset 0 while each is intact, carries the
//! current epoch and the next sequence number; the first record that does
//! not is the end of the log (a torn tail, or a record of an older epoch).
//! A record is written only after the one before it was synced (when the
//! sync flag is set), so an intact synced record of the same epoch found
//! after the end means the log was damaged, not torn: replay reports it
//! ([`Wal::replay`]) instead of dropping the commits after the damage.

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::hash::Hash;

use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Reader};
use crate::io::StoreFile;

const MAGIC: &[u8; 4] = b"UBTW";
const HEADER_BYTES: usize = 68;
const LAYER_HEADER_BYTES: usize = 52;
const FLAG_SYNCED: u32 = 1;
/// Largest record replay accepts (a commit of ~16 M writes).
pub const RECORD_BYTES_MAX: usize = 1 << 30;

/// One layer (block) of a WAL record: its writes, in order, and the root
/// they produce. A `None` value deletes the key (only reverts do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalLayer {
    /// Layer sequence number.
    pub seq: u64,
    /// Root after the layer.
    pub root: Hash,
    /// Sets (`Some`) and deletes (`None`), sets first then deletes.
    pub ops: Vec<(B256, Option<B256>)>,
    /// Whether this is a revert to layer `seq` (its ops restore that
    /// layer's state) rather than a block.
    pub revert: bool,
}

/// A decoded WAL record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalRecord {
    /// Whether its writer synced every record.
    pub synced: bool,
    /// Epoch (checkpoint generation) the record follows.
    pub epoch: u64,
    /// Commit sequence number.
    pub seq: u64,
    /// State root after the commit.
    pub root: Hash,
    /// The layers, in order.
    pub layers: Vec<WalLayer>,
}

impl WalRecord {
    /// Bytes of the encoded record.
    pub fn encoded_len(&self) -> usize {
        HEADER_BYTES + self.layers.iter().map(layer_bytes).sum::<usize>()
    }
}

fn layer_bytes(layer: &WalLayer) -> usize {
    let deletes = layer.ops.iter().filter(|(_, v)| v.is_none()).count();
    LAYER_HEADER_BYTES + 64 * (layer.ops.len() - deletes) + 32 * deletes
}

/// Encodes a record of `layers` (each layer's sets are written before its
/// deletes; a layer never both sets and deletes one key).
pub fn encode(synced: bool, epoch: u64, seq: u64, root: &Hash, layers: &[WalLayer]) -> Vec<u8> {
    let len = HEADER_BYTES + layers.iter().map(layer_bytes).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&(if synced { FLAG_SYNCED } else { 0 }).to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(root);
    out.extend_from_slice(&(layers.len() as u32).to_le_bytes());
    for layer in layers {
        let sets: Vec<&(B256, Option<B256>)> =
            layer.ops.iter().filter(|(_, v)| v.is_some()).collect();
        let deletes: Vec<&B256> = layer
            .ops
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
        out.extend_from_slice(&layer.seq.to_le_bytes());
        out.extend_from_slice(&layer.root);
        out.extend_from_slice(&u32::from(layer.revert).to_le_bytes());
        out.extend_from_slice(&(sets.len() as u32).to_le_bytes());
        out.extend_from_slice(&(deletes.len() as u32).to_le_bytes());
        for (key, value) in sets {
            out.extend_from_slice(key.as_slice());
            out.extend_from_slice(value.unwrap_or_default().as_slice());
        }
        for key in deletes {
            out.extend_from_slice(key.as_slice());
        }
    }
    debug_assert_eq!(out.len(), len);
    let crc = checksum(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes the record at the start of `bytes`; `None` if it is not an
/// intact record (truncated, bad magic, bad length or checksum).
pub fn decode(bytes: &[u8]) -> Option<WalRecord> {
    let mut r = Reader::new(bytes);
    let stored = r.u32()?;
    if r.take(4)? != MAGIC {
        return None;
    }
    let len = r.u32()? as usize;
    if !(HEADER_BYTES..=RECORD_BYTES_MAX).contains(&len) || len > bytes.len() {
        return None;
    }
    if checksum(&bytes[4..len]) != stored {
        return None;
    }
    let flags = r.u32()?;
    if flags & !FLAG_SYNCED != 0 {
        return None;
    }
    let epoch = r.u64()?;
    let seq = r.u64()?;
    let root: Hash = r.array()?;
    let layer_count = r.u32()? as usize;
    let mut body = Reader::new(&bytes[HEADER_BYTES..len]);
    let mut layers = Vec::with_capacity(layer_count.min(len / LAYER_HEADER_BYTES));
    for _ in 0..layer_count {
        let layer_seq = body.u64()?;
        let layer_root: Hash = body.array()?;
        let kind = body.u32()?;
        if kind > 1 {
            return None;
        }
        let sets = body.u32()? as usize;
        let deletes = body.u32()? as usize;
        if sets
            .checked_mul(64)?
            .checked_add(deletes.checked_mul(32)?)?
            > body.remaining()
        {
            return None;
        }
        let mut ops = Vec::with_capacity(sets + deletes);
        for _ in 0..sets {
            let key: [u8; 32] = body.array()?;
            let value: [u8; 32] = body.array()?;
            ops.push((B256::from(key), Some(B256::from(value))));
        }
        for _ in 0..deletes {
            let key: [u8; 32] = body.array()?;
            ops.push((B256::from(key), None));
        }
        layers.push(WalLayer {
            seq: layer_seq,
            root: layer_root,
            ops,
            revert: kind == 1,
        });
    }
    if body.remaining() != 0 || layers.last().is_some_and(|l| l.root != root) {
        return None;
    }
    Some(WalRecord {
        synced: flags & FLAG_SYNCED != 0,
        epoch,
        seq,
        root,
        layers,
    })
}

/// Appends records to `ubt.wal`.
#[derive(Debug)]
pub struct Wal {
    file: Arc<dyn StoreFile>,
    /// Where the next record goes.
    end: u64,
    epoch: u64,
}

impl Wal {
    /// A log for `epoch` whose next record goes at `end`.
    pub fn new(file: Arc<dyn StoreFile>, epoch: u64, end: u64) -> Self {
        Wal { file, end, epoch }
    }

    /// The current epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Bytes of records in the current epoch.
    pub fn len(&self) -> u64 {
        self.end
    }

    /// Whether the current epoch has no records.
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }

    /// Writes a record (already encoded) and syncs it if `sync`.
    pub fn append(&mut self, record: &[u8], sync: bool) -> Result<()> {
        self.file
            .write_all_at(record, self.end)
            .map_err(StoreError::io("writing the WAL"))?;
        if sync {
            self.file
                .sync_data()
                .map_err(StoreError::io("syncing the WAL"))?;
        }
        self.end += record.len() as u64;
        Ok(())
    }

    /// Starts a new epoch at offset 0 (after a durable checkpoint).
    pub fn restart(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.end = 0;
    }

    /// Reads the records of `epoch` from the start, expecting sequence
    /// numbers `first_seq`, `first_seq + 1`, ...; returns them and the
    /// offset just past the last one. Fails with `Corrupted` if a record of
    /// a newer epoch starts the log (the checkpoint it follows was lost),
    /// or if an intact synced record of this epoch lies past the end (the
    /// log was damaged in the middle).
    pub fn replay(
        file: &Arc<dyn StoreFile>,
        epoch: u64,
        first_seq: u64,
    ) -> Result<(Vec<WalRecord>, u64)> {
        let len = file
            .len()
            .map_err(StoreError::io("reading the WAL length"))?;
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0)
            .map_err(StoreError::io("reading the WAL"))?;
        let mut records = Vec::new();
        let mut at = 0usize;
        let mut seq = first_seq;
        while let Some(record) = decode(&bytes[at..]) {
            if at == 0 && record.epoch > epoch {
                return Err(StoreError::corrupted(
                    Structure::Wal,
                    "ubt.wal offset 0",
                    format!(
                        "the log follows checkpoint generation {}, newer than the newest intact \
                         meta record ({epoch}): that checkpoint's meta record was lost",
                        record.epoch
                    ),
                ));
            }
            if record.epoch != epoch || record.seq != seq {
                break;
            }
            at += record.encoded_len();
            seq += 1;
            records.push(record);
        }
        // Past the end, only torn bytes, unsynced records or older epochs.
        for later in at + 1..bytes.len().saturating_sub(HEADER_BYTES - 1) {
            if bytes[later + 4..later + 8] != *MAGIC {
                continue;
            }
            if let Some(record) = decode(&bytes[later..]) {
                if record.synced && record.epoch == epoch && record.seq >= seq {
                    return Err(StoreError::corrupted(
                        Structure::Wal,
                        format!("ubt.wal offset {at}"),
                        format!(
                            "commit {seq} is damaged but commit {} at offset {later} is intact",
                            record.seq
                        ),
                    ));
                }
            }
        }
        Ok((records, at as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage_ends_the_log() {
        let mut ops: Vec<(B256, Option<B256>)> = (0..5u8)
            .map(|i| (B256::repeat_byte(i), Some(B256::repeat_byte(i + 100))))
            .collect();
        ops.push((B256::repeat_byte(9), None));
        let layers = vec![
            WalLayer {
                seq: 40,
                root: [3; 32],
                ops: ops.clone(),
                revert: false,
            },
            WalLayer {
                seq: 38,
                root: [4; 32],
                ops: vec![],
                revert: true,
            },
        ];
        let record = encode(true, 3, 17, &[4; 32], &layers);
        let decoded = decode(&record).expect("intact");
        assert!(decoded.synced);
        assert_eq!(decoded.layers, layers);
        assert_eq!(decoded.encoded_len(), record.len());
        assert_eq!((decoded.epoch, decoded.seq, decoded.root), (3, 17, [4; 32]));
        for at in 0..record.len() {
            let mut bad = record.clone();
            bad[at] ^= 0x10;
            assert!(decode(&bad).is_none(), "flip at {at} accepted");
        }
        for len in 0..record.len() {
            assert!(
                decode(&record[..len]).is_none(),
                "truncation to {len} accepted"
            );
        }
    }
}

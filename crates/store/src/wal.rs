//! The write-ahead log: one record per commit, holding the commit's writes
//! and the root they produce, after a header that names the checkpoint the
//! log follows and witnesses how far it reached. A commit is acknowledged
//! once its record is written and (in [`crate::SyncMode::Always`]) synced;
//! buckets and pages reach the data file later, at a checkpoint.
//!
//! ```text
//! ubt.wal
//! 0     512   header mark, slot 0
//! 512   512   header mark, slot 1
//! 1024  ...   records, back to back
//!
//! header mark (slot = its commit sequence number % 2)
//! off  len   field (little-endian)
//! 0    4     CRC-32C of bytes [4, 512)
//! 4    8     magic "UBTWMARK"
//! 12   2     format version
//! 14   1     slot index
//! 15   1     zero
//! 16   8     epoch: the generation of the checkpoint the log follows
//! 24   8     base: that checkpoint's commit sequence number
//! 32   8     the last commit written with this mark (base at a restart)
//! 40   8     the byte offset just past that commit's record
//! 48   464   zeros
//!
//! record
//! 0    4     CRC-32C of bytes [4, record length)
//! 4    4     magic "UBTW"
//! 8    4     record length in bytes (at most RECORD_BYTES_MAX)
//! 12   4     flags: bit 0 set when the writer syncs every record
//! 16   8     epoch: the generation of the checkpoint this record follows
//! 24   8     commit sequence number
//! 32   32    state root after the commit
//! 64   4     number of layers L (blocks persisted by this commit)
//! 68   ...   L layers, each:
//!              8    layer sequence number (a revert: the layer reverted to)
//!              32   root after the layer
//!              4    kind: bit 0 set for a revert to the layer numbered
//!                   above (else a block), bit 1 set when owners follow
//!              4    number of sets s
//!              4    number of deletes d
//!              64*s sets: 32-byte key, 32-byte value, in application order
//!              32*d deleted keys (a revert restoring absence)
//!              if owners follow (a database with a flat index):
//!              4    number of owners a
//!              20*a owner addresses, strictly ascending
//!              4*(s+d) per set then per delete, the index of its key's
//!                   owner among them
//! ```
//!
//! **Restart.** After a checkpoint is durable the log restarts: a mark
//! (new epoch, base = the checkpoint's commit, last = base) is written and
//! synced, and records start again at offset 1024. Database creation
//! writes the first mark before the meta file exists.
//!
//! **The witness.** In [`crate::SyncMode::Always`] every commit writes its
//! record and then the mark of its own sequence number (slot `seq % 2`,
//! so the previous commit's mark is never overwritten), and one
//! `fdatasync` makes both durable. A commit starts only after the
//! previous one's sync returned, so if the newest intact mark names commit
//! `h`, every record up to `h - 1` was durable: replay that stops before
//! `h - 1` found a log damaged or cut short, not torn, and reports it
//! ([`Wal::replay`]). Only the commit in flight (`h`) can be missing
//! without an error. In [`crate::SyncMode::Never`] marks are written only
//! at restarts (an unsynced mark could outlive the records it names).
//!
//! **The epoch.** A mark of an epoch newer than the newest intact meta
//! record means that checkpoint's meta record was lost; a mark one epoch
//! older means the checkpoint completed and the log was not restarted yet
//! (its records are already in the checkpoint); anything older is damage.
//!
//! Replay reads one record at a time from offset 1024 while each is
//! intact, carries the current epoch and the next sequence number. A
//! record is written only after the one before it was synced (when the
//! sync flag is set), so an intact synced record of the same epoch found
//! after the end means the log was damaged, not torn: replay reports it
//! instead of dropping the commits after the damage.
//!
//! Every record the writer emits is one replay accepts: [`encode`] refuses
//! a record longer than [`RECORD_BYTES_MAX`], and the store never asks for
//! one (a block holds at most [`LAYER_OPS_MAX`] writes; a persist of many
//! blocks is split into several records at block boundaries).

use std::sync::Arc;

use alloy_primitives::{Address, B256};
use ubt_spec::hash::Hash;

use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Reader};
use crate::io::StoreFile;

const MAGIC: &[u8; 4] = b"UBTW";
const MARK_MAGIC: &[u8; 8] = b"UBTWMARK";
const HEADER_BYTES: usize = 68;
const LAYER_HEADER_BYTES: usize = 52;
const FLAG_SYNCED: u32 = 1;
/// Bytes of one header mark.
pub const MARK_BYTES: usize = 512;
/// Where records start: after the two header marks.
pub const RECORDS_START: u64 = RECORDS_START_INDEX as u64;
/// [`RECORDS_START`] as an index into the log's bytes.
pub const RECORDS_START_INDEX: usize = 2 * MARK_BYTES;
/// Largest record: what replay accepts and what [`encode`] writes.
pub const RECORD_BYTES_MAX: usize = 1 << 30;
/// Most writes in one layer (block): a record of that layer alone is at
/// most the largest record, 1 GiB (~16.7 M writes).
pub const LAYER_OPS_MAX: usize = (RECORD_BYTES_MAX - HEADER_BYTES - LAYER_HEADER_BYTES) / 64;
/// Bytes read at a time when scanning the log past its end.
const SCAN_CHUNK_BYTES: usize = 8 << 20;

/// A header mark: which checkpoint the log follows and the last commit
/// written with it (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Generation of the checkpoint the log follows.
    pub epoch: u64,
    /// That checkpoint's commit sequence number.
    pub base_seq: u64,
    /// The last commit written with this mark (`base_seq` at a restart).
    pub seq: u64,
    /// The offset just past that commit's record ([`RECORDS_START`] at a
    /// restart).
    pub end: u64,
}

impl Mark {
    /// The slot this mark goes to.
    pub fn slot(&self) -> usize {
        (self.seq % 2) as usize
    }

    /// The 512 bytes of the mark.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MARK_BYTES);
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(MARK_MAGIC);
        out.extend_from_slice(&crate::format::FORMAT_VERSION.to_le_bytes());
        out.push(u8::from(self.seq % 2 == 1));
        out.push(0);
        for field in [self.epoch, self.base_seq, self.seq, self.end] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.resize(MARK_BYTES, 0);
        let crc = checksum(&out[4..]);
        out[..4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes the mark in slot `slot`; `None` unless intact and canonical.
    pub fn decode(bytes: &[u8], slot: usize) -> Option<Mark> {
        if bytes.len() != MARK_BYTES {
            return None;
        }
        let mut r = Reader::new(bytes);
        let stored = r.u32()?;
        if checksum(&bytes[4..]) != stored || r.take(8)? != MARK_MAGIC {
            return None;
        }
        if r.u16()? != crate::format::FORMAT_VERSION || usize::from(r.u8()?) != slot || r.u8()? != 0
        {
            return None;
        }
        let mark = Mark {
            epoch: r.u64()?,
            base_seq: r.u64()?,
            seq: r.u64()?,
            end: r.u64()?,
        };
        let canonical = mark.slot() == slot
            && mark.seq >= mark.base_seq
            && mark.end >= RECORDS_START
            && bytes[r.position()..].iter().all(|b| *b == 0);
        canonical.then_some(mark)
    }

    /// The newest intact mark of a log whose first bytes are `header`
    /// (shorter if the file is): the highest epoch, then sequence number.
    pub fn newest(header: &[u8]) -> Option<Mark> {
        (0..2)
            .filter_map(|slot| {
                header
                    .get(slot * MARK_BYTES..(slot + 1) * MARK_BYTES)
                    .and_then(|bytes| Mark::decode(bytes, slot))
            })
            .max_by_key(|m| (m.epoch, m.seq))
    }
}

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
    /// The account owning each op's key, parallel to `ops` (a database
    /// with a flat index), or empty.
    pub owners: Vec<Address>,
}

/// Bit of a layer's kind field: a revert.
const KIND_REVERT: u32 = 1;
/// Bit of a layer's kind field: owners follow.
const KIND_OWNED: u32 = 2;

/// The sorted, unique owners of a layer. Ops come grouped by account
/// (one account's writes together), so repeats next to each other are
/// dropped before the sort.
fn distinct_owners(owners: &[Address]) -> Vec<Address> {
    let mut table: Vec<Address> = Vec::new();
    for owner in owners {
        if table.last() != Some(owner) {
            table.push(*owner);
        }
    }
    table.sort_unstable();
    table.dedup();
    table
}

/// The sorted, unique owners of a layer and each op's index among them,
/// sets first then deletes (the encoded order).
fn owner_table(ops: &[(B256, Option<B256>)], owners: &[Address]) -> (Vec<Address>, Vec<u32>) {
    let table = distinct_owners(owners);
    let mut last: Option<(Address, u32)> = None;
    let mut index = |owner: &Address| {
        if let Some((last_owner, at)) = last {
            if last_owner == *owner {
                return at;
            }
        }
        // A layer has at most LAYER_OPS_MAX owners.
        #[allow(clippy::cast_possible_truncation)]
        let at = table.binary_search(owner).unwrap_or(0) as u32;
        last = Some((*owner, at));
        at
    };
    let sets = ops.iter().zip(owners).filter(|((_, v), _)| v.is_some());
    let deletes = ops.iter().zip(owners).filter(|((_, v), _)| v.is_none());
    let indices = sets.chain(deletes).map(|(_, o)| index(o)).collect();
    (table, indices)
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
        record_len(&self.layers)
    }
}

fn layer_bytes(layer: &WalLayer) -> usize {
    layer_len(&layer.ops, &layer.owners)
}

/// Bytes of a record holding `layers`.
pub fn record_len(layers: &[WalLayer]) -> usize {
    HEADER_BYTES + layers.iter().map(layer_bytes).sum::<usize>()
}

/// Bytes a record holding just a layer of `ops` writes adds (its share of
/// a record; for splitting a persist into records).
pub fn layer_len(ops: &[(B256, Option<B256>)], owners: &[Address]) -> usize {
    let deletes = ops.iter().filter(|(_, v)| v.is_none()).count();
    let owned = if owners.is_empty() {
        0
    } else {
        4 + 20 * distinct_owners(owners).len() + 4 * ops.len()
    };
    LAYER_HEADER_BYTES + 64 * (ops.len() - deletes) + 32 * deletes + owned
}

/// Encodes a record of `layers` (each layer's sets are written before its
/// deletes; a layer never both sets and deletes one key). Fails with
/// [`StoreError::RecordTooLarge`] if the record would exceed
/// [`RECORD_BYTES_MAX`], the most [`decode`] accepts.
pub fn encode(
    synced: bool,
    epoch: u64,
    seq: u64,
    root: &Hash,
    layers: &[WalLayer],
) -> Result<Vec<u8>> {
    let len = record_len(layers);
    if len > RECORD_BYTES_MAX {
        return Err(StoreError::RecordTooLarge {
            bytes: len as u64,
            max: RECORD_BYTES_MAX as u64,
        });
    }
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&u32_field(len));
    out.extend_from_slice(&(if synced { FLAG_SYNCED } else { 0 }).to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(root);
    out.extend_from_slice(&u32_field(layers.len()));
    for layer in layers {
        let sets: Vec<&(B256, Option<B256>)> =
            layer.ops.iter().filter(|(_, v)| v.is_some()).collect();
        let deletes: Vec<&B256> = layer
            .ops
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
        debug_assert!(layer.owners.is_empty() || layer.owners.len() == layer.ops.len());
        let owned = !layer.owners.is_empty();
        let kind = if layer.revert { KIND_REVERT } else { 0 } | if owned { KIND_OWNED } else { 0 };
        out.extend_from_slice(&layer.seq.to_le_bytes());
        out.extend_from_slice(&layer.root);
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&u32_field(sets.len()));
        out.extend_from_slice(&u32_field(deletes.len()));
        for (key, value) in sets {
            out.extend_from_slice(key.as_slice());
            out.extend_from_slice(value.unwrap_or_default().as_slice());
        }
        for key in deletes {
            out.extend_from_slice(key.as_slice());
        }
        if owned {
            let (table, indices) = owner_table(&layer.ops, &layer.owners);
            out.extend_from_slice(&u32_field(table.len()));
            for owner in &table {
                out.extend_from_slice(owner.as_slice());
            }
            for index in indices {
                out.extend_from_slice(&index.to_le_bytes());
            }
        }
    }
    debug_assert_eq!(out.len(), len);
    let crc = checksum(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// A count or length inside a record as its 4-byte field: the caller
/// checked the record against [`RECORD_BYTES_MAX`] (1 GiB), so it fits.
fn u32_field(n: usize) -> [u8; 4] {
    debug_assert!(n <= RECORD_BYTES_MAX);
    #[allow(clippy::cast_possible_truncation)]
    let n = n as u32;
    n.to_le_bytes()
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
        if kind > KIND_REVERT | KIND_OWNED {
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
        let owners = if kind & KIND_OWNED != 0 {
            decode_owners(&mut body, ops.len())?
        } else {
            Vec::new()
        };
        layers.push(WalLayer {
            seq: layer_seq,
            root: layer_root,
            ops,
            revert: kind & KIND_REVERT != 0,
            owners,
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

/// Reads a layer's owner table and each op's owner.
fn decode_owners(body: &mut Reader<'_>, ops: usize) -> Option<Vec<Address>> {
    let count = body.u32()? as usize;
    if count.checked_mul(20)?.checked_add(ops.checked_mul(4)?)? > body.remaining() {
        return None;
    }
    let mut table: Vec<Address> = Vec::with_capacity(count);
    for _ in 0..count {
        let owner = Address::from(body.array::<20>()?);
        if table.last().is_some_and(|last| *last >= owner) {
            return None;
        }
        table.push(owner);
    }
    (0..ops)
        .map(|_| table.get(body.u32()? as usize).copied())
        .collect()
}

/// What replay found: the end of the log, and how the header stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayEnd {
    /// Offset just past the last replayed record (where the next goes).
    pub end: u64,
    /// The log still follows the previous checkpoint (it completed, but
    /// the log was not restarted): nothing was replayed, and a writer must
    /// restart the log before its first commit.
    pub restart_pending: bool,
}

/// Appends records to `ubt.wal`.
#[derive(Debug)]
pub struct Wal {
    file: Arc<dyn StoreFile>,
    /// Where the next record goes.
    end: u64,
    epoch: u64,
    base_seq: u64,
    /// The log still follows the previous checkpoint: the first append
    /// restarts it (so that opening never needs to write).
    restart_pending: bool,
}

impl Wal {
    /// A log for `epoch` (after the checkpoint of commit `base_seq`) whose
    /// next record goes at `end`.
    pub fn new(file: Arc<dyn StoreFile>, epoch: u64, base_seq: u64, end: u64) -> Self {
        debug_assert!(end >= RECORDS_START);
        Wal {
            file,
            end,
            epoch,
            base_seq,
            restart_pending: false,
        }
    }

    /// A log found still following the previous checkpoint: its first
    /// append restarts it for `epoch` first.
    pub fn pending_restart(file: Arc<dyn StoreFile>, epoch: u64, base_seq: u64) -> Self {
        Wal {
            restart_pending: true,
            ..Wal::new(file, epoch, base_seq, RECORDS_START)
        }
    }

    /// The current epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Bytes of records in the current epoch.
    pub fn len(&self) -> u64 {
        self.end - RECORDS_START
    }

    /// Whether the current epoch has no records.
    pub fn is_empty(&self) -> bool {
        self.end == RECORDS_START
    }

    /// Writes a record (already encoded) of commit `seq`; if `sync`, then
    /// the header mark witnessing it, and syncs both.
    pub fn append(&mut self, seq: u64, record: &[u8], sync: bool) -> Result<()> {
        debug_assert!(record.len() <= RECORD_BYTES_MAX);
        if self.restart_pending {
            self.restart(self.epoch, self.base_seq)?;
        }
        self.file
            .write_all_at(record, self.end)
            .map_err(StoreError::io("writing the WAL"))?;
        let end = self.end + record.len() as u64;
        if sync {
            let mark = Mark {
                epoch: self.epoch,
                base_seq: self.base_seq,
                seq,
                end,
            };
            self.file
                .write_all_at(&mark.encode(), (mark.slot() * MARK_BYTES) as u64)
                .map_err(StoreError::io("writing the WAL header"))?;
            self.file
                .sync_data()
                .map_err(StoreError::io("syncing the WAL"))?;
        }
        self.end = end;
        Ok(())
    }

    /// Starts epoch `epoch` after the durable checkpoint of commit
    /// `base_seq`: writes and syncs its mark; records start again at
    /// [`RECORDS_START`].
    pub fn restart(&mut self, epoch: u64, base_seq: u64) -> Result<()> {
        write_restart_mark(self.file.as_ref(), epoch, base_seq)?;
        self.restart_pending = false;
        self.epoch = epoch;
        self.base_seq = base_seq;
        self.end = RECORDS_START;
        Ok(())
    }

    /// Replays the log after the checkpoint of generation `generation`
    /// (which holds commits up to `base_seq`), calling `each` with every
    /// record of that epoch in order, one at a time. Fails with
    /// `Corrupted` when the log cannot be a log this checkpoint left behind
    /// with at most its last commit torn: no intact header mark; a mark of
    /// a newer epoch (that checkpoint's meta record was lost) or of an
    /// epoch before the previous one; a mark whose base is not the
    /// checkpoint's; a mark witnessing a commit more than one past the
    /// last intact record (records lost or cut away); an intact synced
    /// record of this epoch after the end (damage in the middle).
    pub fn replay(
        file: &dyn StoreFile,
        generation: u64,
        base_seq: u64,
        mut each: impl FnMut(WalRecord) -> Result<()>,
    ) -> Result<ReplayEnd> {
        let len = file
            .len()
            .map_err(StoreError::io("reading the WAL length"))?;
        let mut header = vec![0u8; (len.min(RECORDS_START)) as usize];
        file.read_exact_at(&mut header, 0)
            .map_err(StoreError::io("reading the WAL header"))?;
        let bad = |location: String, detail: String| {
            StoreError::corrupted(Structure::Wal, location, detail)
        };
        let Some(mark) = Mark::newest(&header) else {
            return Err(bad(
                "ubt.wal header".into(),
                format!(
                    "no intact header mark in the first {RECORDS_START} bytes (the file has {len}): \
                     the log was truncated, zeroed or overwritten"
                ),
            ));
        };
        if mark.epoch > generation {
            return Err(bad(
                "ubt.wal header".into(),
                format!(
                    "the log follows checkpoint generation {}, newer than the newest intact meta \
                     record ({generation}): that checkpoint's meta record was lost",
                    mark.epoch
                ),
            ));
        }
        if mark.epoch < generation {
            if mark.epoch + 1 != generation {
                return Err(bad(
                    "ubt.wal header".into(),
                    format!(
                        "the log follows checkpoint generation {}, but the database is at \
                         generation {generation}",
                        mark.epoch
                    ),
                ));
            }
            return Ok(ReplayEnd {
                end: RECORDS_START,
                restart_pending: true,
            });
        }
        if mark.base_seq != base_seq {
            return Err(bad(
                "ubt.wal header".into(),
                format!(
                    "the log starts after commit {}, the checkpoint holds commits up to {base_seq}",
                    mark.base_seq
                ),
            ));
        }
        let mut at = RECORDS_START;
        let mut seq = base_seq + 1;
        while let Some(record) = read_record(file, at, len)? {
            if record.epoch != generation || record.seq != seq {
                break;
            }
            at += record.encoded_len() as u64;
            seq += 1;
            each(record)?;
        }
        let last = seq - 1;
        if mark.seq > last + 1 {
            return Err(bad(
                format!("ubt.wal offset {at}"),
                format!(
                    "the header witnesses commit {} (record ending at offset {}), but the log \
                     ends after commit {last}: acknowledged commits were cut away or damaged",
                    mark.seq, mark.end
                ),
            ));
        }
        scan_past_end(file, at, len, generation, seq)?;
        Ok(ReplayEnd {
            end: at,
            restart_pending: false,
        })
    }
}

/// Writes and syncs the restart mark of `epoch` (the checkpoint holding
/// commits up to `base_seq`) into `file`.
pub fn write_restart_mark(file: &dyn StoreFile, epoch: u64, base_seq: u64) -> Result<()> {
    let mark = Mark {
        epoch,
        base_seq,
        seq: base_seq,
        end: RECORDS_START,
    };
    file.write_all_at(&mark.encode(), (mark.slot() * MARK_BYTES) as u64)
        .and_then(|()| file.sync_data())
        .map_err(StoreError::io("restarting the WAL"))
}

/// The intact record at `at`, if any (reads its header, then the rest).
fn read_record(file: &dyn StoreFile, at: u64, len: u64) -> Result<Option<WalRecord>> {
    let available = len.saturating_sub(at);
    if available < HEADER_BYTES as u64 {
        return Ok(None);
    }
    let mut head = [0u8; HEADER_BYTES];
    file.read_exact_at(&mut head, at)
        .map_err(StoreError::io("reading the WAL"))?;
    if head[4..8] != *MAGIC {
        return Ok(None);
    }
    let record_len = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
    if !(HEADER_BYTES..=RECORD_BYTES_MAX).contains(&record_len) || record_len as u64 > available {
        return Ok(None);
    }
    let mut bytes = vec![0u8; record_len];
    file.read_exact_at(&mut bytes, at)
        .map_err(StoreError::io("reading the WAL"))?;
    Ok(decode(&bytes))
}

/// Past the end, only torn bytes, unsynced records or older epochs may
/// lie: an intact synced record of this epoch numbered `next_seq` or later
/// means the log was damaged before it.
fn scan_past_end(
    file: &dyn StoreFile,
    end: u64,
    len: u64,
    epoch: u64,
    next_seq: u64,
) -> Result<()> {
    let mut chunk_start = end + 1;
    while chunk_start + HEADER_BYTES as u64 <= len {
        let chunk_len = usize::try_from(len - chunk_start)
            .map_or(SCAN_CHUNK_BYTES, |n| n.min(SCAN_CHUNK_BYTES));
        let mut chunk = vec![0u8; chunk_len];
        file.read_exact_at(&mut chunk, chunk_start)
            .map_err(StoreError::io("reading the WAL"))?;
        for offset in 0..chunk_len.saturating_sub(7) {
            if chunk[offset + 4..offset + 8] != *MAGIC {
                continue;
            }
            let at = chunk_start + offset as u64;
            if let Some(record) = read_record(file, at, len)? {
                if record.synced && record.epoch == epoch && record.seq >= next_seq {
                    return Err(StoreError::corrupted(
                        Structure::Wal,
                        format!("ubt.wal offset {end}"),
                        format!(
                            "commit {next_seq} is damaged but commit {} at offset {at} is intact",
                            record.seq
                        ),
                    ));
                }
            }
        }
        // Overlap by 7 bytes so a magic split across chunks is seen.
        chunk_start += chunk_len.saturating_sub(7).max(1) as u64;
    }
    Ok(())
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
                owners: vec![],
            },
            WalLayer {
                seq: 41,
                root: [5; 32],
                owners: (0..ops.len())
                    .map(|i| Address::repeat_byte(u8::from(i % 2 == 0)))
                    .collect(),
                ops: ops.clone(),
                revert: false,
            },
            WalLayer {
                seq: 38,
                root: [4; 32],
                ops: vec![],
                revert: true,
                owners: vec![],
            },
        ];
        let record = encode(true, 3, 17, &[4; 32], &layers).unwrap();
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

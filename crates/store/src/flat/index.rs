//! [`FlatIndex`]: the flat index at the tip. Changes since the last
//! checkpoint are held in memory; the checkpoint merges them into the
//! leaves they fall in, copy-on-write, and rewrites the directory nodes
//! above those leaves. A read looks at the changes, then at one leaf: one
//! search of the resident directory ([`super::search`]) and one block
//! read at most.
//!
//! Writes to a stem that fills a leaf by itself (a dense stem,
//! [`super::route`]) are held as the stem and a 256-bit set of the
//! positions written, one entry per stem however many of its values a
//! block writes: the tree holds those values at the tip and serves every
//! read of the stem, and the checkpoint copies the written positions from
//! the tree. A written position may still hold a change of its own from
//! before the stem was marked: the mark hides it (reads and verify take
//! written positions from the tree, and the checkpoint's copy replaces
//! it), and settling a checkpoint drops it.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy_primitives::map::HashSet;
use alloy_primitives::B256;

use super::directory::{Directory, Fence, FlatRoot};
use super::key::{FlatKey, SubIndices};
use super::leaf::{self, Record, LEAF_BYTES_MAX};
use super::readahead::{self, Readahead};
use super::route::dense_stems;
use crate::error::{Result, StoreError};
use crate::format::Extent;

/// How full a bulk build packs leaves, in bytes: room for a few inserts
/// before the first split.
pub const BUILD_FILL_BYTES: usize = LEAF_BYTES_MAX * 7 / 8;

/// Memory per change held, for the budget: the 85-byte entry, the hash
/// table's spare room and control bytes (or, at a checkpoint, the sorted
/// map's nodes).
const CHANGE_BYTES: usize = 96;

/// What the flat index needs from the data file.
pub trait FlatIo {
    /// The bytes at each extent, checksum checked (from a cache where the
    /// implementation has one), in order; one batch.
    fn read(&self, extents: &[Extent]) -> Result<Vec<Arc<[u8]>>>;
    /// Writes `bytes` to blocks nothing durable uses; returns where.
    fn write(&mut self, bytes: &[u8]) -> Result<Extent>;
    /// Whether the bytes at `extent` are cached (a read would not reach
    /// the disk).
    fn cached(&self, extent: &Extent) -> bool {
        let _ = extent;
        false
    }
    /// The bytes at `extent` if they are cached, counted as a cache hit
    /// (`None` sends the caller to [`FlatIo::read`]).
    fn cached_bytes(&self, extent: &Extent) -> Option<Arc<[u8]>> {
        let _ = extent;
        None
    }
}

/// What a checkpoint of the flat index wrote and replaced.
#[derive(Debug, Default)]
pub struct FlatWrite {
    /// Extents the previous checkpoint used and this one does not.
    pub released: Vec<Extent>,
    /// Leaves written.
    pub leaves_written: usize,
    /// Directory nodes written.
    pub nodes_written: usize,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct FlatIndex {
    directory: Directory,
    /// Records in the leaves.
    stored_records: u64,
    /// The tip's value of every key changed since the last checkpoint
    /// (`None`: removed). A hash map: every write inserts here, and a
    /// checkpoint, which needs them in order, sorts them once.
    changes: Changes,
    /// Stems (named by [`FlatKey::stem`]) written as a whole since the
    /// last checkpoint, each with the positions written: the tree holds
    /// their values at the tip.
    stem_changes: StemChanges,
    /// Positions held in `stem_changes`, all stems together.
    stem_change_values: usize,
    /// The stems that fill a leaf by themselves, derived from the fences
    /// ([`dense_stems`]) whenever they change.
    dense_stems: HashSet<FlatKey>,
    /// Misses per account, for the readahead window.
    readahead: Readahead,
}

/// Where a key's value at the tip is ([`FlatIndex::locate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Located {
    /// Changed since the last checkpoint: this value (`None`: removed).
    Changed(Option<B256>),
    /// In the leaf at this position of the directory, if anywhere.
    Leaf(usize),
    /// Nowhere: the index holds nothing.
    Nowhere,
}

/// The changes held in memory: key to the tip's value (`None`: removed).
pub type Changes = alloy_primitives::map::HashMap<FlatKey, Option<B256>>;

/// The stems written as a whole, each named by [`FlatKey::stem`], with
/// the positions written.
pub type StemChanges = alloy_primitives::map::HashMap<FlatKey, SubIndices>;

/// A flat leaf's offset as an error location, formatted only on error.
struct LeafAt<'a>(&'a Extent);

impl std::fmt::Display for LeafAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {}", self.0.offset)
    }
}

impl FlatIndex {
    /// An index over a loaded directory holding `stored_records` records.
    pub fn new(directory: Directory, stored_records: u64) -> FlatIndex {
        FlatIndex {
            dense_stems: dense_stems(directory.leaves()),
            directory,
            stored_records,
            changes: Changes::default(),
            stem_changes: StemChanges::default(),
            stem_change_values: 0,
            readahead: Readahead::default(),
        }
    }

    /// Replaces the directory, and the dense stems derived from it.
    fn set_directory(&mut self, directory: Directory) {
        self.dense_stems = dense_stems(directory.leaves());
        self.directory = directory;
    }

    /// The directory.
    pub fn directory(&self) -> &Directory {
        &self.directory
    }

    /// Where the directory starts, if anything is stored.
    pub fn root(&self) -> Option<FlatRoot> {
        self.directory.root()
    }

    /// Records in the leaves (the last checkpoint's count).
    pub fn stored_records(&self) -> u64 {
        self.stored_records
    }

    /// Changes held in memory, key by key (the stems written as a whole
    /// are [`FlatIndex::stem_changes`]).
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Stems written as a whole since the last checkpoint, each named by
    /// [`FlatKey::stem`], with the positions written: the tree holds
    /// their values at the tip.
    pub fn stem_changes(&self) -> &StemChanges {
        &self.stem_changes
    }

    /// Whether anything changed since the last checkpoint.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty() || !self.stem_changes.is_empty()
    }

    /// Whether reads of `key` go to the tree: its stem fills a leaf by
    /// itself, or was written as a whole since the last checkpoint.
    #[inline]
    pub fn reads_stem_from_tree(&self, key: &FlatKey) -> bool {
        if self.dense_stems.is_empty() && self.stem_changes.is_empty() {
            return false;
        }
        let stem = key.stem();
        self.stem_changes.contains_key(&stem) || self.dense_stems.contains(&stem)
    }

    /// The stems that fill a leaf by themselves (each named by
    /// [`FlatKey::stem`]).
    pub fn dense_stems(&self) -> &HashSet<FlatKey> {
        &self.dense_stems
    }

    /// Resident bytes of the dense-stem set (an estimate per slot: the
    /// 52-byte key, padding and the table's control byte).
    pub fn dense_stems_bytes(&self) -> usize {
        self.dense_stems.capacity() * 64
    }

    /// The changes held in memory, in key order.
    pub fn sorted_changes(&self) -> BTreeMap<FlatKey, Option<B256>> {
        self.changes.iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// Memory the changes take (an estimate: the entry, 85 bytes, and the
    /// table's spare room and control bytes), counting each position of
    /// a stem written as a whole at what the checkpoint needs for it: a
    /// value copied from the tree, as a change.
    pub fn changes_bytes(&self) -> usize {
        (self.changes.capacity() + self.stem_changes.capacity() + self.stem_change_values)
            * CHANGE_BYTES
    }

    /// Records a change of one key at the tip (`None`: the key is
    /// removed), whatever its stem. The store records writes through
    /// [`FlatIndex::record`].
    #[cfg(any(test, feature = "testing"))]
    pub fn set(&mut self, key: FlatKey, value: Option<B256>) {
        self.changes.insert(key, value);
    }

    /// Records a write at the tip (`None`: the key is removed). A write
    /// to a dense stem, or to a stem already written as a whole, records
    /// the stem (the tree holds the value; a change of one of the stem's
    /// keys held from before is hidden by the mark, see the module
    /// documentation) and returns it, so a caller writing the stem's next
    /// keys can skip them; any other write sets the key's change.
    pub fn record(&mut self, key: FlatKey, value: Option<B256>) -> Option<FlatKey> {
        if !self.reads_stem_from_tree(&key) {
            self.changes.insert(key, value);
            return None;
        }
        let stem = key.stem();
        self.mark(stem, &SubIndices::of(key.sub_index()));
        Some(stem)
    }

    /// Adds `positions` to the written positions of `stem` (named by
    /// [`FlatKey::stem`]), a stem whose reads go to the tree
    /// ([`FlatIndex::reads_stem_from_tree`]).
    pub fn mark(&mut self, stem: FlatKey, positions: &SubIndices) {
        debug_assert!(
            self.reads_stem_from_tree(&stem),
            "a mark outside a dense stem"
        );
        debug_assert!(!positions.is_empty(), "a mark with no position");
        let added = self.stem_changes.entry(stem).or_default().union(positions);
        self.stem_change_values += added;
    }

    /// Forgets the changes (a reload replays them).
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// Forgets the stems written as a whole.
    pub fn take_stem_changes(&mut self) -> StemChanges {
        self.stem_change_values = 0;
        std::mem::take(&mut self.stem_changes)
    }

    /// Where `key`'s value at the tip is: in the changes, or in the leaf
    /// at a position of the directory (or nowhere: an empty index).
    pub fn locate(&self, key: &FlatKey) -> Located {
        if let Some(change) = self.changes.get(key) {
            Located::Changed(*change)
        } else if let Some(position) = self.directory.leaf_for(key) {
            Located::Leaf(position)
        } else {
            Located::Nowhere
        }
    }

    /// The values of `keys` at the tip; every leaf needed is read in one
    /// batch, once, with the account's adjacent leaves its readahead
    /// window gives ([`super::readahead`]). (The store locates keys
    /// itself, to route some to the tree: [`super::route`].)
    #[cfg(any(test, feature = "testing"))]
    pub fn get_many(&self, keys: &[FlatKey], io: &dyn FlatIo) -> Result<Vec<Option<B256>>> {
        let located: Vec<Located> = keys.iter().map(|key| self.locate(key)).collect();
        self.read_located(keys, &located, io)
    }

    /// The value of one key at the tip, located ([`FlatIndex::locate`]):
    /// what [`FlatIndex::read_located`] gives for one key, without its
    /// lists (an EVM reads one value at a time, most of them cached).
    pub fn read_one(&self, key: &FlatKey, at: Located, io: &dyn FlatIo) -> Result<Option<B256>> {
        let position = match at {
            Located::Changed(value) => return Ok(value),
            Located::Nowhere => return Ok(None),
            Located::Leaf(position) => position,
        };
        let leaves = self.directory.leaves();
        let extent = leaves[position].extent;
        let bytes = match io.cached_bytes(&extent) {
            Some(bytes) => bytes,
            None => {
                let run = self.readahead_run(position, &key.owner());
                debug_assert!(run.contains(&position), "a readahead without its leaf");
                let extents: Vec<Extent> = run.clone().map(|p| leaves[p].extent).collect();
                let mut blobs = io.read(&extents)?;
                blobs.swap_remove(position - run.start)
            }
        };
        leaf::lookup(&bytes, key, &LeafAt(&extent))
    }

    /// [`FlatIndex::get_many`] of keys already located
    /// ([`FlatIndex::locate`], one each, in order).
    pub fn read_located(
        &self,
        keys: &[FlatKey],
        located: &[Located],
        io: &dyn FlatIo,
    ) -> Result<Vec<Option<B256>>> {
        debug_assert_eq!(keys.len(), located.len(), "one location per key");
        let mut out = vec![None; keys.len()];
        // (leaf position, key index) of every key not changed in memory.
        let mut wanted: Vec<(usize, usize)> = Vec::with_capacity(keys.len());
        for (index, at) in located.iter().enumerate() {
            match *at {
                Located::Changed(value) => out[index] = value,
                Located::Leaf(position) => wanted.push((position, index)),
                Located::Nowhere => {}
            }
        }
        if wanted.is_empty() {
            return Ok(out);
        }
        wanted.sort_unstable();
        let leaves = self.directory.leaves();
        let mut positions: Vec<usize> = Vec::with_capacity(wanted.len());
        for group in wanted.chunk_by(|a, b| a.0 == b.0) {
            let (position, index) = group[0];
            if io.cached(&leaves[position].extent) {
                positions.push(position);
            } else {
                positions.extend(self.readahead_run(position, &keys[index].owner()));
            }
        }
        positions.sort_unstable();
        positions.dedup();
        let extents: Vec<Extent> = positions.iter().map(|&p| leaves[p].extent).collect();
        let blobs = io.read(&extents)?;
        for &(position, index) in &wanted {
            let at = positions.binary_search(&position).unwrap_or_default();
            out[index] = leaf::lookup(&blobs[at], &keys[index], &LeafAt(&extents[at]))?;
        }
        Ok(out)
    }

    /// A miss of `owner`'s leaf at `position`: counts it, and returns the
    /// leaves to read with it ([`super::readahead`]).
    pub fn readahead_run(
        &self,
        position: usize,
        owner: &alloy_primitives::Address,
    ) -> std::ops::Range<usize> {
        let leaves = self.directory.leaves();
        let own = self.directory.owner_leaves(owner);
        let span = readahead::owner_span(own.clone(), position);
        let window = self.readahead.window(owner, span.len());
        readahead::run(leaves, position, owner, own, window)
    }

    /// Writes `changes` (the values to store: the persisted state's, which
    /// may differ from the tip's) into the leaves they fall in and the
    /// directory above, copy-on-write. The changes held in memory are not
    /// touched; the caller settles them with [`FlatIndex::settled`] once
    /// the checkpoint is durable. On an error nothing changes here (the
    /// blocks written are garbage the allocator reclaims at the next open).
    pub fn write(
        &mut self,
        changes: &BTreeMap<FlatKey, Option<B256>>,
        io: &mut dyn FlatIo,
    ) -> Result<FlatWrite> {
        let mut by_leaf: BTreeMap<usize, Vec<(FlatKey, Option<B256>)>> = BTreeMap::new();
        for (key, value) in changes {
            let position = self.directory.leaf_for(key).unwrap_or(0);
            by_leaf.entry(position).or_default().push((*key, *value));
        }
        let leaves = self.directory.leaves();
        let existing: Vec<(usize, Extent)> = by_leaf
            .keys()
            .filter_map(|&p| leaves.get(p).map(|f| (p, f.extent)))
            .collect();
        let extents: Vec<Extent> = existing.iter().map(|(_, e)| *e).collect();
        let blobs = io.read(&extents)?;
        let mut old: BTreeMap<usize, Vec<Record>> = BTreeMap::new();
        for ((position, extent), bytes) in existing.iter().zip(&blobs) {
            old.insert(*position, leaf::decode(bytes, &LeafAt(extent))?);
        }
        let mut report = FlatWrite::default();
        let mut replaced: Vec<(usize, Vec<Fence>)> = Vec::with_capacity(by_leaf.len());
        let mut records = self.stored_records;
        for (position, leaf_changes) in by_leaf {
            let before = old.remove(&position).unwrap_or_default();
            records = records.saturating_sub(before.len() as u64);
            let merged = merge(before, &leaf_changes);
            records += merged.len() as u64;
            let mut fences = Vec::new();
            for piece in leaf::pack(merged, LEAF_BYTES_MAX) {
                let bytes = leaf::encode(&piece);
                let extent = io.write(&bytes)?;
                fences.push(Fence {
                    key: piece[0].0,
                    extent,
                    fresh: true,
                });
                report.leaves_written += 1;
            }
            replaced.push((position, fences));
        }
        let (mut next, released) = self.directory.with_leaves_replaced(&replaced);
        report.released = released;
        let mut nodes_written = 0usize;
        let mut write = |bytes: &[u8]| {
            nodes_written += 1;
            io.write(bytes)
        };
        report.released.extend(next.rebuild(&mut write)?);
        // Nothing changes until every write succeeded.
        self.set_directory(next);
        report.nodes_written = nodes_written;
        self.stored_records = records;
        Ok(report)
    }

    /// The checkpoint that wrote the directory is durable: its marks are
    /// cleared, and the changes are replaced by `kept` and `kept_stems`
    /// (what the tip holds beyond the persisted state).
    pub fn settled(&mut self, kept: Changes, kept_stems: StemChanges) {
        self.directory.settle();
        debug_assert!(
            kept.keys().all(|key| kept_stems
                .get(&key.stem())
                .is_none_or(|written| !written.contains(key.sub_index()))),
            "a change kept at a position written as part of its stem (hidden by the mark)"
        );
        self.changes = kept;
        self.stem_change_values = kept_stems.values().map(SubIndices::len).sum();
        self.stem_changes = kept_stems;
    }

    /// Builds an index from `records`, strictly ascending by key, packing
    /// leaves to [`BUILD_FILL_BYTES`] and writing them in order (so one
    /// account's leaves are adjacent in the file).
    pub fn build(
        records: impl IntoIterator<Item = Result<Record>>,
        io: &mut dyn FlatIo,
    ) -> Result<FlatIndex> {
        let mut index = FlatIndex::default();
        let mut fences: Vec<Fence> = Vec::new();
        let mut current: Vec<Record> = Vec::new();
        // The encoded length of `current`, kept as records come (measuring
        // the whole leaf at every record made the build quadratic in the
        // records per leaf).
        let mut current_len = leaf::EMPTY_LEAF_BYTES;
        let mut last: Option<FlatKey> = None;
        for (position, record) in records.into_iter().enumerate() {
            let record = record?;
            if last.is_some_and(|last| last >= record.0) {
                return Err(StoreError::UnsortedInput {
                    index: position as u64,
                });
            }
            last = Some(record.0);
            let mut added = leaf::appended_len(current.last(), &record);
            if !current.is_empty() && current_len + added > BUILD_FILL_BYTES {
                fences.push(write_leaf(&current, io)?);
                index.stored_records += current.len() as u64;
                current.clear();
                current_len = leaf::EMPTY_LEAF_BYTES;
                added = leaf::appended_len(None, &record);
            }
            current.push(record);
            current_len += added;
            debug_assert_eq!(current_len, leaf::encoded_len(&current));
        }
        if !current.is_empty() {
            fences.push(write_leaf(&current, io)?);
            index.stored_records += current.len() as u64;
        }
        let (mut directory, _) = index.directory.with_leaves_replaced(&[(0, fences)]);
        directory.rebuild(&mut |bytes| io.write(bytes))?;
        directory.settle();
        index.set_directory(directory);
        Ok(index)
    }
}

fn write_leaf(records: &[Record], io: &mut dyn FlatIo) -> Result<Fence> {
    let extent = io.write(&leaf::encode(records))?;
    Ok(Fence {
        key: records[0].0,
        extent,
        fresh: true,
    })
}

/// `records` with `changes` (sorted) applied: a change replaces or adds
/// its key's record, a removal drops it.
fn merge(records: Vec<Record>, changes: &[(FlatKey, Option<B256>)]) -> Vec<Record> {
    let mut out = Vec::with_capacity(records.len() + changes.len());
    let mut records = records.into_iter().peekable();
    for (key, value) in changes {
        while let Some(record) = records.next_if(|(k, _)| k < key) {
            out.push(record);
        }
        let _ = records.next_if(|(k, _)| k == key);
        if let Some(value) = value {
            out.push((*key, *value));
        }
    }
    out.extend(records);
    out
}

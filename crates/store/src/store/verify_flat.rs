//! Verification of the flat index: every leaf's checksum and encoding,
//! every fence against its leaf, the order of all keys, the directory
//! re-read from disk against the resident one, the record count, and the
//! values: the index at the tip (leaves plus the changes in memory, with
//! the stems written as a whole taken from the tree, as reads take them)
//! must hold exactly the tree's entries, compared by count and by an
//! order-independent digest ([`crate::flat::digest`]).

use std::collections::BTreeMap;

use alloy_primitives::B256;

use super::flat_ops::load_flat;
use super::read::block_location;
use super::{Store, VerifyReport};
use crate::bucket::Bucket;
use crate::error::Result;
use crate::flat::digest::EntryDigest;
use crate::flat::index::{FlatIndex, FlatIo, StemChanges};
use crate::flat::key::{FlatKey, SubIndices};
use crate::flat::leaf;

/// Leaves read per batch.
const LEAVES_PER_BATCH: usize = 4096;

/// The digest of a bucket's entries (`stem || sub index`, value).
pub(super) fn bucket_digest(bucket: &Bucket) -> EntryDigest {
    let mut digest = EntryDigest::default();
    for entry in bucket.stems() {
        for (sub, value) in bucket.pairs_of(entry) {
            digest.add(&entry.stem.key(sub), value);
        }
    }
    digest
}

/// Walks the tip's records in key order: the leaves' records with the
/// changes in memory applied; records at positions written as part of a
/// stem are passed over (the tree holds those values at the tip).
struct TipRecords<'a> {
    changes: std::iter::Peekable<std::collections::btree_map::Iter<'a, FlatKey, Option<B256>>>,
    stem_changes: &'a StemChanges,
    digest: EntryDigest,
}

impl TipRecords<'_> {
    fn add(&mut self, key: &FlatKey, value: &B256) {
        let written = !self.stem_changes.is_empty()
            && self
                .stem_changes
                .get(&key.stem())
                .is_some_and(|written| written.contains(key.sub_index()));
        if !written {
            self.digest.add(&key.tree_key(), value);
        }
    }

    /// One stored record, after the changes before it.
    fn stored(&mut self, key: &FlatKey, value: &B256) {
        while let Some((change_key, change)) = self.changes.next_if(|(k, _)| *k < key) {
            if let Some(change) = change {
                self.add(change_key, change);
            }
        }
        match self.changes.next_if(|(k, _)| *k == key) {
            Some((_, Some(change))) => self.add(key, change),
            Some((_, None)) => {}
            None => self.add(key, value),
        }
    }

    fn finish(mut self) -> EntryDigest {
        while let Some((key, change)) = self.changes.next() {
            if let Some(change) = change {
                self.add(key, change);
            }
        }
        self.digest
    }
}

/// Reads a batch of leaves; when the batch finds a damaged one, reads
/// them one by one and lists each damaged leaf as a problem (`None` in
/// its place). Only I/O errors are errors.
fn read_each(
    reader: &dyn FlatIo,
    extents: &[crate::format::Extent],
    report: &mut VerifyReport,
) -> Result<Vec<Option<std::sync::Arc<[u8]>>>> {
    match reader.read(extents) {
        Ok(blobs) => return Ok(blobs.into_iter().map(Some).collect()),
        Err(error) if error.is_corruption() => {}
        Err(error) => return Err(error),
    }
    let mut out = Vec::with_capacity(extents.len());
    for extent in extents {
        match reader.read(std::slice::from_ref(extent)) {
            Ok(mut blob) => out.push(blob.pop()),
            Err(error) if error.is_corruption() => {
                report.problems.push(error.to_string());
                out.push(None);
            }
            Err(error) => return Err(error),
        }
    }
    Ok(out)
}

impl Store {
    /// The flat index's checks (see the module documentation); `tree` is
    /// the digest of the tree's entries at the tip.
    pub(super) fn verify_flat(&self, tree: &EntryDigest, report: &mut VerifyReport) -> Result<()> {
        let Some(flat) = &self.tree.flat else {
            return Ok(());
        };
        self.verify_flat_directory(flat, report)?;
        let reader = self.flat_reader(false);
        let leaves = flat.directory().leaves();
        let changes = flat.sorted_changes();
        let mut tip = TipRecords {
            changes: changes.iter().peekable(),
            stem_changes: flat.stem_changes(),
            digest: EntryDigest::default(),
        };
        let mut previous: Option<FlatKey> = None;
        for (batch, fences) in leaves.chunks(LEAVES_PER_BATCH).enumerate() {
            let extents: Vec<_> = fences.iter().map(|f| f.extent).collect();
            let blobs = read_each(&reader, &extents, report)?;
            for (index, (fence, bytes)) in fences.iter().zip(&blobs).enumerate() {
                report.flat_leaves += 1;
                let Some(bytes) = bytes else {
                    continue;
                };
                report.bytes_read += bytes.len() as u64;
                let location = block_location(&fence.extent);
                let records = match leaf::decode(bytes, &location) {
                    Ok(records) => records,
                    Err(error) => {
                        report.problems.push(error.to_string());
                        continue;
                    }
                };
                let next = leaves.get(batch * LEAVES_PER_BATCH + index + 1);
                let first = records[0].0;
                let last = records[records.len() - 1].0;
                if first != fence.key
                    || previous.is_some_and(|p| p >= first)
                    || next.is_some_and(|n| n.key <= last)
                {
                    report
                        .problems
                        .push(format!("flat leaf at {location}: keys outside its fence"));
                }
                previous = Some(last);
                report.flat_records += records.len() as u64;
                for (key, value) in &records {
                    tip.stored(key, value);
                }
            }
        }
        if report.flat_records != flat.stored_records() {
            report.problems.push(format!(
                "flat index: counted {} records, the database records {}",
                report.flat_records,
                flat.stored_records()
            ));
        }
        let mut digest = tip.finish();
        let stems: Vec<(FlatKey, SubIndices)> =
            flat.stem_changes().iter().map(|(s, p)| (*s, *p)).collect();
        for (key, value) in self.stem_values(&stems)? {
            if let Some(value) = value {
                digest.add(&key.tree_key(), &value);
            }
        }
        if digest != *tree {
            report.problems.push(format!(
                "flat index: its {} values at the tip differ from the tree's {}",
                digest.count, tree.count
            ));
        }
        Ok(())
    }

    /// The directory as the checkpoint stores it against the resident one.
    fn verify_flat_directory(&self, flat: &FlatIndex, report: &mut VerifyReport) -> Result<()> {
        let meta = &self.durable.meta;
        let stored = match load_flat(
            self.tree.data.as_ref(),
            &self.tree.cache,
            &self.counters,
            meta,
        ) {
            Ok(stored) => stored,
            Err(error) if error.is_corruption() => {
                report.problems.push(format!("flat directory: {error}"));
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        report.flat_nodes = flat.directory().node_count() as u64;
        let same = stored.as_ref().is_some_and(|stored| {
            let fences = |index: &FlatIndex| -> BTreeMap<FlatKey, u64> {
                index
                    .directory()
                    .leaves()
                    .iter()
                    .map(|f| (f.key, f.extent.offset))
                    .collect()
            };
            fences(stored) == fences(flat)
        });
        if !same {
            report
                .problems
                .push("flat directory: the stored one differs from the one in memory".into());
        }
        Ok(())
    }
}

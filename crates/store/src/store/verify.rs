//! Full verification: every checksum, every stored hash recomputed from the
//! values, every upper-trie summary recomputed from its children, the root
//! compared with the meta record's and the replayed WAL's, the counts
//! compared with the meta record's, and no bucket left over the database's
//! bucket capacity when it could be split.

use rayon::prelude::*;

use super::read::block_location;
use super::verify_flat::bucket_digest;
use super::Store;
use crate::bucket::{compute_stem_hash, Bucket};
use crate::error::{Result, StoreError};
use crate::flat::digest::EntryDigest;
use crate::format::Extent;
use crate::io::ReadRequest;
use crate::summary::{combine, Summary};
use crate::upper::{id_of, page, BucketId, Link};
use ubt_spec::key::Stem;

/// Buckets read and checked per batch.
const VERIFY_BATCH: usize = 4096;

/// What [`Store::verify`] checked and found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Buckets whose contents were checked.
    pub buckets: u64,
    /// Stems whose hashes were recomputed.
    pub stems: u64,
    /// Values seen.
    pub leaves: u64,
    /// Upper-trie pages whose bytes were re-read and checked.
    pub pages: u64,
    /// Upper-trie nodes whose summaries were recomputed.
    pub upper_nodes: u64,
    /// Bytes read from the data file.
    pub bytes_read: u64,
    /// Flat-index leaves checked.
    pub flat_leaves: u64,
    /// Flat-index directory nodes read back.
    pub flat_nodes: u64,
    /// Flat-index records stored in its leaves.
    pub flat_records: u64,
    /// Every problem found (empty when the database is sound).
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Recomputes a bucket's summary from its values alone, comparing every
/// stored stem hash and sub-bucket hash on the way. Returns the summary and
/// the problems found.
fn recompute(bucket: &Bucket) -> (Summary, Vec<String>) {
    let mut problems = Vec::new();
    let mut fresh = Bucket::new(*bucket.prefix());
    for entry in bucket.stems() {
        let values = bucket.values_of(entry);
        if let Some(stored) = entry.hash() {
            if stored != compute_stem_hash(entry, values) {
                problems.push(format!(
                    "stem {:?}: stored hash differs from its values' hash",
                    entry.stem
                ));
            }
        }
        fresh.push_stem(entry, values);
    }
    fresh.finish_bulk();
    let summary = fresh.summary();
    if bucket.sub_summaries() != fresh.sub_summaries() {
        problems.push("stored sub-bucket hashes differ from the recomputed ones".to_string());
    }
    (summary, problems)
}

impl Store {
    /// Checks the whole database (see the module documentation). I/O errors
    /// are returned as errors; everything else found wrong is listed in
    /// the report.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.check_readable()?;
        let mut report = VerifyReport::default();
        // Buckets: on disk (read in batches) or in memory.
        let ids: Vec<BucketId> = (0..self.tree.buckets.len()).map(id_of).collect();
        let mut digest = EntryDigest::default();
        for chunk in ids.chunks(VERIFY_BATCH) {
            digest.merge(&self.verify_buckets(chunk, &mut report)?);
        }
        self.verify_upper(&mut report)?;
        if report.stems != self.tree.stem_count || report.leaves != self.tree.leaf_count {
            report.problems.push(format!(
                "counted {} stems and {} values, the database records {} and {}",
                report.stems, report.leaves, self.tree.stem_count, self.tree.leaf_count
            ));
        }
        if self.tree.buckets.iter().all(|b| b.dirty.is_none())
            && self.durable.meta.root.summary.hash != self.tree.root
        {
            report
                .problems
                .push("root differs from the meta record's root".to_string());
        }
        self.verify_revert_segment(&mut report)?;
        self.verify_flat(&digest, &mut report)?;
        Ok(report)
    }

    /// One batch of buckets: those on disk read at once, every one
    /// recomputed (in parallel) and compared with its leaf in the upper
    /// trie. Returns the digest of their entries (for the flat index's
    /// check).
    fn verify_buckets(&self, chunk: &[BucketId], report: &mut VerifyReport) -> Result<EntryDigest> {
        let on_disk: Vec<(BucketId, Extent)> = chunk
            .iter()
            .filter_map(|&id| {
                let slot = &self.tree.buckets[id as usize];
                (slot.dirty.is_none())
                    .then_some(slot.extent().map(|at| (id, at)))
                    .flatten()
            })
            .collect();
        let requests: Vec<ReadRequest> = on_disk
            .iter()
            .map(|(_, at)| ReadRequest {
                offset: at.offset,
                len: at.byte_len(),
            })
            .collect();
        let reads = self.tree.data.read_batch(&requests);
        let mut loaded: Vec<(BucketId, Result<Bucket>)> = Vec::with_capacity(chunk.len());
        for ((id, at), bytes) in on_disk.iter().zip(reads) {
            let bytes = bytes.map_err(StoreError::io("reading buckets to verify"))?;
            report.bytes_read += bytes.len() as u64;
            loaded.push((*id, self.decode_fetched(*id, at, &bytes)));
        }
        for &id in chunk {
            if let Some(contents) = &self.tree.buckets[id as usize].dirty {
                loaded.push((id, Ok((**contents).clone())));
            }
        }
        let flat = self.tree.flat.is_some();
        let mut digest = EntryDigest::default();
        let checked: Vec<(BucketId, u64, u64, Vec<String>, EntryDigest)> = loaded
            .into_par_iter()
            .map(|(id, bucket)| match bucket {
                Err(error) => (id, 0, 0, vec![error.to_string()], EntryDigest::default()),
                Ok(bucket) => {
                    let entries = if flat {
                        bucket_digest(&bucket)
                    } else {
                        EntryDigest::default()
                    };
                    let (summary, mut problems) = recompute(&bucket);
                    if bucket.needs_split(self.tree.bucket_bytes) {
                        problems.push(format!(
                            "{} encoded bytes, over the bucket capacity of {} bytes, \
                             yet it could be split",
                            bucket.encoded_len(),
                            self.tree.bucket_bytes
                        ));
                    }
                    if self.leaf_summary(id) != Some(summary) {
                        problems.push(format!(
                            "bucket {:?}: recomputed hash differs from the one in the upper trie",
                            bucket.prefix()
                        ));
                    }
                    (
                        id,
                        bucket.stem_count() as u64,
                        bucket.leaf_count() as u64,
                        problems,
                        entries,
                    )
                }
            })
            .collect();
        for (id, stems, leaves, problems, entries) in checked {
            digest.merge(&entries);
            report.buckets += 1;
            report.stems += stems;
            report.leaves += leaves;
            let slot = &self.tree.buckets[id as usize];
            for problem in problems {
                let location = slot
                    .extent()
                    .map_or("memory".to_string(), |at| block_location(&at));
                report.problems.push(format!(
                    "bucket {:?} at {location}: {problem}",
                    self.tree.buckets.prefix(id)
                ));
            }
        }
        for &id in chunk {
            let slot = &self.tree.buckets[id as usize];
            if slot.dirty.is_none() && slot.extent().is_none() {
                report.buckets += 1;
                if self.leaf_summary(id) != Some(Summary::EMPTY) {
                    report.problems.push(format!(
                        "bucket {:?} has no extent but a non-empty hash",
                        self.tree.buckets.prefix(id)
                    ));
                }
            }
        }
        Ok(digest)
    }

    /// The revert segment: what the checkpoint references for reverts.
    /// The summary the upper trie holds for bucket `id`: its leaf's,
    /// found by the walk along the bucket's prefix. `None` when that walk
    /// ends at another bucket's leaf (the table and the trie disagree),
    /// which the callers report as a hash mismatch.
    fn leaf_summary(&self, id: BucketId) -> Option<Summary> {
        let prefix = self.tree.buckets.prefix(id);
        let (leaf, bucket) = self.tree.trie.locate(&Stem(*prefix.bytes()));
        let node = self.tree.trie.node(leaf);
        (bucket == id && node.depth() == prefix.len()).then(|| node.summary())
    }

    fn verify_revert_segment(&self, report: &mut VerifyReport) -> Result<()> {
        if let Some(reason) = &self.history.window_damaged {
            report.problems.push(format!("revert segment: {reason}"));
        }
        let Some(extent) = self.history.window_pending else {
            return Ok(());
        };
        let mut bytes = vec![0u8; extent.byte_len()];
        self.tree
            .data
            .read_exact_at(&mut bytes, extent.offset)
            .map_err(StoreError::io("reading the revert segment to verify"))?;
        report.bytes_read += bytes.len() as u64;
        match crate::revert_log::decode_segment(&bytes, extent.crc, &block_location(&extent)) {
            Ok(window) => {
                if window
                    .last()
                    .is_some_and(|d| d.root != self.durable.meta.root.summary.hash)
                {
                    report
                        .problems
                        .push("revert segment: does not end at the checkpoint's root".to_string());
                }
            }
            Err(error) => report.problems.push(format!("revert segment: {error}")),
        }
        Ok(())
    }

    /// Upper-trie summaries and the pages' bytes.
    fn verify_upper(&self, report: &mut VerifyReport) -> Result<()> {
        let mut problems = Vec::new();
        let mut nodes = 0u64;
        self.tree.trie.walk(|id, prefix| {
            nodes += 1;
            let node = self.tree.trie.node(id);
            if let Link::Internal([left, right]) = node.link() {
                let expected = combine(
                    &self.tree.trie.node(left).summary(),
                    &self.tree.trie.node(right).summary(),
                );
                if expected != node.summary() {
                    problems.push(format!(
                        "upper-trie node {prefix:?}: summary is not its children's"
                    ));
                }
            }
        });
        report.upper_nodes = nodes;
        if self.tree.trie.root_summary().hash != self.tree.root {
            problems.push("upper-trie root differs from the current root".to_string());
        }
        report.problems.extend(problems);
        let mut pages: Vec<(crate::prefix::Prefix, Extent)> = Vec::new();
        self.tree.trie.walk(|id, prefix| {
            if let Some(at) = self.tree.trie.page(id).and_then(|p| p.extent) {
                pages.push((*prefix, at));
            }
        });
        let requests: Vec<ReadRequest> = pages
            .iter()
            .map(|(_, at)| ReadRequest {
                offset: at.offset,
                len: at.byte_len(),
            })
            .collect();
        for ((prefix, at), bytes) in pages.iter().zip(self.tree.data.read_batch(&requests)) {
            let bytes = bytes.map_err(StoreError::io("reading trie pages to verify"))?;
            report.bytes_read += bytes.len() as u64;
            report.pages += 1;
            let group_depth = self.tree.trie.group_depth();
            if let Err(error) =
                page::decode(&bytes, group_depth, prefix, at.crc, &block_location(at))
            {
                report.problems.push(error.to_string());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use alloy_primitives::B256;

    use crate::io::sim::SimDir;
    use crate::io::StoreDir;
    use crate::{Options, Store};

    /// Buckets cut at 16 KiB, checked as if the capacity were 4 KiB:
    /// `verify` names each bucket over the capacity that could be split,
    /// and finds nothing at the capacity the database was built with.
    #[test]
    fn a_splittable_bucket_over_the_capacity_is_reported() {
        let dir: Arc<dyn StoreDir> = Arc::new(SimDir::new());
        let mut entries: Vec<(B256, B256)> = (0u64..3_000)
            .map(|i| {
                let key = ubt_spec::hash::sha256(&i.to_be_bytes());
                (B256::from(key), B256::from(ubt_spec::hash::sha256(&key)))
            })
            .collect();
        entries.sort_by_key(|(k, _)| *k);
        let options = Options {
            bucket_bytes: Some(16 << 10),
            ..Options::default()
        };
        let (mut store, _) = Store::build(dir, options, entries).unwrap();
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
        store.tree.bucket_bytes = 4096;
        let report = store.verify().unwrap();
        let over: Vec<&String> = report
            .problems
            .iter()
            .filter(|p| p.contains("over the bucket capacity of 4096 bytes"))
            .collect();
        assert!(!over.is_empty(), "{:?}", report.problems);
        assert_eq!(over.len(), report.problems.len(), "{:?}", report.problems);
    }
}

//! Proofs and geth witnesses from the store, at any root held in layers.
//!
//! A [`StateView`] is built for the snapshot: the buckets of the proven
//! keys are read in one batch (cached and changed buckets cost no I/O).
//! For a root older than the tip, the keys the newer layers touched get
//! their old values back inside copies of their buckets (read in the same
//! batch), and the upper-trie summaries above those buckets are recomputed
//! into an override map; the store itself is not changed. The spec's
//! prover (or witness walker) then runs over the view; the buckets it asked
//! for and did not have (the bucket of a lone stem that sits where an
//! absent key's stem would be, or, for a witness, the buckets below a group
//! blob's frontier) are read in one more batch and the walk repeats. Every
//! bucket is read at most once per call.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::map::HashMap;

use alloy_primitives::B256;
use rayon::prelude::*;
use ubt_spec::geth::{witness_nodes, GethNode};
use ubt_spec::key::Stem;
use ubt_spec::proof::{self, Proof};

use super::layers::Snapshot;
use super::read::Source;
use super::state_view::{StateView, ViewBucket};
use super::Store;
use crate::bucket::Bucket;
use crate::error::{Result, StoreError};
use crate::format::Extent;
use crate::upper::{BucketId, NodeId};

/// Walks repeat at most this often; each repeat only follows buckets the
/// previous walk revealed, and a proof or witness needs two at most.
const WALKS_MAX: usize = 8;

/// Which stems of the loaded buckets to hash before a walk (batched and
/// in parallel, rather than one by one as the walk meets them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prehash {
    /// The sub-buckets the keys fall in: a proof needs the siblings of a
    /// key's path below the stored sub-bucket summaries, nothing else.
    KeySubBuckets,
    /// Every stem of the keys' buckets: a geth witness also encodes group
    /// blobs whose frontier lies anywhere in those buckets.
    All,
}

impl Store {
    /// A multiproof of `keys` (any order; duplicates ignored) at
    /// `snapshot`'s root. See the module documentation for its cost.
    pub fn prove_at(&self, keys: &[B256], snapshot: &Snapshot) -> Result<Proof> {
        self.walk_at(keys, snapshot, Prehash::KeySubBuckets, |view| {
            proof::prove(view, keys)
        })
    }

    /// The node blobs go-ethereum's `BinaryTrie.Witness()` returns after
    /// reading and writing `keys` at `snapshot`'s root, its nodes grouped
    /// `group_depth` levels per blob (1..=8, any group depth, not only the
    /// store's own). Besides the keys' buckets, reads the buckets under
    /// the frontier of each group blob on the keys' paths (one batch).
    pub fn witness_at(
        &self,
        keys: &[B256],
        snapshot: &Snapshot,
        group_depth: u8,
    ) -> Result<Vec<GethNode>> {
        if !(1..=8).contains(&group_depth) {
            return Err(StoreError::InvalidOptions(format!(
                "group depth {group_depth} is outside 1..=8"
            )));
        }
        self.walk_at(keys, snapshot, Prehash::All, |view| {
            witness_nodes(view, group_depth, keys)
        })
    }

    /// The snapshot of the tip.
    pub fn tip_snapshot(&self) -> Snapshot {
        Snapshot {
            seq: self.history.newest_seq(),
            root: self.tree.root,
        }
    }

    /// Runs `walk` over a view of `snapshot` until it needs no bucket the
    /// view lacks.
    fn walk_at<T>(
        &self,
        keys: &[B256],
        snapshot: &Snapshot,
        prehash: Prehash,
        walk: impl Fn(&StateView<'_>) -> T,
    ) -> Result<T> {
        self.check_readable()?;
        if self.is_voided(snapshot.seq) {
            return Err(StoreError::SnapshotReverted(snapshot.root));
        }
        let older = self.older_values(snapshot);
        let mut wanted: BTreeSet<BucketId> = keys
            .iter()
            .chain(older.keys())
            .map(|key| self.tree.trie.locate(&Stem::of_key(key)).1)
            .collect();
        let mut loaded = self.load_buckets(&wanted)?;
        let overrides = self.revert_into(&mut loaded, &older);
        self.prehash(&mut loaded, keys, prehash);
        let mut view = StateView::new(&self.tree.trie, overrides);
        for (id, bucket) in loaded {
            view.insert(id, ViewBucket::new(bucket));
        }
        if view.root_hash() != snapshot.root {
            return Err(StoreError::Corrupted {
                structure: crate::error::Structure::Trie,
                location: self.location(),
                detail: format!(
                    "the layers do not lead back to root 0x{}",
                    alloy_primitives::hex::encode(snapshot.root)
                ),
            });
        }
        for _ in 0..WALKS_MAX {
            let result = walk(&view);
            let missing = view.take_missing();
            if missing.is_empty() {
                return Ok(result);
            }
            debug_assert!(missing.iter().all(|id| !view.has(*id)));
            wanted = missing;
            // Not hashed ahead: a bucket met off the keys' paths is mostly
            // asked for its top summaries, which it stores.
            for (id, bucket) in self.load_buckets(&wanted)? {
                view.insert(id, ViewBucket::new(bucket));
            }
        }
        Err(StoreError::io("walking the trie")(std::io::Error::other(
            "a walk kept asking for new buckets",
        )))
    }

    /// Hashes, in parallel across buckets and batched within each, the
    /// stems a walk will need (see [`Prehash`]).
    fn prehash(&self, loaded: &mut [(BucketId, Bucket)], keys: &[B256], prehash: Prehash) {
        let mut stems_of: HashMap<BucketId, Vec<Stem>> = HashMap::default();
        if prehash == Prehash::KeySubBuckets {
            for key in keys {
                let stem = Stem::of_key(key);
                let bucket = self.tree.trie.locate(&stem).1;
                stems_of.entry(bucket).or_default().push(stem);
            }
        }
        loaded
            .par_iter_mut()
            .for_each(|(id, bucket)| match prehash {
                Prehash::All => bucket.hash_all_stems(),
                Prehash::KeySubBuckets => {
                    if let Some(stems) = stems_of.get(id) {
                        bucket.hash_stems_near(stems.iter().copied());
                    }
                }
            });
    }

    /// Every key the layers newer than `snapshot` touched, with its value
    /// at the snapshot (the first newer layer's record of it).
    fn older_values(&self, snapshot: &Snapshot) -> BTreeMap<B256, Option<B256>> {
        let mut older = BTreeMap::new();
        for layer in self
            .history
            .layers()
            .iter()
            .filter(|layer| layer.seq > snapshot.seq)
        {
            for (key, value) in &layer.old {
                older.entry(*key).or_insert(*value);
            }
        }
        older
    }

    /// Copies of `ids`' buckets at the tip: changed ones from memory,
    /// the rest from the cache or one batch of reads.
    fn load_buckets(&self, ids: &BTreeSet<BucketId>) -> Result<Vec<(BucketId, Bucket)>> {
        let mut out = Vec::with_capacity(ids.len());
        let mut on_disk: Vec<(BucketId, Extent)> = Vec::new();
        for &id in ids {
            match self.source(id) {
                Source::Empty => {
                    let prefix = self.tree.buckets.prefix(id);
                    out.push((id, Bucket::new(prefix)));
                }
                Source::Dirty(bucket) => out.push((id, bucket.clone())),
                Source::Disk(at) => on_disk.push((id, at)),
            }
        }
        let fetched = self.fetch(&on_disk)?;
        for ((id, at), (bytes, _)) in on_disk.iter().zip(fetched) {
            out.push((*id, self.decode_fetched(*id, at, &bytes)?));
        }
        Ok(out)
    }

    /// Writes the snapshot's values of `older`'s keys into the loaded
    /// buckets (all of them are loaded) and returns the upper-trie
    /// summaries that change as a result.
    fn revert_into(
        &self,
        loaded: &mut [(BucketId, Bucket)],
        older: &BTreeMap<B256, Option<B256>>,
    ) -> HashMap<NodeId, crate::summary::Summary> {
        if older.is_empty() {
            return HashMap::default();
        }
        let mut per_bucket: HashMap<BucketId, Vec<(B256, Option<B256>)>> = HashMap::default();
        for (key, value) in older {
            let bucket = self.tree.trie.locate(&Stem::of_key(key)).1;
            per_bucket.entry(bucket).or_default().push((*key, *value));
        }
        let mut leaves = HashMap::default();
        for (id, bucket) in loaded.iter_mut() {
            if let Some(writes) = per_bucket.get(id) {
                // `older` is a sorted map, so each bucket's writes are sorted.
                bucket.merge_sorted(writes);
                leaves.insert(
                    self.tree.trie.leaf_of(&self.tree.buckets.prefix(*id)),
                    bucket.summary(),
                );
            }
        }
        self.tree
            .trie
            .summaries_with(&leaves, |leaf| self.tree.prefix_of_node(leaf))
    }
}

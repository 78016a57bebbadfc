//! The flat index in the store's operations (`crate::flat`; ARCHITECTURE.md,
//! "Read locality"): its reads and writes through the data file and the
//! block cache, account-level reads at the tip, the share of a checkpoint,
//! the bulk build, and the loading at open.
//!
//! The index follows the tip like the buckets do: every applied write
//! with an owner sets its record in the index's changes, or marks its
//! stem when the stem fills a leaf (reverts and replays included); a
//! checkpoint writes the persisted state's records (the tip's, the marked
//! stems' copied from the tree, with unpersisted layers undone) into the
//! leaves, copy-on-write, and keeps the unpersisted ones in memory.

use std::collections::BTreeMap;

use alloy_primitives::map::{HashMap, HashSet};
use std::sync::Arc;

use alloy_primitives::{Address, B256};

use super::checkpoint::RunWriter;
use super::prefetch::InFlight;
use super::read::{block_location, BlockAt};
use super::{Counters, Store};
use crate::alloc::BlockAllocator;
use crate::cache::{BucketCache, CacheKey};
use crate::error::{Result, StoreError, Structure};
use crate::flat::directory::Directory;
use crate::flat::index::{FlatIndex, FlatIo, Located, StemChanges};
use crate::flat::key::{FlatKey, SubIndices};
use crate::flat::leaf;
use crate::flat::route::Route;
use crate::format::{blocks_for, checksum, Extent};
use crate::io::coalesce;
use crate::io::{ReadRequest, StoreFile};
use crate::meta::{FlatMeta, Meta};

/// Reads flat leaves and nodes from the data file, through the block
/// cache when `cached`, checking each against its extent's checksum.
pub(super) struct FlatReader<'a> {
    pub data: &'a dyn StoreFile,
    pub cache: &'a BucketCache,
    pub counters: &'a Counters,
    pub cached: bool,
    /// Leaves the prefetcher is reading: waited for, not read twice.
    pub inflight: Option<&'a InFlight>,
}

impl FlatReader<'_> {
    /// The cached bytes of `at`, if the cache is used and holds them.
    fn hit(&self, at: &Extent) -> Option<Arc<[u8]>> {
        self.cached
            .then(|| self.cache.get(CacheKey::FlatLeaf(at.offset), at))
            .flatten()
    }

    /// Checks bytes read for `at` against its checksum.
    fn checked(at: &Extent, bytes: &[u8]) -> Result<Arc<[u8]>> {
        if bytes.len() < 4 || checksum(&bytes[4..]) != at.crc || leaf::stored_crc(bytes) != at.crc {
            return Err(StoreError::corrupted(
                Structure::FlatLeaf,
                block_location(at),
                "checksum mismatch (flat index block)",
            ));
        }
        Ok(Arc::from(bytes))
    }
}

impl FlatIo for FlatReader<'_> {
    fn read(&self, extents: &[Extent]) -> Result<Vec<Arc<[u8]>>> {
        if let Some(inflight) = self.inflight {
            let keys: Vec<CacheKey> = extents
                .iter()
                .map(|at| CacheKey::FlatLeaf(at.offset))
                .collect();
            inflight.wait_for(&keys);
        }
        let mut out: Vec<Option<Arc<[u8]>>> = extents.iter().map(|at| self.hit(at)).collect();
        let hits = out.iter().filter(|b| b.is_some()).count();
        Counters::add(&self.counters.cache_hits, hits as u64);
        // The misses in offset order, adjacent ones read as one request.
        let mut misses: Vec<usize> = (0..extents.len()).filter(|&p| out[p].is_none()).collect();
        misses.sort_unstable_by_key(|&p| extents[p].offset);
        let ordered: Vec<Extent> = misses.iter().map(|&p| extents[p]).collect();
        let runs = coalesce::adjacent_runs(&ordered);
        let requests: Vec<ReadRequest> = runs
            .iter()
            .map(|run| coalesce::run_request(&ordered[run.clone()]))
            .collect();
        let mut first_error: Option<StoreError> = None;
        let mut read_bytes = 0u64;
        let mut on_read = |index: usize, result: std::io::Result<&[u8]>| match result {
            Ok(bytes) => {
                read_bytes += bytes.len() as u64;
                let start = requests[index].offset;
                for slot in runs[index].clone() {
                    let (position, at) = (misses[slot], ordered[slot]);
                    let piece = coalesce::piece(bytes, start, &at).unwrap_or(&[]);
                    match Self::checked(&at, piece) {
                        Ok(piece) => {
                            if self.cached {
                                self.cache
                                    .insert(CacheKey::FlatLeaf(at.offset), at, piece.clone());
                            }
                            out[position] = Some(piece);
                        }
                        Err(error) => {
                            first_error.get_or_insert(error);
                        }
                    }
                }
            }
            Err(error) => {
                first_error.get_or_insert(StoreError::io("reading the flat index")(error));
            }
        };
        match requests.as_slice() {
            // One request, as a single account read's miss is: read into
            // this thread's scratch buffer, which the leaves are copied
            // out of anyway, instead of a fresh zeroed buffer per miss
            // (its allocation and page faults were ~5 % of a block of
            // single reads). A direct read goes through the thread's
            // aligned buffer on its way.
            [request] => {
                crate::io::scratch::with_buffer(request.len, |buf| {
                    match self.data.read_exact_at(buf, request.offset) {
                        Ok(()) => on_read(0, Ok(buf)),
                        Err(error) => on_read(0, Err(error)),
                    }
                });
            }
            _ => self
                .data
                .read_batch_each(&requests, &mut |index, result| match result {
                    Ok(bytes) => on_read(index, Ok(&bytes)),
                    Err(error) => on_read(index, Err(error)),
                }),
        }
        Counters::add(&self.counters.bucket_reads, requests.len() as u64);
        Counters::add(&self.counters.bucket_read_bytes, read_bytes);
        if let Some(error) = first_error {
            return Err(error);
        }
        out.into_iter()
            .map(|bytes| {
                bytes.ok_or_else(|| {
                    StoreError::io("reading the flat index")(std::io::Error::other(
                        "read never completed",
                    ))
                })
            })
            .collect()
    }

    fn write(&mut self, _bytes: &[u8]) -> Result<Extent> {
        Err(StoreError::ReadOnly("a flat index reader".into()))
    }

    fn cached(&self, extent: &Extent) -> bool {
        self.cached
            && self
                .cache
                .contains(CacheKey::FlatLeaf(extent.offset), extent)
    }

    fn cached_bytes(&self, extent: &Extent) -> Option<Arc<[u8]>> {
        let bytes = self.hit(extent)?;
        Counters::add(&self.counters.cache_hits, 1);
        Some(bytes)
    }
}

/// Writes flat leaves and nodes into fresh blocks of the data file (never
/// one the durable checkpoint uses), caching what it writes.
pub(super) struct FlatWriter<'a, 'w> {
    pub reader: FlatReader<'a>,
    pub alloc: &'a mut BlockAllocator,
    pub writer: &'a mut RunWriter<'w>,
}

impl FlatIo for FlatWriter<'_, '_> {
    fn read(&self, extents: &[Extent]) -> Result<Vec<Arc<[u8]>>> {
        self.reader.read(extents)
    }

    fn cached(&self, extent: &Extent) -> bool {
        self.reader.cached(extent)
    }

    fn cached_bytes(&self, extent: &Extent) -> Option<Arc<[u8]>> {
        self.reader.cached_bytes(extent)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<Extent> {
        let block = self.alloc.alloc(blocks_for(bytes.len()));
        self.writer.write(block, bytes)?;
        let extent = Extent::at_block(block, bytes.len(), leaf::stored_crc(bytes));
        self.reader
            .cache
            .insert(CacheKey::FlatLeaf(extent.offset), extent, Arc::from(bytes));
        Ok(extent)
    }
}

impl Store {
    /// Whether the database keeps a flat index of account values.
    pub fn has_flat_index(&self) -> bool {
        self.tree.flat.is_some()
    }

    pub(super) fn flat_reader(&self, cached: bool) -> FlatReader<'_> {
        FlatReader {
            data: self.tree.data.as_ref(),
            cache: &self.tree.cache,
            counters: &self.counters,
            cached,
            inflight: Some(&self.tree.prefetcher.inflight),
        }
    }

    /// The values at tree keys, each given with the account it belongs to
    /// (`(owner, key)`, the key derived from the owner's address), at the
    /// tip: from the flat index when the database keeps one (every leaf
    /// needed read once, all in one batch; one account's values share
    /// leaves), else from the buckets ([`Store::get_many`]). Keys of a
    /// stem that fills a leaf by itself are read from their buckets even
    /// with an index (ARCHITECTURE.md, "Read locality").
    pub fn get_owned(&self, keys: &[(Address, B256)]) -> Result<Vec<Option<B256>>> {
        self.check_readable()?;
        let Some(flat) = &self.tree.flat else {
            let tree_keys: Vec<B256> = keys.iter().map(|(_, key)| *key).collect();
            return self.get_many(&tree_keys);
        };
        if let [(owner, key)] = keys {
            // One value, as the EVM asks: no lists to split and merge.
            let flat_key = FlatKey::new(owner, key);
            return match flat.route(&flat_key) {
                Route::Tree => self.get_many(&[*key]),
                Route::Index(at) => flat
                    .read_one(&flat_key, at, &self.flat_reader(true))
                    .map(|value| vec![value]),
            };
        }
        // Dense stems from their buckets, the rest from the index; both
        // hold the tip's values.
        let mut to_tree: Vec<bool> = Vec::with_capacity(keys.len());
        let mut tree_keys: Vec<B256> = Vec::new();
        let mut indexed: Vec<FlatKey> = Vec::with_capacity(keys.len());
        let mut located: Vec<Located> = Vec::with_capacity(keys.len());
        for (owner, key) in keys {
            let flat_key = FlatKey::new(owner, key);
            let route = flat.route(&flat_key);
            to_tree.push(route == Route::Tree);
            match route {
                Route::Tree => tree_keys.push(*key),
                Route::Index(at) => {
                    indexed.push(flat_key);
                    located.push(at);
                }
            }
        }
        let reader = self.flat_reader(true);
        if tree_keys.is_empty() {
            return flat.read_located(&indexed, &located, &reader);
        }
        if indexed.is_empty() {
            return self.get_many(&tree_keys);
        }
        let mut from_tree = self.get_many(&tree_keys)?.into_iter();
        let mut from_index = flat.read_located(&indexed, &located, &reader)?.into_iter();
        Ok(to_tree
            .iter()
            .map(|&tree| {
                if tree {
                    from_tree.next().flatten()
                } else {
                    from_index.next().flatten()
                }
            })
            .collect())
    }

    /// Records applied ops in the flat index, each under its owner
    /// (`owners`, one per op; nothing when the database keeps no flat
    /// index): a change per key, or one mark per dense stem
    /// ([`FlatIndex::record`]).
    pub(super) fn record_flat(&mut self, ops: &[(B256, Option<B256>)], owners: &[Address]) {
        let Some(flat) = &mut self.tree.flat else {
            return;
        };
        // The stem the previous write marked, with the positions written
        // since: consecutive slots share the stem, and only add their
        // position, to the stem's entry once the run ends.
        let mut run: Option<(&Address, &B256, FlatKey, SubIndices)> = None;
        for (index, (key, value)) in ops.iter().enumerate() {
            let owner = owners.get(index);
            debug_assert!(
                owner.is_some(),
                "a write without its owner on a flat-indexed store"
            );
            let Some(owner) = owner else {
                continue;
            };
            if let Some((o, k, _, positions)) = &mut run {
                if *o == owner && k[..31] == key[..31] {
                    positions.insert(key[31]);
                    continue;
                }
            }
            if let Some((_, _, stem, positions)) = run.take() {
                flat.mark(stem, &positions);
            }
            if let Some(stem) = flat.record(FlatKey::new(owner, key), *value) {
                run = Some((owner, key, stem, SubIndices::of(key[31])));
            }
        }
        if let Some((_, _, stem, positions)) = run {
            flat.mark(stem, &positions);
        }
    }

    /// The tip's value at every written position of `stems` (each named
    /// by [`FlatKey::stem`]), `None` where the tree holds none: what the
    /// flat index holds there for stems written as a whole.
    pub(super) fn stem_values(
        &self,
        stems: &[(FlatKey, SubIndices)],
    ) -> Result<Vec<(FlatKey, Option<B256>)>> {
        let keys: Vec<FlatKey> = stems
            .iter()
            .flat_map(|(stem, positions)| positions.iter().map(|sub| stem.with_sub_index(sub)))
            .collect();
        let tree_keys: Vec<B256> = keys.iter().map(FlatKey::tree_key).collect();
        let values = self.get_many(&tree_keys)?;
        Ok(keys.into_iter().zip(values).collect())
    }

    /// The flat keys unpersisted layers touched, each with its value at
    /// the persisted root.
    fn flat_unpersisted(&self) -> HashMap<FlatKey, Option<B256>> {
        let mut at_persisted: HashMap<FlatKey, Option<B256>> = HashMap::default();
        for layer in self.history.layers().iter().filter(|l| !l.persisted) {
            for (key, owner) in layer.owners.pairs(&layer.ops) {
                if let Some(old) = layer.old.get(&key) {
                    at_persisted
                        .entry(FlatKey::new(&owner, &key))
                        .or_insert(*old);
                }
            }
        }
        at_persisted
    }

    /// A checkpoint's share: writes the persisted state's changed records
    /// into the leaves and the directory through `writer`. The changes
    /// stay in memory until [`Store::settle_flat`].
    pub(super) fn write_flat(&mut self, writer: &mut RunWriter<'_>) -> Result<()> {
        let stems: Vec<(FlatKey, SubIndices)> = match &self.tree.flat {
            Some(flat) => flat.stem_changes().iter().map(|(s, p)| (*s, *p)).collect(),
            None => return Ok(()),
        };
        // The marked stems' written positions at the tip, from the tree:
        // they replace what the leaves and changes hold there.
        let stem_values = self.stem_values(&stems)?;
        let Some(mut flat) = self.tree.flat.take() else {
            return Ok(());
        };
        let mut persisted: BTreeMap<FlatKey, Option<B256>> = flat.sorted_changes();
        persisted.extend(stem_values);
        persisted.extend(self.flat_unpersisted());
        let mut io = FlatWriter {
            reader: FlatReader {
                data: self.tree.data.as_ref(),
                cache: &self.tree.cache,
                counters: &self.counters,
                cached: true,
                inflight: Some(&self.tree.prefetcher.inflight),
            },
            alloc: &mut self.tree.alloc,
            writer,
        };
        let written = flat.write(&persisted, &mut io);
        self.tree.flat = Some(flat);
        for extent in written?.released {
            self.tree.released.push(extent.blocks());
        }
        Ok(())
    }

    /// After a durable checkpoint: the flat index keeps in memory only what
    /// unpersisted layers changed.
    pub(super) fn settle_flat(&mut self) {
        let unpersisted: HashSet<FlatKey> = self.flat_unpersisted().into_keys().collect();
        let unpersisted_stems: HashSet<FlatKey> = unpersisted.iter().map(FlatKey::stem).collect();
        if let Some(flat) = &mut self.tree.flat {
            // A stem stays marked, with all its positions (a superset of
            // what unpersisted layers wrote), while one of them touched it.
            let kept_stems: StemChanges = flat
                .take_stem_changes()
                .into_iter()
                .filter(|(stem, _)| unpersisted_stems.contains(stem))
                .collect();
            // A change at a marked position predates the mark, which hid
            // it: the tree holds the value.
            let kept = flat
                .take_changes()
                .into_iter()
                .filter(|(key, _)| {
                    unpersisted.contains(key)
                        && kept_stems
                            .get(&key.stem())
                            .is_none_or(|written| !written.contains(key.sub_index()))
                })
                .collect();
            flat.settled(kept, kept_stems);
        }
    }

    /// The flat index as the next meta record holds it.
    pub(super) fn flat_meta(&self) -> Option<FlatMeta> {
        self.tree.flat.as_ref().map(|flat| FlatMeta {
            root: flat.root(),
            records: flat.stored_records(),
        })
    }

    /// Memory held by the flat index's changes.
    pub(super) fn flat_changes_bytes(&self) -> usize {
        self.tree.flat.as_ref().map_or(0, FlatIndex::changes_bytes)
    }

    /// Builds the flat index of a database just built (no block applied
    /// since), from `records` `(owner, tree key, value)` strictly ascending
    /// by `(owner, tree key)`, and makes it durable with a checkpoint. The
    /// values must be the tree's ([`Store::verify`] compares the two). A
    /// failure poisons the handle; the database stays as it was built.
    pub fn build_flat_index<I>(&mut self, records: I) -> Result<FlatBuildReport>
    where
        I: IntoIterator<Item = Result<(Address, B256, B256)>>,
    {
        self.check_writable()?;
        let indexed = self
            .tree
            .flat
            .as_ref()
            .is_some_and(|f| f.stored_records() > 0 || f.has_changes());
        if indexed || !self.history.layers().is_empty() {
            return Err(StoreError::InvalidOptions(
                "a flat index is built once, right after the database is built".into(),
            ));
        }
        let data = Arc::clone(&self.tree.data);
        let mut writer = RunWriter::new(data.as_ref());
        let built = {
            let mut io = FlatWriter {
                reader: FlatReader {
                    data: data.as_ref(),
                    cache: &self.tree.cache,
                    counters: &self.counters,
                    cached: false,
                    inflight: None,
                },
                alloc: &mut self.tree.alloc,
                writer: &mut writer,
            };
            let records = records
                .into_iter()
                .map(|r| r.map(|(owner, key, value)| (FlatKey::new(&owner, &key), value)));
            FlatIndex::build(records, &mut io).and_then(|index| writer.flush().map(|()| index))
        };
        let index = built.inspect_err(|error| self.poison(error))?;
        Counters::add(&self.counters.data_bytes_written, writer.written);
        let report = FlatBuildReport {
            records: index.stored_records(),
            leaves: index.directory().leaves().len() as u64,
            nodes: index.directory().node_count() as u64,
        };
        self.tree.flat = Some(index);
        self.write_checkpoint()
            .inspect_err(|error| self.poison(error))?;
        Ok(report)
    }
}

/// What [`Store::build_flat_index`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlatBuildReport {
    /// Records indexed.
    pub records: u64,
    /// Leaves written.
    pub leaves: u64,
    /// Directory nodes written.
    pub nodes: u64,
}

/// Loads the flat index a checkpoint references (none if the database
/// keeps none): the directory, one level per batch of reads, each block
/// checked against its checksum.
pub(super) fn load_flat(
    data: &dyn StoreFile,
    cache: &BucketCache,
    counters: &Counters,
    meta: &Meta,
) -> Result<Option<FlatIndex>> {
    let Some(flat) = meta.flat else {
        return Ok(None);
    };
    let Some(root) = flat.root else {
        return Ok(Some(FlatIndex::default()));
    };
    let reader = FlatReader {
        data,
        cache,
        counters,
        cached: false,
        inflight: None,
    };
    let mut first_leaf_key = |extent: &Extent| -> Result<FlatKey> {
        let bytes = reader.read(&[*extent])?;
        let records = leaf::decode(&bytes[0], &BlockAt(extent))?;
        Ok(records[0].0)
    };
    let mut read = |extents: &[Extent]| reader.read(extents);
    let directory = Directory::load(root, &mut first_leaf_key, &mut read)?;
    Ok(Some(FlatIndex::new(directory, flat.records)))
}

/// Every block the flat index uses (leaves and nodes own whole blocks).
pub(super) fn flat_extents(flat: Option<&FlatIndex>) -> Vec<Extent> {
    let Some(flat) = flat else {
        return Vec::new();
    };
    let directory = flat.directory();
    directory
        .leaves()
        .iter()
        .map(|f| f.extent)
        .chain(directory.node_extents())
        .collect()
}

//! Opening: create an empty database, or recover an existing one.
//!
//! Recovery reads both meta slots and takes the valid one with the highest
//! generation, loads the upper trie from its pages (one batch of reads per
//! page level), checks that every internal summary equals the combination
//! of its children's and that no two structures share a block, then replays
//! the WAL records of that generation, checking that each replayed commit
//! reproduces the root its record holds and that the log reaches the
//! commit its header witnesses ([`crate::wal`]).
//!
//! A writable open holds the directory's exclusive lock, syncs the files
//! before building on them and cuts the WAL after its last intact record
//! (a log the last checkpoint did not restart is restarted by the first
//! commit: opening never needs free space). A read-only open
//! ([`Options::read_only`]) holds a shared lock (any number of read-only
//! opens at once, none beside a writer), opens every file read-only and
//! writes nothing: the WAL is replayed in memory only, so it works on
//! read-only media and leaves every byte as it found it.

use std::path::Path;
use std::sync::Arc;

use super::read::block_location;

use super::{BucketTable, Counters, Store, DATA_FILE, META_FILE, SLOT_EXTENT_LEN_LIMIT, WAL_FILE};
use crate::alloc::{BlockAllocator, PageBlocks};
use crate::bucket::BUCKET_PREFIX_MAX;
use crate::cache::BucketCache;
use crate::error::{Result, StoreError, Structure};
use crate::format::{Extent, BLOCK_BYTES};
use crate::io::os::OsDir;
use crate::io::os::LOCK_FILE;
use crate::io::{DirLock, ReadRequest, StoreDir, StoreFile};
use crate::meta::{choose, Choice, Meta, SlotState, META_SLOTS, META_SLOT_BYTES};
use crate::options::{Options, DEFAULT_GROUP_DEPTH};
use crate::prefix::Prefix;
use crate::summary::{combine, Summary};
use crate::upper::page::{self, Entry};
use crate::upper::{BucketId, Link, NodeId, PageState, PageTable, UpperNode, UpperTrie, ROOT};
use crate::wal::{Wal, RECORDS_START};

impl Store {
    /// Opens (or creates, if allowed) the database in directory `path`.
    pub fn open_path(path: &Path, options: Options) -> Result<Store> {
        options.validate()?;
        let create = options.create_if_missing && !options.read_only;
        let dir = OsDir::open(path, create, options.read_backend).map_err(|error| {
            match error.kind() {
                std::io::ErrorKind::NotFound if !error.to_string().contains("symbolic link") => {
                    StoreError::NotFound(path.display().to_string())
                }
                std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidInput => {
                    StoreError::InvalidPath(error.to_string())
                }
                _ => StoreError::io("opening the database directory")(error),
            }
        })?;
        Store::open(Arc::new(dir), options)
    }

    /// Opens (or creates, if allowed) the database in `dir`.
    pub fn open(dir: Arc<dyn StoreDir>, options: Options) -> Result<Store> {
        options.validate()?;
        let read_only = options.read_only;
        let create_if_missing = options.create_if_missing && !read_only;
        let names = dir
            .list()
            .map_err(StoreError::io("listing the database directory"))?;
        let has_meta = names.iter().any(|n| n == META_FILE);
        if !has_meta {
            check_without_meta(dir.as_ref(), &names, create_if_missing)?;
        }
        let lock: Arc<dyn DirLock> = Arc::from(lock_directory(dir.as_ref(), read_only)?);
        Store::recover(dir, lock, options, &names, has_meta)
    }

    /// Recovery under a held lock: the checkpoint (or a new database),
    /// then the WAL records after it. `names` lists the directory.
    pub(super) fn recover(
        dir: Arc<dyn StoreDir>,
        lock: Arc<dyn DirLock>,
        options: Options,
        names: &[String],
        has_meta: bool,
    ) -> Result<Store> {
        let read_only = options.read_only;
        let create_if_missing = options.create_if_missing && !read_only;
        let open_file = |name: &str| {
            if read_only {
                dir.open_file_read_only(name)
            } else {
                dir.open_file(name, false)
            }
            .map_err(|error| file_error(error, "opening a database file"))
        };
        let choice = if has_meta {
            read_meta(open_file(META_FILE)?.as_ref())?
        } else {
            Choice::Uncreated
        };
        let (meta, meta_slot_damaged) =
            checkpoint_or_create(choice, dir.as_ref(), names, create_if_missing, &options)?;
        check_fixed_at_creation(&options, &meta)?;
        let data = open_file(DATA_FILE)?;
        data.advise_random();
        if options.direct_reads {
            // Refused by the file system: reads stay buffered (stats say so).
            data.enable_direct_reads()
                .map_err(StoreError::io("opening the data file for direct reads"))?;
        }
        let meta_file = open_file(META_FILE)?;
        let wal_file = open_file(WAL_FILE)?;
        if !read_only {
            // What recovery reads may be in the page cache only (written
            // before a sync that failed): make it durable before building
            // on it. Otherwise a checkpoint seen here but never durable
            // could be trusted, the WAL holding its commits cut, and both
            // lost at the next power loss. (A read-only open cuts nothing.)
            for file in [&meta_file, &data, &wal_file] {
                file.sync_data()
                    .map_err(StoreError::io("syncing the database files before recovery"))?;
            }
        }
        check_data_len(data.as_ref(), &meta)?;
        let (trie, buckets) = load_upper_trie(data.as_ref(), &meta)?;
        let cache = Arc::new(BucketCache::new(options.cache_bytes_max()));
        let counters = Arc::new(Counters::default());
        let flat = super::flat_ops::load_flat(data.as_ref(), &cache, &counters, &meta)?;
        let mut whole_blocks: Vec<Extent> = meta.revert_log.into_iter().collect();
        whole_blocks.extend(super::flat_ops::flat_extents(flat.as_ref()));
        let (alloc, page_blocks) = claim_space(&trie, &buckets, &whole_blocks, meta.data_blocks)?;
        let root = meta.root.summary.hash;
        let prefetcher = super::prefetch::Prefetcher::start(
            Arc::clone(&data),
            Arc::clone(&cache),
            Arc::clone(&counters),
        );
        let wal = Wal::new(
            Arc::clone(&wal_file),
            meta.generation,
            meta.commit_seq,
            RECORDS_START,
        );
        let mut store = Store {
            dir,
            lock,
            options,
            tree: super::tree::Tree {
                data,
                trie,
                buckets,
                alloc,
                released: Vec::new(),
                page_blocks,
                cache,
                prefetcher,
                dirty_bytes: 0,
                stem_count: meta.stem_count,
                leaf_count: meta.leaf_count,
                root,
                flat,
                bucket_bytes: meta.bucket_bytes,
            },
            // The revert segment is read when first needed (a read-only
            // handle reads it only to verify it, or for a reader at one of
            // its roots).
            history: super::history::History::at_checkpoint(
                root,
                (meta.stem_count, meta.leaf_count),
                meta.layer_seq,
                meta.revert_log,
            ),
            durable: super::durable::Durable::new(meta_file, wal, meta, meta_slot_damaged),
            poisoned: None,
            reads_poisoned: false,
            read_only,
            counters,
            last_apply: Default::default(),
        };
        store.replay_wal(&wal_file)?;
        Ok(store)
    }

    /// Replays the WAL records after the checkpoint. A writable handle
    /// then cuts the log after the last intact one (or restarts it, if the
    /// last checkpoint completed before it could).
    fn replay_wal(&mut self, wal_file: &Arc<dyn StoreFile>) -> Result<()> {
        let (generation, base_seq) = (self.durable.meta.generation, self.durable.meta.commit_seq);
        let replayed = Wal::replay(wal_file.as_ref(), generation, base_seq, |record| {
            self.replay_record(record)
        })?;
        if self.read_only {
            self.durable.wal = Wal::new(Arc::clone(wal_file), generation, base_seq, replayed.end);
            return Ok(());
        }
        let len = wal_file
            .len()
            .map_err(StoreError::io("reading the WAL length"))?;
        if len > replayed.end {
            wal_file
                .set_len(replayed.end)
                .and_then(|()| wal_file.sync_data())
                .map_err(StoreError::io(
                    "cutting the WAL after its last intact record",
                ))?;
        }
        self.durable.wal = if replayed.restart_pending {
            // Written at the first commit: an open needs no free space.
            Wal::pending_restart(Arc::clone(wal_file), generation, base_seq)
        } else {
            Wal::new(Arc::clone(wal_file), generation, base_seq, replayed.end)
        };
        Ok(())
    }

    /// Applies one replayed WAL record, recreating its layers.
    fn replay_record(&mut self, record: crate::wal::WalRecord) -> Result<()> {
        if record.layers.iter().any(|l| l.revert) {
            // A durable revert may reach into the window: drop its layers
            // from the window as it did when it ran.
            self.ensure_revert_window()?;
        }
        for layer in record.layers {
            let root_before = self.tree.root;
            let old = self.apply_ops_keeping_old(&layer.ops)?;
            let owners = if self.tree.flat.is_some() {
                if layer.owners.len() != layer.ops.len() {
                    return Err(StoreError::corrupted(
                        Structure::Wal,
                        format!("{WAL_FILE} record {}", record.seq),
                        "a layer without owners on a database with a flat index",
                    ));
                }
                self.record_flat(&layer.ops, &layer.owners);
                super::owners::Owners::Listed(
                    layer
                        .ops
                        .iter()
                        .map(|(k, _)| *k)
                        .zip(layer.owners.iter().copied())
                        .collect(),
                )
            } else {
                super::owners::Owners::None
            };
            if layer.revert {
                if self.tree.root != layer.root {
                    return Err(StoreError::corrupted(
                        Structure::Wal,
                        format!("{WAL_FILE} record {}", record.seq),
                        "replaying a revert does not reach the root it holds",
                    ));
                }
                self.finish_revert(layer.seq, true);
                continue;
            }
            if self.tree.root != layer.root {
                return Err(StoreError::corrupted(
                    Structure::Wal,
                    format!("{WAL_FILE} record {} layer {}", record.seq, layer.seq),
                    "replaying the layer does not reproduce the root it holds",
                ));
            }
            self.history.push(
                super::Layer {
                    seq: layer.seq,
                    root_before,
                    root: layer.root,
                    ops: Vec::new(),
                    old,
                    owners,
                    persisted: true,
                    counts_after: self.tree.counts(),
                },
                true,
            );
        }
        self.durable.set_commit_seq(record.seq);
        self.trim_layers();
        Ok(())
    }
}

/// A file-open error as a store error: a database file that is a symbolic
/// link or not a regular file is named as such, not as an I/O failure.
fn file_error(error: std::io::Error, during: &'static str) -> StoreError {
    if error.kind() == std::io::ErrorKind::InvalidInput {
        StoreError::InvalidPath(error.to_string())
    } else {
        StoreError::io(during)(error)
    }
}

/// Without a meta file, the directory must hold nothing but empty
/// database files, and may then be created.
fn check_without_meta(dir: &dyn StoreDir, names: &[String], create_if_missing: bool) -> Result<()> {
    let ours = [META_FILE, DATA_FILE, WAL_FILE, LOCK_FILE];
    if names.iter().any(|n| !ours.contains(&n.as_str())) {
        return Err(StoreError::NotADatabase(dir.describe()));
    }
    if !data_files_empty(dir, names)? {
        return Err(StoreError::corrupted(
            Structure::Meta,
            META_FILE,
            "the meta file is missing but the data file or WAL holds data",
        ));
    }
    if !create_if_missing {
        return Err(StoreError::NotFound(dir.describe()));
    }
    Ok(())
}

/// The directory's lock: shared for a read-only open, else exclusive.
fn lock_directory(dir: &dyn StoreDir, read_only: bool) -> Result<Box<dyn DirLock>> {
    if read_only {
        dir.lock_shared()
    } else {
        dir.lock_exclusive()
    }
    .map_err(|error| match error.kind() {
        std::io::ErrorKind::WouldBlock => StoreError::Locked(dir.describe()),
        _ => StoreError::io("locking the database directory")(error),
    })
}

/// The checkpoint to recover from, and whether a meta slot was damaged; a
/// database whose creation never completed is created again.
fn checkpoint_or_create(
    choice: Choice,
    dir: &dyn StoreDir,
    names: &[String],
    create_if_missing: bool,
    options: &Options,
) -> Result<(Meta, bool)> {
    match choice {
        Choice::Current(meta, damaged) => Ok((meta, damaged)),
        Choice::Uncreated | Choice::Lost(_) if data_files_empty(dir, names)? => {
            // A creation that never completed: nothing was ever committed.
            if !create_if_missing {
                return Err(StoreError::NotFound(dir.describe()));
            }
            Ok((create(dir, options)?, false))
        }
        Choice::Uncreated => Err(StoreError::corrupted(
            Structure::Meta,
            META_FILE,
            "the meta file is blank but the data file or WAL holds data",
        )),
        Choice::Lost(why) => Err(StoreError::corrupted(Structure::Meta, META_FILE, why)),
    }
}

/// The data file holds at least the checkpoint's blocks.
fn check_data_len(data: &dyn StoreFile, meta: &Meta) -> Result<()> {
    let data_len = data
        .len()
        .map_err(StoreError::io("reading the data file length"))?;
    let needed = meta.data_blocks * BLOCK_BYTES as u64;
    if data_len < needed {
        return Err(StoreError::corrupted(
            Structure::Meta,
            META_FILE,
            format!("data file is {data_len} bytes, checkpoint needs {needed}"),
        ));
    }
    Ok(())
}

/// Reads the four meta slots and chooses the current checkpoint
/// ([`crate::meta::choose`]).
fn read_meta(file: &dyn StoreFile) -> Result<Choice> {
    let len = file
        .len()
        .map_err(StoreError::io("reading the meta file length"))?;
    let mut bytes = vec![0u8; META_SLOTS * META_SLOT_BYTES];
    let readable = usize::try_from(len).map_or(bytes.len(), |len| len.min(bytes.len()));
    file.read_exact_at(&mut bytes[..readable], 0)
        .map_err(StoreError::io("reading the meta file"))?;
    let slots: [SlotState; META_SLOTS] =
        std::array::from_fn(|slot| SlotState::read(&bytes[..readable], slot));
    for slot in &slots {
        if let SlotState::Unsupported(found) = slot {
            return Err(StoreError::UnsupportedVersion {
                found: *found,
                supported: crate::format::FORMAT_VERSION,
            });
        }
    }
    Ok(choose(&slots))
}

/// Whether nothing was ever committed or checkpointed: the data file is
/// missing or empty and the WAL is missing or holds no more than its
/// header. (Read through read-only opens, so it never writes.)
fn data_files_empty(dir: &dyn StoreDir, names: &[String]) -> Result<bool> {
    for (name, allowed) in [(DATA_FILE, 0), (WAL_FILE, RECORDS_START)] {
        if names.iter().any(|n| n == name) {
            let file = dir
                .open_file_read_only(name)
                .map_err(|error| file_error(error, "opening a database file"))?;
            if file
                .len()
                .map_err(StoreError::io("reading a file length"))?
                > allowed
            {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// What a database fixes at creation (group depth, bucket capacity) must
/// equal what the options ask for, when they ask.
fn check_fixed_at_creation(options: &Options, meta: &Meta) -> Result<()> {
    if let Some(requested) = options.group_depth {
        if requested != meta.group_depth {
            return Err(StoreError::GroupDepthMismatch {
                stored: meta.group_depth,
                requested,
            });
        }
    }
    if let Some(requested) = options.bucket_bytes {
        if requested != meta.bucket_bytes {
            return Err(StoreError::BucketBytesMismatch {
                stored: meta.bucket_bytes,
                requested,
            });
        }
    }
    Ok(())
}

/// Creates an empty database. Order matters for crashes: the data file
/// and the WAL (with its first header mark, epoch 0) are created, synced
/// and their names made durable before the meta file exists, and the meta file's two copies of generation 0 are written
/// and synced one after the other. A crash at any point leaves either no
/// meta file or one [`read_meta`] recognises, next to empty data and WAL
/// files: an unfinished creation, created again on the next open.
fn create(dir: &dyn StoreDir, options: &Options) -> Result<Meta> {
    let meta = Meta {
        generation: 0,
        group_depth: options.group_depth.unwrap_or(DEFAULT_GROUP_DEPTH),
        commit_seq: 0,
        layer_seq: 0,
        revert_log: None,
        data_blocks: 0,
        bucket_count: 1,
        stem_count: 0,
        leaf_count: 0,
        root: Entry {
            summary: Summary::EMPTY,
            leaf: true,
            extent: None,
        },
        flat: options.flat_index.then_some(crate::meta::FlatMeta {
            root: None,
            records: 0,
        }),
        bucket_bytes: options
            .bucket_bytes
            .unwrap_or(crate::bucket::BUCKET_BYTES_DEFAULT),
    };
    let failed = StoreError::io("creating the database");
    let create_empty = |name: &str| -> std::io::Result<Arc<dyn StoreFile>> {
        let file = dir.open_file(name, true)?;
        file.set_len(0)?;
        file.sync_data()?;
        Ok(file)
    };
    (|| {
        create_empty(DATA_FILE)?;
        let wal_file = create_empty(WAL_FILE)?;
        crate::wal::write_restart_mark(wal_file.as_ref(), 0, 0).map_err(|error| match error {
            StoreError::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        })?;
        dir.sync_dir()?;
        let meta_file = create_empty(META_FILE)?;
        for slot in meta.slots() {
            meta_file.write_all_at(&meta.encode(slot), (slot * META_SLOT_BYTES) as u64)?;
            meta_file.sync_data()?;
        }
        meta_file.set_len((META_SLOTS * META_SLOT_BYTES) as u64)?;
        meta_file.sync_data()?;
        dir.sync_dir()
    })()
    .map_err(failed)?;
    Ok(meta)
}

/// Trie pages read per batch when opening.
const PAGES_PER_READ: usize = 4096;

/// A page to load: its root node, prefix and reference.
struct PendingPage {
    node: NodeId,
    prefix: Prefix,
    at: Extent,
}

/// Loads the upper trie and the bucket table from the checkpoint's pages.
fn load_upper_trie(data: &dyn StoreFile, meta: &Meta) -> Result<(UpperTrie, BucketTable)> {
    let g = meta.group_depth;
    let root = meta.root;
    // Sized up front from the meta record's bucket count (a full binary
    // trie over B leaves has 2B - 1 nodes), so loading never doubles a
    // vector holding most of the resident bytes. The count is read from
    // disk: it is only a hint, bounded by the data file (every written
    // bucket owns a block) and checked against the pages below.
    let bucket_hint = usize::try_from(meta.bucket_count.min(meta.data_blocks + 1)).unwrap_or(0);
    let mut nodes = Vec::with_capacity((2 * bucket_hint).saturating_sub(1).max(1));
    nodes.push(UpperNode::new(root.summary, Link::Leaf(0), 0, false));
    let mut pages = PageTable::default();
    let mut buckets = BucketTable::with_capacity(bucket_hint);
    let mut level: Vec<PendingPage> = Vec::new();
    if root.leaf {
        check_bucket_extent(root.extent)
            .map_err(|detail| StoreError::corrupted(Structure::Meta, META_FILE, detail))?;
        buckets.push(&Prefix::ROOT, root.extent);
    } else {
        let at = root.extent.ok_or_else(|| {
            StoreError::corrupted(Structure::Meta, META_FILE, "internal root without a page")
        })?;
        nodes[0].set_link(Link::Internal([NodeId::MAX; 2]));
        pages.insert(
            ROOT,
            PageState {
                extent: Some(at),
                dirty: false,
            },
        );
        level.push(PendingPage {
            node: ROOT,
            prefix: Prefix::ROOT,
            at,
        });
    }
    while !level.is_empty() {
        let mut next = Vec::new();
        // A level can hold 2^18 pages at 100M+ entries: read it a chunk at
        // a time so its bytes are never all in memory (they were 0.36 GB
        // at 200M). Chunks keep the level's order, so node ids do too.
        for chunk in level.chunks(PAGES_PER_READ) {
            let requests: Vec<ReadRequest> = chunk
                .iter()
                .map(|p| ReadRequest {
                    offset: p.at.offset,
                    len: p.at.byte_len(),
                })
                .collect();
            let read = data.read_batch(&requests);
            for (pending, bytes) in chunk.iter().zip(read) {
                let bytes = bytes.map_err(StoreError::io("reading trie pages"))?;
                let location = block_location(&pending.at);
                // A page hangs below an internal node, and an internal
                // node's children are at most a bucket prefix deep.
                if pending.prefix.len() >= BUCKET_PREFIX_MAX {
                    return Err(StoreError::corrupted(
                        Structure::TriePage,
                        location,
                        "page below the deepest possible internal node",
                    ));
                }
                let decoded = page::decode(&bytes, g, &pending.prefix, pending.at.crc, &location)?;
                let arena = (&mut nodes, &mut pages, &mut buckets);
                add_page(arena, pending, &decoded, g, &mut next).map_err(|detail| {
                    StoreError::corrupted(Structure::TriePage, location, detail)
                })?;
            }
        }
        level = next;
    }
    let trie = UpperTrie::from_nodes(nodes, pages, g);
    buckets.shrink_to_fit();
    check_summaries(&trie)?;
    if buckets.len() as u64 != meta.bucket_count {
        return Err(StoreError::corrupted(
            Structure::Meta,
            META_FILE,
            format!(
                "{} buckets in the pages, meta says {}",
                buckets.len(),
                meta.bucket_count
            ),
        ));
    }
    Ok((trie, buckets))
}

/// Creates the nodes of a decoded page below its root node.
fn add_page(
    (nodes, pages, buckets): (&mut Vec<UpperNode>, &mut PageTable, &mut BucketTable),
    pending: &PendingPage,
    decoded: &page::DecodedPage,
    g: u8,
    next: &mut Vec<PendingPage>,
) -> std::result::Result<(), &'static str> {
    let base_depth = pending.prefix.len();
    // Node id of each slot of this page (entries come in slot order, so a
    // parent is always created before its children).
    let mut slot_nodes = vec![NodeId::MAX; page::slot_count(g)];
    for &(rel, index, entry) in &decoded.entries {
        let id = NodeId::try_from(nodes.len()).map_err(|_| "more nodes than node ids")?;
        let depth = base_depth + rel;
        // Buckets are at most BUCKET_PREFIX_MAX bits deep, so internal
        // nodes at most one bit less.
        if depth > BUCKET_PREFIX_MAX || (!entry.leaf && depth >= BUCKET_PREFIX_MAX) {
            return Err("a node deeper than the deepest bucket prefix");
        }
        let mut prefix = pending.prefix;
        for bit in (0..rel).rev() {
            prefix = prefix
                .child(u8::from((index >> bit) & 1 == 1))
                .ok_or("a node deeper than a stem")?;
        }
        let parent = if rel == 1 {
            pending.node
        } else {
            slot_nodes[page::slot_of(rel - 1, index / 2)]
        };
        // The two children of a node are side by side in slot order
        // (decoding checks both are present), so they get consecutive ids.
        let parent_node = &mut nodes[parent as usize];
        if let Link::Internal([first, _]) = parent_node.link() {
            if index % 2 == 0 {
                let second = id.checked_add(1).ok_or("more nodes than node ids")?;
                parent_node.set_link(Link::Internal([id, second]));
            } else if first.checked_add(1) != Some(id) {
                return Err("the children of a node are not side by side");
            }
        }
        slot_nodes[page::slot_of(rel, index)] = id;
        let (link, page) = if entry.leaf {
            check_bucket_extent(entry.extent)?;
            BucketId::try_from(buckets.len()).map_err(|_| "more buckets than ids")?;
            (Link::Leaf(buckets.push(&prefix, entry.extent)), None)
        } else if rel == usize::from(g) {
            // Decoding guarantees bottom-row internal nodes have a page.
            let page = entry.extent.map(|at| {
                next.push(PendingPage {
                    node: id,
                    prefix,
                    at,
                });
                PageState {
                    extent: Some(at),
                    dirty: false,
                }
            });
            (Link::Internal([NodeId::MAX; 2]), page)
        } else {
            (Link::Internal([NodeId::MAX; 2]), None)
        };
        if let Some(page) = page {
            pages.insert(id, page);
        }
        nodes.push(UpperNode::new(entry.summary, link, depth, false));
    }
    Ok(())
}

/// A bucket's extent must fit the bucket table's slot (buckets are far
/// shorter than [`SLOT_EXTENT_LEN_LIMIT`]; a longer one is damage).
fn check_bucket_extent(extent: Option<Extent>) -> std::result::Result<(), &'static str> {
    match extent {
        Some(at) if at.len >= SLOT_EXTENT_LEN_LIMIT => Err("a bucket longer than any bucket"),
        _ => Ok(()),
    }
}

/// Marks every block the checkpoint uses: buckets own whole blocks, pages
/// share blocks with other pages only. Fails on any overlap or any extent
/// past the data file's recorded length.
fn claim_space(
    trie: &UpperTrie,
    buckets: &BucketTable,
    revert_log: &[Extent],
    data_blocks: u64,
) -> Result<(BlockAllocator, PageBlocks)> {
    let overlap = |extent: &Extent| {
        StoreError::corrupted(
            Structure::Trie,
            block_location(extent),
            "extent outside the data file or shared with another structure",
        )
    };
    let mut alloc = BlockAllocator::new();
    for extent in buckets
        .iter()
        .filter_map(|b| b.extent())
        .chain(revert_log.iter().copied())
    {
        if extent.offset % BLOCK_BYTES as u64 != 0
            || extent.blocks().end > data_blocks
            || !alloc.mark_used(extent.blocks())
        {
            return Err(overlap(&extent));
        }
    }
    let mut pages: Vec<Extent> = trie.page_refs().collect();
    pages.sort_unstable_by_key(|e| e.offset);
    let mut page_blocks = PageBlocks::default();
    let mut previous_end = 0u64;
    for extent in pages {
        if extent.offset < previous_end || extent.blocks().end > data_blocks {
            return Err(overlap(&extent));
        }
        for block in extent.blocks() {
            if !page_blocks.contains(block) && !alloc.mark_used(block..block + 1) {
                return Err(overlap(&extent));
            }
        }
        page_blocks.add(extent.offset, extent.len);
        previous_end = extent.end();
    }
    Ok((alloc, page_blocks))
}

/// Every internal node's summary must combine its children's.
fn check_summaries(trie: &UpperTrie) -> Result<()> {
    let mut failure: Option<StoreError> = None;
    trie.walk(|id, prefix| {
        if failure.is_some() {
            return;
        }
        let node = trie.node(id);
        if let Link::Internal([left, right]) = node.link() {
            if left == NodeId::MAX || right == NodeId::MAX {
                failure = Some(StoreError::corrupted(
                    Structure::TriePage,
                    format!("{prefix:?}"),
                    "missing child",
                ));
                return;
            }
            let expected = combine(&trie.node(left).summary(), &trie.node(right).summary());
            if expected != node.summary() {
                failure = Some(StoreError::corrupted(
                    Structure::Trie,
                    format!("upper-trie node {prefix:?}"),
                    "summary is not the combination of its children's",
                ));
            }
        }
    });
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upper::page::{DecodedPage, Entry};

    /// A page whose two leaves reference buckets of `len` bytes.
    fn page_with_bucket_len(len: u32) -> DecodedPage {
        let leaf = |block: u64| Entry {
            summary: Summary::one([7u8; 32]),
            leaf: true,
            extent: Some(Extent {
                offset: block * BLOCK_BYTES as u64,
                len,
                crc: 1,
            }),
        };
        DecodedPage {
            entries: vec![(1, 0, leaf(1)), (1, 1, leaf(9))],
        }
    }

    /// The bucket table keeps an extent's length in 24 bits: a page that
    /// references a bucket of 2^24 bytes or more is refused as damage
    /// when loaded, not truncated into a shorter extent; one byte less
    /// loads, with the length whole.
    #[test]
    fn a_bucket_longer_than_a_slot_holds_is_refused_at_open() {
        let root = PendingPage {
            node: ROOT,
            prefix: Prefix::ROOT,
            at: Extent::default(),
        };
        for (len, accepted) in [
            (SLOT_EXTENT_LEN_LIMIT, false),
            (u32::MAX, false),
            (SLOT_EXTENT_LEN_LIMIT - 1, true),
        ] {
            let mut nodes = vec![UpperNode::new(
                Summary::EMPTY,
                Link::Internal([NodeId::MAX; 2]),
                0,
                false,
            )];
            let mut pages = PageTable::default();
            let mut buckets = BucketTable::default();
            let mut next = Vec::new();
            let arena = (&mut nodes, &mut pages, &mut buckets);
            let loaded = add_page(arena, &root, &page_with_bucket_len(len), 4, &mut next);
            assert_eq!(loaded.is_ok(), accepted, "length {len}: {loaded:?}");
            if accepted {
                assert_eq!(nodes[0].link(), Link::Internal([1, 2]));
                assert_eq!(buckets.len(), 2);
                assert_eq!(buckets[1].extent().map(|e| e.len), Some(len));
            }
        }
    }
}

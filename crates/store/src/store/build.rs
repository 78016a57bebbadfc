//! Bulk build: a fresh database from key/value pairs sorted by key, in one
//! pass. Stems are cut into buckets on the fly (each bucket the shallowest
//! prefix whose stems fit in one block) on the calling thread, while a
//! second thread hashes and encodes the previous batches of buckets on the
//! thread pool and writes them sequentially; the upper trie's pages and the
//! meta record are written last. Until that meta record is synced the
//! directory still opens as the empty database it was created as.

use std::collections::VecDeque;
use std::sync::Arc;

use alloy_primitives::B256;
use rayon::prelude::*;
use ubt_spec::key::{sub_index, Stem};

use super::checkpoint::RunWriter;
use super::{BucketTable, Store, META_FILE};
use crate::bucket::{codec, Bucket, StemEntry, BUCKET_PREFIX_MAX, SUB_COUNT};
use crate::error::{Result, StoreError};
use crate::format::{blocks_for, Extent};
use crate::io::StoreDir;
use crate::options::Options;
use crate::prefix::Prefix;
use crate::summary::Summary;
use crate::upper::{id_of, BucketId, Link, NodeId, PageState, PageTable, UpperNode, UpperTrie};

/// Encoded bucket bytes hashed and written per parallel batch (about
/// 4,096 buckets of 4 KiB at their usual fill): a batch is cut by bytes,
/// not by buckets, so the build's memory does not grow with the bucket
/// capacity.
const BATCH_BYTES: usize = 12 << 20;
/// Batches cut but not yet hashed, at most.
const BATCHES_IN_FLIGHT: usize = 2;

/// What the hashing thread reports for one bucket.
struct Hashed {
    bucket: BucketId,
    summary: Summary,
    extent: Option<Extent>,
    stems: u64,
    leaves: u64,
}

/// What the hashing thread did.
struct Consumed {
    hashed: Vec<Hashed>,
    next_block: u64,
    bytes_written: u64,
}

/// Hashes, encodes and writes batches until the channel closes.
fn hash_and_write(
    batches: std::sync::mpsc::Receiver<Vec<(BucketId, Bucket)>>,
    data: Arc<dyn crate::io::StoreFile>,
) -> Result<Consumed> {
    let mut writer = RunWriter::new(data.as_ref());
    let mut next_block = 0u64;
    let mut hashed = Vec::new();
    for mut batch in batches {
        let encoded: Vec<(Summary, Option<Vec<u8>>)> = batch
            .par_iter_mut()
            .map(|(_, bucket)| {
                let summary = bucket.summary();
                let bytes = (!bucket.is_empty()).then(|| codec::encode(bucket));
                (summary, bytes)
            })
            .collect();
        for ((bucket_id, bucket), (summary, bytes)) in batch.iter().zip(encoded) {
            let extent = match bytes {
                Some(bytes) => {
                    let block = next_block;
                    next_block += u64::from(blocks_for(bytes.len()));
                    let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                    writer.write(block, &bytes)?;
                    Some(Extent::at_block(block, bytes.len(), crc))
                }
                None => None,
            };
            hashed.push(Hashed {
                bucket: *bucket_id,
                summary,
                extent,
                stems: bucket.stem_count() as u64,
                leaves: bucket.leaf_count() as u64,
            });
        }
    }
    writer.flush()?;
    Ok(Consumed {
        hashed,
        next_block,
        bytes_written: writer.written,
    })
}

/// What a bulk build did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildReport {
    /// Key/value pairs read (duplicates included).
    pub entries_read: u64,
    /// Values stored (after duplicates collapsed).
    pub leaf_count: u64,
    /// Stems stored.
    pub stem_count: u64,
    /// Buckets written (non-empty).
    pub buckets_written: u64,
    /// Upper-trie pages written.
    pub pages_written: u64,
    /// Bytes written to the data file.
    pub data_bytes_written: u64,
}

/// A stem read from the input with its values.
struct InputStem {
    stem: Stem,
    values: Vec<(u8, B256)>,
}

/// Groups a sorted key/value stream into stems, checking the order.
struct StemReader<I: Iterator> {
    input: std::iter::Peekable<I>,
    last_key: Option<B256>,
    index: u64,
}

impl<I: Iterator<Item = (B256, B256)>> StemReader<I> {
    fn next_stem(&mut self) -> Result<Option<InputStem>> {
        let Some((first_key, first_value)) = self.take()? else {
            return Ok(None);
        };
        let stem = Stem::of_key(&first_key);
        let mut values = vec![(sub_index(&first_key), first_value)];
        while let Some((key, _)) = self.input.peek() {
            if Stem::of_key(key) != stem {
                break;
            }
            let Some((key, value)) = self.take()? else {
                break;
            };
            match values.last_mut() {
                Some(last) if last.0 == sub_index(&key) => last.1 = value,
                _ => values.push((sub_index(&key), value)),
            }
        }
        Ok(Some(InputStem { stem, values }))
    }

    fn take(&mut self) -> Result<Option<(B256, B256)>> {
        let Some((key, value)) = self.input.next() else {
            return Ok(None);
        };
        if self.last_key.is_some_and(|last| key < last) {
            return Err(StoreError::UnsortedInput { index: self.index });
        }
        self.last_key = Some(key);
        self.index += 1;
        Ok(Some((key, value)))
    }
}

/// The streaming partitioner.
struct Builder<I: Iterator> {
    reader: StemReader<I>,
    lookahead: VecDeque<InputStem>,
    group_depth: u8,
    /// The database's bucket capacity: a bucket is cut before it grows past it.
    bucket_bytes: usize,
    nodes: Vec<UpperNode>,
    pages: PageTable,
    buckets: BucketTable,
    /// Each bucket's leaf, by bucket id (for the build only: the table
    /// keeps no leaf ids).
    leaves: Vec<NodeId>,
    batch: Vec<(BucketId, Bucket)>,
    /// Encoded bytes of `batch`.
    batch_bytes: usize,
    batches: std::sync::mpsc::SyncSender<Vec<(BucketId, Bucket)>>,
}

impl<I: Iterator<Item = (B256, B256)>> Builder<I> {
    /// How many lookahead stems lie under `prefix`, and whether they all fit
    /// in one bucket (reading more input as needed).
    fn scan(&mut self, prefix: &Prefix) -> Result<(usize, bool)> {
        let mut bytes = codec::header_bytes(prefix.len(), SUB_COUNT);
        let mut count = 0usize;
        loop {
            if count == self.lookahead.len() {
                match self.reader.next_stem()? {
                    Some(stem) => self.lookahead.push_back(stem),
                    None => return Ok((count, true)),
                }
            }
            let next = &self.lookahead[count];
            if !prefix.contains(&next.stem) {
                return Ok((count, true));
            }
            bytes += codec::record_bytes(prefix.len(), next.values.len());
            count += 1;
            if bytes > self.bucket_bytes && count >= 2 && prefix.len() < BUCKET_PREFIX_MAX {
                return Ok((count, false));
            }
        }
    }

    fn push_node(&mut self, depth: usize, link: Link) -> NodeId {
        debug_assert!(matches!(link, Link::Leaf(_)), "nodes start as leaves");
        self.nodes
            .push(UpperNode::new(Summary::EMPTY, link, depth, true));
        id_of(self.nodes.len() - 1)
    }

    /// Builds the subtree at `prefix` into `node` (already pushed).
    /// Explicit stack: prefixes can be 244 bits deep.
    fn build_from(&mut self, root: NodeId, root_prefix: Prefix) -> Result<()> {
        let mut stack = vec![(root, root_prefix)];
        while let Some((node, prefix)) = stack.pop() {
            let (count, fits) = self.scan(&prefix)?;
            if fits {
                let mut bucket = Bucket::new(prefix);
                for stem in self.lookahead.drain(..count) {
                    let (first_sub, _) = stem.values[0];
                    let mut entry = StemEntry::new(stem.stem, first_sub, 0);
                    for &(sub, _) in &stem.values[1..] {
                        entry.add(sub);
                    }
                    let values: Vec<B256> = stem.values.iter().map(|(_, v)| *v).collect();
                    bucket.push_stem(&entry, &values);
                }
                bucket.finish_bulk();
                let id = self.buckets.push(&prefix, None);
                self.leaves.push(node);
                self.nodes[node as usize].set_link(Link::Leaf(id));
                self.batch_bytes += bucket.encoded_len();
                self.batch.push((id, bucket));
                if self.batch_bytes >= BATCH_BYTES {
                    self.flush_batch()?;
                }
                continue;
            }
            let (Some(left), Some(right)) = (prefix.child(0), prefix.child(1)) else {
                unreachable!("scan never splits at the longest prefix");
            };
            let depth = prefix.len() + 1;
            let children = [
                self.push_node(depth, Link::Leaf(BucketId::MAX)),
                self.push_node(depth, Link::Leaf(BucketId::MAX)),
            ];
            let is_page_root = prefix.len() % usize::from(self.group_depth) == 0;
            self.nodes[node as usize].set_link(Link::Internal(children));
            if is_page_root {
                self.pages.insert(
                    node,
                    PageState {
                        extent: None,
                        dirty: true,
                    },
                );
            }
            stack.push((children[1], right));
            stack.push((children[0], left));
        }
        Ok(())
    }

    /// Hands the batch to the hashing thread. If that thread has stopped,
    /// its error is reported when it is joined.
    fn flush_batch(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        if !batch.is_empty() && self.batches.send(batch).is_err() {
            return Err(StoreError::io("writing the bulk build")(
                std::io::Error::other("the hashing thread stopped"),
            ));
        }
        Ok(())
    }
}

impl Store {
    /// Builds a fresh database in `dir` from `entries` sorted by key
    /// (equal keys allowed; the last one wins) and returns it open. The
    /// directory must not hold a database with data in it. The database
    /// has no flat index, whatever `options.flat_index` says (the entries
    /// name no accounts): [`Store::build_flat_index`] adds it.
    pub fn build(
        dir: Arc<dyn StoreDir>,
        options: Options,
        entries: impl IntoIterator<Item = (B256, B256)>,
    ) -> Result<(Store, BuildReport)> {
        let existed = dir
            .exists(META_FILE)
            .map_err(StoreError::io("looking for the meta file"))?;
        let mut store = Store::open(
            dir,
            Options {
                create_if_missing: true,
                ..options
            },
        )?;
        if existed && (store.durable.meta.generation > 0 || store.durable.commit_seq() > 0) {
            return Err(StoreError::AlreadyExists(store.dir.describe()));
        }
        let report = store.build_into(entries);
        if report.is_err() && store.durable.meta.generation == 0 {
            // Nothing refers to what the failed build wrote: give the space
            // back so that a retry (say, after a full disk) has it. Best
            // effort: the error that matters is the build's.
            let _ = store
                .tree
                .data
                .set_len(0)
                .and_then(|()| store.tree.data.sync_data());
        }
        let report = report?;
        Ok((store, report))
    }

    /// The body of [`Store::build`], into the open empty database.
    fn build_into(
        &mut self,
        entries: impl IntoIterator<Item = (B256, B256)>,
    ) -> Result<BuildReport> {
        let store = self;
        // The entries come without owners, so the database is built
        // without a flat index (one made empty at creation is dropped):
        // `build_flat_index` adds it. A process stopped in between leaves
        // a database read from the tree, never an empty index over a full
        // tree.
        debug_assert!(store
            .tree
            .flat
            .as_ref()
            .is_none_or(|f| f.stored_records() == 0 && !f.has_changes()));
        store.tree.flat = None;
        let data = Arc::clone(&store.tree.data);
        let group_depth = store.tree.trie.group_depth();
        let (sender, receiver) = std::sync::mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (partitioned, consumed) = std::thread::scope(|scope| {
            let hasher = scope.spawn(move || hash_and_write(receiver, data));
            let mut builder = Builder {
                reader: StemReader {
                    input: entries.into_iter().peekable(),
                    last_key: None,
                    index: 0,
                },
                lookahead: VecDeque::new(),
                group_depth,
                bucket_bytes: store.tree.bucket_bytes,
                nodes: Vec::new(),
                pages: PageTable::default(),
                buckets: BucketTable::default(),
                leaves: Vec::new(),
                batch: Vec::new(),
                batch_bytes: 0,
                batches: sender,
            };
            let root = builder.push_node(0, Link::Leaf(BucketId::MAX));
            let partitioned = builder
                .build_from(root, Prefix::ROOT)
                .and_then(|()| builder.flush_batch())
                .map(|()| {
                    (
                        builder.nodes,
                        builder.pages,
                        builder.buckets,
                        builder.leaves,
                        builder.reader.index,
                    )
                });
            // Closing the channel ends the hashing thread.
            drop(builder.batches);
            let consumed = hasher
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (partitioned, consumed)
        });
        let consumed = consumed?;
        let (mut nodes, pages, mut buckets, leaves, entries_read) = partitioned?;
        let mut report = BuildReport {
            entries_read,
            ..BuildReport::default()
        };
        for hashed in consumed.hashed {
            buckets[hashed.bucket as usize].set_extent(hashed.extent);
            let leaf = &mut nodes[leaves[hashed.bucket as usize] as usize];
            leaf.set_summary(hashed.summary);
            leaf.set_stale(false);
            report.stem_count += hashed.stems;
            report.leaf_count += hashed.leaves;
            report.buckets_written += u64::from(hashed.extent.is_some());
        }
        let next_block = consumed.next_block;
        let data = Arc::clone(&store.tree.data);
        let mut writer = RunWriter::new(data.as_ref());
        super::Counters::add(&store.counters.data_bytes_written, consumed.bytes_written);

        let mut trie = UpperTrie::from_nodes(nodes, pages, store.tree.trie.group_depth());
        buckets.shrink_to_fit();
        store.tree.root = trie.rehash().hash;
        store.tree.trie = trie;
        store.tree.buckets = buckets;
        store.tree.alloc = crate::alloc::BlockAllocator::new();
        store.tree.alloc.mark_used(0..next_block);
        store.tree.stem_count = report.stem_count;
        store.tree.leaf_count = report.leaf_count;
        store
            .history
            .set_built(store.tree.root, store.tree.counts());
        report.pages_written = store.tree.trie.page_count() as u64;
        store.write_pages_and_meta(&mut writer, &Default::default(), None)?;
        store.after_checkpoint()?;
        report.data_bytes_written = store.stats().data_bytes_written;
        Ok(report)
    }
}

//! Statistics of an open store.

use alloy_primitives::B256;

/// A snapshot of a store's shape, memory and I/O counters (counters count
/// since the handle was opened). Serializes with the root as `0x` hex.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Stats {
    /// How batched reads are issued (`io_uring`, `pread-pool`, `sequential`).
    pub read_backend: String,
    /// Whether data-file reads bypass the page cache
    /// ([`crate::Options::direct_reads`], where the file system allows it).
    pub direct_reads: bool,
    /// Group depth of the upper-trie pages.
    pub group_depth: u8,
    /// Bucket capacity in encoded bytes (a bucket over it is split).
    pub bucket_bytes: u64,
    /// Checkpoints since creation.
    pub generation: u64,
    /// Sequence number of the last commit.
    pub commit_seq: u64,
    /// Current root.
    #[serde(serialize_with = "hex_hash")]
    pub root: B256,
    /// Stems stored.
    pub stem_count: u64,
    /// Values stored.
    pub leaf_count: u64,
    /// Buckets (leaves of the upper trie).
    pub bucket_count: u64,
    /// Nodes of the upper trie.
    pub upper_node_count: u64,
    /// Upper-trie pages.
    pub page_count: u64,
    /// Deepest bucket prefix.
    pub bucket_depth_max: u64,
    /// Mean bucket prefix length.
    pub bucket_depth_mean: f64,
    /// Data file length as allocated.
    pub data_file_bytes: u64,
    /// Bytes of the data file referenced by the checkpoint.
    pub data_used_bytes: u64,
    /// Blocks holding upper-trie pages.
    pub page_blocks: u64,
    /// Bytes of live upper-trie pages.
    pub page_live_bytes: u64,
    /// Bytes of WAL records since the last checkpoint.
    pub wal_bytes: u64,
    /// Buckets changed since the last checkpoint.
    pub dirty_buckets: u64,
    /// Memory held by changed buckets.
    pub dirty_bytes: u64,
    /// Memory held by the clean bucket cache.
    pub cache_bytes: u64,
    /// Memory held by the upper trie and bucket table.
    pub upper_trie_bytes: u64,
    /// The configured memory budget.
    pub memory_budget_bytes: u64,
    /// Bucket reads issued to the data file.
    pub bucket_reads: u64,
    /// Bytes those reads returned.
    pub bucket_read_bytes: u64,
    /// Bucket lookups served by the cache.
    pub cache_hits: u64,
    /// Bytes written to the data file.
    pub data_bytes_written: u64,
    /// Bytes written to the WAL.
    pub wal_bytes_written: u64,
    /// Bytes written to the meta file.
    pub meta_bytes_written: u64,
    /// Commits that wrote a WAL record.
    pub commits: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Whether a meta slot was found damaged at open: a checkpoint torn by
    /// a crash, or one bad copy of a pair (the next checkpoints rewrite it).
    pub meta_slot_damaged: bool,
    /// Why the revert segment was dropped, if it was read and found
    /// damaged (reverts reach only the blocks in memory; the next
    /// checkpoint writes a sound window).
    pub revert_window_damaged: Option<String>,
    /// Why the handle refuses writes, if it does.
    pub poisoned: Option<String>,
    /// Whether the database keeps a flat index of account values.
    pub flat_index: bool,
    /// Records in the flat index's leaves (the last checkpoint's).
    pub flat_records: u64,
    /// Flat-index leaves.
    pub flat_leaves: u64,
    /// Flat-index directory nodes.
    pub flat_nodes: u64,
    /// Flat-index changes held in memory since the last checkpoint, key
    /// by key.
    pub flat_changes: u64,
    /// Stems that fill a flat-index leaf by themselves: their reads go to
    /// the tree's buckets, and their writes are held as the stem alone.
    pub flat_dense_stems: u64,
    /// Stems written as a whole since the last checkpoint (one entry each,
    /// however many values were written; the tree holds their values).
    pub flat_stem_changes: u64,
    /// Resident bytes of the flat index's directory (one fence per leaf,
    /// plus the nodes above and the set of dense stems).
    pub flat_directory_bytes: u64,
}

/// Serializes a hash as `0x` followed by 64 hex digits.
fn hex_hash<S: serde::Serializer>(hash: &B256, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("0x{}", alloy_primitives::hex::encode(hash)))
}

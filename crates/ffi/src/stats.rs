//! [`UbtStats`], the C view of the engine's `Stats`, and `ubt_db_stats`.

use std::ffi::c_char;

use ubt_engine::Stats;

use crate::db::DATABASES;
use crate::guard;
use crate::ptr::Out;
use crate::types::UbtBytes32;

/// Bytes of `UbtStats::read_backend`, its NUL included.
pub const UBT_READ_BACKEND_NAME_BYTES: usize = 16;

/// A database's shape, memory and I/O counters (counters count since the
/// handle was opened). Flags are 0 or 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UbtStats {
    /// The current root (the tip).
    pub root: UbtBytes32,
    /// Checkpoints since creation.
    pub generation: u64,
    /// Sequence number of the last commit.
    pub commit_seq: u64,
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
    /// Commits that wrote a WAL record.
    pub commits: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Records in the flat index's leaves (at the last checkpoint).
    pub flat_records: u64,
    /// Group depth of the upper-trie pages.
    pub group_depth: u8,
    /// 1 when the database keeps a flat index of account values.
    pub flat_index: u8,
    /// 1 when the engine refuses writes after a failed write (reopen).
    pub poisoned: u8,
    /// 1 when a meta slot was found damaged at open.
    pub meta_slot_damaged: u8,
    /// 1 when the revert window read at open was damaged and dropped.
    pub revert_window_damaged: u8,
    /// 1 when data-file reads bypass the page cache (`direct_reads` was
    /// asked for and the file system allows it).
    pub direct_reads: u8,
    /// How batched reads are issued (`"io_uring"`, `"pread-pool"`,
    /// `"sequential"`), NUL-terminated.
    pub read_backend: [c_char; UBT_READ_BACKEND_NAME_BYTES],
}

/// `name` as a NUL-terminated C array, cut to fit.
fn backend_name(name: &str) -> [c_char; UBT_READ_BACKEND_NAME_BYTES] {
    let mut out = [0; UBT_READ_BACKEND_NAME_BYTES];
    for (slot, byte) in out
        .iter_mut()
        .zip(name.bytes().take(UBT_READ_BACKEND_NAME_BYTES - 1))
    {
        *slot = c_char::from_ne_bytes([byte]);
    }
    out
}

impl From<&Stats> for UbtStats {
    fn from(stats: &Stats) -> UbtStats {
        UbtStats {
            root: stats.root.into(),
            generation: stats.generation,
            commit_seq: stats.commit_seq,
            stem_count: stats.stem_count,
            leaf_count: stats.leaf_count,
            bucket_count: stats.bucket_count,
            upper_node_count: stats.upper_node_count,
            page_count: stats.page_count,
            bucket_depth_max: stats.bucket_depth_max,
            bucket_depth_mean: stats.bucket_depth_mean,
            data_file_bytes: stats.data_file_bytes,
            data_used_bytes: stats.data_used_bytes,
            wal_bytes: stats.wal_bytes,
            dirty_buckets: stats.dirty_buckets,
            dirty_bytes: stats.dirty_bytes,
            cache_bytes: stats.cache_bytes,
            upper_trie_bytes: stats.upper_trie_bytes,
            memory_budget_bytes: stats.memory_budget_bytes,
            bucket_reads: stats.bucket_reads,
            bucket_read_bytes: stats.bucket_read_bytes,
            cache_hits: stats.cache_hits,
            data_bytes_written: stats.data_bytes_written,
            wal_bytes_written: stats.wal_bytes_written,
            commits: stats.commits,
            checkpoints: stats.checkpoints,
            flat_records: stats.flat_records,
            group_depth: stats.group_depth,
            flat_index: u8::from(stats.flat_index),
            poisoned: u8::from(stats.poisoned.is_some()),
            meta_slot_damaged: u8::from(stats.meta_slot_damaged),
            revert_window_damaged: u8::from(stats.revert_window_damaged.is_some()),
            direct_reads: u8::from(stats.direct_reads),
            read_backend: backend_name(&stats.read_backend),
        }
    }
}

/// Fills `*stats_out` with the database's statistics (this walks the
/// upper trie: not for every block).
///
/// # Safety
///
/// `stats_out` is null or valid for writing one `UbtStats`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_stats(db: u64, stats_out: *mut UbtStats) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract: null or one writable UbtStats.
        let out = unsafe { Out::new(stats_out, "stats_out") }?;
        let stats = DATABASES.read(db, |db| Ok(db.stats()))?;
        out.write(UbtStats::from(&stats));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_are_cut_and_terminated() {
        let bytes = |name: [c_char; UBT_READ_BACKEND_NAME_BYTES]| -> Vec<u8> {
            name.iter().map(|c| c.to_ne_bytes()[0]).collect()
        };
        let short = bytes(backend_name("io_uring"));
        assert_eq!(&short[..9], b"io_uring\0");
        let long = bytes(backend_name("a-name-longer-than-sixteen"));
        assert_eq!(&long[..15], b"a-name-longer-t");
        assert_eq!(long[15], 0);
    }
}

//! How an import runs: its memory bound, where temporary files go, the
//! database's group depth, and what it may skip.

use std::path::PathBuf;

use crate::entries::{ENTRY_BYTES, FLAT_RECORD_BYTES};
use crate::error::ImportError;

/// The default memory bound of the sort buffer: 1 GiB.
pub const DEFAULT_MEMORY_BYTES: usize = 1 << 30;

/// The smallest memory bound accepted: 64 KiB (tests use it to force many
/// spill runs and multi-pass merges).
pub const MIN_MEMORY_BYTES: usize = 64 << 10;

/// Runs merged at once, at most.
const FAN_IN_MAX: usize = 64;

/// How an import runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// Bytes of tree entries held in memory before a sorted run is spilled
    /// to a temporary file (each entry takes 72 bytes, and 84 more for its
    /// flat record when `flat_index`). The import's peak
    /// memory is about this plus the database build's (an in-memory import)
    /// or the larger of the two (a spilled one), plus some tens of MiB of
    /// parse and merge buffers.
    pub memory_bytes: usize,
    /// Where the temporary directory of spill runs is made; `None`: the
    /// database directory's parent. The directory is removed at the end,
    /// also on failure.
    pub tmp_dir: Option<PathBuf>,
    /// The database's group depth (1..=8); `None`: the store's default.
    pub group_depth: Option<u8>,
    /// The database's bucket capacity in bytes (a power of two from 4096
    /// to 65536); `None`: the store's default (4096).
    pub bucket_bytes: Option<usize>,
    /// Geth dumps: skip (and count) accounts whose address is missing
    /// instead of failing.
    pub skip_missing_preimages: bool,
    /// Build the database with a flat index of account values (read
    /// locality for account-level reads, about 75 more bytes per entry on
    /// disk; ARCHITECTURE.md, "Read locality"): the same writes are sorted
    /// a second time, by account, within the same memory bound. On by
    /// default.
    pub flat_index: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            tmp_dir: None,
            group_depth: None,
            bucket_bytes: None,
            skip_missing_preimages: false,
            flat_index: true,
        }
    }
}

impl ImportOptions {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), ImportError> {
        if self.memory_bytes < MIN_MEMORY_BYTES {
            return Err(ImportError::Options(format!(
                "memory of {} bytes is below the minimum of {MIN_MEMORY_BYTES}",
                self.memory_bytes
            )));
        }
        if let Some(depth) = self.group_depth {
            if !(1..=8).contains(&depth) {
                return Err(ImportError::Options(format!(
                    "group depth {depth} is outside 1..=8"
                )));
            }
        }
        Ok(())
    }

    /// Entries the sort buffer holds (and as many flat records the flat
    /// index's sort buffer, when there is one: both fill together).
    pub(crate) fn buffer_entries(&self) -> usize {
        let per_entry = if self.flat_index {
            ENTRY_BYTES + FLAT_RECORD_BYTES
        } else {
            ENTRY_BYTES
        };
        (self.memory_bytes / per_entry).max(1)
    }

    /// Runs one merge reads at once: one per MiB of memory, 2 to 64.
    pub(crate) fn fan_in(&self) -> usize {
        (self.memory_bytes >> 20).clamp(2, FAN_IN_MAX)
    }

    /// Dump lines longer than this are parsed as a stream (their storage
    /// spooled to a temporary file) instead of in memory: a sixteenth of
    /// the memory, 4 KiB to 64 MiB.
    pub(crate) fn long_line_bytes(&self) -> usize {
        (self.memory_bytes / 16).clamp(4 << 10, 64 << 20)
    }

    /// Bytes of dump lines parsed together: 64 KiB to 4 MiB.
    pub(crate) fn line_batch_bytes(&self) -> usize {
        (self.memory_bytes / 64).clamp(64 << 10, 4 << 20)
    }
}

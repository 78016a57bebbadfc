//! The revert window in memory: read lazily, bounded by the budget.
//!
//! The checkpoint's revert segment (the reverse diffs of the last persisted
//! blocks, [`crate::revert_log`]) is not read at open: a writable open
//! reads it the first time something needs it (a revert, a reader at one
//! of its roots, a durable revert found in the WAL, the next checkpoint,
//! which rewrites it), and a read-only open never does. So opening costs
//! nothing however large the window, and a damaged segment costs the
//! ability to revert past the blocks in memory, not the database: it is
//! reported ([`crate::Stats::revert_window_damaged`]) and dropped, and the
//! next checkpoint writes a window without it.
//!
//! While the segment is unread, persisted layers are not trimmed (the
//! window's oldest blocks are on disk, not at the front of the layer list);
//! they are bounded by the WAL between checkpoints. Once it is read, the
//! window keeps at most [`crate::Options::revert_depth`] persisted blocks
//! and at most a quarter of the memory budget of previous values
//! ([`REVERT_ENTRY_BYTES`] each, and never fewer than
//! [`WINDOW_ENTRIES_MIN`]): older blocks fall out of it.

use super::read::block_location;
use super::{Layer, Store};
use crate::error::{Result, StoreError, Structure};

/// The window may always keep this many previous values (8 MiB), however
/// small the budget.
pub const WINDOW_ENTRIES_MIN: usize = 1 << 16;

/// Memory counted per key of a layer's previous values (key, value and
/// the map's own cost).
pub const REVERT_ENTRY_BYTES: usize = 128;

impl Store {
    /// Reads the revert segment of the checkpoint if it was not read yet.
    /// An I/O error is returned (and the segment stays unread); a damaged
    /// segment is reported in the statistics and dropped.
    pub fn ensure_revert_window(&mut self) -> Result<()> {
        let Some(extent) = self.history.window_pending else {
            return Ok(());
        };
        let mut bytes = vec![0u8; extent.byte_len()];
        self.tree
            .data
            .read_exact_at(&mut bytes, extent.offset)
            .map_err(StoreError::io("reading the revert segment"))?;
        self.history.window_pending = None;
        let decoded =
            crate::revert_log::decode_segment(&bytes, extent.crc, &block_location(&extent))
                .and_then(|window| {
                    if self.tree.flat.is_some()
                        && window.iter().any(|d| d.owners.len() != d.old.len())
                    {
                        return Err(StoreError::corrupted(
                            Structure::Revert,
                            block_location(&extent),
                            "reverse diffs without owners on a database with a flat index",
                        ));
                    }
                    if window
                        .last()
                        .is_some_and(|d| d.root != self.durable.meta.root.summary.hash)
                    {
                        return Err(StoreError::corrupted(
                            Structure::Revert,
                            block_location(&extent),
                            "the revert segment does not end at the checkpoint's root",
                        ));
                    }
                    Ok(window)
                });
        let window = match decoded {
            Ok(window) => window,
            Err(error) => {
                self.history.window_damaged = Some(error.to_string());
                return Ok(());
            }
        };
        self.history.push_window(
            window
                .into_iter()
                .map(|diff| Layer {
                    seq: diff.seq,
                    root_before: diff.root_before,
                    root: diff.root,
                    ops: Vec::new(),
                    owners: if diff.owners.is_empty() {
                        super::owners::Owners::None
                    } else {
                        super::owners::Owners::Listed(
                            diff.old
                                .iter()
                                .map(|(key, _)| *key)
                                .zip(diff.owners.iter().copied())
                                .collect(),
                        )
                    },
                    old: diff.old.into_iter().collect(),
                    persisted: true,
                    // Not known for the window's blocks, and not needed:
                    // a revert into the window is durable and takes the
                    // counts of the state it reaches.
                    counts_after: (0, 0),
                })
                .collect(),
        );
        self.trim_layers();
        Ok(())
    }

    /// The most previous values the revert window keeps in memory.
    pub(crate) fn window_entries_max(&self) -> usize {
        (self.options.memory_budget_bytes / 4 / REVERT_ENTRY_BYTES).max(WINDOW_ENTRIES_MIN)
    }

    /// Why the revert segment was dropped, if it was damaged.
    pub fn revert_window_damaged(&self) -> Option<&str> {
        self.history.window_damaged.as_deref()
    }
}

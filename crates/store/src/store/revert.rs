//! Reverting to an earlier root: the root of any layer in memory, or the
//! root before the oldest one. The layers in memory are the unpersisted
//! blocks plus the revert window: the last `revert_depth` persisted blocks
//! (loaded from the checkpoint's revert segment after a restart, see
//! [`crate::revert_log`]). A revert consumes the window: reverting `r`
//! persisted blocks leaves `depth - r` to revert further until new blocks
//! are persisted. When persisted blocks are undone, the revert is made
//! durable as one WAL record before anything changes in memory.
//!
//! The reverse diffs of all reverted layers are first merged into one set
//! of writes (each key back to its value at the target root; keys that did
//! not exist then are deleted), applied in one atomic `apply_ops`: a revert
//! either happens whole or not at all.

use alloy_primitives::map::B256Map;

use alloy_primitives::{Address, B256};
use ubt_spec::hash::Hash;

use super::owners::each_owner;
use super::Store;
use crate::error::{Result, StoreError, Structure};
use crate::format::{blocks_for, Extent};
use crate::revert_log::{self, ReverseDiff};
use crate::wal::{self, WalLayer};

/// The reverse diffs to undo for a revert, newest first.
struct RevertPlan {
    /// The layer reverted to (every layer with a greater number goes).
    target_seq: u64,
    /// Each reverted layer's previous values, newest layer first.
    diffs: Vec<Vec<(B256, Option<B256>)>>,
    /// Whether any reverted layer is durable (then so must the revert be).
    persisted: bool,
    /// The owner of every key a reverted layer touched (a database with a
    /// flat index).
    owners: B256Map<Address>,
}

impl Store {
    /// Reverts the state to `root`: the root of a layer in memory, or of
    /// one of the last [`crate::Options::revert_depth`] persisted blocks.
    /// When persisted blocks are undone the revert is durable on return.
    /// Fails with [`StoreError::UnknownRoot`] for any other root.
    pub fn revert(&mut self, root: &Hash) -> Result<()> {
        self.check_writable()?;
        if *root == self.tree.root {
            return Ok(());
        }
        // Read the window's part still on disk first: the root may be
        // there, and until it is read the layers in memory are not trimmed
        // to the revert depth.
        self.ensure_revert_window()?;
        let plan = self.plan_revert(root)?;
        // Each key back to its value at the target: the oldest reverted
        // layer's previous value wins.
        let mut net: B256Map<Option<B256>> = B256Map::default();
        for diff in &plan.diffs {
            for (key, value) in diff {
                net.insert(*key, *value);
            }
        }
        let mut ops: Vec<(B256, Option<B256>)> = net.into_iter().collect();
        ops.sort_unstable_by_key(|(key, _)| *key);
        let owners: Vec<Address> = if self.tree.flat.is_some() {
            each_owner(&ops, &plan.owners)
        } else {
            Vec::new()
        };
        if plan.persisted {
            // One record must hold the revert: refuse before anything
            // changes rather than write one replay would not accept.
            if ops.len() > wal::LAYER_OPS_MAX {
                return Err(StoreError::BlockTooLarge {
                    writes: ops.len() as u64,
                    max: wal::LAYER_OPS_MAX as u64,
                });
            }
            let layer = WalLayer {
                seq: plan.target_seq,
                root: *root,
                ops: ops.clone(),
                revert: true,
                owners: owners.clone(),
            };
            self.append_record(root, &[layer])?;
        }
        if let Err(error) = self.apply_ops(&ops) {
            if plan.persisted {
                // Durable but not applied here: reopening replays it.
                self.poison(&error);
            }
            return Err(error);
        }
        self.record_flat(&ops, &owners);
        if self.tree.root != *root {
            let error = StoreError::corrupted(
                Structure::Revert,
                "reverse diffs",
                "undoing the layers does not restore the requested root",
            );
            self.poison(&error);
            return Err(error);
        }
        self.finish_revert(plan.target_seq, plan.persisted);
        Ok(())
    }

    /// Finds the layers to undo to reach `root`.
    fn plan_revert(&self, root: &Hash) -> Result<RevertPlan> {
        let diffs_after = |position: usize| -> Vec<Vec<(B256, Option<B256>)>> {
            self.history
                .layers()
                .range(position..)
                .rev()
                .map(|l| l.old.iter().map(|(k, v)| (*k, *v)).collect())
                .collect()
        };
        let owners_after = |position: usize| -> B256Map<Address> {
            self.history
                .layers()
                .range(position..)
                .flat_map(|l| l.owners.pairs(&l.ops))
                .collect()
        };
        if let Some(position) = self.history.layers().iter().rposition(|l| l.root == *root) {
            return Ok(RevertPlan {
                target_seq: self.history.layers()[position].seq,
                persisted: self
                    .history
                    .layers()
                    .range(position + 1..)
                    .any(|l| l.persisted),
                diffs: diffs_after(position + 1),
                owners: owners_after(position + 1),
            });
        }
        match self.history.layers().front() {
            Some(oldest) if oldest.root_before == *root => Ok(RevertPlan {
                target_seq: oldest.seq.saturating_sub(1),
                persisted: oldest.persisted,
                diffs: diffs_after(0),
                owners: owners_after(0),
            }),
            _ => Err(StoreError::UnknownRoot(*root)),
        }
    }

    /// Whether layer `seq` was reverted away.
    pub(crate) fn is_voided(&self, seq: u64) -> bool {
        self.history.is_voided(seq)
    }

    /// After the state reached layer `target_seq`'s root: drops the newer
    /// layers and voids their numbers; a `durable` revert makes the tip
    /// the durable state.
    pub(crate) fn finish_revert(&mut self, target_seq: u64, durable: bool) {
        let tip = durable.then(|| (self.tree.root, self.tree.counts()));
        self.history.revert_to(target_seq, tip);
    }

    /// At a checkpoint: writes the revert window (every persisted layer in
    /// memory, oldest first) as one segment; the previous segment is freed
    /// once the checkpoint is durable. Returns the segment's extent.
    pub(super) fn write_revert_log(
        &mut self,
        writer: &mut super::checkpoint::RunWriter<'_>,
    ) -> Result<Option<Extent>> {
        // The window is rewritten whole: read what is still on disk first.
        self.ensure_revert_window()?;
        if let Some(previous) = self.durable.meta.revert_log {
            self.tree.released.push(previous.blocks());
        }
        let flat = self.tree.flat.is_some();
        let window: Vec<ReverseDiff> = self
            .history
            .layers()
            .iter()
            .filter(|l| l.persisted)
            .map(|l| {
                let mut old: Vec<(B256, Option<B256>)> =
                    l.old.iter().map(|(k, v)| (*k, *v)).collect();
                old.sort_unstable_by_key(|(key, _)| *key);
                let owners = if flat {
                    each_owner(&old, &l.owners.by_key(&l.ops))
                } else {
                    Vec::new()
                };
                ReverseDiff {
                    seq: l.seq,
                    root_before: l.root_before,
                    root: l.root,
                    old,
                    owners,
                }
            })
            .collect();
        // What replay accepts bounds what is written: the oldest blocks
        // stay revertible in memory but do not survive a restart.
        let mut window = window;
        let mut bytes_needed = revert_log::segment_len(&window);
        let mut oldest_kept = 0;
        while bytes_needed > revert_log::SEGMENT_BYTES_MAX && oldest_kept < window.len() {
            bytes_needed -= revert_log::diff_len(&window[oldest_kept]);
            oldest_kept += 1;
        }
        window.drain(..oldest_kept);
        if window.is_empty() {
            return Ok(None);
        }
        let bytes = revert_log::encode_segment(&window);
        let block = self.tree.alloc.alloc(blocks_for(bytes.len()));
        let crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        writer.write(block, &bytes)?;
        Ok(Some(Extent::at_block(block, bytes.len(), crc)))
    }
}

//! Layers: one per applied block, newest last.
//!
//! The store keeps a single working state, the tip: every applied block is
//! in the buckets and the upper trie, so reading at the tip and computing
//! the next root cost the same however many blocks are unpersisted, and
//! merging blocks for a persist costs O(changed keys). What makes a block a
//! layer is the record of every key it touched with the value that key had
//! before it (`old`). That record
//!
//! * answers reads at an older root: the value of a key at layer `n`'s
//!   root is the `old` value recorded by the first later layer that touched
//!   it, else the tip's value;
//! * reverts a layer: writing back its `old` values (deleting keys that
//!   were absent) restores its parent's state;
//! * becomes the on-disk reverse diff of the layer once a checkpoint
//!   absorbs it.
//!
//! Unpersisted layers are the newest; [`Store::persist`] writes the oldest
//! ones as one WAL record (the record keeps the layer boundaries, so replay
//! recreates them with their roots). Persisted layers stay in memory, up to
//! the revert depth, for readers and reverts.

use alloy_primitives::map::B256Map;

use alloy_primitives::{Address, B256};
use ubt_spec::hash::Hash;

use super::owners::{each_owner, Owners};
use super::Store;
use crate::error::{Result, StoreError};
use crate::wal::{self, WalLayer};

/// One applied block. See the module documentation.
#[derive(Clone, Debug)]
pub struct Layer {
    /// Sequence number (increasing across the database's life).
    pub seq: u64,
    /// Root before the layer.
    pub root_before: Hash,
    /// Root after the layer.
    pub root: Hash,
    /// The layer's writes in order (`None` deletes; only reverts delete).
    pub ops: Vec<(B256, Option<B256>)>,
    /// Every key the layer touched, with its value before the layer.
    pub old: B256Map<Option<B256>>,
    /// The account owning every key the layer touched (a database with a
    /// flat index; [`Owners::None`] otherwise).
    pub owners: Owners,
    /// Whether the layer is in the WAL (or a checkpoint).
    pub persisted: bool,
    /// Stem and value counts after the layer.
    pub counts_after: (u64, u64),
}

/// What callers see of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerInfo {
    /// Sequence number.
    pub seq: u64,
    /// Root after the layer.
    pub root: B256,
    /// Whether it is durable.
    pub persisted: bool,
    /// Keys it touched.
    pub keys: usize,
}

impl Layer {
    fn info(&self) -> LayerInfo {
        LayerInfo {
            seq: self.seq,
            root: B256::from(self.root),
            persisted: self.persisted,
            keys: self.old.len(),
        }
    }
}

/// A layer's old values: each key it wrote and its value before.
pub(crate) type OldValues = B256Map<Option<B256>>;

/// The value before the block of each key, from the undo lists of an
/// apply's buckets (each in write order: the first entry of a key is its
/// value before; a key's entries are all in one list).
pub(crate) fn first_old(undos: Vec<Vec<(B256, Option<B256>)>>) -> OldValues {
    let entries = undos.iter().map(Vec::len).sum();
    let mut old = OldValues::with_capacity_and_hasher(entries, Default::default());
    for (key, value) in undos.into_iter().flatten() {
        old.entry(key).or_insert(value);
    }
    old
}

impl Store {
    /// Applies `writes` in order (later writes to a key win) as a new
    /// layer on top of the tip and returns its root. Nothing reaches the
    /// disk until [`Store::persist`] or [`Store::commit`].
    ///
    /// A block holds at most [`LAYER_OPS_MAX`](crate::LAYER_OPS_MAX) writes (one WAL record
    /// must hold it); a larger one fails with
    /// [`StoreError::BlockTooLarge`] before anything changes.
    ///
    /// A database with a flat index refuses writes that do not name their
    /// accounts ([`StoreError::OwnersRequired`]; see
    /// [`Store::apply_owned`]).
    pub fn apply(&mut self, writes: &[(B256, B256)]) -> Result<Hash> {
        self.check_writable()?;
        if self.tree.flat.is_some() && !writes.is_empty() {
            return Err(StoreError::OwnersRequired);
        }
        let ops: Vec<(B256, Option<B256>)> = writes.iter().map(|(k, v)| (*k, Some(*v))).collect();
        self.apply_layer(ops, Owners::None)
    }

    /// Applies `writes`, each `(owner, key, value)`: the account whose
    /// value `key` is, like [`Store::apply`]. The owners file each value
    /// in the flat index, when the database keeps one (otherwise they are
    /// not stored). Each key's owner must be the account its tree key was
    /// derived from (the engine's account-level writes guarantee it).
    pub fn apply_owned(&mut self, writes: &[(Address, B256, B256)]) -> Result<Hash> {
        self.check_writable()?;
        let ops: Vec<(B256, Option<B256>)> =
            writes.iter().map(|(_, k, v)| (*k, Some(*v))).collect();
        let owners = if self.tree.flat.is_some() {
            Owners::ByOp(writes.iter().map(|(owner, _, _)| *owner).collect())
        } else {
            Owners::None
        };
        self.apply_layer(ops, owners)
    }

    /// One block as a new layer: tree, flat index, history.
    fn apply_layer(&mut self, ops: Vec<(B256, Option<B256>)>, owners: Owners) -> Result<Hash> {
        if ops.len() > wal::LAYER_OPS_MAX {
            return Err(StoreError::BlockTooLarge {
                writes: ops.len() as u64,
                max: wal::LAYER_OPS_MAX as u64,
            });
        }
        let root_before = self.tree.root;
        let old = self.apply_ops_keeping_old(&ops)?;
        if let Owners::ByOp(owners) = &owners {
            self.record_flat(&ops, owners);
        }
        self.history.push(
            Layer {
                seq: 0,
                root_before,
                root: self.tree.root,
                ops,
                old,
                owners,
                persisted: false,
                counts_after: self.tree.counts(),
            },
            false,
        );
        Ok(self.tree.root)
    }

    /// The highest layer number issued so far (recorded in the meta
    /// record, so numbers keep increasing across restarts).
    pub(crate) fn persisted_layer_seq(&self) -> u64 {
        self.history.newest_seq().max(self.durable.meta.layer_seq)
    }

    /// The layers in memory, oldest first.
    pub fn layers(&self) -> Vec<LayerInfo> {
        self.history.layers().iter().map(Layer::info).collect()
    }

    /// Whether writes applied since the last commit are pending.
    pub fn has_uncommitted(&self) -> bool {
        self.history.layers().iter().any(|l| !l.persisted)
    }

    /// Makes every applied layer durable (one WAL record) and returns the
    /// root. See [`Store::persist`].
    pub fn commit(&mut self) -> Result<Hash> {
        self.check_writable()?;
        match self.history.layers().iter().rposition(|l| !l.persisted) {
            Some(newest) => self.persist_through(newest)?,
            None => return Ok(self.tree.root),
        }
        Ok(self.tree.root)
    }

    /// Makes the layers up to the newest one whose root is `root` durable,
    /// as one WAL record (synced in [`SyncMode::Always`](crate::SyncMode::Always)); newer layers stay
    /// in memory. Checkpoints when changed buckets or the WAL exceed their
    /// budgets.
    ///
    /// If the WAL write fails, every unpersisted layer is reverted in
    /// memory, the handle is poisoned and the error returned: the last
    /// persisted state stays readable. If the checkpoint that follows fails,
    /// the persist stands (its record is durable) and the handle is
    /// poisoned: the next write reports why.
    pub fn persist(&mut self, root: &Hash) -> Result<()> {
        self.check_writable()?;
        let Some(index) = self.history.layers().iter().rposition(|l| l.root == *root) else {
            return Err(StoreError::UnknownRoot(*root));
        };
        if self.history.layers()[index].persisted {
            return Ok(());
        }
        self.persist_through(index)
    }

    /// Persists the unpersisted layers up to position `index`: one WAL
    /// record, or several cut at layer boundaries when one would exceed
    /// [`wal::RECORD_BYTES_MAX`] (each record is a commit of whole blocks,
    /// so a crash between them leaves a state the chain really had).
    fn persist_through(&mut self, index: usize) -> Result<()> {
        let first = self
            .history
            .layers()
            .iter()
            .position(|l| !l.persisted)
            .unwrap_or(index);
        // Each pending layer as the WAL holds it (its owners looked up
        // once), then cut into records.
        let pending: Vec<WalLayer> = if first <= index {
            self.history
                .layers()
                .range(first..=index)
                .map(|l| WalLayer {
                    seq: l.seq,
                    root: l.root,
                    ops: l.ops.clone(),
                    revert: false,
                    owners: l.owners.per_op(&l.ops),
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut start = 0;
        while start < pending.len() {
            // The most layers from `start` that fit one record (at least one:
            // apply bounds a layer so that it fits alone).
            let mut bytes = wal::record_len(&[]);
            let mut end = start;
            while end < pending.len() {
                let layer = &pending[end];
                let more = wal::layer_len(&layer.ops, &layer.owners);
                if end > start && bytes + more > wal::RECORD_BYTES_MAX {
                    break;
                }
                bytes += more;
                end += 1;
            }
            let root = pending[end - 1].root;
            if let Err(error) = self.append_record(&root, &pending[start..end]) {
                // Records before this one are durable and stay; the
                // layers this one and later ones hold are undone.
                self.revert_unpersisted();
                return Err(error);
            }
            self.history.mark_persisted(first + start..first + end);
            start = end;
        }
        self.trim_layers();
        if self.tree.dirty_bytes + self.flat_changes_bytes() > self.options.dirty_bytes_max()
            || self.durable.wal.len() > self.options.wal_bytes_max
        {
            if let Err(error) = self.write_checkpoint() {
                self.poison(&error);
            }
        }
        Ok(())
    }

    /// Drops persisted layers beyond the revert depth, oldest first, but
    /// never one a reader needs (a reader at layer `s` needs every layer
    /// newer than `s`).
    /// Also keeps the window's previous values within its share of the
    /// memory budget ([`super::window`]); does nothing while the revert
    /// segment is unread (its blocks are older than every layer in memory).
    pub(crate) fn trim_layers(&mut self) {
        let entries_max = self.window_entries_max();
        self.history.trim(self.options.revert_depth, entries_max);
    }

    /// Reverts every unpersisted layer (no I/O: their buckets are in memory).
    pub fn discard_uncommitted(&mut self) {
        self.revert_unpersisted();
    }

    fn revert_unpersisted(&mut self) {
        while let Some(layer) = self.history.pop_unpersisted() {
            let by_key = layer.owners.by_key(&layer.ops);
            let ops: Vec<(B256, Option<B256>)> = layer.old.into_iter().collect();
            let owners: Vec<Address> = if self.tree.flat.is_some() {
                each_owner(&ops, &by_key)
            } else {
                Vec::new()
            };
            if let Err(error) = self.apply_ops(&ops) {
                // Unreachable in practice: an unpersisted layer's buckets stay in memory.
                self.poison(&error);
                return;
            }
            self.record_flat(&ops, &owners);
            debug_assert_eq!(
                self.tree.root, layer.root_before,
                "revert did not restore the root"
            );
        }
    }

    /// A snapshot of the state at `root`: the tip, a layer in memory, or
    /// the state before the oldest layer.
    pub fn snapshot(&self, root: &Hash) -> Result<Snapshot> {
        let seq = if let Some(layer) = self.history.layers().iter().rev().find(|l| l.root == *root)
        {
            layer.seq
        } else if *root == self.tree.root {
            self.history.newest_seq()
        } else if let Some(oldest) = self
            .history
            .layers()
            .front()
            .filter(|l| l.root_before == *root)
        {
            oldest.seq.saturating_sub(1)
        } else {
            return Err(StoreError::UnknownRoot(*root));
        };
        Ok(Snapshot { seq, root: *root })
    }

    /// The value of `key` at `snapshot`.
    pub fn get_at(&self, key: &B256, snapshot: &Snapshot) -> Result<Option<B256>> {
        if self.is_voided(snapshot.seq) {
            return Err(StoreError::SnapshotReverted(snapshot.root));
        }
        for layer in self
            .history
            .layers()
            .iter()
            .filter(|l| l.seq > snapshot.seq)
        {
            if let Some(old) = layer.old.get(key) {
                return Ok(*old);
            }
        }
        self.get(key)
    }

    /// The values of `keys` at `snapshot`, in order; keys no newer layer
    /// touched are read from the tip in one batch.
    pub fn get_many_at(&self, keys: &[B256], snapshot: &Snapshot) -> Result<Vec<Option<B256>>> {
        self.read_at(keys, snapshot, |key| *key, |at_tip| self.get_many(at_tip))
    }

    /// [`Store::get_owned`] at `snapshot`: the values of tree keys, each
    /// given with the account it belongs to, in order; keys no newer layer
    /// touched are read from the tip in one batch, through the flat index
    /// when the database keeps one.
    pub fn get_owned_at(
        &self,
        keys: &[(Address, B256)],
        snapshot: &Snapshot,
    ) -> Result<Vec<Option<B256>>> {
        self.read_at(
            keys,
            snapshot,
            |(_, key)| *key,
            |at_tip| self.get_owned(at_tip),
        )
    }

    /// The snapshot read shared by [`Store::get_many_at`] and
    /// [`Store::get_owned_at`]: each key's value from the oldest layer
    /// newer than `snapshot` that changed it (its value before that
    /// layer), else from `read_tip`, called once with the keys left.
    fn read_at<K: Copy>(
        &self,
        keys: &[K],
        snapshot: &Snapshot,
        tree_key: impl Fn(&K) -> B256,
        read_tip: impl FnOnce(&[K]) -> Result<Vec<Option<B256>>>,
    ) -> Result<Vec<Option<B256>>> {
        if self.is_voided(snapshot.seq) {
            return Err(StoreError::SnapshotReverted(snapshot.root));
        }
        let newer: Vec<&Layer> = self
            .history
            .layers()
            .iter()
            .filter(|l| l.seq > snapshot.seq)
            .collect();
        let mut out: Vec<Option<Option<B256>>> = keys
            .iter()
            .map(|key| {
                let key = tree_key(key);
                newer.iter().find_map(|l| l.old.get(&key).copied())
            })
            .collect();
        let at_tip: Vec<K> = keys
            .iter()
            .zip(&out)
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
        let tip_values = read_tip(&at_tip)?;
        debug_assert_eq!(tip_values.len(), at_tip.len(), "one tip value per key");
        let mut tip = tip_values.into_iter();
        for value in &mut out {
            if value.is_none() {
                *value = Some(tip.next().flatten());
            }
        }
        Ok(out.into_iter().map(Option::flatten).collect())
    }

    /// Tells the store the oldest snapshot still open (`None`: none), so
    /// it keeps every layer newer than that snapshot.
    pub fn set_min_reader_seq(&self, seq: Option<u64>) {
        self.history.set_min_reader_seq(seq);
    }
}

/// A consistent view of the state at one root, valid while the layers
/// newer than it stay in memory (see [`Store::set_min_reader_seq`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The layer the snapshot is at.
    pub seq: u64,
    /// Its root.
    pub root: Hash,
}

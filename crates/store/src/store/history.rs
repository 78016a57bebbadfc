//! The layer history: the blocks applied on top of the last checkpoint
//! and the revert window behind them ([`super::layers`], [`super::window`]),
//! with the durable root they lead to.
//!
//! Invariants, kept by the methods below and checked in debug builds:
//!
//! * layers are in increasing sequence order, and every persisted layer
//!   comes before every unpersisted one (a persist makes a prefix of the
//!   unpersisted layers durable);
//! * `persisted_root` is the root of the newest persisted layer when there
//!   is one, else of the state the oldest layer starts from (the
//!   checkpoint, or a durable revert or bulk block), and `persisted_counts`
//!   are the stem and value counts at that root.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use ubt_spec::hash::Hash;

use super::layers::Layer;
use crate::format::Extent;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct History {
    /// Applied blocks, oldest first (see [`super::layers`]).
    layers: VecDeque<Layer>,
    /// Sequence number of the next layer.
    next_seq: u64,
    /// The oldest snapshot still open (`u64::MAX`: none): every layer newer
    /// than it stays in memory.
    min_reader_seq: AtomicU64,
    /// Layer numbers reverted away (first, last).
    voided: Vec<(u64, u64)>,
    /// Root of the durable state (see the module documentation).
    persisted_root: Hash,
    /// Stem and value counts at `persisted_root`.
    persisted_counts: (u64, u64),
    /// The checkpoint's revert segment, not read yet (see [`super::window`]).
    pub window_pending: Option<Extent>,
    /// Why the revert segment could not be used, if it was damaged.
    pub window_damaged: Option<String>,
}

impl History {
    /// The history of a state just opened at a checkpoint: no layers, the
    /// next one numbered after `layer_seq`, the revert segment unread.
    pub fn at_checkpoint(
        root: Hash,
        counts: (u64, u64),
        layer_seq: u64,
        window: Option<Extent>,
    ) -> History {
        History {
            layers: VecDeque::new(),
            next_seq: layer_seq + 1,
            min_reader_seq: AtomicU64::new(u64::MAX),
            voided: Vec::new(),
            persisted_root: root,
            persisted_counts: counts,
            window_pending: window,
            window_damaged: None,
        }
    }

    /// The layers in memory, oldest first.
    pub fn layers(&self) -> &VecDeque<Layer> {
        &self.layers
    }

    /// The root of the durable state.
    pub fn persisted_root(&self) -> Hash {
        self.persisted_root
    }

    /// Stem and value counts at the durable root.
    pub fn persisted_counts(&self) -> (u64, u64) {
        self.persisted_counts
    }

    /// The newest layer number issued (0 before the first).
    pub fn newest_seq(&self) -> u64 {
        self.next_seq.saturating_sub(1)
    }

    /// Adds an applied block on top; returns its number. A replayed
    /// (persisted) layer keeps the number it was written with.
    pub fn push(&mut self, mut layer: Layer, replayed: bool) -> u64 {
        if replayed {
            self.next_seq = self.next_seq.max(layer.seq + 1);
        } else {
            layer.seq = self.next_seq;
            self.next_seq += 1;
        }
        let seq = layer.seq;
        if layer.persisted {
            self.persisted_root = layer.root;
            self.persisted_counts = layer.counts_after;
        }
        self.layers.push_back(layer);
        self.debug_check();
        seq
    }

    /// Adds the revert window read from disk below the layers in memory
    /// (`window` oldest first).
    pub fn push_window(&mut self, window: Vec<Layer>) {
        for layer in window.into_iter().rev() {
            debug_assert!(layer.persisted, "the revert window is durable");
            self.layers.push_front(layer);
        }
        self.debug_check();
    }

    /// Marks the layers at `positions` durable (their WAL record is
    /// synced): the durable root moves to the newest of them.
    pub fn mark_persisted(&mut self, positions: Range<usize>) {
        for layer in self.layers.range_mut(positions.clone()) {
            layer.persisted = true;
            // Replay rebuilds a layer from the WAL; in memory only its
            // previous values (and their owners) are needed from now on.
            let ops = std::mem::take(&mut layer.ops);
            layer.owners = std::mem::take(&mut layer.owners).detached(&ops);
        }
        if let Some(newest) = positions.end.checked_sub(1).map(|i| &self.layers[i]) {
            self.persisted_root = newest.root;
            self.persisted_counts = newest.counts_after;
        }
        self.debug_check();
    }

    /// Removes the newest layer if it is not persisted.
    pub fn pop_unpersisted(&mut self) -> Option<Layer> {
        if self.layers.back().is_some_and(|l| !l.persisted) {
            return self.layers.pop_back();
        }
        None
    }

    /// After a revert reached layer `target_seq`'s root: drops the newer
    /// layers and voids their numbers. A `durable` revert (one undoing
    /// persisted layers, in the WAL) makes `root`/`counts` the durable
    /// state.
    pub fn revert_to(&mut self, target_seq: u64, durable: Option<(Hash, (u64, u64))>) {
        let newest = self.newest_seq();
        while self.layers.back().is_some_and(|l| l.seq > target_seq) {
            self.layers.pop_back();
        }
        if target_seq < newest {
            self.voided.push((target_seq + 1, newest));
        }
        if let Some((root, counts)) = durable {
            self.persisted_root = root;
            self.persisted_counts = counts;
        }
        self.debug_check();
    }

    /// A block that cannot be reverted became durable (a bulk apply): the
    /// layers and the revert window end, every older snapshot is void, and
    /// `root`/`counts` are the durable state.
    pub fn restart_at(&mut self, root: Hash, counts: (u64, u64)) {
        self.window_pending = None;
        self.layers.clear();
        self.voided.push((0, self.newest_seq()));
        self.next_seq += 1;
        self.persisted_root = root;
        self.persisted_counts = counts;
    }

    /// A bulk block failed (before or after [`History::restart_at`]): the
    /// durable state is still `root`/`counts`, the one before it (the
    /// handle is poisoned; only its reported root matters now).
    pub fn roll_back_restart(&mut self, root: Hash, counts: (u64, u64)) {
        self.persisted_root = root;
        self.persisted_counts = counts;
    }

    /// A fresh build made `root`/`counts` the durable state of a database
    /// that had no layers.
    pub fn set_built(&mut self, root: Hash, counts: (u64, u64)) {
        debug_assert!(
            self.layers.is_empty(),
            "a build into a database with layers"
        );
        self.persisted_root = root;
        self.persisted_counts = counts;
    }

    /// Drops persisted layers from the front, oldest first, while there
    /// are more than `depth` of them or they hold more than `entries_max`
    /// previous values, but never one a reader needs (a reader at layer
    /// `s` needs every layer newer than `s`). Does nothing while the
    /// revert segment is unread (its blocks are older than every layer in
    /// memory).
    pub fn trim(&mut self, depth: usize, entries_max: usize) {
        if self.window_pending.is_some() {
            return;
        }
        let persisted = self.layers.iter().filter(|l| l.persisted);
        let mut count = persisted.clone().count();
        let mut entries: usize = persisted.map(|l| l.old.len()).sum();
        while let Some(oldest) = self.layers.front() {
            let needed = oldest.seq > self.min_reader_seq.load(Ordering::Acquire);
            let over = count > depth || entries > entries_max;
            if !over || !oldest.persisted || needed {
                break;
            }
            count -= 1;
            entries -= oldest.old.len();
            self.layers.pop_front();
        }
    }

    /// Whether layer `seq` was reverted away.
    pub fn is_voided(&self, seq: u64) -> bool {
        self.voided
            .iter()
            .any(|(first, last)| (*first..=*last).contains(&seq))
    }

    /// The oldest snapshot still open, as last told.
    pub fn min_reader_seq(&self) -> Option<u64> {
        let seq = self.min_reader_seq.load(Ordering::Acquire);
        (seq != u64::MAX).then_some(seq)
    }

    /// After the layers were rebuilt from the files (a reload): snapshots
    /// from `oldest` on can be served from the layers in memory; older
    /// ones, if a reader holds any, are void.
    pub fn void_unservable(&mut self, oldest_reader: Option<u64>) {
        let servable = self
            .layers
            .front()
            .map_or(self.newest_seq(), |layer| layer.seq.saturating_sub(1));
        if let Some(reader) = oldest_reader.filter(|&seq| seq < servable) {
            self.voided.push((reader, servable - 1));
        }
    }

    /// Tells the history the oldest snapshot still open (`None`: none).
    pub fn set_min_reader_seq(&self, seq: Option<u64>) {
        self.min_reader_seq
            .store(seq.unwrap_or(u64::MAX), Ordering::Release);
    }

    /// Checks the invariants of the module documentation (debug builds).
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            let mut seqs = self.layers.iter().map(|l| l.seq);
            if let Some(first) = seqs.next() {
                let mut previous = first;
                for seq in seqs {
                    debug_assert!(seq > previous, "layers out of order");
                    previous = seq;
                }
            }
            let first_unpersisted = self.layers.iter().position(|l| !l.persisted);
            if let Some(position) = first_unpersisted {
                debug_assert!(
                    self.layers.range(position..).all(|l| !l.persisted),
                    "a persisted layer above an unpersisted one"
                );
            }
            if let Some(newest) = self.layers.iter().rev().find(|l| l.persisted) {
                debug_assert_eq!(
                    newest.root, self.persisted_root,
                    "the durable root is not the newest persisted layer's"
                );
            }
        }
    }
}

//! A scripted workload of every kind of write step, and every state it can
//! leave on disk (used by the crash-point and I/O-error tests).
//!
//! The script is generated from a seed together with a model of the
//! store's layers: a chain of reference trees (one per applied block, each
//! marked persisted or not) and the revert window (how many persisted
//! blocks can still be undone: persisting adds to it up to the revert
//! depth, reverting consumes it). Every step that writes a WAL record (a
//! persist, a commit or checkpoint with unpersisted blocks, a revert that
//! undoes persisted blocks) moves the commit sequence number on by one,
//! so the state the disk may be found in is indexed by that number. A
//! bulk apply ([`Store::apply_bulk`]) first commits the unpersisted blocks
//! (a record, if there are any), then becomes durable by a checkpoint that
//! moves the number on by one more; it empties the revert window (neither
//! it nor any block before it can be reverted) and drops the older layers.
//!
//! The script runs in rounds that each exercise, in some order and with
//! random sizes: blocks applied as layers, a persist of the oldest ones
//! only (later ones stay in memory), commits of several layers in one
//! record, a revert of unpersisted layers (no I/O), a durable revert of
//! persisted blocks, explicit checkpoints (which write the revert window as
//! a segment), reopens, and writes lost to a reopen before they were
//! persisted. A small memory budget makes most persists checkpoint too.
//! Some rounds bulk-apply a block of sorted writes (overwrites of known
//! keys and new ones): rounds 1, 5, 9, ... after a partial persist (so it
//! commits layers first), and the round before the last one at its start
//! (nothing to commit) a block of more than one bulk chunk with repeated
//! keys: the first chunk (4,096 writes) is staged, the last (1 to 8
//! writes) usually stays in memory until the final checkpoint. The memory
//! budget is far below what a bulk block changes, so every bulk apply
//! stages buckets.

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::StoreDir;
use ubt_store::{Options, Store, StoreError};

use super::{mixed_key, options, random_writes, SplitMix64};

/// How many persisted blocks can be reverted.
pub const REVERT_DEPTH: usize = 4;

/// The stems (every byte of the stem this value) that flat-indexed
/// workloads fill with runs of consecutive slots.
pub const DENSE_STEMS: [u8; 2] = [0xd5, 0x2b];

/// One step of the scripted workload.
#[derive(Clone, Debug)]
pub enum Step {
    /// Apply these writes as a new layer (no I/O unless buckets must be read).
    Apply(Vec<(B256, B256)>),
    /// Persist the layers up to the one with this root (one WAL record).
    Persist(Hash),
    /// Persist every layer; `record` tells whether any was unpersisted.
    Commit { record: bool },
    /// Persist every layer, then checkpoint.
    Checkpoint { record: bool },
    /// Revert to this root; `record` when persisted blocks are undone.
    Revert { root: Hash, record: bool },
    /// Apply these writes, then drop the handle (losing them) and reopen.
    LoseAndReopen(Vec<(B256, B256)>),
    /// Bulk-apply these writes (sorted by key; of equal keys the last
    /// wins): commit every layer (`record` when any was unpersisted), then
    /// one block made durable by a checkpoint.
    Bulk {
        writes: Vec<(B256, B256)>,
        record: bool,
    },
    /// Drop the handle and reopen.
    Reopen,
}

impl Step {
    /// The step's kind, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Apply(_) => "apply",
            Step::Persist(_) => "persist",
            Step::Commit { .. } => "commit",
            Step::Checkpoint { .. } => "checkpoint",
            Step::Revert { record: true, .. } => "durable revert",
            Step::Revert { record: false, .. } => "in-memory revert",
            Step::LoseAndReopen(_) => "lose+reopen",
            Step::Reopen => "reopen",
            Step::Bulk { record: true, .. } => "commit+bulk",
            Step::Bulk { record: false, .. } => "bulk",
        }
    }

    /// How far the step moves the commit sequence number when it
    /// succeeds: one per WAL record, and one for a bulk block's checkpoint.
    pub fn records(&self) -> usize {
        match self {
            Step::Persist(_) => 1,
            Step::Commit { record } | Step::Checkpoint { record } => usize::from(*record),
            Step::Revert { record, .. } => usize::from(*record),
            Step::Bulk { record, .. } => 1 + usize::from(*record),
            _ => 0,
        }
    }

    /// Runs the step on `store` (a reopen is the caller's).
    pub fn run(&self, store: &mut Store) -> Result<(), StoreError> {
        match self {
            Step::Apply(writes) | Step::LoseAndReopen(writes) => {
                super::apply_block(store, writes).map(drop)
            }
            Step::Persist(root) => store.persist(root),
            Step::Commit { .. } => store.commit().map(drop),
            Step::Checkpoint { .. } => store.checkpoint(),
            Step::Revert { root, .. } => store.revert(root),
            Step::Bulk { writes, .. } => store.apply_bulk(writes.iter().copied()).map(drop),
            Step::Reopen => Ok(()),
        }
    }
}

/// A state the database can be found in: the one after commit `seq` (a
/// WAL record, or a bulk block's checkpoint).
#[derive(Clone)]
pub struct State {
    /// The state root.
    pub root: Hash,
    /// Every value.
    pub tree: ReferenceTree,
    /// A revert the recovered database must accept: the root and contents
    /// one persisted block back, when the revert window holds one.
    pub revert_to: Option<(Hash, ReferenceTree)>,
}

/// The workload and every state it commits.
pub struct Script {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// `states[seq]`: the state after commit `seq` (0: the empty database).
    pub states: Vec<State>,
    /// Every key written (committed or not), and some never written.
    pub probes: Vec<B256>,
    /// A block written after recovery, to check the database takes writes.
    pub probe_block: Vec<(B256, B256)>,
    /// The options of every open.
    pub opts: Options,
}

/// One block of the model chain.
#[derive(Clone)]
struct Block {
    root: Hash,
    tree: ReferenceTree,
    persisted: bool,
}

/// The model the script is generated with.
struct Model {
    rng: SplitMix64,
    rounds: usize,
    /// A database with a flat index: no bulk applies (they name no
    /// accounts).
    flat: bool,
    known: Vec<B256>,
    /// `chain[0]` is the state before the oldest block still tracked.
    chain: Vec<Block>,
    window: usize,
    steps: Vec<Step>,
    states: Vec<State>,
}

impl Model {
    fn new(seed: u64, rounds: usize, flat: bool) -> Model {
        let tree = ReferenceTree::new();
        let root = tree.compute_root();
        Model {
            rng: SplitMix64(seed),
            rounds,
            flat,
            known: Vec::new(),
            chain: vec![Block {
                root,
                tree: tree.clone(),
                persisted: true,
            }],
            window: 0,
            steps: Vec::new(),
            states: vec![State {
                root,
                tree,
                revert_to: None,
            }],
        }
    }

    fn writes(&mut self) -> Vec<(B256, B256)> {
        // Mostly small blocks, now and then one that splits buckets.
        let max = if self.rng.below(8) == 0 { 300 } else { 40 };
        let mut writes = random_writes(&mut self.rng, &mut self.known, max);
        if self.flat && self.rng.below(3) == 0 {
            writes.extend(self.stem_run());
        }
        writes
    }

    /// On a flat-indexed database: a run of consecutive slots of one of
    /// [`DENSE_STEMS`] stems, so that those stems fill leaves of the
    /// index by themselves (their reads go to the tree and their writes
    /// are held as the stem: ARCHITECTURE.md, "Read locality").
    fn stem_run(&mut self) -> Vec<(B256, B256)> {
        let stem = DENSE_STEMS[self.rng.below(DENSE_STEMS.len() as u64) as usize];
        let len = 48 + self.rng.below(96) as usize;
        let start = self.rng.below(256) as usize;
        let mut writes = Vec::with_capacity(len);
        for offset in 0..len {
            let mut key = [stem; 32];
            key[31] = ((start + offset) % 256) as u8;
            let value = if self.rng.below(8) == 0 {
                B256::ZERO
            } else {
                B256::from(self.rng.bytes32())
            };
            writes.push((B256::from(key), value));
        }
        self.known.push(writes[0].0);
        writes
    }

    /// Records the state after a new commit.
    fn record(&mut self) {
        let newest = self
            .chain
            .iter()
            .rposition(|b| b.persisted)
            .expect("the base is persisted");
        let revert_to = (self.window >= 1 && newest >= 1).then(|| {
            let previous = &self.chain[newest - 1];
            (previous.root, previous.tree.clone())
        });
        let block = &self.chain[newest];
        self.states.push(State {
            root: block.root,
            tree: block.tree.clone(),
            revert_to,
        });
    }

    fn apply(&mut self) -> Hash {
        let writes = self.writes();
        let mut tree = self.chain.last().expect("base").tree.clone();
        tree.insert_batch(&writes);
        let root = tree.compute_root();
        self.chain.push(Block {
            root,
            tree,
            persisted: false,
        });
        self.steps.push(Step::Apply(writes));
        root
    }

    /// Marks blocks up to `index` persisted; returns whether any was not.
    fn persist_upto(&mut self, index: usize) -> bool {
        let newly = self.chain[..=index].iter().filter(|b| !b.persisted).count();
        for block in &mut self.chain[..=index] {
            block.persisted = true;
        }
        self.window = (self.window + newly).min(REVERT_DEPTH);
        if newly > 0 {
            self.record();
        }
        newly > 0
    }

    /// Persists the layers up to the oldest unpersisted one's successor
    /// minus one: some layers persisted, at least one left in memory.
    fn persist_partial(&mut self) {
        let unpersisted: Vec<usize> = (0..self.chain.len())
            .filter(|&i| !self.chain[i].persisted)
            .collect();
        if unpersisted.len() < 2 {
            return;
        }
        let pick = unpersisted[self.rng.below(unpersisted.len() as u64 - 1) as usize];
        let root = self.chain[pick].root;
        self.persist_upto(pick);
        self.steps.push(Step::Persist(root));
    }

    fn commit(&mut self, checkpoint: bool) {
        let last = self.chain.len() - 1;
        let record = self.persist_upto(last);
        self.steps.push(if checkpoint {
            Step::Checkpoint { record }
        } else {
            Step::Commit { record }
        });
    }

    /// Reverts `back` blocks if the window allows it.
    fn revert(&mut self, back: usize) {
        if self.chain.len() <= back {
            return;
        }
        let target = self.chain.len() - 1 - back;
        let undone = self.chain[target + 1..]
            .iter()
            .filter(|b| b.persisted)
            .count();
        if undone > self.window {
            return;
        }
        let root = self.chain[target].root;
        self.chain.truncate(target + 1);
        self.window -= undone;
        let record = undone > 0;
        if record {
            self.record();
        }
        self.steps.push(Step::Revert { root, record });
    }

    /// The writes of a bulk block, sorted by key (stable: of equal keys
    /// the last written stays last). Mostly overwrites of known keys, some
    /// new keys. A `large` block has more than one bulk chunk (4,096
    /// writes): known keys written several times over, then a few more.
    fn bulk_writes(&mut self, large: bool) -> Vec<(B256, B256)> {
        let value = |rng: &mut SplitMix64| {
            if rng.below(8) == 0 {
                B256::ZERO
            } else {
                B256::from(rng.bytes32())
            }
        };
        let mut keys = Vec::new();
        let distinct = if large { 200 } else { 40 + self.rng.below(160) };
        for _ in 0..distinct {
            if self.rng.below(5) == 0 || self.known.is_empty() {
                keys.push(mixed_key(&mut self.rng, &mut self.known));
            } else {
                let i = self.rng.below(self.known.len() as u64) as usize;
                keys.push(self.known[i]);
            }
        }
        let mut writes: Vec<(B256, B256)> = Vec::new();
        if large {
            // Chunks of 4,096: the last of 1..8 writes, into few buckets.
            let total = 4096 + 1 + self.rng.below(8) as usize;
            while writes.len() < total {
                let key = keys[self.rng.below(keys.len() as u64) as usize];
                writes.push((key, value(&mut self.rng)));
            }
        } else {
            writes.extend(keys.iter().map(|&key| (key, value(&mut self.rng))));
        }
        writes.sort_by_key(|(key, _)| *key);
        writes
    }

    /// A bulk block: commits the unpersisted layers (a record if any),
    /// then the block, durable by a checkpoint; the revert window is empty
    /// after it and the older layers are gone.
    fn bulk(&mut self, large: bool) {
        if self.flat {
            return;
        }
        let last = self.chain.len() - 1;
        let record = self.persist_upto(last);
        let writes = self.bulk_writes(large);
        let mut tree = self.chain[last].tree.clone();
        tree.insert_batch(&writes);
        let root = tree.compute_root();
        self.chain = vec![Block {
            root,
            tree,
            persisted: true,
        }];
        self.window = 0;
        self.record();
        self.steps.push(Step::Bulk { writes, record });
    }

    fn reopen(&mut self, lose: bool) {
        if lose {
            let writes = self.writes();
            self.steps.push(Step::LoseAndReopen(writes));
        } else {
            self.steps.push(Step::Reopen);
        }
        while self.chain.last().is_some_and(|b| !b.persisted) {
            self.chain.pop();
        }
    }

    /// One round: every kind of step, in a varying order and mix.
    fn round(&mut self, round: usize) {
        if round + 2 == self.rounds {
            self.bulk(true);
        }
        self.apply();
        self.apply();
        self.apply();
        self.persist_partial();
        if round % 4 == 1 {
            // With layers still unpersisted: a commit first.
            self.bulk(false);
        }
        if self.rng.below(2) == 0 {
            // A revert of unpersisted layers only: no record.
            self.apply();
            self.apply();
            self.revert(1);
        }
        self.commit(false);
        self.apply();
        self.commit(false);
        // A durable revert of one or two persisted blocks.
        let back = 1 + self.rng.below(2) as usize;
        self.revert(back);
        self.apply();
        self.apply();
        self.persist_partial();
        match round % 3 {
            0 => self.commit(true),
            1 => {
                let lose = self.rng.below(2) == 0;
                self.reopen(lose);
            }
            _ => {
                self.commit(false);
                self.reopen(false);
                // The window after a reopen comes from the revert segment
                // and the WAL.
                self.revert(1);
            }
        }
    }
}

/// Generates the workload of `seed` with `rounds` rounds.
pub fn script(seed: u64, rounds: usize) -> Script {
    script_of(seed, rounds, false)
}

/// The workload of `seed` on a database with a flat index: every block
/// applied with its accounts ([`super::owner_of`]), no bulk applies.
pub fn script_flat(seed: u64, rounds: usize) -> Script {
    script_of(seed, rounds, true)
}

fn script_of(seed: u64, rounds: usize, flat: bool) -> Script {
    let mut model = Model::new(seed, rounds, flat);
    for round in 0..rounds {
        model.round(round);
    }
    model.commit(true);
    let mut probes = model.known.clone();
    probes.sort_unstable();
    probes.dedup();
    probes.extend((0..50).map(|_| B256::from(model.rng.bytes32())));
    let probe_block = random_writes(&mut model.rng, &mut Vec::new(), 30);
    Script {
        steps: model.steps,
        states: model.states,
        probes,
        probe_block,
        // Group depth 2: several pages; 64 KiB: most persists checkpoint.
        opts: Options {
            revert_depth: REVERT_DEPTH,
            flat_index: flat,
            ..options(2, 64 << 10)
        },
    }
}

/// How far a run got.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Commits (WAL records, bulk blocks) whose step returned `Ok`.
    pub acked: usize,
    /// The commits the step in flight when the run stopped may have made
    /// durable (0: none in flight; 2: a bulk block after the record of the
    /// layers it commits first).
    pub in_flight: usize,
    /// The index of the step the run stopped in (the step count if it
    /// completed; a failed reopen counts as the step before it).
    pub step: usize,
    /// The most stems a flat index held as written as a whole after any
    /// step (`Stats::flat_stem_changes`): whether the run wrote dense
    /// stems.
    pub stems_written_max: u64,
}

impl Progress {
    /// The commit sequence numbers a crash now may recover: the last
    /// acknowledged one, or any the step in flight reached (for a bulk
    /// step, the state before or after the whole block).
    pub fn allowed(&self) -> Vec<usize> {
        (self.acked..=self.acked + self.in_flight).collect()
    }
}

/// Runs the script on `dir` until an operation fails; returns how far it
/// got and the error that stopped it, if any.
pub fn run(script: &Script, dir: &Arc<dyn StoreDir>) -> (Progress, Option<StoreError>) {
    let mut progress = Progress::default();
    let open = || Store::open(Arc::clone(dir), script.opts.clone());
    let mut store = match open() {
        Ok(store) => store,
        Err(error) => return (progress, Some(error)),
    };
    for (index, step) in script.steps.iter().enumerate() {
        progress.step = index;
        progress.in_flight = step.records();
        if let Err(error) = step.run(&mut store) {
            return (progress, Some(error));
        }
        progress.acked += step.records();
        progress.in_flight = 0;
        if store.has_flat_index() {
            let written = store.stats().flat_stem_changes;
            progress.stems_written_max = progress.stems_written_max.max(written);
        }
        if matches!(step, Step::LoseAndReopen(_) | Step::Reopen) {
            // The old handle releases the directory lock first.
            drop(store);
            store = match open() {
                Ok(store) => store,
                Err(error) => return (progress, Some(error)),
            };
        }
    }
    progress.step = script.steps.len();
    (progress, None)
}

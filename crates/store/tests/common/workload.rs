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
//! so the state the disk may be found in is indexed by that number.
//!
//! The script runs in rounds that each exercise, in some order and with
//! random sizes: blocks applied as layers, a persist of the oldest ones
//! only (later ones stay in memory), commits of several layers in one
//! record, a revert of unpersisted layers (no I/O), a durable revert of
//! persisted blocks, explicit checkpoints (which write the revert window as
//! a segment), reopens, and writes lost to a reopen before they were
//! persisted. A small memory budget makes most persists checkpoint too.

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::StoreDir;
use ubt_store::{Options, Store, StoreError};

use super::{options, random_writes, Rng};

/// How many persisted blocks can be reverted.
pub const REVERT_DEPTH: usize = 4;

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
        }
    }

    /// Whether the step writes a WAL record when it succeeds.
    pub fn writes_record(&self) -> bool {
        match self {
            Step::Persist(_) => true,
            Step::Commit { record } | Step::Checkpoint { record } => *record,
            Step::Revert { record, .. } => *record,
            _ => false,
        }
    }
}

/// A state the database can be found in: the one after WAL record `seq`.
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
    /// `states[seq]`: the state after WAL record `seq` (0: the empty database).
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
    rng: Rng,
    known: Vec<B256>,
    /// `chain[0]` is the state before the oldest block still tracked.
    chain: Vec<Block>,
    window: usize,
    steps: Vec<Step>,
    states: Vec<State>,
}

impl Model {
    fn new(seed: u64) -> Model {
        let tree = ReferenceTree::new();
        let root = tree.compute_root();
        Model {
            rng: Rng(seed),
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
        random_writes(&mut self.rng, &mut self.known, max)
    }

    /// Records the state after a new WAL record.
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
        self.apply();
        self.apply();
        self.apply();
        self.persist_partial();
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
    let mut model = Model::new(seed);
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
            ..options(2, 64 << 10)
        },
    }
}

/// How far a run got.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// WAL records whose step returned `Ok`.
    pub acked: usize,
    /// Whether a step that writes a record was in flight when the run stopped.
    pub in_flight: bool,
}

impl Progress {
    /// The commit sequence numbers a crash now may recover.
    pub fn allowed(&self) -> Vec<usize> {
        let mut allowed = vec![self.acked];
        if self.in_flight {
            allowed.push(self.acked + 1);
        }
        allowed
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
    for step in &script.steps {
        progress.in_flight = step.writes_record();
        let result = match step {
            Step::Apply(writes) | Step::LoseAndReopen(writes) => store.apply(writes).map(drop),
            Step::Persist(root) => store.persist(root),
            Step::Commit { .. } => store.commit().map(drop),
            Step::Checkpoint { .. } => store.checkpoint(),
            Step::Revert { root, .. } => store.revert(root),
            Step::Reopen => Ok(()),
        };
        if let Err(error) = result {
            return (progress, Some(error));
        }
        if step.writes_record() {
            progress.acked += 1;
        }
        progress.in_flight = false;
        if matches!(step, Step::LoseAndReopen(_) | Step::Reopen) {
            // The old handle releases the directory lock first.
            drop(store);
            store = match open() {
                Ok(store) => store,
                Err(error) => return (progress, Some(error)),
            };
        }
    }
    (progress, None)
}

//! The model-based target: an input is a program of store operations
//! (apply, persist, commit, checkpoint, bulk apply, revert, reopen, power
//! loss, an injected I/O fault before the next operation) run against the
//! store on a simulated disk and against a model (a chain of reference
//! trees, one per applied block, with the revert window) side by side.
//!
//! After every operation the store's root equals the model's; a revert
//! succeeds exactly when the model's window allows it; a reopen or a
//! power-loss image lands at the last persisted block; after an injected
//! fault the error is typed and a reopen lands at the state before or
//! after the failed operation; reads at the tip and at older layers equal
//! the reference; the final store verifies clean.
//!
//! Half the inputs run on a database with a flat index of account values
//! (a bit of the third byte): every block is applied with its owners
//! ([`owner_of`]), bulk applies are skipped (they name no accounts), and
//! reads at the tip also go through the index.
//!
//! A bulk apply ([`Store::apply_bulk`]) is modelled as a commit of every
//! block, then one more block, persisted, that empties the revert window
//! and replaces the chain (nothing before it can be reverted to). After it
//! fails, the handle refuses writes, and reads too unless the failure was
//! in the commit it starts with; a reopen lands before the commit, after
//! it, or after the whole block.

use std::sync::Arc;

use alloy_primitives::{Address, B256};
use ubt_spec::hash::{sha256, Hash};
use ubt_spec::{ReferenceTree, StateTree};

use super::Finding;
use crate::error::StoreError;
use crate::io::sim::{CrashMode, FaultKind, SimDir};
use crate::io::StoreDir;
use crate::options::Options;
use crate::Store;

/// Operations per input at most (each input runs in milliseconds).
const OPS_MAX: usize = 48;

/// The input, read a byte at a time (zeros once it runs out).
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let byte = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        byte
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// The account a key belongs to on a database with a flat index: a
/// function of the key, over three accounts.
fn owner_of(key: &B256) -> Address {
    Address::repeat_byte(1 + key[0] % 3)
}

/// One of 256 keys on 32 stems (eight values per stem, spread over the
/// sub-indices), so blocks often share stems.
fn small_key(i: u8) -> B256 {
    let mut key = sha256(&[i >> 3]);
    key[31] = (i & 7).wrapping_mul(37);
    B256::from(key)
}

/// One of 65,536 unrelated keys (for blocks that split buckets).
fn wide_key(i: u16) -> B256 {
    B256::from(sha256(&i.to_le_bytes()))
}

/// One block of the model chain.
#[derive(Clone)]
struct Block {
    root: Hash,
    tree: ReferenceTree,
    persisted: bool,
}

/// The model: the chain of blocks (`chain[0]` the state before the
/// oldest) and the revert window.
#[derive(Clone)]
struct Model {
    chain: Vec<Block>,
    window: usize,
    depth: usize,
}

impl Model {
    fn tip(&self) -> &Block {
        &self.chain[self.chain.len() - 1]
    }

    fn persist_upto(&mut self, index: usize) {
        let newly = self.chain[..=index].iter().filter(|b| !b.persisted).count();
        for block in &mut self.chain[..=index] {
            block.persisted = true;
        }
        self.window = (self.window + newly).min(self.depth);
    }

    /// What a reopen keeps: the persisted blocks.
    fn reopened(&self) -> Model {
        let mut model = self.clone();
        while model.chain.len() > 1 && !model.tip().persisted {
            model.chain.pop();
        }
        model
    }
}

/// Why an operation stopped: the store returned an error, or a property
/// broke.
enum Stop {
    Store(&'static str, StoreError),
    Finding(Finding),
}

impl Stop {
    fn finding(self) -> Finding {
        match self {
            Stop::Store(what, error) => format!("{what}: {error}"),
            Stop::Finding(finding) => finding,
        }
    }

    /// Whether this is what an injected fault may surface as.
    fn is_injected_fault(&self) -> bool {
        match self {
            Stop::Store(_, StoreError::Io { source, .. }) => {
                matches!(source.raw_os_error(), Some(libc::EIO | libc::ENOSPC))
            }
            Stop::Store(_, StoreError::Poisoned(_)) => true,
            _ => false,
        }
    }
}

type Step = Result<(), Stop>;

fn broken(finding: &str) -> Stop {
    Stop::Finding(finding.to_string())
}

/// The store, its disk and the model, side by side.
struct Run {
    sim: SimDir,
    /// `None` while a reopen is under way (or after one failed).
    store: Option<Store>,
    options: Options,
    model: Model,
    counter: u64,
    /// The block of the bulk apply under way (until it returns `Ok`): a
    /// reopen after it failed may find it durable.
    bulk: Option<Block>,
}

impl Run {
    fn store(&mut self) -> Result<&mut Store, Stop> {
        self.store.as_mut().ok_or_else(|| broken("no open store"))
    }

    fn value(&mut self, byte: u8) -> B256 {
        self.counter += 1;
        if byte.is_multiple_of(16) {
            B256::ZERO
        } else {
            B256::from(sha256(&self.counter.to_le_bytes()))
        }
    }

    /// Runs one operation.
    fn step(&mut self, input: &mut Input<'_>) -> Step {
        let op = input.byte() % 10;
        let arg = input.byte();
        match op {
            0..=2 => self.apply(op, arg, input),
            3 => self.persist(arg),
            // A quarter of the checkpoints are bulk applies instead.
            5 if arg % 4 == 3 => self.bulk(arg, input),
            4 | 5 => {
                let store = self.store()?;
                if op == 4 {
                    store
                        .commit()
                        .map(drop)
                        .map_err(|e| Stop::Store("commit", e))?;
                } else {
                    store
                        .checkpoint()
                        .map_err(|e| Stop::Store("checkpoint", e))?;
                }
                let last = self.model.chain.len() - 1;
                self.model.persist_upto(last);
                Ok(())
            }
            6 => self.revert(1 + usize::from(arg % 3)),
            7 => {
                let sim = self.sim.clone();
                self.reopen(sim)?;
                self.expect_persisted_tip()
            }
            8 => {
                let modes = [
                    CrashMode::DropUnsynced,
                    CrashMode::KeepUnsynced,
                    CrashMode::RandomSubset,
                    CrashMode::Reordered,
                    CrashMode::Torn,
                    CrashMode::TornAnyByte,
                ];
                let mode = modes[usize::from(arg) % modes.len()];
                let image = self.sim.crash_image(mode, u64::from(input.byte()));
                self.reopen(image)?;
                self.expect_persisted_tip()
            }
            _ => self.fault(arg, input),
        }
    }

    fn apply(&mut self, op: u8, arg: u8, input: &mut Input<'_>) -> Step {
        let writes: Vec<(B256, B256)> = if op == 2 {
            // A large block over unrelated keys: splits buckets.
            let start = u16::from(arg) << 8 | u16::from(input.byte());
            (0..40 + u16::from(arg % 128) * 2)
                .map(|i| {
                    let value = self.value(arg.wrapping_add(1));
                    (wide_key(start.wrapping_add(i.wrapping_mul(97))), value)
                })
                .collect()
        } else {
            (0..1 + arg % 8)
                .map(|_| {
                    let key = small_key(input.byte());
                    let value_byte = input.byte();
                    (key, self.value(value_byte))
                })
                .collect()
        };
        let mut tree = self.model.tip().tree.clone();
        tree.insert_batch(&writes);
        let root = tree.compute_root();
        let store = self.store()?;
        let got = if store.has_flat_index() {
            let owned: Vec<(Address, B256, B256)> =
                writes.iter().map(|(k, v)| (owner_of(k), *k, *v)).collect();
            store.apply_owned(&owned)
        } else {
            store.apply(&writes)
        }
        .map_err(|e| Stop::Store("apply", e))?;
        if got != root {
            return Err(broken("apply: the root differs from the reference"));
        }
        self.model.chain.push(Block {
            root,
            tree,
            persisted: false,
        });
        Ok(())
    }

    /// A bulk block of 16 to 1,036 sorted writes over unrelated keys and
    /// the small ones (so it changes buckets the layers hold too).
    fn bulk(&mut self, arg: u8, input: &mut Input<'_>) -> Step {
        if self.options.flat_index {
            // Bulk writes name no accounts: a flat index refuses them.
            return Ok(());
        }
        let count = 16 + usize::from(input.byte()) * 4;
        let start = u16::from(input.byte()) << 8 | u16::from(arg);
        let mut writes: Vec<(B256, B256)> = (0..count)
            .map(|i| {
                let key = if i % 4 == 0 {
                    small_key((i / 4).to_le_bytes()[0] ^ arg)
                } else {
                    #[allow(clippy::cast_possible_truncation)] // i < count <= 1,036
                    let i = i as u16;
                    wide_key(start.wrapping_add(i.wrapping_mul(131)))
                };
                let value = self.value(arg.wrapping_add(i.to_le_bytes()[0]));
                (key, value)
            })
            .collect();
        // Stable: of equal keys the one written last wins, in the store too.
        writes.sort_by_key(|(key, _)| *key);
        let mut tree = self.model.tip().tree.clone();
        tree.insert_batch(&writes);
        let block = Block {
            root: tree.compute_root(),
            tree,
            persisted: true,
        };
        self.bulk = Some(block.clone());
        let got = self
            .store()?
            .apply_bulk(writes.iter().copied())
            .map_err(|e| Stop::Store("bulk apply", e))?;
        self.bulk = None;
        if got != block.root {
            return Err(broken("bulk apply: the root differs from the reference"));
        }
        if !self.store()?.layers().is_empty() {
            return Err(broken("layers older than a bulk block are still in memory"));
        }
        self.model.chain = vec![block];
        self.model.window = 0;
        Ok(())
    }

    /// After a bulk apply failed: the handle refuses writes; it serves
    /// reads at the state the files hold (it reloads itself: the state
    /// before the block, committed or not, or the block's own if its
    /// checkpoint reached the files), every read right, or, if its reload
    /// failed too, refuses reads and reports the state before the block.
    fn check_failed_bulk(&self, before: &Model, failed: Option<&Block>) -> Step {
        let store = self.store.as_ref().ok_or_else(|| broken("no open store"))?;
        if store.poisoned().is_none() {
            return Err(broken("a failed bulk apply left the handle writable"));
        }
        let keys: Vec<B256> = (0..=255).map(small_key).collect();
        match store.get_many(&keys) {
            Err(StoreError::Poisoned(_)) => {
                // The tip was committed before the block began.
                if store.root() != before.tip().root || store.committed_root() != store.root() {
                    return Err(broken(
                        "after a failed bulk apply the root is not the state before the block",
                    ));
                }
                Ok(())
            }
            Ok(values) => {
                let root = store.root();
                let Some(block) = before
                    .chain
                    .iter()
                    .rev()
                    .find(|b| b.persisted && b.root == root)
                    .or_else(|| Some(before.tip()).filter(|t| t.root == root))
                    .or_else(|| failed.filter(|b| b.root == root))
                else {
                    return Err(broken(
                        "a failed bulk apply serves reads at a state before neither the block \
                         nor its commit",
                    ));
                };
                if store.committed_root() != root
                    || keys
                        .iter()
                        .zip(&values)
                        .any(|(k, v)| block.tree.get(k) != *v)
                {
                    return Err(broken("a failed bulk apply serves wrong reads"));
                }
                Ok(())
            }
            Err(error) => Err(Stop::Store("reads after a failed bulk apply", error)),
        }
    }

    fn persist(&mut self, arg: u8) -> Step {
        let unpersisted: Vec<usize> = (0..self.model.chain.len())
            .filter(|&i| !self.model.chain[i].persisted)
            .collect();
        let Some(&pick) = unpersisted.get(usize::from(arg) % unpersisted.len().max(1)) else {
            return Ok(());
        };
        let root = self.model.chain[pick].root;
        // The store persists up to the newest layer with this root.
        let target = self
            .model
            .chain
            .iter()
            .rposition(|b| b.root == root)
            .unwrap_or(pick);
        self.store()?
            .persist(&root)
            .map_err(|e| Stop::Store("persist", e))?;
        self.model.persist_upto(target);
        Ok(())
    }

    fn revert(&mut self, back: usize) -> Step {
        let len = self.model.chain.len();
        if len <= back {
            return Ok(());
        }
        let root = self.model.chain[len - 1 - back].root;
        // The store reverts to the newest layer with this root.
        let target = self
            .model
            .chain
            .iter()
            .rposition(|b| b.root == root)
            .unwrap_or(len - 1 - back);
        let undone = self.model.chain[target + 1..]
            .iter()
            .filter(|b| b.persisted)
            .count();
        let allowed = undone <= self.model.window;
        match self.store()?.revert(&root) {
            Ok(()) if allowed => {
                self.model.chain.truncate(target + 1);
                self.model.window -= undone;
                Ok(())
            }
            Ok(()) => Err(broken("a revert beyond the window succeeded")),
            Err(StoreError::UnknownRoot(_)) if !allowed => Ok(()),
            Err(error) => Err(Stop::Store("revert within the window", error)),
        }
    }

    /// Drops the handle and opens `sim` (the directory, or a power-loss
    /// image of it); the model keeps only persisted blocks.
    fn reopen(&mut self, sim: SimDir) -> Step {
        drop(self.store.take());
        let dir: Arc<dyn StoreDir> = Arc::new(sim.clone());
        self.sim = sim;
        self.model = self.model.reopened();
        let store = Store::open(dir, self.options.clone()).map_err(|e| Stop::Store("open", e))?;
        self.store = Some(store);
        Ok(())
    }

    fn expect_persisted_tip(&mut self) -> Step {
        if self.store()?.root() != self.model.tip().root {
            return Err(broken(
                "reopened at another root than the last persisted block",
            ));
        }
        Ok(())
    }

    /// Arms a fault a few operations ahead, runs the next operation, and
    /// recovers if it fired: the error must be typed, and a fault-free
    /// reopen (of the directory as left, or of a power-loss image of it)
    /// must land at the state before or after the failed operation.
    fn fault(&mut self, arg: u8, input: &mut Input<'_>) -> Step {
        let kinds = [
            FaultKind::Eio,
            FaultKind::Enospc,
            FaultKind::EioPersistent,
            FaultKind::DiskFull,
        ];
        let kind = kinds[usize::from(arg) % kinds.len()];
        self.sim
            .fail_op(self.sim.op_count() + u64::from(arg / 4 % 24), kind);
        let before = self.model.clone();
        self.bulk = None;
        let result = self.step(input);
        self.sim.clear_faults();
        let bulk = self.bulk.take();
        if bulk.is_some() && result.as_ref().is_err_and(Stop::is_injected_fault) {
            self.check_failed_bulk(&before, bulk.as_ref())?;
        }
        let poisoned = self.store.as_ref().is_some_and(|s| s.poisoned().is_some());
        let base = match result {
            Ok(()) if !poisoned => return Ok(()),
            // The operation stood (a persist whose checkpoint failed).
            Ok(()) => self.model.clone(),
            Err(stop) if !stop.is_injected_fault() => return Err(stop),
            Err(_) => {
                let unchanged = self
                    .store
                    .as_ref()
                    .is_some_and(|s| s.poisoned().is_none() && s.root() == before.tip().root);
                if unchanged {
                    // A failed apply changes nothing.
                    self.model = before;
                    return Ok(());
                }
                before
            }
        };
        let sim = if input.byte().is_multiple_of(2) {
            self.sim.crash_image(CrashMode::DropUnsynced, 0)
        } else {
            self.sim.clone()
        };
        self.reopen(sim).map_err(|stop| broken(&stop.finding()))?;
        let root = self.store()?.root();
        match adopt(&base, &root) {
            Some(model) => {
                self.model = model;
                Ok(())
            }
            // The failed bulk apply's checkpoint was durable.
            None => match bulk.filter(|b| b.root == root) {
                Some(block) => {
                    self.model = Model {
                        chain: vec![block],
                        window: 0,
                        depth: self.model.depth,
                    };
                    Ok(())
                }
                None => Err(broken("after a fault, reopened at neither state")),
            },
        }
    }

    /// Reads at the tip and at every layer in memory.
    fn check_reads(&mut self, input: &mut Input<'_>) -> Step {
        let keys: Vec<B256> = (0..8).map(|_| small_key(input.byte())).collect();
        let store = self.store.as_ref().ok_or_else(|| broken("no open store"))?;
        let tip = self.model.tip();
        let got = store
            .get_many(&keys)
            .map_err(|e| Stop::Store("get_many", e))?;
        if keys.iter().zip(&got).any(|(k, v)| tip.tree.get(k) != *v) {
            return Err(broken("a read at the tip differs from the reference"));
        }
        if store.has_flat_index() {
            let owned: Vec<(Address, B256)> = keys.iter().map(|k| (owner_of(k), *k)).collect();
            let got = store
                .get_owned(&owned)
                .map_err(|e| Stop::Store("get_owned", e))?;
            if keys.iter().zip(&got).any(|(k, v)| tip.tree.get(k) != *v) {
                return Err(broken(
                    "a read through the flat index differs from the reference",
                ));
            }
        }
        for layer in store.layers() {
            let Some(block) = self.model.chain.iter().rev().find(|b| b.root == layer.root) else {
                return Err(broken("a layer in memory is not in the model chain"));
            };
            let snapshot = store
                .snapshot(&layer.root)
                .map_err(|e| Stop::Store("snapshot", e))?;
            for key in &keys {
                let got = store
                    .get_at(key, &snapshot)
                    .map_err(|e| Stop::Store("get_at", e))?;
                if got != block.tree.get(key) {
                    return Err(broken(
                        "a read at an older layer differs from the reference",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The model after a failed operation whose durable effect is unknown,
/// given the root a reopen found: `model` with nothing more persisted, or
/// with its blocks persisted up to the one at `root` (a persist that
/// reached the disk), or reverted to the block at `root` (a durable revert
/// that did).
fn adopt(model: &Model, root: &Hash) -> Option<Model> {
    let persisted = model.chain.iter().rposition(|b| b.persisted)?;
    if model.chain[persisted].root == *root {
        return Some(model.reopened());
    }
    if let Some(i) = model.chain.iter().rposition(|b| b.root == *root) {
        let mut adopted = model.clone();
        if i > persisted {
            adopted.persist_upto(i);
            return Some(adopted.reopened());
        }
        let undone = persisted - i;
        if undone <= adopted.window {
            adopted.chain.truncate(i + 1);
            adopted.window -= undone;
            return Some(adopted);
        }
    }
    None
}

/// The model target's body. The first bytes choose the group depth and
/// the bucket capacity, the memory budget and the revert depth; the rest
/// is the program.
pub fn model(data: &[u8]) -> Result<(), Finding> {
    let mut input = Input { bytes: data, at: 0 };
    let shape_byte = input.byte();
    let group_depth = 1 + shape_byte % 8;
    // 4 KiB when the byte's top bit is clear (half of all inputs), else
    // 8, 16 or 64 KiB.
    let bucket_bytes = match shape_byte >> 6 {
        0 | 1 => crate::bucket::BUCKET_BYTES_DEFAULT,
        2 => 8 << 10,
        _ if shape_byte & 0x20 == 0 => 16 << 10,
        _ => 64 << 10,
    };
    let budget = (1 + usize::from(input.byte() % 8)) * (16 << 10);
    let depth_byte = input.byte();
    let depth = 1 + usize::from(depth_byte % 6);
    let options = Options {
        group_depth: Some(group_depth),
        bucket_bytes: Some(bucket_bytes),
        memory_budget_bytes: budget,
        revert_depth: depth,
        flat_index: (depth_byte / 6) % 2 == 1,
        ..Options::default()
    };
    let sim = SimDir::new();
    let dir: Arc<dyn StoreDir> = Arc::new(sim.clone());
    let store = Store::open(dir, options.clone()).map_err(|e| format!("create: {e}"))?;
    let empty = ReferenceTree::new();
    let mut run = Run {
        sim,
        store: Some(store),
        options,
        model: Model {
            chain: vec![Block {
                root: empty.compute_root(),
                tree: empty,
                persisted: true,
            }],
            window: 0,
            depth,
        },
        counter: 0,
        bulk: None,
    };
    for _ in 0..OPS_MAX {
        if input.done() {
            break;
        }
        run.step(&mut input).map_err(Stop::finding)?;
        let root = run.store().map_err(Stop::finding)?.root();
        if root != run.model.tip().root {
            return Err("the store's root differs from the model's".into());
        }
        if input.byte().is_multiple_of(4) {
            run.check_reads(&mut input).map_err(Stop::finding)?;
        }
    }
    let store = run.store().map_err(Stop::finding)?;
    let report = store.verify().map_err(|e| format!("verify: {e}"))?;
    if !report.is_ok() || report.leaves != run.model.tip().tree.len() as u64 {
        return Err(format!("verify: {:?}", report.problems));
    }
    Ok(())
}

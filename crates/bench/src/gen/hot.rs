//! Hot contracts: a chain-like state in which a few contracts hold most of
//! the storage, and blocks whose accesses concentrate on them.
//!
//! On mainnet a handful of contracts take most storage reads. EIP-7864
//! scatters a contract's slots over the whole key space (each slot's stem
//! is a hash of the address and the slot), while an MPT keeps them in one
//! storage trie; this workload shows what that costs.
//!
//! # The state
//!
//! * The ERC20 token's accounts and, if asked for, the sequential-slot
//!   contract, as in [`super::chain`] (by default no holders and no
//!   sequential contract: they are not this workload's).
//! * `H` hot contracts ([`DEFAULT_HOT_CONTRACTS`] = 32): hot contract `k`
//!   (`k = 1..=H`, largest first) has `max(1, floor(S1 / k))` slots with
//!   `S1 = min(1,000,000, N / 10)` ([`largest_slots`]), random code,
//!   balance and nonce as a chain contract's, random 32-byte keys and
//!   non-zero values. Its account comes from the stream
//!   `(seed, HOT_CONTRACT, k - 1)`, its slot `i` from
//!   `(seed, HOT_SLOT, (k - 1) << 40 | i)`, so a block can name slot `i`
//!   without the generator keeping any slot in memory.
//! * The rest of the `N` tree entries: a chain-like state as
//!   [`super::chain`] makes it (20% EOAs, Pareto-sized contracts), planned
//!   for `N` less the hot contracts' entries. The hot contracts alone may
//!   exceed a small `N`; the state is then larger than asked.
//!
//! # The blocks
//!
//! Every block reads `R` distinct slots ([`DEFAULT_READS_PER_BLOCK`]) and
//! writes `W` of them ([`DEFAULT_WRITES_PER_BLOCK`]), spread evenly through
//! the block. Each access picks a contract by a Zipf law with exponent
//! `s` (1) over the ranks of all contracts (the hot ones first, largest
//! first, then the chain contracts in the order of the state file; the
//! token and the sequential contract are not ranked), then a slot
//! uniformly among that contract's existing slots (drawn again if the
//! block already took it; a contract whose slots the block has all taken
//! is drawn again). By default `W / 8` of the writes
//! ([`NEW_SLOT_DIVISOR`]), spread evenly among them, create a new slot (a
//! random key) instead, as a token transfer to a new holder does; the
//! others store a new random non-zero value into an existing slot. Blocks
//! come from the stream `(seed, HOT_BLOCKS, number)`.
//!
//! Memory: one `f64` per ranked contract (the Zipf law's cumulative
//! weights) and the address and slot count of every chain contract a
//! block has touched; a chain contract's slot key is recomputed from its
//! stream, a hot one's from the slot's own.
//!
//! The records follow the EVM's: the first access to a contract in a
//! block reads its account (`a:`, as geth's state loads the account before
//! a slot), every written slot is read first (an `SSTORE` loads the
//! current value; for a new slot that read finds nothing), and each slot
//! appears once. A block's `gas_used` and `txs` are 0: the accesses are
//! replayed, not executed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use alloy_primitives::Address;

use super::chain::{
    chain_contract, draw_contract, draw_slot, plan, write_random_state, write_studies_contracts,
    ChainParams, ChainPlan, ContractDraw, CODE_LEN_END,
};
use super::meta::{HotContractsMeta, StateStorage, WorkloadMeta, FORMAT};
use super::rng::GenRng;
use super::sink::StateSink;
use super::write::{hex_string, LineWriter};
use super::{tag, Progress, Stage};
use crate::BenchError;

/// Hot contracts by default (`H`).
pub const DEFAULT_HOT_CONTRACTS: u64 = 32;
/// Most slots the largest hot contract gets.
pub const LARGEST_CAP: u64 = 1_000_000;
/// The largest hot contract gets at most `N / LARGEST_DIVISOR` slots.
pub const LARGEST_DIVISOR: u64 = 10;
/// Most hot contracts.
pub const MAX_HOT_CONTRACTS: u64 = 1 << 16;
/// Blocks by default.
pub const DEFAULT_BLOCKS: u64 = 8;
/// Distinct slots a block reads by default (the written ones included).
pub const DEFAULT_READS_PER_BLOCK: u64 = 4_096;
/// Slots a block writes by default.
pub const DEFAULT_WRITES_PER_BLOCK: u64 = 512;
/// By default one write in this many creates a new slot.
pub const NEW_SLOT_DIVISOR: u64 = 8;
/// Exponent of the Zipf law by default.
pub const DEFAULT_ZIPF_S: f64 = 1.0;
/// Bits of the slot index in a hot slot's stream index.
const SLOT_INDEX_BITS: u32 = 40;
/// Random draws of a contract or a slot before the generator takes the
/// first free one in order (only a nearly exhausted block gets there).
const REDRAWS: u32 = 64;

/// What [`gen_hot_contracts`] generates.
#[derive(Clone, Debug, PartialEq)]
pub struct HotParams {
    /// The workload's name in `workload.json`.
    pub name: String,
    /// Tree entries to aim at (`N`), everything included.
    pub target_entries: u64,
    /// The seed.
    pub seed: u64,
    /// Hot contracts (`H`).
    pub hot_contracts: u64,
    /// Exponent `s` of the Zipf law over contract ranks.
    pub zipf_s: f64,
    /// Blocks (`B`).
    pub blocks: u64,
    /// Distinct slots each block reads (`R`), the written ones included.
    pub reads_per_block: u64,
    /// Slots each block writes (`W <= R`).
    pub writes_per_block: u64,
    /// Of the writes, new slots (`<= W`).
    pub new_slots_per_block: u64,
    /// The ERC20 token's holders.
    pub holders: u64,
    /// Preset slots of the sequential-slot contract (0: none).
    pub sequential_slots: u64,
}

impl HotParams {
    /// Parameters named `hot_contracts` with the defaults of the module
    /// documentation.
    pub fn new(target_entries: u64, seed: u64) -> Self {
        HotParams {
            name: "hot_contracts".to_owned(),
            target_entries,
            seed,
            hot_contracts: DEFAULT_HOT_CONTRACTS,
            zipf_s: DEFAULT_ZIPF_S,
            blocks: DEFAULT_BLOCKS,
            reads_per_block: DEFAULT_READS_PER_BLOCK,
            writes_per_block: DEFAULT_WRITES_PER_BLOCK,
            new_slots_per_block: DEFAULT_WRITES_PER_BLOCK / NEW_SLOT_DIVISOR,
            holders: 0,
            sequential_slots: 0,
        }
    }
}

/// Slots of the largest hot contract for `target_entries`:
/// `min(LARGEST_CAP, target_entries / LARGEST_DIVISOR)`, at least 1.
pub fn largest_slots(target_entries: u64) -> u64 {
    (target_entries / LARGEST_DIVISOR).clamp(1, LARGEST_CAP)
}

/// Slots of each of `hot_contracts` hot contracts, largest first:
/// `max(1, floor(S1 / k))`.
pub fn hot_sizes(target_entries: u64, hot_contracts: u64) -> Vec<u64> {
    let largest = largest_slots(target_entries);
    (1..=hot_contracts).map(|k| (largest / k).max(1)).collect()
}

/// Hot contract `index` (0 for the largest) of `seed`, its code in `code`.
fn hot_contract(seed: u64, index: u64, code: &mut Vec<u8>) -> ContractDraw {
    draw_contract(&mut GenRng::stream(seed, tag::HOT_CONTRACT, index), code)
}

/// Slot `slot` of hot contract `index`: its key and its value in the state.
pub fn hot_slot(seed: u64, index: u64, slot: u64) -> ([u8; 32], [u8; 32]) {
    let stream = (index << SLOT_INDEX_BITS) | slot;
    draw_slot(&mut GenRng::stream(seed, tag::HOT_SLOT, stream))
}

/// How a hot-contracts state is split ([`hot_plan`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HotPlan {
    /// Slots of each hot contract, largest first.
    pub sizes: Vec<u64>,
    /// Tree entries of the hot contracts.
    pub hot_entries: u64,
    /// The chain-like rest: `N` less the hot contracts' entries.
    pub rest: ChainParams,
    /// How the rest is split.
    pub chain: ChainPlan,
}

/// An options error.
fn invalid(what: String) -> BenchError {
    BenchError::InvalidOptions { what }
}

/// Checks `params` and splits its target.
pub fn hot_plan(params: &HotParams) -> Result<HotPlan, BenchError> {
    if !(1..=MAX_HOT_CONTRACTS).contains(&params.hot_contracts) {
        return Err(invalid(format!(
            "hot contracts = {}: expected 1..={MAX_HOT_CONTRACTS}",
            params.hot_contracts
        )));
    }
    if !(params.zipf_s.is_finite() && params.zipf_s >= 0.0) {
        return Err(invalid(format!(
            "Zipf exponent {} is not >= 0",
            params.zipf_s
        )));
    }
    if params.writes_per_block > params.reads_per_block {
        return Err(invalid(format!(
            "writes_per_block = {} exceeds reads_per_block = {}: a block reads every \
             slot it writes",
            params.writes_per_block, params.reads_per_block
        )));
    }
    if params.new_slots_per_block > params.writes_per_block {
        return Err(invalid(format!(
            "new_slots_per_block = {} exceeds writes_per_block = {}",
            params.new_slots_per_block, params.writes_per_block
        )));
    }
    let sizes = hot_sizes(params.target_entries, params.hot_contracts);
    #[allow(clippy::cast_possible_truncation)] // a constant, 2048
    let mut code = Vec::with_capacity(CODE_LEN_END as usize);
    let mut hot_entries = 0;
    for (index, size) in (0u64..).zip(&sizes) {
        hot_entries += hot_contract(params.seed, index, &mut code).header_entries() + size;
    }
    let rest = ChainParams {
        name: params.name.clone(),
        target_entries: params.target_entries.saturating_sub(hot_entries),
        seed: params.seed,
        holders: params.holders,
        eoa_share: super::chain::EOA_SHARE,
        min_slots: None,
        sequential_slots: params.sequential_slots,
        storage: StateStorage::File,
    };
    let chain = plan(&rest);
    Ok(HotPlan {
        sizes,
        hot_entries,
        rest,
        chain,
    })
}

/// What [`gen_hot_contracts`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct HotReport {
    /// The workload directory.
    pub dir: PathBuf,
    /// Its `workload.json`.
    pub meta: WorkloadMeta,
    /// Size of `state.jsonl` in bytes.
    pub state_bytes: u64,
}

/// Writes a hot-contracts workload into `dir`: `state.jsonl` (the token's
/// records, the sequential contract if any, the hot contracts each
/// followed by its slots, then the chain-like rest), `blocks.jsonl` (the
/// blocks of the module documentation) and `workload.json` with the
/// `erc20`, `chain` (the rest) and `hot_contracts` objects. The same
/// parameters give byte-identical files.
pub fn gen_hot_contracts(
    dir: &Path,
    params: &HotParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<HotReport, BenchError> {
    let hot_plan = hot_plan(params)?;
    std::fs::create_dir_all(dir).map_err(|e| BenchError::io_at("create", dir, e))?;
    let (seed, total) = (params.seed, params.target_entries);
    let mut out = LineWriter::create(&dir.join("state.jsonl"))?;
    let (erc20, sequential, mut entries) =
        write_studies_contracts(&mut out, &hot_plan.rest, total, progress)?;
    let hot = write_hot_contracts(&mut out, seed, &hot_plan.sizes, entries, total, progress)?;
    entries += hot_plan.hot_entries;
    let random = write_random_state(&mut out, seed, &hot_plan.chain, entries, total, progress)?;
    entries += random.entries;
    let (state_records, state_bytes) = out.finish()?;
    progress(Progress::new(Stage::State, entries, total));

    let mut ranked = Ranked {
        seed,
        hot: &hot,
        chain: &hot_plan.chain,
        chain_contracts: random.contracts,
        code: Vec::new(),
        known: HashMap::new(),
    };
    let hot_slots: u64 = hot_plan.sizes.iter().sum();
    let existing = params.reads_per_block - params.new_slots_per_block;
    if params.blocks > 0 && existing > hot_slots + random.slots {
        return Err(invalid(format!(
            "a block reads {existing} distinct existing slots, the state's contracts \
             have {}: generate more --entries or read fewer",
            hot_slots + random.slots
        )));
    }
    write_hot_blocks(dir, params, &mut ranked, progress)?;

    let hot_meta = HotContractsMeta {
        target_entries: total,
        contracts: params.hot_contracts,
        largest: largest_slots(total),
        sizes: hot_plan.sizes.clone(),
        addresses: hot.iter().map(|(a, _)| Address::from(*a)).collect(),
        slots: hot_slots,
        entries: hot_plan.hot_entries,
        ranked_contracts: ranked.len(),
        zipf_s: params.zipf_s,
        blocks: params.blocks,
        reads_per_block: params.reads_per_block,
        writes_per_block: params.writes_per_block,
        new_slots_per_block: params.new_slots_per_block,
    };
    let meta = WorkloadMeta {
        format: FORMAT,
        name: params.name.clone(),
        mode: "accounts".to_owned(),
        seed,
        description: format!(
            "hot contracts: {} contracts with {hot_slots} slots (largest {}, S1/k), \
             picked by Zipf s = {} over {} ranked contracts; {} blocks of {} slot reads \
             and {} writes ({} new slots); rest: {}",
            params.hot_contracts,
            hot_meta.largest,
            params.zipf_s,
            hot_meta.ranked_contracts,
            params.blocks,
            params.reads_per_block,
            params.writes_per_block,
            params.new_slots_per_block,
            random.describe(&hot_plan.chain)
        ),
        state: StateStorage::File,
        state_records,
        blocks: params.blocks,
        tree_entries: Some(entries),
        erc20: Some(erc20),
        chain: Some(random.meta(&hot_plan.rest, &hot_plan.chain)),
        sequential,
        hot_contracts: Some(hot_meta),
    };
    meta.write(dir)?;
    Ok(HotReport {
        dir: dir.to_owned(),
        meta,
        state_bytes,
    })
}

/// Writes the hot contracts with their slots, after `before` entries of
/// `total`; returns each one's address and slot count.
fn write_hot_contracts(
    out: &mut dyn StateSink,
    seed: u64,
    sizes: &[u64],
    before: u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<([u8; 20], u64)>, BenchError> {
    #[allow(clippy::cast_possible_truncation)] // a constant, 2048
    let mut code = Vec::with_capacity(CODE_LEN_END as usize);
    let mut entries = before;
    let mut hot = Vec::with_capacity(sizes.len());
    for (index, &size) in (0u64..).zip(sizes) {
        let contract = hot_contract(seed, index, &mut code);
        out.account(&contract.address, contract.nonce, contract.balance, &code)?;
        entries += contract.header_entries();
        for slot in 0..size {
            let (key, value) = hot_slot(seed, index, slot);
            out.slot(&contract.address, &key, &value)?;
            entries += 1;
            if entries.is_multiple_of(super::PROGRESS_EVERY) {
                progress(Progress::new(Stage::State, entries, total));
            }
        }
        hot.push((contract.address, size));
    }
    Ok(hot)
}

/// The contracts the blocks pick from, by rank (0 the largest hot
/// contract): their addresses, slot counts and slot keys, recomputed
/// from their streams.
struct Ranked<'a> {
    seed: u64,
    /// Hot contracts: address and slots.
    hot: &'a [([u8; 20], u64)],
    /// The chain-like rest's plan.
    chain: &'a ChainPlan,
    /// Random contracts in the rest.
    chain_contracts: u64,
    /// Scratch for a chain contract's code.
    code: Vec<u8>,
    /// Chain contracts met so far: address and slots.
    known: HashMap<u64, ([u8; 20], u64)>,
}

impl Ranked<'_> {
    /// Contracts in all.
    fn len(&self) -> u64 {
        self.hot.len() as u64 + self.chain_contracts
    }

    /// A hot contract's index, or `Err` with a chain contract's.
    fn index(&self, rank: u64) -> Result<usize, u64> {
        match usize::try_from(rank) {
            Ok(index) if index < self.hot.len() => Ok(index),
            _ => Err(rank.saturating_sub(self.hot.len() as u64)),
        }
    }

    /// Address and slot count of the contract at `rank`.
    fn contract(&mut self, rank: u64) -> ([u8; 20], u64) {
        match self.index(rank) {
            Ok(index) => self.hot[index],
            Err(index) => {
                let (seed, chain, code) = (self.seed, self.chain, &mut self.code);
                *self.known.entry(index).or_insert_with(|| {
                    let (contract, slots, _) = chain_contract(seed, index, chain, code);
                    (contract.address, slots)
                })
            }
        }
    }

    /// Key of slot `slot` (in the state file's order) of the contract at
    /// `rank`.
    fn slot_key(&mut self, rank: u64, slot: u64) -> [u8; 32] {
        match self.index(rank) {
            Ok(index) => hot_slot(self.seed, index as u64, slot).0,
            Err(index) => {
                let (_, _, mut rng) = chain_contract(self.seed, index, self.chain, &mut self.code);
                for _ in 0..slot {
                    draw_slot(&mut rng);
                }
                draw_slot(&mut rng).0
            }
        }
    }
}

/// A Zipf law over ranks `0..n`: rank `r` has probability proportional
/// to `(r + 1)^-s`, drawn by inverting the cumulative weights (one `f64`
/// per rank).
#[derive(Clone, Debug)]
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    /// The law over `n >= 1` ranks with exponent `s`.
    pub fn new(n: u64, s: f64) -> Self {
        let mut sum = 0.0;
        let cumulative = (1..=n.max(1))
            .map(|k| {
                sum += (k as f64).powf(-s);
                sum
            })
            .collect();
        Zipf { cumulative }
    }

    /// The probability of `rank`.
    pub fn probability(&self, rank: u64) -> f64 {
        let Ok(rank) = usize::try_from(rank) else {
            return 0.0;
        };
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let below = rank
            .checked_sub(1)
            .and_then(|r| self.cumulative.get(r))
            .copied()
            .unwrap_or(0.0);
        self.cumulative
            .get(rank)
            .map_or(0.0, |c| (c - below) / total)
    }

    /// A rank drawn from `rng`.
    pub fn sample(&self, rng: &mut GenRng) -> u64 {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let u = rng.unit_open_below() * total;
        let rank = self.cumulative.partition_point(|&c| c < u);
        rank.min(self.cumulative.len() - 1) as u64
    }
}

/// What one access of a block does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Reads an existing slot.
    Read,
    /// Reads an existing slot and stores a new value.
    Update,
    /// Reads a slot that does not exist and stores a value.
    Create,
}

/// `count` of `n` positions spread evenly: whether position `i` is one.
fn spread(i: u64, n: u64, count: u64) -> bool {
    let at = |i: u64| u128::from(i) * u128::from(count) / u128::from(n.max(1));
    at(i + 1) > at(i)
}

/// Access `j` of a block of `params`.
fn access(j: u64, params: &HotParams) -> Access {
    let (r, w) = (params.reads_per_block, params.writes_per_block);
    if !spread(j, r, w) {
        return Access::Read;
    }
    #[allow(clippy::cast_possible_truncation)] // below w, a u64
    let write = (u128::from(j) * u128::from(w) / u128::from(r)) as u64;
    if spread(write, w, params.new_slots_per_block) {
        Access::Create
    } else {
        Access::Update
    }
}

/// Writes `blocks.jsonl`.
fn write_hot_blocks(
    dir: &Path,
    params: &HotParams,
    ranked: &mut Ranked<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), BenchError> {
    let zipf = Zipf::new(ranked.len(), params.zipf_s);
    let mut out = LineWriter::create(&dir.join("blocks.jsonl"))?;
    for number in 1..=params.blocks {
        let (reads, writes) = hot_block(params, ranked, &zipf, number);
        out.block(number, 0, 0, &reads, &writes)?;
        progress(Progress::new(Stage::Blocks, number, params.blocks));
    }
    out.finish()?;
    Ok(())
}

/// The slots a block has taken, per contract rank.
#[derive(Default)]
struct Taken(HashMap<u64, HashSet<u64>>);

impl Taken {
    fn count(&self, rank: u64) -> u64 {
        self.0.get(&rank).map_or(0, |set| set.len() as u64)
    }

    /// A slot of `0..slots` not taken yet at `rank` (some must be free):
    /// uniform draws, then the first free one from the last draw on.
    fn take(&mut self, rank: u64, slots: u64, rng: &mut GenRng) -> u64 {
        let set = self.0.entry(rank).or_default();
        let mut slot = 0;
        for _ in 0..REDRAWS {
            slot = rng.below(slots);
            if set.insert(slot) {
                return slot;
            }
        }
        let free = (0..slots)
            .map(|step| (slot + step) % slots)
            .find(|s| !set.contains(s))
            .unwrap_or(slot);
        set.insert(free);
        free
    }
}

/// The contract rank of an access: Zipf draws until one has a slot the
/// block has not taken (any rank for a new slot), then the best-ranked
/// such contract.
fn pick_rank(
    zipf: &Zipf,
    ranked: &mut Ranked<'_>,
    taken: &Taken,
    kind: Access,
    rng: &mut GenRng,
) -> u64 {
    let open = |rank: u64, ranked: &mut Ranked<'_>| {
        kind == Access::Create || taken.count(rank) < ranked.contract(rank).1
    };
    for _ in 0..REDRAWS {
        let rank = zipf.sample(rng);
        if open(rank, ranked) {
            return rank;
        }
    }
    (0..ranked.len())
        .find(|&rank| open(rank, ranked))
        .unwrap_or(0)
}

/// The reads and writes of block `number`.
fn hot_block(
    params: &HotParams,
    ranked: &mut Ranked<'_>,
    zipf: &Zipf,
    number: u64,
) -> (Vec<String>, Vec<String>) {
    let mut rng = GenRng::stream(params.seed, tag::HOT_BLOCKS, number);
    let mut taken = Taken::default();
    let mut touched = HashSet::new();
    let capacity = usize::try_from(params.reads_per_block).unwrap_or(0);
    let mut reads = Vec::with_capacity(capacity + capacity / 4);
    let mut writes = Vec::with_capacity(capacity / 4);
    for j in 0..params.reads_per_block {
        let kind = access(j, params);
        let rank = pick_rank(zipf, ranked, &taken, kind, &mut rng);
        let (address, slots) = ranked.contract(rank);
        let key = if kind == Access::Create {
            rng.bytes32()
        } else {
            let slot = taken.take(rank, slots, &mut rng);
            ranked.slot_key(rank, slot)
        };
        let address = hex_string(&address);
        if touched.insert(rank) {
            reads.push(format!("a:{address}"));
        }
        let slot = format!("s:{address}:{}", hex_string(&key));
        if kind != Access::Read {
            writes.push(format!("{slot}={}", hex_string(&rng.nonzero_bytes32())));
        }
        reads.push(slot);
    }
    (reads, writes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_s1_over_k() {
        assert_eq!(largest_slots(1_000_000), 100_000);
        assert_eq!(largest_slots(10_000_000), 1_000_000);
        assert_eq!(largest_slots(100_000_000), 1_000_000);
        assert_eq!(largest_slots(5), 1);
        let sizes = hot_sizes(1_000_000, 32);
        assert_eq!(sizes.len(), 32);
        assert_eq!(&sizes[..4], &[100_000, 50_000, 33_333, 25_000]);
        assert_eq!(sizes[31], 3_125);
        assert_eq!(hot_sizes(100, 4), vec![10, 5, 3, 2]);
        assert_eq!(hot_sizes(10, 3), vec![1, 1, 1]);
    }

    #[test]
    fn writes_and_new_slots_are_spread_evenly() {
        let params = HotParams::new(1_000, 1);
        let kinds: Vec<Access> = (0..params.reads_per_block)
            .map(|j| access(j, &params))
            .collect();
        let count = |kind| kinds.iter().filter(|k| **k == kind).count() as u64;
        assert_eq!(count(Access::Create), 64);
        assert_eq!(count(Access::Update), 512 - 64);
        assert_eq!(count(Access::Read), 4_096 - 512);
        // One write in every 8 accesses.
        for chunk in kinds.chunks(8) {
            assert_eq!(chunk.iter().filter(|k| **k != Access::Read).count(), 1);
        }
        let mut all = params.clone();
        all.writes_per_block = all.reads_per_block;
        all.new_slots_per_block = 0;
        assert!((0..all.reads_per_block).all(|j| access(j, &all) == Access::Update));
    }

    #[test]
    #[allow(clippy::cast_possible_truncation)] // ranks below 4
    fn zipf_probabilities_and_draws() {
        let zipf = Zipf::new(4, 1.0);
        let h4 = 1.0 + 0.5 + 1.0 / 3.0 + 0.25;
        assert!((zipf.probability(0) - 1.0 / h4).abs() < 1e-12);
        assert!((zipf.probability(3) - 0.25 / h4).abs() < 1e-12);
        assert_eq!(zipf.probability(4), 0.0);
        let mut rng = GenRng::stream(3, 0, 0);
        let mut counts = [0u64; 4];
        let n = 200_000;
        for _ in 0..n {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        for (rank, &count) in counts.iter().enumerate() {
            let share = count as f64 / n as f64;
            let expected = zipf.probability(rank as u64);
            assert!(
                (share - expected).abs() < 0.005,
                "rank {rank}: {share} vs {expected}"
            );
        }
        assert_eq!(Zipf::new(1, 1.0).sample(&mut rng), 0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let ok = HotParams::new(100_000, 1);
        assert!(hot_plan(&ok).is_ok());
        let mut bad = ok.clone();
        bad.hot_contracts = 0;
        assert!(hot_plan(&bad).is_err());
        let mut bad = ok.clone();
        bad.writes_per_block = bad.reads_per_block + 1;
        assert!(hot_plan(&bad).is_err());
        let mut bad = ok.clone();
        bad.new_slots_per_block = bad.writes_per_block + 1;
        assert!(hot_plan(&bad).is_err());
        let mut bad = ok;
        bad.zipf_s = f64::NAN;
        assert!(hot_plan(&bad).is_err());
    }
}

//! Chain-like state: random externally owned accounts and contracts with a
//! power-law number of storage slots, plus the ERC20 token
//! ([`super::erc20`]), sized by the number of EIP-7864 tree entries.
//!
//! # What is generated
//!
//! * **EOAs**: random 20-byte address, balance uniform in `[0, 1000)` ETH
//!   (in wei), nonce uniform in `[0, 1000)`, no code: 2 tree entries.
//! * **Contracts**: random address, random code of uniform length in
//!   `[1024, 2048)` bytes, balance uniform in `[0, 100)` ETH, nonce uniform
//!   in `[0, 1000)`, and `Pareto(alpha = 1.5, x_min = min_slots)` storage
//!   slots (rounded down, capped at `max_slots = 10 * min_slots`) with
//!   uniformly random 32-byte keys and random non-zero 32-byte values:
//!   2 + `ceil(len / 31)` (about 50) + slots tree entries.
//!
//! # Sizing
//!
//! The token's entries ([`super::erc20::erc20_entries`]) and the
//! sequential-slot contract's ([`super::sequential::sequential_entries`])
//! come first; the rest of `target_entries` is the random state:
//!
//! * [`EOA_SHARE`] (20%) of it goes to EOAs: `round(0.2 * rest / 2)` of them;
//! * contracts fill the remainder: they are generated until their entries
//!   reach it (the last one may overshoot by up to one contract, at most
//!   `69 + max_slots` entries);
//! * `min_slots` is chosen so storage slots are [`SLOTS_PER_CONTRACT_ENTRY`]
//!   (3/4) of the contracts' entries, 60% of the random state, as in a
//!   chain where storage dominates: the capped Pareto mean is
//!   `min_slots * (1 + 2 * (1 - 10^-0.5)) = 2.37 * min_slots` and the
//!   other entries of a contract number about 52, so
//!   `min_slots = round(3 * 52 / 2.37) = 66` (`max_slots` 660). Small
//!   targets lower it so at least [`MIN_CONTRACTS`] contracts fit (never
//!   below 1). The shape therefore does not change with the size: a
//!   10x larger target has 10x the accounts, contracts and slots.
//!
//! Every account draws from its own stream (`(seed, EOA, i)`,
//! `(seed, CONTRACT, i)`), so a record depends on the seed and its index
//! only.

use std::path::{Path, PathBuf};

use ubt_spec::chunk::CHUNK_CODE_BYTES;

use super::erc20::{erc20_entries, erc20_meta, write_erc20, ETHER};
use super::meta::{ChainMeta, Erc20Meta, SequentialMeta, StateStorage, WorkloadMeta, FORMAT};
use super::rng::GenRng;
use super::sequential::{sequential_entries, sequential_meta, write_sequential};
use super::sink::{CountingSink, StateSink};
use super::write::LineWriter;
use super::{tag, Progress, Stage, PROGRESS_EVERY};
use crate::BenchError;

/// Share of the random state's tree entries in EOAs.
pub const EOA_SHARE: f64 = 0.2;
/// Storage slots per contract entry the `min_slots` rule aims at.
pub const SLOTS_PER_CONTRACT_ENTRY: f64 = 0.75;
/// Pareto shape of slots per contract.
pub const PARETO_ALPHA: f64 = 1.5;
/// `max_slots = MAX_SLOTS_FACTOR * min_slots`.
pub const MAX_SLOTS_FACTOR: u64 = 10;
/// Contracts a small target still gets (by lowering `min_slots`).
pub const MIN_CONTRACTS: u64 = 16;
/// Shortest contract code in bytes.
pub const CODE_LEN_MIN: u64 = 1024;
/// Longest contract code in bytes, exclusive.
pub const CODE_LEN_END: u64 = 2048;
/// EOA balances are below this many ETH.
pub const EOA_BALANCE_ETH: u128 = 1000;
/// Contract balances are below this many ETH.
pub const CONTRACT_BALANCE_ETH: u128 = 100;
/// Nonces are below this.
pub const NONCE_END: u64 = 1000;

/// What [`gen_chain`] generates.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainParams {
    /// The workload's name in `workload.json`.
    pub name: String,
    /// Tree entries to aim at, the token's included.
    pub target_entries: u64,
    /// The seed.
    pub seed: u64,
    /// The token's holders.
    pub holders: u64,
    /// Share of the random state's entries in EOAs ([`EOA_SHARE`]).
    pub eoa_share: f64,
    /// Pareto `x_min` of slots per contract; `None` for the rule in the
    /// module documentation.
    pub min_slots: Option<u64>,
    /// Preset slots of the sequential-slot contract
    /// ([`super::sequential`]); 0 leaves the contract out.
    pub sequential_slots: u64,
    /// Where the state goes: `state.jsonl`, or nowhere (regenerated from
    /// `workload.json` whenever it is read, [`super::generated`]).
    pub storage: StateStorage,
}

/// Preset slots of the sequential-slot contract by default: enough for
/// six 16.7M-gas load blocks (7,800 slots each) or one 100M-gas block.
pub const DEFAULT_SEQUENTIAL_SLOTS: u64 = 50_000;

impl ChainParams {
    /// Parameters named `chain` with the default mix and `min_slots` rule.
    pub fn new(target_entries: u64, seed: u64, holders: u64) -> Self {
        ChainParams {
            name: "chain".to_owned(),
            target_entries,
            seed,
            holders,
            eoa_share: EOA_SHARE,
            min_slots: None,
            sequential_slots: DEFAULT_SEQUENTIAL_SLOTS,
            storage: StateStorage::File,
        }
    }

    /// The parameters a chain-like state's `workload.json` was generated
    /// with, `None` if it is not a chain-like state. [`plan`] gives the
    /// same split from them (`min_slots` is stored, not derived again).
    pub fn of_meta(meta: &WorkloadMeta) -> Option<Self> {
        let chain = meta.chain.as_ref()?;
        let erc20 = meta.erc20.as_ref()?;
        Some(ChainParams {
            name: meta.name.clone(),
            target_entries: chain.target_entries,
            seed: meta.seed,
            holders: erc20.holders,
            eoa_share: chain.eoa_share,
            min_slots: Some(chain.min_slots),
            sequential_slots: meta.sequential.as_ref().map_or(0, |s| s.slots),
            storage: meta.state,
        })
    }
}

/// How the target is split ([`plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainPlan {
    /// Entries of the token and its actors.
    pub erc20_entries: u64,
    /// Entries of the sequential-slot contract.
    pub sequential_entries: u64,
    /// Random EOAs.
    pub eoas: u64,
    /// Entries the random contracts fill.
    pub contract_budget: u64,
    /// Pareto `x_min` of slots per contract.
    pub min_slots: u64,
    /// Cap of slots per contract.
    pub max_slots: u64,
}

/// Mean code chunks of a random contract (code length uniform in
/// `[CODE_LEN_MIN, CODE_LEN_END)`).
fn mean_code_chunks() -> f64 {
    let total: u64 = (CODE_LEN_MIN..CODE_LEN_END)
        .map(|len| len.div_ceil(CHUNK_CODE_BYTES as u64))
        .sum();
    total as f64 / (CODE_LEN_END - CODE_LEN_MIN) as f64
}

/// `E[min(X, cap)] / x_min` for `X ~ Pareto(alpha, x_min)` and
/// `cap = MAX_SLOTS_FACTOR * x_min`.
fn capped_pareto_mean_factor() -> f64 {
    let c = MAX_SLOTS_FACTOR as f64;
    1.0 + (1.0 - c.powf(1.0 - PARETO_ALPHA)) / (PARETO_ALPHA - 1.0)
}

/// The `min_slots` rule (module documentation) for a contract budget.
pub fn min_slots_for(contract_budget: u64) -> u64 {
    let overhead = 2.0 + mean_code_chunks();
    let factor = capped_pareto_mean_factor();
    let ratio = SLOTS_PER_CONTRACT_ENTRY / (1.0 - SLOTS_PER_CONTRACT_ENTRY);
    let by_share = (ratio * overhead / factor).round();
    let per_contract = contract_budget as f64 / MIN_CONTRACTS as f64;
    let by_count = ((per_contract - overhead) / factor).floor();
    #[allow(clippy::cast_possible_truncation)] // float-to-int `as` saturates; at least 1
    let slots = by_share.min(by_count).max(1.0) as u64;
    slots
}

/// How `params` splits its target.
pub fn plan(params: &ChainParams) -> ChainPlan {
    let erc20 = erc20_entries(params.holders);
    let sequential = if params.sequential_slots > 0 {
        sequential_entries(params.sequential_slots)
    } else {
        0
    };
    let rest = params.target_entries.saturating_sub(erc20 + sequential);
    #[allow(clippy::cast_possible_truncation)] // at most rest / 2
    let eoas = (rest as f64 * params.eoa_share.clamp(0.0, 1.0) / 2.0).round() as u64;
    let contract_budget = rest.saturating_sub(2 * eoas);
    let min_slots = params
        .min_slots
        .unwrap_or_else(|| min_slots_for(contract_budget))
        .max(1);
    ChainPlan {
        erc20_entries: erc20,
        sequential_entries: sequential,
        eoas,
        contract_budget,
        min_slots,
        max_slots: MAX_SLOTS_FACTOR * min_slots,
    }
}

/// What [`gen_chain`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainReport {
    /// The workload directory.
    pub dir: PathBuf,
    /// Its `workload.json`.
    pub meta: WorkloadMeta,
    /// Size of `state.jsonl` in bytes.
    pub state_bytes: u64,
}

/// Writes a chain-like workload into `dir`: the state (the token's
/// records, then the EOAs, then each contract followed by its slots) in
/// `state.jsonl`, or, with [`StateStorage::Generated`], nowhere (the
/// state is generated once to count it); an empty `blocks.jsonl` (the
/// ERC20 blocks come from executing the token workloads over this state)
/// and `workload.json` with the `erc20` and `chain` objects. The same
/// parameters give byte-identical files.
pub fn gen_chain(
    dir: &Path,
    params: &ChainParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<ChainReport, BenchError> {
    std::fs::create_dir_all(dir).map_err(|e| BenchError::io_at("create", dir, e))?;
    let state_path = dir.join("state.jsonl");
    let (state, state_records, state_bytes) = match params.storage {
        StateStorage::File => {
            let mut out = LineWriter::create(&state_path)?;
            let state = write_chain_state(&mut out, params, progress)?;
            let (records, bytes) = out.finish()?;
            (state, records, bytes)
        }
        StateStorage::Generated => {
            // A stale file would contradict workload.json.
            match std::fs::remove_file(&state_path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(BenchError::io_at("removing", &state_path, e));
                }
                _ => {}
            }
            let mut counted = CountingSink::default();
            let state = write_chain_state(&mut counted, params, progress)?;
            (state, counted.records, 0)
        }
    };
    LineWriter::create(&dir.join("blocks.jsonl"))?.finish()?;

    let meta = WorkloadMeta {
        format: FORMAT,
        name: params.name.clone(),
        mode: "accounts".to_owned(),
        seed: params.seed,
        description: format!(
            "chain-like state: {}; ERC20 token with {} holders; \
             sequential-slot contract with {} preset slots",
            state.random.describe(&state.plan),
            params.holders,
            params.sequential_slots
        ),
        state: params.storage,
        state_records,
        blocks: 0,
        tree_entries: Some(state.entries),
        erc20: Some(state.erc20),
        chain: Some(state.random.meta(params, &state.plan)),
        sequential: state.sequential,
        hot_contracts: None,
    };
    meta.write(dir)?;
    Ok(ChainReport {
        dir: dir.to_owned(),
        meta,
        state_bytes,
    })
}

/// What [`write_chain_state`] generated.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ChainState {
    /// The token and its actors.
    pub erc20: Erc20Meta,
    /// The sequential-slot contract, if it has slots.
    pub sequential: Option<SequentialMeta>,
    /// How the target was split.
    pub plan: ChainPlan,
    /// The random accounts.
    pub random: RandomState,
    /// Tree entries in all.
    pub entries: u64,
}

/// Generates the chain-like state of `params` into `sink`, in the order
/// `state.jsonl` holds it (progress in tree entries).
pub(crate) fn write_chain_state(
    sink: &mut dyn StateSink,
    params: &ChainParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<ChainState, BenchError> {
    let plan = plan(params);
    let total = params.target_entries;
    let (erc20, sequential, mut entries) = write_studies_contracts(sink, params, total, progress)?;
    let random = write_random_state(sink, params.seed, &plan, entries, total, progress)?;
    entries += random.entries;
    progress(Progress::new(Stage::State, entries, total));
    Ok(ChainState {
        erc20,
        sequential,
        plan,
        random,
        entries,
    })
}

/// Writes the studies' contracts `params` asks for: the ERC20 token and
/// its actors, then the sequential-slot contract if it has slots (progress
/// out of `total` entries). Returns their descriptions and the tree
/// entries written.
pub(crate) fn write_studies_contracts(
    out: &mut dyn StateSink,
    params: &ChainParams,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Erc20Meta, Option<SequentialMeta>, u64), BenchError> {
    let seed = params.seed;
    let erc20 = erc20_meta(seed, params.holders);
    let mut entries = write_erc20(out, &erc20, progress, total)?;
    let sequential =
        (params.sequential_slots > 0).then(|| sequential_meta(seed, params.sequential_slots));
    if let Some(meta) = &sequential {
        entries += write_sequential(out, meta, progress, entries, total)?;
    }
    Ok((erc20, sequential, entries))
}

/// What [`write_random_state`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RandomState {
    /// Random contracts.
    pub contracts: u64,
    /// Their storage slots.
    pub slots: u64,
    /// Their code chunks.
    pub code_chunks: u64,
    /// Tree entries of the EOAs and the contracts.
    pub entries: u64,
}

impl RandomState {
    /// The description's words on the random accounts.
    pub fn describe(&self, plan: &ChainPlan) -> String {
        format!(
            "{} EOAs, {} contracts with {} slots (Pareto alpha {PARETO_ALPHA}, {}..={} per contract)",
            plan.eoas, self.contracts, self.slots, plan.min_slots, plan.max_slots
        )
    }

    /// The `chain` object of `workload.json`.
    pub fn meta(&self, params: &ChainParams, plan: &ChainPlan) -> ChainMeta {
        ChainMeta {
            target_entries: params.target_entries,
            eoa_share: params.eoa_share,
            eoas: plan.eoas,
            contracts: self.contracts,
            slots: self.slots,
            code_chunks: self.code_chunks,
            min_slots: plan.min_slots,
            max_slots: plan.max_slots,
            erc20_entries: plan.erc20_entries,
            sequential_entries: plan.sequential_entries,
        }
    }
}

/// A random contract's account fields, drawn from the start of its
/// stream; its code is left in the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ContractDraw {
    /// Its address.
    pub address: [u8; 20],
    /// Its nonce.
    pub nonce: u64,
    /// Its balance in wei.
    pub balance: u128,
    /// Its code length in bytes.
    pub code_len: u64,
}

impl ContractDraw {
    /// Tree entries of the account without its storage: two header
    /// leaves and the code chunks.
    pub fn header_entries(&self) -> u64 {
        2 + self.code_chunks()
    }

    /// Code chunks of its code.
    pub fn code_chunks(&self) -> u64 {
        self.code_len.div_ceil(CHUNK_CODE_BYTES as u64)
    }
}

/// Draws a random contract (address, code of uniform length in
/// `[CODE_LEN_MIN, CODE_LEN_END)` into `code`, balance, nonce) from `rng`.
pub(crate) fn draw_contract(rng: &mut GenRng, code: &mut Vec<u8>) -> ContractDraw {
    let address = rng.bytes20();
    let code_len = CODE_LEN_MIN + rng.below(CODE_LEN_END - CODE_LEN_MIN);
    #[allow(clippy::cast_possible_truncation)] // below CODE_LEN_END (2048)
    code.resize(code_len as usize, 0);
    rng.fill(code);
    let balance = rng.below_u128(CONTRACT_BALANCE_ETH * ETHER);
    let nonce = rng.below(NONCE_END);
    ContractDraw {
        address,
        nonce,
        balance,
        code_len,
    }
}

/// A storage slot's random key and random non-zero value.
pub(crate) fn draw_slot(rng: &mut GenRng) -> ([u8; 32], [u8; 32]) {
    (rng.bytes32(), rng.nonzero_bytes32())
}

/// Random contract `index` of `plan`: its account, its slot count, and its
/// stream positioned at its first slot ([`draw_slot`] gives the slots in
/// order).
pub(crate) fn chain_contract(
    seed: u64,
    index: u64,
    plan: &ChainPlan,
    code: &mut Vec<u8>,
) -> (ContractDraw, u64, GenRng) {
    let mut rng = GenRng::stream(seed, tag::CONTRACT, index);
    let contract = draw_contract(&mut rng, code);
    let slot_count = rng.pareto(PARETO_ALPHA, plan.min_slots, plan.max_slots);
    (contract, slot_count, rng)
}

/// Writes the random part of a chain-like state, after `before` entries
/// of `total`: `plan.eoas` EOAs, then contracts with their slots until
/// their entries reach `plan.contract_budget`.
pub(crate) fn write_random_state(
    out: &mut dyn StateSink,
    seed: u64,
    plan: &ChainPlan,
    before: u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<RandomState, BenchError> {
    let mut entries = before;
    let mut next_report = entries + PROGRESS_EVERY;
    let mut report = |entries: u64, progress: &mut dyn FnMut(Progress)| {
        if entries >= next_report {
            progress(Progress::new(Stage::State, entries, total));
            next_report = entries + PROGRESS_EVERY;
        }
    };
    for i in 0..plan.eoas {
        let mut rng = GenRng::stream(seed, tag::EOA, i);
        let address = rng.bytes20();
        let balance = rng.below_u128(EOA_BALANCE_ETH * ETHER);
        let nonce = rng.below(NONCE_END);
        out.account(&address, nonce, balance, &[])?;
        entries += 2;
        report(entries, progress);
    }

    let mut written = RandomState::default();
    let mut contract_entries = 0;
    #[allow(clippy::cast_possible_truncation)] // a constant, 2048
    let mut code = Vec::with_capacity(CODE_LEN_END as usize);
    while contract_entries < plan.contract_budget {
        let (contract, slot_count, mut rng) =
            chain_contract(seed, written.contracts, plan, &mut code);
        out.account(&contract.address, contract.nonce, contract.balance, &code)?;
        for _ in 0..slot_count {
            let (key, value) = draw_slot(&mut rng);
            out.slot(&contract.address, &key, &value)?;
        }
        written.contracts += 1;
        written.slots += slot_count;
        written.code_chunks += contract.code_chunks();
        contract_entries += contract.header_entries() + slot_count;
        entries += contract.header_entries() + slot_count;
        report(entries, progress);
    }
    written.entries = entries - before;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_min_slots_rule() {
        // 3 * (2 + 50.05) / 2.3675 = 65.96.
        assert_eq!(min_slots_for(800_000), 66);
        assert_eq!(min_slots_for(100_000_000), 66);
        // 16 contracts of (52 + 2.37 m) entries in 4,000: m = 83 -> rule 66;
        // in 2,000: m = floor((125 - 52) / 2.37) = 30.
        assert_eq!(min_slots_for(2_000), 30);
        assert_eq!(min_slots_for(10), 1);
    }

    #[test]
    fn the_plan_splits_the_target() {
        let params = ChainParams::new(1_000_000, 1, 1_000);
        let plan = plan(&params);
        let rest = 1_000_000 - plan.erc20_entries - plan.sequential_entries;
        assert_eq!(plan.eoas as f64, (rest as f64 * 0.1).round());
        assert_eq!(plan.contract_budget, rest - 2 * plan.eoas);
        assert_eq!((plan.min_slots, plan.max_slots), (66, 660));
        let tiny = super::plan(&ChainParams::new(10, 1, 100));
        assert_eq!((tiny.eoas, tiny.contract_budget), (0, 0));
    }
}

//! `workload.json`: what a workload directory holds (docs/workload-format.md),
//! with the generator's extra fields.

use std::path::Path;
use std::str::FromStr;

use alloy_primitives::Address;
use serde::{Deserialize, Serialize};
use ubt_evm::workloads::Erc20Actors;

use crate::BenchError;

/// The `format` this generator writes.
pub const FORMAT: u32 = 1;

/// The contents of `workload.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadMeta {
    /// Format version ([`FORMAT`]).
    pub format: u32,
    /// The workload's name, e.g. `raw_reads`.
    pub name: String,
    /// `"accounts"` or `"raw"`.
    pub mode: String,
    /// The generator's seed.
    pub seed: u64,
    /// One line on what the workload is.
    pub description: String,
    /// Where the state is: `state.jsonl` (absent from the file) or
    /// regenerated from this file's recipe ([`StateStorage`]).
    #[serde(default, skip_serializing_if = "StateStorage::is_file")]
    pub state: StateStorage,
    /// Records of the state (lines of `state.jsonl` when it is a file).
    pub state_records: u64,
    /// Lines of `blocks.jsonl`.
    pub blocks: u64,
    /// EIP-7864 leaves the state makes (distinct tree keys), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_entries: Option<u64>,
    /// The ERC20 token and its actors, for workloads that hold one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erc20: Option<Erc20Meta>,
    /// How a chain-like state was sized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainMeta>,
    /// The sequential-slot contract, for workloads that hold one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialMeta>,
    /// The hot contracts and the blocks over them, for a hot-contracts
    /// state ([`crate::gen::hot`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_contracts: Option<HotContractsMeta>,
}

impl WorkloadMeta {
    /// Reads `<dir>/workload.json`.
    pub fn read(dir: &Path) -> Result<Self, BenchError> {
        let path = dir.join("workload.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| BenchError::io_at("read", &path, e))?;
        serde_json::from_str(&text).map_err(|e| BenchError::Workload {
            path: path.display().to_string(),
            line: e.line() as u64,
            message: e.to_string(),
        })
    }

    /// Writes `<dir>/workload.json` (pretty-printed, newline-terminated).
    pub fn write(&self, dir: &Path) -> Result<(), BenchError> {
        let path = dir.join("workload.json");
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| BenchError::io_at("serialize", &path, e.into()))?;
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| BenchError::io_at("write", &path, e))
    }
}

/// Where a workload's state is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateStorage {
    /// In the directory's `state.jsonl`.
    #[default]
    File,
    /// Nowhere on disk: regenerated, record for record, from the seed and
    /// the `chain`, `erc20` and `sequential` objects whenever it is read
    /// (`crate::gen::generated`). Chain-like states only.
    Generated,
}

impl StateStorage {
    /// The state is a file (the default, left out of `workload.json`).
    pub fn is_file(&self) -> bool {
        *self == StateStorage::File
    }
}

/// The `erc20` object: where the token workload's accounts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Erc20Meta {
    /// The token (`ubt_evm::erc20::token_code`).
    #[serde(with = "hex_address")]
    pub token: Address,
    /// The attack contract (`ubt_evm::attack::attack_code`).
    #[serde(with = "hex_address")]
    pub attack: Address,
    /// The funded externally owned sender of the attack transactions.
    #[serde(with = "hex_address")]
    pub sender: Address,
    /// The owner of the pre-filled allowances (`allowance[bloater][address(i)] = i`).
    #[serde(with = "hex_address")]
    pub bloater: Address,
    /// Holders: `balanceOf[address(i)] = i` for `i` in `1..=holders`.
    pub holders: u64,
}

impl Erc20Meta {
    /// The actors `ubt_evm::workloads` builds transactions for.
    pub fn actors(&self) -> Erc20Actors {
        Erc20Actors {
            sender: self.sender,
            attack: self.attack,
            token: self.token,
        }
    }
}

/// The `sequential` object: the contract of the sequential SLOAD/SSTORE
/// workloads (`ubt_evm::sequential`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequentialMeta {
    /// The contract (`ubt_evm::sequential::sequential_code`).
    #[serde(with = "hex_address")]
    pub contract: Address,
    /// Slots `1..=slots` hold `slot + 1`.
    pub slots: u64,
}

/// The `chain` object: the sizing of a chain-like state
/// ([`crate::gen::chain`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainMeta {
    /// Tree entries asked for (token included).
    pub target_entries: u64,
    /// Share of the random state's entries given to externally owned accounts.
    pub eoa_share: f64,
    /// Externally owned accounts (random ones; the token's sender and
    /// bloater are counted in `erc20_entries`).
    pub eoas: u64,
    /// Random contracts.
    pub contracts: u64,
    /// Storage slots of the random contracts.
    pub slots: u64,
    /// Code chunks of the random contracts.
    pub code_chunks: u64,
    /// Pareto `x_min` of slots per contract.
    pub min_slots: u64,
    /// Cap of slots per contract (`10 * min_slots`).
    pub max_slots: u64,
    /// Tree entries of the token, the attack contract, the sender and
    /// the bloater.
    pub erc20_entries: u64,
    /// Tree entries of the sequential-slot contract.
    #[serde(default)]
    pub sequential_entries: u64,
}

/// The `hot_contracts` object: the hot contracts of a hot-contracts state
/// and the shape of its blocks ([`crate::gen::hot`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotContractsMeta {
    /// Tree entries asked for, the whole state's.
    pub target_entries: u64,
    /// Hot contracts (`H`).
    pub contracts: u64,
    /// Slots of the largest (`S1 = min(1,000,000, target_entries / 10)`).
    pub largest: u64,
    /// Slots of each hot contract, largest first: `max(1, floor(S1 / k))`
    /// for `k` in `1..=H`.
    pub sizes: Vec<u64>,
    /// Their addresses, in the order of `sizes`.
    #[serde(with = "hex_addresses")]
    pub addresses: Vec<Address>,
    /// Slots of all hot contracts.
    pub slots: u64,
    /// Tree entries of all hot contracts (headers, code chunks, slots).
    pub entries: u64,
    /// Contracts the blocks pick from by rank: the hot ones, then the
    /// random contracts of the rest of the state.
    pub ranked_contracts: u64,
    /// Exponent of the Zipf law over the ranks.
    pub zipf_s: f64,
    /// Blocks in `blocks.jsonl`.
    pub blocks: u64,
    /// Distinct slots each block reads (the written ones included).
    pub reads_per_block: u64,
    /// Slots each block writes, among the ones it reads.
    pub writes_per_block: u64,
    /// Of the writes, slots that did not exist (new random keys).
    pub new_slots_per_block: u64,
}

/// Lowercase `0x` hex for lists of addresses.
mod hex_addresses {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[Address], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            list.iter()
                .map(|a| crate::gen::write::hex_string(a.as_slice())),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Address>, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        texts
            .iter()
            .map(|text| Address::from_str(text).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// Lowercase `0x` hex for addresses (the format's spelling).
mod hex_address {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(address: &Address, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::gen::write::hex_string(address.as_slice()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Address, D::Error> {
        let text = String::deserialize(deserializer)?;
        Address::from_str(&text).map_err(serde::de::Error::custom)
    }
}

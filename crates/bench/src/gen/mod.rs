//! The workload generator: deterministic workload directories
//! (docs/workload-format.md) for a seed, written as streams (memory does
//! not grow with the number of records), and the conversion of a state
//! file into sorted EIP-7864 tree entries.
//!
//! * [`gen_raw`] ([`raw`]): random 32-byte keys and values, with
//!   `raw_reads/` and `raw_writes/` blocks over them.
//! * [`gen_chain`] ([`chain`]): a chain-like state of EOAs and contracts
//!   with power-law storage, sized in tree entries, plus the studies'
//!   ERC20 token ([`erc20`]), its attack contract and sender, and the
//!   sequential-slot contract ([`sequential`]).
//! * [`gen_hot_contracts`] ([`hot`]): a few hot contracts with 10^5 to
//!   10^6 slots (sizes `S1 / k`) beside a chain-like state, and blocks
//!   that pick contracts by a Zipf law over their ranks and slots
//!   uniformly within each.
//! * [`RandomPairs`] ([`pairs`]): N random keys and values in ascending
//!   key order, in bounded memory, for `ubt bench store`.
//! * [`tree_entries`], [`logical_root`], [`read_codes`] ([`convert`]):
//!   `state.jsonl` to the sorted leaf stream `ubt_engine::Db::build`
//!   takes, its root, and the code the EVM needs.
//! * [`GeneratedItems`], [`generated_codes`] ([`generated`]): a chain-like
//!   state written nowhere ([`StateStorage::Generated`]), generated again
//!   from `workload.json` whenever it is read.
//! * [`WorkloadMeta`] ([`meta`]): `workload.json`, read and written.
//!
//! Randomness comes from [`rng::GenRng`] streams named by seed, part and
//! index: the same parameters give byte-identical files, and each record
//! (raw key `i`, EOA `i`, contract `i`) depends only on the seed and its
//! index, whatever the sizes asked for.

pub mod chain;
pub mod convert;
pub mod erc20;
pub mod generated;
pub mod hot;
pub mod meta;
pub mod pairs;
pub mod raw;
pub mod rng;
pub mod sequential;
pub(crate) mod sink;
pub(crate) mod write;

use std::fmt;

pub use chain::{gen_chain, ChainParams, ChainReport};
pub use convert::{
    logical_root, read_codes, tree_entries, StateItems, StateItemsProbe, StateRecord, TreeEntries,
};
pub use erc20::{erc20_entries, erc20_meta};
pub use generated::{generated_codes, GeneratedItems, GeneratedProbe};
pub use hot::{gen_hot_contracts, HotParams, HotReport};
pub use meta::{
    ChainMeta, Erc20Meta, HotContractsMeta, SequentialMeta, StateStorage, WorkloadMeta,
};
pub use pairs::{RandomPairs, SortedPairs};
pub use raw::{gen_raw, RawBlocks, RawReport};
pub use sequential::{sequential_entries, sequential_meta};

/// Stream tags: one per part of a workload.
pub(crate) mod tag {
    /// Raw key `i` and its value.
    pub const RAW_STATE: u64 = 1;
    /// Raw read block `n`.
    pub const RAW_READS: u64 = 2;
    /// Raw write block `n`.
    pub const RAW_WRITES: u64 = 3;
    /// Chain EOA `i`.
    pub const EOA: u64 = 10;
    /// Chain contract `i`.
    pub const CONTRACT: u64 = 11;
    /// The ERC20 token's addresses.
    pub const ERC20: u64 = 12;
    /// The sequential-slot contract's address.
    pub const SEQUENTIAL: u64 = 13;
    /// Hot contract `k`'s account.
    pub const HOT_CONTRACT: u64 = 14;
    /// Slot `i` of hot contract `k` (index `k << 40 | i`).
    pub const HOT_SLOT: u64 = 15;
    /// Hot-contracts block `n`.
    pub const HOT_BLOCKS: u64 = 16;
}

/// Records between two progress reports while writing state.
pub(crate) const PROGRESS_EVERY: u64 = 1 << 16;

/// What the generator or the converter is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Writing `state.jsonl`; counts are tree entries (the total is the
    /// target, which the last contract may overshoot).
    State,
    /// Writing `blocks.jsonl`; counts are blocks.
    Blocks,
    /// Reading `state.jsonl`; counts are bytes.
    Read,
    /// Sorting tree entries; counts are entries (0 at the start, all at the end).
    Sort,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::State => "state",
            Stage::Blocks => "blocks",
            Stage::Read => "read",
            Stage::Sort => "sort",
        })
    }
}

/// A progress report: `done` of `total` in the stage's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The stage.
    pub stage: Stage,
    /// Done so far.
    pub done: u64,
    /// Expected in all.
    pub total: u64,
}

impl Progress {
    /// A report.
    pub fn new(stage: Stage, done: u64, total: u64) -> Self {
        Progress { stage, done, total }
    }
}

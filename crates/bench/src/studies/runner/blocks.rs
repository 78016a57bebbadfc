//! The blocks of a run: transactions the EVM executes (built from the
//! workload and the state's ERC20 and sequential contracts), or the
//! recorded accesses of a `blocks.jsonl` to replay.

use std::io::BufReader;
use std::path::Path;

use alloy_primitives::Address;
use serde::{Deserialize, Serialize};
use ubt_evm::sequential::{
    sequential_tx, slots_for_gas, LOAD_ITERATION_GAS, SSTORE_CHANGE_GAS, STORE_OVERHEAD_GAS,
};
use ubt_evm::workloads::{approve_block, balanceof_block, mixed_tx, BlockShape, Erc20Actors};
use ubt_evm::{ReadRecord, TxSpec, WriteRecord};

use super::kind::Workload;
use crate::BenchError;

/// What a state offers the EVM workloads (from its `workload.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvmSetup {
    /// The ERC20 sender, attack contract and token.
    pub actors: Erc20Actors,
    /// Holders `address(1..=holders)` with a balance.
    pub holders: u64,
    /// The sequential-slot contract and how many slots (`1..=slots`) it
    /// has preset, if the state has one.
    pub sequential: Option<(Address, u64)>,
}

/// The transactions of `count` consecutive blocks of `workload` (one
/// transaction per block, as in the studies), each block continuing the
/// previous one's counter: different keys in every block of a run, the
/// same keys in every run.
pub fn evm_blocks(
    workload: Workload,
    setup: &EvmSetup,
    shape: BlockShape,
    count: u64,
) -> Result<Vec<Vec<TxSpec>>, BenchError> {
    let actors = &setup.actors;
    let mut start = 1u64;
    let mut blocks = Vec::new();
    for _ in 0..count {
        let (tx, next) = match workload {
            Workload::Erc20BalanceOf => {
                let (tx, plan) = balanceof_block(actors, start, shape);
                need_holders(setup, plan.end() - 1, workload)?;
                (tx, plan.end())
            }
            Workload::Erc20Approve => {
                let (tx, plan) = approve_block(actors, start, shape);
                (tx, plan.end())
            }
            Workload::Erc20Mixed {
                sload_pct,
                sstore_pct,
            } => {
                let (tx, plan) = mixed_tx(actors, start, sload_pct, sstore_pct, shape.gas());
                need_holders(setup, plan.start + plan.balanceof_calls - 1, workload)?;
                (tx, plan.end())
            }
            Workload::SloadSeq | Workload::SstoreSeq => {
                let (contract, preset) = setup.sequential.ok_or_else(|| {
                    invalid(format!(
                        "{workload} needs the sequential contract: generate the state with \
                     `ubt bench gen --mode chain` (its workload.json has no \"sequential\")"
                    ))
                })?;
                let (n, offset) = if workload == Workload::SloadSeq {
                    (slots_for_gas(shape.gas(), LOAD_ITERATION_GAS), None)
                } else {
                    let per_slot = STORE_OVERHEAD_GAS + SSTORE_CHANGE_GAS;
                    // Offset 2: preset slot s holds s + 1, so every store changes it.
                    (slots_for_gas(shape.gas(), per_slot), Some(2))
                };
                if start + n - 1 > preset {
                    return Err(invalid(format!(
                        "{workload}: {count} blocks of {n} slots need {} preset slots, \
                         the state has {preset}: run fewer blocks or generate with more \
                         --sequential-slots",
                        count * n
                    )));
                }
                let tx = sequential_tx(actors.sender, contract, n, start, offset, shape.gas());
                (tx, start + n)
            }
            Workload::Replay | Workload::HotContracts => {
                return Err(invalid(format!(
                    "{workload} blocks come from blocks.jsonl, not from the EVM"
                )))
            }
        };
        blocks.push(vec![tx]);
        start = next;
    }
    Ok(blocks)
}

fn need_holders(setup: &EvmSetup, last: u64, workload: Workload) -> Result<(), BenchError> {
    if last > setup.holders {
        return Err(invalid(format!(
            "{workload} reads holders up to address({last}) but the token has {}: \
             run fewer blocks or generate with more --holders",
            setup.holders
        )));
    }
    Ok(())
}

fn invalid(what: String) -> BenchError {
    BenchError::InvalidOptions { what }
}

/// One line of `blocks.jsonl` (docs/workload-format.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockLine {
    /// Block number, from 1.
    pub block: u64,
    /// Gas the EVM used.
    pub gas_used: u64,
    /// Transactions.
    pub txs: u64,
    /// Reads in the order made (`a:`, `s:`, `r:` records).
    pub reads: Vec<String>,
    /// Final state changes (`a:`, `s:`, `r:` records).
    pub writes: Vec<String>,
}

/// A block to replay: its line, parsed.
#[derive(Clone, Debug)]
pub struct ReplayBlock {
    /// Block number.
    pub block: u64,
    /// Gas the EVM used when it was recorded (0 for raw workloads).
    pub gas_used: u64,
    /// Transactions.
    pub txs: u64,
    /// The reads.
    pub reads: Vec<ReadRecord>,
    /// The writes.
    pub writes: Vec<WriteRecord>,
}

/// Longest `blocks.jsonl` line accepted (a 100M-gas block's reads and
/// writes take a few MB).
pub const BLOCK_LINE_BYTES_MAX: usize = 256 << 20;

/// Reads and parses a `blocks.jsonl`; an error names the file and line.
pub fn read_blocks(path: &Path) -> Result<Vec<ReplayBlock>, BenchError> {
    let file = std::fs::File::open(path).map_err(|e| BenchError::io_at("opening", path, e))?;
    let mut blocks = Vec::new();
    for (index, line) in
        crate::formats::lines::bounded_lines(BufReader::new(file), BLOCK_LINE_BYTES_MAX).enumerate()
    {
        let bad = |message: String| BenchError::Metrics {
            source_name: path.display().to_string(),
            line: index + 1,
            message,
        };
        let line = line.map_err(|e| bad(format!("unreadable: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: BlockLine =
            serde_json::from_str(&line).map_err(|e| bad(format!("not a block: {e}")))?;
        let reads = parsed
            .reads
            .iter()
            .map(|r| r.parse::<ReadRecord>().map_err(|e| bad(e.to_string())))
            .collect::<Result<_, _>>()?;
        let writes = parsed
            .writes
            .iter()
            .map(|w| w.parse::<WriteRecord>().map_err(|e| bad(e.to_string())))
            .collect::<Result<_, _>>()?;
        blocks.push(ReplayBlock {
            block: parsed.block,
            gas_used: parsed.gas_used,
            txs: parsed.txs,
            reads,
            writes,
        });
    }
    Ok(blocks)
}

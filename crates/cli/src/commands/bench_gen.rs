//! `ubt bench gen`: writes a generated state directory.

use std::path::Path;

use ubt_bench::gen::hot::{DEFAULT_WRITES_PER_BLOCK, NEW_SLOT_DIVISOR};
use ubt_bench::gen::{
    gen_chain, gen_hot_contracts, gen_raw, ChainParams, HotParams, RawBlocks, StateStorage,
};

use crate::cli::{GenArgs, GenMode, StateArg};
use crate::error::CliError;
use crate::output;
use crate::progress::PhaseBars;

/// ERC20 holders in chain mode by default (the group-depth study's token).
const CHAIN_HOLDERS: u64 = 167_772;
/// Preset slots of the sequential-slot contract in chain mode by default.
const CHAIN_SEQUENTIAL_SLOTS: u64 = 150_000;
/// Keys a raw write block updates by default.
const RAW_WRITES_PER_BLOCK: u64 = 4096;

/// Runs `ubt bench gen`.
pub fn run(args: &GenArgs) -> Result<(), CliError> {
    if args.entries == 0 {
        return Err(CliError::Argument("--entries must be at least 1".into()));
    }
    if args.state == StateArg::Generated && args.mode != GenMode::Chain {
        return Err(CliError::Argument(
            "--state generated is for chain mode only".into(),
        ));
    }
    let mut bars = PhaseBars::default();
    let dir = Path::new(&args.out);
    match args.mode {
        GenMode::Chain => chain(args, dir, &mut bars),
        GenMode::Raw => raw(args, dir, &mut bars),
        GenMode::HotContracts => hot_contracts(args, dir, &mut bars),
    }
}

fn chain(args: &GenArgs, dir: &Path, bars: &mut PhaseBars) -> Result<(), CliError> {
    let holders = args.holders.unwrap_or(CHAIN_HOLDERS);
    let mut params = ChainParams::new(args.entries, args.seed, holders);
    params.sequential_slots = args.sequential_slots.unwrap_or(CHAIN_SEQUENTIAL_SLOTS);
    params.storage = match args.state {
        StateArg::File => StateStorage::File,
        StateArg::Generated => StateStorage::Generated,
    };
    let doing = match params.storage {
        StateStorage::File => "writing the chain-like state",
        StateStorage::Generated => "generating the chain-like state (counting it)",
    };
    bars.phase(doing, args.entries);
    let mut last = 0;
    let report = gen_chain(dir, &params, &mut |p| {
        bars.advance(p.done.saturating_sub(last));
        last = p.done;
    })?;
    bars.done();
    let stored = match params.storage {
        StateStorage::File => format!("{} bytes of state.jsonl", report.state_bytes),
        StateStorage::Generated => "generated when read (no state.jsonl)".to_owned(),
    };
    output::line(format_args!(
        "{}: {} records, {} tree entries, {stored}",
        output::path(&report.dir),
        report.meta.state_records,
        report.meta.tree_entries.unwrap_or_default(),
    ))
}

fn raw(args: &GenArgs, dir: &Path, bars: &mut PhaseBars) -> Result<(), CliError> {
    let blocks = RawBlocks {
        read_blocks: args.read_blocks,
        reads_per_block: args.reads_per_block,
        write_blocks: args.write_blocks,
        writes_per_block: args.writes_per_block.unwrap_or(RAW_WRITES_PER_BLOCK),
    };
    bars.phase("writing the raw state", args.entries);
    let mut last = 0;
    let report = gen_raw(dir, args.entries, args.seed, blocks, &mut |p| {
        bars.advance(p.done.saturating_sub(last));
        last = p.done;
    })?;
    bars.done();
    output::line(format_args!(
        "{} and {}: {} keys, {} bytes of state.jsonl",
        output::path(&report.reads_dir),
        output::path(&report.writes_dir),
        args.entries,
        report.state_bytes
    ))
}

fn hot_contracts(args: &GenArgs, dir: &Path, bars: &mut PhaseBars) -> Result<(), CliError> {
    let mut params = HotParams::new(args.entries, args.seed);
    params.hot_contracts = args.hot_contracts;
    params.blocks = args.blocks;
    params.reads_per_block = args.reads_per_block;
    params.writes_per_block = args.writes_per_block.unwrap_or(DEFAULT_WRITES_PER_BLOCK);
    params.new_slots_per_block = args
        .new_slots_per_block
        .unwrap_or(params.writes_per_block / NEW_SLOT_DIVISOR);
    params.holders = args.holders.unwrap_or(0);
    params.sequential_slots = args.sequential_slots.unwrap_or(0);
    bars.phase("writing the hot-contracts state", args.entries);
    let mut last = 0;
    let mut blocks_phase = false;
    let report = gen_hot_contracts(dir, &params, &mut |p| {
        if p.stage == ubt_bench::gen::Stage::Blocks && !blocks_phase {
            bars.done();
            bars.phase("writing the blocks", params.blocks);
            (blocks_phase, last) = (true, 0);
        }
        bars.advance(p.done.saturating_sub(last));
        last = p.done;
    })?;
    bars.done();
    let hot = report.meta.hot_contracts.as_ref();
    output::line(format_args!(
        "{}: {} records, {} tree entries ({} hot contracts with {} slots), {} blocks, \
         {} bytes of state.jsonl",
        output::path(&report.dir),
        report.meta.state_records,
        report.meta.tree_entries.unwrap_or_default(),
        params.hot_contracts,
        hot.map_or(0, |h| h.slots),
        report.meta.blocks,
        report.state_bytes
    ))
}

//! `ubt bench gen`: writes a generated state directory.

use std::path::Path;

use ubt_bench::gen::{gen_chain, gen_raw, ChainParams, RawBlocks};

use crate::cli::{GenArgs, GenMode};
use crate::error::CliError;
use crate::output;
use crate::progress::PhaseBars;

/// Runs `ubt bench gen`.
pub fn run(args: &GenArgs) -> Result<(), CliError> {
    if args.entries == 0 {
        return Err(CliError::Argument("--entries must be at least 1".into()));
    }
    let mut bars = PhaseBars::default();
    let dir = Path::new(&args.out);
    match args.mode {
        GenMode::Chain => {
            let mut params = ChainParams::new(args.entries, args.seed, args.holders);
            params.sequential_slots = args.sequential_slots;
            bars.phase("writing the chain-like state", args.entries);
            let mut last = 0;
            let report = gen_chain(dir, &params, &mut |p| {
                bars.advance(p.done.saturating_sub(last));
                last = p.done;
            })?;
            bars.done();
            output::line(format_args!(
                "{}: {} records, {} tree entries, {} bytes of state.jsonl",
                output::path(&report.dir),
                report.meta.state_records,
                report.meta.tree_entries.unwrap_or_default(),
                report.state_bytes
            ))
        }
        GenMode::Raw => {
            let blocks = RawBlocks {
                read_blocks: args.read_blocks,
                reads_per_block: args.reads_per_block,
                write_blocks: args.write_blocks,
                writes_per_block: args.writes_per_block,
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
    }
}

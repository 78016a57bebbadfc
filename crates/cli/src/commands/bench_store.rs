//! `ubt bench store`: runs the store benchmark, prints its Markdown report
//! on standard output (phases on standard error as they start).

use std::path::PathBuf;
use std::time::Instant;

use ubt_bench::studies::store::{run as run_bench, to_markdown, StoreBenchConfig};

use crate::cli::StoreBenchArgs;
use crate::error::CliError;
use crate::output;

/// Runs `ubt bench store`.
pub fn run(args: &StoreBenchArgs) -> Result<(), CliError> {
    if args.entries == 0 || args.block_writes == 0 {
        return Err(CliError::Argument(
            "--entries and --block-writes must be positive".into(),
        ));
    }
    let mut config = StoreBenchConfig::new(PathBuf::from(&args.dir), args.entries);
    config.group_depth = args.group_depth;
    config.bucket_bytes = args.bucket_kib << 10;
    config.memory_budget_bytes = args.memory_mib.saturating_mul(1 << 20);
    config.direct_reads = args.direct_reads;
    config.cold_blocks = args.cold_blocks;
    config.warm_blocks = args.warm_blocks;
    config.block_writes = args.block_writes;
    config.cold_reads = args.cold_reads;
    config.batch_keys = args.batch_keys;
    config.seed = args.seed;
    config.keep_db = args.keep;
    if args.no_device {
        config.device = None;
    }
    let started = Instant::now();
    let report = run_bench(&config, &mut |phase| {
        output::note(format_args!(
            "[{:>6.1} s] {phase}",
            started.elapsed().as_secs_f64()
        ));
    })?;
    if let Some(path) = &args.json {
        output::write_json(path, &report)?;
    }
    output::line(format_args!("{}", to_markdown(&report)))
}

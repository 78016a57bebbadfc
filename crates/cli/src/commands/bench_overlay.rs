//! `ubt bench overlay`: runs the overlay benchmark, prints its Markdown
//! report on standard output (phases on standard error as they start).

use std::path::PathBuf;
use std::time::Instant;

use ubt_bench::studies::overlay::{run as run_bench, to_markdown, OverlayBenchConfig};

use crate::cli::OverlayBenchArgs;
use crate::error::CliError;
use crate::output;

/// Runs `ubt bench overlay`.
pub fn run(args: &OverlayBenchArgs) -> Result<(), CliError> {
    if args.accounts < 10_000 {
        return Err(CliError::Argument(
            "--accounts must be at least 10000 (the largest overlay)".into(),
        ));
    }
    let mut config = OverlayBenchConfig::new(PathBuf::from(&args.dir));
    config.accounts = args.accounts;
    config.sweep_blocks = args.sweep_blocks;
    config.repetitions = usize::try_from(args.repetitions).unwrap_or(usize::MAX);
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

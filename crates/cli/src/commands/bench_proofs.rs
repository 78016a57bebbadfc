//! `ubt bench proofs`: runs the proof benchmark over recorded blocks and
//! prints its Markdown report on standard output (phases on standard
//! error as they start).

use std::path::PathBuf;
use std::time::Instant;

use ubt_bench::studies::proofs::{run as run_bench, to_markdown, ProofBenchConfig};

use crate::cli::ProofBenchArgs;
use crate::error::CliError;
use crate::output;

/// Runs `ubt bench proofs`.
pub fn run(args: &ProofBenchArgs) -> Result<(), CliError> {
    let config = ProofBenchConfig {
        workloads: args.workloads.iter().map(PathBuf::from).collect(),
        dir: PathBuf::from(&args.dir),
        group_depth: args.group_depth,
        witness_group_depth: args.witness_group_depth,
        blocks_max: args.blocks,
    };
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

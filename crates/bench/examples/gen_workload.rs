//! Generates a workload directory, or converts a state file, and prints
//! what it did with timings.
//!
//! ```text
//! gen_workload chain <dir> <target_entries> <seed> <holders>
//! gen_workload raw <dir> <entries> <seed> <read_blocks> <reads_per_block> <write_blocks> <writes_per_block>
//! gen_workload convert <state.jsonl>
//! ```

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::path::Path;
use std::time::Instant;

use ubt_bench::gen::{gen_chain, gen_raw, tree_entries, ChainParams, Progress, RawBlocks};
use ubt_spec::FastTree;

fn number(args: &[String], i: usize) -> u64 {
    args.get(i)
        .and_then(|a| a.replace('_', "").parse().ok())
        .unwrap_or_else(|| usage())
}

fn usage() -> ! {
    eprintln!(
        "usage: gen_workload chain <dir> <target_entries> <seed> <holders>\n       \
         gen_workload raw <dir> <entries> <seed> <read_blocks> <reads_per_block> <write_blocks> <writes_per_block>\n       \
         gen_workload convert <state.jsonl>"
    );
    std::process::exit(2)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let started = Instant::now();
    let mut last = Instant::now();
    let mut progress = |p: Progress| {
        if last.elapsed().as_secs_f64() >= 2.0 {
            eprintln!("{}: {} / {}", p.stage, p.done, p.total);
            last = Instant::now();
        }
    };
    match args.first().map(String::as_str) {
        Some("chain") if args.len() == 5 => {
            let params = ChainParams::new(number(&args, 2), number(&args, 3), number(&args, 4));
            let report = gen_chain(Path::new(&args[1]), &params, &mut progress)?;
            println!("{}", serde_json::to_string_pretty(&report.meta)?);
            println!(
                "state.jsonl: {} bytes; {:.2} s",
                report.state_bytes,
                started.elapsed().as_secs_f64()
            );
        }
        Some("raw") if args.len() == 8 => {
            let blocks = RawBlocks {
                read_blocks: number(&args, 4),
                reads_per_block: number(&args, 5),
                write_blocks: number(&args, 6),
                writes_per_block: number(&args, 7),
            };
            let report = gen_raw(
                Path::new(&args[1]),
                number(&args, 2),
                number(&args, 3),
                blocks,
                &mut progress,
            )?;
            println!(
                "{} and {}: state.jsonl {} bytes; {:.2} s",
                report.reads_dir.display(),
                report.writes_dir.display(),
                report.state_bytes,
                started.elapsed().as_secs_f64()
            );
        }
        Some("convert") if args.len() == 2 => {
            let entries = tree_entries(Path::new(&args[1]), &mut progress)?;
            let converted = started.elapsed().as_secs_f64();
            let count = entries.len();
            let root = FastTree::from_entries(entries.into_vec()).root_hash();
            println!(
                "{count} tree entries in {converted:.2} s; root 0x{} after {:.2} s",
                root.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                started.elapsed().as_secs_f64()
            );
        }
        _ => usage(),
    }
    Ok(())
}

//! `ubt`: command-line tool for the ubt binary-trie engine.
//!
//! Every failure is one line `ubt: error: ...` on standard error. Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 2 | bad input or usage: malformed arguments, keys or input files, an unreadable input file, a group depth that does not match the database |
//! | 1 | any other failure: no database at the path, a locked, corrupted or unreadable database, I/O errors, `ubt verify` finding problems |

mod cli;
mod commands;
mod db;
mod output;
mod progress;
mod source;

use ubt_cli::{binary, error, hex_arg, input};

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Root(args) => commands::root::run(&args),
        Command::Key(args) => commands::key::run(&args),
        Command::Load(args) => commands::load::run(&args),
        Command::Get(args) => commands::get::run(&args),
        Command::Verify(args) => commands::verify::run(&args),
        Command::Stats(args) => commands::stats::run(&args),
        Command::ExportBin(args) => commands::export_bin::run(&args),
        Command::Bench(bench) => match bench.command {
            None => commands::bench_run::default(&bench.default),
            Some(cli::BenchCommand::Store(args)) => commands::bench_store::run(&args),
            Some(cli::BenchCommand::Overlay(args)) => commands::bench_overlay::run(&args),
            Some(cli::BenchCommand::Gen(args)) => commands::bench_gen::run(&args),
            Some(cli::BenchCommand::Run(args)) => commands::bench_run::run(&args),
            Some(cli::BenchCommand::Sweep(args)) => commands::bench_run::sweep(&args),
            Some(cli::BenchCommand::Report(args)) => commands::bench_report::run(&args),
        },
    };
    if let Err(err) = result {
        output::note(format_args!(
            "ubt: error: {}",
            err.to_string().replace('\n', " ")
        ));
        std::process::exit(err.exit_code());
    }
}

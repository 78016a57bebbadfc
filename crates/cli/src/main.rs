//! `ubt`: command-line tool for the ubt binary-trie engine.
//!
//! Every failure is one line `ubt: error: ...` on standard error, usage
//! errors included (clap's first paragraph, then `(see 'ubt --help')`);
//! whatever the error text holds, control characters are printed escaped
//! ([`error::escape_controls`]). `--help` and `--version` print to standard
//! output and exit 0. Exit codes:
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

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => usage_error(&err),
    };
    let result = match cli.command {
        Command::Root(args) => commands::root::run(&args),
        Command::Key(args) => commands::key::run(&args),
        Command::Load(args) => commands::load::run(&args),
        Command::Import(args) => commands::import::run(&args),
        Command::Get(args) => commands::get::run(&args),
        Command::Account(args) => commands::account::run(&args),
        Command::Storage(args) => commands::storage::run(&args),
        Command::Code(args) => commands::code::run(&args),
        Command::Prove(args) => commands::prove::run(&args),
        Command::VerifyProof(args) => commands::prove::verify(&args),
        Command::Verify(args) => commands::verify::run(&args),
        Command::Stats(args) => commands::stats::run(&args),
        Command::ExportBin(args) => commands::export_bin::run(&args),
        Command::Bench(bench) => match bench.command {
            None => commands::bench_run::default(&bench.default),
            Some(cli::BenchCommand::Store(args)) => commands::bench_store::run(&args),
            Some(cli::BenchCommand::Overlay(args)) => commands::bench_overlay::run(&args),
            Some(cli::BenchCommand::Proofs(args)) => commands::bench_proofs::run(&args),
            Some(cli::BenchCommand::Gen(args)) => commands::bench_gen::run(&args),
            Some(cli::BenchCommand::Run(args)) => commands::bench_run::run(&args),
            Some(cli::BenchCommand::Sweep(args)) => commands::bench_run::sweep(&args),
            Some(cli::BenchCommand::Report(args)) => commands::bench_report::run(&args),
        },
    };
    if let Err(err) = result {
        fail(&err.to_string(), err.exit_code());
    }
}

/// Prints `message` as the one line `ubt: error: ...` on standard error
/// (surrounding whitespace trimmed, control characters escaped) and exits
/// with `code`.
fn fail(message: &str, code: i32) -> ! {
    output::note(format_args!(
        "ubt: error: {}",
        error::escape_controls(message.trim())
    ));
    std::process::exit(code);
}

/// Handles what `Cli::try_parse` returns instead of a command line: help
/// and version go to standard output (exit 0); a usage error is one line
/// (exit 2).
fn usage_error(err: &clap::Error) -> ! {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Ignored failure: standard output may be closed (`| head`).
            let _ = err.print();
            std::process::exit(0);
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let names: Vec<String> = Cli::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            fail(
                &format!(
                    "no command given: one of {} (see 'ubt --help')",
                    names.join(", ")
                ),
                2,
            )
        }
        _ => fail(
            &format!(
                "{} (see 'ubt --help')",
                first_paragraph(&err.render().to_string())
            ),
            2,
        ),
    }
}

/// The first paragraph of clap's error text on one line, without its
/// `error: ` prefix: the message, with the argument list that some messages
/// put on the lines below it, and without the tips and usage that follow.
fn first_paragraph(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty())
        .collect();
    let joined = lines.join(" ");
    let message = joined.strip_prefix("error:").unwrap_or(&joined).trim();
    if message.is_empty() {
        "invalid command line".to_string()
    } else {
        message.to_string()
    }
}

//! `ubt`: command-line tool for the ubt binary-trie engine.
//!
//! Exit codes: 0 success, 2 bad input or usage, 1 any other failure.

mod cli;
mod commands;
mod error;
mod hex_arg;
mod input;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::CliError;

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Root(args) => commands::root::run(&args),
        Command::Key(args) => commands::key::run(&args),
    };
    if let Err(err) = result {
        eprintln!("ubt: error: {err}");
        std::process::exit(match err {
            CliError::Input { .. } | CliError::Argument(_) | CliError::Read { .. } => 2,
        });
    }
}

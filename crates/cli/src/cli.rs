//! Command-line grammar (clap).

use clap::{Args, Parser, Subcommand};

/// ubt: EIP-7864 unified binary trie tools, bit-exact with go-ethereum.
#[derive(Parser, Debug)]
#[command(name = "ubt", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the state root of a set of key/value pairs.
    ///
    /// Input: JSON lines `{"key":"0x<64 hex>","value":"0x<64 hex>"}`; blank
    /// lines are skipped and later lines overwrite earlier ones. The root is
    /// printed as 0x<64 hex>.
    Root(RootArgs),
    /// Print the 32-byte tree key of an account field, storage slot or code chunk.
    Key(KeyArgs),
}

/// Arguments of `ubt root`.
#[derive(Args, Debug)]
pub struct RootArgs {
    /// JSON-lines input file, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub input: String,
}

/// Arguments of `ubt key`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("field").required(true).args(["basic_data", "code_hash", "slot", "chunk"])))]
pub struct KeyArgs {
    /// The account address, 0x followed by 40 hex digits.
    #[arg(long)]
    pub address: String,
    /// The BasicData leaf (nonce, balance, code size).
    #[arg(long)]
    pub basic_data: bool,
    /// The code-hash leaf.
    #[arg(long)]
    pub code_hash: bool,
    /// A storage slot: 0x followed by 1 to 64 hex digits (a 256-bit number).
    #[arg(long, value_name = "0xSLOT")]
    pub slot: Option<String>,
    /// A code chunk number (decimal).
    #[arg(long, value_name = "N")]
    pub chunk: Option<u64>,
}

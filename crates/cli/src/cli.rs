//! Command-line grammar (clap).

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Print the state root of a set of key/value pairs, or of a database.
    ///
    /// Input: JSON lines `{"key":"0x<64 hex>","value":"0x<64 hex>"}`; blank
    /// lines are skipped and later lines overwrite earlier ones. The root is
    /// printed as 0x<64 hex>.
    Root(RootArgs),
    /// Print the 32-byte tree key of an account field, storage slot or code chunk.
    Key(KeyArgs),
    /// Load key/value pairs into a database (built if absent, one block if present).
    ///
    /// Prints the resulting root as 0x<64 hex>.
    Load(LoadArgs),
    /// Print the value stored at a key (0x<64 hex>), or `absent`.
    Get(GetArgs),
    /// Check every checksum and recompute every hash of a database.
    Verify(DbArgs),
    /// Print a database's shape, memory and I/O counters.
    Stats(StatsArgs),
    /// Convert JSON-lines key/value pairs to the binary format `ubt load` reads.
    ExportBin(ExportBinArgs),
    /// Run a benchmark.
    #[command(subcommand)]
    Bench(BenchCommand),
}

/// The benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// The store's figures on N random keys, beside the device's limits
    /// (bulk load, disk bytes per entry, cold point and batched reads,
    /// cold and warm blocks of random updates, checkpoint).
    Store(StoreBenchArgs),
    /// The root over an overlay of updated accounts on a persisted base
    /// state (1,000 and 10,000 of 100,000 accounts), and a sweep of how many
    /// blocks are kept in memory before persisting.
    Overlay(OverlayBenchArgs),
}

/// Arguments of `ubt bench overlay`.
#[derive(Args, Debug)]
pub struct OverlayBenchArgs {
    /// Working directory (the database goes here).
    #[arg(long, value_name = "DIR", default_value = "ubt-bench-data")]
    pub dir: String,
    /// Accounts in the base state (10 storage slots each).
    #[arg(long, default_value_t = 100_000)]
    pub accounts: u64,
    /// Blocks per persistence threshold.
    #[arg(long, default_value_t = 1024)]
    pub sweep_blocks: usize,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
}

/// Arguments of `ubt bench store`.
#[derive(Args, Debug)]
pub struct StoreBenchArgs {
    /// Random 32-byte key/value pairs to load.
    #[arg(long, default_value_t = 1_000_000)]
    pub entries: u64,
    /// Working directory (the database and the device probe's 1 GiB
    /// scratch file go here; it must be on the disk to measure).
    #[arg(long, value_name = "DIR", default_value = "ubt-bench-data")]
    pub dir: String,
    /// Group depth of the database (1..8).
    #[arg(long, default_value_t = ubt_engine::DEFAULT_GROUP_DEPTH, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: u8,
    /// Memory budget of the database, in MiB.
    #[arg(long, default_value_t = 1024)]
    pub memory_mib: usize,
    /// Cold update blocks (each after a checkpoint and dropped caches).
    #[arg(long, default_value_t = 5)]
    pub cold_blocks: usize,
    /// Warm update blocks, then one checkpoint amortized over them.
    #[arg(long, default_value_t = 20)]
    pub warm_blocks: usize,
    /// Writes per update block.
    #[arg(long, default_value_t = 4096)]
    pub block_writes: usize,
    /// Single-threaded cold point reads.
    #[arg(long, default_value_t = 2000)]
    pub cold_reads: usize,
    /// Keys in the cold batched read.
    #[arg(long, default_value_t = 100_000)]
    pub batch_keys: usize,
    /// Seed of the key/value generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the device probe (no ratios to the device).
    #[arg(long)]
    pub no_device: bool,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Keep the database afterwards.
    #[arg(long)]
    pub keep: bool,
}

/// Arguments of `ubt root`: exactly one of `--input` and `--db`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["input", "db"])))]
pub struct RootArgs {
    /// JSON-lines input file, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub input: Option<String>,
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    pub db: Option<String>,
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

/// Input formats of `ubt load`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// JSON lines, as `ubt root --input` reads them.
    Jsonl,
    /// Magic `UBTKV001`, then 64-byte records (32-byte key, 32-byte value).
    Bin,
}

/// Arguments of `ubt load`.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Database directory (created if it holds no database).
    #[arg(long, value_name = "DIR")]
    pub db: String,
    /// Group depth (1..=8) of the upper-trie pages; must match an existing database.
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: Option<u8>,
    /// Key/value input file, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub input: String,
    /// Input format; detected from the binary magic when absent.
    #[arg(long, value_enum)]
    pub format: Option<InputFormat>,
}

/// Arguments of `ubt get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    pub db: String,
    /// The key, 0x followed by 64 hex digits.
    #[arg(value_name = "0xKEY")]
    pub key: String,
}

/// Arguments of commands that only need a database.
#[derive(Args, Debug)]
pub struct DbArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    pub db: String,
}

/// Arguments of `ubt stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    pub db: String,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `ubt export-bin`.
#[derive(Args, Debug)]
pub struct ExportBinArgs {
    /// JSON-lines input file, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub input: String,
    /// Binary output file (created or truncated).
    #[arg(long, value_name = "FILE")]
    pub output: String,
}

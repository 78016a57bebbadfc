//! Command-line grammar (clap). Path arguments refuse an empty value.

use clap::builder::NonEmptyStringValueParser;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

/// The parser of every path argument (and `--stem`): an empty value is a
/// usage error (exit 2), not a path to try.
fn non_empty() -> NonEmptyStringValueParser {
    NonEmptyStringValueParser::new()
}

/// The parser of `--bucket-kib`: a bucket capacity the store accepts
/// (4, 8, 16, 32 or 64 KiB); anything else is a usage error (exit 2).
fn bucket_kib() -> clap::builder::ValueParser {
    clap::builder::ValueParser::new(|text: &str| -> Result<usize, String> {
        let kib: usize = text
            .parse()
            .map_err(|_| format!("{text:?} is not a number of KiB"))?;
        if kib
            .checked_mul(1024)
            .is_some_and(ubt_engine::bucket_bytes_valid)
        {
            Ok(kib)
        } else {
            Err(format!("{kib} KiB is not one of 4, 8, 16, 32, 64"))
        }
    })
}

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
    /// Input: JSON lines `{"key":"0x<64 hex>","value":"0x<64 hex>"}` in
    /// UTF-8 (a leading byte-order mark is skipped; a line may hold at most
    /// 65536 bytes); blank lines are skipped and later lines overwrite
    /// earlier ones. The root is printed as 0x<64 hex>.
    Root(RootArgs),
    /// Print the 32-byte tree key of an account field, storage slot or code chunk.
    Key(KeyArgs),
    /// Load key/value pairs into a database (built if absent, one block if present).
    ///
    /// Prints the resulting root as 0x<64 hex>.
    Load(LoadArgs),
    /// Import real chain state into a new database: a geth genesis file or
    /// the output of `geth dump --iterative`.
    ///
    /// An import makes a NEW database: the directory must be absent, empty,
    /// or hold an empty database; one with data is refused. The root is
    /// go-ethereum's (v1.17.10) binary-trie root of the same state: every
    /// account as geth's genesis code writes it (balance truncated to 128
    /// bits as geth truncates it, zero storage values writing nothing).
    /// Duplicate accounts, storage keys or fields are refused (geth's JSON
    /// decoding keeps the last). A progress display and a summary go to
    /// standard error; the state root, 0x<64 hex>, is the last line of
    /// standard output. Bad input is one line naming the line or JSON path
    /// (exit 2); a failed import leaves no database behind.
    Import(ImportArgs),
    /// Print the value stored at a key (0x<64 hex>), or `absent`.
    Get(GetArgs),
    /// Print an account's header at the tip as one JSON object, or `absent`.
    ///
    /// `{"nonce":N,"balance":"0x..","codeHash":"0x<64 hex>","codeSize":N}`:
    /// the balance in minimal hex (`0x0` for zero), the code size as the
    /// account's BasicData records it. `absent` (go-ethereum's GetAccount)
    /// when the account was never written or was deleted.
    Account(AddressArgs),
    /// Print the value of a storage slot at the tip as 0x<64 hex>, zero when absent.
    ///
    /// A deleted slot is zero too. Slots outlive a deleted account, as in
    /// go-ethereum's binary trie.
    Storage(StorageArgs),
    /// Print an account's code at the tip as `0x<hex>`, reassembled from its chunks.
    ///
    /// `0x` alone when the code is empty and when the account is absent
    /// (the code the EVM sees); `ubt account` tells the two apart. The
    /// code's length is the code size in the account's BasicData; a chunk
    /// within it that is absent is reported as an error (exit 1).
    Code(AddressArgs),
    /// Write a multiproof of tree keys, or print an account proof, from a
    /// database (opened read-only; nothing in it is written).
    ///
    /// With keys (arguments, or --keys-file): writes the canonical binary
    /// multiproof of the keys (docs/proof-format.md) to --out and prints one
    /// summary line: the number of keys (present, absent), the root and
    /// the bytes written. With --account: prints the account proof, in the
    /// shape of eth_getProof, as pretty JSON (and writes it to --out if
    /// given). At the tip, or at --root: a block in memory or within the
    /// revert window; any other root is an error (exit 1).
    Prove(ProveArgs),
    /// Verify a proof file against a state root (no database needed).
    ///
    /// A multiproof (from `ubt prove --out`): prints one line per key in
    /// key order, `0x<key> 0x<value>` or `0x<key> absent` (the proof names
    /// its keys: compare them with the keys you asked about). An account proof
    /// (--account, the JSON of `ubt prove --account`): prints the verified
    /// fields (`account absent`, or `account present` and the nonce,
    /// balance, codeHash and codeSize), then one `slot 0x<64 hex> 0x<value>`
    /// or `slot 0x<64 hex> absent` line per slot. A proof that does not
    /// decode or does not verify (tampered, truncated, for another root,
    /// or a JSON whose fields are not the proven ones) is one error line
    /// with the reason, exit 1.
    VerifyProof(VerifyProofArgs),
    /// Check every checksum and recompute every hash of a database.
    Verify(DbArgs),
    /// Print a database's shape, memory and I/O counters.
    Stats(StatsArgs),
    /// Convert JSON-lines key/value pairs to the binary format `ubt load` reads.
    ExportBin(ExportBinArgs),
    /// Run the benchmarks. Without a subcommand: the default benchmark
    /// (a chain-like state of about 1M entries, the ERC20 and sequential
    /// workloads, 3 measured runs, ubt beside go-ethereum when Go is
    /// installed), ending with the path of its report.
    Bench(BenchArgs),
}

/// `ubt bench`: a subcommand, or the default benchmark's options.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// Options of the default benchmark.
    #[command(flatten)]
    pub default: DefaultBenchArgs,
}

/// Options of the default `ubt bench`.
#[derive(Args, Debug)]
pub struct DefaultBenchArgs {
    /// Output directory: generated state, loaded databases, metrics, report.
    #[arg(long, value_name = "DIR", default_value = "ubt-bench", value_parser = non_empty())]
    pub out: String,
    /// Tree entries of the generated chain-like state.
    #[arg(long, default_value_t = 1_000_000)]
    pub entries: u64,
    /// Measured runs (a warm-up run comes first).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Blocks per run.
    #[arg(long, default_value_t = 2)]
    pub blocks: u64,
    /// Peers to run beside ubt, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "geth")]
    pub peers: Vec<PeersArg>,
}

/// Which peers run beside ubt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PeersArg {
    /// go-ethereum's binary trie (at --geth-group-depth) and its MPT, when
    /// Go is installed.
    Geth,
    /// go-ethereum's binary trie only.
    GethBintrie,
    /// go-ethereum's MPT only.
    GethMpt,
    /// go-ethereum's StateDB over ubt (at ubt's group depth, without the
    /// flat index); builds ubt's static library (bindings/go/build.sh) and
    /// the peer with `go build -tags ubt`.
    GethUbt,
    /// ubt alone.
    None,
}

/// Whether ubt keeps the flat index of account values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FlatArg {
    /// With it (`gd6`).
    On,
    /// Without it (`gd6-noflat`).
    Off,
    /// Both, side by side.
    Both,
}

/// ubt's read variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrefetchArg {
    /// Reads one at a time, as the EVM asks (like the peer).
    Off,
    /// A speculative pass prefetches every slot of the block first.
    On,
    /// Both variants, side by side.
    Both,
}

/// Block shapes of the studies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShapeArg {
    /// 16,777,216-gas single-transaction blocks (the group-depth study).
    Gd,
    /// 100,000,000-gas single-transaction blocks (the MPT study).
    Mpt,
}

/// Kinds of generated state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GenMode {
    /// EOAs, contracts with power-law storage and code, the ERC20 token
    /// with its holders, and the sequential-slot contract.
    Chain,
    /// Random 32-byte keys and values, with read and write blocks.
    Raw,
    /// A few hot contracts with 10^5-10^6 slots beside a chain-like state,
    /// with blocks that pick contracts by a Zipf law (s = 1) and slots
    /// uniformly within them.
    HotContracts,
}

/// Where `ubt bench gen` puts a chain-like state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StateArg {
    /// In DIR/state.jsonl (~150 bytes per tree entry; what the go-ethereum
    /// peers read).
    File,
    /// Nowhere: workload.json holds the recipe and `ubt bench run`
    /// generates the state again as it loads it (0 bytes per entry; ubt
    /// only).
    Generated,
}

/// Arguments of `ubt bench gen`.
#[derive(Args, Debug)]
pub struct GenArgs {
    /// Directory to write (raw mode writes DIR/raw_reads and DIR/raw_writes).
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub out: String,
    /// Kind of state.
    #[arg(long, value_enum, default_value_t = GenMode::Chain)]
    pub mode: GenMode,
    /// Tree entries (chain, hot-contracts) or keys (raw).
    #[arg(long, default_value_t = 1_000_000)]
    pub entries: u64,
    /// Seed: the same seed writes the same bytes.
    #[arg(long, default_value_t = 25519)]
    pub seed: u64,
    /// Chain and hot-contracts modes: ERC20 holders [default: 167772 in
    /// chain mode (the group-depth study's token had 167,772), 0 in
    /// hot-contracts mode].
    #[arg(long)]
    pub holders: Option<u64>,
    /// Chain and hot-contracts modes: preset slots of the sequential-slot
    /// contract (0: none) [default: 150000 in chain mode, 0 in
    /// hot-contracts mode].
    #[arg(long)]
    pub sequential_slots: Option<u64>,
    /// Chain mode: where the state goes.
    #[arg(long, value_enum, default_value_t = StateArg::File)]
    pub state: StateArg,
    /// Raw mode: read blocks.
    #[arg(long, default_value_t = 3)]
    pub read_blocks: u64,
    /// Raw mode: distinct keys read per block; hot-contracts mode:
    /// distinct slots read per block, the written ones included.
    #[arg(long, default_value_t = 4096)]
    pub reads_per_block: u64,
    /// Raw mode: write blocks.
    #[arg(long, default_value_t = 3)]
    pub write_blocks: u64,
    /// Raw mode: distinct keys updated per block; hot-contracts mode: slots
    /// written per block, among the ones read [default: 4096 in raw mode,
    /// 512 in hot-contracts mode].
    #[arg(long)]
    pub writes_per_block: Option<u64>,
    /// Hot-contracts mode: hot contracts; the k-th largest has
    /// floor(S1 / k) slots, S1 = min(1000000, entries / 10).
    #[arg(long, default_value_t = 32)]
    pub hot_contracts: u64,
    /// Hot-contracts mode: blocks.
    #[arg(long, default_value_t = 8)]
    pub blocks: u64,
    /// Hot-contracts mode: of the writes per block, new slots [default:
    /// writes per block / 8].
    #[arg(long)]
    pub new_slots_per_block: Option<u64>,
}

/// Options shared by `ubt bench run` and `ubt bench sweep`.
#[derive(Args, Debug)]
pub struct RunCommonArgs {
    /// State directory made by `ubt bench gen` (repeat for several).
    #[arg(long = "state", value_name = "DIR", required = true, value_parser = non_empty())]
    pub states: Vec<String>,
    /// Output directory: loaded databases, recorded blocks, metrics
    /// (metrics.jsonl, resumed if present), report.
    #[arg(long, value_name = "DIR", default_value = "ubt-bench", value_parser = non_empty())]
    pub out: String,
    /// Workloads, comma-separated: erc20_balanceof, erc20_approve,
    /// erc20_mixed_R_W (10_90 30_70 50_50 70_30 90_10), sload_seq,
    /// sstore_seq, replay, hot_contracts. Default: the ERC20 and sequential
    /// workloads on a chain-like state, hot_contracts on a hot-contracts
    /// state, its own blocks on a raw one.
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Block shape of the EVM workloads.
    #[arg(long, value_enum, default_value_t = ShapeArg::Gd)]
    pub shape: ShapeArg,
    /// Blocks per run (EVM workloads).
    #[arg(long, default_value_t = 3)]
    pub blocks: u64,
    /// Measured runs (a warm-up run comes first).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// ubt with the flat index of account values (account and slot reads
    /// through it), without it (every read from the tree's buckets), or
    /// both side by side.
    #[arg(long, value_enum, default_value_t = FlatArg::On)]
    pub flat_index: FlatArg,
    /// Keep the page cache warm (no cold-cache protocol).
    #[arg(long)]
    pub warm: bool,
    /// Skip the device probe at the start of the run (random 4 KiB reads at
    /// QD1 and QD32 of a 1 GiB scratch file, a few seconds) that the report
    /// sets per-miss times against.
    #[arg(long)]
    pub no_device: bool,
    /// ubt's memory budget in MiB (default: the store's).
    #[arg(long)]
    pub memory_mib: Option<usize>,
    /// ubt reads its data file around the page cache (O_DIRECT) where the
    /// file system allows it; its variants are named `-direct` (`gd6-direct`).
    #[arg(long)]
    pub direct_reads: bool,
    /// go-ethereum's binary-trie group depth.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub geth_group_depth: u8,
    /// Directory of the go-ethereum peer's sources (default: this
    /// repository's peers/geth).
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub peer_source: Option<String>,
}

/// Arguments of `ubt bench run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: RunCommonArgs,
    /// ubt's group depth.
    #[arg(long, default_value_t = ubt_engine::DEFAULT_GROUP_DEPTH, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: u8,
    /// ubt's read variants.
    #[arg(long, value_enum, default_value_t = PrefetchArg::Both)]
    pub prefetch: PrefetchArg,
    /// Peers to run beside ubt, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "geth")]
    pub peers: Vec<PeersArg>,
}

/// Arguments of `ubt bench sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: RunCommonArgs,
    /// ubt's group depths, comma-separated or a range `A..B` (inclusive).
    #[arg(long, default_value = "1..8")]
    pub group_depths: String,
    /// ubt's read variants.
    #[arg(long, value_enum, default_value_t = PrefetchArg::Off)]
    pub prefetch: PrefetchArg,
    /// Peers to run beside ubt, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none")]
    pub peers: Vec<PeersArg>,
}

/// Arguments of `ubt bench report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Metrics files (JSON lines from `ubt bench run` or geth-peer).
    #[arg(long = "metrics", value_name = "FILE", required = true, value_parser = non_empty())]
    pub metrics: Vec<String>,
    /// Output directory of the Markdown report and its SVG charts.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub out: String,
    /// File stem of the report (`<stem>.md`).
    #[arg(long, default_value = "report", value_parser = non_empty())]
    pub stem: String,
    /// Title of the report.
    #[arg(long, default_value = "ubt bench")]
    pub title: String,
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
    /// Proofs of recorded blocks' accesses: one multiproof per block
    /// against one proof per key and go-ethereum's witness (bytes, build
    /// and verify times, the stateless root checked).
    Proofs(ProofBenchArgs),
    /// Generate a state (and raw blocks): chain-like with the ERC20 token
    /// and the sequential contract, random raw keys, or hot contracts with
    /// Zipf-distributed blocks. Deterministic for a seed.
    Gen(GenArgs),
    /// Run workloads on ubt and, when Go is installed, on go-ethereum
    /// (binary trie and MPT) from the same state, cold, and write the
    /// metrics and a report.
    Run(RunArgs),
    /// ubt's group-depth sweep (1..8 by default) with statistics and a
    /// verdict table.
    Sweep(SweepArgs),
    /// Write the report of existing metrics files.
    Report(ReportArgs),
}

/// Arguments of `ubt bench proofs`.
#[derive(Args, Debug)]
pub struct ProofBenchArgs {
    /// Workload directory with a recorded blocks.jsonl (the
    /// `workloads/<state>-<workload>` directories of a `ubt bench run`
    /// output); repeat for several.
    #[arg(long = "workload", value_name = "DIR", required = true, value_parser = non_empty())]
    pub workloads: Vec<String>,
    /// Working directory (the databases go here and are reused).
    #[arg(long, value_name = "DIR", default_value = "ubt-bench-proofs", value_parser = non_empty())]
    pub dir: String,
    /// The database's group depth.
    #[arg(long, default_value_t = ubt_engine::DEFAULT_GROUP_DEPTH, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: u8,
    /// Group depth of go-ethereum's witness (geth's default: 5).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub witness_group_depth: u8,
    /// Blocks per workload (default: all recorded).
    #[arg(long)]
    pub blocks: Option<usize>,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
    pub json: Option<String>,
}

/// Arguments of `ubt bench overlay`.
#[derive(Args, Debug)]
pub struct OverlayBenchArgs {
    /// Working directory (the database goes here).
    #[arg(long, value_name = "DIR", default_value = "ubt-bench-data", value_parser = non_empty())]
    pub dir: String,
    /// Accounts in the base state (10 storage slots each).
    #[arg(long, default_value_t = 100_000)]
    pub accounts: u64,
    /// Blocks per persistence threshold.
    #[arg(long, default_value_t = 1024)]
    pub sweep_blocks: usize,
    /// Repetitions of each hot root (their median is reported).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub repetitions: u64,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
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
    #[arg(long, value_name = "DIR", default_value = "ubt-bench-data", value_parser = non_empty())]
    pub dir: String,
    /// Group depth of the database (1..8).
    #[arg(long, default_value_t = ubt_engine::DEFAULT_GROUP_DEPTH, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: u8,
    /// Bucket capacity in KiB (4, 8, 16, 32 or 64), fixed when the
    /// database is created: larger buckets shrink the resident upper trie
    /// in proportion and cost more bytes read and rewritten per changed
    /// bucket.
    #[arg(long, value_name = "KIB", default_value_t = 4, value_parser = bucket_kib())]
    pub bucket_kib: usize,
    /// Memory budget of the database, in MiB.
    #[arg(long, default_value_t = 1024)]
    pub memory_mib: usize,
    /// Read the data file around the page cache (O_DIRECT) where the file
    /// system allows it.
    #[arg(long)]
    pub direct_reads: bool,
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
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
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
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
    pub input: Option<String>,
    /// Database directory.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
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
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// Group depth (1..=8) of the upper-trie pages; must match an existing database.
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: Option<u8>,
    /// Bucket capacity in KiB (4, 8, 16, 32 or 64), must match an existing
    /// database: larger buckets shrink the resident upper trie
    /// in proportion and cost more bytes read and rewritten per changed
    /// bucket.
    #[arg(long, value_name = "KIB", value_parser = bucket_kib())]
    pub bucket_kib: Option<usize>,
    /// Key/value input file, or `-` for standard input.
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
    pub input: String,
    /// Input format; detected from the binary magic when absent.
    #[arg(long, value_enum)]
    pub format: Option<InputFormat>,
}

/// Arguments of `ubt get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// The key, 0x followed by 64 hex digits.
    #[arg(value_name = "0xKEY")]
    pub key: String,
}

/// Arguments of `ubt account` and `ubt code`.
#[derive(Args, Debug)]
pub struct AddressArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// The account address, 0x followed by 40 hex digits.
    #[arg(value_name = "0xADDRESS")]
    pub address: String,
}

/// Arguments of `ubt storage`.
#[derive(Args, Debug)]
pub struct StorageArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// The account address, 0x followed by 40 hex digits.
    #[arg(value_name = "0xADDRESS")]
    pub address: String,
    /// The slot number: 0x followed by 1 to 64 hex digits, or a decimal
    /// number (digits only) up to 2^256 - 1.
    #[arg(value_name = "SLOT")]
    pub slot: String,
}

/// Arguments of `ubt prove`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("proven").required(true).args(["keys", "keys_file", "account"])))]
pub struct ProveArgs {
    /// Database directory (opened read-only).
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// Prove at this state root, 0x followed by 64 hex digits, instead of
    /// the tip.
    #[arg(long, value_name = "0xROOT")]
    pub root: Option<String>,
    /// File to write the proof to (created or truncated); required with
    /// keys. Not inside the database directory.
    #[arg(long, value_name = "FILE", value_parser = non_empty(), required_unless_present = "account")]
    pub out: Option<String>,
    /// Read the tree keys from FILE: one 0x<64 hex> key per line; blank
    /// lines and `#` comments (a whole line, or after the key) are allowed.
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
    pub keys_file: Option<String>,
    /// Prove this account (0x followed by 40 hex digits) instead of tree
    /// keys.
    #[arg(long, value_name = "0xADDRESS")]
    pub account: Option<String>,
    /// With --account: a storage slot to prove, 0x followed by 1 to 64 hex
    /// digits or a decimal number (repeat for several).
    #[arg(long, value_name = "SLOT", conflicts_with_all = ["keys", "keys_file"])]
    pub slot: Vec<String>,
    /// Tree keys to prove, 0x followed by 64 hex digits each.
    #[arg(value_name = "0xKEY")]
    pub keys: Vec<String>,
}

/// Arguments of `ubt verify-proof`.
#[derive(Args, Debug)]
pub struct VerifyProofArgs {
    /// The state root to verify against, 0x followed by 64 hex digits.
    #[arg(long, value_name = "0xROOT")]
    pub root: String,
    /// FILE is an account proof (the JSON of `ubt prove --account`), not a
    /// binary multiproof.
    #[arg(long)]
    pub account: bool,
    /// The proof file.
    #[arg(value_name = "FILE", value_parser = non_empty())]
    pub file: String,
}

/// Arguments of commands that only need a database.
#[derive(Args, Debug)]
pub struct DbArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
}

/// Arguments of `ubt stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `ubt export-bin`.
#[derive(Args, Debug)]
pub struct ExportBinArgs {
    /// JSON-lines input file, or `-` for standard input.
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
    pub input: String,
    /// Binary output file (created or truncated).
    #[arg(long, value_name = "FILE", value_parser = non_empty())]
    pub output: String,
}

/// Arguments of `ubt import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// What to import.
    #[command(subcommand)]
    pub command: ImportCommand,
}

/// The inputs `ubt import` reads.
#[derive(Subcommand, Debug)]
pub enum ImportCommand {
    /// A geth genesis file: the whole genesis object (only `alloc` is read)
    /// or a bare alloc map. Parsed as a stream: any size.
    Genesis(ImportGenesisArgs),
    /// The JSON lines of `geth dump --iterative`. Code hashes and address
    /// hashes are checked; a dump made with --nocode or --nostorage is
    /// refused.
    GethDump(ImportDumpArgs),
}

/// Options shared by the `ubt import` commands.
#[derive(Args, Debug)]
pub struct ImportCommonArgs {
    /// Database directory to create (absent, empty, or an empty database).
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub db: String,
    /// Memory for sorting tree entries (72 bytes each, plus 84 for the flat
    /// index's copy), e.g. 1GiB, 512MiB, or plain bytes; beyond it, sorted
    /// runs are spilled to temporary files and merged.
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = crate::commands::import::parse_size)]
    pub memory: usize,
    /// Directory for the temporary files (default: the database
    /// directory's parent); they are removed at the end.
    #[arg(long, value_name = "DIR", value_parser = non_empty())]
    pub tmp_dir: Option<String>,
    /// Group depth (1..=8) of the upper-trie pages.
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub group_depth: Option<u8>,
    /// Bucket capacity in KiB (4, 8, 16, 32 or 64), fixed when the
    /// database is created: larger buckets shrink the resident upper trie
    /// in proportion and cost more bytes read and rewritten per changed
    /// bucket.
    #[arg(long, value_name = "KIB", value_parser = bucket_kib())]
    pub bucket_kib: Option<usize>,
    /// Build the flat index of account values (account-level reads read an
    /// account's values together; about 75 more bytes per entry on disk,
    /// and a second sort by account within `--memory`).
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub flat_index: Switch,
}

/// On or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// Arguments of `ubt import genesis`.
#[derive(Args, Debug)]
pub struct ImportGenesisArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: ImportCommonArgs,
    /// Genesis file, or `-` for standard input.
    #[arg(value_name = "FILE", value_parser = non_empty())]
    pub input: String,
}

/// Arguments of `ubt import geth-dump`.
#[derive(Args, Debug)]
pub struct ImportDumpArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: ImportCommonArgs,
    /// Skip (and count) accounts without an address (the node lacked the
    /// preimage) instead of failing.
    #[arg(long)]
    pub skip_missing_preimages: bool,
    /// Dump file, or `-` for standard input.
    #[arg(value_name = "FILE", value_parser = non_empty())]
    pub input: String,
}

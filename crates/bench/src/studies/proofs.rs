//! `ubt bench proofs`: proofs of real blocks' accesses. For every block of
//! a workload's recorded `blocks.jsonl` (the ERC20 balanceOf / approve
//! blocks of `ubt bench run`), the keys the block reads and writes are
//! proven at the block's pre-state, and the proof is compared with the
//! alternatives a client has today:
//!
//! * one multiproof of the whole key set (`Db::prove`): bytes, time to
//!   build cold (page cache dropped, store cache cleared) and warm, time
//!   to verify, and the stateless post-state root from it and the block's
//!   writes (`ubt_spec::stateless::apply`, checked against the engine's);
//! * one independent proof per key (what per-key `eth_getProof`-style
//!   proofs cost): total bytes, time to build and to verify them all;
//! * go-ethereum's witness (`BinaryTrie.Witness()`: the node blobs its
//!   trie resolves for the same accesses, at geth's group depth): bytes
//!   and blob count (computed by `Db::witness` for the keys geth's trie
//!   looks up, `witness_keys::geth_witness_keys`, which the test
//!   `crates/bench/tests/geth_witness.rs` checks against go-ethereum's own
//!   recording byte for byte).
//!
//! Each block is then applied and committed, so the next block is proven
//! at its own pre-state, as a block builder would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use alloy_primitives::B256;
use serde::Serialize;
use ubt_engine::{verify_proof, Db, Options, Root};

use super::runner::blocks::{read_blocks, ReplayBlock};
use super::runner::db_cache;
use super::runner::ubt_exec::{read_keys, tree_writes};
use super::witness_keys::geth_witness_keys;
use crate::error::BenchError;
use crate::gen::tree_entries;
use crate::measure::cold::make_cold;
use crate::statistics::median;

/// What to run.
#[derive(Clone, Debug)]
pub struct ProofBenchConfig {
    /// Workload directories (each with `state.jsonl` and a recorded
    /// `blocks.jsonl`).
    pub workloads: Vec<PathBuf>,
    /// Working directory (pristine databases and the run copy).
    pub dir: PathBuf,
    /// The database's group depth.
    pub group_depth: u8,
    /// The group depth of go-ethereum's witness (geth's default is 5).
    pub witness_group_depth: u8,
    /// Blocks per workload (all when `None`).
    pub blocks_max: Option<usize>,
}

/// One block's figures.
#[derive(Clone, Debug, Serialize)]
pub struct BlockProofFigures {
    /// Block number.
    pub block: u64,
    /// Distinct tree keys read or written.
    pub keys: usize,
    /// Keys present at the pre-state.
    pub present: usize,
    /// Bytes of the multiproof.
    pub proof_bytes: usize,
    /// Time to build it, cold.
    pub build_cold_ms: f64,
    /// Bucket reads of the cold build.
    pub build_cold_reads: u64,
    /// Time to build it, warm (buckets in the store's cache).
    pub build_warm_ms: f64,
    /// Time to decode and verify it.
    pub verify_ms: f64,
    /// Time of the stateless post-state root from the proof and the writes.
    pub stateless_ms: f64,
    /// Total bytes of one proof per key.
    pub per_key_bytes: usize,
    /// Time to build one proof per key (warm).
    pub per_key_build_ms: f64,
    /// Time to decode and verify one proof per key.
    pub per_key_verify_ms: f64,
    /// Blobs of go-ethereum's witness.
    pub witness_blobs: usize,
    /// Bytes of those blobs.
    pub witness_bytes: usize,
    /// Time to build the witness from the database (warm).
    pub witness_build_ms: f64,
}

/// One workload's run.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadProofs {
    /// Workload name (`workload.json`).
    pub workload: String,
    /// Tree entries of its state.
    pub tree_entries: u64,
    /// Per block.
    pub blocks: Vec<BlockProofFigures>,
}

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct ProofBenchReport {
    /// The machine.
    pub machine: crate::measure::machine::MachineInfo,
    /// The database's group depth.
    pub group_depth: u8,
    /// The witness's group depth.
    pub witness_group_depth: u8,
    /// Per workload.
    pub workloads: Vec<WorkloadProofs>,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

fn engine(what: &str) -> impl Fn(ubt_engine::Error) -> BenchError + '_ {
    move |e| BenchError::Engine {
        what: what.to_owned(),
        message: e.to_string(),
    }
}

fn mismatch(what: String) -> BenchError {
    BenchError::Engine {
        what: "checking a proof".into(),
        message: what,
    }
}

/// Runs the benchmark; `progress` hears each phase as it starts.
pub fn run(
    config: &ProofBenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<ProofBenchReport, BenchError> {
    let mut workloads = Vec::new();
    for workload in &config.workloads {
        workloads.push(run_workload(config, workload, progress)?);
    }
    Ok(ProofBenchReport {
        machine: crate::measure::machine::MachineInfo::read(),
        group_depth: config.group_depth,
        witness_group_depth: config.witness_group_depth,
        workloads,
    })
}

fn run_workload(
    config: &ProofBenchConfig,
    workload: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<WorkloadProofs, BenchError> {
    let meta = crate::gen::WorkloadMeta::read(workload)?;
    let blocks_path = workload.join("blocks.jsonl");
    if !blocks_path.is_file() {
        return Err(BenchError::InvalidOptions {
            what: format!(
                "{} has no blocks.jsonl: record the blocks first with `ubt bench run`",
                workload.display()
            ),
        });
    }
    let mut blocks = read_blocks(&blocks_path)?;
    if let Some(max) = config.blocks_max {
        blocks.truncate(max);
    }
    // One pristine database per state file (workloads of one state share
    // it, hard-linked or not): named by the file's device and inode.
    let state = workload.join("state.jsonl");
    let identity =
        std::fs::metadata(&state).map_err(|e| BenchError::io_at("reading", &state, e))?;
    let pristine = config.dir.join("db").join(format!(
        "state-{:x}-{:x}-gd{}",
        std::os::unix::fs::MetadataExt::dev(&identity),
        std::os::unix::fs::MetadataExt::ino(&identity),
        config.group_depth
    ));
    let tree_entries = build_pristine(config, workload, &pristine, progress)?;
    let run_dir = config.dir.join("run");
    db_cache::fresh_copy(&pristine, &run_dir, true)?;
    let options = Options {
        group_depth: Some(config.group_depth),
        ..Options::default()
    };
    let mut db = Db::open(&run_dir, options).map_err(engine("opening the database"))?;
    let mut figures = Vec::with_capacity(blocks.len());
    for block in &blocks {
        progress(&format!("{}: block {}", meta.name, block.block));
        figures.push(prove_block(config, &mut db, &run_dir, block)?);
    }
    db.close().map_err(engine("closing the database"))?;
    Ok(WorkloadProofs {
        workload: meta.name,
        tree_entries,
        blocks: figures,
    })
}

/// Builds the pristine database of `workload`'s state unless a marked one
/// is there; returns its tree entries.
fn build_pristine(
    config: &ProofBenchConfig,
    workload: &Path,
    db: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<u64, BenchError> {
    let label = format!("ubt-gd{}", config.group_depth);
    let state = workload.join("state.jsonl");
    if let Some(marker) = db_cache::loaded(db, &label, &state)? {
        return Ok(marker.entries);
    }
    db_cache::forget(db)?;
    progress(&format!("reading and sorting {}", state.display()));
    let started = Instant::now();
    let entries = tree_entries(&state, &mut |_| {})?;
    progress("building the database");
    if let Some(parent) = db.parent() {
        std::fs::create_dir_all(parent).map_err(|e| BenchError::io_at("creating", parent, e))?;
    }
    let options = Options {
        group_depth: Some(config.group_depth),
        ..Options::default()
    };
    let (handle, _) =
        Db::build(db, options, entries.iter()).map_err(engine("building the database"))?;
    let root = format!("{}", handle.root());
    handle.close().map_err(engine("closing the database"))?;
    let marker = db_cache::new_marker(&label, &state, root, entries.len() as u64, started, db)?;
    db_cache::mark_loaded(db, &marker)?;
    Ok(marker.entries)
}

/// The distinct tree keys a block reads or writes, sorted.
fn block_keys(block: &ReplayBlock, writes: &[(B256, B256)]) -> Vec<B256> {
    let mut owned = Vec::new();
    for read in &block.reads {
        read_keys(read, &mut owned);
    }
    let mut keys: Vec<B256> = owned.into_iter().map(|(_, key)| key).collect();
    keys.extend(writes.iter().map(|(key, _)| *key));
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn prove_block(
    config: &ProofBenchConfig,
    db: &mut Db,
    run_dir: &Path,
    block: &ReplayBlock,
) -> Result<BlockProofFigures, BenchError> {
    let writes = tree_writes(&block.writes);
    let keys = block_keys(block, &writes);
    let pre_root = db.root();
    // Cold: the page cache dropped for the database's files, the store's
    // cache cleared.
    db.clear_cache();
    make_cold(&db_cache::files_under(run_dir)?)?;
    let reads_before = db.diagnostics().io.bucket_reads;
    let started = Instant::now();
    let proof = db.prove(&keys).map_err(engine("proving the block"))?;
    let build_cold_ms = ms(started);
    let build_cold_reads = db.diagnostics().io.bucket_reads - reads_before;
    let started = Instant::now();
    let proof_again = db.prove(&keys).map_err(engine("proving the block"))?;
    let build_warm_ms = ms(started);
    if proof_again != proof {
        return Err(mismatch("two proofs of one key set differ".into()));
    }
    let bytes = proof.encode();
    let (present, verify_ms) = verify_bytes(&bytes, &pre_root, db, &keys)?;
    let started = Instant::now();
    let stateless_root = ubt_spec::stateless::apply(&pre_root.0, &proof, &writes)
        .map_err(|e| mismatch(format!("stateless apply: {e}")))?;
    let stateless_ms = ms(started);
    let per_key = per_key_proofs(db, &pre_root, &keys)?;
    // geth's trie looks up a slightly different set than the block's tree
    // keys (no slot of an absent account, code chunks only on a code
    // change): its witness is for the keys it looks up.
    let geth_keys = geth_witness_keys(block, &*db)?;
    let started = Instant::now();
    let witness = db
        .witness(&geth_keys, config.witness_group_depth)
        .map_err(engine("building the witness"))?;
    let witness_build_ms = ms(started);
    let post_root = db.apply(&writes).map_err(engine("applying the block"))?;
    db.commit().map_err(engine("committing the block"))?;
    if Root::from(stateless_root) != post_root {
        return Err(mismatch(format!(
            "block {}: the stateless root {} differs from the database's {post_root}",
            block.block,
            Root::from(stateless_root)
        )));
    }
    Ok(BlockProofFigures {
        block: block.block,
        keys: keys.len(),
        present,
        proof_bytes: bytes.len(),
        build_cold_ms,
        build_cold_reads,
        build_warm_ms,
        verify_ms,
        stateless_ms,
        per_key_bytes: per_key.0,
        per_key_build_ms: per_key.1,
        per_key_verify_ms: per_key.2,
        witness_blobs: witness.len(),
        witness_bytes: witness.iter().map(|node| node.blob.len()).sum(),
        witness_build_ms,
    })
}

/// Decodes and verifies `bytes` against `root` (timed), and checks the
/// proven values against the database's: `(present keys, ms)`.
fn verify_bytes(
    bytes: &[u8],
    root: &Root,
    db: &Db,
    keys: &[B256],
) -> Result<(usize, f64), BenchError> {
    let started = Instant::now();
    let decoded =
        ubt_engine::Proof::decode(bytes).map_err(|e| mismatch(format!("decoding: {e}")))?;
    let proven =
        verify_proof(&root.0, &decoded).map_err(|e| mismatch(format!("verifying: {e}")))?;
    let verify_ms = ms(started);
    let stored = db.get_many(keys).map_err(engine("reading the keys"))?;
    for (key, value) in keys.iter().zip(&stored) {
        if proven.get(key) != Some(value) {
            return Err(mismatch(format!(
                "the proof's value of {key} is not the database's"
            )));
        }
    }
    Ok((stored.iter().filter(|v| v.is_some()).count(), verify_ms))
}

/// One proof per key: `(total bytes, build ms, verify ms)`.
fn per_key_proofs(db: &Db, root: &Root, keys: &[B256]) -> Result<(usize, f64, f64), BenchError> {
    let started = Instant::now();
    let mut encoded = Vec::with_capacity(keys.len());
    for key in keys {
        let proof = db
            .prove(std::slice::from_ref(key))
            .map_err(engine("proving one key"))?;
        encoded.push(proof.encode());
    }
    let build_ms = ms(started);
    let started = Instant::now();
    for bytes in &encoded {
        let proof =
            ubt_engine::Proof::decode(bytes).map_err(|e| mismatch(format!("decoding: {e}")))?;
        verify_proof(&root.0, &proof).map_err(|e| mismatch(format!("verifying: {e}")))?;
    }
    let verify_ms = ms(started);
    Ok((encoded.iter().map(Vec::len).sum(), build_ms, verify_ms))
}

/// The report as Markdown: per workload, the medians over its blocks.
pub fn to_markdown(report: &ProofBenchReport) -> String {
    let mut out = format!(
        "Machine: {}\n\nDatabase group depth {}, go-ethereum witness at group depth {}. \
         Medians over each workload's blocks.\n\n",
        report.machine.summary(),
        report.group_depth,
        report.witness_group_depth
    );
    out.push_str(
        "| workload | entries | blocks | keys | multiproof B/key | per-key proofs B/key | geth witness B/key | \
         build cold ms (reads) | build warm ms | verify ms | stateless root ms | per-key build ms | per-key verify ms | witness build ms |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for workload in &report.workloads {
        let blocks = &workload.blocks;
        let med = |f: &dyn Fn(&BlockProofFigures) -> f64| {
            median(&blocks.iter().map(f).collect::<Vec<f64>>())
        };
        let per_key =
            |f: &dyn Fn(&BlockProofFigures) -> usize| med(&|b| f(b) as f64 / b.keys.max(1) as f64);
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} ({:.0}) | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            workload.workload,
            workload.tree_entries,
            blocks.len(),
            med(&|b| b.keys as f64),
            per_key(&|b| b.proof_bytes),
            per_key(&|b| b.per_key_bytes),
            per_key(&|b| b.witness_bytes),
            med(&|b| b.build_cold_ms),
            med(&|b| b.build_cold_reads as f64),
            med(&|b| b.build_warm_ms),
            med(&|b| b.verify_ms),
            med(&|b| b.stateless_ms),
            med(&|b| b.per_key_build_ms),
            med(&|b| b.per_key_verify_ms),
            med(&|b| b.witness_build_ms),
        ));
    }
    out
}

//! Raw workloads: random 32-byte keys and values, and blocks of random
//! reads or random updates of existing keys.
//!
//! Two workload directories share one state: `raw_reads/` (read-only
//! blocks) and `raw_writes/` (write-only blocks). The state file is
//! written once into `raw_reads/` and hard-linked into `raw_writes/`
//! (copied where the file system cannot link); engines load each
//! directory's `state.jsonl` as usual.
//!
//! Key `i` and its value come from their own random stream
//! `(seed, RAW_STATE, i)`, so a block can name key `i` by regenerating it,
//! without the generator keeping the keys in memory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::meta::{StateStorage, WorkloadMeta, FORMAT};
use super::rng::GenRng;
use super::write::{hex_string, LineWriter};
use super::{tag, Progress, Stage, PROGRESS_EVERY};
use crate::BenchError;

/// Name (and directory) of the read-only raw workload.
pub const RAW_READS: &str = "raw_reads";
/// Name (and directory) of the write-only raw workload.
pub const RAW_WRITES: &str = "raw_writes";

/// The blocks of the raw workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawBlocks {
    /// Blocks of `raw_reads`.
    pub read_blocks: u64,
    /// Distinct existing keys each read block reads.
    pub reads_per_block: u64,
    /// Blocks of `raw_writes`.
    pub write_blocks: u64,
    /// Distinct existing keys each write block updates with new random values.
    pub writes_per_block: u64,
}

/// What [`gen_raw`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct RawReport {
    /// `<dir>/raw_reads`.
    pub reads_dir: PathBuf,
    /// `<dir>/raw_writes`.
    pub writes_dir: PathBuf,
    /// `raw_reads/workload.json`.
    pub reads_meta: WorkloadMeta,
    /// `raw_writes/workload.json`.
    pub writes_meta: WorkloadMeta,
    /// Size of the (shared) `state.jsonl` in bytes.
    pub state_bytes: u64,
}

/// Key `i` of the raw state of `seed`, and its value.
pub fn raw_entry(seed: u64, i: u64) -> ([u8; 32], [u8; 32]) {
    let mut rng = GenRng::stream(seed, tag::RAW_STATE, i);
    (rng.bytes32(), rng.bytes32())
}

/// Writes `<dir>/raw_reads/` and `<dir>/raw_writes/`: `entries` random
/// keys and values (`{"raw":..,"value":..}`), `blocks.read_blocks` blocks
/// of `reads_per_block` distinct random existing keys read, and
/// `blocks.write_blocks` blocks of `writes_per_block` distinct random
/// existing keys set to new random values. Blocks have `gas_used` 0 and
/// `txs` 0. The same `seed` gives byte-identical files.
pub fn gen_raw(
    dir: &Path,
    entries: u64,
    seed: u64,
    blocks: RawBlocks,
    progress: &mut dyn FnMut(Progress),
) -> Result<RawReport, BenchError> {
    check_distinct_keys(entries, &blocks)?;
    let reads_dir = dir.join(RAW_READS);
    let writes_dir = dir.join(RAW_WRITES);
    for d in [&reads_dir, &writes_dir] {
        std::fs::create_dir_all(d).map_err(|e| BenchError::io_at("create", d, e))?;
    }

    let state_path = reads_dir.join("state.jsonl");
    let (state_records, state_bytes) = write_raw_state(&state_path, entries, seed, progress)?;
    link_or_copy(&state_path, &writes_dir.join("state.jsonl"))?;
    write_raw_blocks(&reads_dir, &writes_dir, entries, seed, &blocks, progress)?;

    let meta = |name: &str, blocks: u64, description: String| WorkloadMeta {
        format: FORMAT,
        name: name.to_owned(),
        mode: "raw".to_owned(),
        seed,
        description,
        state: StateStorage::File,
        state_records,
        blocks,
        tree_entries: Some(entries),
        erc20: None,
        chain: None,
        sequential: None,
        hot_contracts: None,
    };
    let reads_meta = meta(
        RAW_READS,
        blocks.read_blocks,
        format!(
            "{entries} random 32-byte keys and values; blocks read {} distinct random existing keys",
            blocks.reads_per_block
        ),
    );
    let writes_meta = meta(
        RAW_WRITES,
        blocks.write_blocks,
        format!(
            "{entries} random 32-byte keys and values; blocks set {} distinct random existing keys to new random values",
            blocks.writes_per_block
        ),
    );
    reads_meta.write(&reads_dir)?;
    writes_meta.write(&writes_dir)?;
    Ok(RawReport {
        reads_dir,
        writes_dir,
        reads_meta,
        writes_meta,
        state_bytes,
    })
}

/// Refuses blocks of more distinct keys than the state holds.
fn check_distinct_keys(entries: u64, blocks: &RawBlocks) -> Result<(), BenchError> {
    for (per_block, count, what) in [
        (
            blocks.reads_per_block,
            blocks.read_blocks,
            "reads_per_block",
        ),
        (
            blocks.writes_per_block,
            blocks.write_blocks,
            "writes_per_block",
        ),
    ] {
        if count > 0 && per_block > entries {
            return Err(BenchError::InvalidOptions {
                what: format!("{what} = {per_block} distinct keys out of {entries} entries"),
            });
        }
    }
    Ok(())
}

/// Writes the `entries` raw records of `seed` to `path`; returns its
/// records and bytes.
fn write_raw_state(
    path: &Path,
    entries: u64,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(u64, u64), BenchError> {
    let mut state = LineWriter::create(path)?;
    for i in 0..entries {
        let (key, value) = raw_entry(seed, i);
        state.raw(&key, &value)?;
        if (i + 1) % PROGRESS_EVERY == 0 {
            progress(Progress::new(Stage::State, i + 1, entries));
        }
    }
    let written = state.finish()?;
    progress(Progress::new(Stage::State, entries, entries));
    Ok(written)
}

/// Writes the read blocks under `reads_dir` and the write blocks under
/// `writes_dir`.
fn write_raw_blocks(
    reads_dir: &Path,
    writes_dir: &Path,
    entries: u64,
    seed: u64,
    blocks: &RawBlocks,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), BenchError> {
    let total_blocks = blocks.read_blocks + blocks.write_blocks;
    let mut done = 0;
    let mut out = LineWriter::create(&reads_dir.join("blocks.jsonl"))?;
    for number in 1..=blocks.read_blocks {
        let mut rng = GenRng::stream(seed, tag::RAW_READS, number);
        let reads: Vec<String> = distinct_indices(&mut rng, entries, blocks.reads_per_block)
            .map(|i| format!("r:{}", hex_string(&raw_entry(seed, i).0)))
            .collect();
        out.block(number, 0, 0, &reads, &[])?;
        done += 1;
        progress(Progress::new(Stage::Blocks, done, total_blocks));
    }
    out.finish()?;
    let mut out = LineWriter::create(&writes_dir.join("blocks.jsonl"))?;
    for number in 1..=blocks.write_blocks {
        let mut rng = GenRng::stream(seed, tag::RAW_WRITES, number);
        let indices: Vec<u64> =
            distinct_indices(&mut rng, entries, blocks.writes_per_block).collect();
        let writes: Vec<String> = indices
            .into_iter()
            .map(|i| {
                let key = raw_entry(seed, i).0;
                format!("r:{}={}", hex_string(&key), hex_string(&rng.bytes32()))
            })
            .collect();
        out.block(number, 0, 0, &[], &writes)?;
        done += 1;
        progress(Progress::new(Stage::Blocks, done, total_blocks));
    }
    out.finish()?;
    Ok(())
}

/// `count` distinct indices in `0..n` (`count <= n`), in the order drawn.
fn distinct_indices(rng: &mut GenRng, n: u64, count: u64) -> impl Iterator<Item = u64> {
    let capacity = usize::try_from(count).unwrap_or(0);
    let mut seen = HashSet::with_capacity(capacity);
    let mut order = Vec::with_capacity(capacity);
    while (order.len() as u64) < count {
        let i = rng.below(n);
        if seen.insert(i) {
            order.push(i);
        }
    }
    order.into_iter()
}

/// Hard-links `from` to `to` (replacing `to`), or copies it when linking fails.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), BenchError> {
    match std::fs::remove_file(to) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(BenchError::io_at("remove", to, e)),
    }
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).map_err(|e| BenchError::io_at("copy to", to, e))?;
    }
    Ok(())
}

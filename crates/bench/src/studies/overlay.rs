//! `ubt bench overlay`: the state-root-with-overlay microbenchmark of the
//! trie-native page store report (base state of 100,000 accounts with 10
//! storage slots each; overlays of 1,000 and 10,000 updated accounts; the
//! time to compute the root over the overlay), and a persistence-threshold
//! sweep (blocks kept in memory before the oldest are persisted: 2, 8, 32,
//! 128, 512) reporting block throughput and root time.
//!
//! "Root over an overlay" is [`Db::apply`] of the overlay's writes as a new
//! layer on the persisted base: it returns the root without writing to
//! disk. Each overlay is measured cold (page cache dropped, database
//! reopened), warm (database reopened, data file in the page cache) and
//! hot (the touched buckets already in memory: repeated apply and discard).

use std::path::{Path, PathBuf};
use std::time::Instant;

use alloy_primitives::{Address, B256, U256};
use serde::Serialize;
use ubt_engine::{Db, Options};
use ubt_spec::basic_data::BasicData;
use ubt_spec::key::{basic_data_key, code_hash_key, storage_slot_key};

use crate::error::BenchError;
use crate::measure::cold::{make_cold, make_warm};
use crate::statistics::{median, quantile_sorted, QuantileMethod};

/// What to run.
#[derive(Clone, Debug)]
pub struct OverlayBenchConfig {
    /// Working directory (the database goes here).
    pub dir: PathBuf,
    /// Accounts in the base state.
    pub accounts: u64,
    /// Storage slots per account.
    pub slots_per_account: u64,
    /// Overlay sizes (updated accounts).
    pub overlays: Vec<u64>,
    /// Repetitions of each hot measurement.
    pub repetitions: usize,
    /// Persistence thresholds to sweep (blocks kept in memory).
    pub thresholds: Vec<usize>,
    /// Blocks per threshold run.
    pub sweep_blocks: usize,
    /// Accounts updated per block in the sweep.
    pub sweep_accounts_per_block: u64,
    /// Group depth.
    pub group_depth: u8,
}

impl OverlayBenchConfig {
    /// The report's shape under `dir`.
    pub fn new(dir: PathBuf) -> Self {
        OverlayBenchConfig {
            dir,
            accounts: 100_000,
            slots_per_account: 10,
            overlays: vec![1_000, 10_000],
            repetitions: 15,
            thresholds: vec![2, 8, 32, 128, 512],
            sweep_blocks: 1_024,
            sweep_accounts_per_block: 200,
            group_depth: ubt_engine::DEFAULT_GROUP_DEPTH,
        }
    }
}

/// One overlay's root times.
#[derive(Clone, Debug, Serialize)]
pub struct OverlayFigures {
    /// Updated accounts.
    pub accounts: u64,
    /// Writes in the overlay (2 account leaves + 2 slots per account).
    pub writes: u64,
    /// Buckets the overlay touches.
    pub buckets: u64,
    /// Root with the page cache dropped and the database reopened.
    pub cold_ms: f64,
    /// Root with the database reopened and the data file in the page cache.
    pub warm_ms: f64,
    /// Root with the touched buckets already in memory (median).
    pub hot_ms: f64,
    /// SHA-256 compressions of one hot root (the median repetition's
    /// count), when the build counts them.
    pub hot_compressions: Option<u64>,
    /// Where a hot root's time goes (the median of each phase).
    pub hot_phases: HotPhases,
}

/// A hot root's phases, each the median over the repetitions, in
/// milliseconds (the store's [`ubt_engine::ApplyTiming`]; the medians need
/// not add up to the median root).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HotPhases {
    /// Finding each write's bucket and taking the buckets out of the tip
    /// (the calling thread; the pool from 8,192 writes).
    pub locate_ms: f64,
    /// Writing and rehashing the buckets on the thread pool.
    pub buckets_ms: f64,
    /// Putting the buckets back and rehashing the upper trie (one thread,
    /// beside the layer's old values built on another).
    pub upper_ms: f64,
    /// The rest of the apply: the layer's bookkeeping around the tree's
    /// part (its owners, its entry in the history).
    pub layer_ms: f64,
}

/// One persistence threshold's run.
#[derive(Clone, Debug, Serialize)]
pub struct ThresholdFigures {
    /// Blocks kept in memory before the oldest are persisted.
    pub threshold: usize,
    /// Blocks applied.
    pub blocks: usize,
    /// Blocks per second over the whole run (apply + persists + checkpoints).
    pub blocks_per_s: f64,
    /// Median root time per block (`apply`).
    pub root_ms_median: f64,
    /// 99th percentile root time per block.
    pub root_ms_p99: f64,
    /// Median time of a persist.
    pub persist_ms_median: f64,
}

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct OverlayBenchReport {
    /// The machine.
    pub machine: crate::measure::machine::MachineInfo,
    /// Accounts in the base state.
    pub accounts: u64,
    /// Values in the base state.
    pub values: u64,
    /// Seconds to build the base state.
    pub build_s: f64,
    /// Overlay root times.
    pub overlays: Vec<OverlayFigures>,
    /// Persistence-threshold sweep.
    pub thresholds: Vec<ThresholdFigures>,
}

fn address(i: u64) -> Address {
    let hash = ubt_spec::hash::sha256(&[b"ubt-overlay".as_slice(), &i.to_be_bytes()].concat());
    Address::from_slice(&hash[12..])
}

fn account_leaves(i: u64, nonce: u64, balance: u64) -> [(B256, B256); 2] {
    let who = address(i);
    let basic = BasicData {
        version: 0,
        code_size: 0,
        nonce,
        balance: u128::from(balance),
    }
    .pack();
    let empty_code = B256::from(alloy_primitives::keccak256([]));
    [
        (basic_data_key(&who), basic),
        (code_hash_key(&who), empty_code),
    ]
}

fn slot_leaf(i: u64, slot: u64, value: u64) -> (B256, B256) {
    let key = storage_slot_key(&address(i), &U256::from(slot));
    (key, B256::from(U256::from(value)))
}

/// An overlay: accounts `first..first + count` updated (nonce, balance and
/// two slots each) for round `round`.
fn overlay(first: u64, count: u64, accounts: u64, round: u64) -> Vec<(B256, B256)> {
    let mut writes = Vec::with_capacity(usize::try_from(4 * count).unwrap_or(0));
    for j in 0..count {
        let i = (first + j * 7919) % accounts;
        writes.extend(account_leaves(i, round + 1, 1_000 + round * 7 + j));
        writes.push(slot_leaf(i, round % 10, round * 13 + j));
        writes.push(slot_leaf(i, (round + 3) % 10, round * 17 + j));
    }
    writes
}

fn engine_error(what: &str) -> impl FnOnce(ubt_engine::Error) -> BenchError + '_ {
    move |error| BenchError::Engine {
        what: what.to_string(),
        message: error.to_string(),
    }
}

fn db_files(db: &Path) -> Vec<PathBuf> {
    [
        ubt_engine::DATA_FILE,
        ubt_engine::META_FILE,
        ubt_engine::WAL_FILE,
    ]
    .iter()
    .map(|name| db.join(name))
    .collect()
}

/// Runs the benchmark; `progress` receives one line per phase.
pub fn run(
    config: &OverlayBenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<OverlayBenchReport, BenchError> {
    std::fs::create_dir_all(&config.dir)
        .map_err(|e| BenchError::io_at("creating", &config.dir, e))?;
    let db_dir = config.dir.join("overlay-bench");
    let _ = std::fs::remove_dir_all(&db_dir);
    let options = Options {
        group_depth: Some(config.group_depth),
        ..Options::default()
    };
    progress(&format!(
        "building the base state: {} accounts x {} slots",
        config.accounts, config.slots_per_account
    ));
    let (values, build_s) = build_base(config, &db_dir, &options)?;
    let mut overlays = Vec::new();
    for (index, &count) in config.overlays.iter().enumerate() {
        progress(&format!("root over an overlay of {count} accounts"));
        overlays.push(measure_overlay(
            config,
            &db_dir,
            &options,
            index as u64,
            count,
        )?);
    }
    let mut thresholds = Vec::new();
    for &threshold in &config.thresholds {
        progress(&format!(
            "persistence threshold {threshold}: {} blocks of {} accounts",
            config.sweep_blocks, config.sweep_accounts_per_block
        ));
        thresholds.push(measure_threshold(config, &db_dir, &options, threshold)?);
    }
    let _ = std::fs::remove_dir_all(&db_dir);
    Ok(OverlayBenchReport {
        machine: crate::measure::machine::MachineInfo::read(),
        accounts: config.accounts,
        values,
        build_s,
        overlays,
        thresholds,
    })
}

/// Builds the base state in `db_dir`; returns its values and the seconds
/// the build took.
fn build_base(
    config: &OverlayBenchConfig,
    db_dir: &Path,
    options: &Options,
) -> Result<(u64, f64), BenchError> {
    let started = Instant::now();
    let mut entries: Vec<(B256, B256)> = Vec::new();
    for i in 0..config.accounts {
        entries.extend(account_leaves(i, 1, 1_000_000 + i));
        for slot in 0..config.slots_per_account {
            entries.push(slot_leaf(i, slot, i * 100 + slot + 1));
        }
    }
    entries.sort_unstable_by_key(|(k, _)| *k);
    let values = entries.len() as u64;
    let (db, _) = Db::build(db_dir, options.clone(), entries).map_err(engine_error("build"))?;
    let build_s = started.elapsed().as_secs_f64();
    db.close().map_err(engine_error("close"))?;
    Ok((values, build_s))
}

/// The root over overlay `index` of `count` accounts: cold, warm and hot.
fn measure_overlay(
    config: &OverlayBenchConfig,
    db_dir: &Path,
    options: &Options,
    index: u64,
    count: u64,
) -> Result<OverlayFigures, BenchError> {
    let writes = overlay(index * 31, count, config.accounts, index);
    make_cold(&db_files(db_dir))?;
    let mut db = Db::open(db_dir, options.clone()).map_err(engine_error("open"))?;
    let started = Instant::now();
    db.apply(&writes).map_err(engine_error("apply"))?;
    let cold_ms = started.elapsed().as_secs_f64() * 1e3;
    let buckets = db.diagnostics().last_apply.buckets_touched;
    drop(db);
    make_warm(&[db_dir.join(ubt_engine::DATA_FILE)])?;
    let mut db = Db::open(db_dir, options.clone()).map_err(engine_error("open"))?;
    let started = Instant::now();
    db.apply(&writes).map_err(engine_error("apply"))?;
    let warm_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut hot = Vec::with_capacity(config.repetitions);
    let mut hot_compressions = Vec::with_capacity(config.repetitions);
    let mut phases: [Vec<f64>; 4] = Default::default();
    for _ in 0..config.repetitions {
        db.discard_uncommitted();
        let before = ubt_spec::hash::compressions();
        let started = Instant::now();
        db.apply(&writes).map_err(engine_error("apply"))?;
        let root_ms = started.elapsed().as_secs_f64() * 1e3;
        hot.push(root_ms);
        if let Some((after, before)) = ubt_spec::hash::compressions().zip(before) {
            hot_compressions.push(after - before);
        }
        let timing = db.diagnostics().last_apply;
        let tree_ms = [
            timing.locate_us,
            timing.read_us + timing.hash_tail_us,
            timing.upper_us,
        ]
        .map(|us| us as f64 / 1e3);
        for (phase, ms) in phases.iter_mut().zip(tree_ms) {
            phase.push(ms);
        }
        phases[3].push((root_ms - tree_ms.iter().sum::<f64>()).max(0.0));
    }
    hot_compressions.sort_unstable();
    let [locate, buckets_phase, upper, layer] = phases.map(|phase| median(&phase));
    let hot_phases = HotPhases {
        locate_ms: locate,
        buckets_ms: buckets_phase,
        upper_ms: upper,
        layer_ms: layer,
    };
    db.discard_uncommitted();
    drop(db);
    Ok(OverlayFigures {
        accounts: count,
        writes: writes.len() as u64,
        buckets,
        cold_ms,
        warm_ms,
        hot_ms: median(&hot),
        hot_compressions: hot_compressions.get(hot_compressions.len() / 2).copied(),
        hot_phases,
    })
}

/// A run of blocks that persists whenever more than `threshold` layers
/// are unpersisted.
fn measure_threshold(
    config: &OverlayBenchConfig,
    db_dir: &Path,
    options: &Options,
    threshold: usize,
) -> Result<ThresholdFigures, BenchError> {
    let mut db = Db::open(db_dir, options.clone()).map_err(engine_error("open"))?;
    let mut roots_ms = Vec::with_capacity(config.sweep_blocks);
    let mut persists_ms = Vec::new();
    let started = Instant::now();
    for b in 0..config.sweep_blocks as u64 {
        let writes = overlay(
            b * 1_013,
            config.sweep_accounts_per_block,
            config.accounts,
            b + 100,
        );
        let applied = Instant::now();
        db.apply(&writes).map_err(engine_error("apply"))?;
        roots_ms.push(applied.elapsed().as_secs_f64() * 1e3);
        let layers = db.layers();
        let unpersisted: Vec<_> = layers.iter().filter(|l| !l.persisted).collect();
        if unpersisted.len() > threshold {
            let oldest_to_keep = unpersisted.len() - threshold;
            let root = unpersisted[oldest_to_keep - 1].root;
            let persisting = Instant::now();
            db.persist(&root).map_err(engine_error("persist"))?;
            persists_ms.push(persisting.elapsed().as_secs_f64() * 1e3);
        }
    }
    db.commit().map_err(engine_error("commit"))?;
    let elapsed = started.elapsed().as_secs_f64();
    db.discard_uncommitted();
    drop(db);
    let mut sorted = roots_ms.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(ThresholdFigures {
        threshold,
        blocks: config.sweep_blocks,
        blocks_per_s: config.sweep_blocks as f64 / elapsed,
        root_ms_median: median(&roots_ms),
        root_ms_p99: quantile_sorted(&sorted, 0.99, QuantileMethod::NearestRank),
        persist_ms_median: if persists_ms.is_empty() {
            0.0
        } else {
            median(&persists_ms)
        },
    })
}

/// Renders the report as Markdown.
pub fn to_markdown(report: &OverlayBenchReport) -> String {
    use std::fmt::Write;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Base state: {} accounts x 10 slots ({} values, built in {:.2} s); {}.\n",
        report.accounts,
        report.values,
        report.build_s,
        report.machine.summary()
    );
    let _ = writeln!(
        md,
        "| overlay | writes | buckets | root cold | root warm | root hot (median) | hot: locate / buckets / upper / layer | hot root's SHA-256 compressions |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for o in &report.overlays {
        let _ = writeln!(
            md,
            "| {} accounts | {} | {} | {:.1} ms | {:.2} ms | {:.2} ms | {:.2} / {:.2} / {:.2} / {:.2} ms | {} |",
            o.accounts,
            o.writes,
            o.buckets,
            o.cold_ms,
            o.warm_ms,
            o.hot_ms,
            o.hot_phases.locate_ms,
            o.hot_phases.buckets_ms,
            o.hot_phases.upper_ms,
            o.hot_phases.layer_ms,
            o.hot_compressions
                .map_or_else(|| "-".to_owned(), |c| c.to_string())
        );
    }
    let _ = writeln!(
        md,
        "\n| blocks kept in memory | blocks/s | root per block median | p99 | persist median |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for t in &report.thresholds {
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms |",
            t.threshold, t.blocks_per_s, t.root_ms_median, t.root_ms_p99, t.persist_ms_median
        );
    }
    md
}

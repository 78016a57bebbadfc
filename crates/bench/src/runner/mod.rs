//! `ubt bench run` and `ubt bench sweep`: blocks of the studies' workloads
//! on ubt at one or more group depths and on the go-ethereum peer, from
//! the same loaded state, each run cold, with metrics as JSON lines and a
//! report.
//!
//! # Protocol
//!
//! For every state directory (docs/workload-format.md) and every engine
//! configuration, the state is loaded once into a pristine database
//! (ubt: [`ubt_engine::Db::build`] from the sorted tree entries; geth:
//! `geth-peer load`), kept under `<out>/db/` with a marker naming the
//! state, and reused by later invocations. Each run of each configuration
//! then starts from a fresh copy of its pristine database with the copy
//! dropped from the page cache (checked with `mincore`: 0 bytes resident),
//! so every run reads the same bytes cold. Run 1 is the warm-up and is
//! left out of the statistics. Configurations take turns run by run, so a
//! slow phase of the machine does not land on one configuration only.
//!
//! EVM workloads are executed by ubt (revm over the database); the first
//! run records the blocks' accesses into the workload directory's
//! `blocks.jsonl`, which the peer then replays. ubt's block roots are
//! checked against geth's binary trie: a difference stops the run.
//!
//! Results are appended to `<out>/metrics.jsonl` one run at a time; a run
//! already there is not repeated, so an interrupted invocation resumes
//! where it stopped.

pub mod blocks;
pub mod db_cache;
pub mod geth;
pub mod kind;
pub mod source;
pub mod ubt_exec;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ubt_engine::{Db, Options};
use ubt_evm::workloads::BlockShape;
use ubt_evm::{attack, erc20, sequential, CodeStore};

use self::blocks::{evm_blocks, read_blocks, BlockLine, EvmSetup, ReplayBlock};
use self::db_cache::{fresh_copy, LoadMarker};
use self::geth::GethEngine;
use self::kind::Workload;
use self::ubt_exec::RunLabel;
use crate::device::DeviceLimits;
use crate::gen::{read_codes, tree_entries, TreeEntries, WorkloadMeta};
use crate::metrics::{read_metrics_file, BlockMetrics};
use crate::report::{write_report, ReportOptions, WrittenReport};
use crate::BenchError;

/// Whether ubt's configurations read with the speculative prefetch pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefetchMode {
    /// Reads one at a time as the EVM asks (`gd6`), like the peer.
    Off,
    /// A speculative pass hints every slot first (`gd6-prefetch`).
    On,
    /// Both variants.
    Both,
}

impl PrefetchMode {
    fn variants(self) -> &'static [bool] {
        match self {
            PrefetchMode::Off => &[false],
            PrefetchMode::On => &[true],
            PrefetchMode::Both => &[false, true],
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// State directories (each with `workload.json` and `state.jsonl`).
    pub states: Vec<PathBuf>,
    /// Where metrics, the report, loaded databases and recorded workloads go.
    pub out_dir: PathBuf,
    /// Workloads; `None` runs each state's defaults (the ERC20 and
    /// sequential workloads on a chain-like state, its own blocks on a
    /// state directory that has `blocks.jsonl`).
    pub workloads: Option<Vec<Workload>>,
    /// Block shape of the EVM workloads.
    pub shape: BlockShape,
    /// Blocks per run of an EVM workload.
    pub blocks: u64,
    /// Measured runs; one warm-up run comes first.
    pub runs: u32,
    /// ubt's group depths.
    pub group_depths: Vec<u8>,
    /// ubt's read variants.
    pub prefetch: PrefetchMode,
    /// The peer's configurations (empty: ubt alone).
    pub peers: Vec<GethEngine>,
    /// The peer's Go sources.
    pub peer_source: PathBuf,
    /// Skip dropping the page cache (for quick looks; the report says so).
    pub warm: bool,
    /// ubt's cache budget; `None` keeps the default.
    pub memory_budget_bytes: Option<usize>,
    /// Measure the device (O_DIRECT random 4 KiB reads at QD1 and QD32) at
    /// the start of the run, so the report can set per-miss times against
    /// the device's own limit; `None` skips it. A resumed run keeps the
    /// figures of its first start (`device.json`).
    pub device_probe: Option<crate::device::DeviceProbeOptions>,
    /// The command line, quoted in the report.
    pub command: String,
}

/// What the runner reports while it works.
#[derive(Clone, Debug)]
pub enum RunEvent {
    /// A phase starts; `total` units will follow (0: unknown).
    Phase {
        /// What the phase does.
        label: String,
        /// Units of work.
        total: u64,
    },
    /// `n` more units of the current phase are done.
    Advance(u64),
    /// The current phase is over.
    Done,
    /// Something the user should know (Go missing, a resumed run).
    Note(String),
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// `<out>/metrics.jsonl`.
    pub metrics_path: PathBuf,
    /// The report and its charts.
    pub report: WrittenReport,
    /// Runs executed now / found done from an earlier invocation.
    pub runs_done: usize,
    /// See `runs_done`.
    pub runs_resumed: usize,
    /// Databases loaded now (the others were reused from `<out>/db`).
    pub loads_done: usize,
    /// Notes also shown as [`RunEvent::Note`].
    pub notes: Vec<String>,
}

/// One engine configuration.
#[derive(Clone, Debug)]
enum Config {
    Ubt { group_depth: u8, prefetch: bool },
    Geth(GethEngine),
}

impl Config {
    fn engine(&self) -> &'static str {
        match self {
            Config::Ubt { .. } => ubt_exec::ENGINE,
            Config::Geth(engine) => engine.engine(),
        }
    }

    fn variant(&self) -> String {
        match self {
            Config::Ubt {
                group_depth,
                prefetch: false,
            } => format!("gd{group_depth}"),
            Config::Ubt {
                group_depth,
                prefetch: true,
            } => format!("gd{group_depth}-prefetch"),
            Config::Geth(engine) => engine.variant(),
        }
    }

    /// The pristine database it runs from.
    fn pristine(&self, db_root: &Path, state_key: &str) -> PathBuf {
        let name = match self {
            Config::Ubt { group_depth, .. } => format!("ubt-gd{group_depth}"),
            Config::Geth(GethEngine::BinTrie { group_depth }) => {
                format!("geth-bintrie-gd{group_depth}")
            }
            Config::Geth(GethEngine::Mpt) => "geth-mpt".into(),
        };
        db_root.join(format!("{state_key}-{name}"))
    }

    fn load_label(&self) -> String {
        match self {
            Config::Ubt { group_depth, .. } => format!("ubt gd{group_depth}"),
            Config::Geth(engine) => engine.to_string(),
        }
    }
}

/// A state directory and what runs on it.
struct StatePlan {
    dir: PathBuf,
    meta: WorkloadMeta,
    /// Short name of the state for database directories.
    key: String,
    /// (workload, its name in metrics, its directory).
    workloads: Vec<(Workload, String, PathBuf)>,
}

fn invalid(what: impl Into<String>) -> BenchError {
    BenchError::InvalidOptions { what: what.into() }
}

fn check_config(config: &RunConfig) -> Result<(), BenchError> {
    if config.states.is_empty() {
        return Err(invalid("no state directory given"));
    }
    if config.runs == 0 {
        return Err(invalid(
            "--runs must be at least 1 (a warm-up run comes on top)",
        ));
    }
    if config.blocks == 0 {
        return Err(invalid("--blocks must be at least 1"));
    }
    if config.group_depths.is_empty() {
        return Err(invalid("no group depth given"));
    }
    if let Some(bad) = config.group_depths.iter().find(|g| !(1..=8).contains(*g)) {
        return Err(invalid(format!("group depth {bad} is not in 1..=8")));
    }
    for engine in &config.peers {
        if let GethEngine::BinTrie { group_depth } = engine {
            if !(1..=8).contains(group_depth) {
                return Err(invalid(format!(
                    "geth group depth {group_depth} is not in 1..=8"
                )));
            }
        }
    }
    Ok(())
}

/// A short, stable name for a state directory: its workload name and a
/// hash of the state file's identity (device and inode, so hard links
/// share a database).
fn state_key(dir: &Path, meta: &WorkloadMeta) -> Result<String, BenchError> {
    use std::hash::{Hash, Hasher};
    let state = dir.join("state.jsonl");
    let metadata = std::fs::metadata(&state).map_err(|e| BenchError::io_at("stat", &state, e))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (metadata.dev(), metadata.ino()).hash(&mut hasher);
    }
    metadata.len().hash(&mut hasher);
    let base = meta
        .name
        .strip_suffix("_reads")
        .or_else(|| meta.name.strip_suffix("_writes"))
        .unwrap_or(&meta.name);
    Ok(format!("{base}-{:08x}", hasher.finish() as u32))
}

fn evm_setup(meta: &WorkloadMeta) -> Option<EvmSetup> {
    let token = meta.erc20.as_ref()?;
    Some(EvmSetup {
        actors: token.actors(),
        holders: token.holders,
        sequential: meta.sequential.as_ref().map(|s| (s.contract, s.slots)),
    })
}

/// Links (or copies) `state.jsonl` of `from` into `to`.
fn link_state(from: &Path, to: &Path) -> Result<(), BenchError> {
    let source = from.join("state.jsonl");
    let target = to.join("state.jsonl");
    if target.exists() {
        let same = {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                let a = std::fs::metadata(&source)
                    .map_err(|e| BenchError::io_at("stat", &source, e))?;
                let b = std::fs::metadata(&target)
                    .map_err(|e| BenchError::io_at("stat", &target, e))?;
                (a.dev(), a.ino()) == (b.dev(), b.ino())
            }
            #[cfg(not(unix))]
            {
                false
            }
        };
        if same {
            return Ok(());
        }
        std::fs::remove_file(&target).map_err(|e| BenchError::io_at("removing", &target, e))?;
    }
    if std::fs::hard_link(&source, &target).is_err() {
        std::fs::copy(&source, &target).map_err(|e| BenchError::io_at("copying", &source, e))?;
    }
    Ok(())
}

/// Resolves the states and their workloads, creating the directories of
/// EVM workloads under `<out>/workloads/`.
fn plan_states(config: &RunConfig) -> Result<Vec<StatePlan>, BenchError> {
    let mut plans = Vec::new();
    let mut names = HashSet::new();
    for dir in &config.states {
        if !dir.join("state.jsonl").is_file() {
            return Err(invalid(format!(
                "{} has no state.jsonl: give a directory made by `ubt bench gen`",
                dir.display()
            )));
        }
        let meta = WorkloadMeta::read(dir)?;
        let key = state_key(dir, &meta)?;
        let has_blocks = dir.join("blocks.jsonl").is_file();
        let workloads = match &config.workloads {
            Some(list) => list.clone(),
            None if has_blocks && meta.erc20.is_none() => vec![Workload::Replay],
            None => Workload::DEFAULT_CHAIN.to_vec(),
        };
        let mut planned = Vec::new();
        for workload in workloads {
            if workload == Workload::Replay {
                if !has_blocks {
                    return Err(invalid(format!(
                        "{} has no blocks.jsonl to replay",
                        dir.display()
                    )));
                }
                planned.push((workload, meta.name.clone(), dir.clone()));
                continue;
            }
            let Some(setup) = evm_setup(&meta) else {
                return Err(invalid(format!(
                    "{workload} needs a chain-like state with the ERC20 token \
                     (`ubt bench gen --mode chain`); {} has none",
                    dir.display()
                )));
            };
            // Check the blocks can be built before loading anything.
            evm_blocks(workload, &setup, config.shape, config.blocks)?;
            let name = workload.label(config.shape);
            let workload_dir = config
                .out_dir
                .join("workloads")
                .join(format!("{key}-{name}"));
            std::fs::create_dir_all(&workload_dir)
                .map_err(|e| BenchError::io_at("creating", &workload_dir, e))?;
            link_state(dir, &workload_dir)?;
            if workload_dir.join("workload.json").is_file() {
                let existing = WorkloadMeta::read(&workload_dir)?;
                if existing.blocks != config.blocks && workload_dir.join("blocks.jsonl").is_file() {
                    return Err(invalid(format!(
                        "{} holds {} recorded blocks per run, not {}: use another --out \
                         or delete it",
                        workload_dir.display(),
                        existing.blocks,
                        config.blocks
                    )));
                }
            }
            let mut workload_meta = meta.clone();
            workload_meta.name = name.clone();
            workload_meta.blocks = config.blocks;
            workload_meta.description = format!(
                "{name}: {} blocks of {} gas executed by ubt's EVM over {}",
                config.blocks,
                config.shape.gas(),
                meta.name
            );
            workload_meta.write(&workload_dir)?;
            planned.push((workload, name, workload_dir));
        }
        for (_, name, _) in &planned {
            if !names.insert(name.clone()) {
                return Err(invalid(format!(
                    "workload {name} would run on two states: run them with separate --out"
                )));
            }
        }
        plans.push(StatePlan {
            dir: dir.clone(),
            meta,
            key,
            workloads: planned,
        });
    }
    Ok(plans)
}

fn ubt_options(config: &RunConfig, group_depth: u8) -> Options {
    let mut options = Options {
        group_depth: Some(group_depth),
        ..Options::default()
    };
    if let Some(budget) = config.memory_budget_bytes {
        options.memory_budget_bytes = budget;
    }
    options
}

/// Runs everything `config` asks for; see the module documentation.
pub fn run(config: &RunConfig, events: &mut dyn FnMut(RunEvent)) -> Result<RunOutcome, BenchError> {
    check_config(config)?;
    let mut notes = Vec::new();
    let mut note = |events: &mut dyn FnMut(RunEvent), text: String| {
        events(RunEvent::Note(text.clone()));
        notes.push(text);
    };
    std::fs::create_dir_all(&config.out_dir)
        .map_err(|e| BenchError::io_at("creating", &config.out_dir, e))?;
    let plans = plan_states(config)?;
    let device = device_limits(config, events)?;

    // The peer, if wanted and possible.
    let mut peers = config.peers.clone();
    let mut peer_bin = None;
    if !peers.is_empty() {
        match geth::go_version() {
            None => {
                note(
                    events,
                    "Go is not installed: go-ethereum is not measured, ubt runs alone \
                     (install Go 1.25+ to compare)"
                        .into(),
                );
                peers.clear();
            }
            Some(version) => {
                events(RunEvent::Phase {
                    label: format!("building the go-ethereum peer ({version})"),
                    total: 0,
                });
                peer_bin = Some(geth::build(
                    &config.peer_source,
                    &config.out_dir.join("bin"),
                )?);
                events(RunEvent::Done);
            }
        }
    }

    let mut configs = Vec::new();
    for &group_depth in &config.group_depths {
        for &prefetch in config.prefetch.variants() {
            configs.push(Config::Ubt {
                group_depth,
                prefetch,
            });
        }
    }
    configs.extend(peers.iter().copied().map(Config::Geth));

    let metrics_path = config.out_dir.join("metrics.jsonl");
    let mut metrics = if metrics_path.is_file() {
        read_metrics_file(&metrics_path)?
    } else {
        Vec::new()
    };
    let mut done: HashSet<(String, String, String, u32)> = metrics
        .iter()
        .map(|m| {
            (
                m.engine.clone(),
                m.variant.clone(),
                m.workload.clone(),
                m.run,
            )
        })
        .collect();
    let db_root = config.out_dir.join("db");
    std::fs::create_dir_all(&db_root).map_err(|e| BenchError::io_at("creating", &db_root, e))?;
    let run_dir = db_root.join("run");
    let mut runs_done = 0;
    let mut runs_resumed = 0;
    let mut loads: BTreeMap<String, LoadMarker> = BTreeMap::new();
    let mut loads_done = 0;

    for plan in &plans {
        let (pristine, loaded_now) = load_all(
            plan,
            &configs,
            config,
            &db_root,
            peer_bin.as_deref(),
            events,
        )?;
        loads_done += loaded_now;
        for marker in pristine.values() {
            loads.insert(
                format!("{} {}", plan.key, marker.configuration),
                marker.clone(),
            );
        }
        let codes_needed = plan.workloads.iter().any(|(w, _, _)| w.executes());
        let codes = if codes_needed {
            let state = plan.dir.join("state.jsonl");
            events(RunEvent::Phase {
                label: "reading contract code".into(),
                total: file_len(&state),
            });
            let mut last = 0;
            let codes = read_codes(&state, &mut |p| {
                events(RunEvent::Advance(p.done.saturating_sub(last)));
                last = p.done;
            })?;
            events(RunEvent::Done);
            codes
        } else {
            CodeStore::new()
        };
        let hint_codes = hint_codes();
        let setup = evm_setup(&plan.meta);

        for (workload, name, workload_dir) in &plan.workloads {
            let evm = match (workload.executes(), &setup) {
                (true, Some(setup)) => {
                    Some(evm_blocks(*workload, setup, config.shape, config.blocks)?)
                }
                _ => None,
            };
            let mut replay: Option<Vec<ReplayBlock>> = None;
            let blocks_path = workload_dir.join("blocks.jsonl");
            let mut ubt_roots: Option<Vec<String>> = metrics
                .iter()
                .filter(|m| m.engine == ubt_exec::ENGINE && m.workload == *name && m.run == 1)
                .fold(None, |acc: Option<BTreeMap<u64, String>>, m| {
                    let mut acc = acc.unwrap_or_default();
                    acc.insert(m.block, m.root.clone());
                    Some(acc)
                })
                .map(|roots| roots.into_values().collect());
            for run in 1..=config.runs + 1 {
                for cfg in &configs {
                    let key = (cfg.engine().to_owned(), cfg.variant(), name.clone(), run);
                    if done.contains(&key) {
                        runs_resumed += 1;
                        continue;
                    }
                    let label = RunLabel {
                        variant: cfg.variant(),
                        workload: name.clone(),
                        run,
                    };
                    let pristine_dir = cfg.pristine(&db_root, &plan.key);
                    let expected_blocks = match &evm {
                        Some(blocks) => blocks.len() as u64,
                        None => config.blocks,
                    };
                    events(RunEvent::Phase {
                        label: format!(
                            "{name} run {run}/{} {} {}",
                            config.runs + 1,
                            cfg.engine(),
                            cfg.variant()
                        ),
                        total: expected_blocks,
                    });
                    fresh_copy(&pristine_dir, &run_dir, config.warm)?;
                    let produced = match cfg {
                        Config::Ubt {
                            group_depth,
                            prefetch,
                        } => {
                            let db = Db::open(&run_dir, ubt_options(config, *group_depth))
                                .map_err(|e| engine_error("opening the run's copy", e))?;
                            let mut advance = || events(RunEvent::Advance(1));
                            let (lines, db) = match &evm {
                                Some(blocks) => {
                                    let record_now = !blocks_path.is_file();
                                    let mut recorded = Vec::new();
                                    let out = ubt_exec::run_evm(
                                        db,
                                        codes.clone(),
                                        &hint_codes,
                                        blocks,
                                        &label,
                                        *prefetch,
                                        record_now.then_some(&mut recorded),
                                        &mut advance,
                                    )?;
                                    if record_now {
                                        write_blocks(&blocks_path, &recorded)?;
                                    }
                                    out
                                }
                                None => {
                                    if replay.is_none() {
                                        replay = Some(read_blocks(&blocks_path)?);
                                    }
                                    let blocks = replay.as_deref().unwrap_or_default();
                                    ubt_exec::run_replay(
                                        db,
                                        blocks,
                                        &label,
                                        *prefetch,
                                        &mut advance,
                                    )?
                                }
                            };
                            db.close()
                                .map_err(|e| engine_error("closing the run's copy", e))?;
                            if ubt_roots.is_none() {
                                ubt_roots = Some(lines.iter().map(|m| m.root.clone()).collect());
                            }
                            lines
                        }
                        Config::Geth(engine) => {
                            let bin = peer_bin.as_deref().expect("peer built");
                            let lines = geth::run(bin, *engine, &run_dir, workload_dir, name, run)?;
                            if let (GethEngine::BinTrie { .. }, Some(roots)) = (engine, &ubt_roots)
                            {
                                check_roots(name, *engine, roots, &lines)?;
                            }
                            lines
                        }
                    };
                    append_metrics(&metrics_path, &produced)?;
                    done.insert(key);
                    metrics.extend(produced);
                    runs_done += 1;
                    events(RunEvent::Done);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&run_dir);
    if runs_resumed > 0 {
        note(
            events,
            format!(
                "{runs_resumed} runs were already in {}: not repeated",
                metrics_path.display()
            ),
        );
    }
    let loads: Vec<LoadMarker> = loads.into_values().collect();
    let report = write_run_report(config, &metrics, &loads, device.as_ref(), &notes)?;
    Ok(RunOutcome {
        metrics_path,
        report,
        runs_done,
        runs_resumed,
        loads_done,
        notes,
    })
}

fn engine_error(what: &str, error: impl std::fmt::Display) -> BenchError {
    BenchError::Engine {
        what: what.to_owned(),
        message: error.to_string(),
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The code the speculative pass runs: the workloads' own contracts.
fn hint_codes() -> CodeStore {
    let mut codes = CodeStore::new();
    codes.insert(attack::attack_code());
    codes.insert(erc20::token_code());
    codes.insert(sequential::sequential_code());
    codes
}

/// geth's binary trie must reach ubt's root after every block.
fn check_roots(
    workload: &str,
    engine: GethEngine,
    ubt: &[String],
    geth: &[BlockMetrics],
) -> Result<(), BenchError> {
    for (index, block) in geth.iter().enumerate() {
        if let Some(expected) = ubt.get(index) {
            if !expected.eq_ignore_ascii_case(&block.root) {
                return Err(BenchError::Engine {
                    what: format!("checking {engine} against ubt on {workload}"),
                    message: format!(
                        "block {}: geth's root {} differs from ubt's {expected}",
                        block.block, block.root
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Writes `blocks.jsonl` atomically (a temporary file renamed).
fn write_blocks(path: &Path, lines: &[BlockLine]) -> Result<(), BenchError> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line).expect("a block line serializes"));
        text.push('\n');
    }
    std::fs::write(&tmp, text).map_err(|e| BenchError::io_at("writing", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| BenchError::io_at("renaming", &tmp, e))
}

/// Appends one run's lines in one write.
fn append_metrics(path: &Path, lines: &[BlockMetrics]) -> Result<(), BenchError> {
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line).expect("metrics serialize"));
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| BenchError::io_at("opening", path, e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|e| BenchError::io_at("appending to", path, e))
}

/// Loads the state into every configuration's pristine database that is
/// not loaded yet; returns the markers by load label and how many loads
/// ran now.
fn load_all(
    plan: &StatePlan,
    configs: &[Config],
    config: &RunConfig,
    db_root: &Path,
    peer_bin: Option<&Path>,
    events: &mut dyn FnMut(RunEvent),
) -> Result<(HashMap<String, LoadMarker>, usize), BenchError> {
    let mut loaded_now = 0;
    let state = plan.dir.join("state.jsonl");
    let mut markers = HashMap::new();
    let mut entries: Option<TreeEntries> = None;
    let mut ubt_root: Option<String> = None;
    for cfg in configs {
        let label = cfg.load_label();
        if markers.contains_key(&label) {
            continue;
        }
        let db = cfg.pristine(db_root, &plan.key);
        if let Some(marker) = db_cache::loaded(&db, &label, &state)? {
            if matches!(cfg, Config::Ubt { .. }) {
                ubt_root.get_or_insert(marker.root.clone());
            }
            markers.insert(label, marker);
            continue;
        }
        db_cache::forget(&db)?;
        let started = Instant::now();
        let marker = match cfg {
            Config::Ubt { group_depth, .. } => {
                if entries.is_none() {
                    events(RunEvent::Phase {
                        label: format!("reading and sorting {}", plan.meta.name),
                        total: file_len(&state),
                    });
                    let mut last = 0;
                    entries = Some(tree_entries(&state, &mut |p| {
                        if p.stage == crate::gen::Stage::Read {
                            events(RunEvent::Advance(p.done.saturating_sub(last)));
                            last = p.done;
                        }
                    })?);
                    events(RunEvent::Done);
                }
                let entries = entries.as_ref().expect("read above");
                events(RunEvent::Phase {
                    label: format!("building ubt gd{group_depth}"),
                    total: 0,
                });
                let (db_handle, _report) =
                    Db::build(&db, ubt_options(config, *group_depth), entries.iter())
                        .map_err(|e| engine_error("building the database", e))?;
                let root = format!("0x{}", alloy_primitives::hex::encode(db_handle.root()));
                db_handle
                    .close()
                    .map_err(|e| engine_error("closing the database", e))?;
                events(RunEvent::Done);
                db_cache::new_marker(&label, &state, root, entries.len() as u64, started, &db)?
            }
            Config::Geth(engine) => {
                events(RunEvent::Phase {
                    label: format!("loading {engine} (geth-peer load)"),
                    total: 0,
                });
                let bin = peer_bin.expect("peer built");
                let outcome = geth::load(bin, *engine, &db, &plan.dir)?;
                events(RunEvent::Done);
                // Per tree entry, like ubt's, when the state says how many.
                let entries = plan.meta.tree_entries.unwrap_or(outcome.records);
                db_cache::new_marker(&label, &state, outcome.root, entries, started, &db)?
            }
        };
        db_cache::mark_loaded(&db, &marker)?;
        loaded_now += 1;
        if matches!(cfg, Config::Ubt { .. }) {
            ubt_root.get_or_insert(marker.root.clone());
        }
        markers.insert(label, marker);
    }
    // geth's binary trie must load to ubt's root.
    if let Some(root) = &ubt_root {
        for cfg in configs {
            if let Config::Geth(engine @ GethEngine::BinTrie { .. }) = cfg {
                let marker = &markers[&cfg.load_label()];
                if !marker.root.eq_ignore_ascii_case(root) {
                    return Err(BenchError::Engine {
                        what: format!("checking {engine}'s load against ubt"),
                        message: format!(
                            "the state root after loading differs: geth {}, ubt {root}",
                            marker.root
                        ),
                    });
                }
            }
        }
    }
    Ok((markers, loaded_now))
}

/// Where the run's device figures are kept, so a resumed run reports the
/// figures of its first start.
const DEVICE_FILE: &str = "device.json";

/// The device's limits: read back from a previous start of this run, or
/// measured now in the output directory (the probe's scratch file is
/// removed afterwards), or `None` when the configuration skips the probe.
fn device_limits(
    config: &RunConfig,
    events: &mut dyn FnMut(RunEvent),
) -> Result<Option<DeviceProbe>, BenchError> {
    let path = config.out_dir.join(DEVICE_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Ok(probe) = serde_json::from_str::<DeviceProbe>(&text) {
            return Ok(Some(probe));
        }
    }
    let Some(options) = &config.device_probe else {
        return Ok(None);
    };
    events(RunEvent::Phase {
        label: "probing the device (random 4 KiB reads at QD1 and QD32)".into(),
        total: 0,
    });
    let limits = crate::device::probe(&config.out_dir, options);
    let _ = std::fs::remove_file(config.out_dir.join(crate::device::PROBE_FILE_NAME));
    let probe = DeviceProbe {
        measured: crate::machine::utc_now(),
        limits: limits?,
    };
    events(RunEvent::Done);
    let text = serde_json::to_string_pretty(&probe).map_err(|e| BenchError::InvalidOptions {
        what: format!("encoding the device figures: {e}"),
    })?;
    std::fs::write(&path, text).map_err(|e| BenchError::io_at("writing", &path, e))?;
    Ok(Some(probe))
}

/// The device's figures and when they were taken (`device.json`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct DeviceProbe {
    /// When the probe ran (`YYYY-MM-DD HH:MM UTC`).
    measured: String,
    /// What it measured.
    limits: DeviceLimits,
}

/// The report's line about the device.
fn device_line(probe: &DeviceProbe) -> String {
    let device = &probe.limits;
    let qd32_us = if device.qd32_reads_per_s > 0.0 {
        1e6 / device.qd32_reads_per_s
    } else {
        f64::NAN
    };
    format!(
        "Device (probed {} in this output directory, {} random 4 KiB reads of a {} MiB \
         file): \
         QD1 p50 {:.0} us; QD{} {:.0} reads/s ({}), i.e. {:.1} us = {:.4} ms per read. \
         A `ms/miss` near that figure means the engine's misses ran at the device's \
         queue-depth-{} limit; well above it, reads were issued one at a time or \
         the time went elsewhere.\n\n",
        probe.measured,
        if device.direct_io {
            "O_DIRECT"
        } else {
            "buffered"
        },
        device.file_bytes >> 20,
        device.qd1_latency_p50_us,
        device.qd32_queue_depth,
        device.qd32_reads_per_s,
        device.qd32_backend,
        qd32_us,
        qd32_us / 1e3,
        device.qd32_queue_depth,
    )
}

/// The report of everything in the metrics file, with the loads, the
/// machine and the command.
fn write_run_report(
    config: &RunConfig,
    metrics: &[BlockMetrics],
    loads: &[LoadMarker],
    device: Option<&DeviceProbe>,
    notes: &[String],
) -> Result<WrittenReport, BenchError> {
    let machine = crate::machine::MachineInfo::read();
    let mut setup = String::from("## Setup\n\n");
    setup.push_str(&format!("Command: `{}`\n\n", config.command));
    setup.push_str(&format!("Machine: {}\n\n", machine.summary()));
    if let Some(device) = device {
        setup.push_str(&device_line(device));
    }
    setup.push_str(&format!(
        "Runs: {} measured after 1 warm-up, each from a fresh copy of the loaded database {}; \
         {} blocks of {} gas per run for EVM workloads.\n\n",
        config.runs,
        if config.warm {
            "**with a warm page cache** (--warm)"
        } else {
            "with its files dropped from the page cache (0 bytes resident, checked with mincore)"
        },
        config.blocks,
        config.shape.gas()
    ));
    if !loads.is_empty() {
        setup.push_str("| loaded database | tree entries | load s | disk bytes | bytes/entry | root |\n|---|---|---|---|---|---|\n");
        for load in loads {
            setup.push_str(&format!(
                "| {} | {} | {:.1} | {} | {:.0} | `{}` |\n",
                load.configuration,
                load.entries,
                load.seconds,
                load.disk_bytes,
                load.disk_bytes as f64 / load.entries.max(1) as f64,
                load.root
            ));
        }
        setup.push('\n');
    }
    for text in notes {
        setup.push_str(&format!("Note: {text}\n\n"));
    }
    let options = ReportOptions {
        title: "ubt bench".into(),
        extra_sections: vec![setup],
        ..ReportOptions::default()
    };
    write_report(metrics, &config.out_dir, "report", &options)
}

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
//! `blocks.jsonl`, which the peer then replays. Replayed workloads
//! (`replay`, `hot_contracts`) come with their state directory's own
//! `blocks.jsonl`: ubt reads every recorded access one at a time (`gdG`)
//! or all of a block's at once (`gdG-prefetch`), then applies, hashes and
//! commits; the peer replays the same file through geth's `StateDB`
//! (over Pebble for `geth-bintrie` and `geth-mpt`, over ubt through
//! `bindings/go/gethstate` for `geth-ubt`). ubt's block roots are checked
//! against geth's binary trie and geth over ubt: a difference stops the
//! run.
//!
//! Results are appended to `<out>/metrics.jsonl` one run at a time; a run
//! already there is not repeated, so an interrupted invocation resumes
//! where it stopped.

pub mod blocks;
pub mod db_cache;
mod device_figures;
mod execute;
pub mod geth;
mod import_load;
pub mod kind;
mod load;
mod plan;
mod record;
mod run_report;
pub mod source;
pub mod ubt_exec;

use std::collections::BTreeMap;
use std::path::PathBuf;

use ubt_evm::workloads::BlockShape;

use self::db_cache::LoadMarker;
use self::execute::Runs;
use self::geth::GethEngine;
use self::kind::Workload;
use self::record::RunRecord;
use crate::report::WrittenReport;
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

/// Whether ubt's databases keep the flat index of account values
/// (ARCHITECTURE.md, "Read locality"): the EVM's account and slot reads
/// then go through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlatMode {
    /// With the flat index (`gd6`).
    On,
    /// Without: every read by tree key from the buckets (`gd6-noflat`).
    Off,
    /// Both, side by side.
    Both,
}

impl FlatMode {
    fn variants(self) -> &'static [bool] {
        match self {
            FlatMode::On => &[true],
            FlatMode::Off => &[false],
            FlatMode::Both => &[true, false],
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
    /// sequential workloads on a chain-like state, `hot_contracts` on a
    /// hot-contracts state, its own blocks on another state directory
    /// that has `blocks.jsonl`).
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
    /// ubt with or without the flat index.
    pub flat_index: FlatMode,
    /// The peer's configurations (empty: ubt alone).
    pub peers: Vec<GethEngine>,
    /// The peer's Go sources.
    pub peer_source: PathBuf,
    /// Skip dropping the page cache (for quick looks; the report says so).
    pub warm: bool,
    /// ubt's cache budget; `None` keeps the default.
    pub memory_budget_bytes: Option<usize>,
    /// ubt reads its data file around the page cache
    /// ([`ubt_engine::Options::direct_reads`]).
    pub direct_reads: bool,
    /// Measure the device (O_DIRECT random 4 KiB reads at QD1 and QD32) at
    /// the start of the run, so the report can set per-miss times against
    /// the device's own limit; `None` skips it. A resumed run keeps the
    /// figures of its first start (`device.json`).
    pub device_probe: Option<crate::measure::device::DeviceProbeOptions>,
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

/// The notes of a run, each also shown as [`RunEvent::Note`].
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn add(&mut self, events: &mut dyn FnMut(RunEvent), text: String) {
        events(RunEvent::Note(text.clone()));
        self.0.push(text);
    }
}

/// Runs everything `config` asks for; see the module documentation.
pub fn run(config: &RunConfig, events: &mut dyn FnMut(RunEvent)) -> Result<RunOutcome, BenchError> {
    plan::check_config(config)?;
    let mut notes = Notes::default();
    std::fs::create_dir_all(&config.out_dir)
        .map_err(|e| BenchError::io_at("creating", &config.out_dir, e))?;
    let plans = plan::plan_states(config)?;
    let device = device_figures::device_limits(config, events)?;
    let engines = plan::engines(config, events, &mut notes)?;

    let mut record = RunRecord::open(&config.out_dir)?;
    let db_root = config.out_dir.join("db");
    std::fs::create_dir_all(&db_root).map_err(|e| BenchError::io_at("creating", &db_root, e))?;
    let mut loads: BTreeMap<String, LoadMarker> = BTreeMap::new();
    let mut loads_done = 0;
    let mut runs = Runs::new(config, &engines, &mut record, &db_root);
    for plan in &plans {
        let (pristine, loaded_now) = load::load_all(plan, &engines, config, &db_root, events)?;
        loads_done += loaded_now;
        for marker in pristine.values() {
            loads.insert(
                format!("{} {}", plan.key, marker.configuration),
                marker.clone(),
            );
        }
        let codes = load::contract_codes(plan, events)?;
        runs.run_state(plan, &codes, events)?;
    }
    let (runs_done, runs_resumed) = (runs.done, runs.resumed);
    runs.finish();
    if runs_resumed > 0 {
        notes.add(
            events,
            format!(
                "{runs_resumed} runs were already in {}: not repeated",
                record.path.display()
            ),
        );
    }
    let loads: Vec<LoadMarker> = loads.into_values().collect();
    let report =
        run_report::write_run_report(config, &record.metrics, &loads, device.as_ref(), &notes.0)?;
    Ok(RunOutcome {
        metrics_path: record.path,
        report,
        runs_done,
        runs_resumed,
        loads_done,
        notes: notes.0,
    })
}

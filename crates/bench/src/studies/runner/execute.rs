//! Executing the plan: every run of every workload of a state, each from a
//! fresh copy of its configuration's pristine database (cold unless
//! `--warm`), configurations taking turns run by run; runs already in the
//! metrics file are skipped. ubt executes (or replays) and records the
//! blocks for the peer; the peer's roots are checked against ubt's.

use std::path::{Path, PathBuf};

use ubt_engine::Db;
use ubt_evm::{attack, erc20, sequential, CodeStore, TxSpec};

use super::blocks::{evm_blocks, read_blocks, ReplayBlock};
use super::db_cache::fresh_copy;
use super::geth::{self, GethEngine};
use super::plan::{evm_setup, ubt_options, Config, Engines, StatePlan};
use super::record::{write_blocks, RunKey, RunRecord};
use super::ubt_exec::{self, engine_error, RunLabel};
use super::{RunConfig, RunEvent};
use crate::formats::metrics::BlockMetrics;
use crate::BenchError;

/// The runs of one invocation and their counts.
pub(super) struct Runs<'a> {
    config: &'a RunConfig,
    engines: &'a Engines,
    record: &'a mut RunRecord,
    /// `<out>/db`: the pristine databases.
    db_root: &'a Path,
    /// `<out>/db/run`: the copy the current run works on.
    run_dir: PathBuf,
    /// Runs executed now.
    pub(super) done: usize,
    /// Runs found in the metrics file and not repeated.
    pub(super) resumed: usize,
}

/// One workload of a state while its runs go on.
struct WorkloadRuns<'w> {
    /// Its name in the metrics.
    name: &'w str,
    /// Its directory (`blocks.jsonl` is recorded or replayed there).
    dir: &'w Path,
    /// The EVM blocks, for a workload ubt executes.
    evm: Option<Vec<Vec<TxSpec>>>,
    /// The recorded blocks, read at the first replay.
    replay: Option<Vec<ReplayBlock>>,
    /// ubt's root after each block of its first run, once known.
    ubt_roots: Option<Vec<String>>,
}

impl WorkloadRuns<'_> {
    fn blocks_path(&self) -> PathBuf {
        self.dir.join("blocks.jsonl")
    }
}

impl<'a> Runs<'a> {
    /// Runs under `db_root`, recorded in `record`.
    pub(super) fn new(
        config: &'a RunConfig,
        engines: &'a Engines,
        record: &'a mut RunRecord,
        db_root: &'a Path,
    ) -> Self {
        Runs {
            config,
            engines,
            record,
            db_root,
            run_dir: db_root.join("run"),
            done: 0,
            resumed: 0,
        }
    }

    /// Every run of every workload of `plan`, with the state's contract
    /// `codes`.
    pub(super) fn run_state(
        &mut self,
        plan: &StatePlan,
        codes: &CodeStore,
        events: &mut dyn FnMut(RunEvent),
    ) -> Result<(), BenchError> {
        let hint_codes = hint_codes();
        let setup = evm_setup(&plan.meta);
        for (workload, name, workload_dir) in &plan.workloads {
            let evm = match (workload.executes(), &setup) {
                (true, Some(setup)) => Some(evm_blocks(
                    *workload,
                    setup,
                    self.config.shape,
                    self.config.blocks,
                )?),
                _ => None,
            };
            let mut runs = WorkloadRuns {
                name,
                dir: workload_dir,
                evm,
                replay: None,
                ubt_roots: self.record.ubt_roots(name),
            };
            self.run_workload(plan, &mut runs, codes, &hint_codes, events)?;
        }
        Ok(())
    }

    /// The runs of one workload: warm-up and measured runs, each
    /// configuration in turn.
    fn run_workload(
        &mut self,
        plan: &StatePlan,
        runs: &mut WorkloadRuns<'_>,
        codes: &CodeStore,
        hint_codes: &CodeStore,
        events: &mut dyn FnMut(RunEvent),
    ) -> Result<(), BenchError> {
        let config = self.config;
        for run in 1..=config.runs + 1 {
            for cfg in &self.engines.configs {
                let key: RunKey = (
                    cfg.engine().to_owned(),
                    cfg.variant(),
                    runs.name.to_owned(),
                    run,
                );
                if self.record.is_done(&key) {
                    self.resumed += 1;
                    continue;
                }
                let label = RunLabel {
                    variant: cfg.variant(),
                    workload: runs.name.to_owned(),
                    run,
                };
                let pristine_dir = cfg.pristine(self.db_root, &plan.key);
                let expected_blocks = match &runs.evm {
                    Some(blocks) => blocks.len() as u64,
                    // Replayed: the state directory's own blocks.
                    None => plan.meta.blocks,
                };
                events(RunEvent::Phase {
                    label: format!(
                        "{} run {run}/{} {} {}",
                        runs.name,
                        config.runs + 1,
                        cfg.engine(),
                        cfg.variant()
                    ),
                    total: expected_blocks,
                });
                fresh_copy(&pristine_dir, &self.run_dir, config.warm)?;
                let produced = match cfg {
                    Config::Ubt {
                        group_depth,
                        prefetch,
                        ..
                    } => self.run_ubt(
                        runs,
                        *group_depth,
                        *prefetch,
                        &label,
                        codes,
                        hint_codes,
                        events,
                    )?,
                    Config::Geth(engine) => self.run_peer(runs, *engine, run)?,
                };
                self.record.append(key, produced)?;
                self.done += 1;
                events(RunEvent::Done);
            }
        }
        Ok(())
    }

    /// One run on ubt: the EVM blocks executed (the first run records
    /// them) or the recorded blocks replayed.
    #[allow(clippy::too_many_arguments)]
    fn run_ubt(
        &self,
        runs: &mut WorkloadRuns<'_>,
        group_depth: u8,
        prefetch: bool,
        label: &RunLabel,
        codes: &CodeStore,
        hint_codes: &CodeStore,
        events: &mut dyn FnMut(RunEvent),
    ) -> Result<Vec<BlockMetrics>, BenchError> {
        let db = Db::open(&self.run_dir, ubt_options(self.config, group_depth))
            .map_err(|e| engine_error("opening the run's copy", e))?;
        let mut advance = || events(RunEvent::Advance(1));
        let blocks_path = runs.blocks_path();
        let (lines, db) = match &runs.evm {
            Some(blocks) => {
                let record_now = !blocks_path.is_file();
                let mut recorded = Vec::new();
                let out = ubt_exec::run_evm(
                    db,
                    codes.clone(),
                    hint_codes,
                    blocks,
                    label,
                    prefetch,
                    record_now.then_some(&mut recorded),
                    &mut advance,
                )?;
                if record_now {
                    write_blocks(&blocks_path, &recorded)?;
                }
                out
            }
            None => {
                if runs.replay.is_none() {
                    runs.replay = Some(read_blocks(&blocks_path)?);
                }
                let blocks = runs.replay.as_deref().unwrap_or_default();
                ubt_exec::run_replay(db, blocks, label, prefetch, &mut advance)?
            }
        };
        db.close()
            .map_err(|e| engine_error("closing the run's copy", e))?;
        if runs.ubt_roots.is_none() {
            runs.ubt_roots = Some(lines.iter().map(|m| m.root.clone()).collect());
        }
        Ok(lines)
    }

    /// One run of the peer, replaying the recorded blocks; the roots of its
    /// binary trie (and of geth over ubt) must be ubt's.
    fn run_peer(
        &self,
        runs: &WorkloadRuns<'_>,
        engine: GethEngine,
        run: u32,
    ) -> Result<Vec<BlockMetrics>, BenchError> {
        let bin = self.engines.peer_bin()?;
        let lines = geth::run(bin, engine, &self.run_dir, runs.dir, runs.name, run)?;
        if let (true, Some(roots)) = (engine.binary_trie(), &runs.ubt_roots) {
            check_roots(runs.name, engine, roots, &lines)?;
        }
        Ok(lines)
    }

    /// Removes the last run's copy.
    pub(super) fn finish(self) {
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}

/// The code the speculative pass runs: the workloads' own contracts.
fn hint_codes() -> CodeStore {
    let mut codes = CodeStore::new();
    codes.insert(attack::attack_code());
    codes.insert(erc20::token_code());
    codes.insert(sequential::sequential_code());
    codes
}

/// geth's binary trie (and geth over ubt) must reach ubt's root after
/// every block.
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

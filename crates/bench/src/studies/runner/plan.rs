//! The plan of a run: the options checked, each state directory resolved
//! to its workloads (the EVM workloads' directories created under
//! `<out>/workloads/`), and the engine configurations that take turns.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ubt_engine::Options;

use super::blocks::{evm_blocks, EvmSetup};
use super::geth::{self, GethEngine};
use super::kind::Workload;
use super::{ubt_exec, Notes, RunConfig, RunEvent};
use crate::gen::{ChainParams, WorkloadMeta};
use crate::BenchError;

/// One engine configuration.
#[derive(Clone, Debug)]
pub(super) enum Config {
    /// ubt at a group depth, with or without the speculative prefetch
    /// pass, with or without the flat index of account values (on account
    /// states; a raw state has no accounts to index).
    Ubt {
        group_depth: u8,
        prefetch: bool,
        flat: bool,
        /// Reads around the page cache (`--direct-reads`): named in the
        /// variant, so its runs are reported, and resumed, apart from
        /// buffered ones.
        direct: bool,
    },
    Geth(GethEngine),
}

impl Config {
    pub(super) fn engine(&self) -> &'static str {
        match self {
            Config::Ubt { .. } => ubt_exec::ENGINE,
            Config::Geth(engine) => engine.engine(),
        }
    }

    pub(super) fn variant(&self) -> String {
        match self {
            Config::Ubt {
                group_depth,
                prefetch,
                flat,
                direct,
            } => format!(
                "gd{group_depth}{}{}{}",
                if *flat { "" } else { "-noflat" },
                if *prefetch { "-prefetch" } else { "" },
                if *direct { "-direct" } else { "" }
            ),
            Config::Geth(engine) => engine.variant(),
        }
    }

    /// The pristine database it runs from.
    pub(super) fn pristine(&self, db_root: &Path, state_key: &str) -> PathBuf {
        let name = match self {
            Config::Ubt {
                group_depth,
                flat: true,
                ..
            } => format!("ubt-gd{group_depth}-flat"),
            Config::Ubt { group_depth, .. } => format!("ubt-gd{group_depth}"),
            Config::Geth(GethEngine::BinTrie { group_depth }) => {
                format!("geth-bintrie-gd{group_depth}")
            }
            Config::Geth(GethEngine::Mpt) => "geth-mpt".into(),
            Config::Geth(GethEngine::Ubt { group_depth, flat }) => {
                format!(
                    "geth-ubt-gd{group_depth}{}",
                    if *flat { "-flat" } else { "" }
                )
            }
        };
        db_root.join(format!("{state_key}-{name}"))
    }

    pub(super) fn load_label(&self) -> String {
        match self {
            Config::Ubt {
                group_depth,
                flat: true,
                ..
            } => format!("ubt gd{group_depth} flat"),
            Config::Ubt { group_depth, .. } => format!("ubt gd{group_depth}"),
            Config::Geth(engine) => engine.to_string(),
        }
    }
}

/// A state directory and what runs on it.
pub(super) struct StatePlan {
    pub(super) dir: PathBuf,
    pub(super) meta: WorkloadMeta,
    /// Short name of the state for database directories.
    pub(super) key: String,
    /// (workload, its name in metrics, its directory).
    pub(super) workloads: Vec<(Workload, String, PathBuf)>,
}

impl StatePlan {
    /// The file whose identity names the state (a database loaded from it
    /// is reused while it is unchanged): `state.jsonl`, or `workload.json`
    /// for a generated state, whose recipe is the state.
    pub(super) fn state_file(&self) -> PathBuf {
        state_file(&self.dir, &self.meta)
    }

    /// The parameters a generated state is generated from; `None` for a
    /// state in `state.jsonl`.
    pub(super) fn generated(&self) -> Option<ChainParams> {
        if self.meta.state.is_file() {
            return None;
        }
        ChainParams::of_meta(&self.meta)
    }
}

/// See [`StatePlan::state_file`].
fn state_file(dir: &Path, meta: &WorkloadMeta) -> PathBuf {
    if meta.state.is_file() {
        dir.join("state.jsonl")
    } else {
        dir.join("workload.json")
    }
}

/// An options error.
fn invalid(what: impl Into<String>) -> BenchError {
    BenchError::InvalidOptions { what: what.into() }
}

/// Refuses a configuration that cannot run, before anything is done.
pub(super) fn check_config(config: &RunConfig) -> Result<(), BenchError> {
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
        if let Some(group_depth) = engine.group_depth() {
            if !(1..=8).contains(&group_depth) {
                return Err(invalid(format!(
                    "{} group depth {group_depth} is not in 1..=8",
                    engine.engine()
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
    let state = state_file(dir, meta);
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
    Ok(format!("{base}-{:08x}", hasher.finish() & 0xffff_ffff))
}

/// The EVM workloads' actors, if the state has the ERC20 token.
pub(super) fn evm_setup(meta: &WorkloadMeta) -> Option<EvmSetup> {
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

/// A workload replayed from the state directory's own `blocks.jsonl`:
/// the workload, its name in metrics and its directory (the state's).
fn replayed(
    workload: Workload,
    dir: &Path,
    meta: &WorkloadMeta,
    has_blocks: bool,
) -> Result<(Workload, String, PathBuf), BenchError> {
    if !has_blocks {
        return Err(invalid(format!(
            "{} has no blocks.jsonl to replay",
            dir.display()
        )));
    }
    if workload != Workload::HotContracts {
        return Ok((workload, meta.name.clone(), dir.to_owned()));
    }
    if meta.hot_contracts.is_none() {
        return Err(invalid(format!(
            "{workload} needs a hot-contracts state (`ubt bench gen --mode hot-contracts`); \
             {} is not one",
            dir.display()
        )));
    }
    Ok((workload, workload.to_string(), dir.to_owned()))
}

/// Resolves the states and their workloads, creating the directories of
/// EVM workloads under `<out>/workloads/`.
pub(super) fn plan_states(config: &RunConfig) -> Result<Vec<StatePlan>, BenchError> {
    let mut plans = Vec::new();
    let mut names = HashSet::new();
    for dir in &config.states {
        let meta = read_state_meta(dir, config)?;
        let key = state_key(dir, &meta)?;
        let has_blocks = dir.join("blocks.jsonl").is_file();
        let workloads = match &config.workloads {
            Some(list) => list.clone(),
            None if has_blocks && meta.hot_contracts.is_some() => vec![Workload::HotContracts],
            None if has_blocks && meta.erc20.is_none() => vec![Workload::Replay],
            None => Workload::DEFAULT_CHAIN.to_vec(),
        };
        let mut planned = Vec::new();
        for workload in workloads {
            if !workload.executes() {
                planned.push(replayed(workload, dir, &meta, has_blocks)?);
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
            if meta.state.is_file() {
                link_state(dir, &workload_dir)?;
            }
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

/// Reads a state directory's `workload.json`, refusing a directory with
/// no state in it and a generated state the run cannot read.
fn read_state_meta(dir: &Path, config: &RunConfig) -> Result<WorkloadMeta, BenchError> {
    let no_state = || {
        invalid(format!(
            "{} has no state.jsonl: give a directory made by `ubt bench gen`",
            dir.display()
        ))
    };
    let has_file = dir.join("state.jsonl").is_file();
    if !has_file && !dir.join("workload.json").is_file() {
        return Err(no_state());
    }
    // Read once: a damaged workload.json is reported as such.
    let meta = WorkloadMeta::read(dir)?;
    if meta.state.is_file() {
        return if has_file { Ok(meta) } else { Err(no_state()) };
    }
    if meta.mode != "accounts" || ChainParams::of_meta(&meta).is_none() {
        return Err(invalid(format!(
            "{}: a generated state must be a chain-like state of accounts \
             (`ubt bench gen --mode chain --state generated`)",
            dir.display()
        )));
    }
    if !config.peers.is_empty() {
        return Err(invalid(format!(
            "{} is a generated state (no state.jsonl); the go-ethereum peers load \
             state.jsonl: generate it with `--state file`, or run without peers",
            dir.display()
        )));
    }
    Ok(meta)
}

/// ubt's options for `group_depth` under the run's memory budget.
pub(super) fn ubt_options(config: &RunConfig, group_depth: u8) -> Options {
    let mut options = Options {
        group_depth: Some(group_depth),
        direct_reads: config.direct_reads,
        ..Options::default()
    };
    if let Some(budget) = config.memory_budget_bytes {
        options.memory_budget_bytes = budget;
    }
    options
}

/// The engine configurations that run, in the order they take turns, and
/// the peer's binary when the peer is among them.
pub(super) struct Engines {
    /// ubt's (each group depth, each read variant), then the peer's.
    pub(super) configs: Vec<Config>,
    /// `geth-peer`, built under `<out>/bin`.
    pub(super) peer_bin: Option<PathBuf>,
}

impl Engines {
    /// The peer's binary; an error if a peer configuration runs without it.
    pub(super) fn peer_bin(&self) -> Result<&Path, BenchError> {
        self.peer_bin
            .as_deref()
            .ok_or_else(|| BenchError::InvalidOptions {
                what: "a go-ethereum configuration runs, but the peer was not built".into(),
            })
    }
}

/// The configurations of `config`; the peer is built if wanted and Go is
/// installed, and left out with a note otherwise.
pub(super) fn engines(
    config: &RunConfig,
    events: &mut dyn FnMut(RunEvent),
    notes: &mut Notes,
) -> Result<Engines, BenchError> {
    let mut peers = config.peers.clone();
    let mut peer_bin = None;
    if !peers.is_empty() {
        match geth::go_version() {
            None => {
                notes.add(
                    events,
                    "Go is not installed: go-ethereum is not measured, ubt runs alone \
                     (install Go 1.25+ to compare)"
                        .into(),
                );
                peers.clear();
            }
            Some(version) => {
                // geth-ubt links ubt's static library: built first, and the
                // peer with the ubt build tag; the other peers need neither.
                let with_ubt = peers.iter().any(|p| p.needs_ubt());
                events(RunEvent::Phase {
                    label: format!(
                        "building the go-ethereum peer ({version}){}",
                        if with_ubt {
                            " with ubt's static library"
                        } else {
                            ""
                        }
                    ),
                    total: 0,
                });
                peer_bin = Some(geth::build(
                    &config.peer_source,
                    &config.out_dir.join("bin"),
                    with_ubt,
                )?);
                events(RunEvent::Done);
            }
        }
    }

    let mut configs = Vec::new();
    for &group_depth in &config.group_depths {
        for &flat in config.flat_index.variants() {
            for &prefetch in config.prefetch.variants() {
                configs.push(Config::Ubt {
                    group_depth,
                    prefetch,
                    flat,
                    direct: config.direct_reads,
                });
            }
        }
    }
    // geth-ubt runs once per flat-index setting of ubt's own
    // configurations, so each ubt row has its go-ethereum-over-ubt twin.
    for &peer in &peers {
        match peer {
            GethEngine::Ubt { group_depth, .. } => {
                for &flat in config.flat_index.variants() {
                    configs.push(Config::Geth(GethEngine::Ubt { group_depth, flat }));
                }
            }
            other => configs.push(Config::Geth(other)),
        }
    }
    Ok(Engines { configs, peer_bin })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each read setting of ubt names its own variant (the label and the
    /// resume key of its runs), all over one pristine database.
    #[test]
    fn ubt_variants_name_every_read_setting() {
        let ubt = |prefetch, flat, direct| Config::Ubt {
            group_depth: 6,
            prefetch,
            flat,
            direct,
        };
        assert_eq!(ubt(false, true, false).variant(), "gd6");
        assert_eq!(ubt(true, true, false).variant(), "gd6-prefetch");
        assert_eq!(ubt(false, false, false).variant(), "gd6-noflat");
        assert_eq!(ubt(false, true, true).variant(), "gd6-direct");
        assert_eq!(
            ubt(true, false, true).variant(),
            "gd6-noflat-prefetch-direct"
        );
        assert_eq!(
            ubt(false, true, true).pristine(Path::new("/db"), "s"),
            ubt(false, true, false).pristine(Path::new("/db"), "s")
        );
    }

    #[test]
    fn geth_ubt_configuration() {
        let ubt = Config::Geth(GethEngine::Ubt {
            group_depth: 6,
            flat: false,
        });
        assert_eq!(ubt.engine(), "geth-ubt");
        assert_eq!(ubt.variant(), "gd6-noflat");
        assert_eq!(ubt.load_label(), "geth-ubt gd6-noflat");
        assert_eq!(
            ubt.pristine(Path::new("/db"), "state-1"),
            Path::new("/db/state-1-geth-ubt-gd6")
        );
        let flat = Config::Geth(GethEngine::Ubt {
            group_depth: 6,
            flat: true,
        });
        assert_eq!(flat.variant(), "gd6");
        assert_eq!(
            flat.pristine(Path::new("/db"), "state-1"),
            Path::new("/db/state-1-geth-ubt-gd6-flat")
        );
        assert_ne!(flat.load_label(), ubt.load_label());
        // Its own pristine database, apart from ubt's and geth's binary trie.
        let others = [
            Config::Ubt {
                group_depth: 6,
                prefetch: false,
                flat: false,
                direct: false,
            },
            Config::Geth(GethEngine::BinTrie { group_depth: 6 }),
            Config::Geth(GethEngine::Mpt),
        ];
        for other in &others {
            assert_ne!(
                other.pristine(Path::new("/db"), "s"),
                ubt.pristine(Path::new("/db"), "s")
            );
            assert_ne!(other.load_label(), ubt.load_label());
        }
    }
}

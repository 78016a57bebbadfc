//! Loading: each state into every configuration's pristine database not
//! loaded yet (ubt builds from the sorted tree entries, the peer runs
//! `geth-peer load`), the peer's load checked against ubt's root; and the
//! contract code the EVM workloads need.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use alloy_primitives::Address;
use ubt_engine::Db;
use ubt_evm::CodeStore;
use ubt_import::ImportOptions;

use super::db_cache::{self, LoadMarker};
use super::geth;
use super::import_load::{import_state, StateInput};
use super::plan::{ubt_options, Config, Engines, StatePlan};
use super::ubt_exec::engine_error;
use super::{RunConfig, RunEvent};
use crate::gen::{generated_codes, read_codes, tree_entries, TreeEntries};
use crate::BenchError;

/// Loads the state into every configuration's pristine database that is
/// not loaded yet; returns the markers by load label and how many loads
/// ran now.
pub(super) fn load_all(
    plan: &StatePlan,
    engines: &Engines,
    config: &RunConfig,
    db_root: &Path,
    events: &mut dyn FnMut(RunEvent),
) -> Result<(HashMap<String, LoadMarker>, usize), BenchError> {
    let mut loaded_now = 0;
    let state = plan.state_file();
    let mut markers = HashMap::new();
    let mut entries: Option<TreeEntries> = None;
    let mut ubt_root: Option<String> = None;
    for cfg in &engines.configs {
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
            Config::Ubt {
                group_depth, flat, ..
            } => {
                let (root, count) =
                    load_ubt(plan, config, &db, *group_depth, *flat, &mut entries, events)?;
                db_cache::new_marker(&label, &state, root, count, started, &db)?
            }
            Config::Geth(engine) => {
                events(RunEvent::Phase {
                    label: format!("loading {engine} (geth-peer load)"),
                    total: 0,
                });
                let bin = engines.peer_bin()?;
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
    // geth's binary trie, and geth over ubt, must load to ubt's root.
    if let Some(root) = &ubt_root {
        for cfg in &engines.configs {
            if let Config::Geth(engine) = cfg {
                if !engine.binary_trie() {
                    continue;
                }
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

/// Loads the state into a new ubt database at `db`; returns its root
/// (`0x` and hex) and its tree entries.
///
/// A state of accounts streams through the import's external sort
/// ([`import_state`]): memory does not grow with the state. A state that
/// rewrites a key (the format allows a later record to replace an
/// earlier one; `ubt bench gen` never writes one), and a raw state, are
/// read and sorted in memory instead (`entries`, read once for every
/// configuration that needs it).
fn load_ubt(
    plan: &StatePlan,
    config: &RunConfig,
    db: &Path,
    group_depth: u8,
    flat: bool,
    entries: &mut Option<TreeEntries>,
    events: &mut dyn FnMut(RunEvent),
) -> Result<(String, u64), BenchError> {
    let state = plan.dir.join("state.jsonl");
    let input = match plan.generated() {
        Some(params) => StateInput::Generated {
            params,
            records: plan.meta.state_records,
        },
        None => StateInput::File(&state),
    };
    let generated = matches!(input, StateInput::Generated { .. });
    if plan.meta.mode == "accounts" && entries.is_none() {
        let options = ImportOptions {
            group_depth: Some(group_depth),
            flat_index: flat,
            memory_bytes: config
                .memory_budget_bytes
                .unwrap_or(ubt_import::DEFAULT_MEMORY_BYTES),
            ..ImportOptions::default()
        };
        let shown_as = format!("ubt gd{group_depth}");
        let expected = plan.meta.tree_entries.filter(|_| generated);
        match import_state(input, db, &options, &shown_as, events)? {
            // A generated state is its recipe: the generator must produce
            // what `ubt bench gen` counted (a changed generator does not).
            Some(imported) if expected.is_some_and(|n| n != imported.entries) => {
                return Err(BenchError::Engine {
                    what: format!("loading {shown_as}"),
                    message: format!(
                        "the generated state has {} tree entries, workload.json says {}: \
                         generate it again with this version (`ubt bench gen --state generated`)",
                        imported.entries,
                        expected.unwrap_or_default()
                    ),
                });
            }
            Some(imported) => return Ok((imported.root, imported.entries)),
            None if generated => {
                return Err(BenchError::Engine {
                    what: format!("loading {shown_as}"),
                    message: "the generated state writes one tree key twice".into(),
                })
            }
            None => events(RunEvent::Note(format!(
                "{}: a record rewrites an earlier one's key; the state is sorted in memory",
                state.display()
            ))),
        }
    }
    let entries = match entries {
        Some(entries) => entries,
        None => entries.insert(read_sorted(&state, &plan.meta.name, events)?),
    };
    events(RunEvent::Phase {
        label: format!("building ubt gd{group_depth}"),
        total: 0,
    });
    let (mut db_handle, _report) = Db::build(db, ubt_options(config, group_depth), entries.iter())
        .map_err(|e| engine_error("building the database", e))?;
    if flat {
        if let Some(records) = entries.flat_records() {
            db_handle
                .build_flat_index(records.into_iter().map(Ok))
                .map_err(|e| engine_error("building the flat index", e))?;
        }
    }
    let root = format!("0x{}", alloy_primitives::hex::encode(db_handle.root()));
    db_handle
        .close()
        .map_err(|e| engine_error("closing the database", e))?;
    events(RunEvent::Done);
    Ok((root, entries.len() as u64))
}

/// Reads `state` and sorts its tree entries, reporting the reading.
fn read_sorted(
    state: &Path,
    name: &str,
    events: &mut dyn FnMut(RunEvent),
) -> Result<TreeEntries, BenchError> {
    events(RunEvent::Phase {
        label: format!("reading and sorting {name}"),
        total: file_len(state),
    });
    let mut last = 0;
    let entries = tree_entries(state, &mut |p| {
        if p.stage == crate::gen::Stage::Read {
            events(RunEvent::Advance(p.done.saturating_sub(last)));
            last = p.done;
        }
    })?;
    events(RunEvent::Done);
    Ok(entries)
}

/// The contract code of the state when one of its workloads executes
/// (only the contracts `workload.json` names: the ERC20 token and its
/// actors, the sequential-slot contract, the hot contracts; every
/// contract's when it names none); empty otherwise.
pub(super) fn contract_codes(
    plan: &StatePlan,
    events: &mut dyn FnMut(RunEvent),
) -> Result<CodeStore, BenchError> {
    let codes_needed = plan.workloads.iter().any(|(w, _, _)| w.executes());
    if !codes_needed {
        return Ok(CodeStore::new());
    }
    let meta = &plan.meta;
    let mut named: HashSet<Address> = HashSet::new();
    if let Some(erc20) = &meta.erc20 {
        named.extend([erc20.token, erc20.attack, erc20.sender, erc20.bloater]);
    }
    if let Some(sequential) = &meta.sequential {
        named.insert(sequential.contract);
    }
    if let Some(hot) = &meta.hot_contracts {
        named.extend(hot.addresses.iter().copied());
    }
    if let Some(params) = plan.generated() {
        // The named contracts come first in a generated state.
        return Ok(generated_codes(&params, &named));
    }
    let state = plan.dir.join("state.jsonl");
    events(RunEvent::Phase {
        label: "reading contract code".into(),
        total: file_len(&state),
    });
    let only = (!named.is_empty()).then_some(&named);
    let mut last = 0;
    let codes = read_codes(&state, only, &mut |p| {
        events(RunEvent::Advance(p.done.saturating_sub(last)));
        last = p.done;
    })?;
    events(RunEvent::Done);
    Ok(codes)
}

/// A file's length, 0 if it cannot be read (for progress totals only).
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

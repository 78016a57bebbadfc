//! Generated states (`ubt bench gen --state generated`): no `state.jsonl`
//! is written, the records generated again from `workload.json` are those
//! the file would hold, in the same order, and `ubt bench run` over a
//! generated state reaches the same roots as over the file.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{run_config, TempDir};
use std::collections::HashSet;
use std::path::Path;

use alloy_primitives::{keccak256, Address};
use ubt_bench::formats::metrics::read_metrics_file;
use ubt_bench::gen::{
    gen_chain, generated_codes, read_codes, ChainParams, GeneratedItems, StateItems, StateStorage,
    WorkloadMeta,
};
use ubt_bench::studies::runner::geth::GethEngine;
use ubt_bench::studies::runner::kind::Workload;
use ubt_bench::studies::runner::run;
use ubt_bench::BenchError;
use ubt_evm::attack::attack_code;
use ubt_evm::erc20::token_code;
use ubt_evm::sequential::sequential_code;

fn params(storage: StateStorage) -> ChainParams {
    let mut params = ChainParams::new(40_000, 11, 6_500);
    params.sequential_slots = 8_000;
    params.storage = storage;
    params
}

fn generate(dir: &Path, storage: StateStorage) -> WorkloadMeta {
    gen_chain(dir, &params(storage), &mut |_| {}).unwrap().meta
}

#[test]
fn a_generated_state_is_the_files_records_in_the_files_order() {
    let tmp = TempDir::new("records");
    let (file_dir, generated_dir) = (tmp.path().join("file"), tmp.path().join("generated"));
    let file_meta = generate(&file_dir, StateStorage::File);
    // A stale state.jsonl is removed: workload.json says there is none.
    std::fs::create_dir_all(&generated_dir).unwrap();
    std::fs::write(generated_dir.join("state.jsonl"), "stale\n").unwrap();
    let generated_meta = generate(&generated_dir, StateStorage::Generated);
    assert!(!generated_dir.join("state.jsonl").exists());

    // workload.json differs only in where the state is.
    assert_eq!(generated_meta.state, StateStorage::Generated);
    let mut as_file = generated_meta.clone();
    as_file.state = StateStorage::File;
    assert_eq!(as_file, file_meta);
    assert_eq!(WorkloadMeta::read(&generated_dir).unwrap(), generated_meta);

    // The recipe read back from workload.json generates the file's items.
    let recipe = ChainParams::of_meta(&WorkloadMeta::read(&generated_dir).unwrap()).unwrap();
    let (items, probe) = GeneratedItems::start(&recipe);
    let generated: Vec<_> = items.map(Result::unwrap).collect();
    let (from_file, _, _) = StateItems::open(&file_dir.join("state.jsonl")).unwrap();
    let from_file: Vec<_> = from_file.map(Result::unwrap).collect();
    assert_eq!(generated.len() as u64, file_meta.state_records);
    assert_eq!(probe.records(), file_meta.state_records);
    assert!(generated == from_file, "the records differ");

    // Another seed generates another state.
    let mut other = recipe.clone();
    other.seed += 1;
    let (items, _) = GeneratedItems::start(&other);
    assert!(items
        .take(100)
        .map(Result::unwrap)
        .ne(generated.into_iter().take(100)));
}

#[test]
fn the_studies_contracts_code_is_generated_without_the_rest() {
    let tmp = TempDir::new("codes");
    let meta = generate(tmp.path(), StateStorage::File);
    let erc20 = meta.erc20.unwrap();
    let named: HashSet<Address> = [erc20.token, erc20.attack, meta.sequential.unwrap().contract]
        .into_iter()
        .collect();
    let from_file = read_codes(&tmp.path().join("state.jsonl"), Some(&named), &mut |_| {}).unwrap();
    let generated = generated_codes(&params(StateStorage::Generated), &named);
    assert_eq!((generated.len(), from_file.len()), (3, 3));
    for code in [token_code(), attack_code(), sequential_code()] {
        let hash = keccak256(&code);
        assert_eq!(generated.get(&hash), Some(&code));
        assert_eq!(from_file.get(&hash), Some(&code));
    }
}

#[test]
fn a_run_over_a_generated_state_reaches_the_files_roots() {
    let tmp = TempDir::new("run");
    let workloads = vec![Workload::Erc20Approve, Workload::SstoreSeq];
    let mut roots = Vec::new();
    for (name, storage) in [
        ("file", StateStorage::File),
        ("generated", StateStorage::Generated),
    ] {
        let state = tmp.path().join(name);
        generate(&state, storage);
        let out = tmp.path().join(format!("out-{name}"));
        let cfg = run_config(vec![state.clone()], &out, Some(workloads.clone()));
        let outcome = run(&cfg, &mut |_| {}).expect("run");
        assert_eq!(outcome.loads_done, 1);
        let mut metrics = read_metrics_file(&outcome.metrics_path).unwrap();
        metrics.sort_by(|a, b| {
            (&a.variant, &a.workload, a.run, a.block).cmp(&(
                &b.variant,
                &b.workload,
                b.run,
                b.block,
            ))
        });
        roots.push(
            metrics
                .into_iter()
                .map(|m| (m.variant, m.workload, m.run, m.block, m.root))
                .collect::<Vec<_>>(),
        );
        if storage == StateStorage::Generated {
            // No state file appears anywhere, and the loaded database is
            // reused while workload.json is unchanged.
            let again = run(&cfg, &mut |_| {}).expect("rerun");
            assert_eq!(again.loads_done, 0);
            assert!(!state.join("state.jsonl").exists());
        }
    }
    assert!(!roots[0].is_empty());
    assert_eq!(roots[0], roots[1]);
}

#[test]
fn the_go_ethereum_peers_refuse_a_generated_state_up_front() {
    let tmp = TempDir::new("peers");
    let state = tmp.path().join("generated");
    generate(&state, StateStorage::Generated);
    let mut cfg = run_config(vec![state], &tmp.path().join("out"), None);
    cfg.peers = vec![GethEngine::BinTrie { group_depth: 5 }];
    match run(&cfg, &mut |_| {}) {
        Err(BenchError::InvalidOptions { what }) => {
            assert!(what.contains("generated state"), "{what}");
        }
        other => panic!("expected an options error, got {other:?}"),
    }
}

#[test]
fn a_recipe_that_no_longer_generates_its_counted_state_is_refused() {
    let tmp = TempDir::new("recount");
    let state = tmp.path().join("generated");
    let mut meta = generate(&state, StateStorage::Generated);
    // As if the generator had changed since `ubt bench gen` counted it.
    meta.tree_entries = meta.tree_entries.map(|n| n + 1);
    meta.write(&state).unwrap();
    let cfg = run_config(
        vec![state],
        &tmp.path().join("out"),
        Some(vec![Workload::SstoreSeq]),
    );
    match run(&cfg, &mut |_| {}) {
        Err(BenchError::Engine { message, .. }) => {
            assert!(message.contains("generate it again"), "{message}");
        }
        other => panic!("expected the recount to fail, got {other:?}"),
    }
}

/// Regression: a damaged `workload.json` beside no `state.jsonl` was
/// reported as "no state.jsonl"; its own parse error names it.
#[test]
fn a_damaged_recipe_is_reported_as_such() {
    let tmp = TempDir::new("damaged");
    let state = tmp.path().join("generated");
    generate(&state, StateStorage::Generated);
    std::fs::write(state.join("workload.json"), "{\"format\": 1,").unwrap();
    let cfg = run_config(vec![state], &tmp.path().join("out"), None);
    match run(&cfg, &mut |_| {}) {
        Err(BenchError::Workload { path, .. }) => {
            assert!(path.ends_with("workload.json"), "{path}")
        }
        other => panic!("expected the recipe's parse error, got {other:?}"),
    }
}

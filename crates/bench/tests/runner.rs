//! `ubt bench run` end to end on a small generated state: every workload
//! runs on ubt (both read variants), its block roots equal an in-memory
//! tree replaying the recorded writes over the same state, a second
//! invocation resumes without repeating a run, and, when Go is installed,
//! go-ethereum's binary trie reaches ubt's root after the load and after
//! every block (the runner stops on any difference).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use common::run_config;
use common::TempDir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ubt_bench::formats::metrics::{read_metrics_file, BlockMetrics};
use ubt_bench::gen::{gen_chain, gen_raw, tree_entries, ChainParams, RawBlocks};
use ubt_bench::studies::runner::blocks::read_blocks;
use ubt_bench::studies::runner::geth::{go_version, GethEngine};
use ubt_bench::studies::runner::kind::Workload;
use ubt_bench::studies::runner::ubt_exec::tree_writes;
use ubt_bench::studies::runner::{run, FlatMode, PrefetchMode};
use ubt_evm::workloads::BlockShape;
use ubt_spec::{FastTree, StateTree};

/// A chain-like state big enough for one 16.7M-gas block of each workload.
fn chain_state(dir: &Path) -> PathBuf {
    let state = dir.join("chain");
    let mut params = ChainParams::new(40_000, 7, 6_500);
    params.sequential_slots = 8_000;
    gen_chain(&state, &params, &mut |_| {}).expect("generate");
    state
}

/// Roots after each block of the recorded workload, replayed on an
/// in-memory tree over the state.
fn replayed_roots(state: &Path, blocks_file: &Path) -> Vec<String> {
    let entries = tree_entries(&state.join("state.jsonl"), &mut |_| {}).unwrap();
    let mut tree = FastTree::from_entries(entries.into_vec());
    read_blocks(blocks_file)
        .unwrap()
        .iter()
        .map(|block| {
            tree.insert_batch(&tree_writes(&block.writes));
            format!("0x{}", alloy_primitives::hex::encode(tree.root()))
        })
        .collect()
}

fn by_configuration(
    metrics: &[BlockMetrics],
) -> BTreeMap<(String, String, String, u32), Vec<String>> {
    let mut out: BTreeMap<_, Vec<String>> = BTreeMap::new();
    for m in metrics {
        out.entry((
            m.engine.clone(),
            m.variant.clone(),
            m.workload.clone(),
            m.run,
        ))
        .or_default()
        .push(m.root.clone());
    }
    out
}

#[test]
fn every_workload_runs_records_and_resumes() {
    let tmp = TempDir::new("all");
    let state = chain_state(&tmp.0);
    let out = tmp.0.join("out");
    let mut workloads = Workload::DEFAULT_CHAIN.to_vec();
    workloads.push(Workload::Erc20Mixed {
        sload_pct: 90,
        sstore_pct: 10,
    });
    let mut cfg = run_config(vec![state.clone()], &out, Some(workloads.clone()));
    cfg.flat_index = FlatMode::Both;
    let outcome = run(&cfg, &mut |_| {}).expect("run");
    // 6 workloads x 2 runs x 4 variants (prefetch or not, flat index or not).
    assert_eq!((outcome.runs_done, outcome.runs_resumed), (48, 0));
    assert_eq!(
        outcome.loads_done, 2,
        "one database with the flat index, one without"
    );
    assert!(outcome.report.markdown.is_file());

    let metrics = read_metrics_file(&outcome.metrics_path).unwrap();
    let runs = by_configuration(&metrics);
    for workload in &workloads {
        let name = workload.label(BlockShape::Gd);
        let blocks_file = std::fs::read_dir(out.join("workloads"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(&format!("-{name}")))
            .expect("workload directory")
            .join("blocks.jsonl");
        let expected = replayed_roots(&state, &blocks_file);
        assert_eq!(expected.len(), 1);
        for variant in ["gd4", "gd4-prefetch", "gd4-noflat", "gd4-noflat-prefetch"] {
            for run in 1..=2 {
                let key = ("ubt".to_owned(), variant.to_owned(), name.clone(), run);
                assert_eq!(runs.get(&key), Some(&expected), "{key:?}");
            }
        }
        let block = metrics.iter().find(|m| m.workload == name).unwrap();
        assert!(block.gas_used > 10_000_000, "{name}: {}", block.gas_used);
        match workload {
            Workload::Erc20BalanceOf | Workload::SloadSeq => {
                assert!(
                    block.slots_read > 6_000 && block.slots_written == 0,
                    "{block:?}"
                )
            }
            Workload::Erc20Approve | Workload::SstoreSeq => {
                assert!(block.slots_written > 600 && block.slots_read >= block.slots_written)
            }
            _ => assert!(block.slots_written > 0 && block.slots_read > block.slots_written),
        }
    }

    // A second invocation finds every run done.
    let again = run(&cfg, &mut |_| {}).expect("rerun");
    assert_eq!((again.runs_done, again.runs_resumed), (0, 48));
    assert_eq!(again.loads_done, 0, "the loaded database is reused");
    assert_eq!(read_metrics_file(&again.metrics_path).unwrap(), metrics);
}

#[test]
fn raw_blocks_replay_to_the_same_roots() {
    let tmp = TempDir::new("raw");
    let blocks = RawBlocks {
        read_blocks: 2,
        reads_per_block: 300,
        write_blocks: 2,
        writes_per_block: 200,
    };
    let report = gen_raw(&tmp.0.join("raw"), 20_000, 3, blocks, &mut |_| {}).unwrap();
    let out = tmp.0.join("out");
    let states = vec![report.reads_dir.clone(), report.writes_dir.clone()];
    let outcome = run(&run_config(states, &out, None), &mut |_| {}).expect("run");
    let metrics = read_metrics_file(&outcome.metrics_path).unwrap();
    for (dir, name) in [
        (&report.reads_dir, "raw_reads"),
        (&report.writes_dir, "raw_writes"),
    ] {
        let expected = replayed_roots(dir, &dir.join("blocks.jsonl"));
        let rows: Vec<&BlockMetrics> = metrics.iter().filter(|m| m.workload == name).collect();
        assert_eq!(rows.len(), 2 * 2 * 2, "{name}");
        for row in rows {
            assert_eq!(row.root, expected[row.block as usize - 1], "{row:?}");
            if name == "raw_reads" {
                assert_eq!((row.slots_read, row.slots_written), (300, 0));
            } else {
                assert_eq!(row.slots_written, 200);
            }
        }
    }
    // The two workloads share one state file (hard-linked) and so one
    // loaded database.
    assert_eq!(outcome.loads_done, 1);
    let loaded: Vec<_> = std::fs::read_dir(out.join("db"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".loaded.json"))
        .collect();
    assert_eq!(loaded.len(), 1, "{loaded:?}");
}

#[test]
fn geth_reaches_ubts_roots() {
    let Some(version) = go_version() else {
        println!("skipped: Go is not installed, so go-ethereum cannot be compared");
        return;
    };
    println!("comparing with go-ethereum through {version}");
    let tmp = TempDir::new("geth");
    let state = chain_state(&tmp.0);
    let out = tmp.0.join("out");
    let mut cfg = run_config(
        vec![state],
        &out,
        Some(vec![Workload::Erc20Approve, Workload::SstoreSeq]),
    );
    cfg.prefetch = PrefetchMode::Off;
    cfg.peers = vec![GethEngine::BinTrie { group_depth: 5 }, GethEngine::Mpt];
    // The runner stops with an error when a geth binary-trie root (after
    // the load or after any block) differs from ubt's.
    let outcome = run(&cfg, &mut |_| {}).expect("geth and ubt agree");
    let metrics = read_metrics_file(&outcome.metrics_path).unwrap();
    let runs = by_configuration(&metrics);
    for workload in ["erc20_approve", "sstore_seq"] {
        let ubt = &runs[&("ubt".into(), "gd4".into(), workload.into(), 2)];
        let geth = &runs[&("geth-bintrie".into(), "gd5".into(), workload.into(), 2)];
        assert_eq!(ubt, geth, "{workload}");
        assert!(runs.contains_key(&("geth-mpt".into(), "mpt".into(), workload.into(), 2)));
    }
    let markers: Vec<String> = std::fs::read_dir(out.join("db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".loaded.json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(markers.len(), 3);
}

#[test]
fn a_state_that_rewrites_a_key_loads_in_memory_with_the_later_value() {
    let tmp = TempDir::new("rewrite");
    let state = chain_state(&tmp.0);
    // Rewrite the value of the state's last slot record: the streamed
    // import refuses a key written twice, the format keeps the later
    // value, so the load falls back to sorting in memory.
    let state_file = state.join("state.jsonl");
    let text = std::fs::read_to_string(&state_file).unwrap();
    let last_slot = text
        .lines()
        .rev()
        .find(|line| line.starts_with("{\"slot\""))
        .expect("a slot record");
    let value_at = last_slot.find("\"value\":\"").unwrap() + "\"value\":\"".len();
    let rewritten = format!("{}0x{}\"}}", &last_slot[..value_at], "5a".repeat(32));
    std::fs::write(&state_file, format!("{text}{rewritten}\n")).unwrap();
    let meta_path = state.join("workload.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["state_records"] = (meta["state_records"].as_u64().unwrap() + 1).into();
    std::fs::write(&meta_path, meta.to_string()).unwrap();

    let out = tmp.0.join("out");
    let mut cfg = run_config(vec![state.clone()], &out, Some(vec![Workload::SstoreSeq]));
    cfg.prefetch = PrefetchMode::Off;
    let mut notes = Vec::new();
    let outcome = run(&cfg, &mut |event| {
        if let ubt_bench::studies::runner::RunEvent::Note(note) = event {
            notes.push(note);
        }
    })
    .expect("run");
    assert!(
        notes.iter().any(|n| n.contains("rewrites")),
        "the fallback is said: {notes:?}"
    );
    let metrics = read_metrics_file(&outcome.metrics_path).unwrap();
    let blocks_file = std::fs::read_dir(out.join("workloads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-sstore_seq"))
        .expect("workload directory")
        .join("blocks.jsonl");
    // The in-memory replay keeps the later value too.
    let expected = replayed_roots(&state, &blocks_file);
    assert!(!metrics.is_empty());
    for row in &metrics {
        assert_eq!(row.root, expected[0], "{row:?}");
    }
}

//! The hot-contracts workload end to end: the same seed writes the same
//! bytes, the hot contracts have the documented sizes and the state the
//! documented number of tree entries, every block reads slots that exist
//! (or that the block creates), accesses over contracts follow the Zipf
//! ranks, and `ubt bench run` replays the blocks on ubt (both read
//! variants) and, when Go is installed, on go-ethereum's binary trie and
//! MPT, to the same roots.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use common::run_config;
use common::TempDir;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use alloy_primitives::{Address, B256};
use ubt_bench::formats::metrics::{read_metrics_file, BlockMetrics};
use ubt_bench::gen::hot::{hot_sizes, largest_slots, Zipf};
use ubt_bench::gen::{
    gen_chain, gen_hot_contracts, tree_entries, ChainParams, HotParams, StateRecord, WorkloadMeta,
};
use ubt_bench::studies::runner::blocks::read_blocks;
use ubt_bench::studies::runner::geth::{go_version, GethEngine};
use ubt_bench::studies::runner::kind::Workload;
use ubt_bench::studies::runner::ubt_exec::tree_writes;
use ubt_bench::studies::runner::{run, PrefetchMode};
use ubt_bench::BenchError;
use ubt_spec::{FastTree, StateTree};

/// Small parameters: `target` entries, blocks of `reads` slot reads and
/// `writes` writes (an eighth of them new slots).
fn params(target: u64, seed: u64, blocks: u64, reads: u64, writes: u64) -> HotParams {
    let mut params = HotParams::new(target, seed);
    params.blocks = blocks;
    params.reads_per_block = reads;
    params.writes_per_block = writes;
    params.new_slots_per_block = writes / 8;
    params
}

fn generate(dir: &Path, params: &HotParams) -> WorkloadMeta {
    gen_hot_contracts(dir, params, &mut |_| {})
        .expect("hot-contracts workload")
        .meta
}

fn read(path: impl AsRef<Path>) -> Vec<u8> {
    std::fs::read(path.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
}

fn lines(path: impl AsRef<Path>) -> Vec<String> {
    String::from_utf8(read(path))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The state's slots (address, key) and its slot count per address.
fn state_slots(dir: &Path) -> (HashSet<(Address, B256)>, HashMap<Address, u64>) {
    let mut slots = HashSet::new();
    let mut per_contract: HashMap<Address, u64> = HashMap::new();
    for line in lines(dir.join("state.jsonl")) {
        if let StateRecord::Slot {
            address,
            key,
            value,
        } = StateRecord::parse(&line).unwrap()
        {
            assert_ne!(value, B256::ZERO);
            assert!(
                slots.insert((address, B256::from(key))),
                "slot written twice"
            );
            *per_contract.entry(address).or_default() += 1;
        }
    }
    (slots, per_contract)
}

/// A block's reads and writes as strings.
fn block_lists(line: &str) -> (serde_json::Value, Vec<String>, Vec<String>) {
    let block: serde_json::Value = serde_json::from_str(line).unwrap();
    let list = |name: &str| -> Vec<String> {
        block[name]
            .as_array()
            .expect("a list")
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let (reads, writes) = (list("reads"), list("writes"));
    (block, reads, writes)
}

/// `s:0x<40>:0x<64>` (a write's `=value` cut off): the address and key.
fn slot_of(record: &str) -> (Address, B256) {
    let rest = record.strip_prefix("s:").expect("an s: record");
    let target = rest.split_once('=').map_or(rest, |(target, _)| target);
    let (address, key) = target.split_once(':').unwrap();
    (address.parse().unwrap(), key.parse().unwrap())
}

#[test]
fn the_same_seed_gives_the_same_files_and_another_seed_others() {
    let tmp = TempDir::new("determinism");
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    generate(&a, &params(30_000, 7, 3, 200, 40));
    generate(&b, &params(30_000, 7, 3, 200, 40));
    generate(&c, &params(30_000, 8, 3, 200, 40));
    for file in ["workload.json", "state.jsonl", "blocks.jsonl"] {
        assert!(
            read(a.join(file)) == read(b.join(file)),
            "{file} differs between runs with one seed"
        );
        assert!(
            read(a.join(file)) != read(c.join(file)),
            "{file}: another seed, the same bytes"
        );
    }
}

#[test]
fn the_state_has_the_documented_sizes() {
    let tmp = TempDir::new("sizes");
    let dir = tmp.path().join("hot");
    let target = 80_000;
    let meta = generate(&dir, &params(target, 3, 2, 300, 40));
    assert_eq!(meta, WorkloadMeta::read(&dir).unwrap());
    assert_eq!(
        (meta.mode.as_str(), meta.name.as_str(), meta.blocks),
        ("accounts", "hot_contracts", 2)
    );
    let hot = meta.hot_contracts.clone().expect("hot_contracts object");
    let chain = meta.chain.expect("chain object");

    // S1 = N / 10, the k-th largest floor(S1 / k).
    assert_eq!((hot.contracts, hot.largest), (32, 8_000));
    assert_eq!(largest_slots(target), 8_000);
    assert_eq!(hot.sizes, hot_sizes(target, 32));
    for (k, size) in (1u64..).zip(&hot.sizes) {
        assert_eq!(*size, 8_000 / k);
    }
    assert_eq!(hot.slots, hot.sizes.iter().sum::<u64>());
    assert_eq!(hot.ranked_contracts, 32 + chain.contracts);

    let (_, per_contract) = state_slots(&dir);
    for (address, size) in hot.addresses.iter().zip(&hot.sizes) {
        assert_eq!(per_contract.get(address), Some(size), "{address}");
    }
    let chain_slots = per_contract
        .iter()
        .filter(|(a, _)| !hot.addresses.contains(a))
        .map(|(_, n)| *n);
    assert!(chain_slots
        .clone()
        .all(|n| (chain.min_slots..=chain.max_slots).contains(&n)));
    assert_eq!(chain_slots.sum::<u64>(), chain.slots);

    // The files agree with workload.json, and the state is N tree entries,
    // or above by less than one chain contract (69 + max_slots).
    assert_eq!(
        meta.state_records,
        lines(dir.join("state.jsonl")).len() as u64
    );
    assert_eq!(meta.blocks, lines(dir.join("blocks.jsonl")).len() as u64);
    let entries = tree_entries(&dir.join("state.jsonl"), &mut |_| {}).unwrap();
    assert_eq!(meta.tree_entries, Some(entries.len() as u64));
    assert_eq!(
        hot.entries
            + chain.erc20_entries
            + 2 * chain.eoas
            + 2 * chain.contracts
            + chain.code_chunks
            + chain.slots,
        entries.len() as u64
    );
    let gap = entries.len() as i64 - target as i64;
    assert!((0..=69 + chain.max_slots as i64).contains(&gap), "{gap}");
}

#[test]
fn blocks_read_existing_slots_and_have_the_documented_shape() {
    let tmp = TempDir::new("blocks");
    let dir = tmp.path().join("hot");
    let (reads, writes) = (600, 96);
    let meta = generate(&dir, &params(40_000, 5, 4, reads, writes));
    let (slots, _) = state_slots(&dir);
    let new_per_block = writes / 8;
    for (n, line) in lines(dir.join("blocks.jsonl")).iter().enumerate() {
        let (block, read_list, write_list) = block_lists(line);
        assert_eq!(block["block"], n as u64 + 1);
        assert_eq!(
            (block["gas_used"].as_u64(), block["txs"].as_u64()),
            (Some(0), Some(0))
        );
        assert_eq!(write_list.len() as u64, writes);

        // Writes: distinct slots, non-zero values, an eighth of them new.
        let mut written = HashSet::new();
        let mut new_slots = HashSet::new();
        for record in &write_list {
            let (_, value) = record.split_once('=').unwrap();
            assert_ne!(value.parse::<B256>().unwrap(), B256::ZERO);
            let slot = slot_of(record);
            assert!(written.insert(slot), "{record} written twice");
            if !slots.contains(&slot) {
                new_slots.insert(slot);
            }
        }
        assert_eq!(new_slots.len() as u64, new_per_block);

        // Reads: each account once, before its first slot; each slot once,
        // existing unless the block creates it; every written slot read.
        let (mut accounts, mut read_slots) = (HashSet::new(), HashSet::new());
        for record in &read_list {
            if let Some(address) = record.strip_prefix("a:") {
                assert!(accounts.insert(address.parse::<Address>().unwrap()));
                continue;
            }
            let slot = slot_of(record);
            assert!(accounts.contains(&slot.0), "{record} before its account");
            assert!(read_slots.insert(slot), "{record} read twice");
            assert!(
                slots.contains(&slot) || new_slots.contains(&slot),
                "{record} is not in the state"
            );
        }
        assert_eq!(read_slots.len() as u64, reads);
        assert!(written.is_subset(&read_slots));
        assert_eq!(read_list.len(), read_slots.len() + accounts.len());
    }
    assert_eq!(meta.blocks, 4);
}

#[test]
fn accesses_over_contracts_follow_the_zipf_ranks() {
    let tmp = TempDir::new("zipf");
    let dir = tmp.path().join("hot");
    let meta = generate(&dir, &params(60_000, 11, 8, 1_000, 100));
    let hot = meta.hot_contracts.unwrap();
    let rank_of: HashMap<Address, usize> = hot
        .addresses
        .iter()
        .enumerate()
        .map(|(rank, a)| (*a, rank))
        .collect();
    let mut counts = vec![0u64; hot.addresses.len()];
    let mut per_contract: HashMap<Address, u64> = HashMap::new();
    let mut total = 0u64;
    for line in lines(dir.join("blocks.jsonl")) {
        let (_, reads, _) = block_lists(&line);
        for record in reads.iter().filter(|r| r.starts_with("s:")) {
            let (address, _) = slot_of(record);
            *per_contract.entry(address).or_default() += 1;
            if let Some(&rank) = rank_of.get(&address) {
                counts[rank] += 1;
            }
            total += 1;
        }
    }
    assert_eq!(total, 8 * 1_000);

    // The top contract gets the most accesses of all contracts.
    let top = hot.addresses[0];
    let most = per_contract.iter().max_by_key(|(_, n)| **n).unwrap();
    assert_eq!(*most.0, top, "{most:?}");

    // Its share, the second's, and the hot contracts' together are the
    // law's within 15% (rank 1: about 1,400 of 8,000 accesses, so 15% is
    // six standard deviations).
    let zipf = Zipf::new(hot.ranked_contracts, hot.zipf_s);
    let expected = |rank: u64| zipf.probability(rank) * total as f64;
    for rank in [0, 1] {
        let got = counts[rank as usize] as f64;
        assert!(
            (got / expected(rank) - 1.0).abs() < 0.15,
            "rank {}: {got} accesses, {} expected",
            rank + 1,
            expected(rank)
        );
    }
    let ratio = counts[0] as f64 / counts[1] as f64;
    assert!((1.6..2.5).contains(&ratio), "rank 1 / rank 2 = {ratio}");
    let hot_expected: f64 = (0..hot.contracts).map(expected).sum();
    let hot_got = counts.iter().sum::<u64>() as f64;
    assert!(
        (hot_got / hot_expected - 1.0).abs() < 0.1,
        "hot contracts: {hot_got} accesses, {hot_expected} expected"
    );
}

/// Roots after each block, replayed on an in-memory tree over the state.
fn replayed_roots(state: &Path) -> Vec<String> {
    let entries = tree_entries(&state.join("state.jsonl"), &mut |_| {}).unwrap();
    let mut tree = FastTree::from_entries(entries.into_vec());
    read_blocks(&state.join("blocks.jsonl"))
        .unwrap()
        .iter()
        .map(|block| {
            tree.insert_batch(&tree_writes(&block.writes));
            format!("0x{}", alloy_primitives::hex::encode(tree.root()))
        })
        .collect()
}

/// Roots of each (engine, variant, run), block by block.
fn roots(metrics: &[BlockMetrics]) -> BTreeMap<(String, String, u32), Vec<String>> {
    let mut out: BTreeMap<_, Vec<String>> = BTreeMap::new();
    for m in metrics {
        assert_eq!(m.workload, "hot_contracts");
        out.entry((m.engine.clone(), m.variant.clone(), m.run))
            .or_default()
            .push(m.root.clone());
    }
    out
}

#[test]
fn run_replays_hot_contracts_on_ubt_and_geth_to_the_same_roots() {
    let tmp = TempDir::new("run");
    let state = tmp.path().join("hot");
    let (reads, writes) = (300, 48);
    let meta = generate(&state, &params(20_000, 9, 3, reads, writes));
    let expected = replayed_roots(&state);
    assert_eq!(expected.len(), 3);

    // By default a hot-contracts state runs hot_contracts: both read
    // variants, warm-up and measured run.
    let out = tmp.path().join("out");
    let outcome = run(&run_config(vec![state.clone()], &out, None), &mut |_| {}).expect("run");
    assert_eq!((outcome.runs_done, outcome.loads_done), (4, 1));
    let metrics = read_metrics_file(&outcome.metrics_path).unwrap();
    let by_run = roots(&metrics);
    assert_eq!(by_run.len(), 4);
    for variant in ["gd4", "gd4-prefetch"] {
        for run in 1..=2 {
            let key = ("ubt".to_owned(), variant.to_owned(), run);
            assert_eq!(by_run.get(&key), Some(&expected), "{key:?}");
        }
    }
    let blocks = read_blocks(&state.join("blocks.jsonl")).unwrap();
    for m in &metrics {
        let accounts = blocks[m.block as usize - 1].reads.len() as u64 - reads;
        assert_eq!(
            (m.slots_read, m.slots_written, m.accounts_read),
            (reads, writes, accounts),
            "{m:?}"
        );
    }

    // Not a workload of other states: refused before anything is loaded.
    let chain = tmp.path().join("chain");
    gen_chain(&chain, &ChainParams::new(3_000, 1, 10), &mut |_| {}).unwrap();
    let refused = run(
        &run_config(
            vec![chain],
            &tmp.path().join("refused"),
            Some(vec![Workload::HotContracts]),
        ),
        &mut |_| {},
    );
    assert!(
        matches!(&refused, Err(BenchError::InvalidOptions { what }) if what.contains("hot-contracts")),
        "{refused:?}"
    );
    assert!(!Workload::DEFAULT_CHAIN.contains(&Workload::HotContracts));
    assert_eq!(meta.blocks, 3);

    let Some(version) = go_version() else {
        println!("skipped the go-ethereum part: Go is not installed, so geth cannot be compared");
        return;
    };
    println!("comparing with go-ethereum through {version}");
    let out = tmp.path().join("geth");
    let mut cfg = run_config(vec![state], &out, Some(vec![Workload::HotContracts]));
    cfg.prefetch = PrefetchMode::Off;
    cfg.peers = vec![GethEngine::BinTrie { group_depth: 5 }, GethEngine::Mpt];
    // The runner stops with an error when a geth binary-trie root (after
    // the load or after any block) differs from ubt's.
    let outcome = run(&cfg, &mut |_| {}).expect("geth and ubt agree");
    let by_run = roots(&read_metrics_file(&outcome.metrics_path).unwrap());
    for run in 1..=2 {
        assert_eq!(by_run[&("ubt".into(), "gd4".into(), run)], expected);
        assert_eq!(
            by_run[&("geth-bintrie".into(), "gd5".into(), run)],
            expected
        );
        let mpt = &by_run[&("geth-mpt".into(), "mpt".into(), run)];
        assert_eq!(mpt.len(), expected.len());
    }
}

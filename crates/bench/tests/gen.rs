//! The workload generator end to end: determinism, the files' agreement
//! with `workload.json`, raw blocks over existing keys, the token read
//! back through the EVM, and the converter against the reference tree.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use common::TempDir;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ubt_bench::gen::{
    erc20_meta, gen_chain, gen_raw, logical_root, read_codes, tree_entries, ChainParams, RawBlocks,
    StateItems, StateRecord, WorkloadMeta,
};
use ubt_evm::erc20::{address_of, allowance_calldata, balance_of_calldata, TOTAL_SUPPLY};
use ubt_evm::workloads::{attack_gas, balanceof_tx, CallPlan};
use ubt_evm::{Executor, MemorySource, TxSpec};
use ubt_spec::{AccountWrites, FastTree, ReferenceTree, StateTree};

const RAW_BLOCKS: RawBlocks = RawBlocks {
    read_blocks: 3,
    reads_per_block: 40,
    write_blocks: 2,
    writes_per_block: 25,
};

fn chain(dir: &Path, target: u64, seed: u64, holders: u64) -> WorkloadMeta {
    let mut params = ChainParams::new(target, seed, holders);
    params.sequential_slots = 1_000;
    gen_chain(dir, &params, &mut |_| {})
        .expect("chain workload")
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

fn records(path: impl AsRef<Path>) -> Vec<StateRecord> {
    lines(path)
        .iter()
        .map(|line| StateRecord::parse(line).expect("record"))
        .collect()
}

const FILES: [&str; 3] = ["workload.json", "state.jsonl", "blocks.jsonl"];

#[test]
fn the_same_seed_gives_the_same_files_and_another_seed_others() {
    let tmp = TempDir::new("determinism");
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    chain(&a.join("chain"), 20_000, 7, 100);
    chain(&b.join("chain"), 20_000, 7, 100);
    chain(&c.join("chain"), 20_000, 8, 100);
    for seed_dir in [&a, &b, &c] {
        let seed = if seed_dir == &c { 8 } else { 7 };
        gen_raw(seed_dir, 2_000, seed, RAW_BLOCKS, &mut |_| {}).unwrap();
    }
    for workload in ["chain", "raw_reads", "raw_writes"] {
        for file in FILES {
            let same = read(a.join(workload).join(file)) == read(b.join(workload).join(file));
            assert!(same, "{workload}/{file} differs between runs with one seed");
        }
        let state = |dir: &Path| read(dir.join(workload).join("state.jsonl"));
        assert_ne!(
            state(&a),
            state(&c),
            "{workload}: another seed, another state"
        );
    }
    let blocks = |dir: &Path| read(dir.join("raw_reads/blocks.jsonl"));
    assert_ne!(blocks(&a), blocks(&c));
}

#[test]
fn workload_json_agrees_with_the_files() {
    let tmp = TempDir::new("counts");
    let dir = tmp.path().join("chain");
    let meta = chain(&dir, 30_000, 11, 500);
    assert_eq!(
        meta,
        WorkloadMeta::read(&dir).unwrap(),
        "workload.json reads back"
    );
    assert_eq!(
        (meta.format, meta.mode.as_str(), meta.seed),
        (1, "accounts", 11)
    );
    let state = records(dir.join("state.jsonl"));
    assert_eq!(meta.state_records, state.len() as u64);
    assert_eq!(meta.blocks, lines(dir.join("blocks.jsonl")).len() as u64);
    let entries = tree_entries(&dir.join("state.jsonl"), &mut |_| {}).unwrap();
    assert_eq!(meta.tree_entries, Some(entries.len() as u64));

    let erc20 = meta.erc20.expect("erc20 object");
    assert_eq!(erc20, erc20_meta(11, 500));
    let shape = meta.chain.expect("chain object");
    let sequential = meta.sequential.expect("sequential object");
    assert_eq!(sequential.slots, 1_000);
    assert_eq!(
        2 * shape.eoas
            + 2 * shape.contracts
            + shape.code_chunks
            + shape.slots
            + shape.erc20_entries
            + shape.sequential_entries,
        entries.len() as u64
    );
    let target_gap = entries.len() as i64 - 30_000;
    assert!(
        (0..=(69 + shape.max_slots as i64)).contains(&target_gap),
        "{target_gap}"
    );

    // Accounts and slots per contract, from the file.
    let mut slots: HashMap<Address, u64> = HashMap::new();
    let (mut eoas, mut contracts) = (0u64, 0u64);
    for record in &state {
        match record {
            StateRecord::Account { code, .. } if code.is_empty() => eoas += 1,
            StateRecord::Account { address, code, .. } => {
                contracts += 1;
                if ![erc20.token, erc20.attack, sequential.contract].contains(address) {
                    assert!(
                        (1024..2048).contains(&code.len()),
                        "code length {}",
                        code.len()
                    );
                }
            }
            StateRecord::Slot { address, value, .. } => {
                assert_ne!(*value, B256::ZERO);
                *slots.entry(*address).or_default() += 1;
            }
            StateRecord::Raw { .. } => panic!("no raw records in a chain state"),
        }
    }
    assert_eq!((eoas, contracts), (shape.eoas + 2, shape.contracts + 3));
    assert_eq!(slots.remove(&erc20.token), Some(1 + 2 * 500));
    assert_eq!(slots.remove(&sequential.contract), Some(sequential.slots));
    assert_eq!(slots.values().sum::<u64>(), shape.slots);
    assert!(slots.len() as u64 <= shape.contracts);
    for count in slots.values() {
        assert!(
            (shape.min_slots..=shape.max_slots).contains(count),
            "{count} slots"
        );
    }

    let raw = gen_raw(tmp.path(), 1_500, 3, RAW_BLOCKS, &mut |_| {}).unwrap();
    for (dir, meta, blocks) in [
        (&raw.reads_dir, &raw.reads_meta, RAW_BLOCKS.read_blocks),
        (&raw.writes_dir, &raw.writes_meta, RAW_BLOCKS.write_blocks),
    ] {
        assert_eq!(&WorkloadMeta::read(dir).unwrap(), meta);
        assert_eq!((meta.mode.as_str(), meta.blocks), ("raw", blocks));
        assert_eq!(meta.state_records, 1_500);
        assert_eq!(lines(dir.join("state.jsonl")).len(), 1_500);
        assert_eq!(lines(dir.join("blocks.jsonl")).len() as u64, blocks);
        assert_eq!(meta.tree_entries, Some(1_500));
        assert_eq!(read(dir.join("state.jsonl")).len() as u64, raw.state_bytes);
    }
}

#[test]
fn raw_blocks_touch_only_existing_keys() {
    let tmp = TempDir::new("raw");
    let raw = gen_raw(tmp.path(), 1_000, 5, RAW_BLOCKS, &mut |_| {}).unwrap();
    let keys: HashSet<B256> = records(raw.reads_dir.join("state.jsonl"))
        .into_iter()
        .map(|record| match record {
            StateRecord::Raw { key, .. } => key,
            other => panic!("not raw: {other:?}"),
        })
        .collect();
    assert_eq!(keys.len(), 1_000);
    let key_of = |text: &str| -> B256 { text.parse().expect("a 32-byte key") };
    for (dir, reads, writes) in [
        (&raw.reads_dir, RAW_BLOCKS.reads_per_block, 0),
        (&raw.writes_dir, 0, RAW_BLOCKS.writes_per_block),
    ] {
        for (n, line) in lines(dir.join("blocks.jsonl")).iter().enumerate() {
            let block: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(block["block"], n as u64 + 1);
            assert_eq!(
                (block["gas_used"].as_u64(), block["txs"].as_u64()),
                (Some(0), Some(0))
            );
            let list = |name: &str| -> Vec<String> {
                let items = block[name].as_array().expect("a list");
                items
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            };
            let (read_list, write_list) = (list("reads"), list("writes"));
            assert_eq!(
                (read_list.len() as u64, write_list.len() as u64),
                (reads, writes)
            );
            let mut seen = HashSet::new();
            for record in &read_list {
                let key = key_of(record.strip_prefix("r:").expect("r: record"));
                assert!(keys.contains(&key) && seen.insert(key));
            }
            for record in &write_list {
                let (key, value) = record.strip_prefix("r:").unwrap().split_once('=').unwrap();
                let key = key_of(key);
                assert!(keys.contains(&key) && seen.insert(key));
                key_of(value);
            }
        }
    }
}

fn call(from: Address, to: Address, input: Bytes) -> TxSpec {
    TxSpec {
        from,
        to: Some(to),
        value: U256::ZERO,
        input,
        gas_limit: 1_000_000,
        access_list: Vec::new(),
        nonce: None,
    }
}

#[test]
fn the_token_answers_balance_of_i_with_i_through_the_evm() {
    let tmp = TempDir::new("token");
    let dir = tmp.path().join("chain");
    let holders = 300;
    let meta = chain(&dir, 5_000, 21, holders);
    let erc20 = meta.erc20.unwrap();
    let state = dir.join("state.jsonl");
    let entries = tree_entries(&state, &mut |_| {}).unwrap().into_vec();
    let source = MemorySource::new(FastTree::from_entries(entries));
    let all_codes = read_codes(&state, None, &mut |_| {}).unwrap();
    // Only the token's and its actors' code, as the runner reads it: the
    // calls below need no other.
    let actors: HashSet<Address> = [erc20.token, erc20.attack, erc20.sender, erc20.bloater]
        .into_iter()
        .collect();
    let codes = read_codes(&state, Some(&actors), &mut |_| {}).unwrap();
    assert!(
        !codes.is_empty() && codes.len() < all_codes.len(),
        "{} of {} codes",
        codes.len(),
        all_codes.len()
    );
    let mut executor = Executor::new(source, codes);

    let holders_checked = [1, 2, 150, holders, holders + 1];
    let mut txs: Vec<TxSpec> = holders_checked
        .iter()
        .map(|&i| {
            call(
                erc20.sender,
                erc20.token,
                balance_of_calldata(&address_of(i)),
            )
        })
        .collect();
    txs.extend(holders_checked.iter().map(|&i| {
        call(
            erc20.sender,
            erc20.token,
            allowance_calldata(&erc20.bloater, &address_of(i)),
        )
    }));
    txs.push(call(
        erc20.sender,
        erc20.token,
        TOTAL_SUPPLY.to_vec().into(),
    ));
    let block = executor.execute_block(&txs).expect("block runs");
    let words: Vec<U256> = block
        .txs
        .iter()
        .map(|tx| {
            assert!(tx.success);
            U256::from_be_slice(&tx.output)
        })
        .collect();
    for (k, &i) in holders_checked.iter().enumerate() {
        let expected = U256::from(if i <= holders { i } else { 0 });
        assert_eq!(words[k], expected, "balanceOf(address({i}))");
        assert_eq!(
            words[holders_checked.len() + k],
            expected,
            "allowance(bloater, address({i}))"
        );
    }
    assert_eq!(
        words[2 * holders_checked.len()],
        U256::from(holders * (holders + 1) / 2)
    );

    // The attack loop over every holder reads one existing slot each.
    let actors = erc20.actors();
    let block = executor
        .execute_block(&[balanceof_tx(&actors, 1, holders, 10_000_000)])
        .expect("attack block runs");
    assert!(block.txs[0].success);
    assert_eq!(block.slots_read as u64, holders);
    let plan = CallPlan {
        start: 1,
        balanceof_calls: holders,
        approve_calls: 0,
    };
    assert_eq!(block.gas_used, attack_gas(&actors, &plan));
}

/// Applies state records in order through the account API.
fn reference_root(path: &Path) -> ReferenceTree {
    let mut tree = ReferenceTree::new();
    for record in records(path) {
        match record {
            StateRecord::Account {
                address,
                nonce,
                balance,
                code,
            } => {
                let size = u32::try_from(code.len()).unwrap();
                tree.update_account(&address, nonce, &balance, &keccak256(&code), size);
                if !code.is_empty() {
                    tree.update_code(&address, &code);
                }
            }
            StateRecord::Slot {
                address,
                key,
                value,
            } => tree.update_storage(&address, &key, value.as_slice()),
            StateRecord::Raw { key, value } => tree.insert(key, value),
        }
    }
    tree
}

#[test]
fn converted_entries_match_the_account_api_on_the_reference_tree() {
    let tmp = TempDir::new("convert");
    let dir = tmp.path().join("chain");
    chain(&dir, 1_500, 2, 3);
    // A hand-written state with records that replace earlier ones: code
    // that shrinks (old chunks stay), a slot written twice, a balance past
    // 128 bits, a raw key.
    let who = "0x00000000000000000000000000000000000000aa";
    let long_code = format!("0x{}", "60".repeat(100));
    let word = |b: u8| format!("0x{}", format!("{b:02x}").repeat(32));
    let lines = [
        format!(r#"{{"account":"{who}","nonce":1,"balance":"5","code":"{long_code}"}}"#),
        format!(
            r#"{{"slot":"{who}","key":"{}","value":"{}"}}"#,
            word(1),
            word(2)
        ),
        format!(
            r#"{{"slot":"{who}","key":"{}","value":"{}"}}"#,
            word(0),
            word(3)
        ),
        format!(r#"{{"raw":"{}","value":"{}"}}"#, word(9), word(8)),
        format!(
            r#"{{"account":"{who}","nonce":2,"balance":"340282366920938463463374607431768211461","code":"0x6001"}}"#
        ),
        format!(
            r#"{{"slot":"{who}","key":"{}","value":"{}"}}"#,
            word(1),
            word(4)
        ),
    ];
    let hand = tmp.path().join("hand.jsonl");
    std::fs::write(&hand, lines.join("\n") + "\n").unwrap();

    for path in [dir.join("state.jsonl"), hand] {
        let mut reference = reference_root(&path);
        let entries = tree_entries(&path, &mut |_| {}).unwrap().into_vec();
        let expected: Vec<(B256, B256)> = reference.entries().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(entries, expected, "{}", path.display());
        assert_eq!(
            logical_root(&path).unwrap(),
            reference.root(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn streamed_items_import_to_the_in_memory_root_and_bad_lines_are_named() {
    let tmp = TempDir::new("items");
    let dir = tmp.path().join("chain");
    let meta = chain(&dir, 3_000, 5, 4);
    let state = dir.join("state.jsonl");
    let options = ubt_import::ImportOptions {
        memory_bytes: ubt_import::MIN_MEMORY_BYTES,
        tmp_dir: Some(tmp.path().to_path_buf()),
        ..ubt_import::ImportOptions::default()
    };
    let (items, probe, file_bytes) = StateItems::open(&state).unwrap();
    let report = ubt_import::import_items(
        items,
        tmp.path().join("db"),
        &options,
        &ubt_import::NoProgress,
    )
    .unwrap();
    assert_eq!(report.root.0, logical_root(&state).unwrap());
    assert_eq!(Some(report.counts.tree_entries), meta.tree_entries);
    assert!(report.spill_runs > 1, "spilled: {report:?}");
    assert_eq!(probe.read_bytes(), file_bytes);
    assert!(probe.failure().is_none());

    // A line that does not parse, and a raw record in a state of
    // accounts, stop the import; the probe says which line.
    let good = std::fs::read_to_string(&state).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    let raw = format!(
        r#"{{"raw":"0x{}","value":"0x{}"}}"#,
        "11".repeat(32),
        "22".repeat(32)
    );
    for (bad, name) in [("{\"slot\":1}", "unparsable"), (raw.as_str(), "raw")] {
        lines.insert(2, bad);
        let path = tmp.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        lines.remove(2);
        let (items, probe, _) = StateItems::open(&path).unwrap();
        let db = tmp.path().join(format!("db-{name}"));
        let error =
            ubt_import::import_items(items, &db, &options, &ubt_import::NoProgress).unwrap_err();
        assert!(matches!(error, ubt_import::ImportError::Read(_)), "{error}");
        match probe.failure() {
            Some(ubt_bench::BenchError::Workload { line, .. }) => assert_eq!(line, 3, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

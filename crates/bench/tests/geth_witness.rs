//! ubt's `Db::witness` against go-ethereum's own `BinaryTrie.Witness()`,
//! byte for byte. When Go is installed, each workload's state is loaded
//! into go-ethereum's binary trie by the peer (`peers/geth`) at three group
//! depths and its blocks run with `--witness`, which records every block's
//! witness; ubt builds a database of the same state and, for every block,
//! computes `Db::witness` of the keys `geth_witness_keys` gives at the
//! block's pre-state, which must hold the same paths and blobs, then
//! applies the block and must reach the same root.
//!
//! Workloads: on a small chain-like state, the ERC20 approve and balanceOf
//! and the sequential-store blocks recorded by ubt's EVM (`ubt bench run`),
//! and hand-made blocks with reads of absent accounts, slots of absent
//! accounts, a new account and an empty block; on a small accounts state
//! with a 5,000-byte contract, hand-made blocks that change code (chunks
//! past the header stem); on a small raw state, the
//! generated read and write blocks, and hand-made blocks with absent keys,
//! new keys (stem splits, long internal chains, a path ending inside one),
//! a zero write and an empty block.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use common::TempDir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use alloy_primitives::{hex, keccak256, Address, B256, KECCAK256_EMPTY, U256};
use ubt_bench::gen::raw::raw_entry;
use ubt_bench::gen::{
    gen_chain, gen_raw, read_codes, tree_entries, ChainParams, RawBlocks, WorkloadMeta,
};
use ubt_bench::studies::runner::blocks::{read_blocks, BlockLine, ReplayBlock};
use ubt_bench::studies::runner::geth::{self, default_source_dir, go_version, GethEngine};
use ubt_bench::studies::runner::kind::Workload;
use ubt_bench::studies::runner::ubt_exec::tree_writes;
use ubt_bench::studies::runner::{run, FlatMode, PrefetchMode, RunConfig};
use ubt_bench::studies::witness_keys::geth_witness_keys;
use ubt_engine::{AccountOp, Db, Options};
use ubt_evm::workloads::BlockShape;
use ubt_evm::{CodeStore, ReadRecord, WriteRecord};

/// geth's default group depth, and two more: smaller groups whose
/// boundaries do not line up with 5's, and the largest groups.
const GROUP_DEPTHS: [u8; 3] = [5, 3, 8];

/// The peer's binary, built under `dir` (Go's build cache, shared with the
/// runner's tests, makes it take seconds), or `None` when Go is missing.
fn peer(dir: &Path) -> Option<PathBuf> {
    let Some(version) = go_version() else {
        println!("skipped: Go is not installed, so go-ethereum's witness cannot be compared");
        return None;
    };
    println!("comparing with go-ethereum through {version}");
    Some(geth::build(&default_source_dir(), &dir.join("bin"), false).expect("building the peer"))
}

/// Blocks and nodes compared.
#[derive(Default, Debug)]
struct Counts {
    blocks: usize,
    nodes: usize,
    bytes: usize,
}

/// One `--witness` line.
struct WitnessLine {
    block: u64,
    root_before: String,
    root_after: String,
    group_depth: u64,
    nodes: Vec<(String, String)>,
}

fn parse_line(line: &str) -> WitnessLine {
    let value: serde_json::Value = serde_json::from_str(line).unwrap();
    let text = |field: &str| value[field].as_str().unwrap().to_owned();
    WitnessLine {
        block: value["block"].as_u64().unwrap(),
        root_before: text("root_before"),
        root_after: text("root_after"),
        group_depth: value["group_depth"].as_u64().unwrap(),
        nodes: value["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|node| {
                let field = |name: &str| node[name].as_str().unwrap().to_owned();
                (field("path"), field("blob"))
            })
            .collect(),
    }
}

/// Loads `workload`'s state into a new go-ethereum database at
/// `group_depth`, runs its blocks with `--witness` and returns the root
/// after the load and the witness lines.
fn geth_witnesses(
    bin: &Path,
    workload: &Path,
    group_depth: u8,
    dir: &Path,
) -> (String, Vec<WitnessLine>) {
    let name = workload.file_name().unwrap().to_string_lossy();
    let db = dir.join(format!("geth-{name}-gd{group_depth}"));
    let engine = GethEngine::BinTrie { group_depth };
    let loaded = geth::load(bin, engine, &db, workload).expect("geth-peer load");
    let file = dir.join(format!("witness-{name}-gd{group_depth}.jsonl"));
    let output = Command::new(bin)
        .args(["run", "--engine", "bintrie", "--group-depth"])
        .arg(group_depth.to_string())
        .arg("--db")
        .arg(&db)
        .arg("--workload")
        .arg(workload)
        .args(["--run", "1", "--witness"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "geth-peer run on {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = text.lines().map(parse_line).collect();
    let _ = std::fs::remove_dir_all(&db);
    (loaded.root, lines)
}

fn root_hex(root: &B256) -> String {
    format!("0x{}", hex::encode(root))
}

/// Panics, naming what differs, unless ubt's nodes equal geth's.
fn assert_same_nodes(ours: &[(String, String)], geth: &[(String, String)], what: &str) {
    if ours == geth {
        return;
    }
    let ours_map: BTreeMap<&str, &str> = ours.iter().map(|(p, b)| (&**p, &**b)).collect();
    let geth_map: BTreeMap<&str, &str> = geth.iter().map(|(p, b)| (&**p, &**b)).collect();
    let only = |a: &BTreeMap<&str, &str>, b: &BTreeMap<&str, &str>| -> Vec<String> {
        a.keys()
            .filter(|p| !b.contains_key(*p))
            .take(8)
            .map(|p| (*p).to_owned())
            .collect()
    };
    let differing: Vec<String> = ours_map
        .iter()
        .filter(|(p, blob)| geth_map.get(*p).is_some_and(|g| g != *blob))
        .take(4)
        .map(|(p, blob)| format!("path {p:?}: ubt {blob}, geth {}", geth_map[p]))
        .collect();
    panic!(
        "{what}: ubt has {} nodes, geth {}; only in ubt: {:?}; only in geth: {:?}; \
         different blobs: {:?}; the same nodes in another order: {}",
        ours.len(),
        geth.len(),
        only(&ours_map, &geth_map),
        only(&geth_map, &ours_map),
        differing,
        ours_map == geth_map
    );
}

/// The block's tree writes as geth's `StateDB` makes them: the records'
/// ([`tree_writes`]), plus, for an account whose code hash changes, the
/// chunks of its new code (`UpdateContractCode`; a record carries only the
/// code's hash, so the code comes from the state's).
fn block_writes(block: &ReplayBlock, db: &Db, codes: &CodeStore) -> Vec<(B256, B256)> {
    let mut writes = tree_writes(&block.writes);
    for write in &block.writes {
        let WriteRecord::Account {
            address, code_hash, ..
        } = write
        else {
            continue;
        };
        let before = db
            .account(address)
            .unwrap()
            .map_or(KECCAK256_EMPTY, |account| account.code_hash);
        if *code_hash != before && *code_hash != KECCAK256_EMPTY {
            let code = codes.get(code_hash).expect("the new code is in the state");
            let op = AccountOp::SetCode {
                address: *address,
                code: code.clone(),
            };
            op.for_each_tree_write(|key, value| writes.push((key, value)));
        }
    }
    writes
}

/// Runs `workload` on the peer at every group depth and compares each
/// block's witness with ubt's, block by block, over a ubt database of the
/// same state that applies the blocks as it goes.
fn compare_workload(bin: &Path, workload: &Path, dir: &Path, counts: &mut Counts) {
    let started = Instant::now();
    let name = workload.file_name().unwrap().to_string_lossy().into_owned();
    let blocks = read_blocks(&workload.join("blocks.jsonl")).unwrap();
    assert!(!blocks.is_empty(), "{name}: no blocks");
    let recorded: Vec<(u8, String, Vec<WitnessLine>)> = GROUP_DEPTHS
        .iter()
        .map(|&g| {
            let (root, lines) = geth_witnesses(bin, workload, g, dir);
            (g, root, lines)
        })
        .collect();
    let entries = tree_entries(&workload.join("state.jsonl"), &mut |_| {}).unwrap();
    let codes = read_codes(&workload.join("state.jsonl"), None, &mut |_| {}).unwrap();
    let db_dir = dir.join(format!("ubt-{name}"));
    let (mut db, _) = Db::build(&db_dir, Options::default(), entries.iter()).unwrap();
    for (g, root, lines) in &recorded {
        assert_eq!(*root, root_hex(&db.root()), "{name} gd{g}: loaded root");
        assert_eq!(lines.len(), blocks.len(), "{name} gd{g}: witness lines");
    }
    for (index, block) in blocks.iter().enumerate() {
        let keys = geth_witness_keys(block, &db).unwrap();
        let before = root_hex(&db.root());
        for (g, _, lines) in &recorded {
            let line = &lines[index];
            let what = format!("{name} block {} gd{g} ({} keys)", block.block, keys.len());
            assert_eq!(line.block, block.block, "{what}");
            assert_eq!(line.group_depth, u64::from(*g), "{what}");
            assert_eq!(line.root_before, before, "{what}: root before");
            let ours: Vec<(String, String)> = db
                .witness(&keys, *g)
                .unwrap()
                .into_iter()
                .map(|node| {
                    (
                        node.path.to_bit_string(),
                        format!("0x{}", hex::encode(&node.blob)),
                    )
                })
                .collect();
            assert!(
                ours.first().is_some_and(|(path, _)| path.is_empty()),
                "{what}: the root blob comes first"
            );
            assert_same_nodes(&ours, &line.nodes, &what);
            counts.nodes += ours.len();
            counts.bytes += ours
                .iter()
                .map(|(_, blob)| blob.len() / 2 - 1)
                .sum::<usize>();
        }
        db.apply(&block_writes(block, &db, &codes)).unwrap();
        let after = root_hex(&db.commit().unwrap());
        for (g, _, lines) in &recorded {
            assert_eq!(
                lines[index].root_after, after,
                "{name} block {} gd{g}: root after",
                block.block
            );
        }
        counts.blocks += 1;
    }
    drop(db);
    let _ = std::fs::remove_dir_all(&db_dir);
    println!(
        "{name}: {} blocks compared at group depths {GROUP_DEPTHS:?} in {:.1} s",
        blocks.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A workload directory `dir/name` over the state of `source` (hard-linked
/// or copied) with `blocks` as its `blocks.jsonl`.
fn hand_made(source: &Path, dir: &Path, name: &str, blocks: &[BlockLine]) -> PathBuf {
    let workload = dir.join(name);
    std::fs::create_dir_all(&workload).unwrap();
    let state = workload.join("state.jsonl");
    if std::fs::hard_link(source.join("state.jsonl"), &state).is_err() {
        std::fs::copy(source.join("state.jsonl"), &state).unwrap();
    }
    let mut meta = WorkloadMeta::read(source).unwrap();
    meta.name = name.to_owned();
    meta.blocks = blocks.len() as u64;
    meta.description = format!("{name}: hand-made blocks for the witness comparison");
    meta.write(&workload).unwrap();
    let text: String = blocks
        .iter()
        .map(|b| serde_json::to_string(b).unwrap() + "\n")
        .collect();
    std::fs::write(workload.join("blocks.jsonl"), text).unwrap();
    workload
}

fn line(block: u64, reads: &[ReadRecord], writes: &[WriteRecord]) -> BlockLine {
    BlockLine {
        block,
        gas_used: 0,
        txs: 0,
        reads: reads.iter().map(ToString::to_string).collect(),
        writes: writes.iter().map(ToString::to_string).collect(),
    }
}

/// A small chain-like state: enough holders for one 16.7M-gas balanceOf
/// block and preset slots for two sequential-store blocks.
fn chain_state(dir: &Path) -> PathBuf {
    let state = dir.join("chain");
    let mut params = ChainParams::new(20_000, 11, 6_500);
    params.sequential_slots = 6_700;
    gen_chain(&state, &params, &mut |_| {}).expect("generate");
    state
}

/// Records `workloads` (`blocks` blocks each) with ubt's EVM over `state`
/// and returns their workload directories.
fn record(state: &Path, out: &Path, workloads: &[Workload], blocks: u64) -> Vec<PathBuf> {
    let cfg = RunConfig {
        states: vec![state.to_path_buf()],
        out_dir: out.to_path_buf(),
        workloads: Some(workloads.to_vec()),
        shape: BlockShape::Gd,
        blocks,
        runs: 1,
        group_depths: vec![5],
        prefetch: PrefetchMode::Off,
        flat_index: FlatMode::On,
        peers: Vec::new(),
        peer_source: default_source_dir(),
        warm: true,
        memory_budget_bytes: None,
        direct_reads: false,
        device_probe: None,
        command: "test".into(),
    };
    run(&cfg, &mut |_| {}).expect("recording the blocks");
    workloads
        .iter()
        .map(|workload| {
            let name = workload.label(BlockShape::Gd);
            std::fs::read_dir(out.join("workloads"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().ends_with(&format!("-{name}")))
                .expect("workload directory")
        })
        .collect()
}

/// Accounts-mode blocks the recorded workloads do not make: reads of an
/// absent account and of slots of absent accounts (geth stops at the
/// account, also for one no `a:` record names), an absent slot of a present account, a new account with a
/// slot (read before the block creates it), a slot cleared to zero, and a
/// block without accesses.
fn accounts_edge_blocks(state: &Path, db: &Db) -> Vec<BlockLine> {
    let meta = WorkloadMeta::read(state).unwrap();
    let erc20 = meta.erc20.unwrap();
    let token = erc20.token;
    let sequential = meta.sequential.unwrap();
    let absent = Address::repeat_byte(0xab);
    // Named by slot reads only: geth still looks the account up.
    let slots_only = Address::repeat_byte(0xef);
    let created = Address::repeat_byte(0xcd);
    for address in [absent, slots_only, created] {
        assert!(db.account(&address).unwrap().is_none());
    }
    assert!(db.account(&token).unwrap().is_some());
    let one = U256::from(1u8);
    let two = B256::with_last_byte(2);
    assert_eq!(db.storage(&sequential.contract, &one).unwrap(), Some(two));
    let far_slot = U256::from_be_bytes(keccak256(b"an absent slot").0);
    let reads = [
        ReadRecord::Account(token),
        ReadRecord::Account(absent),
        ReadRecord::Slot(absent, U256::from(1_000u32)),
        ReadRecord::Slot(absent, U256::from(3u8)),
        ReadRecord::Slot(slots_only, U256::from(1_000u32)),
        ReadRecord::Slot(token, far_slot),
        ReadRecord::Slot(created, U256::from(2_000u32)),
    ];
    let writes = [
        WriteRecord::Account {
            address: created,
            nonce: 0,
            balance: U256::from(1_000_000u32),
            code_hash: KECCAK256_EMPTY,
            code_size: 0,
        },
        WriteRecord::Slot {
            address: created,
            slot: U256::from(1_000u32),
            value: B256::with_last_byte(7),
        },
        // Slot 1 holds 2: cleared, it becomes a present zero leaf. (A
        // zero written over an absent slot is no change for geth's
        // StateDB, which then writes nothing; the EVM records no such
        // write.)
        WriteRecord::Slot {
            address: sequential.contract,
            slot: U256::from(1u8),
            value: B256::ZERO,
        },
    ];
    let reads_after = [
        ReadRecord::Slot(created, U256::from(2_000u32)),
        ReadRecord::Slot(created, U256::from(1_000u32)),
        ReadRecord::Account(created),
    ];
    vec![
        line(1, &reads, &writes),
        line(2, &reads_after, &[]),
        line(3, &[], &[]),
    ]
}

/// `len` bytes of deterministic code.
fn code_bytes(tag: u8, len: usize) -> Vec<u8> {
    (0u32..)
        .flat_map(|i| keccak256([&[tag][..], &i.to_be_bytes()].concat()).0)
        .take(len)
        .collect()
}

/// A small accounts state with a contract whose 5,000 bytes of code (162
/// chunks) reach past the header stem, a contract with 100 bytes, an
/// externally owned account and 300 more accounts; and blocks that change
/// code: the long code given to a new account and to the short-code
/// contract (chunks 0..162, from 128 on a second stem), the short code to
/// the long-code contract, the new account's code removed, and account
/// writes that keep their code hash (one of them with the long code).
fn code_change_workload(dir: &Path) -> PathBuf {
    let state = dir.join("code_state");
    std::fs::create_dir_all(&state).unwrap();
    let address = |i: u32| Address::from_slice(&keccak256(i.to_be_bytes())[12..]);
    let (long, short, eoa, new) = (address(1), address(2), address(3), address(4));
    let (long_code, short_code) = (code_bytes(1, 5_000), code_bytes(2, 100));
    let account = |a: &Address, nonce: u64, code: &[u8]| {
        format!(
            r#"{{"account":"{a:#x}","nonce":{nonce},"balance":"1000","code":"0x{}"}}"#,
            hex::encode(code)
        )
    };
    let mut lines = vec![
        account(&long, 1, &long_code),
        account(&short, 1, &short_code),
        account(&eoa, 7, &[]),
    ];
    lines.extend((10..310).map(|i| account(&address(i), 0, &[])));
    for slot in [1u8, 70, 200] {
        lines.push(format!(
            r#"{{"slot":"{long:#x}","key":"{}","value":"{}"}}"#,
            B256::with_last_byte(slot),
            B256::with_last_byte(slot ^ 0xff)
        ));
    }
    std::fs::write(state.join("state.jsonl"), lines.join("\n") + "\n").unwrap();
    WorkloadMeta {
        format: 1,
        name: "code_state".into(),
        mode: "accounts".into(),
        seed: 0,
        description: "accounts with long and short code".into(),
        state: ubt_bench::gen::StateStorage::File,
        state_records: lines.len() as u64,
        blocks: 0,
        tree_entries: None,
        erc20: None,
        chain: None,
        sequential: None,
        hot_contracts: None,
    }
    .write(&state)
    .unwrap();
    let write = |address: Address, nonce: u64, code: &[u8]| WriteRecord::Account {
        address,
        nonce,
        balance: U256::from(1_000u32),
        code_hash: if code.is_empty() {
            KECCAK256_EMPTY
        } else {
            keccak256(code)
        },
        code_size: code.len() as u32,
    };
    let blocks = [
        line(
            1,
            &[ReadRecord::Account(new), ReadRecord::Account(eoa)],
            &[write(new, 0, &long_code), write(eoa, 8, &[])],
        ),
        line(
            2,
            &[ReadRecord::Account(short)],
            &[write(short, 1, &long_code)],
        ),
        line(
            3,
            &[ReadRecord::Slot(long, U256::from(70u8))],
            &[
                write(long, 1, &short_code),
                write(new, 0, &[]),
                write(short, 2, &long_code),
            ],
        ),
    ];
    hand_made(&state, dir, "code_change", &blocks)
}

#[test]
fn accounts_blocks_have_geths_witness() {
    let started = Instant::now();
    let tmp = TempDir::new("accounts");
    let Some(bin) = peer(&tmp.0) else {
        return;
    };
    let state = chain_state(&tmp.0);
    let mut workloads = record(
        &state,
        &tmp.0.join("out2"),
        &[Workload::Erc20Approve, Workload::SstoreSeq],
        2,
    );
    workloads.extend(record(
        &state,
        &tmp.0.join("out1"),
        &[Workload::Erc20BalanceOf],
        1,
    ));
    let edge = {
        let entries = tree_entries(&state.join("state.jsonl"), &mut |_| {}).unwrap();
        let db_dir = tmp.0.join("ubt-probe");
        let (db, _) = Db::build(&db_dir, Options::default(), entries.iter()).unwrap();
        let blocks = accounts_edge_blocks(&state, &db);
        drop(db);
        std::fs::remove_dir_all(&db_dir).unwrap();
        hand_made(&state, &tmp.0, "accounts_edge", &blocks)
    };
    workloads.push(edge);
    workloads.push(code_change_workload(&tmp.0));
    let mut counts = Counts::default();
    for workload in &workloads {
        compare_workload(&bin, workload, &tmp.0, &mut counts);
    }
    println!(
        "accounts: {counts:?} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // approve 2 + sstore_seq 2 + balanceOf 1 + hand-made 3 + code 3.
    assert_eq!(counts.blocks, 11);
    assert!(counts.nodes > 10_000, "{counts:?}");
}

/// The raw key `i` of the generated state.
fn raw_key(seed: u64, i: u64) -> B256 {
    B256::from(raw_entry(seed, i).0)
}

/// `key` with bit `bit` of its stem flipped: a stem sharing the first
/// `bit` bits with `key`'s.
fn flip(key: B256, bit: usize) -> B256 {
    let mut out = key;
    out.0[bit / 8] ^= 0x80 >> (bit % 8);
    out
}

/// Raw blocks the generated ones do not make: absent keys (beside a
/// present one in its stem, or elsewhere), new keys in present stems and
/// in new ones (splits), a new stem sharing 200 bits with a present one
/// (a long chain of internal nodes), then a read ending inside that chain
/// and a write into it, a zero write, and a block without accesses.
fn raw_edge_blocks(seed: u64, entries: u64) -> Vec<BlockLine> {
    let key = |i: u64| raw_key(seed, i);
    let value = |tag: &[u8]| keccak256(tag);
    let absent = |tag: &[u8]| keccak256([b"absent ".as_slice(), tag].concat());
    let mut beside = key(1);
    beside.0[31] ^= 0x55;
    let mut in_stem = key(4);
    in_stem.0[31] ^= 0xaa;
    let deep = flip(key(5), 200);
    let reads = [
        ReadRecord::Raw(key(0)),
        ReadRecord::Raw(beside),
        ReadRecord::Raw(absent(b"1")),
        ReadRecord::Raw(absent(b"2")),
        ReadRecord::Raw(absent(b"3")),
    ];
    let writes = [
        WriteRecord::Raw {
            key: key(2),
            value: value(b"2"),
        },
        WriteRecord::Raw {
            key: key(3),
            value: B256::ZERO,
        },
        WriteRecord::Raw {
            key: in_stem,
            value: value(b"4"),
        },
        WriteRecord::Raw {
            key: absent(b"new 1"),
            value: value(b"n1"),
        },
        WriteRecord::Raw {
            key: absent(b"new 2"),
            value: value(b"n2"),
        },
        WriteRecord::Raw {
            key: deep,
            value: value(b"deep"),
        },
        WriteRecord::Raw {
            key: key(entries - 1),
            value: value(b"last"),
        },
    ];
    let reads_2 = [
        ReadRecord::Raw(flip(key(5), 150)),
        ReadRecord::Raw(deep),
        ReadRecord::Raw(key(5)),
    ];
    let writes_2 = [WriteRecord::Raw {
        key: flip(key(5), 100),
        value: value(b"chain"),
    }];
    vec![
        line(1, &reads, &writes),
        line(2, &reads_2, &writes_2),
        line(3, &[], &[]),
    ]
}

#[test]
fn raw_blocks_have_geths_witness() {
    let started = Instant::now();
    let tmp = TempDir::new("raw");
    let Some(bin) = peer(&tmp.0) else {
        return;
    };
    let (entries, seed) = (3_000, 5);
    let blocks = RawBlocks {
        read_blocks: 2,
        reads_per_block: 200,
        write_blocks: 2,
        writes_per_block: 150,
    };
    let report = gen_raw(&tmp.0.join("raw"), entries, seed, blocks, &mut |_| {}).unwrap();
    let edge = hand_made(
        &report.reads_dir,
        &tmp.0,
        "raw_edge",
        &raw_edge_blocks(seed, entries),
    );
    let mut counts = Counts::default();
    for workload in [&report.reads_dir, &report.writes_dir, &edge] {
        compare_workload(&bin, workload, &tmp.0, &mut counts);
    }
    println!(
        "raw: {counts:?} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(counts.blocks, 2 + 2 + 3);
    assert!(counts.nodes > 1_000, "{counts:?}");
}

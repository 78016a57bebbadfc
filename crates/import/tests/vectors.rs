//! Imports of go-ethereum-generated inputs (test-vectors/genesis and
//! test-vectors/geth-dump, written by peers/geth/cmd/{genesis,dumpgen})
//! against the binary-trie roots go-ethereum v1.17.10 computes for them:
//! mainnet, Sepolia and Hoodi genesis, each edge case, the dump with and
//! without missing preimages, in memory and with a tiny memory bound.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::collections::BTreeMap;

use alloy_primitives::B256;
use common::{import_dump, import_genesis_bytes, vectors, TempDir};
use ubt_import::{ImportError, ImportOptions, Problem, MIN_MEMORY_BYTES};

fn read(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tiny(dir: &TempDir) -> ImportOptions {
    ImportOptions {
        memory_bytes: MIN_MEMORY_BYTES,
        tmp_dir: Some(dir.0.clone()),
        ..ImportOptions::default()
    }
}

/// go-ethereum decodes a negative balance −x as 2^256 − x; an import
/// refuses it (see the crate documentation), so that file has a root but
/// no import.
const REFUSED: &str = "edge-negative-balance.json";

#[test]
fn genesis_roots_match_go_ethereum() {
    let dir = vectors().join("genesis");
    let roots: BTreeMap<String, String> =
        serde_json::from_value(json(&dir.join("roots.json"))).expect("roots.json is a map");
    for required in [
        "mainnet.json",
        "sepolia.json",
        "hoodi.json",
        "edge-full.json",
    ] {
        assert!(roots.contains_key(required), "roots.json lacks {required}");
    }
    let work = TempDir::new("genesis-vectors");
    for (file, root) in &roots {
        let document = read(&dir.join(file));
        let expected: B256 = root.parse().expect("a root");
        let db = work.path(file);
        let result = import_genesis_bytes(&db, &document, &ImportOptions::default());
        if file == REFUSED {
            let error = result.expect_err("a negative balance is refused");
            assert!(
                matches!(
                    &error,
                    ImportError::Input(input) if input.problem == Problem::NegativeBalance
                        && input.location.path.starts_with("alloc.0x")
                        && input.location.path.ends_with(".balance")
                ),
                "{error}"
            );
            assert!(!db.exists(), "a failed import leaves no directory");
            continue;
        }
        let report = result.unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(report.root, expected, "{file}");
    }
    // The largest with a tiny memory bound: spilled runs, merged.
    let report = import_genesis_bytes(
        &work.path("mainnet-tiny"),
        &read(&dir.join("mainnet.json")),
        &tiny(&work),
    )
    .expect("mainnet");
    assert_eq!(
        report.root,
        roots["mainnet.json"].parse::<B256>().expect("root")
    );
    assert!(report.spill_runs > 10, "{report:?}");
}

/// The expected figures of a dump.
struct Expected {
    root: B256,
    accounts: u64,
    skipped: u64,
    slots: u64,
    code_bytes: u64,
    entries: u64,
}

fn expected(name: &str) -> Expected {
    let value = json(&vectors().join("geth-dump").join(name));
    let number = |field: &str| {
        value[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {field}"))
    };
    Expected {
        root: value["ubtRoot"]
            .as_str()
            .expect("ubtRoot")
            .parse()
            .expect("a root"),
        accounts: number("accounts"),
        skipped: number("skippedAccounts"),
        slots: number("storageSlots"),
        code_bytes: number("codeBytes"),
        entries: number("treeEntries"),
    }
}

#[test]
fn dump_roots_match_go_ethereum() {
    let dir = vectors().join("geth-dump");
    let work = TempDir::new("dump-vectors");
    let dump = read(&dir.join("small.jsonl"));
    let want = expected("expected.json");
    for (label, options) in [("roomy", ImportOptions::default()), ("tiny", tiny(&work))] {
        let report = import_dump(&work.path(label), &dump, &options)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(report.root, want.root, "{label}");
        assert_eq!(report.counts.accounts, want.accounts);
        assert_eq!(report.counts.skipped_accounts, want.skipped);
        assert_eq!(report.counts.storage_slots, want.slots);
        assert_eq!(report.counts.code_bytes, want.code_bytes);
        assert_eq!(report.counts.tree_entries, want.entries);
        assert!(report.source_root.is_some());
    }

    let missing = read(&dir.join("small-missing-preimages.jsonl"));
    let want = expected("expected-missing-preimages.json");
    let skipping = ImportOptions {
        skip_missing_preimages: true,
        ..ImportOptions::default()
    };
    let report = import_dump(&work.path("skipping"), &missing, &skipping).expect("skipping");
    assert_eq!(report.root, want.root);
    assert_eq!(report.counts.skipped_accounts, want.skipped);
    assert_eq!(report.counts.accounts, want.accounts);
    assert_eq!(report.counts.tree_entries, want.entries);

    let error = import_dump(&work.path("strict"), &missing, &ImportOptions::default())
        .expect_err("a missing address is an error");
    match &error {
        ImportError::Input(input) if input.problem == Problem::MissingAddress => {
            let line = input.location.line.expect("a line");
            let text = String::from_utf8_lossy(&missing);
            let bad = text
                .lines()
                .nth(line as usize - 1)
                .expect("the line exists");
            assert!(!bad.contains("\"address\""), "line {line} has an address");
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(!work.path("strict").exists());
}

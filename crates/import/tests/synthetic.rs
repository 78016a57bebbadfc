//! Imports of generated state (`ubt_import::testing`) against roots
//! computed independently with `ubt-spec`'s key functions: the same root
//! from a dump and from a genesis of the same accounts, in memory and with
//! a tiny memory bound (many spill runs, multi-pass merges, long lines
//! streamed with their storage spooled), and the same values in the
//! database.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::{import_dump, import_genesis_bytes, oracle_root, TempDir};
use ubt_import::testing::{write_dump_line, write_dump_root, write_genesis, Generator};
use ubt_import::{ImportOptions, MIN_MEMORY_BYTES};

fn accounts(
    seed: u64,
    count: usize,
    big_slots: usize,
) -> Vec<ubt_import::testing::SyntheticAccount> {
    let mut generator = Generator::new(seed, big_slots);
    (0..count).map(|_| generator.next_account()).collect()
}

fn dump_bytes(accounts: &[ubt_import::testing::SyntheticAccount]) -> Vec<u8> {
    let mut out = Vec::new();
    write_dump_root(&mut out, &B256::repeat_byte(0x42)).expect("write");
    for account in accounts {
        write_dump_line(&mut out, account).expect("write");
    }
    out
}

#[test]
fn dump_and_genesis_give_the_oracle_root_in_memory_and_spilled() {
    let accounts = accounts(7, 1500, 3000);
    let expected = oracle_root(&accounts);
    let dump = dump_bytes(&accounts);
    let mut genesis = Vec::new();
    write_genesis(&mut genesis, &accounts).expect("write");
    let entries: u64 = accounts.iter().map(|a| a.tree_entry_count()).sum();

    let dir = TempDir::new("synthetic");
    let roomy = ImportOptions::default();
    let tiny = ImportOptions {
        memory_bytes: MIN_MEMORY_BYTES,
        tmp_dir: Some(dir.path("")),
        ..ImportOptions::default()
    };
    for (label, options) in [("roomy", &roomy), ("tiny", &tiny)] {
        let report = import_dump(&dir.path(&format!("dump-{label}")), &dump, options)
            .unwrap_or_else(|e| panic!("{label} dump: {e}"));
        assert_eq!(report.root, expected, "{label} dump");
        assert_eq!(report.counts.tree_entries, entries);
        assert_eq!(report.counts.accounts, accounts.len() as u64);
        assert_eq!(report.source_root, Some(B256::repeat_byte(0x42)));
        let report =
            import_genesis_bytes(&dir.path(&format!("genesis-{label}")), &genesis, options)
                .unwrap_or_else(|e| panic!("{label} genesis: {e}"));
        assert_eq!(report.root, expected, "{label} genesis");
        if label == "tiny" {
            assert!(report.spill_runs > 20, "{report:?}");
            assert!(report.merge_passes > 0, "{report:?}");
        } else {
            assert_eq!(report.spill_runs, 0);
        }
    }
    // Nothing but the databases is left in the directory.
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["dump-roomy", "dump-tiny", "genesis-roomy", "genesis-tiny"]
    );

    // The values are in the database.
    let db = ubt_engine::Db::open_read_only(dir.path("dump-tiny"), ubt_engine::Options::default())
        .expect("open");
    for account in accounts.iter().step_by(97) {
        for (key, value) in account.tree_entries() {
            assert_eq!(db.get(&key).expect("get"), Some(value));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8))]

    /// Any generated state: the tiny-memory import (spilled, merged in
    /// passes, long lines streamed) and the in-memory one store the same
    /// entries, at the oracle's root.
    #[test]
    fn spilled_and_in_memory_imports_store_the_same_entries(
        seed in proptest::prelude::any::<u64>(),
        count in 1usize..400,
        big_slots in 0usize..2000,
    ) {
        let accounts = accounts(seed, count, big_slots);
        let dump = dump_bytes(&accounts);
        let dir = TempDir::new("prop");
        let tiny = ImportOptions {
            memory_bytes: MIN_MEMORY_BYTES,
            tmp_dir: Some(dir.path("")),
            ..ImportOptions::default()
        };
        let roomy = import_dump(&dir.path("roomy"), &dump, &ImportOptions::default())
            .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        let spilled = import_dump(&dir.path("tiny"), &dump, &tiny)
            .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        proptest::prop_assert_eq!(roomy.root, oracle_root(&accounts));
        proptest::prop_assert_eq!(spilled.root, roomy.root);
        proptest::prop_assert_eq!(spilled.counts, roomy.counts);
        let open = |name: &str| {
            ubt_engine::Db::open_read_only(dir.path(name), ubt_engine::Options::default())
                .expect("open")
        };
        let (a, b) = (open("roomy"), open("tiny"));
        let keys: Vec<B256> = accounts.iter().flat_map(|x| x.tree_entries()).map(|(k, _)| k).collect();
        let (values_a, values_b) = (a.get_many(&keys).expect("get"), b.get_many(&keys).expect("get"));
        proptest::prop_assert!(values_a.iter().all(Option::is_some));
        proptest::prop_assert_eq!(&values_a, &values_b);
        proptest::prop_assert_eq!(a.stats().leaf_count, b.stats().leaf_count);
        // The flat index, sorted by account in memory and spilled, holds
        // every entry under its account, as the tree does.
        let owned: Vec<(alloy_primitives::Address, B256)> = accounts
            .iter()
            .flat_map(|x| x.tree_entries().into_iter().map(|(k, _)| (x.address, k)))
            .collect();
        for db in [&a, &b] {
            proptest::prop_assert!(db.has_flat_index());
            proptest::prop_assert_eq!(&db.get_owned(&owned).expect("get_owned"), &values_a);
            let verified = db.verify().expect("verify");
            proptest::prop_assert!(verified.is_ok(), "{:?}", verified.problems);
            proptest::prop_assert_eq!(verified.flat_records, keys.len() as u64);
        }
        proptest::prop_assert_eq!(spilled.flat_index.map(|f| f.records), Some(keys.len() as u64));
    }
}

//! `import_items`: accounts and slots from an iterator, against the root
//! computed independently with `ubt-spec`'s key functions, in memory and
//! spilled (a tiny memory bound), in any order; duplicates and the
//! iterator's errors stop it and leave no database behind.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use alloy_primitives::{B256, U256};
use common::{oracle_root, TempDir};
use ubt_import::testing::{Generator, SyntheticAccount};
use ubt_import::{
    import_items, ImportError, ImportOptions, NoProgress, Problem, StateItem, MIN_MEMORY_BYTES,
};

fn accounts(seed: u64, count: usize, big_slots: usize) -> Vec<SyntheticAccount> {
    let mut generator = Generator::new(seed, big_slots);
    (0..count).map(|_| generator.next_account()).collect()
}

/// Every account's item, then every slot's, or each account followed by
/// its slots in reverse.
fn items(accounts: &[SyntheticAccount], slots_first: bool) -> Vec<StateItem> {
    let account_item = |a: &SyntheticAccount| StateItem::Account {
        address: a.address,
        nonce: a.nonce,
        balance: a.balance,
        code: a.code.clone(),
    };
    let slot_items = |a: &SyntheticAccount| {
        a.storage
            .iter()
            .rev()
            .map(|(slot, value)| StateItem::Slot {
                address: a.address,
                slot: U256::from_be_bytes(*slot),
                value: B256::from(*value),
            })
            .collect::<Vec<_>>()
    };
    if slots_first {
        let mut out: Vec<StateItem> = accounts.iter().flat_map(slot_items).collect();
        out.extend(accounts.iter().map(account_item));
        out
    } else {
        accounts
            .iter()
            .flat_map(|a| std::iter::once(account_item(a)).chain(slot_items(a)))
            .collect()
    }
}

#[test]
fn items_in_any_order_give_the_oracle_root_in_memory_and_spilled() {
    let accounts = accounts(11, 800, 2500);
    let expected = oracle_root(&accounts);
    let dir = TempDir::new("items");
    let tiny = ImportOptions {
        memory_bytes: MIN_MEMORY_BYTES,
        tmp_dir: Some(dir.path("")),
        ..ImportOptions::default()
    };
    for (label, options, slots_first) in [
        ("roomy", ImportOptions::default(), false),
        ("tiny", tiny, true),
    ] {
        let db = dir.path(label);
        let report = import_items(
            items(&accounts, slots_first).into_iter().map(Ok),
            &db,
            &options,
            &NoProgress,
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(report.root, expected, "{label}");
        assert_eq!(report.counts.accounts, accounts.len() as u64);
        if label == "tiny" {
            assert!(report.spill_runs > 10, "{report:?}");
        }
        let db = ubt_engine::Db::open_read_only(&db, ubt_engine::Options::default()).unwrap();
        for account in accounts.iter().step_by(53) {
            for (key, value) in account.tree_entries() {
                assert_eq!(db.get(&key).unwrap(), Some(value), "{label}");
            }
            // The flat index serves the account-level reads.
            if let Some((slot, value)) = account.storage.first() {
                let reader = db.reader(&db.root()).unwrap();
                let got = reader
                    .storage(&account.address, &U256::from_be_bytes(*slot))
                    .unwrap();
                assert_eq!(got, Some(B256::from(*value)), "{label}");
            }
        }
    }
}

#[test]
fn a_slot_given_twice_is_refused_naming_both_items() {
    let accounts = accounts(3, 5, 0);
    let mut items = items(&accounts, false);
    let duplicate = items
        .iter()
        .position(|item| matches!(item, StateItem::Slot { .. }))
        .expect("a slot");
    items.push(items[duplicate].clone());
    let last = items.len();
    let dir = TempDir::new("items-dup");
    let db = dir.path("db");
    let error = import_items(
        items.into_iter().map(Ok),
        &db,
        &ImportOptions::default(),
        &NoProgress,
    )
    .unwrap_err();
    let ImportError::Input(input) = &error else {
        panic!("{error}")
    };
    assert!(
        matches!(input.problem, Problem::DuplicateTreeKey { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("items {} and {last}", duplicate + 1)),
        "{text}"
    );
    assert!(error.is_bad_input());
    assert!(!db.join(ubt_engine::DATA_FILE).exists(), "no database left");
}

#[test]
fn an_error_from_the_iterator_stops_the_import() {
    let accounts = accounts(5, 300, 0);
    let good = items(&accounts, false);
    let half = good.len() / 2;
    let failing = good.into_iter().enumerate().map(move |(i, item)| {
        if i == half {
            Err(std::io::Error::other("the source broke"))
        } else {
            Ok(item)
        }
    });
    let dir = TempDir::new("items-err");
    let db = dir.path("db");
    let error = import_items(failing, &db, &ImportOptions::default(), &NoProgress).unwrap_err();
    assert!(matches!(error, ImportError::Read(_)), "{error}");
    assert!(error.to_string().contains("the source broke"), "{error}");
    assert!(!db.join(ubt_engine::DATA_FILE).exists(), "no database left");
}

//! The sequential-slot contract: a load block reads exactly its slots, a
//! store block writes exactly the values asked, each loop iteration costs
//! the documented gas, and blocks sized by `slots_for_gas` fit their gas.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_evm::sequential::{
    preset_value, sequential_code, sequential_tx, slots_for_gas, LOAD_ITERATION_GAS,
    SSTORE_CHANGE_GAS, SSTORE_FRESH_GAS, STORE_OVERHEAD_GAS,
};
use ubt_evm::workloads::BlockShape;
use ubt_evm::{BlockOutcome, CodeStore, Executor, MemorySource, WriteRecord};
use ubt_spec::FastTree;

const SENDER: Address = Address::repeat_byte(0x5e);
const CONTRACT: Address = Address::repeat_byte(0x5c);
const PRESET: u64 = 1_000;

fn executor() -> Executor<MemorySource<FastTree>> {
    let mut codes = CodeStore::new();
    let mut source = MemorySource::new(FastTree::new());
    let ether = U256::from(10u64).pow(U256::from(18u8));
    source.put_account(&mut codes, &SENDER, 0, &ether, &Bytes::new());
    source.put_account(&mut codes, &CONTRACT, 1, &U256::ZERO, &sequential_code());
    for slot in 1..=PRESET {
        source.put_slot(&CONTRACT, &U256::from(slot), &preset_value(slot));
    }
    Executor::new(source, codes)
}

fn run(n: u64, start: u64, store_offset: Option<u64>, gas_limit: u64) -> BlockOutcome {
    let mut executor = executor();
    let tx = sequential_tx(SENDER, CONTRACT, n, start, store_offset, gas_limit);
    let outcome = executor.execute_block(&[tx]).expect("block runs");
    assert!(outcome.txs[0].success, "{:?}", outcome.txs[0]);
    outcome
}

#[test]
fn a_load_block_reads_each_slot_once_and_writes_nothing_but_the_sender() {
    let outcome = run(300, 5, None, 10_000_000);
    assert_eq!(outcome.slots_read, 300);
    assert_eq!(outcome.slots_written, 0);
    assert!(outcome.reads.contains(&format!(
        "s:{CONTRACT:#x}:{:#x}",
        B256::from(U256::from(5u8))
    )));
}

#[test]
fn a_store_block_writes_slot_plus_offset() {
    let outcome = run(50, 990, Some(7), 10_000_000);
    assert_eq!(outcome.slots_written, 50);
    let mut slots: Vec<(U256, B256)> = outcome
        .writes
        .iter()
        .filter_map(|w| match w.parse::<WriteRecord>().expect("parses") {
            WriteRecord::Slot { slot, value, .. } => Some((slot, value)),
            _ => None,
        })
        .collect();
    slots.sort();
    let expected: Vec<(U256, B256)> = (990..1_040u64)
        .map(|s| (U256::from(s), B256::from(U256::from(s + 7))))
        .collect();
    assert_eq!(slots, expected);
}

#[test]
fn writing_the_preset_value_changes_nothing() {
    let outcome = run(20, 10, Some(1), 10_000_000);
    assert_eq!(outcome.slots_written, 0);
    assert_eq!(outcome.slots_read, 20);
}

#[test]
fn iterations_cost_the_documented_gas() {
    let gas = |n, offset| run(n, 1, offset, 30_000_000).gas_used;
    assert_eq!(gas(101, None) - gas(100, None), LOAD_ITERATION_GAS);
    // Slots 1..=PRESET hold slot + 1: offset 2 changes them.
    assert_eq!(
        gas(101, Some(2)) - gas(100, Some(2)),
        STORE_OVERHEAD_GAS + SSTORE_CHANGE_GAS
    );
    let fresh = |n| run(n, PRESET + 1, Some(2), 30_000_000).gas_used;
    assert_eq!(
        fresh(101) - fresh(100),
        STORE_OVERHEAD_GAS + SSTORE_FRESH_GAS
    );
}

#[test]
fn blocks_sized_by_gas_fit_and_fill_their_shape() {
    for shape in [BlockShape::Gd, BlockShape::Mpt] {
        let per_slot = LOAD_ITERATION_GAS;
        let n = slots_for_gas(shape.gas(), per_slot);
        let outcome = run(n, 1, None, shape.gas());
        assert!(outcome.gas_used <= shape.gas());
        assert!(
            shape.gas() - outcome.gas_used < 30_000,
            "{}",
            outcome.gas_used
        );
        let per_slot = STORE_OVERHEAD_GAS + SSTORE_FRESH_GAS;
        let n = slots_for_gas(shape.gas(), per_slot);
        let outcome = run(n, PRESET + 1, Some(2), shape.gas());
        assert_eq!(outcome.slots_written as u64, n);
        assert!(outcome.gas_used <= shape.gas());
    }
}

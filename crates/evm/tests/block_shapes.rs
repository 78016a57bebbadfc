//! The studies' block shapes: how many calls, reads and writes a block of
//! 16,777,216 gas (group-depth study) and of 100,000,000 gas (MPT study)
//! makes. Run with `--nocapture` to see the figures.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use ubt_evm::workloads::{approve_block, balanceof_block, mixed_tx, BlockShape, CallPlan};
use ubt_evm::BlockOutcome;
use ubt_spec::FastTree;

fn run(tx: ubt_evm::TxSpec, plan: &CallPlan, shape: BlockShape) -> BlockOutcome {
    let mut executor = common::executor(FastTree::new(), plan.start..plan.end());
    let outcome = executor.execute_block(&[tx]).expect("block runs");
    assert!(outcome.txs[0].success);
    assert!(outcome.gas_used <= shape.gas());
    println!(
        "{shape:?}: {plan:?} gas_used={} ({:.3}% of the block) reads={} (accounts {}, slots {}) writes={} (accounts {}, slots {}) tree_writes={}",
        outcome.gas_used,
        100.0 * outcome.gas_used as f64 / shape.gas() as f64,
        outcome.reads.len(),
        outcome.accounts_read,
        outcome.slots_read,
        outcome.writes.len(),
        outcome.accounts_written,
        outcome.slots_written,
        outcome.tree_writes.len(),
    );
    outcome
}

#[test]
fn balanceof_blocks_read_one_slot_per_call() {
    let actors = common::actors();
    for (shape, expected_reads) in [(BlockShape::Gd, 6_141), (BlockShape::Mpt, 36_700)] {
        let (tx, plan) = balanceof_block(&actors, 1, shape);
        let outcome = run(tx, &plan, shape);
        // Every call read its slot; the block is within one call of full.
        assert_eq!(outcome.slots_read as u64, plan.balanceof_calls);
        assert_eq!(outcome.accounts_read, 3);
        assert!(shape.gas() - outcome.gas_used < 2 * 2_722);
        // The studies' figures, within 0.5%.
        let reads = outcome.reads.len() as f64;
        assert!(
            (reads - expected_reads as f64).abs() / (expected_reads as f64) < 0.005,
            "{reads}"
        );
        assert_eq!(outcome.slots_written, 0);
    }
}

#[test]
fn approve_blocks_write_one_slot_per_call() {
    let actors = common::actors();
    for shape in [BlockShape::Gd, BlockShape::Mpt] {
        let (tx, plan) = approve_block(&actors, 1, shape);
        let outcome = run(tx, &plan, shape);
        assert_eq!(outcome.slots_written as u64, plan.approve_calls);
        assert_eq!(outcome.slots_read as u64, plan.approve_calls);
        assert!(shape.gas() - outcome.gas_used < 2 * 22_897);
    }
}

#[test]
fn mixed_blocks_split_by_gas() {
    let actors = common::actors();
    for shape in [BlockShape::Gd, BlockShape::Mpt] {
        let (tx, plan) = mixed_tx(&actors, 1, 50, 50, shape.gas());
        let outcome = run(tx, &plan, shape);
        let balanceof_gas = plan.balanceof_calls * 2_722;
        let approve_gas = plan.approve_calls * 22_897;
        assert!(balanceof_gas.abs_diff(approve_gas) < 22_897 + 2_722);
        assert_eq!(outcome.slots_written as u64, plan.approve_calls);
        assert_eq!(
            outcome.slots_read as u64,
            plan.balanceof_calls + plan.approve_calls
        );
    }
}

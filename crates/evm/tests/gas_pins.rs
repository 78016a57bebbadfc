//! Gas per call of the hand-assembled token against the published figures
//! (Osaka, EIP-2929 schedule): 2,722 per `balanceOf` call, 22,897 per
//! `approve` call into a fresh slot, within 0.5%.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use ubt_evm::erc20::{APPROVE_CALL_GAS, BALANCEOF_CALL_GAS};
use ubt_evm::workloads::{attack_gas, attack_tx, CallPlan};
use ubt_spec::FastTree;

const PUBLISHED_BALANCEOF: f64 = 2_722.0;
const PUBLISHED_APPROVE: f64 = 22_897.0;

/// Gas of one transaction running `plan` on fresh state; asserts it
/// succeeded and made every call.
fn run(plan: CallPlan) -> u64 {
    let actors = common::actors();
    let mut executor = common::executor(FastTree::new(), 1..plan.end());
    let block = executor
        .execute_block(&[attack_tx(&actors, &plan, 100_000_000)])
        .expect("block runs");
    assert!(block.txs[0].success);
    assert_eq!(
        block.slots_read as u64,
        plan.balanceof_calls + plan.approve_calls
    );
    assert_eq!(block.slots_written as u64, plan.approve_calls);
    block.gas_used
}

fn within_half_percent(measured: f64, published: f64) -> bool {
    (measured - published).abs() / published <= 0.005
}

fn balanceof(start: u64, calls: u64) -> CallPlan {
    CallPlan {
        start,
        balanceof_calls: calls,
        approve_calls: 0,
    }
}

fn approve(start: u64, calls: u64) -> CallPlan {
    CallPlan {
        start,
        balanceof_calls: 0,
        approve_calls: calls,
    }
}

#[test]
fn balanceof_costs_2722_per_call() {
    // Marginal over 1,000 calls, both transactions of 1,000+ calls.
    let per_call = (run(balanceof(1, 2_000)) - run(balanceof(1, 1_000))) as f64 / 1_000.0;
    assert!(
        within_half_percent(per_call, PUBLISHED_BALANCEOF),
        "{per_call}"
    );
    assert_eq!(per_call, BALANCEOF_CALL_GAS as f64);
}

#[test]
fn approve_costs_22897_per_call() {
    let per_call = (run(approve(1, 2_000)) - run(approve(1, 1_000))) as f64 / 1_000.0;
    assert!(
        within_half_percent(per_call, PUBLISHED_APPROVE),
        "{per_call}"
    );
    assert_eq!(per_call, APPROVE_CALL_GAS as f64);
}

#[test]
fn whole_transactions_stay_within_half_a_percent() {
    // Gas of the whole transaction over its calls, intrinsic gas included.
    let per_call = run(balanceof(1, 6_000)) as f64 / 6_000.0;
    assert!(
        within_half_percent(per_call, PUBLISHED_BALANCEOF),
        "{per_call}"
    );
    let per_call = run(approve(1, 1_000)) as f64 / 1_000.0;
    assert!(
        within_half_percent(per_call, PUBLISHED_APPROVE),
        "{per_call}"
    );
}

#[test]
fn transaction_gas_is_predicted_exactly() {
    let actors = common::actors();
    let mixed = CallPlan {
        start: 300,
        balanceof_calls: 77,
        approve_calls: 5,
    };
    for plan in [
        balanceof(1, 1),
        approve(1, 1),
        balanceof(5, 1_234),
        approve(1, 0),
        mixed,
    ] {
        assert_eq!(run(plan), attack_gas(&actors, &plan), "{plan:?}");
    }
}

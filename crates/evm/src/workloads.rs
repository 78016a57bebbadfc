//! Transaction builders for the ERC20 workloads of the benchmark studies,
//! and how many calls fit a gas budget.
//!
//! Two block shapes:
//!
//! * [`BlockShape::Gd`]: one transaction of 16,777,216 gas per block
//!   (Osaka's per-transaction cap, EIP-7825), as the group-depth study ran;
//! * [`BlockShape::Mpt`]: one transaction of 100,000,000 gas per block, as
//!   the MPT study ran, which needs the per-transaction cap lifted (the
//!   [`crate::Executor`] always lifts it).
//!
//! Every transaction calls the [`crate::attack`] contract, which loops over
//! the token; the token is in the access list (warm), gas price is zero.
//! Gas is exact: intrinsic gas, plus [`ATTACK_FIXED_GAS`], plus 2,722 per
//! `balanceOf` call and 22,897 per `approve` call into a fresh slot (plus
//! 3 once when there are approves), see [`attack_gas`].

use alloy_primitives::{Address, U256};

use crate::attack::attack_calldata;
use crate::erc20::{APPROVE_CALL_GAS, BALANCEOF_CALL_GAS};
use crate::executor::TxSpec;

/// Gas of a group-depth study block (and Osaka's transaction gas cap).
pub const GD_BLOCK_GAS: u64 = 16_777_216;
/// Gas of an MPT study block.
pub const MPT_BLOCK_GAS: u64 = 100_000_000;

/// Execution gas of an attack transaction outside its calls: setup with
/// two words of memory (24), each loop's selector store, count load, zero
/// check and exit (35 and 34), STOP.
pub const ATTACK_FIXED_GAS: u64 = 93;
/// Memory growth of the first `approve` iteration (a third word for the
/// amount), when there is one.
pub const APPROVE_LOOP_MEMORY_GAS: u64 = 3;

/// Base cost of a transaction.
const TX_BASE_GAS: u64 = 21_000;
/// EIP-2930: per address in the access list.
const ACCESS_LIST_ADDRESS_GAS: u64 = 2_400;

/// The block shapes of the studies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockShape {
    /// 16,777,216-gas single-transaction blocks (the group-depth study).
    Gd,
    /// 100,000,000-gas single-transaction blocks (the MPT study).
    Mpt,
}

impl BlockShape {
    /// The block's (and its one transaction's) gas.
    pub fn gas(self) -> u64 {
        match self {
            BlockShape::Gd => GD_BLOCK_GAS,
            BlockShape::Mpt => MPT_BLOCK_GAS,
        }
    }
}

/// The accounts an ERC20 workload runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Erc20Actors {
    /// The externally owned sender of every transaction.
    pub sender: Address,
    /// The attack contract ([`crate::attack::attack_code`]).
    pub attack: Address,
    /// The token ([`crate::erc20::token_code`]).
    pub token: Address,
}

/// How many calls of each kind a transaction makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallPlan {
    /// First counter value `i`.
    pub start: u64,
    /// `balanceOf(address(i))` calls, for `i` from `start`.
    pub balanceof_calls: u64,
    /// `approve(address(i), i)` calls after them, `i` continuing.
    pub approve_calls: u64,
}

impl CallPlan {
    /// The counter after the transaction: the next transaction's `start`.
    pub fn end(&self) -> u64 {
        self.start + self.balanceof_calls + self.approve_calls
    }
}

/// The transaction running `plan` with gas limit `gas_limit`.
pub fn attack_tx(actors: &Erc20Actors, plan: &CallPlan, gas_limit: u64) -> TxSpec {
    TxSpec {
        from: actors.sender,
        to: Some(actors.attack),
        value: U256::ZERO,
        input: attack_calldata(
            &actors.token,
            plan.start,
            plan.balanceof_calls,
            plan.approve_calls,
        ),
        gas_limit,
        access_list: vec![actors.token],
        nonce: None,
    }
}

/// `num_calls` calls of `balanceOf(address(i))` for `i` from `start`.
pub fn balanceof_tx(actors: &Erc20Actors, start: u64, num_calls: u64, gas_limit: u64) -> TxSpec {
    let plan = CallPlan {
        start,
        balanceof_calls: num_calls,
        approve_calls: 0,
    };
    attack_tx(actors, &plan, gas_limit)
}

/// `num_calls` calls of `approve(address(i), i)` for `i` from `start`
/// (`start >= 1`: approving 0 writes nothing).
pub fn approve_tx(actors: &Erc20Actors, start: u64, num_calls: u64, gas_limit: u64) -> TxSpec {
    let plan = CallPlan {
        start,
        balanceof_calls: 0,
        approve_calls: num_calls,
    };
    attack_tx(actors, &plan, gas_limit)
}

/// Intrinsic gas of an attack transaction (one access-list address):
/// 21,000, calldata (4 per zero byte, 16 per other byte), 2,400 for the
/// access-list address.
pub fn intrinsic_gas(actors: &Erc20Actors, plan: &CallPlan) -> u64 {
    let (zeros, others) = calldata_bytes(actors, plan);
    TX_BASE_GAS + 4 * zeros + 16 * others + ACCESS_LIST_ADDRESS_GAS
}

/// Zero and non-zero bytes of the attack calldata.
fn calldata_bytes(actors: &Erc20Actors, plan: &CallPlan) -> (u64, u64) {
    let data = attack_calldata(
        &actors.token,
        plan.start,
        plan.balanceof_calls,
        plan.approve_calls,
    );
    let zeros = data.iter().filter(|b| **b == 0).count() as u64;
    (zeros, data.len() as u64 - zeros)
}

/// The exact gas of the transaction running `plan` (approves into fresh
/// slots): intrinsic plus execution, at least the EIP-7623 calldata floor.
pub fn attack_gas(actors: &Erc20Actors, plan: &CallPlan) -> u64 {
    let (zeros, others) = calldata_bytes(actors, plan);
    let floor = TX_BASE_GAS + 10 * (zeros + 4 * others);
    let approve_memory = if plan.approve_calls > 0 {
        APPROVE_LOOP_MEMORY_GAS
    } else {
        0
    };
    let execution = ATTACK_FIXED_GAS
        + approve_memory
        + plan.balanceof_calls * BALANCEOF_CALL_GAS
        + plan.approve_calls * APPROVE_CALL_GAS;
    (intrinsic_gas(actors, plan) + execution).max(floor)
}

/// Gas a transaction keeps unused so its last call gets all it needs: a
/// call passes on at most 63/64 of the gas left (EIP-150).
fn reserve(per_call: u64) -> u64 {
    per_call / 32
}

/// The most calls of one kind (`per_call` gas each) that fit `gas_budget`
/// after `plan`'s other calls.
fn fit(actors: &Erc20Actors, plan: CallPlan, gas_budget: u64, approve: bool) -> CallPlan {
    let per_call = if approve {
        APPROVE_CALL_GAS
    } else {
        BALANCEOF_CALL_GAS
    };
    let with = |n: u64| {
        let mut p = plan;
        if approve {
            p.approve_calls = n;
        } else {
            p.balanceof_calls = n;
        }
        p
    };
    let fits = |n: u64| attack_gas(actors, &with(n)) + reserve(per_call) <= gas_budget;
    let used = attack_gas(actors, &with(0));
    let mut n = gas_budget.saturating_sub(used + reserve(per_call)) / per_call;
    while n > 0 && !fits(n) {
        n -= 1;
    }
    while fits(n + 1) {
        n += 1;
    }
    with(n)
}

/// The most `balanceOf` calls from `start` that one transaction of
/// `gas_budget` gas makes.
pub fn balanceof_calls_for_gas(actors: &Erc20Actors, start: u64, gas_budget: u64) -> u64 {
    let plan = CallPlan {
        start,
        balanceof_calls: 0,
        approve_calls: 0,
    };
    fit(actors, plan, gas_budget, false).balanceof_calls
}

/// The most `approve` calls (fresh slots) from `start` that one
/// transaction of `gas_budget` gas makes.
pub fn approve_calls_for_gas(actors: &Erc20Actors, start: u64, gas_budget: u64) -> u64 {
    let plan = CallPlan {
        start,
        balanceof_calls: 0,
        approve_calls: 0,
    };
    fit(actors, plan, gas_budget, true).approve_calls
}

/// A mixed block's transaction, split by gas as the studies did:
/// `sload_pct`% of the budget's call gas to `balanceOf` calls first, then
/// `sstore_pct`% to `approve` calls, on one counter from `start`. The
/// percentages add up to at most 100; the transaction's gas limit is
/// `gas_budget`.
pub fn mixed_tx(
    actors: &Erc20Actors,
    start: u64,
    sload_pct: u32,
    sstore_pct: u32,
    gas_budget: u64,
) -> (TxSpec, CallPlan) {
    assert!(
        sload_pct + sstore_pct <= 100,
        "percentages add up to more than 100"
    );
    let empty = CallPlan {
        start,
        balanceof_calls: 0,
        approve_calls: 0,
    };
    let call_gas =
        gas_budget.saturating_sub(attack_gas(actors, &empty) + reserve(APPROVE_CALL_GAS));
    let mut plan = CallPlan {
        start,
        balanceof_calls: call_gas * u64::from(sload_pct) / 100 / BALANCEOF_CALL_GAS,
        approve_calls: call_gas * u64::from(sstore_pct) / 100 / APPROVE_CALL_GAS,
    };
    // Larger counts cost more calldata gas: trim until the plan fits.
    while plan.approve_calls > 0
        && attack_gas(actors, &plan) + reserve(APPROVE_CALL_GAS) > gas_budget
    {
        plan.approve_calls -= 1;
    }
    while plan.balanceof_calls > 0
        && attack_gas(actors, &plan) + reserve(APPROVE_CALL_GAS) > gas_budget
    {
        plan.balanceof_calls -= 1;
    }
    (attack_tx(actors, &plan, gas_budget), plan)
}

/// A pure `balanceOf` block of `shape` from `start`.
pub fn balanceof_block(actors: &Erc20Actors, start: u64, shape: BlockShape) -> (TxSpec, CallPlan) {
    let plan = CallPlan {
        start,
        balanceof_calls: balanceof_calls_for_gas(actors, start, shape.gas()),
        approve_calls: 0,
    };
    (attack_tx(actors, &plan, shape.gas()), plan)
}

/// A pure `approve` block of `shape` from `start`.
pub fn approve_block(actors: &Erc20Actors, start: u64, shape: BlockShape) -> (TxSpec, CallPlan) {
    let plan = CallPlan {
        start,
        balanceof_calls: 0,
        approve_calls: approve_calls_for_gas(actors, start, shape.gas()),
    };
    (attack_tx(actors, &plan, shape.gas()), plan)
}

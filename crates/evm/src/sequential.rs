//! The sequential-slot contract of the synthetic SLOAD/SSTORE blocks: it
//! loads, or stores into, its own storage slots `start, start+1, ...`.
//!
//! In EIP-7864 the 256 consecutive main-storage slots `256k..256k+255`
//! share one stem, so these blocks show the tree at its best locality, the
//! opposite of the ERC20 workloads (one random stem per slot).
//!
//! Calldata is four words:
//!
//! | word | meaning |
//! |---|---|
//! | 0 | `n`: how many slots |
//! | 1 | `start`: the first slot |
//! | 2 | mode: 0 loads (`SLOAD`, result dropped), anything else stores |
//! | 3 | `offset`: a store writes `slot + offset` into `slot` |
//!
//! The state generator presets slots `1..=preset` to `slot + 1`
//! ([`preset_value`]); stores with `offset = 1` write the value a slot
//! already holds, any other offset changes it (or sets a fresh slot).

use alloy_primitives::{Address, Bytes, B256, U256};

use crate::asm::{op, Asm};
use crate::executor::TxSpec;

/// Gas of one load iteration: `DUP1 SLOAD POP` with a cold slot (2,100)
/// plus the loop step ([`STEP_GAS`]) and its `JUMPDEST`.
pub const LOAD_ITERATION_GAS: u64 = 3 + 2_100 + 2 + STEP_GAS + 1;

/// Gas of the loop step shared by both loops: `i += 1`, `n -= 1` and the
/// conditional jump back (`PUSH1 ADD SWAP1 PUSH1 SWAP1 SUB SWAP1 DUP2
/// ISZERO ISZERO PUSH2 JUMPI`).
pub const STEP_GAS: u64 = 3 + 3 + 3 + 3 + 3 + 3 + 3 + 3 + 3 + 3 + 3 + 10;

/// Gas of one store iteration around the `SSTORE` itself:
/// `PUSH1 CALLDATALOAD DUP2 ADD DUP2` then the step and its `JUMPDEST`.
pub const STORE_OVERHEAD_GAS: u64 = 3 + 3 + 3 + 3 + 3 + STEP_GAS + 1;

/// `SSTORE` of a cold slot from zero to non-zero (EIP-2929 + EIP-2200).
pub const SSTORE_FRESH_GAS: u64 = 2_100 + 20_000;

/// `SSTORE` of a cold slot from non-zero to another non-zero value.
pub const SSTORE_CHANGE_GAS: u64 = 2_100 + 2_900;

/// Fixed execution gas outside the loops (reading calldata, the mode
/// branch, the empty-loop guard), an upper bound used to size blocks.
pub const FIXED_GAS: u64 = 64;

/// The value the generator presets slot `slot` to.
pub fn preset_value(slot: u64) -> B256 {
    B256::from(U256::from(slot) + U256::from(1u8))
}

/// The contract's runtime bytecode.
pub fn sequential_code() -> Bytes {
    let mut a = Asm::new();
    // ---- setup ------------------------------------------------------- stack
    a.op(op::PUSH0).op(op::CALLDATALOAD); //                       [n]
    a.push1(0x20).op(op::CALLDATALOAD); //                         [n, i]
    a.op(op::DUP2)
        .op(op::ISZERO)
        .push_label("done")
        .op(op::JUMPI); // n == 0
    a.push1(0x40).op(op::CALLDATALOAD); //                         [n, i, mode]
    a.op(op::ISZERO).push_label("load_loop").op(op::JUMPI); //     [n, i]

    // ---- store loop: SSTORE(i, i + offset) ---------------------------------
    a.label("store_loop"); //                                       [n, i]
    a.push1(0x60).op(op::CALLDATALOAD).op(op::DUP2).op(op::ADD); // [n, i, i+offset]
    a.op(op::DUP2).op(op::SSTORE); //                               [n, i]
    step(&mut a, "store_loop");
    a.op(op::STOP);

    // ---- load loop: SLOAD(i) ------------------------------------------------
    a.label("load_loop"); //                                        [n, i]
    a.op(op::DUP1).op(op::SLOAD).op(op::POP); //                    [n, i]
    step(&mut a, "load_loop");
    a.label("done").op(op::STOP);
    a.finish().into()
}

/// `i += 1`, `n -= 1`, jump back to `label` while `n != 0`.
fn step(a: &mut Asm, label: &str) {
    a.push1(1).op(op::ADD); //                                      [n, i+1]
    a.op(op::SWAP1)
        .push1(1)
        .op(op::SWAP1)
        .op(op::SUB)
        .op(op::SWAP1); // [n-1, i+1]
    a.op(op::DUP2).op(op::ISZERO).op(op::ISZERO); //                [n-1, i+1, more]
    a.push_label(label).op(op::JUMPI); //                           [n-1, i+1]
}

/// The calldata of a block of `n` loads (`store_offset = None`) or stores
/// from slot `start`.
pub fn sequential_calldata(n: u64, start: u64, store_offset: Option<u64>) -> Bytes {
    let mut data = Vec::with_capacity(128);
    data.extend_from_slice(&U256::from(n).to_be_bytes::<32>());
    data.extend_from_slice(&U256::from(start).to_be_bytes::<32>());
    let mode = u64::from(store_offset.is_some());
    data.extend_from_slice(&U256::from(mode).to_be_bytes::<32>());
    data.extend_from_slice(&U256::from(store_offset.unwrap_or(0)).to_be_bytes::<32>());
    data.into()
}

/// Intrinsic gas of a transaction with `calldata` and no access list
/// (21,000 plus 4 per zero byte and 16 per other byte; the 128-byte
/// calldata stays above the EIP-7623 floor only with execution, which the
/// sizing below always has).
fn intrinsic_gas(calldata: &[u8]) -> u64 {
    let zeros = calldata.iter().filter(|b| **b == 0).count() as u64;
    21_000 + 4 * zeros + 16 * (calldata.len() as u64 - zeros)
}

/// How many slots a transaction of `gas_budget` gas loads (`per_slot =
/// LOAD_ITERATION_GAS`) or stores (`per_slot = STORE_OVERHEAD_GAS +` the
/// `SSTORE` cost), keeping the 2,300 gas an `SSTORE` needs left over.
pub fn slots_for_gas(gas_budget: u64, per_slot: u64) -> u64 {
    // Calldata of the largest plausible counts: at most 16 gas per byte.
    let intrinsic = 21_000 + 16 * 128;
    gas_budget.saturating_sub(intrinsic + FIXED_GAS + 2_300) / per_slot
}

/// A transaction from `from` that loads (or stores into) `n` slots of the
/// contract at `contract` from `start`.
pub fn sequential_tx(
    from: Address,
    contract: Address,
    n: u64,
    start: u64,
    store_offset: Option<u64>,
    gas_limit: u64,
) -> TxSpec {
    let input = sequential_calldata(n, start, store_offset);
    debug_assert!(intrinsic_gas(&input) < gas_limit);
    TxSpec {
        from,
        to: Some(contract),
        value: U256::ZERO,
        input,
        gas_limit,
        access_list: Vec::new(),
        nonce: None,
    }
}

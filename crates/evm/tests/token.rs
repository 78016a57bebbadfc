//! The token's behaviour: balances, allowances, transfers, reverts.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_evm::erc20::{
    address_of, allowance_calldata, allowance_slot, approve_calldata, balance_of_calldata,
    balance_slot, transfer_calldata,
};
use ubt_evm::workloads::approve_tx;
use ubt_evm::{Executor, MemorySource, TxOutcome, TxSpec};
use ubt_spec::key::storage_slot_key;
use ubt_spec::{ReferenceTree, StateTree};

fn call(to: Address, input: Bytes) -> TxSpec {
    TxSpec {
        from: common::actors().sender,
        to: Some(to),
        value: U256::ZERO,
        input,
        gas_limit: 1_000_000,
        access_list: Vec::new(),
        nonce: None,
    }
}

fn word(output: &Bytes) -> U256 {
    assert_eq!(output.len(), 32, "one word returned");
    U256::from_be_slice(output)
}

/// Runs `txs` as one block, applies its writes, returns the results.
fn block(executor: &mut Executor<MemorySource<ReferenceTree>>, txs: &[TxSpec]) -> Vec<TxOutcome> {
    let outcome = executor.execute_block(txs).expect("block runs");
    executor.source_mut().apply(&outcome.tree_writes);
    outcome.txs
}

#[test]
fn balance_of_returns_the_stored_balances() {
    let token = common::actors().token;
    let mut executor = common::executor(ReferenceTree::new(), 1..20);
    let txs: Vec<TxSpec> = (0..22)
        .map(|i| call(token, balance_of_calldata(&address_of(i))))
        .collect();
    let results = block(&mut executor, &txs);
    for (i, result) in results.iter().enumerate() {
        assert!(result.success);
        let expected = if (1..20).contains(&(i as u64)) {
            common::balance_of(i as u64)
        } else {
            U256::ZERO
        };
        assert_eq!(word(&result.output), expected, "balanceOf(address({i}))");
    }
}

#[test]
fn approve_writes_the_allowance_keys() {
    let actors = common::actors();
    let mut executor = common::executor(ReferenceTree::new(), 0..0);
    let outcome = executor
        .execute_block(&[approve_tx(&actors, 10, 5, 1_000_000)])
        .expect("block runs");
    // The owner is the attack contract (the token's caller).
    for i in 10..15u64 {
        let key = storage_slot_key(
            &actors.token,
            &allowance_slot(&actors.attack, &address_of(i)),
        );
        assert!(
            outcome
                .tree_writes
                .contains(&(key, B256::from(U256::from(i)))),
            "allowance[attack][address({i})] = {i}"
        );
    }
    assert_eq!(outcome.slots_written, 5);
    executor.source_mut().apply(&outcome.tree_writes);

    // allowance() reads them back in a later block.
    let token = actors.token;
    let read = call(token, allowance_calldata(&actors.attack, &address_of(12)));
    let results = block(&mut executor, &[read]);
    assert_eq!(word(&results[0].output), U256::from(12u8));
}

#[test]
fn approve_from_an_account_returns_true() {
    let actors = common::actors();
    let mut executor = common::executor(ReferenceTree::new(), 0..0);
    let spender = Address::repeat_byte(0x33);
    let results = block(
        &mut executor,
        &[call(
            actors.token,
            approve_calldata(&spender, &U256::from(99u8)),
        )],
    );
    assert_eq!(word(&results[0].output), U256::from(1u8));
    let key = storage_slot_key(&actors.token, &allowance_slot(&actors.sender, &spender));
    let tree = executor.source().tree();
    assert_eq!(tree.get(&key), Some(B256::from(U256::from(99u8))));
}

#[test]
fn transfer_moves_balances_and_reverts_when_short() {
    let actors = common::actors();
    let mut executor = common::executor(ReferenceTree::new(), 0..0);
    // Give the sender 100 tokens.
    let sender_slot = balance_slot(&actors.sender);
    let hundred = B256::from(U256::from(100u8));
    executor
        .source_mut()
        .put_slot(&actors.token, &sender_slot, &hundred);

    let to = address_of(7);
    let results = block(
        &mut executor,
        &[
            call(actors.token, transfer_calldata(&to, &U256::from(30u8))),
            call(actors.token, transfer_calldata(&to, &U256::from(71u8))),
            call(actors.token, balance_of_calldata(&actors.sender)),
            call(actors.token, balance_of_calldata(&to)),
        ],
    );
    assert!(results[0].success);
    assert_eq!(word(&results[0].output), U256::from(1u8));
    assert!(!results[1].success, "71 > 70 left: reverts");
    assert_eq!(word(&results[2].output), U256::from(70u8));
    assert_eq!(word(&results[3].output), U256::from(30u8));
}

#[test]
fn bad_calls_revert() {
    let actors = common::actors();
    let mut executor = common::executor(ReferenceTree::new(), 0..0);
    let mut dirty_address = balance_of_calldata(&address_of(1)).to_vec();
    dirty_address[4] = 1; // a top byte set: not an address
    let results = block(
        &mut executor,
        &[
            call(actors.token, Bytes::from_static(&[0x70, 0xa0])), // no selector
            call(actors.token, Bytes::from_static(&[1, 2, 3, 4])), // unknown selector
            call(actors.token, Bytes::from_static(&[0x70, 0xa0, 0x82, 0x31])), // no argument
            call(actors.token, dirty_address.into()),
        ],
    );
    assert!(results.iter().all(|r| !r.success));
}

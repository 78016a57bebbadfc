// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

//! The operations a block's changes become, one rule at a time (the
//! crate documentation's "From revm's state to a block"), for small
//! blocks whose effect is known exactly.

mod common;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use common::code::{deploy, self_destruct, static_caller, store, store_call};
use common::scenario::{ether, world, COINBASE, DESTRUCT, EMPTY, NOWHERE, RECIPIENT, SENDER};
use common::scenario::{SENDER2, STORE};
use common::{open, run_block, seed_batch, tx, Seed, TempDir, BASE_FEE, GAS_PRICE, SPEC};
use revm::context::result::ExecutionResult;
use revm::context::TxEnv;
use revm::database_interface::WrapDatabaseRef;
use revm::primitives::KECCAK_EMPTY;
use ubt_engine::{Account, AccountOp};
use ubt_revm::{BlockContext, UbtState};

const STATIC: Address = Address::repeat_byte(0x5c);
const ECRECOVER: Address = Address::with_last_byte(1);
const SHA256: Address = Address::with_last_byte(2);

/// The operations of one block of `txs` run over the scenario's world
/// (plus a contract that `STATICCALL`s), with fees paid to `beneficiary`
/// and `context` naming `named_beneficiary`.
fn ops_named(
    beneficiary: Address,
    named_beneficiary: Address,
    txs: &[TxEnv],
) -> (Vec<ExecutionResult>, Vec<AccountOp>) {
    let dir = TempDir::new("rules");
    let mut db = open(&dir);
    let mut world = world();
    world.push(Seed::contract(STATIC, static_caller(), Vec::new()));
    db.apply_accounts(&seed_batch(&world)).unwrap();
    let state = UbtState::new(db.reader(&db.root()).unwrap());
    let (results, evm_state) = run_block(WrapDatabaseRef(&state), beneficiary, txs);
    for result in &results {
        assert!(result.is_success(), "{result:?}");
    }
    let context = BlockContext::new(named_beneficiary, SPEC);
    let batch = state.changes(&evm_state, &context).unwrap();
    (results, batch.ops().to_vec())
}

fn ops(txs: &[TxEnv]) -> (Vec<ExecutionResult>, Vec<AccountOp>) {
    ops_named(COINBASE, COINBASE, txs)
}

/// The operations on `address`.
fn on(ops: &[AccountOp], address: Address) -> Vec<AccountOp> {
    ops.iter()
        .filter(|op| *op.address() == address)
        .cloned()
        .collect()
}

fn eoa(nonce: u64, balance: U256) -> Account {
    Account {
        nonce,
        balance,
        code_size: 0,
        code_hash: KECCAK_EMPTY,
    }
}

fn set_account(address: Address, account: Account) -> AccountOp {
    AccountOp::SetAccount { address, account }
}

#[test]
fn a_transfer_writes_the_headers_of_sender_recipient_and_beneficiary() {
    let (results, ops) = ops(&[tx(SENDER, 0, Some(RECIPIENT), ether(1), Bytes::new())]);
    let gas = u128::from(results[0].tx_gas_used());
    let paid = U256::from(gas * GAS_PRICE);
    let tip = U256::from(gas * (GAS_PRICE - u128::from(BASE_FEE)));
    // In address order.
    assert_eq!(
        ops,
        vec![
            set_account(SENDER, eoa(1, ether(100) - ether(1) - paid)),
            set_account(RECIPIENT, eoa(0, ether(2))),
            set_account(COINBASE, eoa(0, U256::from(1u64) + tip)),
        ]
    );
}

#[test]
fn a_created_contract_writes_its_header_code_and_slots() {
    let (_, ops) = ops(&[tx(SENDER, 0, None, U256::ZERO, deploy(&store()))]);
    let created = SENDER.create(0);
    let code = store();
    let account = Account {
        nonce: 1,
        balance: U256::ZERO,
        code_size: code.len() as u32,
        code_hash: keccak256(&code),
    };
    assert_eq!(
        on(&ops, created),
        vec![
            set_account(created, account),
            AccountOp::SetCode {
                address: created,
                code
            },
            AccountOp::SetStorage {
                address: created,
                slot: U256::from(1u64),
                value: B256::with_last_byte(0x2a)
            },
        ]
    );
}

#[test]
fn slots_are_written_when_they_differ_from_before_the_block() {
    let set = |from: Address, nonce: u64, slot: u64, value: u64| {
        let data = store_call(U256::from(slot), U256::from(value));
        tx(from, nonce, Some(STORE), U256::ZERO, data)
    };
    let (_, ops) = ops(&[
        set(SENDER, 0, 1, 0),   // 7 -> 0: a present zero
        set(SENDER, 1, 2, 5),   // 9 -> 5, then
        set(SENDER2, 0, 2, 9),  // back to 9: nothing
        set(SENDER, 2, 3, 0),   // absent -> 0: nothing
        set(SENDER, 3, 4, 0xb), // absent -> 0xb
    ]);
    let store_code = store();
    let header = Account {
        nonce: 1,
        balance: U256::ZERO,
        code_size: store_code.len() as u32,
        code_hash: keccak256(&store_code),
    };
    // The header is rewritten, unchanged, as geth rewrites it for an
    // account whose storage it writes.
    assert_eq!(
        on(&ops, STORE),
        vec![
            set_account(STORE, header),
            AccountOp::DeleteStorage {
                address: STORE,
                slot: U256::from(1u64)
            },
            AccountOp::SetStorage {
                address: STORE,
                slot: U256::from(4u64),
                value: B256::with_last_byte(0xb)
            },
        ]
    );
}

#[test]
fn storage_changed_and_restored_in_the_block_writes_nothing() {
    let data = |value: u64| store_call(U256::from(1u64), U256::from(value));
    let (_, ops) = ops(&[
        tx(SENDER, 0, Some(STORE), U256::ZERO, data(8)),
        tx(SENDER, 1, Some(STORE), U256::ZERO, data(7)),
    ]);
    assert_eq!(on(&ops, STORE), Vec::new());
}

#[test]
fn a_contract_created_and_destroyed_in_one_transaction_is_deleted() {
    let (_, ops) = ops(&[tx(
        SENDER,
        0,
        None,
        U256::from(3u64),
        self_destruct(RECIPIENT),
    )]);
    let created = SENDER.create(0);
    // geth deletes it though it never existed: zero header leaves.
    assert_eq!(
        on(&ops, created),
        vec![AccountOp::DeleteAccount { address: created }]
    );
    assert_eq!(
        on(&ops, RECIPIENT),
        vec![set_account(RECIPIENT, eoa(0, ether(1) + U256::from(3u64)))]
    );
}

#[test]
fn an_existing_contract_that_self_destructs_only_gives_its_balance_away() {
    let (_, ops) = ops(&[tx(SENDER, 0, Some(DESTRUCT), U256::ZERO, Bytes::new())]);
    let code = self_destruct(RECIPIENT);
    let account = Account {
        nonce: 1,
        balance: U256::ZERO,
        code_size: code.len() as u32,
        code_hash: keccak256(&code),
    };
    assert_eq!(on(&ops, DESTRUCT), vec![set_account(DESTRUCT, account)]);
    assert_eq!(
        on(&ops, RECIPIENT),
        vec![set_account(RECIPIENT, eoa(0, ether(1) + U256::from(5u64)))]
    );
}

#[test]
fn empty_touched_accounts_are_deleted_where_geth_holds_them() {
    let (_, ops) = ops(&[
        // Existed, empty: deleted.
        tx(SENDER, 0, Some(EMPTY), U256::ZERO, Bytes::new()),
        // Did not exist, reached by a zero-value call: nothing.
        tx(SENDER, 1, Some(NOWHERE), U256::ZERO, Bytes::new()),
        // Precompiles that did not exist, called and static-called: deleted.
        tx(SENDER, 2, Some(ECRECOVER), U256::ZERO, Bytes::new()),
        tx(
            SENDER,
            3,
            Some(STATIC),
            U256::ZERO,
            Bytes::from(SHA256.into_word().0),
        ),
    ]);
    assert_eq!(
        on(&ops, EMPTY),
        vec![AccountOp::DeleteAccount { address: EMPTY }]
    );
    assert_eq!(on(&ops, NOWHERE), Vec::new());
    for precompile in [ECRECOVER, SHA256] {
        assert_eq!(
            on(&ops, precompile),
            vec![AccountOp::DeleteAccount {
                address: precompile
            }]
        );
    }
    assert_eq!(on(&ops, STATIC), Vec::new());
}

#[test]
fn an_empty_beneficiary_paid_nothing_is_deleted_when_named() {
    let fresh = Address::repeat_byte(0xfb);
    // A gas price equal to the base fee: the beneficiary's tip is zero.
    let mut free = tx(SENDER, 0, Some(RECIPIENT), U256::from(1u64), Bytes::new());
    free.gas_price = u128::from(BASE_FEE);
    let (_, ops) = ops_named(fresh, fresh, std::slice::from_ref(&free));
    assert_eq!(
        on(&ops, fresh),
        vec![AccountOp::DeleteAccount { address: fresh }]
    );
    // Not named as the beneficiary, it is taken for a zero-value call's.
    let (_, ops) = ops_named(fresh, COINBASE, &[free]);
    assert_eq!(on(&ops, fresh), Vec::new());
}

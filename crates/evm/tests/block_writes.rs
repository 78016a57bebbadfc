//! A block's recorded reads and writes: the strings parse back, and the
//! tree writes equal the logical writes applied with geth's semantics.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_evm::asm::{op, Asm};
use ubt_evm::erc20::{address_of, balance_slot, token_code, transfer_calldata};
use ubt_evm::workloads::{attack_tx, balanceof_tx, CallPlan};
use ubt_evm::{BlockOutcome, ReadRecord, TxSpec, WriteRecord};
use ubt_spec::chunk::chunkify_code;
use ubt_spec::key::{basic_data_key, code_chunk_key};
use ubt_spec::{AccountWrites, ReferenceTree, StateTree};

fn parse_writes(outcome: &BlockOutcome) -> Vec<WriteRecord> {
    outcome
        .writes
        .iter()
        .map(|w| w.parse().expect("write parses"))
        .collect()
}

/// Mixed calls, a transfer and a second transaction from the sender: one
/// block touching the same slots more than once.
fn busy_block() -> Vec<TxSpec> {
    let actors = common::actors();
    let plan = CallPlan {
        start: 40,
        balanceof_calls: 30,
        approve_calls: 20,
    };
    let transfer = TxSpec {
        from: actors.sender,
        to: Some(actors.token),
        value: U256::ZERO,
        input: transfer_calldata(&address_of(41), &U256::ZERO),
        gas_limit: 200_000,
        access_list: Vec::new(),
        nonce: None,
    };
    vec![
        attack_tx(&actors, &plan, 5_000_000),
        transfer,
        balanceof_tx(&actors, 45, 10, 1_000_000),
    ]
}

#[test]
fn tree_writes_equal_the_logical_writes_applied_through_the_account_api() {
    let (source, codes) = common::seed(ReferenceTree::new(), 1..100);
    let before = source.tree().clone();
    let mut executor = ubt_evm::Executor::new(source, codes);
    let outcome = executor.execute_block(&busy_block()).expect("block runs");
    assert!(outcome.txs.iter().all(|tx| tx.success));

    let mut by_keys = before.clone();
    by_keys.insert_batch(&outcome.tree_writes);
    let mut by_records = before.clone();
    for write in parse_writes(&outcome) {
        write.apply(&mut by_records);
    }
    assert_eq!(by_keys.root(), by_records.root());
    assert_ne!(by_keys.root(), before.clone().root());

    // Sender (nonce 7 + 3 transactions) and the token (its storage changed).
    let actors = common::actors();
    assert_eq!(by_keys.account(&actors.sender).map(|a| a.nonce), Some(10));
    assert_eq!(outcome.accounts_written, 2);
    assert_eq!(outcome.slots_written, 20);
}

#[test]
fn reads_and_writes_parse_back_and_are_deduplicated() {
    let mut executor = common::executor(ReferenceTree::new(), 1..100);
    let outcome = executor.execute_block(&busy_block()).expect("block runs");
    let reads: Vec<ReadRecord> = outcome
        .reads
        .iter()
        .map(|r| r.parse().expect("read parses"))
        .collect();
    for (text, read) in outcome.reads.iter().zip(&reads) {
        assert_eq!(&read.to_string(), text);
    }
    for (text, write) in outcome.writes.iter().zip(parse_writes(&outcome)) {
        assert_eq!(&write.to_string(), text);
    }
    let distinct: std::collections::HashSet<_> = reads.iter().collect();
    assert_eq!(distinct.len(), reads.len(), "each read once per block");
    let actors = common::actors();
    assert_eq!(
        &reads[..3],
        &[
            ReadRecord::Account(actors.sender),
            ReadRecord::Account(actors.attack),
            ReadRecord::Account(actors.token)
        ]
    );
    // 30 balances, 20 allowances, the transfer's sender balance; address(41)
    // and the last ten balances were read already.
    assert_eq!(outcome.accounts_read, 3);
    assert_eq!(outcome.slots_read, 51);
    assert!(reads.contains(&ReadRecord::Slot(
        actors.token,
        balance_slot(&actors.sender)
    )));
}

#[test]
fn a_balanceof_block_writes_only_the_sender() {
    let actors = common::actors();
    let mut executor = common::executor(ReferenceTree::new(), 1..100);
    let outcome = executor
        .execute_block(&[balanceof_tx(&actors, 1, 99, 1_000_000)])
        .expect("block runs");
    assert_eq!(outcome.reads.len(), 3 + 99);
    let writes = parse_writes(&outcome);
    let account = executor.source().tree().account(&actors.sender).unwrap();
    assert_eq!(
        writes,
        vec![WriteRecord::Account {
            address: actors.sender,
            nonce: 8,
            balance: U256::from(account.balance),
            code_hash: account.code_hash,
            code_size: 0,
        }]
    );
    assert_eq!(outcome.tree_writes.len(), 2, "BasicData and CodeHash");
    assert_eq!(outcome.tree_writes[0].0, basic_data_key(&actors.sender));
}

/// Init code returning `runtime`.
fn deployer(runtime: &[u8]) -> Bytes {
    let len = u16::try_from(runtime.len()).unwrap().to_be_bytes();
    let mut init = Asm::new();
    init.push(&len)
        .push(&[0, 13])
        .op(op::PUSH0)
        .op(op::CODECOPY); // MEM[0..len] = runtime
    init.push(&len).op(op::PUSH0).op(op::RETURN); //                 RETURN(0, len)
    let mut code = init.finish();
    assert_eq!(code.len(), 13);
    code.extend_from_slice(runtime);
    code.into()
}

#[test]
fn created_code_is_chunked_into_the_tree_and_callable_next_block() {
    let actors = common::actors();
    let (source, codes) = common::seed(ReferenceTree::new(), 0..0);
    let before = source.tree().clone();
    let mut executor = ubt_evm::Executor::new(source, codes);
    let runtime = token_code();
    let create = TxSpec {
        from: actors.sender,
        to: None,
        value: U256::ZERO,
        input: deployer(&runtime),
        gas_limit: 2_000_000,
        access_list: Vec::new(),
        nonce: None,
    };
    let outcome = executor.execute_block(&[create]).expect("block runs");
    assert!(outcome.txs[0].success);
    let created = actors.sender.create(7);

    let chunks = chunkify_code(&runtime);
    for (i, chunk) in chunks.iter().enumerate() {
        let key = code_chunk_key(&created, i as u64);
        assert!(
            outcome.tree_writes.contains(&(key, B256::from(*chunk))),
            "chunk {i}"
        );
    }
    // The logical writes carry no code: with update_code they give the same root.
    let mut by_keys = before.clone();
    by_keys.insert_batch(&outcome.tree_writes);
    let mut by_records = before;
    for write in parse_writes(&outcome) {
        write.apply(&mut by_records);
    }
    by_records.update_code(&created, &runtime);
    assert_eq!(by_keys.root(), by_records.root());

    // The new token runs in the next block, its code taken from the code store.
    executor.source_mut().apply(&outcome.tree_writes);
    let mint = B256::from(U256::from(5u8));
    executor
        .source_mut()
        .put_slot(&created, &balance_slot(&actors.sender), &mint);
    let transfer = TxSpec {
        from: actors.sender,
        to: Some(created),
        value: U256::ZERO,
        input: transfer_calldata(&Address::repeat_byte(1), &U256::from(5u8)),
        gas_limit: 200_000,
        access_list: Vec::new(),
        nonce: None,
    };
    let outcome = executor.execute_block(&[transfer]).expect("block runs");
    assert!(outcome.txs[0].success);
    assert_eq!(outcome.slots_written, 2);
}

#[test]
fn a_wrong_nonce_is_reported() {
    let actors = common::actors();
    let mut executor = common::executor(ReferenceTree::new(), 0..0);
    let mut tx = balanceof_tx(&actors, 1, 1, 100_000);
    tx.nonce = Some(3);
    let error = executor.execute_block(&[tx]).unwrap_err();
    assert!(
        matches!(error, ubt_evm::ExecError::InvalidTx { index: 0, .. }),
        "{error}"
    );
}

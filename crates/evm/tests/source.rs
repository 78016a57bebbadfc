//! How the executor uses its state source: one batched read per account,
//! one read per slot, once per block; failures surface as errors.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use ubt_evm::workloads::balanceof_tx;
use ubt_evm::{Executor, MemorySource, StateSource};
use ubt_spec::FastTree;

/// A source that counts its calls and can be made to fail.
struct Counting {
    inner: MemorySource<FastTree>,
    gets: usize,
    batches: usize,
    fail: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("disk on fire")]
struct Fire;

impl StateSource for Counting {
    type Error = Fire;

    fn get(&mut self, key: &B256) -> Result<Option<B256>, Fire> {
        if self.fail {
            return Err(Fire);
        }
        self.gets += 1;
        Ok(self.inner.get(key).unwrap())
    }

    fn get_many(&mut self, keys: &[B256]) -> Result<Vec<Option<B256>>, Fire> {
        self.batches += 1;
        keys.iter().map(|key| self.get(key)).collect()
    }
}

#[test]
fn reads_go_to_the_source_once_per_block() {
    let actors = common::actors();
    let (inner, codes) = common::seed(FastTree::new(), 1..50);
    let source = Counting {
        inner,
        gets: 0,
        batches: 0,
        fail: false,
    };
    let mut executor = Executor::new(source, codes);
    let txs = [
        balanceof_tx(&actors, 1, 40, 1_000_000),
        balanceof_tx(&actors, 11, 39, 1_000_000),
    ];
    let outcome = executor.execute_block(&txs).expect("block runs");
    // 3 accounts (2 leaves each, one batch each) and 49 distinct slots.
    assert_eq!(executor.source().batches, 3);
    assert_eq!(executor.source().gets, 3 * 2 + 49);
    assert_eq!((outcome.accounts_read, outcome.slots_read), (3, 49));

    // The next block reads again.
    executor.execute_block(&txs[..1]).expect("block runs");
    assert_eq!(executor.source().gets, 2 * (3 * 2) + 49 + 40);
}

#[test]
fn a_failing_source_fails_the_block() {
    let actors = common::actors();
    let (inner, codes) = common::seed(FastTree::new(), 0..0);
    let source = Counting {
        inner,
        gets: 0,
        batches: 0,
        fail: true,
    };
    let mut executor = Executor::new(source, codes);
    let error = executor
        .execute_block(&[balanceof_tx(&actors, 1, 1, 1_000_000)])
        .unwrap_err();
    assert!(error.to_string().contains("disk on fire"), "{error}");
}

//! Code read back from its chunks: every code (random bytes, PUSH data
//! crossing chunk boundaries, more than 128 chunks so past the account's
//! header stem) round-trips; the code size in BasicData decides what is
//! read; chunks are fetched in one batch (bounded batches for huge sizes);
//! absent, deleted and inconsistent accounts read as documented; code
//! whose BasicData size go-ethereum wrote as 0 is recovered by its hash
//! (`read_code_matching_hash`).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::cell::RefCell;
use std::collections::HashMap;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use proptest::prelude::*;
use ubt_spec::account::{
    read_code, read_code_matching_hash, CodeReadError, MissingCodeChunk, CODE_READ_BATCH_CHUNKS,
};
use ubt_spec::chunk::{chunkify_code, CHUNK_CODE_BYTES};
use ubt_spec::key::code_chunk_key;
use ubt_spec::{Account, AccountBatch, AccountWrites, FastTree, ReferenceTree, StateTree};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

const PUSH1: u8 = 0x60;
const PUSH32: u8 = 0x7f;

fn who() -> Address {
    Address::repeat_byte(0xc0)
}

fn header(code_size: u32) -> Account {
    Account {
        nonce: 1,
        balance: U256::from(5u8),
        code_size,
        code_hash: B256::repeat_byte(0x11),
    }
}

/// `code` with a header of its length, through the batch.
fn contract_tree(code: &[u8]) -> ReferenceTree {
    let mut tree = ReferenceTree::new();
    let mut batch = AccountBatch::new();
    batch
        .set_account(who(), header(code.len() as u32))
        .set_code(who(), code.to_vec());
    tree.apply_account_batch(&batch);
    tree
}

/// A source over a map that records the size of every batch it answers.
struct CountingSource {
    values: HashMap<B256, B256>,
    batches: RefCell<Vec<usize>>,
}

impl CountingSource {
    fn new(writes: Vec<(B256, B256)>) -> Self {
        CountingSource {
            values: writes.into_iter().collect(),
            batches: RefCell::new(Vec::new()),
        }
    }

    fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>, std::convert::Infallible> {
        self.batches.borrow_mut().push(keys.len());
        Ok(keys
            .iter()
            .map(|key| self.values.get(key).copied())
            .collect())
    }

    fn code(&self) -> Result<Option<Bytes>, CodeReadError<std::convert::Infallible>> {
        read_code(&who(), |keys| self.get_many(keys))
    }
}

/// Random code: plain bytes, PUSH-heavy streams (push data crossing chunk
/// boundaries everywhere), and long code past 128 chunks.
fn code_strategy() -> impl Strategy<Value = Vec<u8>> {
    let push_heavy = prop_oneof![3 => PUSH1..=PUSH32, 1 => any::<u8>()];
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..100),
        proptest::collection::vec(push_heavy, 0..2000),
        proptest::collection::vec(any::<u8>(), 3900..6500),
    ]
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn code_round_trips_through_chunks(code in code_strategy()) {
        let tree = contract_tree(&code);
        prop_assert_eq!(tree.code(&who()), Ok(Some(Bytes::from(code.clone()))));

        let mut fast = FastTree::new();
        fast.update_account(&who(), 1, &U256::from(5u8), &B256::repeat_byte(0x11), code.len() as u32);
        fast.update_code(&who(), &code);
        prop_assert_eq!(fast.root(), tree.compute_root());
        prop_assert_eq!(fast.code(&who()), Ok(Some(Bytes::from(code.clone()))));

        // One batch for the header, one for every chunk.
        let mut batch = AccountBatch::new();
        batch.set_account(who(), header(code.len() as u32)).set_code(who(), code.clone());
        let source = CountingSource::new(batch.tree_writes());
        prop_assert_eq!(source.code(), Ok(Some(Bytes::from(code.clone()))));
        let chunks = code.len().div_ceil(CHUNK_CODE_BYTES);
        let expected: Vec<usize> = if chunks == 0 { vec![2] } else { vec![2, chunks] };
        prop_assert_eq!(source.batches.borrow().clone(), expected);
    }

    #[test]
    fn a_shorter_code_size_cuts_the_code(code in code_strategy(), cut in any::<prop::sample::Index>()) {
        let size = cut.index(code.len() + 1);
        let mut tree = contract_tree(&code);
        tree.update_account(&who(), 1, &U256::ZERO, &B256::ZERO, size as u32);
        prop_assert_eq!(tree.code(&who()), Ok(Some(Bytes::copy_from_slice(&code[..size]))));
    }
}

#[test]
fn push_data_across_boundaries_and_past_the_header_stem() {
    // PUSH32 straddling every chunk boundary, 200 chunks: chunk heads
    // (push-data counts) are non-zero and must not leak into the code.
    let mut code = Vec::new();
    while code.len() < 200 * CHUNK_CODE_BYTES {
        code.extend([0x5b; 29]);
        code.push(PUSH32);
        code.extend([0xee; 32]);
    }
    code.truncate(200 * CHUNK_CODE_BYTES - 7);
    let chunks = chunkify_code(&code);
    assert!(chunks.len() > 128, "code reaches past the header stem");
    assert!(chunks.iter().filter(|c| c[0] != 0).count() > 50);
    let tree = contract_tree(&code);
    assert_eq!(tree.code(&who()), Ok(Some(Bytes::from(code))));
}

#[test]
fn long_code_is_read_in_bounded_batches() {
    let batch_chunks = CODE_READ_BATCH_CHUNKS as usize;
    let code: Vec<u8> = (0..(batch_chunks * 2 + 3) * CHUNK_CODE_BYTES - 5)
        .map(|i| (i % 251) as u8)
        .collect();
    let mut batch = AccountBatch::new();
    batch
        .set_account(who(), header(code.len() as u32))
        .set_code(who(), code.clone());
    let source = CountingSource::new(batch.tree_writes());
    assert_eq!(source.code(), Ok(Some(Bytes::from(code))));
    assert_eq!(
        *source.batches.borrow(),
        vec![2, batch_chunks, batch_chunks, 3]
    );
}

#[test]
fn a_code_size_no_chunks_back_fails_after_one_batch() {
    let mut batch = AccountBatch::new();
    batch.set_account(who(), header(u32::MAX));
    let source = CountingSource::new(batch.tree_writes());
    assert_eq!(
        source.code(),
        Err(CodeReadError::MissingChunk(MissingCodeChunk {
            address: who(),
            code_size: u32::MAX,
            chunk_id: 0,
        }))
    );
    assert_eq!(
        *source.batches.borrow(),
        vec![2, CODE_READ_BATCH_CHUNKS as usize]
    );
}

#[test]
fn a_chunk_missing_within_the_size_is_an_error() {
    // 100 bytes need 4 chunks; 40 bytes of code wrote 2.
    let mut tree = contract_tree(&[0x5b; 40]);
    tree.update_account(&who(), 1, &U256::ZERO, &B256::ZERO, 100);
    let missing = tree.code(&who()).expect_err("chunk 2 is absent");
    assert_eq!(missing.chunk_id, 2);
    assert_eq!(missing.code_size, 100);
    assert!(missing.to_string().contains("code chunk 2 is absent"));
}

#[test]
fn absent_deleted_and_empty_accounts() {
    let mut tree = ReferenceTree::new();
    assert_eq!(tree.code(&who()), Ok(None), "never written");

    let code = vec![0x60, 0x01, 0x00];
    tree = contract_tree(&code);
    tree.delete_account(&who());
    assert_eq!(tree.code(&who()), Ok(None), "deleted, though chunks stay");
    assert!(tree.get(&code_chunk_key(&who(), 0)).is_some());

    // Recreated with size 0 (geth's state layer does so when it did not
    // load the code): empty, the chunks notwithstanding.
    tree.update_account(&who(), 2, &U256::ZERO, &B256::ZERO, 0);
    assert_eq!(tree.code(&who()), Ok(Some(Bytes::new())));

    // Recreated with the old size: the old chunks are the code again.
    tree.update_account(&who(), 2, &U256::ZERO, &B256::ZERO, 3);
    assert_eq!(tree.code(&who()), Ok(Some(Bytes::from(code))));
}

#[test]
fn source_errors_pass_through() {
    let failing = |_: &[B256]| Err::<Vec<Option<B256>>, &str>("disk on fire");
    assert_eq!(
        read_code(&who(), failing),
        Err(CodeReadError::Source("disk on fire"))
    );
}

/// The code of `who()` in `tree` by [`read_code_matching_hash`].
fn code_matching_hash(
    tree: &ReferenceTree,
) -> Result<Option<Bytes>, CodeReadError<std::convert::Infallible>> {
    read_code_matching_hash(&who(), |keys| {
        Ok(keys.iter().map(|key| tree.get(key)).collect())
    })
}

/// `code` deployed at `who()` with its hash, then (as go-ethereum's StateDB
/// does when it updates a contract whose code it did not load) the header
/// rewritten with code size 0 and the same hash.
fn geth_zero_size_tree(old_code: Option<&[u8]>, code: &[u8]) -> ReferenceTree {
    let mut tree = ReferenceTree::new();
    let mut batch = AccountBatch::new();
    if let Some(old) = old_code {
        batch.set_code(who(), old.to_vec());
    }
    let with_hash = |code_size: u32| Account {
        code_size,
        code_hash: keccak256(code),
        ..header(0)
    };
    batch
        .set_account(who(), with_hash(code.len() as u32))
        .set_code(who(), code.to_vec())
        .set_account(who(), with_hash(0));
    tree.apply_account_batch(&batch);
    tree
}

proptest! {
    #![proptest_config(cases(32))]

    /// Code whose size go-ethereum wrote as 0 reads back whole by its
    /// hash, also when an older, longer code left chunks past its end;
    /// `read_code` gives it empty.
    #[test]
    fn code_with_a_zero_size_is_recovered_by_its_hash(
        code in proptest::collection::vec(any::<u8>(), 1..3000),
        longer_by in 0usize..200,
    ) {
        let old: Vec<u8> = code.iter().copied().chain((0..longer_by).map(|i| i as u8 ^ 0x5a)).collect();
        let tree = geth_zero_size_tree(Some(&old), &code);
        prop_assert_eq!(tree.code(&who()), Ok(Some(Bytes::new())));
        prop_assert_eq!(code_matching_hash(&tree), Ok(Some(Bytes::from(code.clone()))));
        let tree = geth_zero_size_tree(None, &code);
        prop_assert_eq!(code_matching_hash(&tree), Ok(Some(Bytes::from(code))));
    }

    /// With a consistent header the result is `read_code`'s.
    #[test]
    fn consistent_code_reads_as_read_code(code in code_strategy()) {
        let mut tree = ReferenceTree::new();
        let mut batch = AccountBatch::new();
        batch
            .set_account(who(), Account { code_hash: keccak256(&code), ..header(code.len() as u32) })
            .set_code(who(), code.clone());
        tree.apply_account_batch(&batch);
        prop_assert_eq!(code_matching_hash(&tree), tree.code(&who()).map_err(CodeReadError::MissingChunk));
        prop_assert_eq!(code_matching_hash(&tree), Ok(Some(Bytes::from(code))));
    }
}

#[test]
fn code_no_chunks_match_reads_as_read_code() {
    // A hash no prefix of the chunks has: read_code's answer, for the
    // caller to reject; absent accounts stay absent.
    let tree = contract_tree(&[PUSH1, 1, 0x00]);
    assert_eq!(
        code_matching_hash(&tree),
        tree.code(&who()).map_err(CodeReadError::MissingChunk)
    );
    assert_eq!(code_matching_hash(&ReferenceTree::new()), Ok(None));
    let mut inconsistent = ReferenceTree::new();
    inconsistent.update_account(&who(), 1, &U256::ZERO, &B256::repeat_byte(3), 40);
    assert_eq!(
        code_matching_hash(&inconsistent),
        Err(CodeReadError::MissingChunk(MissingCodeChunk {
            address: who(),
            code_size: 40,
            chunk_id: 0
        }))
    );
}

#[test]
fn long_code_with_a_zero_size_is_recovered_across_batches() {
    // 15,000 bytes: 484 chunks, read in batches of 128, 256 and 512.
    let code: Vec<u8> = (0..15_000u32).map(|i| (i * 13 % 256) as u8).collect();
    let tree = geth_zero_size_tree(None, &code);
    assert_eq!(tree.code(&who()), Ok(Some(Bytes::new())));
    assert_eq!(code_matching_hash(&tree), Ok(Some(Bytes::from(code))));
}

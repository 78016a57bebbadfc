//! Accounts and storage slots as the parsers read them, and the tree
//! entries they become: geth's genesis semantics (an `AddBalance`,
//! `SetCode`, `SetNonce` and `SetState` per slot on a fresh state, then a
//! commit that keeps empty accounts).
//!
//! Per account: the BasicData leaf (version 0, code size, nonce, balance
//! truncated to 128 bits as geth's `UpdateAccount` truncates it), the
//! CodeHash leaf, every code chunk; per storage slot with a non-zero value,
//! its leaf (a zero value on a fresh account is a no-op in geth: no leaf).
//!
//! Keys are derived in batches: every distinct stem of a batch is one
//! SHA-256 of a 64-byte message (`hash64_many`, the interleaved kernel where
//! the CPU has it). The header stem is shared by BasicData, CodeHash, the
//! first 128 code chunks and slots 0..63; each further group of 256 chunks
//! shares one stem; consecutive slots of one account in the same group of
//! 256 share theirs.

use std::ops::Range;

use alloy_primitives::{keccak256, Address, B256, U256};
use ubt_spec::basic_data::{geth_balance, BasicData};
use ubt_spec::chunk::chunkify_code;
use ubt_spec::hash::{hash64_many, Hash};
use ubt_spec::key::storage_index;
use ubt_spec::{BASIC_DATA_LEAF_KEY, CODE_HASH_LEAF_KEY, CODE_OFFSET};

use crate::report::Counts;

/// One tree write with where it came from: the line of a dump, the
/// position of the account in a genesis alloc. `origin` names both sides
/// of a duplicate key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Entry {
    /// The tree key.
    pub key: [u8; 32],
    /// The 32-byte leaf value.
    pub value: [u8; 32],
    /// Where in the input the entry came from.
    pub origin: u64,
}

/// Bytes an [`Entry`] takes in memory.
pub(crate) const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

/// A tree write filed under the account it belongs to: what the flat index
/// of account values is built from, sorted by `(owner, key)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct FlatRecord {
    /// The account's address.
    pub owner: [u8; 20],
    /// The tree key (derived from `owner`).
    pub key: [u8; 32],
    /// The 32-byte leaf value.
    pub value: [u8; 32],
}

/// Bytes a [`FlatRecord`] takes in memory.
pub(crate) const FLAT_RECORD_BYTES: usize = std::mem::size_of::<FlatRecord>();

/// What a batch derives.
#[derive(Debug, Default)]
pub(crate) struct Derived {
    /// The tree entries, in no particular order.
    pub entries: Vec<Entry>,
    /// The same writes as flat records, in the same order (empty unless
    /// asked for).
    pub flat: Vec<FlatRecord>,
    /// What the batch counts.
    pub counts: Counts,
}

/// An account read from the input (its storage comes as [`SlotItem`]s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AccountItem {
    /// The account.
    pub address: Address,
    /// Where it came from.
    pub origin: u64,
    /// Nonce.
    pub nonce: u64,
    /// Balance as given (256 bits; stored truncated as geth stores it).
    pub balance: U256,
    /// keccak256 of the code when the parser already has it.
    pub code_hash: Option<B256>,
    /// The code's bytes in the batch's `code_bytes`.
    pub code: Range<usize>,
}

/// One storage slot read from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotItem {
    /// The account.
    pub address: Address,
    /// Where it came from.
    pub origin: u64,
    /// The slot (a 256-bit big-endian number).
    pub slot: [u8; 32],
    /// The value, left-padded to 32 bytes.
    pub value: [u8; 32],
}

/// Accounts, code and slots read from the input, not yet turned into
/// tree entries.
#[derive(Debug, Default)]
pub(crate) struct RawBatch {
    /// Accounts.
    pub accounts: Vec<AccountItem>,
    /// The code of every account in `accounts`, back to back.
    pub code_bytes: Vec<u8>,
    /// Storage slots (of accounts in this or another batch).
    pub slots: Vec<SlotItem>,
}

impl RawBatch {
    /// Items held (accounts, slots, and code chunks' worth of code).
    pub fn item_count(&self) -> usize {
        self.accounts.len() + self.slots.len() + self.code_bytes.len() / 31
    }

    /// Whether the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty() && self.slots.is_empty()
    }

    /// Adds an account whose code is `code`.
    pub fn push_account(
        &mut self,
        address: Address,
        origin: u64,
        nonce: u64,
        balance: U256,
        code_hash: Option<B256>,
        code: &[u8],
    ) {
        let start = self.code_bytes.len();
        self.code_bytes.extend_from_slice(code);
        self.accounts.push(AccountItem {
            address,
            origin,
            nonce,
            balance,
            code_hash,
            code: start..self.code_bytes.len(),
        });
    }
}

/// The tree entries of `batch` (in no particular order), with their flat
/// records when `flat`, and what they count.
pub(crate) fn derive(batch: &RawBatch, flat: bool) -> Derived {
    let mut deriver = Deriver::with_capacity(batch.accounts.len() * 2 + batch.slots.len());
    for account in &batch.accounts {
        let code = batch.code_bytes.get(account.code.clone()).unwrap_or(&[]);
        deriver.account(account, code);
    }
    for slot in &batch.slots {
        deriver.slot(slot);
    }
    deriver.finish(flat)
}

/// Collects entries whose stems are hashed at the end, all at once.
struct Deriver {
    /// `0^12 || address || tree_index` of each distinct stem.
    preimages: Vec<[u8; 64]>,
    /// Entries with their sub-index set and their stem still to fill in.
    entries: Vec<Entry>,
    /// The preimage index of each entry's stem.
    stem_of: Vec<u32>,
    /// The last stem made: address, tree index, preimage index.
    last: Option<(Address, U256, u32)>,
    counts: Counts,
}

impl Deriver {
    fn with_capacity(entries: usize) -> Deriver {
        Deriver {
            preimages: Vec::with_capacity(entries / 2 + 1),
            entries: Vec::with_capacity(entries),
            stem_of: Vec::with_capacity(entries),
            last: None,
            counts: Counts::default(),
        }
    }

    /// The preimage index of the stem of `(address, tree_index)`.
    fn stem(&mut self, address: &Address, tree_index: &U256) -> u32 {
        if let Some((last_address, last_index, id)) = &self.last {
            if last_address == address && last_index == tree_index {
                return *id;
            }
        }
        let mut preimage = [0u8; 64];
        preimage[12..32].copy_from_slice(address.as_slice());
        preimage[32..].copy_from_slice(&tree_index.to_be_bytes::<32>());
        debug_assert!(u32::try_from(self.preimages.len()).is_ok());
        // Bounded by memory: 2^32 preimages would be 256 GiB.
        #[allow(clippy::cast_possible_truncation)]
        let id = self.preimages.len() as u32;
        self.preimages.push(preimage);
        self.last = Some((*address, *tree_index, id));
        id
    }

    fn push(&mut self, stem: u32, sub_index: u8, value: [u8; 32], origin: u64) {
        let mut key = [0u8; 32];
        key[31] = sub_index;
        self.entries.push(Entry { key, value, origin });
        self.stem_of.push(stem);
    }

    fn account(&mut self, account: &AccountItem, code: &[u8]) {
        let header = self.stem(&account.address, &U256::ZERO);
        let basic = BasicData {
            version: 0,
            // The parsers refuse code of 4 GiB and more.
            code_size: u32::try_from(code.len()).unwrap_or(u32::MAX),
            nonce: account.nonce,
            balance: geth_balance(&account.balance),
        }
        .pack();
        let code_hash = account.code_hash.unwrap_or_else(|| keccak256(code));
        self.push(header, BASIC_DATA_LEAF_KEY, basic.0, account.origin);
        self.push(header, CODE_HASH_LEAF_KEY, code_hash.0, account.origin);
        for (chunk_id, chunk) in chunkify_code(code).into_iter().enumerate() {
            let position = u64::from(CODE_OFFSET) + chunk_id as u64;
            let stem = match position >> 8 {
                0 => header,
                group => self.stem(&account.address, &U256::from(group)),
            };
            self.push(stem, (position & 0xff) as u8, chunk, account.origin);
        }
        self.counts.accounts += 1;
        self.counts.code_bytes += code.len() as u64;
    }

    fn slot(&mut self, slot: &SlotItem) {
        if slot.value == [0u8; 32] {
            self.counts.zero_storage_values += 1;
            return;
        }
        let (tree_index, sub_index) = storage_index(&U256::from_be_bytes(slot.slot));
        let stem = self.stem(&slot.address, &tree_index);
        self.push(stem, sub_index, slot.value, slot.origin);
        self.counts.storage_slots += 1;
    }

    fn finish(mut self, flat: bool) -> Derived {
        let mut hashes: Vec<Hash> = vec![[0u8; 32]; self.preimages.len()];
        hash64_many(&self.preimages, &mut hashes);
        for (entry, stem) in self.entries.iter_mut().zip(&self.stem_of) {
            if let Some(hash) = hashes.get(*stem as usize) {
                entry.key[..31].copy_from_slice(&hash[..31]);
            }
        }
        // The owner is in the stem's preimage: 12 zero bytes, the address.
        let flat = if flat {
            self.entries
                .iter()
                .zip(&self.stem_of)
                .filter_map(|(entry, stem)| {
                    let preimage = self.preimages.get(*stem as usize)?;
                    let mut owner = [0u8; 20];
                    owner.copy_from_slice(&preimage[12..32]);
                    Some(FlatRecord {
                        owner,
                        key: entry.key,
                        value: entry.value,
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        self.counts.tree_entries = self.entries.len() as u64;
        Derived {
            entries: self.entries,
            flat,
            counts: self.counts,
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;
    use ubt_spec::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};

    #[test]
    fn keys_and_values_match_the_spec_functions() {
        let address = Address::repeat_byte(0x42);
        // 300 chunks: groups 0, 1 and 2 of the code.
        let code: Vec<u8> = (0..31 * 300).map(|i| (i % 251) as u8).collect();
        let mut batch = RawBatch::default();
        let balance = (U256::from(1u8) << 130usize) + U256::from(9u8);
        batch.push_account(address, 7, 3, balance, None, &code);
        let slots = [
            U256::ZERO,
            U256::from(63u8),
            U256::from(64u8),
            U256::from(65u8),
            U256::from(1u64 << 40),
            U256::MAX,
        ];
        for (i, slot) in slots.iter().enumerate() {
            batch.slots.push(SlotItem {
                address,
                origin: 7,
                slot: slot.to_be_bytes::<32>(),
                value: [i as u8 + 1; 32],
            });
        }
        batch.slots.push(SlotItem {
            address,
            origin: 7,
            slot: [5; 32],
            value: [0; 32],
        });
        let Derived {
            entries,
            flat,
            counts,
        } = derive(&batch, true);
        assert_eq!(flat.len(), entries.len());
        for (record, entry) in flat.iter().zip(&entries) {
            assert_eq!(
                (record.owner, record.key, record.value),
                (address.0 .0, entry.key, entry.value)
            );
        }
        assert!(derive(&batch, false).flat.is_empty());
        let mut expected = vec![
            (
                basic_data_key(&address),
                BasicData {
                    version: 0,
                    code_size: code.len() as u32,
                    nonce: 3,
                    balance: 9,
                }
                .pack(),
            ),
            (code_hash_key(&address), keccak256(&code)),
        ];
        for (i, chunk) in chunkify_code(&code).into_iter().enumerate() {
            expected.push((code_chunk_key(&address, i as u64), B256::from(chunk)));
        }
        for (i, slot) in slots.iter().enumerate() {
            expected.push((
                storage_slot_key(&address, slot),
                B256::repeat_byte(i as u8 + 1),
            ));
        }
        let got: Vec<(B256, B256)> = entries
            .iter()
            .map(|e| (B256::from(e.key), B256::from(e.value)))
            .collect();
        assert_eq!(got, expected);
        assert!(entries.iter().all(|e| e.origin == 7));
        assert_eq!(counts.accounts, 1);
        assert_eq!(counts.storage_slots, slots.len() as u64);
        assert_eq!(counts.zero_storage_values, 1);
        assert_eq!(counts.code_bytes, code.len() as u64);
        assert_eq!(counts.tree_entries, expected.len() as u64);
    }
}

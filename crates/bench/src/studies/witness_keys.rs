//! The tree keys go-ethereum's binary trie looks up when it runs a recorded
//! block, so that `Db::witness` of those keys at the block's pre-state is
//! exactly the block's `BinaryTrie.Witness()` (what `geth-peer run
//! --witness` records; peers/geth/README.md, "Witness recording").
//!
//! The witness depends only on the set of keys the block's trie looks up,
//! not on their order or on whether they are read or written: an insert
//! descends the key's path resolving exactly the blobs a lookup resolves,
//! a deletion is a write of zero, and hashing and committing resolve
//! nothing. Which keys go-ethereum looks up is not the plain list of keys
//! the block reads and writes, though, because in accounts mode the
//! block goes through geth's `StateDB`:
//!
//! * raw mode (`r:` records): the trie serves every read and write itself,
//!   so every key read or written.
//! * accounts mode (`a:` and `s:` records):
//!   * the BasicData key of every account a read or a write names, `a:` or
//!     `s:`: `StateDB` loads the account (`GetAccount` reads the header
//!     stem, which also holds the code-hash leaf) before it touches one of
//!     its slots, and the peer's read phase loads every written account;
//!   * every slot written: `SetState` reads the previous value first, also
//!     for an account the block creates;
//!   * every slot read whose account exists before the block (geth's
//!     `GetAccount` rule, [`ubt_engine::Db::account`]): for an absent
//!     account `GetState` answers zero without looking the slot up;
//!   * for an account write whose code hash differs from the account's
//!     before the block (keccak256 of the empty code for an absent
//!     account), the keys of its new code's chunks, chunk `i` for `i <
//!     ceil(code_size / 31)` at offset `128 + i` (`UpdateContractCode`).
//!     Only chunks from 128 on (code longer than 3,968 bytes) leave the
//!     header stem and so can change the witness.
//!
//! Reads of an account's code do not touch the trie (geth keeps code in
//! its code store), so code reads add nothing.

use std::collections::HashMap;

use alloy_primitives::{Address, B256, KECCAK256_EMPTY};
use ubt_engine::{Account, Db, Reader};
use ubt_evm::{ReadRecord, WriteRecord};
use ubt_spec::chunk::CHUNK_CODE_BYTES;
use ubt_spec::key::{basic_data_key, code_chunk_key, storage_slot_key};

use super::runner::blocks::ReplayBlock;
use crate::BenchError;

/// The state before a block, as far as [`geth_witness_keys`] needs it: the
/// accounts, read as geth's `GetAccount` reads them.
pub trait PreState {
    /// The account at `address` before the block; `None` when absent (both
    /// header leaves absent, or both zero).
    fn account(&self, address: &Address) -> Result<Option<Account>, BenchError>;
}

fn account_error(error: ubt_engine::Error) -> BenchError {
    BenchError::Engine {
        what: "reading an account of the block's pre-state".into(),
        message: error.to_string(),
    }
}

impl PreState for Db {
    fn account(&self, address: &Address) -> Result<Option<Account>, BenchError> {
        Db::account(self, address).map_err(account_error)
    }
}

impl PreState for Reader {
    fn account(&self, address: &Address) -> Result<Option<Account>, BenchError> {
        Reader::account(self, address).map_err(account_error)
    }
}

/// The pre-state's accounts, each read at most once.
struct Accounts<'a, S: PreState + ?Sized> {
    pre: &'a S,
    seen: HashMap<Address, Option<Account>>,
}

impl<S: PreState + ?Sized> Accounts<'_, S> {
    fn get(&mut self, address: &Address) -> Result<Option<Account>, BenchError> {
        if let Some(account) = self.seen.get(address) {
            return Ok(*account);
        }
        let account = self.pre.account(address)?;
        self.seen.insert(*address, account);
        Ok(account)
    }
}

/// The keys of the chunks of `code_size` bytes of code at `address`.
fn code_chunk_keys(address: &Address, code_size: u32, out: &mut Vec<B256>) {
    let chunks = u64::from(code_size).div_ceil(CHUNK_CODE_BYTES as u64);
    out.extend((0..chunks).map(|chunk| code_chunk_key(address, chunk)));
}

/// Exactly the tree keys go-ethereum v1.17.10's binary trie looks up to run
/// `block` (read through `StateDB` in accounts mode, through the trie
/// itself in raw mode) over the state `pre` holds before the block, sorted
/// and without duplicates: the rules in the [module documentation](self).
/// `Db::witness` of these keys at the pre-state, at group depth G, is what
/// `BinaryTrie.Witness()` returns for the block at G. `pre` is asked only
/// about accounts that a slot read or an account write names, once each.
pub fn geth_witness_keys<S: PreState + ?Sized>(
    block: &ReplayBlock,
    pre: &S,
) -> Result<Vec<B256>, BenchError> {
    let mut accounts = Accounts {
        pre,
        seen: HashMap::new(),
    };
    let mut keys = Vec::with_capacity(block.reads.len() + 2 * block.writes.len());
    for read in &block.reads {
        match read {
            ReadRecord::Raw(key) => keys.push(*key),
            ReadRecord::Account(address) => keys.push(basic_data_key(address)),
            ReadRecord::Slot(address, slot) => {
                keys.push(basic_data_key(address));
                if accounts.get(address)?.is_some() {
                    keys.push(storage_slot_key(address, slot));
                }
            }
        }
    }
    for write in &block.writes {
        match write {
            WriteRecord::Raw { key, .. } => keys.push(*key),
            WriteRecord::Slot { address, slot, .. } => {
                keys.push(basic_data_key(address));
                keys.push(storage_slot_key(address, slot));
            }
            WriteRecord::Account {
                address,
                code_hash,
                code_size,
                ..
            } => {
                keys.push(basic_data_key(address));
                let before = accounts
                    .get(address)?
                    .map_or(KECCAK256_EMPTY, |account| account.code_hash);
                if *code_hash != before {
                    code_chunk_keys(address, *code_size, &mut keys);
                }
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use alloy_primitives::U256;
    use ubt_engine::Options;
    use ubt_spec::basic_data::BasicData;
    use ubt_spec::key::code_hash_key;

    use super::*;

    /// Accounts in a map; counts the lookups.
    #[derive(Default)]
    struct Map {
        accounts: HashMap<Address, Account>,
        lookups: RefCell<Vec<Address>>,
    }

    impl PreState for Map {
        fn account(&self, address: &Address) -> Result<Option<Account>, BenchError> {
            self.lookups.borrow_mut().push(*address);
            Ok(self.accounts.get(address).copied())
        }
    }

    struct Failing;

    impl PreState for Failing {
        fn account(&self, _: &Address) -> Result<Option<Account>, BenchError> {
            Err(BenchError::InvalidOptions {
                what: "no state".into(),
            })
        }
    }

    fn block(reads: Vec<ReadRecord>, writes: Vec<WriteRecord>) -> ReplayBlock {
        ReplayBlock {
            block: 1,
            gas_used: 0,
            txs: 0,
            reads,
            writes,
        }
    }

    fn sorted(mut keys: Vec<B256>) -> Vec<B256> {
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    const CODE: B256 = B256::repeat_byte(0xc0);

    fn existing() -> (Address, Map) {
        let address = Address::repeat_byte(0x11);
        let mut map = Map::default();
        map.accounts.insert(
            address,
            Account {
                nonce: 1,
                balance: U256::from(5u8),
                code_size: 100,
                code_hash: CODE,
            },
        );
        (address, map)
    }

    fn account_write(address: Address, code_hash: B256, code_size: u32) -> WriteRecord {
        WriteRecord::Account {
            address,
            nonce: 2,
            balance: U256::from(7u8),
            code_hash,
            code_size,
        }
    }

    #[test]
    fn raw_blocks_look_up_every_key_read_or_written() {
        let (a, b, c) = (
            B256::repeat_byte(3),
            B256::repeat_byte(1),
            B256::repeat_byte(2),
        );
        let raw = block(
            vec![ReadRecord::Raw(a), ReadRecord::Raw(b)],
            vec![
                WriteRecord::Raw { key: b, value: a },
                WriteRecord::Raw { key: c, value: a },
            ],
        );
        let map = Map::default();
        assert_eq!(geth_witness_keys(&raw, &map).unwrap(), vec![b, c, a]);
        assert!(map.lookups.borrow().is_empty(), "raw keys need no state");
        assert!(geth_witness_keys(&block(vec![], vec![]), &map)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn account_reads_look_up_the_header_stem_only() {
        let (address, map) = existing();
        let absent = Address::repeat_byte(0x22);
        let reads = vec![ReadRecord::Account(address), ReadRecord::Account(absent)];
        let keys = geth_witness_keys(&block(reads, vec![]), &map).unwrap();
        assert_eq!(
            keys,
            sorted(vec![basic_data_key(&address), basic_data_key(&absent)])
        );
        assert!(!keys.contains(&code_hash_key(&address)));
        assert!(map.lookups.borrow().is_empty());
    }

    #[test]
    fn slot_reads_of_absent_accounts_stop_at_the_account() {
        let (address, map) = existing();
        let absent = Address::repeat_byte(0x22);
        let (low, high) = (U256::from(3u8), U256::from(1_000u32));
        let reads = vec![
            ReadRecord::Slot(address, high),
            ReadRecord::Slot(absent, low),
            ReadRecord::Slot(absent, high),
            ReadRecord::Slot(address, high),
        ];
        let keys = geth_witness_keys(&block(reads, vec![]), &map).unwrap();
        assert_eq!(
            keys,
            sorted(vec![
                basic_data_key(&address),
                storage_slot_key(&address, &high),
                basic_data_key(&absent),
            ])
        );
        // One lookup per account.
        assert_eq!(map.lookups.borrow().len(), 2);
    }

    #[test]
    fn slot_writes_look_up_the_slot_whatever_the_account() {
        let (address, map) = existing();
        let absent = Address::repeat_byte(0x22);
        let slot = U256::from(1_000u32);
        let writes = vec![
            WriteRecord::Slot {
                address: absent,
                slot,
                value: B256::repeat_byte(9),
            },
            WriteRecord::Slot {
                address,
                slot,
                value: B256::ZERO,
            },
        ];
        let keys = geth_witness_keys(&block(vec![], writes), &map).unwrap();
        assert_eq!(
            keys,
            sorted(vec![
                basic_data_key(&address),
                storage_slot_key(&address, &slot),
                basic_data_key(&absent),
                storage_slot_key(&absent, &slot),
            ])
        );
    }

    #[test]
    fn code_chunks_only_when_the_code_hash_changes() {
        let (address, map) = existing();
        let header = vec![basic_data_key(&address)];
        // Same code hash: no chunks, whatever the size says.
        let same = block(vec![], vec![account_write(address, CODE, 5_000)]);
        assert_eq!(geth_witness_keys(&same, &map).unwrap(), header);
        // New code: ceil(size / 31) chunks, past the header stem from 128.
        let changed = block(
            vec![],
            vec![account_write(address, B256::repeat_byte(7), 4_000)],
        );
        let keys = geth_witness_keys(&changed, &map).unwrap();
        let chunks: Vec<B256> = (0..130).map(|i| code_chunk_key(&address, i)).collect();
        assert_eq!(4_000usize.div_ceil(31), 130);
        let mut expected = header.clone();
        expected.extend(&chunks);
        assert_eq!(keys, sorted(expected));
        // Chunk 128 is on the next stem, chunk 127 on the header's.
        assert_eq!(chunks[127][..31], basic_data_key(&address)[..31]);
        assert_ne!(chunks[128][..31], basic_data_key(&address)[..31]);
        // New code of size 0 (code hash of no code on an account with code).
        let emptied = block(vec![], vec![account_write(address, KECCAK256_EMPTY, 0)]);
        assert_eq!(geth_witness_keys(&emptied, &map).unwrap(), header);
    }

    #[test]
    fn absent_accounts_start_from_the_empty_code_hash() {
        let map = Map::default();
        let address = Address::repeat_byte(0x33);
        let header = vec![basic_data_key(&address)];
        let plain = block(vec![], vec![account_write(address, KECCAK256_EMPTY, 0)]);
        assert_eq!(geth_witness_keys(&plain, &map).unwrap(), header);
        let deployed = block(vec![], vec![account_write(address, CODE, 32)]);
        let mut expected = header;
        expected.extend([code_chunk_key(&address, 0), code_chunk_key(&address, 1)]);
        assert_eq!(
            geth_witness_keys(&deployed, &map).unwrap(),
            sorted(expected)
        );
    }

    #[test]
    fn pre_state_failures_are_errors() {
        let read = block(
            vec![ReadRecord::Slot(Address::ZERO, U256::ZERO)],
            Vec::new(),
        );
        assert!(geth_witness_keys(&read, &Failing).is_err());
        let write = block(vec![], vec![account_write(Address::ZERO, CODE, 1)]);
        assert!(geth_witness_keys(&write, &Failing).is_err());
    }

    #[test]
    fn a_database_answers_as_geth_get_account() {
        let dir = std::env::temp_dir().join(format!("ubt-witness-keys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (live, deleted) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let basic = BasicData {
            version: 0,
            code_size: 0,
            nonce: 1,
            balance: 0,
        };
        let mut entries = vec![
            (basic_data_key(&live), basic.pack()),
            (code_hash_key(&live), KECCAK256_EMPTY),
            (basic_data_key(&deleted), B256::ZERO),
            (code_hash_key(&deleted), B256::ZERO),
        ];
        entries.sort_unstable();
        let (db, _) = Db::build(&dir, Options::default(), entries).unwrap();
        let slot = U256::from(7u8);
        let reads = vec![
            ReadRecord::Slot(live, slot),
            ReadRecord::Slot(deleted, slot),
        ];
        let replay = block(reads, vec![]);
        let expected = sorted(vec![
            basic_data_key(&live),
            storage_slot_key(&live, &slot),
            basic_data_key(&deleted),
        ]);
        assert_eq!(geth_witness_keys(&replay, &db).unwrap(), expected);
        let reader = db.reader(&db.root()).unwrap();
        assert_eq!(geth_witness_keys(&replay, &reader).unwrap(), expected);
        drop(reader);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

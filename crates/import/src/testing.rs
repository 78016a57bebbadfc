//! Deterministic synthetic state for tests and measurements (feature
//! `testing`): accounts from a seed, written as a geth dump or a genesis
//! alloc, and the tree entries they stand for computed independently of
//! the importer (with `ubt-spec`'s key functions, one account at a time).
//!
//! The mix: 70% plain accounts (balance and nonce only), the rest
//! contracts with 1 to 1,500 bytes of code and storage: mostly a few
//! slots, some hundreds, and every 1,000th account `big_slots` slots (the
//! dump's long lines). Slots are small numbers (the header slots below
//! 64 included) or hashes, values small numbers or 32 random bytes.

use std::io::{self, Write};

use alloy_primitives::{keccak256, Address, B256, U256};
use ubt_spec::basic_data::{geth_balance, BasicData};
use ubt_spec::chunk::chunkify_code;
use ubt_spec::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};
use ubt_spec::rng::SplitMix64;

/// The root of an empty Merkle-Patricia trie.
const EMPTY_TRIE_ROOT: &str = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";

/// One generated account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticAccount {
    /// The address.
    pub address: Address,
    /// Nonce.
    pub nonce: u64,
    /// Balance (up to 2^100).
    pub balance: U256,
    /// Code (empty for plain accounts).
    pub code: Vec<u8>,
    /// Storage slots and values (values never zero), slots distinct and
    /// ascending.
    pub storage: Vec<([u8; 32], [u8; 32])>,
}

impl SyntheticAccount {
    /// The tree entries the account stands for, by the spec's functions.
    pub fn tree_entries(&self) -> Vec<(B256, B256)> {
        let mut entries = vec![
            (
                basic_data_key(&self.address),
                BasicData {
                    version: 0,
                    code_size: u32::try_from(self.code.len()).unwrap_or(u32::MAX),
                    nonce: self.nonce,
                    balance: geth_balance(&self.balance),
                }
                .pack(),
            ),
            (code_hash_key(&self.address), keccak256(&self.code)),
        ];
        for (i, chunk) in chunkify_code(&self.code).into_iter().enumerate() {
            entries.push((code_chunk_key(&self.address, i as u64), B256::from(chunk)));
        }
        for (slot, value) in &self.storage {
            if *value != [0u8; 32] {
                entries.push((
                    storage_slot_key(&self.address, &U256::from_be_bytes(*slot)),
                    B256::from(*value),
                ));
            }
        }
        entries
    }

    /// The number of tree entries.
    pub fn tree_entry_count(&self) -> u64 {
        2 + self.code.len().div_ceil(31) as u64 + self.storage.len() as u64
    }
}

/// Generates accounts deterministically from a seed.
#[derive(Clone, Debug)]
pub struct Generator {
    rng: SplitMix64,
    index: u64,
    big_slots: usize,
}

impl Generator {
    /// Accounts from `seed`; every 1,000th contract-bearing position gets
    /// `big_slots` slots.
    pub fn new(seed: u64, big_slots: usize) -> Generator {
        Generator {
            rng: SplitMix64::new(seed),
            index: 0,
            big_slots,
        }
    }

    /// The next account.
    pub fn next_account(&mut self) -> SyntheticAccount {
        let rng = &mut self.rng;
        let index = self.index;
        self.index += 1;
        let mut address = [0u8; 20];
        rng.fill(&mut address);
        let balance = U256::from(rng.next_u64()) << (rng.index(37));
        let nonce = rng.below(1000);
        let mut account = SyntheticAccount {
            address: Address::from(address),
            nonce,
            balance,
            code: Vec::new(),
            storage: Vec::new(),
        };
        let contract = index % 1000 == 999 || rng.below(10) >= 7;
        if !contract {
            return account;
        }
        let code_len = 1 + rng.index(1500);
        account.code = vec![0u8; code_len];
        rng.fill(&mut account.code);
        let slot_count = if index % 1000 == 999 {
            self.big_slots
        } else if rng.below(10) == 0 {
            100 + rng.index(400)
        } else {
            rng.index(8)
        };
        let mut storage = Vec::with_capacity(slot_count);
        for i in 0..slot_count {
            let slot = if i < 70 && rng.below(2) == 0 {
                U256::from(i).to_be_bytes::<32>()
            } else {
                rng.bytes32()
            };
            let value = if rng.below(2) == 0 {
                U256::from(1 + rng.below(1 << 40)).to_be_bytes::<32>()
            } else {
                let mut v = rng.bytes32();
                v[0] |= 1;
                v
            };
            storage.push((slot, value));
        }
        storage.sort();
        storage.dedup_by(|a, b| a.0 == b.0);
        account.storage = storage;
        account
    }
}

fn hex(bytes: &[u8]) -> String {
    alloy_primitives::hex::encode(bytes)
}

/// Writes `{"root":...}` as a dump's first line.
pub fn write_dump_root(out: &mut impl Write, root: &B256) -> io::Result<()> {
    writeln!(out, "{{\"root\":\"{root}\"}}")
}

/// Writes `account` as one line of `geth dump --iterative` (fields in
/// geth's order, storage values trimmed, `code` and `storage` left out
/// when empty).
pub fn write_dump_line(out: &mut impl Write, account: &SyntheticAccount) -> io::Result<()> {
    let storage_root = if account.storage.is_empty() {
        EMPTY_TRIE_ROOT.to_string()
    } else {
        // Any non-empty root: the importer only checks it is not empty.
        format!("{}", keccak256(account.address))
    };
    write!(
        out,
        "{{\"balance\":\"{}\",\"nonce\":{},\"root\":\"{}\",\"codeHash\":\"{}\"",
        account.balance,
        account.nonce,
        storage_root,
        keccak256(&account.code)
    )?;
    if !account.code.is_empty() {
        write!(out, ",\"code\":\"0x{}\"", hex(&account.code))?;
    }
    if !account.storage.is_empty() {
        write!(out, ",\"storage\":{{")?;
        for (i, (slot, value)) in account.storage.iter().enumerate() {
            let zeros = value.iter().take_while(|b| **b == 0).count();
            let separator = if i == 0 { "" } else { "," };
            write!(
                out,
                "{separator}\"0x{}\":\"{}\"",
                hex(slot),
                hex(&value[zeros..])
            )?;
        }
        write!(out, "}}")?;
    }
    writeln!(
        out,
        ",\"address\":\"{:#x}\",\"key\":\"{}\"}}",
        account.address,
        keccak256(account.address)
    )
}

/// Writes a genesis object whose alloc holds `accounts`.
pub fn write_genesis<'a>(
    out: &mut impl Write,
    accounts: impl IntoIterator<Item = &'a SyntheticAccount>,
) -> io::Result<()> {
    write!(
        out,
        "{{\"config\":{{\"chainId\":1}},\"gasLimit\":\"0x1c9c380\",\"alloc\":{{"
    )?;
    for (i, account) in accounts.into_iter().enumerate() {
        let separator = if i == 0 { "" } else { "," };
        write!(
            out,
            "{separator}\n\"{}\":{{\"balance\":\"{:#x}\",\"nonce\":\"{:#x}\"",
            hex(account.address.as_slice()),
            account.balance,
            account.nonce
        )?;
        if !account.code.is_empty() {
            write!(out, ",\"code\":\"0x{}\"", hex(&account.code))?;
        }
        if !account.storage.is_empty() {
            write!(out, ",\"storage\":{{")?;
            for (j, (slot, value)) in account.storage.iter().enumerate() {
                let separator = if j == 0 { "" } else { "," };
                write!(out, "{separator}\"0x{}\":\"0x{}\"", hex(slot), hex(value))?;
            }
            write!(out, "}}")?;
        }
        write!(out, "}}")?;
    }
    writeln!(out, "}}}}")
}

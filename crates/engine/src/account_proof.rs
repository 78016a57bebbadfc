//! Account proofs in the shape of `eth_getProof` (EIP-1186), whose proofs
//! are the tree's canonical multiproofs (`docs/proof-format.md`, section
//! "Account proofs (eth_getProof shape)").
//!
//! An [`AccountProof`] serialises (serde, camelCase) to:
//!
//! ```json
//! {
//!   "address": "0x<40 hex>",
//!   "balance": "0x<quantity>",
//!   "codeHash": "0x<64 hex>",
//!   "codeSize": "0x<quantity>",
//!   "nonce": "0x<quantity>",
//!   "storageHash": "0x<64 hex, the state root>",
//!   "stateRoot": "0x<64 hex>",
//!   "proofFormat": "ubt-multiproof-v1",
//!   "accountProof": ["0x<multiproof of the BasicData and code-hash keys>"],
//!   "storageProof": [
//!     {"key": "0x<64 hex>", "value": "0x<quantity>", "proof": ["0x<multiproof of the slot's key>"]}
//!   ]
//! }
//! ```
//!
//! Decisions where the unified tree differs from the Merkle-Patricia trie:
//!
//! * There is no per-account storage root: slots are leaves of the one
//!   tree. `storageHash` is the state root, the root every `storageProof`
//!   verifies against; it does not commit to the account's storage alone.
//! * An absent account (never written, or deleted: both header leaves zero)
//!   reports balance 0, nonce 0, code size 0 and `codeHash` 0 (32 zero
//!   bytes, as go-ethereum's `eth_getProof` reports an account that does
//!   not exist), and `accountProof` proves what makes it absent.
//! * `codeSize` and `stateRoot` and `proofFormat` are additions to
//!   EIP-1186.
//!
//! [`AccountProof::verify`] checks every proof against a root and that
//! every claimed field is the one the proofs prove.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt;

use alloy_primitives::{hex, Address, Bytes, B256, U256};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ubt_spec::account::read_account;
use ubt_spec::key::{basic_data_key, code_hash_key, storage_slot_key};
use ubt_spec::proof::{verify, Proof, ProofError};
use ubt_spec::Account;

use crate::{Db, Error, Reader, Result, Root, Structure};

/// The `proofFormat` of an [`AccountProof`]: every proof string is the
/// canonical encoding of one multiproof, version 1 of
/// `docs/proof-format.md`.
pub const ACCOUNT_PROOF_FORMAT: &str = "ubt-multiproof-v1";

/// An account and some of its storage slots with their proofs, in the shape
/// of `eth_getProof`'s result (see the module docs for the JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccountProof {
    /// The account's address (`0x` and 40 hex digits).
    #[serde(serialize_with = "ser_address", deserialize_with = "de_address")]
    pub address: Address,
    /// The balance (the stored 128 bits), a `0x` quantity; 0 when absent.
    #[serde(serialize_with = "ser_quantity", deserialize_with = "de_quantity")]
    pub balance: U256,
    /// keccak256 of the code as stored; 32 zero bytes when absent (as
    /// go-ethereum reports it).
    #[serde(serialize_with = "ser_b256", deserialize_with = "de_b256")]
    pub code_hash: B256,
    /// The code size BasicData records, a `0x` quantity; 0 when absent. Not
    /// in EIP-1186.
    #[serde(serialize_with = "ser_quantity", deserialize_with = "de_u32")]
    pub code_size: u32,
    /// The nonce, a `0x` quantity; 0 when absent.
    #[serde(serialize_with = "ser_quantity", deserialize_with = "de_u64")]
    pub nonce: u64,
    /// The state root: the unified tree has no per-account storage root,
    /// and the storage proofs verify against the state root.
    #[serde(serialize_with = "ser_b256", deserialize_with = "de_b256")]
    pub storage_hash: B256,
    /// The root every proof verifies against. Not in EIP-1186.
    #[serde(serialize_with = "ser_b256", deserialize_with = "de_b256")]
    pub state_root: B256,
    /// [`ACCOUNT_PROOF_FORMAT`]. Not in EIP-1186.
    pub proof_format: String,
    /// One encoded multiproof of the account's BasicData and code-hash keys.
    #[serde(serialize_with = "ser_proofs", deserialize_with = "de_proofs")]
    pub account_proof: Vec<Bytes>,
    /// The requested slots, in the order asked for.
    pub storage_proof: Vec<StorageProof>,
}

/// One storage slot of an [`AccountProof`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageProof {
    /// The slot number: written as `0x` and 64 hex digits, read from `0x`
    /// and 1 to 64 hex digits.
    #[serde(serialize_with = "ser_slot", deserialize_with = "de_slot")]
    pub key: U256,
    /// The slot's value, a `0x` quantity: 0 when absent or deleted (the
    /// proof tells the two apart).
    #[serde(serialize_with = "ser_quantity", deserialize_with = "de_quantity")]
    pub value: U256,
    /// One encoded multiproof of the slot's tree key.
    #[serde(serialize_with = "ser_proofs", deserialize_with = "de_proofs")]
    pub proof: Vec<Bytes>,
}

/// What an [`AccountProof`] proves, from [`AccountProof::verified`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedAccount {
    /// The account's address.
    pub address: Address,
    /// The account as geth's `GetAccount` reads it, with the code size;
    /// `None` when absent (never written, or deleted).
    pub account: Option<Account>,
    /// Each slot of `storageProof`, in its order, with its value: `None`
    /// when absent; a deleted slot is a present zero.
    pub storage: Vec<(U256, Option<B256>)>,
}

/// Which proof of an [`AccountProof`] an error concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofPart {
    /// `accountProof`.
    Account,
    /// `storageProof[i]`.
    Storage(usize),
}

impl fmt::Display for ProofPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofPart::Account => f.write_str("accountProof"),
            ProofPart::Storage(index) => write!(f, "storageProof[{index}]"),
        }
    }
}

/// A claimed field of an [`AccountProof`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofField {
    /// `balance`.
    Balance,
    /// `nonce`.
    Nonce,
    /// `codeHash`.
    CodeHash,
    /// `codeSize`.
    CodeSize,
    /// `storageProof[i].value`.
    StorageValue(usize),
}

impl fmt::Display for ProofField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofField::Balance => f.write_str("balance"),
            ProofField::Nonce => f.write_str("nonce"),
            ProofField::CodeHash => f.write_str("codeHash"),
            ProofField::CodeSize => f.write_str("codeSize"),
            ProofField::StorageValue(index) => write!(f, "storageProof[{index}].value"),
        }
    }
}

/// Why an [`AccountProof`] was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccountProofError {
    /// `proofFormat` is not [`ACCOUNT_PROOF_FORMAT`].
    #[error("unsupported proofFormat {0:?} (expected {ACCOUNT_PROOF_FORMAT:?})")]
    UnsupportedFormat(String),
    /// `stateRoot` is not the root verified against.
    #[error("stateRoot {claimed} is not the expected root {expected}")]
    StateRoot {
        /// The JSON's `stateRoot`.
        claimed: B256,
        /// The root given to verify.
        expected: B256,
    },
    /// `storageHash` is not the state root.
    #[error("storageHash {storage_hash} is not the state root {state_root}")]
    StorageHash {
        /// The JSON's `storageHash`.
        storage_hash: B256,
        /// The state root.
        state_root: B256,
    },
    /// A proof list does not hold exactly one proof.
    #[error("{part} holds {count} proofs, not exactly one")]
    ProofCount {
        /// Which list.
        part: ProofPart,
        /// How many it holds.
        count: usize,
    },
    /// A proof does not decode or does not verify against the root.
    #[error("{part}: {source}")]
    Proof {
        /// Which proof.
        part: ProofPart,
        /// Why.
        source: ProofError,
    },
    /// A proof proves other keys than the account's header keys (or the
    /// slot's key).
    #[error("{part} proves other keys than those of {address}")]
    WrongKeys {
        /// Which proof.
        part: ProofPart,
        /// The JSON's `address`.
        address: Address,
    },
    /// A claimed field differs from what the proofs prove.
    #[error("{field} is {claimed}, but the proof shows {proven}")]
    FieldMismatch {
        /// Which field.
        field: ProofField,
        /// The JSON's value.
        claimed: String,
        /// The proven value.
        proven: String,
    },
}

impl AccountProof {
    /// Verifies every proof against `root` and checks that `stateRoot`,
    /// `storageHash`, `proofFormat`, the account fields and every slot
    /// value are the ones the proofs prove.
    pub fn verify(&self, root: &Root) -> std::result::Result<(), AccountProofError> {
        self.verified(root).map(drop)
    }

    /// [`AccountProof::verify`], returning what the proofs prove.
    pub fn verified(&self, root: &Root) -> std::result::Result<VerifiedAccount, AccountProofError> {
        if self.proof_format != ACCOUNT_PROOF_FORMAT {
            return Err(AccountProofError::UnsupportedFormat(
                self.proof_format.clone(),
            ));
        }
        if self.state_root != *root {
            return Err(AccountProofError::StateRoot {
                claimed: self.state_root,
                expected: *root,
            });
        }
        if self.storage_hash != self.state_root {
            return Err(AccountProofError::StorageHash {
                storage_hash: self.storage_hash,
                state_root: self.state_root,
            });
        }
        let address = self.address;
        let header = verify_part(
            root,
            ProofPart::Account,
            &self.account_proof,
            &header_keys(&address),
            &address,
        )?;
        let account = account_of(&address, &header);
        self.check_header(account.as_ref())?;
        let mut storage = Vec::with_capacity(self.storage_proof.len());
        for (index, slot) in self.storage_proof.iter().enumerate() {
            let key = storage_slot_key(&address, &slot.key);
            let part = ProofPart::Storage(index);
            let values = verify_part(root, part, &slot.proof, &[key], &address)?;
            let value = values.get(&key).copied().flatten();
            let proven = value.map_or(U256::ZERO, |v| U256::from_be_bytes(v.0));
            mismatch(ProofField::StorageValue(index), &slot.value, &proven)?;
            storage.push((slot.key, value));
        }
        Ok(VerifiedAccount {
            address,
            account,
            storage,
        })
    }

    /// Checks the claimed header fields against the proven account (the
    /// absent account's fields when `None`).
    fn check_header(
        &self,
        account: Option<&Account>,
    ) -> std::result::Result<(), AccountProofError> {
        let proven = reported(account);
        mismatch(ProofField::Balance, &self.balance, &proven.balance)?;
        mismatch(ProofField::Nonce, &self.nonce, &proven.nonce)?;
        mismatch(ProofField::CodeHash, &self.code_hash, &proven.code_hash)?;
        mismatch(ProofField::CodeSize, &self.code_size, &proven.code_size)
    }
}

/// An error if `claimed` differs from `proven`.
fn mismatch<T: PartialEq + fmt::LowerHex>(
    field: ProofField,
    claimed: &T,
    proven: &T,
) -> std::result::Result<(), AccountProofError> {
    if claimed == proven {
        return Ok(());
    }
    Err(AccountProofError::FieldMismatch {
        field,
        claimed: format!("{claimed:#x}"),
        proven: format!("{proven:#x}"),
    })
}

/// The fields reported for `account`: an absent one as `eth_getProof`
/// reports it (zeros, including the code hash: go-ethereum's
/// `GetCodeHash` of a missing account).
fn reported(account: Option<&Account>) -> Account {
    account.copied().unwrap_or(Account {
        nonce: 0,
        balance: U256::ZERO,
        code_size: 0,
        code_hash: B256::ZERO,
    })
}

/// The account's BasicData and code-hash keys, ascending.
fn header_keys(address: &Address) -> [B256; 2] {
    let mut keys = [basic_data_key(address), code_hash_key(address)];
    keys.sort_unstable();
    keys
}

/// The account read from proven header values, with geth's rules
/// ([`read_account`]).
fn account_of(address: &Address, values: &BTreeMap<B256, Option<B256>>) -> Option<Account> {
    let lookup = |keys: &[B256]| -> std::result::Result<Vec<Option<B256>>, Infallible> {
        Ok(keys
            .iter()
            .map(|key| values.get(key).copied().flatten())
            .collect())
    };
    match read_account(address, lookup) {
        Ok(account) => account,
        Err(never) => match never {},
    }
}

/// Decodes the one proof of `proofs`, checks that it proves exactly
/// `keys` (ascending), and verifies it against `root`.
fn verify_part(
    root: &Root,
    part: ProofPart,
    proofs: &[Bytes],
    keys: &[B256],
    address: &Address,
) -> std::result::Result<BTreeMap<B256, Option<B256>>, AccountProofError> {
    let [bytes] = proofs else {
        return Err(AccountProofError::ProofCount {
            part,
            count: proofs.len(),
        });
    };
    let failed = |source| AccountProofError::Proof { part, source };
    let proof = Proof::decode(bytes).map_err(failed)?;
    if proof.keys() != keys {
        return Err(AccountProofError::WrongKeys {
            part,
            address: *address,
        });
    }
    verify(root, &proof).map_err(failed)
}

impl Db {
    /// The account at `address` and its storage slots `slots` at the tip,
    /// with proofs, as `eth_getProof` answers (see [`AccountProof`]): one
    /// multiproof for the header, one per slot, all verifiable against
    /// [`Db::root`] with [`AccountProof::verify`].
    pub fn account_proof(&self, address: &Address, slots: &[U256]) -> Result<AccountProof> {
        let keys = ProofKeys::new(address, slots);
        if !slots.is_empty() {
            self.prefetch(&keys.all());
        }
        keys.build(self.root(), |keys| self.prove(keys))
    }
}

impl Reader {
    /// [`Db::account_proof`] at the snapshot's root.
    pub fn account_proof(&self, address: &Address, slots: &[U256]) -> Result<AccountProof> {
        let keys = ProofKeys::new(address, slots);
        if !slots.is_empty() {
            self.prefetch(&keys.all());
        }
        keys.build(self.root(), |keys| self.prove(keys))
    }
}

/// The tree keys of an account proof.
struct ProofKeys {
    address: Address,
    header: [B256; 2],
    /// Each slot with its tree key, in the order asked for.
    slots: Vec<(U256, B256)>,
}

impl ProofKeys {
    fn new(address: &Address, slots: &[U256]) -> ProofKeys {
        ProofKeys {
            address: *address,
            header: header_keys(address),
            slots: slots
                .iter()
                .map(|slot| (*slot, storage_slot_key(address, slot)))
                .collect(),
        }
    }

    /// Every key, for a prefetch.
    fn all(&self) -> Vec<B256> {
        let slot_keys = self.slots.iter().map(|(_, key)| *key);
        self.header.iter().copied().chain(slot_keys).collect()
    }

    /// The account proof at `root`, proving with `prove`. Each proof is
    /// verified against `root` before its values are reported: a proof
    /// that does not verify is a corrupted trie.
    fn build(&self, root: Root, prove: impl Fn(&[B256]) -> Result<Proof>) -> Result<AccountProof> {
        let (account_proof, header) = proven(&root, &self.header, &prove)?;
        let account = reported(account_of(&self.address, &header).as_ref());
        let mut storage_proof = Vec::with_capacity(self.slots.len());
        for (slot, key) in &self.slots {
            let (proof, values) = proven(&root, &[*key], &prove)?;
            let value = values.get(key).copied().flatten().unwrap_or_default();
            storage_proof.push(StorageProof {
                key: *slot,
                value: U256::from_be_bytes(value.0),
                proof: vec![proof],
            });
        }
        Ok(AccountProof {
            address: self.address,
            balance: account.balance,
            code_hash: account.code_hash,
            code_size: account.code_size,
            nonce: account.nonce,
            storage_hash: root,
            state_root: root,
            proof_format: ACCOUNT_PROOF_FORMAT.to_owned(),
            account_proof: vec![account_proof],
            storage_proof,
        })
    }
}

/// The encoded proof of `keys` and the values it proves at `root`.
fn proven(
    root: &Root,
    keys: &[B256],
    prove: impl Fn(&[B256]) -> Result<Proof>,
) -> Result<(Bytes, BTreeMap<B256, Option<B256>>)> {
    let proof = prove(keys)?;
    let values = verify(root, &proof).map_err(|error| {
        Error::corrupted(
            Structure::Trie,
            format!("the proof of {} keys at root {root}", keys.len()),
            format!("the proof does not verify: {error}"),
        )
    })?;
    Ok((Bytes::from(proof.encode()), values))
}

// JSON encodings: strict on input (a `0x` prefix, ASCII hex digits, the
// exact length; quantities without leading zeros), lowercase on output.

/// The hex digits after `0x`, checked to be ASCII hex digits.
fn hex_digits<'a>(text: &'a str, what: &str) -> std::result::Result<&'a str, String> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{what} must start with 0x: {text:?}"))?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{what} is not hex: {text:?}"));
    }
    Ok(digits)
}

/// `0x` and exactly `2 * N` hex digits.
fn parse_fixed<const N: usize>(text: &str, what: &str) -> std::result::Result<[u8; N], String> {
    let digits = hex_digits(text, what)?;
    let mut out = [0u8; N];
    if digits.len() != 2 * N || hex::decode_to_slice(digits, &mut out).is_err() {
        return Err(format!(
            "{what} must be 0x and {} hex digits: {text:?}",
            2 * N
        ));
    }
    Ok(out)
}

/// A `0x` quantity: `0x0`, or hex digits without a leading zero.
fn parse_quantity(text: &str) -> std::result::Result<U256, String> {
    let digits = hex_digits(text, "a quantity")?;
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return Err(format!(
            "a quantity is 0x0 or 0x and hex digits without leading zeros: {text:?}"
        ));
    }
    U256::from_str_radix(digits, 16).map_err(|_| format!("quantity too large: {text:?}"))
}

fn ser_str<S: Serializer>(text: &str, serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str(text)
}

fn de_with<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    parse: impl FnOnce(&str) -> std::result::Result<T, String>,
) -> std::result::Result<T, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse(&text).map_err(serde::de::Error::custom)
}

fn ser_address<S: Serializer>(value: &Address, s: S) -> std::result::Result<S::Ok, S::Error> {
    ser_str(&format!("0x{}", hex::encode(value)), s)
}

fn de_address<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Address, D::Error> {
    de_with(d, |text| {
        parse_fixed::<20>(text, "an address").map(Address::from)
    })
}

fn ser_b256<S: Serializer>(value: &B256, s: S) -> std::result::Result<S::Ok, S::Error> {
    ser_str(&format!("0x{}", hex::encode(value)), s)
}

fn de_b256<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<B256, D::Error> {
    de_with(d, |text| parse_fixed::<32>(text, "a hash").map(B256::from))
}

fn ser_quantity<S: Serializer, T: fmt::LowerHex>(
    value: &T,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    ser_str(&format!("{value:#x}"), s)
}

fn de_quantity<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<U256, D::Error> {
    de_with(d, parse_quantity)
}

fn de_u64<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    de_with(d, |text| {
        u64::try_from(parse_quantity(text)?).map_err(|_| format!("nonce too large: {text:?}"))
    })
}

fn de_u32<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    de_with(d, |text| {
        u32::try_from(parse_quantity(text)?).map_err(|_| format!("code size too large: {text:?}"))
    })
}

fn ser_slot<S: Serializer>(value: &U256, s: S) -> std::result::Result<S::Ok, S::Error> {
    ser_str(&format!("0x{value:064x}"), s)
}

fn de_slot<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<U256, D::Error> {
    de_with(d, |text| {
        let digits = hex_digits(text, "a storage key")?;
        if digits.is_empty() || digits.len() > 64 {
            return Err(format!(
                "a storage key is 0x and 1 to 64 hex digits: {text:?}"
            ));
        }
        U256::from_str_radix(digits, 16).map_err(|_| format!("bad storage key: {text:?}"))
    })
}

fn ser_proofs<S: Serializer>(proofs: &[Bytes], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(proofs.iter().map(|p| format!("0x{}", hex::encode(p))))
}

fn de_proofs<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<Bytes>, D::Error> {
    let texts = Vec::<String>::deserialize(d)?;
    texts
        .iter()
        .map(|text| {
            let digits = hex_digits(text, "a proof")?;
            hex::decode(digits)
                .map(Bytes::from)
                .map_err(|_| "a proof must have an even number of hex digits".to_owned())
        })
        .collect::<std::result::Result<_, String>>()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_strict() {
        assert_eq!(parse_quantity("0x0"), Ok(U256::ZERO));
        assert_eq!(parse_quantity("0x1aF"), Ok(U256::from(0x1afu16)));
        for bad in ["0x", "0x00", "0x01", "1", "0X1", "0xg", "0x 1", "-0x1"] {
            assert!(parse_quantity(bad).is_err(), "{bad}");
        }
        let too_large = format!("0x1{}", "0".repeat(64));
        assert!(parse_quantity(&too_large).is_err());
        assert_eq!(parse_fixed::<2>("0xabCD", "x"), Ok([0xab, 0xcd]));
        for bad in ["abcd", "0xabc", "0xabcde", "0x0x12", "0xab+d"] {
            assert!(parse_fixed::<2>(bad, "x").is_err(), "{bad}");
        }
    }
}

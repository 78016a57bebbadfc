//! The reads database and reader handles share (get, get_many, account,
//! storage, code, prove): one body each, generic over [`Source`], which
//! both the engine's `Db` (at the tip) and `Reader` (at its root) are.

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_engine::{Account, Db, Proof, Reader};

use crate::bytes::hand_out;
use crate::error::FfiError;
use crate::guard;
use crate::handle::Registry;
use crate::ptr::{read, read_array, Out, OutArray};
use crate::status::Status;
use crate::types::{UbtAccount, UbtAddress, UbtBytes, UbtBytes32};

/// State to read: a database at its tip, or a reader at its root.
pub(crate) trait Source {
    /// The value at `key`.
    fn get(&self, key: &B256) -> Result<Option<B256>, FfiError>;
    /// The values at `keys`, in order.
    fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>, FfiError>;
    /// The account at `address`.
    fn account(&self, address: &Address) -> Result<Option<Account>, FfiError>;
    /// Storage slot `slot` of `address`.
    fn storage(&self, address: &Address, slot: &U256) -> Result<Option<B256>, FfiError>;
    /// The code of `address` as its code hash names it
    /// (`code_matching_hash`).
    fn code(&self, address: &Address) -> Result<Option<Bytes>, FfiError>;
    /// A multiproof of `keys`.
    fn prove(&self, keys: &[B256]) -> Result<Proof, FfiError>;
}

/// Implements [`Source`] with the type's inherent methods of the same
/// names (`Db` and `Reader` have the same read API).
macro_rules! source_from_inherent_methods {
    ($type:ty) => {
        impl Source for $type {
            fn get(&self, key: &B256) -> Result<Option<B256>, FfiError> {
                Ok(<$type>::get(self, key)?)
            }
            fn get_many(&self, keys: &[B256]) -> Result<Vec<Option<B256>>, FfiError> {
                Ok(<$type>::get_many(self, keys)?)
            }
            fn account(&self, address: &Address) -> Result<Option<Account>, FfiError> {
                Ok(<$type>::account(self, address)?)
            }
            fn storage(&self, address: &Address, slot: &U256) -> Result<Option<B256>, FfiError> {
                Ok(<$type>::storage(self, address, slot)?)
            }
            fn code(&self, address: &Address) -> Result<Option<Bytes>, FfiError> {
                Ok(<$type>::code_matching_hash(self, address)?)
            }
            fn prove(&self, keys: &[B256]) -> Result<Proof, FfiError> {
                Ok(<$type>::prove(self, keys)?)
            }
        }
    };
}

source_from_inherent_methods!(Db);
source_from_inherent_methods!(Reader);

/// The body of `ubt_db_get` and `ubt_reader_get`.
///
/// # Safety
///
/// As `ubt_db_get`.
#[allow(unsafe_code)] // Reads and writes the caller's pointers.
pub(crate) unsafe fn get<S: Source>(
    registry: &Registry<S>,
    handle: u64,
    key: *const UbtBytes32,
    value_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    guard::call(|| {
        // SAFETY: the exported function's contract, forwarded.
        let (key, value_out, found_out) = unsafe {
            (
                read(key, "key")?,
                Out::new(value_out, "value_out")?,
                Out::new(found_out, "found_out")?,
            )
        };
        let value = registry.read(handle, |source| source.get(&key.into()))?;
        value_out.write(value.unwrap_or_default().into());
        found_out.write(u8::from(value.is_some()));
        Ok(())
    })
}

/// The body of `ubt_db_get_many` and `ubt_reader_get_many`.
///
/// # Safety
///
/// As `ubt_db_get_many`.
#[allow(unsafe_code)] // Reads and writes the caller's pointers.
pub(crate) unsafe fn get_many<S: Source>(
    registry: &Registry<S>,
    handle: u64,
    keys: *const UbtBytes32,
    n_keys: usize,
    values_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    guard::call(|| {
        // SAFETY: the exported function's contract, forwarded.
        let (keys, values_out, found_out) = unsafe {
            (
                read_array(keys, n_keys, "keys")?,
                OutArray::new(values_out, n_keys, "values_out")?,
                OutArray::new(found_out, n_keys, "found_out")?,
            )
        };
        let keys: Vec<B256> = keys.into_iter().map(B256::from).collect();
        let values = registry.read(handle, |source| source.get_many(&keys))?;
        if values.len() != keys.len() {
            return Err(FfiError::new(
                Status::Internal,
                format!("{} values read for {} keys", values.len(), keys.len()),
            ));
        }
        found_out.fill(values.iter().map(|value| u8::from(value.is_some())));
        values_out.fill(values.into_iter().map(|v| v.unwrap_or_default().into()));
        Ok(())
    })
}

/// The body of `ubt_db_account` and `ubt_reader_account`.
///
/// # Safety
///
/// As `ubt_db_account`.
#[allow(unsafe_code)] // Reads and writes the caller's pointers.
pub(crate) unsafe fn account<S: Source>(
    registry: &Registry<S>,
    handle: u64,
    address: *const UbtAddress,
    account_out: *mut UbtAccount,
    found_out: *mut u8,
) -> i32 {
    guard::call(|| {
        // SAFETY: the exported function's contract, forwarded.
        let (address, account_out, found_out) = unsafe {
            (
                read(address, "address")?,
                Out::new(account_out, "account_out")?,
                Out::new(found_out, "found_out")?,
            )
        };
        let account = registry.read(handle, |source| source.account(&address.into()))?;
        account_out.write(account.map(UbtAccount::from).unwrap_or_default());
        found_out.write(u8::from(account.is_some()));
        Ok(())
    })
}

/// The body of `ubt_db_storage` and `ubt_reader_storage`.
///
/// # Safety
///
/// As `ubt_db_storage`.
#[allow(unsafe_code)] // Reads and writes the caller's pointers.
pub(crate) unsafe fn storage<S: Source>(
    registry: &Registry<S>,
    handle: u64,
    address: *const UbtAddress,
    slot: *const UbtBytes32,
    value_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    guard::call(|| {
        // SAFETY: the exported function's contract, forwarded.
        let (address, slot, value_out, found_out) = unsafe {
            (
                read(address, "address")?,
                read(slot, "slot")?,
                Out::new(value_out, "value_out")?,
                Out::new(found_out, "found_out")?,
            )
        };
        let slot = U256::from_be_bytes(slot.bytes);
        let value = registry.read(handle, |source| source.storage(&address.into(), &slot))?;
        value_out.write(value.unwrap_or_default().into());
        found_out.write(u8::from(value.is_some()));
        Ok(())
    })
}

/// The body of `ubt_db_code` and `ubt_reader_code`.
///
/// # Safety
///
/// As `ubt_db_code`.
#[allow(unsafe_code)] // Reads and writes the caller's pointers.
pub(crate) unsafe fn code<S: Source>(
    registry: &Registry<S>,
    handle: u64,
    address: *const UbtAddress,
    code_out: *mut UbtBytes,
    found_out: *mut u8,
) -> i32 {
    guard::call(|| {
        // SAFETY: the exported function's contract, forwarded.
        let (address, code_out, found_out) = unsafe {
            (
                read(address, "address")?,
                Out::new(code_out, "code_out")?,
                Out::new(found_out, "found_out")?,
            )
        };
        let code = registry.read(handle, |source| source.code(&address.into()))?;
        found_out.write(u8::from(code.is_some()));
        code_out.write(code.map_or(UbtBytes::EMPTY, |code| hand_out(code.to_vec())));
        Ok(())
    })
}

/// The body of `ubt_db_prove` and `ubt_reader_prove`.
///
/// # Safety
///
/// As `ubt_db_prove`.
#[allow(unsafe_code)] // Reads and writes the caller's pointers.
pub(crate) unsafe fn prove<S: Source>(
    registry: &Registry<S>,
    handle: u64,
    keys: *const UbtBytes32,
    n_keys: usize,
    proof_out: *mut UbtBytes,
) -> i32 {
    guard::call(|| {
        // SAFETY: the exported function's contract, forwarded.
        let (keys, proof_out) = unsafe {
            (
                read_array(keys, n_keys, "keys")?,
                Out::new(proof_out, "proof_out")?,
            )
        };
        let keys: Vec<B256> = keys.into_iter().map(B256::from).collect();
        let proof = registry.read(handle, |source| source.prove(&keys))?;
        proof_out.write(hand_out(proof.encode()));
        Ok(())
    })
}

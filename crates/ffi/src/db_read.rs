//! Reads on a database handle, at the tip (everything applied, persisted
//! or not). The same reads on a reader handle are in `reader.rs`.

use crate::db::DATABASES;
use crate::source;
use crate::types::{UbtAccount, UbtAddress, UbtBytes, UbtBytes32};

/// Reads the value at tree key `*key`: writes it to `*value_out` and 1 to
/// `*found_out`, or zeros and 0 when the key is absent.
///
/// # Safety
///
/// `key` is null or points to a readable `UbtBytes32`; `value_out` and
/// `found_out` are null or valid for writing one `UbtBytes32` and one
/// `uint8_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_get(
    db: u64,
    key: *const UbtBytes32,
    value_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::get(&DATABASES, db, key, value_out, found_out) }
}

/// Reads the values at `n_keys` tree keys, all reads in flight at once:
/// `values_out[i]` and `found_out[i]` as `ubt_db_get` writes them for
/// `keys[i]`. The arrays may be NULL when `n_keys` is 0.
///
/// # Safety
///
/// `keys` is null or valid for reading `n_keys` `UbtBytes32`s;
/// `values_out` and `found_out` are null or valid for writing `n_keys`
/// `UbtBytes32`s and `n_keys` `uint8_t`s.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_get_many(
    db: u64,
    keys: *const UbtBytes32,
    n_keys: usize,
    values_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::get_many(&DATABASES, db, keys, n_keys, values_out, found_out) }
}

/// Reads the account at `*address` as go-ethereum's `GetAccount` does
/// (plus the code size): writes it to `*account_out` and 1 to
/// `*found_out`, or zeros and 0 when it is absent (both header leaves
/// absent, or deleted).
///
/// # Safety
///
/// `address` is null or points to a readable `UbtAddress`; `account_out`
/// and `found_out` are null or valid for writing one `UbtAccount` and one
/// `uint8_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_account(
    db: u64,
    address: *const UbtAddress,
    account_out: *mut UbtAccount,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::account(&DATABASES, db, address, account_out, found_out) }
}

/// Reads storage slot `*slot` (a big-endian number) of `*address`: the
/// value and 1, or zeros and 0 when absent (a deleted slot is a present
/// zero). Slots outlive a deleted account.
///
/// # Safety
///
/// `address` and `slot` are null or point to a readable `UbtAddress` and
/// `UbtBytes32`; `value_out` and `found_out` are null or valid for writing
/// one `UbtBytes32` and one `uint8_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_storage(
    db: u64,
    address: *const UbtAddress,
    slot: *const UbtBytes32,
    value_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::storage(&DATABASES, db, address, slot, value_out, found_out) }
}

/// Reads the code of `*address`, reassembled from its chunks with the code
/// size in BasicData, into a buffer the library allocates: `*code_out`
/// (free it with `ubt_bytes_free`) and 1 to `*found_out`; the empty buffer
/// and 0 when the account is absent (the empty buffer and 1 for empty
/// code). When that code does not hash to the account's code hash, the
/// code is recovered from the chunks as the shortest prefix that does:
/// go-ethereum writes code size 0 for a contract it updates without
/// loading its code (the engine's `Db::code_matching_hash`); code no
/// prefix gives is returned by the code size, for the caller to reject.
/// `UBT_ERR_MISSING_CODE_CHUNK` when a chunk within the code size is
/// absent and the chunks give no code with the hash.
///
/// # Safety
///
/// `address` is null or points to a readable `UbtAddress`; `code_out` and
/// `found_out` are null or valid for writing one `UbtBytes` and one
/// `uint8_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_code(
    db: u64,
    address: *const UbtAddress,
    code_out: *mut UbtBytes,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::code(&DATABASES, db, address, code_out, found_out) }
}

/// Proves `n_keys` tree keys (any order, duplicates ignored) at the tip:
/// writes the canonical encoding of their multiproof (the format of
/// `docs/proof-format.md`, verifiable against `ubt_db_root` with
/// `ubt_verify_proof`) to `*proof_out`, a buffer the library allocates
/// (free it with `ubt_bytes_free`). `keys` may be NULL when `n_keys` is 0.
///
/// # Safety
///
/// `keys` is null or valid for reading `n_keys` `UbtBytes32`s;
/// `proof_out` is null or valid for writing one `UbtBytes`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_prove(
    db: u64,
    keys: *const UbtBytes32,
    n_keys: usize,
    proof_out: *mut UbtBytes,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::prove(&DATABASES, db, keys, n_keys, proof_out) }
}

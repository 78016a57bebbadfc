//! Reader handles: consistent snapshots of a database at one root, usable
//! from any thread while the writer goes on; made from a database handle,
//! closed on their own. Their reads are the database handle's, at the
//! reader's root.

use alloy_primitives::B256;
use ubt_engine::Reader;

use crate::db::DATABASES;
use crate::guard;
use crate::handle::Registry;
use crate::ptr::{read, Out};
use crate::source;
use crate::types::{UbtAccount, UbtAddress, UbtBytes, UbtBytes32};

/// The open readers.
pub(crate) static READERS: Registry<Reader> = Registry::new("reader");

/// Opens a reader at root `*root` (the tip, any layer in memory, or the
/// state before the oldest layer, i.e. the last persisted one) and writes
/// its handle to `*reader_out`. `UBT_ERR_UNKNOWN_ROOT` for any other root.
///
/// The reader sees exactly the state at its root whatever the writer does
/// next, until that root is reverted away (then its reads fail with
/// `UBT_ERR_SNAPSHOT_REVERTED`). It outlives `ubt_db_close` of its
/// database. Close it with `ubt_reader_close`: an open reader keeps the
/// layers it needs in memory.
///
/// # Safety
///
/// `root` is null or points to a readable `UbtBytes32`; `reader_out` is
/// null or valid for writing one `uint64_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_reader(
    db: u64,
    root: *const UbtBytes32,
    reader_out: *mut u64,
) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let (root, reader_out) = unsafe {
            (
                B256::from(read(root, "root")?),
                Out::new(reader_out, "reader_out")?,
            )
        };
        let reader = DATABASES.read(db, |db| Ok(db.reader(&root)?))?;
        reader_out.write(READERS.insert(reader));
        Ok(())
    })
}

/// Closes a reader handle and releases its snapshot. Closing twice (or a
/// handle that is not an open reader) is `UBT_ERR_BAD_HANDLE`. Waits for
/// calls in flight on the handle in other threads. A poisoned reader is
/// released too, and returns `UBT_OK`.
#[allow(unsafe_code)] // `no_mangle`: the symbol is the ABI.
#[no_mangle]
pub extern "C" fn ubt_reader_close(reader: u64) -> i32 {
    guard::call(|| {
        drop(READERS.remove(reader)?.value);
        Ok(())
    })
}

/// Writes the reader's root to `*root_out`.
///
/// # Safety
///
/// `root_out` is null or valid for writing one `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_root(reader: u64, root_out: *mut UbtBytes32) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let root_out = unsafe { Out::new(root_out, "root_out") }?;
        let root = READERS.read(reader, |reader| Ok(reader.root()))?;
        root_out.write(root.into());
        Ok(())
    })
}

/// `ubt_db_get` at the reader's root.
///
/// # Safety
///
/// As `ubt_db_get`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_get(
    reader: u64,
    key: *const UbtBytes32,
    value_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::get(&READERS, reader, key, value_out, found_out) }
}

/// `ubt_db_get_many` at the reader's root.
///
/// # Safety
///
/// As `ubt_db_get_many`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_get_many(
    reader: u64,
    keys: *const UbtBytes32,
    n_keys: usize,
    values_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::get_many(&READERS, reader, keys, n_keys, values_out, found_out) }
}

/// `ubt_db_account` at the reader's root.
///
/// # Safety
///
/// As `ubt_db_account`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_account(
    reader: u64,
    address: *const UbtAddress,
    account_out: *mut UbtAccount,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::account(&READERS, reader, address, account_out, found_out) }
}

/// `ubt_db_storage` at the reader's root.
///
/// # Safety
///
/// As `ubt_db_storage`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_storage(
    reader: u64,
    address: *const UbtAddress,
    slot: *const UbtBytes32,
    value_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::storage(&READERS, reader, address, slot, value_out, found_out) }
}

/// `ubt_db_code` at the reader's root (free the buffer with
/// `ubt_bytes_free`).
///
/// # Safety
///
/// As `ubt_db_code`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_code(
    reader: u64,
    address: *const UbtAddress,
    code_out: *mut UbtBytes,
    found_out: *mut u8,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::code(&READERS, reader, address, code_out, found_out) }
}

/// `ubt_db_prove` at the reader's root: the proof verifies against
/// `ubt_reader_root`.
///
/// # Safety
///
/// As `ubt_db_prove`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_reader_prove(
    reader: u64,
    keys: *const UbtBytes32,
    n_keys: usize,
    proof_out: *mut UbtBytes,
) -> i32 {
    // SAFETY: this function's contract, forwarded.
    unsafe { source::prove(&READERS, reader, keys, n_keys, proof_out) }
}

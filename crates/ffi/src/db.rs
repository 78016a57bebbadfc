//! Database handles: open (writable or read-only) and close.

use std::ffi::c_char;
use std::path::PathBuf;

use ubt_engine::{Db, Options};

use crate::error::FfiError;
use crate::guard;
use crate::handle::Registry;
use crate::options::UbtOptions;
use crate::ptr::{read, read_path, Out};
use crate::status::Status;

/// The open databases.
pub(crate) static DATABASES: Registry<Db> = Registry::new("database");

/// The arguments of both opens, read from the caller's pointers.
struct OpenArgs {
    path: PathBuf,
    options: Options,
    db_out: Out<u64>,
}

/// Reads the arguments of an open.
///
/// # Safety
///
/// As `ubt_db_open`.
#[allow(unsafe_code)] // Reads the caller's pointers.
unsafe fn open_args(
    path: *const c_char,
    options: *const UbtOptions,
    db_out: *mut u64,
) -> Result<OpenArgs, FfiError> {
    // SAFETY: the contract of `ubt_db_open`, forwarded: `path` is null or
    // NUL-terminated, `options` null or one readable UbtOptions, `db_out`
    // null or one writable uint64_t.
    let (path, options, db_out) = unsafe {
        let options = if options.is_null() {
            UbtOptions::defaults()
        } else {
            read(options, "options")?
        };
        (
            read_path(path, "path")?,
            options,
            Out::new(db_out, "db_out")?,
        )
    };
    Ok(OpenArgs {
        path,
        options: options.to_engine()?,
        db_out,
    })
}

/// Opens (creating it if `options.create_if_missing`) the database in
/// directory `path` for reading and writing, and writes its handle to
/// `*db_out`.
///
/// One writer per directory: a second writable open of the same
/// directory, from this process or another, fails with `UBT_ERR_LOCKED`.
/// `options` may be NULL for the defaults (`ubt_options_default`). The
/// handle may be used from any thread; close it with `ubt_db_close`.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string; `options` is null or points
/// to a readable `UbtOptions`; `db_out` is null or valid for writing one
/// `uint64_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_open(
    path: *const c_char,
    options: *const UbtOptions,
    db_out: *mut u64,
) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract, forwarded.
        let args = unsafe { open_args(path, options, db_out) }?;
        let db = Db::open(&args.path, args.options)?;
        args.db_out.write(DATABASES.insert(db));
        Ok(())
    })
}

/// Opens the database in directory `path` for reading only, and writes
/// its handle to `*db_out`.
///
/// A shared lock: any number of read-only handles at once, none while a
/// writer has the directory open. Nothing is written, not even by
/// recovery; writes on the handle fail with `UBT_ERR_READ_ONLY`.
/// `options.create_if_missing` is ignored: a directory without a
/// database is `UBT_ERR_NOT_FOUND`. `options` may be NULL for the
/// defaults.
///
/// # Safety
///
/// As `ubt_db_open`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_open_read_only(
    path: *const c_char,
    options: *const UbtOptions,
    db_out: *mut u64,
) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract, forwarded.
        let args = unsafe { open_args(path, options, db_out) }?;
        let db = Db::open_read_only(&args.path, args.options)?;
        args.db_out.write(DATABASES.insert(db));
        Ok(())
    })
}

/// Closes a database handle: persists every layer, checkpoints, and
/// releases the directory lock. Readers made from it stay valid (they
/// read the data they hold in memory) until closed themselves.
///
/// The handle is released whatever the status, unless it is
/// `UBT_ERR_BAD_HANDLE` (0, never issued, or already closed: closing twice
/// is that error). If the final checkpoint fails its error is returned
/// (the blocks persisted before are durable in the WAL). A poisoned handle
/// is released without a checkpoint and returns `UBT_ERR_POISONED`.
/// Waits for calls in flight on the handle in other threads.
#[allow(unsafe_code)] // `no_mangle`: the symbol is the ABI.
#[no_mangle]
pub extern "C" fn ubt_db_close(db: u64) -> i32 {
    guard::call(|| {
        let closed = DATABASES.remove(db)?;
        if closed.poisoned {
            drop(closed.value);
            return Err(FfiError::new(
                Status::Poisoned,
                format!("database handle {db} was poisoned; released without a checkpoint"),
            ));
        }
        closed.value.close()?;
        Ok(())
    })
}

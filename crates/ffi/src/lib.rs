//! # ubt-ffi
//!
//! The ubt engine through a small, stable C ABI (`include/ubt.h`, made
//! from this crate by cbindgen). The library builds as a static library
//! (`libubt_ffi.a`), a shared one (`libubt_ffi.so`) and an rlib.
//!
//! Conventions (see `README.md` of this crate for the whole picture):
//!
//! * Every function that can fail returns an `int32_t` status: `UBT_OK`
//!   (0) or one of the `UBT_ERR_*` codes, and sets the calling thread's
//!   last error message (`ubt_last_error_message`; empty after a success).
//! * Databases and readers are opaque `uint64_t` handles looked up in a
//!   registry: 0, a closed handle, a never-issued one or one of the other
//!   kind is `UBT_ERR_BAD_HANDLE`, never undefined behaviour. Handles are
//!   never reused.
//! * No panic crosses the boundary: a panic is `UBT_ERR_PANIC` and poisons
//!   the handle it used (`UBT_ERR_POISONED` until closed).
//! * Pointers are checked for null (`UBT_ERR_NULL_POINTER`) and alignment,
//!   lengths for overflow; arrays may be NULL when their length is 0.
//!   Outputs are written only on success.
//! * Fixed-size values are caller-provided structs (`UbtBytes32`,
//!   `UbtAddress`, `UbtAccount`, ...); variable-size results (code,
//!   proofs) are library-allocated `UbtBytes`, freed with `ubt_bytes_free`.
//!
//! The `extern "C"` functions are also Rust functions of this crate (its
//! tests call them directly).
#![deny(unsafe_op_in_unsafe_fn)]

// The exported items: cbindgen writes the header in this order.
mod version;

mod status;

mod last_error;

mod types;

mod options;

mod db;

mod block;

mod ops;

mod db_read;

mod bytes;

mod reader;

mod proof;

mod stats;

// The machinery behind them.
mod error;
mod guard;
mod handle;
mod ptr;
mod source;

#[cfg(test)]
mod panic_tests;

pub use block::{
    ubt_db_apply, ubt_db_apply_accounts, ubt_db_checkpoint, ubt_db_commit, ubt_db_committed_root,
    ubt_db_persist, ubt_db_revert, ubt_db_root,
};
pub use bytes::ubt_bytes_free;
pub use db::{ubt_db_close, ubt_db_open, ubt_db_open_read_only};
pub use db_read::{
    ubt_db_account, ubt_db_code, ubt_db_get, ubt_db_get_many, ubt_db_prove, ubt_db_storage,
};
pub use last_error::ubt_last_error_message;
pub use ops::{
    UbtAccountOp, UBT_OP_DELETE_ACCOUNT, UBT_OP_DELETE_STORAGE, UBT_OP_SET_ACCOUNT,
    UBT_OP_SET_CODE, UBT_OP_SET_STORAGE,
};
pub use options::{
    ubt_options_default, UbtOptions, UBT_READ_BACKEND_AUTO, UBT_READ_BACKEND_THREAD_POOL,
    UBT_SYNC_ALWAYS, UBT_SYNC_NEVER,
};
pub use proof::ubt_verify_proof;
pub use reader::{
    ubt_db_reader, ubt_reader_account, ubt_reader_close, ubt_reader_code, ubt_reader_get,
    ubt_reader_get_many, ubt_reader_prove, ubt_reader_root, ubt_reader_storage,
};
pub use stats::{ubt_db_stats, UbtStats, UBT_READ_BACKEND_NAME_BYTES};
pub use status::{
    ubt_status_name, UBT_ERR_BAD_HANDLE, UBT_ERR_BLOCK_TOO_LARGE, UBT_ERR_CORRUPTED,
    UBT_ERR_INTERNAL, UBT_ERR_INVALID_ARGUMENT, UBT_ERR_INVALID_OPTIONS, UBT_ERR_IO,
    UBT_ERR_KEY_NOT_PROVEN, UBT_ERR_LOCKED, UBT_ERR_MISSING_CODE_CHUNK, UBT_ERR_NOT_A_DATABASE,
    UBT_ERR_NOT_FOUND, UBT_ERR_NULL_POINTER, UBT_ERR_OWNERS_REQUIRED, UBT_ERR_PANIC,
    UBT_ERR_POISONED, UBT_ERR_PROOF_REJECTED, UBT_ERR_READ_ONLY, UBT_ERR_REVERT_TOO_DEEP,
    UBT_ERR_SNAPSHOT_REVERTED, UBT_ERR_UNKNOWN_ROOT, UBT_ERR_UNSUPPORTED_VERSION, UBT_OK,
};
pub use types::{UbtAccount, UbtAddress, UbtBytes, UbtBytes32, UbtWrite};
pub use version::{ubt_abi_version, UBT_ABI_VERSION};

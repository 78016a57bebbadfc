//! The status codes every entry point returns, and their names.
//!
//! The codes are part of the ABI: a code keeps its number forever; new
//! codes take new numbers.

use std::ffi::{c_char, CStr};

use crate::guard;

/// Success.
pub const UBT_OK: i32 = 0;
/// An argument is out of range or malformed: a length too large, a flag
/// that is not 0 or 1, an unknown enum value, a misaligned pointer, a path
/// that is empty or not valid, a buffer not handed out by this library.
pub const UBT_ERR_INVALID_ARGUMENT: i32 = 1;
/// A required pointer argument is null.
pub const UBT_ERR_NULL_POINTER: i32 = 2;
/// The handle is 0, was never issued, was closed, or names the other kind
/// of object (a reader handle given where a database handle is expected).
pub const UBT_ERR_BAD_HANDLE: i32 = 3;
/// The handle refuses calls: an earlier call on it panicked, or the
/// engine refuses writes after a failed write; close it and reopen.
pub const UBT_ERR_POISONED: i32 = 4;
/// The call panicked inside the library; the handle it used (if any) is
/// poisoned.
pub const UBT_ERR_PANIC: i32 = 5;
/// The operating system reported an I/O error.
pub const UBT_ERR_IO: i32 = 6;
/// Bytes on disk fail a check (checksum, structure or hash).
pub const UBT_ERR_CORRUPTED: i32 = 7;
/// The directory holds no database and creation was not requested.
pub const UBT_ERR_NOT_FOUND: i32 = 8;
/// The path is not a ubt database: unexpected files, wrong magic, a
/// symbolic link or a file that cannot be one.
pub const UBT_ERR_NOT_A_DATABASE: i32 = 9;
/// Another handle or process holds the database's lock.
pub const UBT_ERR_LOCKED: i32 = 10;
/// The options are out of range or do not match the database (its group
/// depth).
pub const UBT_ERR_INVALID_OPTIONS: i32 = 11;
/// The database uses an on-disk format this build does not read.
pub const UBT_ERR_UNSUPPORTED_VERSION: i32 = 12;
/// A write on a database opened read-only.
pub const UBT_ERR_READ_ONLY: i32 = 13;
/// No block with this root is within reach (in memory, or on disk for a
/// revert).
pub const UBT_ERR_UNKNOWN_ROOT: i32 = 14;
/// The root is older than the reverse diffs kept (`revert_depth`). The
/// engine reports such roots as `UBT_ERR_UNKNOWN_ROOT` today; the code is
/// kept for engines that tell the two apart.
pub const UBT_ERR_REVERT_TOO_DEEP: i32 = 15;
/// The reader's root was reverted away.
pub const UBT_ERR_SNAPSHOT_REVERTED: i32 = 16;
/// A block has more writes than one block may hold.
pub const UBT_ERR_BLOCK_TOO_LARGE: i32 = 17;
/// The database keeps a flat index of account values: writes must name
/// their accounts (use `ubt_db_apply_accounts`).
pub const UBT_ERR_OWNERS_REQUIRED: i32 = 18;
/// A proof does not decode, or does not verify against the root.
pub const UBT_ERR_PROOF_REJECTED: i32 = 19;
/// A key asked of `ubt_verify_proof` is not one the proof proves.
pub const UBT_ERR_KEY_NOT_PROVEN: i32 = 20;
/// An account's code size in BasicData is not backed by its code chunks.
pub const UBT_ERR_MISSING_CODE_CHUNK: i32 = 21;
/// An engine error this version of the ABI has no code for.
pub const UBT_ERR_INTERNAL: i32 = 22;

/// Why a call failed, inside the crate: each variant is one exported code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// [`UBT_ERR_INVALID_ARGUMENT`].
    InvalidArgument,
    /// [`UBT_ERR_NULL_POINTER`].
    NullPointer,
    /// [`UBT_ERR_BAD_HANDLE`].
    BadHandle,
    /// [`UBT_ERR_POISONED`].
    Poisoned,
    /// [`UBT_ERR_PANIC`].
    Panic,
    /// [`UBT_ERR_IO`].
    Io,
    /// [`UBT_ERR_CORRUPTED`].
    Corrupted,
    /// [`UBT_ERR_NOT_FOUND`].
    NotFound,
    /// [`UBT_ERR_NOT_A_DATABASE`].
    NotADatabase,
    /// [`UBT_ERR_LOCKED`].
    Locked,
    /// [`UBT_ERR_INVALID_OPTIONS`].
    InvalidOptions,
    /// [`UBT_ERR_UNSUPPORTED_VERSION`].
    UnsupportedVersion,
    /// [`UBT_ERR_READ_ONLY`].
    ReadOnly,
    /// [`UBT_ERR_UNKNOWN_ROOT`].
    UnknownRoot,
    /// [`UBT_ERR_REVERT_TOO_DEEP`].
    RevertTooDeep,
    /// [`UBT_ERR_SNAPSHOT_REVERTED`].
    SnapshotReverted,
    /// [`UBT_ERR_BLOCK_TOO_LARGE`].
    BlockTooLarge,
    /// [`UBT_ERR_OWNERS_REQUIRED`].
    OwnersRequired,
    /// [`UBT_ERR_PROOF_REJECTED`].
    ProofRejected,
    /// [`UBT_ERR_KEY_NOT_PROVEN`].
    KeyNotProven,
    /// [`UBT_ERR_MISSING_CODE_CHUNK`].
    MissingCodeChunk,
    /// [`UBT_ERR_INTERNAL`].
    Internal,
}

impl Status {
    /// Every failure status, in code order.
    pub(crate) const ALL: [Status; 22] = [
        Status::InvalidArgument,
        Status::NullPointer,
        Status::BadHandle,
        Status::Poisoned,
        Status::Panic,
        Status::Io,
        Status::Corrupted,
        Status::NotFound,
        Status::NotADatabase,
        Status::Locked,
        Status::InvalidOptions,
        Status::UnsupportedVersion,
        Status::ReadOnly,
        Status::UnknownRoot,
        Status::RevertTooDeep,
        Status::SnapshotReverted,
        Status::BlockTooLarge,
        Status::OwnersRequired,
        Status::ProofRejected,
        Status::KeyNotProven,
        Status::MissingCodeChunk,
        Status::Internal,
    ];

    /// The exported code and its name.
    const fn entry(self) -> (i32, &'static CStr) {
        match self {
            Status::InvalidArgument => (UBT_ERR_INVALID_ARGUMENT, c"UBT_ERR_INVALID_ARGUMENT"),
            Status::NullPointer => (UBT_ERR_NULL_POINTER, c"UBT_ERR_NULL_POINTER"),
            Status::BadHandle => (UBT_ERR_BAD_HANDLE, c"UBT_ERR_BAD_HANDLE"),
            Status::Poisoned => (UBT_ERR_POISONED, c"UBT_ERR_POISONED"),
            Status::Panic => (UBT_ERR_PANIC, c"UBT_ERR_PANIC"),
            Status::Io => (UBT_ERR_IO, c"UBT_ERR_IO"),
            Status::Corrupted => (UBT_ERR_CORRUPTED, c"UBT_ERR_CORRUPTED"),
            Status::NotFound => (UBT_ERR_NOT_FOUND, c"UBT_ERR_NOT_FOUND"),
            Status::NotADatabase => (UBT_ERR_NOT_A_DATABASE, c"UBT_ERR_NOT_A_DATABASE"),
            Status::Locked => (UBT_ERR_LOCKED, c"UBT_ERR_LOCKED"),
            Status::InvalidOptions => (UBT_ERR_INVALID_OPTIONS, c"UBT_ERR_INVALID_OPTIONS"),
            Status::UnsupportedVersion => {
                (UBT_ERR_UNSUPPORTED_VERSION, c"UBT_ERR_UNSUPPORTED_VERSION")
            }
            Status::ReadOnly => (UBT_ERR_READ_ONLY, c"UBT_ERR_READ_ONLY"),
            Status::UnknownRoot => (UBT_ERR_UNKNOWN_ROOT, c"UBT_ERR_UNKNOWN_ROOT"),
            Status::RevertTooDeep => (UBT_ERR_REVERT_TOO_DEEP, c"UBT_ERR_REVERT_TOO_DEEP"),
            Status::SnapshotReverted => (UBT_ERR_SNAPSHOT_REVERTED, c"UBT_ERR_SNAPSHOT_REVERTED"),
            Status::BlockTooLarge => (UBT_ERR_BLOCK_TOO_LARGE, c"UBT_ERR_BLOCK_TOO_LARGE"),
            Status::OwnersRequired => (UBT_ERR_OWNERS_REQUIRED, c"UBT_ERR_OWNERS_REQUIRED"),
            Status::ProofRejected => (UBT_ERR_PROOF_REJECTED, c"UBT_ERR_PROOF_REJECTED"),
            Status::KeyNotProven => (UBT_ERR_KEY_NOT_PROVEN, c"UBT_ERR_KEY_NOT_PROVEN"),
            Status::MissingCodeChunk => (UBT_ERR_MISSING_CODE_CHUNK, c"UBT_ERR_MISSING_CODE_CHUNK"),
            Status::Internal => (UBT_ERR_INTERNAL, c"UBT_ERR_INTERNAL"),
        }
    }

    /// The exported code.
    pub(crate) const fn code(self) -> i32 {
        self.entry().0
    }

    /// The code's name, as the header spells it.
    pub(crate) const fn name(self) -> &'static CStr {
        self.entry().1
    }
}

/// The name of a status code as the header spells it (`"UBT_OK"`,
/// `"UBT_ERR_BAD_HANDLE"`, ...), or `"UBT_ERR_UNKNOWN"` for a code this
/// version does not define. The string is static: never free it. Does not
/// change the last error message.
#[allow(unsafe_code)] // `no_mangle`: the symbol is the ABI.
#[no_mangle]
pub extern "C" fn ubt_status_name(status: i32) -> *const c_char {
    guard::infallible(c"UBT_ERR_UNKNOWN".as_ptr(), || {
        let name = if status == UBT_OK {
            c"UBT_OK"
        } else {
            Status::ALL
                .iter()
                .find(|known| known.code() == status)
                .map_or(c"UBT_ERR_UNKNOWN", |known| known.name())
        };
        name.as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_consecutive_and_named_after_themselves() {
        for (index, status) in Status::ALL.iter().enumerate() {
            assert_eq!(status.code(), i32::try_from(index).unwrap() + 1);
            let name = status.name().to_str().unwrap();
            assert!(name.starts_with("UBT_ERR_"), "{name}");
            // SAFETY: ubt_status_name returns a static NUL-terminated string.
            #[allow(unsafe_code)]
            let exported = unsafe { CStr::from_ptr(ubt_status_name(status.code())) };
            assert_eq!(exported, status.name());
        }
    }

    #[test]
    fn ok_and_unknown_codes_have_names() {
        // SAFETY: ubt_status_name returns static NUL-terminated strings.
        #[allow(unsafe_code)]
        let (ok, unknown, negative) = unsafe {
            (
                CStr::from_ptr(ubt_status_name(UBT_OK)),
                CStr::from_ptr(ubt_status_name(999)),
                CStr::from_ptr(ubt_status_name(-1)),
            )
        };
        assert_eq!(ok, c"UBT_OK");
        assert_eq!(unknown, c"UBT_ERR_UNKNOWN");
        assert_eq!(negative, c"UBT_ERR_UNKNOWN");
    }
}

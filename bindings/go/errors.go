package ubt

import "strconv"

// Code is a status code of the ubt C ABI. Every code other than OK is also
// an error, so the exported constants serve as sentinels:
//
//	if errors.Is(err, ubt.ErrUnknownRoot) { ... }
//
// Codes never change number.
type Code int32

// The status codes, as numbered in ubt.h.
const (
	// OK is success; it is never returned as an error.
	OK Code = 0
	// ErrInvalidArgument: a length too large, a flag not 0/1, an unknown
	// operation kind, an empty path, a code range beyond its buffer.
	ErrInvalidArgument Code = 1
	// ErrNullPointer: a required pointer was NULL (a bug in this package).
	ErrNullPointer Code = 2
	// ErrBadHandle: the database or reader is closed (or was never open).
	ErrBadHandle Code = 3
	// ErrPoisoned: an earlier call on the handle panicked, or the engine
	// refuses writes after a failed write; close and reopen.
	ErrPoisoned Code = 4
	// ErrPanic: the call panicked inside the library; the handle is
	// poisoned.
	ErrPanic Code = 5
	// ErrIO: the operating system reported an I/O error.
	ErrIO Code = 6
	// ErrCorrupted: bytes on disk fail a checksum, structure or hash check.
	ErrCorrupted Code = 7
	// ErrNotFound: no database in the directory and creation not requested.
	ErrNotFound Code = 8
	// ErrNotADatabase: the path holds something other than a database.
	ErrNotADatabase Code = 9
	// ErrLocked: another writer, or a writer beside read-only handles.
	ErrLocked Code = 10
	// ErrInvalidOptions: options out of range, or a group depth other
	// than the stored one.
	ErrInvalidOptions Code = 11
	// ErrUnsupportedVersion: an on-disk format this build does not read.
	ErrUnsupportedVersion Code = 12
	// ErrReadOnly: a write on a database opened read-only.
	ErrReadOnly Code = 13
	// ErrUnknownRoot: no block with this root within reach (revert,
	// reader, persist), including roots older than the revert window.
	ErrUnknownRoot Code = 14
	// ErrRevertTooDeep is reserved: the engine reports roots beyond the
	// revert window as ErrUnknownRoot.
	ErrRevertTooDeep Code = 15
	// ErrSnapshotReverted: a reader whose root was reverted away.
	ErrSnapshotReverted Code = 16
	// ErrBlockTooLarge: more writes than one block may hold (~16.7 M).
	ErrBlockTooLarge Code = 17
	// ErrOwnersRequired: tree-key writes on a database with a flat index;
	// use ApplyAccounts.
	ErrOwnersRequired Code = 18
	// ErrProofRejected: proof bytes that do not decode, or do not hash to
	// the root.
	ErrProofRejected Code = 19
	// ErrKeyNotProven: VerifyProof asked for a key the proof does not
	// prove.
	ErrKeyNotProven Code = 20
	// ErrMissingCodeChunk: an account's code size is not backed by its
	// code chunks.
	ErrMissingCodeChunk Code = 21
	// ErrInternal: an engine error the ABI has no code for.
	ErrInternal Code = 22
)

var codeNames = [...]string{
	"UBT_OK",
	"UBT_ERR_INVALID_ARGUMENT",
	"UBT_ERR_NULL_POINTER",
	"UBT_ERR_BAD_HANDLE",
	"UBT_ERR_POISONED",
	"UBT_ERR_PANIC",
	"UBT_ERR_IO",
	"UBT_ERR_CORRUPTED",
	"UBT_ERR_NOT_FOUND",
	"UBT_ERR_NOT_A_DATABASE",
	"UBT_ERR_LOCKED",
	"UBT_ERR_INVALID_OPTIONS",
	"UBT_ERR_UNSUPPORTED_VERSION",
	"UBT_ERR_READ_ONLY",
	"UBT_ERR_UNKNOWN_ROOT",
	"UBT_ERR_REVERT_TOO_DEEP",
	"UBT_ERR_SNAPSHOT_REVERTED",
	"UBT_ERR_BLOCK_TOO_LARGE",
	"UBT_ERR_OWNERS_REQUIRED",
	"UBT_ERR_PROOF_REJECTED",
	"UBT_ERR_KEY_NOT_PROVEN",
	"UBT_ERR_MISSING_CODE_CHUNK",
	"UBT_ERR_INTERNAL",
}

// String is the code's name as ubt.h spells it ("UBT_ERR_BAD_HANDLE"), or
// "UBT_ERR_UNKNOWN(n)" for a code this package does not know.
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "UBT_ERR_UNKNOWN(" + strconv.Itoa(int(c)) + ")"
}

// Error makes a Code usable as a sentinel error.
func (c Code) Error() string {
	return "ubt: " + c.String()
}

// Error is a failed call: the status code, the operation that failed and
// the library's message. It unwraps to its Code, so errors.Is(err,
// ubt.ErrReadOnly) tests the code.
type Error struct {
	// Code is the status code.
	Code Code
	// Op names the method that failed ("Apply", "Reader.Get", ...).
	Op string
	// Message is the library's description of the failure (may be empty).
	Message string
}

// Error formats the error as "ubt: Op: CODE_NAME: message".
func (e *Error) Error() string {
	s := "ubt: " + e.Op + ": " + e.Code.String()
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the error's Code.
func (e *Error) Unwrap() error {
	return e.Code
}

// closedErr is the error of a call on a closed database or reader; the
// library would answer UBT_ERR_BAD_HANDLE too.
func closedErr(op, what string) error {
	return &Error{Code: ErrBadHandle, Op: op, Message: what + " is closed"}
}

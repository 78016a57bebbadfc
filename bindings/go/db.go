package ubt

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"unsafe"
)

// DB is an open ubt database: the block engine over a store directory.
//
// A DB is safe for concurrent use: reads from any goroutine, writes
// (Apply, ApplyAccounts, Persist, Commit, Revert, Checkpoint) serialized
// by the library. Readers opened with Reader see a fixed root whatever
// the writer does next. Close releases the database; every call after it
// fails with ErrBadHandle, and a second Close does too.
type DB struct {
	handle C.uint64_t
}

// Open opens the database in directory path for reading and writing,
// creating it unless opts.NoCreate is set. A nil opts means the
// defaults.
func Open(path string, opts *Options) (*DB, error) {
	return open("Open", path, opts, false)
}

// OpenReadOnly opens the database in directory path for reading only:
// writes fail with ErrReadOnly, and nothing in the directory is written.
func OpenReadOnly(path string, opts *Options) (*DB, error) {
	return open("OpenReadOnly", path, opts, true)
}

func open(op, path string, opts *Options, readOnly bool) (*DB, error) {
	if got, want := ABIVersion(), uint32(C.UBT_ABI_VERSION); got != want {
		return nil, &Error{Code: ErrUnsupportedVersion, Op: op,
			Message: "library ABI version " + strconv.FormatUint(uint64(got), 10) + ", package built for " + strconv.FormatUint(uint64(want), 10) + "; rebuild the library with build.sh"}
	}
	copts, err := opts.toC()
	if err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var h C.uint64_t
	var s C.ubtgo_status
	if readOnly {
		s = C.ubtgo_db_open_read_only(cpath, &copts, &h)
	} else {
		s = C.ubtgo_db_open(cpath, &copts, &h)
	}
	if err := statusErr(op, s); err != nil {
		return nil, err
	}
	return &DB{handle: h}, nil
}

// Close persists nothing new by itself beyond what the engine does on
// close (a checkpoint of the persisted layers; layers never persisted are
// dropped) and releases the database. Readers opened from it stay usable
// until closed.
func (db *DB) Close() error {
	return statusErr("Close", C.ubtgo_db_close(db.handle))
}

// Apply applies a block of tree-key writes (in order; a later write to a
// key wins) as a new layer in memory and returns its root. Nothing is
// durable until Persist or Commit. On a database with a flat index it
// fails with ErrOwnersRequired: use ApplyAccounts.
func (db *DB) Apply(writes []Write) (Root, error) {
	var root Root
	var ptr *C.UbtWrite
	if len(writes) > 0 {
		ptr = (*C.UbtWrite)(unsafe.Pointer(&writes[0]))
	}
	s := C.ubtgo_db_apply(db.handle, ptr, C.size_t(len(writes)), c32((*[32]byte)(&root)))
	runtime.KeepAlive(writes)
	return root, statusErr("Apply", s)
}

// ApplyAccounts applies a block of account-level writes with
// go-ethereum's BinaryTrie semantics (see OpKind) as a new layer in
// memory and returns its root.
func (db *DB) ApplyAccounts(ops []AccountOp) (Root, error) {
	var root Root
	cops, code, err := accountOpsToC(ops)
	if err != nil {
		return root, err
	}
	var opsPtr *C.UbtAccountOp
	if len(cops) > 0 {
		opsPtr = &cops[0]
	}
	var codePtr *C.uint8_t
	if len(code) > 0 {
		codePtr = (*C.uint8_t)(unsafe.Pointer(&code[0]))
	}
	s := C.ubtgo_db_apply_accounts(db.handle, opsPtr, C.size_t(len(cops)), codePtr,
		C.size_t(len(code)), c32((*[32]byte)(&root)))
	runtime.KeepAlive(cops)
	runtime.KeepAlive(code)
	return root, statusErr("ApplyAccounts", s)
}

// Persist makes the layers up to the one with root durable (one WAL
// record). ErrUnknownRoot when no layer in memory has that root.
func (db *DB) Persist(root Root) error {
	return statusErr("Persist", C.ubtgo_db_persist(db.handle, c32((*[32]byte)(&root))))
}

// Commit makes every layer durable and returns the root.
func (db *DB) Commit() (Root, error) {
	var root Root
	return root, statusErr("Commit", C.ubtgo_db_commit(db.handle, c32((*[32]byte)(&root))))
}

// Revert goes back to the block with root: a layer in memory or one of
// the last RevertDepth persisted blocks. Readers at reverted roots then
// fail with ErrSnapshotReverted. ErrUnknownRoot (and no change) when no
// block within reach has that root.
func (db *DB) Revert(root Root) error {
	return statusErr("Revert", C.ubtgo_db_revert(db.handle, c32((*[32]byte)(&root))))
}

// Checkpoint persists every layer and writes the changed buckets and
// pages to the data file now.
func (db *DB) Checkpoint() error {
	return statusErr("Checkpoint", C.ubtgo_db_checkpoint(db.handle))
}

// Root is the root of everything applied (the tip).
func (db *DB) Root() (Root, error) {
	var root Root
	return root, statusErr("Root", C.ubtgo_db_root(db.handle, c32((*[32]byte)(&root))))
}

// CommittedRoot is the root of the last persisted layer.
func (db *DB) CommittedRoot() (Root, error) {
	var root Root
	return root, statusErr("CommittedRoot", C.ubtgo_db_committed_root(db.handle, c32((*[32]byte)(&root))))
}

// Reader opens a snapshot at root: the tip, any layer in memory, or the
// last persisted state. It sees exactly that state whatever the writer
// does next, until the root is reverted away; it may be used from any
// goroutine and outlives Close of the database. Close it when done: an
// open reader keeps the layers it needs in memory.
func (db *DB) Reader(root Root) (*Reader, error) {
	var h C.uint64_t
	if err := statusErr("Reader", C.ubtgo_db_reader(db.handle, c32((*[32]byte)(&root)), &h)); err != nil {
		return nil, err
	}
	return &Reader{handle: h}, nil
}

// Get reads the value at a tree key of the tip.
func (db *DB) Get(key [32]byte) (value [32]byte, found bool, err error) {
	return get("Get", 0, db.handle, key)
}

// GetMany reads the values at keys of the tip in one batch (the misses
// are read from disk concurrently).
func (db *DB) GetMany(keys [][32]byte) (values [][32]byte, found []bool, err error) {
	return getMany("GetMany", 0, db.handle, keys)
}

// Account reads the header of addr at the tip; found is false when the
// account is absent.
func (db *DB) Account(addr [20]byte) (account Account, found bool, err error) {
	return readAccount("Account", 0, db.handle, addr)
}

// Storage reads storage slot slot (big-endian) of addr at the tip.
func (db *DB) Storage(addr [20]byte, slot [32]byte) (value [32]byte, found bool, err error) {
	return readStorage("Storage", 0, db.handle, addr, slot)
}

// Code reads the code of addr at the tip, reassembled from its chunks
// (see Reader.Code for code whose size go-ethereum wrote as 0).
func (db *DB) Code(addr [20]byte) (code []byte, found bool, err error) {
	return readCode("Code", 0, db.handle, addr)
}

// Prove returns a proof of the values at keys (present or absent)
// against the tip's root, in ubt's proof encoding (VerifyProof checks
// it).
func (db *DB) Prove(keys [][32]byte) ([]byte, error) {
	return prove("Prove", 0, db.handle, keys)
}

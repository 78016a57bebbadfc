package ubt

/*
#include "shim.h"
*/
import "C"

// Reader is a snapshot of a database at one root (DB.Reader). It is safe
// for concurrent use from any goroutine, sees the same state whatever the
// writer does, and fails with ErrSnapshotReverted once its root is
// reverted away. Close releases the layers it keeps in memory; calls
// after Close, and a second Close, fail with ErrBadHandle.
type Reader struct {
	handle C.uint64_t
}

// Close releases the reader.
func (r *Reader) Close() error {
	return statusErr("Reader.Close", C.ubtgo_reader_close(r.handle))
}

// Root is the root the reader sees.
func (r *Reader) Root() (Root, error) {
	var root Root
	return root, statusErr("Reader.Root", C.ubtgo_reader_root(r.handle, c32((*[32]byte)(&root))))
}

// Get reads the value at a tree key.
func (r *Reader) Get(key [32]byte) (value [32]byte, found bool, err error) {
	return get("Reader.Get", 1, r.handle, key)
}

// GetMany reads the values at keys in one batch.
func (r *Reader) GetMany(keys [][32]byte) (values [][32]byte, found []bool, err error) {
	return getMany("Reader.GetMany", 1, r.handle, keys)
}

// Account reads the header of addr; found is false when it is absent.
func (r *Reader) Account(addr [20]byte) (account Account, found bool, err error) {
	return readAccount("Reader.Account", 1, r.handle, addr)
}

// Storage reads storage slot slot (big-endian) of addr.
func (r *Reader) Storage(addr [20]byte, slot [32]byte) (value [32]byte, found bool, err error) {
	return readStorage("Reader.Storage", 1, r.handle, addr, slot)
}

// Code reads the code of addr, reassembled from its chunks (by the code
// size in BasicData; when that code does not hash to the account's code
// hash, the shortest prefix of the chunks that does: go-ethereum writes
// code size 0 for a contract it updates without loading its code).
func (r *Reader) Code(addr [20]byte) (code []byte, found bool, err error) {
	return readCode("Reader.Code", 1, r.handle, addr)
}

// Prove returns a proof of the values at keys against the reader's root.
func (r *Reader) Prove(keys [][32]byte) ([]byte, error) {
	return prove("Reader.Prove", 1, r.handle, keys)
}

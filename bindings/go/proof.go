package ubt

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// VerifyProof checks proof (from Prove) against root and returns the
// proven value of each of keys (found false: proven absent). It needs no
// database. ErrProofRejected when the proof does not decode or does not
// hash to root; ErrKeyNotProven when a key is not covered by it.
func VerifyProof(proof []byte, root Root, keys [][32]byte) (values [][32]byte, found []bool, err error) {
	values = make([][32]byte, len(keys))
	flags := make([]byte, len(keys))
	var proofPtr, flagsPtr *C.uint8_t
	if len(proof) > 0 {
		proofPtr = (*C.uint8_t)(unsafe.Pointer(&proof[0]))
	}
	if len(flags) > 0 {
		flagsPtr = (*C.uint8_t)(unsafe.Pointer(&flags[0]))
	}
	s := C.ubtgo_verify_proof(proofPtr, C.size_t(len(proof)), c32((*[32]byte)(&root)), ptr32(keys),
		C.size_t(len(keys)), ptr32(values), flagsPtr)
	runtime.KeepAlive(proof)
	runtime.KeepAlive(keys)
	if err := statusErr("VerifyProof", s); err != nil {
		return nil, nil, err
	}
	found = make([]bool, len(keys))
	for i, f := range flags {
		found[i] = f != 0
	}
	return values, found, nil
}

package ubt

// The link against the ubt-ffi static library that build.sh builds and
// copies to lib/libubt_ffi.a in this folder, and the system libraries
// Rust's standard library needs on Linux with glibc.

/*
#cgo CFLAGS: -I${SRCDIR}/../../crates/ffi/include
#cgo LDFLAGS: ${SRCDIR}/lib/libubt_ffi.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import "unsafe"

// statusErr turns a wrapper's status into nil or an *Error for op, and
// frees the message buffer the wrapper allocated.
func statusErr(op string, s C.ubtgo_status) error {
	if s.code == C.UBT_OK {
		return nil
	}
	msg := ""
	if s.msg != nil {
		msg = C.GoStringN(s.msg, C.int(s.msg_len))
		C.free(unsafe.Pointer(s.msg))
	}
	return &Error{Code: Code(s.code), Op: op, Message: msg}
}

// takeBytes copies a library buffer into Go memory and frees it. An empty
// buffer gives an empty, non-nil slice.
func takeBytes(op string, b *C.UbtBytes) ([]byte, error) {
	n := int(b.len)
	out := make([]byte, n)
	if n > 0 {
		copy(out, unsafe.Slice((*byte)(unsafe.Pointer(b.data)), n))
	}
	if err := statusErr(op, C.ubtgo_bytes_free(b)); err != nil {
		return nil, err
	}
	return out, nil
}

// ptr32 is the address of the first of keys as the C type, or nil when
// keys is empty. [32]byte and UbtBytes32 have the same size and alignment.
func ptr32(keys [][32]byte) *C.UbtBytes32 {
	if len(keys) == 0 {
		return nil
	}
	return (*C.UbtBytes32)(unsafe.Pointer(&keys[0]))
}

// c32 is the address of a 32-byte array as the C type.
func c32(b *[32]byte) *C.UbtBytes32 {
	return (*C.UbtBytes32)(unsafe.Pointer(b))
}

// c20 is the address of a 20-byte array as the C type.
func c20(b *[20]byte) *C.UbtAddress {
	return (*C.UbtAddress)(unsafe.Pointer(b))
}

// Compile-time checks that the Go types cast to C types have the same
// size (a negative array length fails to compile otherwise).
var (
	_ [unsafe.Sizeof([32]byte{}) - C.sizeof_UbtBytes32]byte
	_ [C.sizeof_UbtBytes32 - unsafe.Sizeof([32]byte{})]byte
	_ [unsafe.Sizeof([20]byte{}) - C.sizeof_UbtAddress]byte
	_ [C.sizeof_UbtAddress - unsafe.Sizeof([20]byte{})]byte
	_ [unsafe.Sizeof(Write{}) - C.sizeof_UbtWrite]byte
	_ [C.sizeof_UbtWrite - unsafe.Sizeof(Write{})]byte
)

// ABIVersion is the ABI version of the linked library. The package
// checks it against the header it was compiled with when opening a
// database.
func ABIVersion() uint32 {
	return uint32(C.ubt_abi_version())
}

// headerABIVersion is the ABI version of the header compiled against.
const headerABIVersion = C.UBT_ABI_VERSION

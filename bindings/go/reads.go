package ubt

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// The reads shared by DB (isReader 0, at the tip) and Reader (isReader 1,
// at the reader's root).

func get(op string, isReader C.int, h C.uint64_t, key [32]byte) (value [32]byte, found bool, err error) {
	var f C.uint8_t
	s := C.ubtgo_get(isReader, h, c32(&key), c32(&value), &f)
	if err = statusErr(op, s); err != nil {
		return [32]byte{}, false, err
	}
	return value, f != 0, nil
}

func getMany(op string, isReader C.int, h C.uint64_t, keys [][32]byte) ([][32]byte, []bool, error) {
	values := make([][32]byte, len(keys))
	flags := make([]byte, len(keys))
	var flagsPtr *C.uint8_t
	if len(flags) > 0 {
		flagsPtr = (*C.uint8_t)(unsafe.Pointer(&flags[0]))
	}
	s := C.ubtgo_get_many(isReader, h, ptr32(keys), C.size_t(len(keys)), ptr32(values), flagsPtr)
	runtime.KeepAlive(keys)
	if err := statusErr(op, s); err != nil {
		return nil, nil, err
	}
	found := make([]bool, len(keys))
	for i, f := range flags {
		found[i] = f != 0
	}
	return values, found, nil
}

func readAccount(op string, isReader C.int, h C.uint64_t, addr [20]byte) (Account, bool, error) {
	var c C.UbtAccount
	var f C.uint8_t
	if err := statusErr(op, C.ubtgo_account(isReader, h, c20(&addr), &c, &f)); err != nil {
		return Account{}, false, err
	}
	if f == 0 {
		return Account{}, false, nil
	}
	return accountFromC(&c), true, nil
}

func readStorage(op string, isReader C.int, h C.uint64_t, addr [20]byte, slot [32]byte) ([32]byte, bool, error) {
	var value [32]byte
	var f C.uint8_t
	if err := statusErr(op, C.ubtgo_storage(isReader, h, c20(&addr), c32(&slot), c32(&value), &f)); err != nil {
		return [32]byte{}, false, err
	}
	return value, f != 0, nil
}

func readCode(op string, isReader C.int, h C.uint64_t, addr [20]byte) ([]byte, bool, error) {
	var b C.UbtBytes
	var f C.uint8_t
	if err := statusErr(op, C.ubtgo_code(isReader, h, c20(&addr), &b, &f)); err != nil {
		return nil, false, err
	}
	code, err := takeBytes(op, &b)
	if err != nil {
		return nil, false, err
	}
	if f == 0 {
		return nil, false, nil
	}
	return code, true, nil
}

func prove(op string, isReader C.int, h C.uint64_t, keys [][32]byte) ([]byte, error) {
	var b C.UbtBytes
	s := C.ubtgo_prove(isReader, h, ptr32(keys), C.size_t(len(keys)), &b)
	runtime.KeepAlive(keys)
	if err := statusErr(op, s); err != nil {
		return nil, err
	}
	return takeBytes(op, &b)
}

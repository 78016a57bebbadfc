package ubt

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// Account is an account header: what go-ethereum's GetAccount reads, plus
// the code size BasicData records.
type Account struct {
	// Nonce is the account's nonce.
	Nonce uint64
	// Balance is a 256-bit big-endian number. Read back it holds the 128
	// bits stored; written, a balance of 2^128 or more is truncated as
	// go-ethereum truncates it.
	Balance [32]byte
	// CodeHash is keccak256 of the code.
	CodeHash [32]byte
	// CodeSize is the code size recorded in BasicData (whatever the writer
	// gave).
	CodeSize uint32
}

func accountFromC(c *C.UbtAccount) Account {
	return Account{
		Nonce:    uint64(c.nonce),
		Balance:  *(*[32]byte)(unsafe.Pointer(&c.balance)),
		CodeHash: *(*[32]byte)(unsafe.Pointer(&c.code_hash)),
		CodeSize: uint32(c.code_size),
	}
}

func (a *Account) toC() C.UbtAccount {
	var c C.UbtAccount
	c.nonce = C.uint64_t(a.Nonce)
	c.balance = *(*C.UbtBytes32)(unsafe.Pointer(&a.Balance))
	c.code_hash = *(*C.UbtBytes32)(unsafe.Pointer(&a.CodeHash))
	c.code_size = C.uint32_t(a.CodeSize)
	return c
}

// OpKind is the kind of an account-level write, with go-ethereum's
// semantics.
type OpKind uint32

const (
	// OpSetAccount is go-ethereum's UpdateAccount: writes the BasicData
	// leaf (version 0, code size, nonce, balance) and the CodeHash leaf.
	OpSetAccount OpKind = C.UBT_OP_SET_ACCOUNT
	// OpSetStorage is UpdateStorage: writes Value at storage slot Slot.
	OpSetStorage OpKind = C.UBT_OP_SET_STORAGE
	// OpDeleteStorage is DeleteStorage: writes 32 zero bytes at slot Slot
	// (a present zero, which hashes differently from an absent slot).
	OpDeleteStorage OpKind = C.UBT_OP_DELETE_STORAGE
	// OpSetCode is UpdateContractCode: writes the 31-byte chunks of Code
	// and nothing else (BasicData and CodeHash are OpSetAccount's; chunks
	// past a shorter new code keep their old values). Empty code writes
	// nothing.
	OpSetCode OpKind = C.UBT_OP_SET_CODE
	// OpDeleteAccount is DeleteAccount: writes 32 zero bytes to the
	// BasicData and CodeHash leaves only; storage and code chunks stay.
	OpDeleteAccount OpKind = C.UBT_OP_DELETE_ACCOUNT
)

// String names the kind ("SetAccount", ...).
func (k OpKind) String() string {
	switch k {
	case OpSetAccount:
		return "SetAccount"
	case OpSetStorage:
		return "SetStorage"
	case OpDeleteStorage:
		return "DeleteStorage"
	case OpSetCode:
		return "SetCode"
	case OpDeleteAccount:
		return "DeleteAccount"
	}
	return fmt.Sprintf("OpKind(%d)", uint32(k))
}

// AccountOp is one account-level write of a block. Kind says which fields
// are used; the others are ignored. The constructors SetAccount,
// SetStorage, DeleteStorage, SetCode and DeleteAccount fill the right
// ones.
type AccountOp struct {
	// Kind is the operation.
	Kind OpKind
	// Address is the account written to (every kind).
	Address [20]byte
	// Account is the header written by OpSetAccount.
	Account Account
	// Slot is the storage slot number, big-endian (OpSetStorage,
	// OpDeleteStorage).
	Slot [32]byte
	// Value is the 32-byte storage value (OpSetStorage).
	Value [32]byte
	// Code is the contract code (OpSetCode). It is copied during
	// ApplyAccounts and not kept.
	Code []byte
}

// SetAccount is the operation writing account's header at addr.
func SetAccount(addr [20]byte, account Account) AccountOp {
	return AccountOp{Kind: OpSetAccount, Address: addr, Account: account}
}

// SetStorage is the operation writing value at storage slot slot of addr.
func SetStorage(addr [20]byte, slot, value [32]byte) AccountOp {
	return AccountOp{Kind: OpSetStorage, Address: addr, Slot: slot, Value: value}
}

// DeleteStorage is the operation zeroing storage slot slot of addr.
func DeleteStorage(addr [20]byte, slot [32]byte) AccountOp {
	return AccountOp{Kind: OpDeleteStorage, Address: addr, Slot: slot}
}

// SetCode is the operation writing the code chunks of code at addr.
func SetCode(addr [20]byte, code []byte) AccountOp {
	return AccountOp{Kind: OpSetCode, Address: addr, Code: code}
}

// DeleteAccount is the operation zeroing the header leaves of addr.
func DeleteAccount(addr [20]byte) AccountOp {
	return AccountOp{Kind: OpDeleteAccount, Address: addr}
}

// accountOpsToC converts ops to the C structs and the one code buffer
// their OpSetCode ranges point into (both in Go memory without Go
// pointers, as cgo requires).
func accountOpsToC(ops []AccountOp) ([]C.UbtAccountOp, []byte, error) {
	total := 0
	for i := range ops {
		if ops[i].Kind == OpSetCode {
			if len(ops[i].Code) > math.MaxInt-total {
				return nil, nil, &Error{Code: ErrInvalidArgument, Op: "ApplyAccounts", Message: "code too large"}
			}
			total += len(ops[i].Code)
		}
	}
	code := make([]byte, 0, total)
	cops := make([]C.UbtAccountOp, len(ops))
	for i := range ops {
		op := &ops[i]
		c := &cops[i]
		c.kind = C.uint32_t(op.Kind)
		c.address = *c20(&op.Address)
		switch op.Kind {
		case OpSetAccount:
			c.account = op.Account.toC()
		case OpSetStorage:
			c.slot = *c32(&op.Slot)
			c.value = *c32(&op.Value)
		case OpDeleteStorage:
			c.slot = *c32(&op.Slot)
		case OpSetCode:
			c.code_offset = C.size_t(len(code))
			c.code_len = C.size_t(len(op.Code))
			code = append(code, op.Code...)
		}
	}
	return cops, code, nil
}

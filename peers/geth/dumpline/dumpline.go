// Package dumpline decodes the lines of go-ethereum's iterative state dump
// (`geth dump --iterative`) with go-ethereum's own record type,
// state.DumpAccount, and checks what a line can prove. The dump tools under
// cmd/ share it.
package dumpline

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// Account is one decoded dump line.
type Account struct {
	Addr     common.Address
	Nonce    uint64
	Balance  uint256.Int
	Code     []byte
	CodeHash common.Hash
	Keys     []common.Hash // storage keys and values, non-zero values only
	Vals     []common.Hash
}

// Entries is the number of binary-trie leaves the account makes.
func (a *Account) Entries() uint64 {
	return 2 + (uint64(len(a.Code))+30)/31 + uint64(len(a.Keys))
}

// ErrNoAddress marks an account line without "address": go-ethereum had no
// preimage of its key (`geth dump --incompletes`).
var ErrNoAddress = errors.New("account line has a key but no address (missing preimage)")

// DecodeAccount decodes an account line with go-ethereum's own dump record
// (state.DumpAccount) and checks what the line can prove: the code hashes
// to codeHash (a dump made with --nocode cannot be imported) and an account
// whose storage root is not empty lists storage (--nostorage).
func DecodeAccount(line []byte) (*Account, error) {
	var d state.DumpAccount
	if err := json.Unmarshal(line, &d); err != nil {
		return nil, err
	}
	if d.Address == nil {
		if len(d.AddressHash) == 0 {
			return nil, errors.New("account line has neither address nor key")
		}
		return nil, ErrNoAddress
	}
	a := &Account{Addr: *d.Address, Nonce: d.Nonce, Code: d.Code}
	var err error
	if strings.HasPrefix(d.Balance, "0x") {
		err = a.Balance.SetFromHex(d.Balance)
	} else {
		err = a.Balance.SetFromDecimal(d.Balance)
	}
	if err != nil {
		return nil, fmt.Errorf("%x: balance %q: %v", a.Addr, d.Balance, err)
	}
	a.CodeHash = crypto.Keccak256Hash(d.Code)
	if len(d.CodeHash) > 0 && common.BytesToHash(d.CodeHash) != a.CodeHash {
		return nil, fmt.Errorf("%x: code does not hash to codeHash (dump written with --nocode?)", a.Addr)
	}
	if len(d.Storage) == 0 && len(d.Root) > 0 && common.BytesToHash(d.Root) != types.EmptyRootHash {
		return nil, fmt.Errorf("%x: storage root is not empty but the line lists no storage (dump written with --nostorage?)", a.Addr)
	}
	a.Keys = make([]common.Hash, 0, len(d.Storage))
	a.Vals = make([]common.Hash, 0, len(d.Storage))
	for k, v := range d.Storage {
		raw, err := hex.DecodeString(strings.TrimPrefix(v, "0x"))
		if err != nil || len(raw) > common.HashLength {
			return nil, fmt.Errorf("%x: storage value %q of slot %x", a.Addr, v, k)
		}
		if val := common.BytesToHash(raw); val != (common.Hash{}) {
			a.Keys = append(a.Keys, k)
			a.Vals = append(a.Vals, val)
		}
	}
	return a, nil
}

// RootLine decodes the first line, {"root":"0x…"}.
func RootLine(line []byte) (common.Hash, error) {
	var head struct {
		Root    *common.Hash `json:"root"`
		Balance *string      `json:"balance"`
	}
	if err := json.Unmarshal(line, &head); err != nil || head.Root == nil || head.Balance != nil {
		return common.Hash{}, errors.New(`line 1 is not the dump's {"root":…} line`)
	}
	return *head.Root, nil
}

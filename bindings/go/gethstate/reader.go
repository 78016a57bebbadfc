package gethstate

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	ubt "github.com/ubt/bindings/go"
)

// reader is the state.Reader over one ubt snapshot. The snapshot is closed
// by a cleanup when the reader becomes unreachable; every method keeps the
// reader alive until its call into the library has returned.
type reader struct {
	snap *ubt.Reader
}

// reader implements state.Reader.
var _ state.Reader = (*reader)(nil)

// newReader wraps snap; release closes it once the reader is unreachable.
func newReader(snap *ubt.Reader, release func(*ubt.Reader)) *reader {
	r := &reader{snap: snap}
	runtime.AddCleanup(r, release, snap)
	return r
}

// Account returns the account at addr, nil when it is absent.
func (r *reader) Account(addr common.Address) (*types.StateAccount, error) {
	acc, found, err := r.snap.Account(addr)
	runtime.KeepAlive(r)
	if err != nil {
		return nil, fmt.Errorf("gethstate: account %x: %w", addr, err)
	}
	if !found {
		return nil, nil
	}
	return toStateAccount(&acc), nil
}

// toStateAccount is go-ethereum's view of a ubt account header, with Root
// left zero as bintrie's GetAccount leaves it.
func toStateAccount(acc *ubt.Account) *types.StateAccount {
	return &types.StateAccount{
		Nonce:    acc.Nonce,
		Balance:  new(uint256.Int).SetBytes32(acc.Balance[:]),
		CodeHash: bytes.Clone(acc.CodeHash[:]),
	}
}

// Storage returns the value of slot of addr, the zero hash when absent.
func (r *reader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	value, _, err := r.snap.Storage(addr, slot)
	runtime.KeepAlive(r)
	if err != nil {
		return common.Hash{}, fmt.Errorf("gethstate: storage %x slot %x: %w", addr, slot, err)
	}
	return common.Hash(value), nil
}

// Code returns the code of addr when its code hash is codeHash, nil
// otherwise (absent account, other code, empty code, unreadable code).
// The library recovers code whose BasicData size go-ethereum wrote as 0
// from its chunks by the hash (ubt.Reader.Code), so the code read here is
// checked against codeHash and nothing else.
func (r *reader) Code(addr common.Address, codeHash common.Hash) []byte {
	defer runtime.KeepAlive(r)
	if codeHash == types.EmptyCodeHash {
		return nil
	}
	acc, found, err := r.snap.Account(addr)
	if err != nil || !found || common.Hash(acc.CodeHash) != codeHash {
		return nil
	}
	code, found, err := r.snap.Code(addr)
	if err != nil || !found || len(code) == 0 || crypto.Keccak256Hash(code) != codeHash {
		return nil
	}
	return code
}

// CodeSize returns the size of Code(addr, codeHash).
func (r *reader) CodeSize(addr common.Address, codeHash common.Hash) int {
	return len(r.Code(addr, codeHash))
}

// Has reports whether Code(addr, codeHash) is not nil.
func (r *reader) Has(addr common.Address, codeHash common.Hash) bool {
	return len(r.Code(addr, codeHash)) > 0
}

package gethstate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie/bintrie"
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
func (r *reader) Code(addr common.Address, codeHash common.Hash) []byte {
	if codeHash == types.EmptyCodeHash {
		return nil
	}
	acc, found, err := r.snap.Account(addr)
	if err != nil || !found || common.Hash(acc.CodeHash) != codeHash {
		runtime.KeepAlive(r)
		return nil
	}
	code, found, err := r.snap.Code(addr)
	if err == nil && found && len(code) > 0 && crypto.Keccak256Hash(code) == codeHash {
		runtime.KeepAlive(r)
		return code
	}
	// The code size in BasicData does not give the code: go-ethereum wrote
	// a wrong one (see the package documentation). Recover the code from
	// the chunks.
	code = recoverCode(r.snap, addr, codeHash)
	runtime.KeepAlive(r)
	return code
}

// maxRecoveredChunks bounds the chunks recoverCode reads (4 MiB of code).
const maxRecoveredChunks = 1 << 17

// recoverCode reassembles the code of addr whose hash is codeHash from its
// code chunks alone, without the code size: it reads the chunks up to the
// first absent one and returns the shortest prefix of their code bytes
// that hashes to codeHash (nil if none does). The chunks past the end of
// the code, if any, are those of an older, longer code and are not part
// of any matching prefix.
func recoverCode(snap *ubt.Reader, addr common.Address, codeHash common.Hash) []byte {
	var raw []byte
	for first := uint64(0); first < maxRecoveredChunks; first += bintrie.StemNodeWidth {
		keys := make([][32]byte, bintrie.StemNodeWidth)
		for i := range keys {
			// The key of chunk n, as bintrie's UpdateContractCode derives it
			// (its GetBinaryTreeKeyCodeChunk panics on short offsets).
			var offset [32]byte
			binary.BigEndian.PutUint64(offset[24:], first+uint64(i)+128)
			keys[i] = [32]byte(bintrie.GetBinaryTreeKey(addr, offset[:]))
		}
		values, found, err := snap.GetMany(keys)
		if err != nil {
			return nil
		}
		complete := true
		for i := range values {
			if !found[i] {
				complete = false
				break
			}
			raw = append(raw, values[i][1:]...)
		}
		if !complete {
			break
		}
	}
	h := crypto.NewKeccakState()
	var sum common.Hash
	for n := 1; n <= len(raw); n++ {
		h.Write(raw[n-1 : n])
		if common.BytesToHash(h.Sum(sum[:0])) == codeHash {
			return raw[:n]
		}
	}
	return nil
}

// CodeSize returns the size of Code(addr, codeHash).
func (r *reader) CodeSize(addr common.Address, codeHash common.Hash) int {
	return len(r.Code(addr, codeHash))
}

// Has reports whether Code(addr, codeHash) is not nil.
func (r *reader) Has(addr common.Address, codeHash common.Hash) bool {
	return len(r.Code(addr, codeHash)) > 0
}

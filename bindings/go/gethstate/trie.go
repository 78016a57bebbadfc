package gethstate

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/trienode"

	ubt "github.com/ubt/bindings/go"
)

// Trie is the state.Trie of a Database, opened at the tip by OpenTrie. It
// buffers writes in order and applies them to the ubt database as one
// block layer when hashed, committed or read (see the package
// documentation). It is safe for concurrent use.
type Trie struct {
	d *Database

	mu   sync.Mutex
	ops  []ubt.AccountOp // writes not yet applied, in order
	root common.Hash     // the root after the last applied writes
	err  error           // the first failed ApplyAccounts; the trie is then unusable
}

// Trie implements state.Trie.
var _ state.Trie = (*Trie)(nil)

// flush applies the buffered writes as one block layer. t.mu must be held.
func (t *Trie) flush() error {
	if t.err != nil {
		return t.err
	}
	if len(t.ops) == 0 {
		return nil
	}
	root, err := t.d.db.ApplyAccounts(t.ops)
	t.ops = nil
	if err != nil {
		t.err = fmt.Errorf("gethstate: applying the trie's writes: %w", err)
		t.d.setFlushErr(t.err)
		return t.err
	}
	t.root = common.Hash(root)
	return nil
}

func (t *Trie) push(ops ...ubt.AccountOp) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	t.ops = append(t.ops, ops...)
	return nil
}

// GetKey returns nil: the adapter keeps no preimages.
func (t *Trie) GetKey([]byte) []byte {
	return nil
}

// GetAccount applies the buffered writes and reads the account at address
// from the tip; nil when it is absent.
func (t *Trie) GetAccount(address common.Address) (*types.StateAccount, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.flush(); err != nil {
		return nil, err
	}
	acc, found, err := t.d.db.Account(address)
	if err != nil {
		return nil, fmt.Errorf("gethstate: account %x: %w", address, err)
	}
	if !found {
		return nil, nil
	}
	return toStateAccount(&acc), nil
}

// PrefetchAccount does nothing.
func (t *Trie) PrefetchAccount([]common.Address) error {
	return nil
}

// GetStorage applies the buffered writes and reads slot key (32 bytes) of
// addr from the tip: its 32-byte value, nil when absent.
func (t *Trie) GetStorage(addr common.Address, key []byte) ([]byte, error) {
	slot, err := slotKey(key)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.flush(); err != nil {
		return nil, err
	}
	value, found, err := t.d.db.Storage(addr, slot)
	if err != nil {
		return nil, fmt.Errorf("gethstate: storage %x slot %x: %w", addr, key, err)
	}
	if !found {
		return nil, nil
	}
	return value[:], nil
}

// PrefetchStorage does nothing.
func (t *Trie) PrefetchStorage(addr common.Address, keys [][]byte) error {
	return nil
}

// slotKey is a storage slot key as bintrie takes it: exactly 32 bytes.
func slotKey(key []byte) ([32]byte, error) {
	if len(key) != 32 {
		return [32]byte{}, fmt.Errorf("gethstate: storage key of %d bytes, want 32", len(key))
	}
	return [32]byte(key), nil
}

// UpdateAccount buffers the write of account's header (nonce, balance,
// code hash, code size codeLen) at address.
func (t *Trie) UpdateAccount(address common.Address, account *types.StateAccount, codeLen int) error {
	return t.push(accountOp(address, account, codeLen))
}

func accountOp(address common.Address, account *types.StateAccount, codeLen int) ubt.AccountOp {
	acc := ubt.Account{
		Nonce:    account.Nonce,
		CodeHash: [32]byte(common.BytesToHash(account.CodeHash)),
		CodeSize: uint32(codeLen), // as bintrie: uint32(codeLen)
	}
	if account.Balance != nil {
		acc.Balance = account.Balance.Bytes32()
	}
	return ubt.SetAccount(address, acc)
}

// UpdateAccountBatch buffers UpdateAccount of each account in turn.
func (t *Trie) UpdateAccountBatch(addresses []common.Address, accounts []*types.StateAccount, codeLengths []int) error {
	if len(addresses) != len(accounts) || len(addresses) != len(codeLengths) {
		return fmt.Errorf("gethstate: UpdateAccountBatch with %d addresses, %d accounts, %d code lengths",
			len(addresses), len(accounts), len(codeLengths))
	}
	ops := make([]ubt.AccountOp, len(addresses))
	for i, addr := range addresses {
		ops[i] = accountOp(addr, accounts[i], codeLengths[i])
	}
	return t.push(ops...)
}

// UpdateStorage buffers the write of value at slot key (32 bytes) of addr.
// As in bintrie, the value is left-padded to 32 bytes, or cut to its first
// 32 bytes; an empty value writes 32 zero bytes.
func (t *Trie) UpdateStorage(addr common.Address, key, value []byte) error {
	op, err := storageOp(addr, key, value)
	if err != nil {
		return err
	}
	return t.push(op)
}

func storageOp(addr common.Address, key, value []byte) (ubt.AccountOp, error) {
	slot, err := slotKey(key)
	if err != nil {
		return ubt.AccountOp{}, err
	}
	var v [32]byte
	if len(value) >= 32 {
		copy(v[:], value[:32])
	} else {
		copy(v[32-len(value):], value)
	}
	return ubt.SetStorage(addr, slot, v), nil
}

// UpdateStorageBatch buffers UpdateStorage of each slot in turn.
func (t *Trie) UpdateStorageBatch(addr common.Address, keys [][]byte, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("gethstate: UpdateStorageBatch with %d keys, %d values", len(keys), len(values))
	}
	ops := make([]ubt.AccountOp, len(keys))
	for i := range keys {
		op, err := storageOp(addr, keys[i], values[i])
		if err != nil {
			return err
		}
		ops[i] = op
	}
	return t.push(ops...)
}

// DeleteAccount buffers the zeroing of the header leaves (BasicData and
// CodeHash) of address; its storage and code chunks stay, as in bintrie.
func (t *Trie) DeleteAccount(address common.Address) error {
	return t.push(ubt.DeleteAccount(address))
}

// DeleteStorage buffers the write of 32 zero bytes at slot key of addr,
// as bintrie does.
func (t *Trie) DeleteStorage(addr common.Address, key []byte) error {
	slot, err := slotKey(key)
	if err != nil {
		return err
	}
	return t.push(ubt.DeleteStorage(addr, slot))
}

// UpdateContractCode buffers the write of the code chunks of code at
// address (the header is UpdateAccount's).
func (t *Trie) UpdateContractCode(address common.Address, codeHash common.Hash, code []byte) error {
	return t.push(ubt.SetCode(address, bytes.Clone(code)))
}

// Hash applies the buffered writes as one block layer and returns the
// root; with nothing buffered, the root the trie is at. After a failed
// write it returns the zero hash (the error is reported by GetAccount,
// GetStorage and Database.Commit).
func (t *Trie) Hash() common.Hash {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.flush(); err != nil {
		return common.Hash{}
	}
	return t.root
}

// Commit is Hash, with an empty node set: the nodes are in ubt.
func (t *Trie) Commit(collectLeaf bool) (common.Hash, *trienode.NodeSet) {
	return t.Hash(), trienode.NewNodeSet(common.Hash{})
}

// Witness returns an empty set: the adapter records no accessed nodes.
func (t *Trie) Witness() map[string][]byte {
	return map[string][]byte{}
}

// NodeIterator fails: ubt's nodes are not exposed to go-ethereum.
func (t *Trie) NodeIterator(startKey []byte) (trie.NodeIterator, error) {
	return nil, fmt.Errorf("gethstate: node iteration is %w", errNotSupported)
}

// Prove fails: go-ethereum's proof format is not ubt's. Proofs of a ubt
// state come from ubt.DB.Prove and ubt.Reader.Prove.
func (t *Trie) Prove(key []byte, proofDb ethdb.KeyValueWriter) error {
	return fmt.Errorf("gethstate: Trie.Prove is %w (ubt proofs come from ubt.DB.Prove and ubt.Reader.Prove)", errNotSupported)
}

// IsUBT returns true.
func (t *Trie) IsUBT() bool {
	return true
}

package main

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/holiman/uint256"
)

// blockExecutor runs a block in the three timed phases of
// docs/workload-format.md.
type blockExecutor interface {
	// read performs every read of the block (state read).
	read(b *block) error
	// apply applies the writes and computes the new root (state hash).
	apply(b *block) (common.Hash, error)
	// commit makes the new state durable (commit).
	commit(b *block) error
	// root is the root of the last committed state.
	root() common.Hash
	// witness is Witness() of the trie that served the last committed
	// block: the node blobs it resolved, keyed by geth's path keys; nil
	// unless the executor records (run --witness).
	witness() map[string][]byte
}

// statedbExec replays accounts-mode blocks through geth's state layer: a
// fresh StateDB over the parent root per block, as geth's block processor
// makes one.
//
// With rec set (run --witness), the StateDB reads and writes through one
// binary trie opened at the parent root (recordingState), kept as done
// after the commit for its Witness().
type statedbExec struct {
	sdb state.Database
	// code returns the code with a hash from the engine's code store
	// (nil when it holds none).
	code func(hash common.Hash) ([]byte, error)
	// persist makes the committed state durable (see store.persist).
	persist func(root, parent common.Hash) error

	parent  common.Hash
	st      *state.StateDB
	newRoot common.Hash

	rec  *recordingState
	tr   *bintrie.BinaryTrie // the block's trie when recording
	done *bintrie.BinaryTrie // the last committed block's trie when recording
}

func (e *statedbExec) root() common.Hash { return e.parent }

func (e *statedbExec) witness() map[string][]byte {
	if e.done == nil {
		return nil
	}
	return e.done.Witness()
}

func (e *statedbExec) read(b *block) error {
	var (
		st  *state.StateDB
		err error
	)
	if e.rec != nil {
		st, e.tr, err = e.rec.open(e.parent)
	} else {
		st, err = state.New(e.parent, e.sdb)
	}
	if err != nil {
		return err
	}
	e.st = st
	for i := range b.reads {
		r := &b.reads[i]
		switch r.kind {
		case recAccount:
			st.GetBalance(r.addr)
			st.GetNonce(r.addr)
			st.GetCodeHash(r.addr)
		case recSlot:
			st.GetState(r.addr, r.key)
		}
	}
	// The EVM has loaded the code of every contract the block modifies (it
	// ran it). geth's binary-trie StateDB depends on that: it writes the
	// length of the loaded code into BasicData when it rewrites an account,
	// so without the load a written contract would get code size 0.
	seen := make(map[common.Address]struct{})
	for i := range b.writes {
		addr := b.writes[i].addr
		if _, ok := seen[addr]; ok {
			continue
		}
		seen[addr] = struct{}{}
		if h := st.GetCodeHash(addr); h != (common.Hash{}) && h != types.EmptyCodeHash {
			st.GetCode(addr)
		}
	}
	return st.Error()
}

func (e *statedbExec) apply(b *block) (common.Hash, error) {
	st := e.st
	for i := range b.writes {
		w := &b.writes[i]
		switch w.kind {
		case recSlot:
			st.SetState(w.addr, w.key, w.value)
		case recAccount:
			st.SetNonce(w.addr, w.nonce, tracing.NonceChangeUnspecified)
			st.SetBalance(w.addr, new(uint256.Int).Set(&w.balance), tracing.BalanceChangeUnspecified)
			if st.GetCodeHash(w.addr) != w.codeHash {
				if err := e.setCode(b, w); err != nil {
					return common.Hash{}, err
				}
			}
		}
	}
	root := st.IntermediateRoot(stateRules)
	if err := st.Error(); err != nil {
		return common.Hash{}, err
	}
	e.newRoot = root
	return root, nil
}

// setCode gives an account new code. The write names only its hash and
// size, so the code must already be in geth's code store (deployed before).
func (e *statedbExec) setCode(b *block, w *access) error {
	var code []byte
	if w.codeHash != types.EmptyCodeHash {
		var err error
		if code, err = e.code(w.codeHash); err != nil {
			return err
		}
		if code == nil || crypto.Keccak256Hash(code) != w.codeHash {
			return badInput("block %d: account %x gets code %x, which the database does not hold (the peer replays writes, it cannot create code)", b.number, w.addr, w.codeHash)
		}
	}
	if uint64(len(code)) != w.codeSize {
		return badInput("block %d: account %x: code %x has %d bytes, the write says %d", b.number, w.addr, w.codeHash, len(code), w.codeSize)
	}
	e.st.SetCode(w.addr, code, tracing.CodeChangeUnspecified)
	return nil
}

func (e *statedbExec) commit(b *block) error {
	root, err := e.st.Commit(stateRules, b.number)
	if err != nil {
		return err
	}
	if root != e.newRoot {
		return fmt.Errorf("block %d: commit root %x differs from the hashed root %x", b.number, root, e.newRoot)
	}
	if err := e.persist(root, e.parent); err != nil {
		return err
	}
	e.parent, e.st = root, nil
	e.done, e.tr = e.tr, nil
	return nil
}

// newStatedbExec replays accounts-mode blocks on a geth store (Pebble).
func newStatedbExec(s *store, parent common.Hash) *statedbExec {
	return &statedbExec{
		sdb:     s.sdb,
		code:    func(h common.Hash) ([]byte, error) { return rawdb.ReadCode(s.db, h), nil },
		persist: s.persist,
		parent:  parent,
	}
}

// rawExec runs raw-mode blocks on one raw trie, reopened at the parent root
// for every block. With record set (run --witness), the committed block's
// trie is kept as done for its Witness().
type rawExec struct {
	s      *store
	opts   *engineOpts
	parent common.Hash
	tr     rawTrie
	keys   []common.Hash
	vals   [][]byte
	record bool
	done   rawTrie
}

func (e *rawExec) root() common.Hash { return e.parent }

func (e *rawExec) witness() map[string][]byte {
	if e.done == nil {
		return nil
	}
	return e.done.witness()
}

func (e *rawExec) read(b *block) error {
	tr, err := openRawTrie(e.s.tdb, e.opts, e.parent)
	if err != nil {
		return err
	}
	e.tr = tr
	for i := range b.reads {
		if _, err := tr.get(b.reads[i].key); err != nil {
			return err
		}
	}
	return nil
}

func (e *rawExec) apply(b *block) (common.Hash, error) {
	e.keys, e.vals = e.keys[:0], e.vals[:0]
	for i := range b.writes {
		e.keys = append(e.keys, b.writes[i].key)
		e.vals = append(e.vals, b.writes[i].value[:])
	}
	if err := e.tr.update(e.keys, e.vals); err != nil {
		return common.Hash{}, err
	}
	return e.tr.hash(), nil
}

func (e *rawExec) commit(b *block) error {
	root, set := e.tr.commit()
	if err := e.s.commitNodes(root, e.parent, b.number, set); err != nil {
		return err
	}
	if e.record {
		e.done = e.tr
	}
	e.parent, e.tr = root, nil
	return nil
}

package main

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"
)

// stateRules are the fork rules handed to StateDB. Only two matter to it
// here: EIP-158 is off so that accounts with zero nonce, zero balance and no
// code are written rather than deleted (ubt writes every account record),
// and Cancun makes the state update carry plain storage keys, as a current
// chain does.
var stateRules = params.Rules{IsCancun: true}

// emptyRoot is the root of an empty state for the engine.
func emptyRoot(engine string) common.Hash {
	if engine == engineBintrie {
		return types.EmptyBinaryHash
	}
	return types.EmptyRootHash
}

// commitFunc makes the nodes of a chunk durable (nil: keep in memory).
type commitFunc func(root, parent common.Hash, block uint64, set *trienode.NodeSet) error

// stateLoader applies state.jsonl records and commits them in chunks.
type stateLoader interface {
	add(recs []stateRecord) error
	// hash is the root of everything added so far.
	hash() common.Hash
	// commit makes everything added so far durable and returns the root.
	commit(block uint64) (common.Hash, error)
}

// bintrieLoader writes accounts-mode records straight into geth's binary
// trie with the calls StateDB makes at commit (UpdateAccount, then
// UpdateContractCode for new code; UpdateStorage, or DeleteStorage for a
// zero value), without StateDB's per-slot read of the previous value.
type bintrieLoader struct {
	tdb      *triedb.Database
	gd       int
	tr       *bintrie.BinaryTrie
	root     common.Hash // last committed root
	codes    ethdb.Batch // contract code, written before each commit (nil: not kept)
	commitFn commitFunc
}

func newBintrieLoader(tdb *triedb.Database, gd int, codes ethdb.Batch, commitFn commitFunc) (*bintrieLoader, error) {
	l := &bintrieLoader{tdb: tdb, gd: gd, root: types.EmptyBinaryHash, codes: codes, commitFn: commitFn}
	return l, l.reopen()
}

func (l *bintrieLoader) reopen() error {
	tr, err := bintrie.NewBinaryTrie(l.root, l.tdb, l.gd)
	if err != nil {
		return err
	}
	l.tr = tr
	return nil
}

func (l *bintrieLoader) add(recs []stateRecord) error {
	for i := range recs {
		r := &recs[i]
		switch r.kind {
		case recAccount:
			codeHash := types.EmptyCodeHash
			if len(r.code) > 0 {
				codeHash = crypto.Keccak256Hash(r.code)
			}
			acct := &types.StateAccount{Nonce: r.nonce, Balance: &r.balance, Root: types.EmptyRootHash, CodeHash: codeHash[:]}
			if err := l.tr.UpdateAccount(r.addr, acct, len(r.code)); err != nil {
				return err
			}
			if len(r.code) > 0 {
				if err := l.tr.UpdateContractCode(r.addr, codeHash, r.code); err != nil {
					return err
				}
				if l.codes != nil {
					rawdb.WriteCode(l.codes, codeHash, r.code)
				}
			}
		case recSlot:
			var err error
			if r.value == (common.Hash{}) {
				err = l.tr.DeleteStorage(r.addr, r.key[:])
			} else {
				err = l.tr.UpdateStorage(r.addr, r.key[:], common.TrimLeftZeroes(r.value[:]))
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("record kind %d in an accounts-mode load", r.kind)
		}
	}
	return nil
}

func (l *bintrieLoader) hash() common.Hash { return l.tr.Hash() }

func (l *bintrieLoader) commit(block uint64) (common.Hash, error) {
	if l.codes != nil && l.codes.ValueSize() > 0 {
		if err := l.codes.Write(); err != nil {
			return common.Hash{}, err
		}
		l.codes.Reset()
	}
	root, set := l.tr.Commit(false)
	if err := l.commitFn(root, l.root, block, set); err != nil {
		return common.Hash{}, err
	}
	l.root = root
	return root, l.reopen()
}

// statedbLoader loads accounts-mode records through geth's StateDB (MPT;
// tests also run it on the binary trie to check bintrieLoader). StateDB.Commit
// hands the trie nodes, the flat state (snapshot) and the code to the
// databases; persist then makes the path database flush them.
type statedbLoader struct {
	sdb     state.Database
	st      *state.StateDB
	root    common.Hash
	persist func(root, parent common.Hash) error
}

func newStatedbLoader(sdb state.Database, root common.Hash, persist func(root, parent common.Hash) error) (*statedbLoader, error) {
	l := &statedbLoader{sdb: sdb, root: root, persist: persist}
	st, err := state.New(root, sdb)
	if err != nil {
		return nil, err
	}
	l.st = st
	return l, nil
}

func (l *statedbLoader) add(recs []stateRecord) error {
	for i := range recs {
		r := &recs[i]
		switch r.kind {
		case recAccount:
			l.st.SetNonce(r.addr, r.nonce, tracing.NonceChangeUnspecified)
			l.st.SetBalance(r.addr, new(uint256.Int).Set(&r.balance), tracing.BalanceChangeUnspecified) // StateDB keeps the pointer
			if len(r.code) > 0 {
				l.st.SetCode(r.addr, r.code, tracing.CodeChangeUnspecified)
			} else if h := l.st.GetCodeHash(r.addr); h != types.EmptyCodeHash && h != (common.Hash{}) {
				l.st.SetCode(r.addr, nil, tracing.CodeChangeUnspecified) // a later record without code replaces it
			}
		case recSlot:
			l.st.SetState(r.addr, r.key, r.value)
		default:
			return fmt.Errorf("record kind %d in an accounts-mode load", r.kind)
		}
	}
	return l.st.Error()
}

func (l *statedbLoader) hash() common.Hash { return l.st.IntermediateRoot(stateRules) }

func (l *statedbLoader) commit(block uint64) (common.Hash, error) {
	root, err := l.st.Commit(stateRules, block)
	if err != nil {
		return common.Hash{}, err
	}
	if err := l.persist(root, l.root); err != nil {
		return common.Hash{}, err
	}
	l.root = root
	st, err := state.New(root, l.sdb)
	if err != nil {
		return common.Hash{}, err
	}
	l.st = st
	return root, nil
}

// rawLoader loads raw-mode records into one raw trie.
type rawLoader struct {
	tdb      *triedb.Database
	opts     *engineOpts
	tr       rawTrie
	root     common.Hash
	commitFn commitFunc
	keys     []common.Hash
	vals     [][]byte
}

func newRawLoader(tdb *triedb.Database, opts *engineOpts, commitFn commitFunc) (*rawLoader, error) {
	l := &rawLoader{tdb: tdb, opts: opts, root: emptyRoot(opts.engine), commitFn: commitFn}
	tr, err := openRawTrie(tdb, opts, l.root)
	if err != nil {
		return nil, err
	}
	l.tr = tr
	return l, nil
}

func (l *rawLoader) add(recs []stateRecord) error {
	// The trie keeps the value slices: give them one fresh slab per batch.
	slab := make([]byte, len(recs)*common.HashLength)
	l.keys, l.vals = l.keys[:0], l.vals[:0]
	for i := range recs {
		if recs[i].kind != recRaw {
			return fmt.Errorf("record kind %d in a raw-mode load", recs[i].kind)
		}
		v := slab[i*common.HashLength : (i+1)*common.HashLength : (i+1)*common.HashLength]
		copy(v, recs[i].value[:])
		l.keys = append(l.keys, recs[i].key)
		l.vals = append(l.vals, v)
	}
	return l.tr.update(l.keys, l.vals)
}

func (l *rawLoader) hash() common.Hash { return l.tr.hash() }

func (l *rawLoader) commit(block uint64) (common.Hash, error) {
	root, set := l.tr.commit()
	if err := l.commitFn(root, l.root, block, set); err != nil {
		return common.Hash{}, err
	}
	l.root = root
	tr, err := openRawTrie(l.tdb, l.opts, root)
	if err != nil {
		return common.Hash{}, err
	}
	l.tr = tr
	return root, nil
}

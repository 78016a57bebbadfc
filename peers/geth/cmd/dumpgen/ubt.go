package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/holiman/uint256"
	"github.com/ubt/peers/geth/dumpline"
)

// account is one account of a state, as generated or read from a dump.
type account struct {
	addr    common.Address
	nonce   uint64
	balance *uint256.Int
	code    []byte
	storage map[common.Hash]common.Hash // non-zero values only
}

// chunks is the number of 31-byte code chunks of the account.
func (a *account) chunks() uint64 { return (uint64(len(a.code)) + 30) / 31 }

// treeEntries is the number of binary-trie leaves the account makes: basic
// data and code hash, one per code chunk, one per storage slot.
func (a *account) treeEntries() uint64 { return 2 + a.chunks() + uint64(len(a.storage)) }

// ubtState is a binary-trie StateDB in memory, fed with the call sequence
// of go-ethereum's genesis (core/genesis.go hashAlloc).
type ubtState struct {
	tdb *triedb.Database
	st  *state.StateDB
}

func newUBTState() (*ubtState, error) {
	tdb := triedb.NewDatabase(rawdb.NewMemoryDatabase(), &triedb.Config{
		PathDB:            pathdb.Defaults,
		IsUBT:             true,
		BinTrieGroupDepth: triedb.UBTDefaults.BinTrieGroupDepth,
	})
	st, err := state.New(types.EmptyBinaryHash, state.NewDatabase(tdb, nil))
	if err != nil {
		tdb.Close()
		return nil, err
	}
	return &ubtState{tdb: tdb, st: st}, nil
}

// apply adds one account: AddBalance, SetCode, SetNonce, SetState per slot.
func (u *ubtState) apply(a *account) {
	u.st.AddBalance(a.addr, new(uint256.Int).Set(a.balance), tracing.BalanceIncreaseGenesisBalance)
	u.st.SetCode(a.addr, a.code, tracing.CodeChangeGenesis)
	u.st.SetNonce(a.addr, a.nonce, tracing.NonceChangeGenesis)
	for k, v := range a.storage {
		u.st.SetState(a.addr, k, v)
	}
}

// commit returns the root with empty fork rules (empty accounts are kept).
func (u *ubtState) commit() (common.Hash, error) {
	defer u.tdb.Close()
	return u.st.Commit(params.Rules{}, 0)
}

// ubtRootOf is the UBT root of a list of accounts.
func ubtRootOf(accts []*account) (common.Hash, error) {
	u, err := newUBTState()
	if err != nil {
		return common.Hash{}, err
	}
	for _, a := range accts {
		u.apply(a)
	}
	return u.commit()
}

// decodeDumpLine converts one account line of an iterative dump, decoded
// and checked by dumpline, into an account.
func decodeDumpLine(line []byte) (*account, error) {
	d, err := dumpline.DecodeAccount(line)
	if err != nil {
		return nil, err
	}
	balance := d.Balance
	a := &account{addr: d.Addr, nonce: d.Nonce, balance: &balance, code: d.Code, storage: make(map[common.Hash]common.Hash, len(d.Keys))}
	for i, k := range d.Keys {
		a.storage[k] = d.Vals[i]
	}
	return a, nil
}

// readDump reads an iterative dump: the root line, then one account per
// line. Accounts without an address are counted in skipped.
func readDump(r io.Reader) (root common.Hash, accts []*account, skipped int, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if n == 1 {
				r, err := dumpline.RootLine(line)
				if err != nil {
					return root, nil, 0, err
				}
				root = r
			} else {
				a, err := decodeDumpLine(line)
				switch {
				case errors.Is(err, dumpline.ErrNoAddress):
					skipped++
				case err != nil:
					return root, nil, 0, fmt.Errorf("line %d: %v", n, err)
				default:
					accts = append(accts, a)
				}
			}
		}
		if rerr == io.EOF {
			return root, accts, skipped, nil
		}
		if rerr != nil {
			return root, nil, 0, rerr
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/holiman/uint256"
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

// errNoAddress marks a dump line without "address" (missing preimage).
var errNoAddress = errors.New("account without address (missing preimage)")

// decodeDumpLine converts one account line of an iterative dump (decoded
// with go-ethereum's own state.DumpAccount) into an account. It checks what
// the line can prove: the code matches codeHash, and an account whose
// storage root is not empty lists storage.
func decodeDumpLine(line []byte) (*account, error) {
	var d state.DumpAccount
	if err := json.Unmarshal(line, &d); err != nil {
		return nil, err
	}
	if d.Address == nil {
		if len(d.AddressHash) == 0 {
			return nil, errors.New("line has neither address nor key")
		}
		return nil, errNoAddress
	}
	bal, err := uint256.FromDecimal(d.Balance)
	if err != nil {
		return nil, fmt.Errorf("balance %q: %v", d.Balance, err)
	}
	a := &account{addr: *d.Address, nonce: d.Nonce, balance: bal, code: d.Code, storage: make(map[common.Hash]common.Hash, len(d.Storage))}
	if len(d.CodeHash) > 0 && crypto.Keccak256Hash(d.Code) != common.BytesToHash(d.CodeHash) {
		return nil, fmt.Errorf("%x: code does not match codeHash (dump written without code?)", a.addr)
	}
	if len(d.Storage) == 0 && len(d.Root) > 0 && common.BytesToHash(d.Root) != types.EmptyRootHash {
		return nil, fmt.Errorf("%x: storage root is not empty but the line has no storage (dump written without storage?)", a.addr)
	}
	for k, v := range d.Storage {
		raw, err := hex.DecodeString(strings.TrimPrefix(v, "0x"))
		if err != nil || len(raw) > 32 {
			return nil, fmt.Errorf("%x: storage value %q", a.addr, v)
		}
		if val := common.BytesToHash(raw); val != (common.Hash{}) {
			a.storage[k] = val
		}
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
				var head struct {
					Root *common.Hash `json:"root"`
				}
				if err := json.Unmarshal(line, &head); err != nil || head.Root == nil {
					return root, nil, 0, fmt.Errorf("line 1 is not the root line")
				}
				root = *head.Root
			} else {
				a, err := decodeDumpLine(line)
				switch {
				case errors.Is(err, errNoAddress):
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

package gethstate

import (
	"bytes"
	"errors"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"

	ubt "github.com/ubt/bindings/go"
)

// rules are Prague-era rules: EIP-158 empty-account deletion, Cancun's
// plain storage keys in the state update.
var rules = params.Rules{
	IsHomestead: true, IsEIP150: true, IsEIP155: true, IsEIP158: true,
	IsByzantium: true, IsConstantinople: true, IsPetersburg: true, IsIstanbul: true,
	IsBerlin: true, IsLondon: true, IsMerge: true, IsShanghai: true, IsCancun: true, IsPrague: true,
}

// gethSide is go-ethereum's own binary-trie state database over an
// in-memory key-value store (path database, IsUBT), as geth sets it up.
func newGethDatabase() state.Database {
	disk := rawdb.NewMemoryDatabase()
	tdb := triedb.NewDatabase(disk, triedb.UBTDefaults)
	return state.NewUBTDatabase(tdb, nil)
}

func openUBT(t testing.TB, dir string) *ubt.DB {
	t.Helper()
	db, err := ubt.Open(dir, nil)
	if err != nil {
		t.Fatalf("ubt.Open: %v", err)
	}
	return db
}

// reopenUBT opens the database in dir after its DB was closed. The
// directory stays locked while readers opened from the closed DB are
// alive, and the adapter's state.Readers are only closed by their cleanups
// once unreachable: collect garbage until they have run.
func reopenUBT(t testing.TB, dir string) *ubt.DB {
	t.Helper()
	for i := 0; ; i++ {
		runtime.GC()
		db, err := ubt.Open(dir, nil)
		if err == nil {
			return db
		}
		if !errors.Is(err, ubt.ErrLocked) || i == 200 {
			t.Fatalf("ubt.Open after close (attempt %d): %v", i+1, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// op is one state mutation, applied identically to both StateDBs.
type op func(s *state.StateDB)

// tx is a sequence of ops followed by Finalise (EIP-158 deletion of empty
// touched accounts and of self-destructed ones).
type tx []op

// touched records every address and slot a test touched, for the read
// comparisons.
type touched struct {
	addrs map[common.Address]struct{}
	slots map[common.Address]map[common.Hash]struct{}
}

func newTouched() *touched {
	return &touched{addrs: map[common.Address]struct{}{}, slots: map[common.Address]map[common.Hash]struct{}{}}
}

func (tc *touched) addr(a common.Address) {
	tc.addrs[a] = struct{}{}
}

func (tc *touched) slot(a common.Address, k common.Hash) {
	tc.addr(a)
	if tc.slots[a] == nil {
		tc.slots[a] = map[common.Hash]struct{}{}
	}
	tc.slots[a][k] = struct{}{}
}

// randomCode is n bytes of code, with PUSH opcodes so that chunks carry
// push-data offsets.
func randomCode(rng *rand.Rand, n int) []byte {
	code := make([]byte, n)
	rng.Read(code)
	for i := 0; i < n; i += 7 + rng.Intn(40) {
		code[i] = 0x60 + byte(rng.Intn(32)) // PUSH1..PUSH32
	}
	return code
}

func u256(v uint64) *uint256.Int { return uint256.NewInt(v) }

// Op constructors.

func opAddBalance(a common.Address, v uint64) op {
	return func(s *state.StateDB) { s.AddBalance(a, u256(v), tracing.BalanceChangeUnspecified) }
}

// opSubBalance subtracts up to v (never below zero).
func opSubBalance(a common.Address, v uint64) op {
	return func(s *state.StateDB) {
		amt := u256(v)
		if bal := s.GetBalance(a); bal.Cmp(amt) < 0 {
			amt = bal.Clone()
		}
		s.SubBalance(a, amt, tracing.BalanceChangeUnspecified)
	}
}

// opDrain sets the balance to zero (with nonce 0 and no code the account
// becomes empty and EIP-158 deletes it at Finalise).
func opDrain(a common.Address) op {
	return func(s *state.StateDB) {
		s.SubBalance(a, s.GetBalance(a).Clone(), tracing.BalanceChangeUnspecified)
	}
}

func opIncNonce(a common.Address) op {
	return func(s *state.StateDB) { s.SetNonce(a, s.GetNonce(a)+1, tracing.NonceChangeUnspecified) }
}

func opSetState(a common.Address, k, v common.Hash) op {
	return func(s *state.StateDB) { s.SetState(a, k, v) }
}

// opDeploy creates a contract at a with code (nonce 1), as CREATE does.
func opDeploy(a common.Address, code []byte) op {
	return func(s *state.StateDB) {
		if !s.Exist(a) {
			s.CreateAccount(a)
		}
		s.CreateContract(a)
		s.SetNonce(a, 1, tracing.NonceChangeUnspecified)
		s.SetCode(a, code, tracing.CodeChangeUnspecified)
	}
}

func opSelfDestruct(a common.Address) op {
	return func(s *state.StateDB) { s.SelfDestruct(a) }
}

// opReadCode loads the code into the state object (as a CALL would), so
// that the account's next UpdateAccount carries its real code size.
func opReadCode(a common.Address) op {
	return func(s *state.StateDB) { _ = s.GetCode(a) }
}

// execBlock applies txs to s and commits it as block number.
func execBlock(t *testing.T, s *state.StateDB, number uint64, txs []tx) common.Hash {
	t.Helper()
	for _, tx := range txs {
		for _, o := range tx {
			o(s)
		}
		s.Finalise(rules)
	}
	root, err := s.Commit(rules, number)
	if err != nil {
		t.Fatalf("block %d: commit: %v", number, err)
	}
	return root
}

// compareReads opens fresh StateDBs at the two roots and compares the
// reads of every touched address and slot (plus the given extra ones).
func compareReads(t *testing.T, label string, ubtDB, gethDB state.Database, ubtRoot, gethRoot common.Hash, tc *touched, extra []common.Address) {
	t.Helper()
	us, err := state.New(ubtRoot, ubtDB)
	if err != nil {
		t.Fatalf("%s: state.New over ubt at %s: %v", label, ubtRoot, err)
	}
	gs, err := state.New(gethRoot, gethDB)
	if err != nil {
		t.Fatalf("%s: state.New over geth at %s: %v", label, gethRoot, err)
	}
	addrs := make([]common.Address, 0, len(tc.addrs)+len(extra))
	for a := range tc.addrs {
		addrs = append(addrs, a)
	}
	addrs = append(addrs, extra...)
	for _, a := range addrs {
		if u, g := us.Exist(a), gs.Exist(a); u != g {
			t.Errorf("%s: Exist(%x): ubt %v, geth %v", label, a, u, g)
		}
		if u, g := us.GetBalance(a), gs.GetBalance(a); !u.Eq(g) {
			t.Errorf("%s: GetBalance(%x): ubt %v, geth %v", label, a, u, g)
		}
		if u, g := us.GetNonce(a), gs.GetNonce(a); u != g {
			t.Errorf("%s: GetNonce(%x): ubt %d, geth %d", label, a, u, g)
		}
		if u, g := us.GetCodeHash(a), gs.GetCodeHash(a); u != g {
			t.Errorf("%s: GetCodeHash(%x): ubt %s, geth %s", label, a, u, g)
		}
		if u, g := us.GetCode(a), gs.GetCode(a); !bytes.Equal(u, g) {
			t.Errorf("%s: GetCode(%x): ubt %d bytes, geth %d bytes", label, a, len(u), len(g))
		}
		if u, g := us.GetCodeSize(a), gs.GetCodeSize(a); u != g {
			t.Errorf("%s: GetCodeSize(%x): ubt %d, geth %d", label, a, u, g)
		}
		slots := []common.Hash{{}, common.HexToHash("0xdeadbeef")} // never written
		for k := range tc.slots[a] {
			slots = append(slots, k)
		}
		for _, k := range slots {
			if u, g := us.GetState(a, k), gs.GetState(a, k); u != g {
				t.Errorf("%s: GetState(%x, %x): ubt %x, geth %x", label, a, k, u, g)
			}
		}
	}
	if err := us.Error(); err != nil {
		t.Errorf("%s: ubt StateDB error: %v", label, err)
	}
	if err := gs.Error(); err != nil {
		t.Errorf("%s: geth StateDB error: %v", label, err)
	}
}

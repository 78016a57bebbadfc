package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/holiman/uint256"
)

const (
	smallDump       = "small.jsonl"
	smallExpected   = "expected.json"
	missingDump     = "small-missing-preimages.jsonl"
	missingExpected = "expected-missing-preimages.json"
)

// expected describes a dump file and the UBT root of what it imports.
type expected struct {
	File            string `json:"file"`
	UBTRoot         string `json:"ubtRoot"`
	MPTRoot         string `json:"mptRoot"`
	Accounts        int    `json:"accounts"`        // accounts imported (lines with an address)
	SkippedAccounts int    `json:"skippedAccounts"` // lines without address (missing preimage)
	StorageSlots    uint64 `json:"storageSlots"`
	CodeBytes       uint64 `json:"codeBytes"`
	TreeEntries     uint64 `json:"treeEntries"`
}

func summarize(file string, mptRoot, ubtRoot common.Hash, accts []*account, skipped int) *expected {
	e := &expected{File: file, UBTRoot: ubtRoot.Hex(), MPTRoot: mptRoot.Hex(), Accounts: len(accts), SkippedAccounts: skipped}
	for _, a := range accts {
		e.StorageSlots += uint64(len(a.storage))
		e.CodeBytes += uint64(len(a.code))
		e.TreeEntries += a.treeEntries()
	}
	return e
}

// fixtureAccounts is the state of small.jsonl: 1,600 externally owned
// accounts (one empty; balances of 2^128-1, 2^128, a 20-byte value and
// 2^256-1; one nonce of 2^64-1), 3 accounts with storage and no code, and
// 200 contracts with code of 1 byte to 6,000 bytes (some sharing code) and
// 0 to 150 slots each, keyed by small integers (header slots 0..63 and
// 64..1000) and by 32-byte hashes.
func fixtureAccounts(seed uint64) []*account {
	rng := rand.New(rand.NewPCG(seed, 0x64756d70))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	addr := func() common.Address { return common.BytesToAddress(randBytes(20)) }
	balance := func(bits int) *uint256.Int {
		b := new(uint256.Int).SetBytes(randBytes(32))
		return b.Rsh(b, uint(256-bits))
	}
	value := func() common.Hash {
		v := randBytes(1 + rng.IntN(32))
		v[0] |= 1 // non-zero: an MPT holds no zero slots
		return common.BytesToHash(v)
	}
	slots := func(n int) map[common.Hash]common.Hash {
		m := make(map[common.Hash]common.Hash, n)
		for len(m) < n {
			var k common.Hash
			switch r := rng.IntN(10); {
			case r < 4:
				k = common.BigToHash(big.NewInt(int64(rng.IntN(64)))) // header slots
			case r < 5:
				k = common.BigToHash(big.NewInt(int64(64 + rng.IntN(937))))
			default:
				k = common.BytesToHash(randBytes(32))
			}
			m[k] = value()
		}
		return m
	}
	var accts []*account
	for i := range 1600 {
		a := &account{addr: addr(), balance: balance(rng.IntN(90)), storage: map[common.Hash]common.Hash{}}
		if rng.IntN(10) >= 3 {
			a.nonce = uint64(rng.IntN(5000))
		}
		switch i {
		case 0: // empty account, kept by both tries
			a.nonce, a.balance = 0, new(uint256.Int)
		case 1:
			a.balance = new(uint256.Int).Sub(new(uint256.Int).Lsh(uint256.NewInt(1), 128), uint256.NewInt(1))
		case 2:
			a.balance = new(uint256.Int).Lsh(uint256.NewInt(1), 128)
		case 3:
			a.balance = balance(159)
			a.balance.Or(a.balance, new(uint256.Int).Lsh(uint256.NewInt(1), 159)) // 20 significant bytes
		case 4:
			a.balance = new(uint256.Int).SetAllOne()
		case 5:
			a.nonce = ^uint64(0)
		}
		accts = append(accts, a)
	}
	for range 3 {
		accts = append(accts, &account{addr: addr(), balance: new(uint256.Int), storage: slots(5)})
	}
	var codes [][]byte
	for i := range 200 {
		a := &account{addr: addr(), nonce: 1, balance: new(uint256.Int)}
		switch {
		case i == 0:
			a.code = []byte{0x60} // a lone PUSH1
		case i < 4:
			a.code = randBytes([]int{3968, 3969, 6000}[i-1]) // 128 chunks, and longer code
		case len(codes) > 0 && rng.IntN(10) < 3:
			a.code = codes[rng.IntN(len(codes))] // same code as another contract
		case rng.IntN(3) < 2:
			a.code = randBytes(20 + rng.IntN(380))
		default:
			a.code = randBytes(400 + rng.IntN(1600))
		}
		codes = append(codes, a.code)
		if rng.IntN(4) == 0 {
			a.balance = balance(70)
		}
		switch r := rng.IntN(20); {
		case r < 6:
			a.storage = slots(0)
		case r < 16:
			a.storage = slots(1 + rng.IntN(16))
		case r < 19:
			a.storage = slots(17 + rng.IntN(32))
		default:
			a.storage = slots(100 + rng.IntN(51))
		}
		accts = append(accts, a)
	}
	return accts
}

// missingPreimageAccounts picks the accounts whose address preimage is
// deleted: an externally owned account and a contract with code and storage.
func missingPreimageAccounts(accts []*account) []*account {
	picked := []*account{accts[10]}
	for _, a := range accts {
		if len(a.code) > 0 && len(a.storage) >= 10 {
			return append(picked, a)
		}
	}
	panic("no contract with storage")
}

// buildMPT commits the accounts to a Merkle Patricia state in db, recording
// preimages, with the genesis call sequence and empty fork rules (so the
// empty account is kept), and flushes nodes and preimages to db.
func buildMPT(db ethdb.Database, accts []*account) (common.Hash, error) {
	tdb := triedb.NewDatabase(db, &triedb.Config{Preimages: true, PathDB: pathdb.Defaults})
	st, err := state.New(types.EmptyRootHash, state.NewDatabase(tdb, nil))
	if err != nil {
		return common.Hash{}, err
	}
	for _, a := range accts {
		st.AddBalance(a.addr, new(uint256.Int).Set(a.balance), tracing.BalanceIncreaseGenesisBalance)
		st.SetCode(a.addr, a.code, tracing.CodeChangeGenesis)
		st.SetNonce(a.addr, a.nonce, tracing.NonceChangeGenesis)
		for k, v := range a.storage {
			st.SetState(a.addr, k, v)
		}
	}
	root, err := st.Commit(params.Rules{}, 0)
	if err != nil {
		return common.Hash{}, err
	}
	if err := tdb.Commit(root, false); err != nil {
		return common.Hash{}, err
	}
	return root, tdb.Close()
}

// dumpMPT writes the iterative dump of root exactly as `geth dump
// --iterative` does: a trie database with preimage lookup over the chain
// database, a StateDB at root, IterativeDump with the default DumpConfig.
func dumpMPT(db ethdb.Database, root common.Hash) ([]byte, error) {
	tdb := triedb.NewDatabase(db, &triedb.Config{Preimages: true, PathDB: pathdb.Defaults})
	defer tdb.Close()
	st, err := state.New(root, state.NewDatabase(tdb, nil))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	st.IterativeDump(&state.DumpConfig{}, json.NewEncoder(&buf))
	return buf.Bytes(), nil
}

// fixtureFile is one output file of the fixture mode.
type fixtureFile struct {
	name string
	data []byte
}

func buildFixtures(seed uint64) ([]fixtureFile, error) {
	accts := fixtureAccounts(seed)
	db := rawdb.NewMemoryDatabase()
	mptRoot, err := buildMPT(db, accts)
	if err != nil {
		return nil, err
	}
	ubtRoot, err := ubtRootOf(accts)
	if err != nil {
		return nil, err
	}
	full, err := dumpMPT(db, mptRoot)
	if err != nil {
		return nil, err
	}
	fullExp, err := checkDump(full, mptRoot, ubtRoot, accts, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", smallDump, err)
	}
	fullExp.File = smallDump

	// Delete two account preimages from the chain database and dump again:
	// geth then writes those lines with "key" but no "address".
	missing := missingPreimageAccounts(accts)
	drop := map[common.Address]bool{}
	for _, a := range missing {
		drop[a.addr] = true
		if err := db.Delete(append(append([]byte{}, rawdb.PreimagePrefix...), crypto.Keccak256(a.addr[:])...)); err != nil {
			return nil, err
		}
	}
	var kept []*account
	for _, a := range accts {
		if !drop[a.addr] {
			kept = append(kept, a)
		}
	}
	keptRoot, err := ubtRootOf(kept)
	if err != nil {
		return nil, err
	}
	partial, err := dumpMPT(db, mptRoot)
	if err != nil {
		return nil, err
	}
	partExp, err := checkDump(partial, mptRoot, keptRoot, kept, len(missing))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", missingDump, err)
	}
	partExp.File = missingDump

	files := []fixtureFile{{smallDump, full}, {missingDump, partial}}
	for _, f := range []struct {
		name string
		exp  *expected
	}{{smallExpected, fullExp}, {missingExpected, partExp}} {
		blob, err := json.MarshalIndent(f.exp, "", "  ")
		if err != nil {
			return nil, err
		}
		files = append(files, fixtureFile{f.name, append(blob, '\n')})
	}
	return files, nil
}

// checkDump reads a dump back and checks it against the state it was made
// from: the root line, every account present once with the same fields,
// the expected number of lines without address, and the UBT root of the
// accounts read back equal to the root of the generated accounts.
func checkDump(dump []byte, mptRoot, ubtRoot common.Hash, accts []*account, skipped int) (*expected, error) {
	root, got, gotSkipped, err := readDump(bytes.NewReader(dump))
	if err != nil {
		return nil, err
	}
	if root != mptRoot {
		return nil, fmt.Errorf("root line %x, want %x", root, mptRoot)
	}
	if gotSkipped != skipped || len(got) != len(accts) {
		return nil, fmt.Errorf("%d accounts and %d without address, want %d and %d", len(got), gotSkipped, len(accts), skipped)
	}
	want := make(map[common.Address]*account, len(accts))
	for _, a := range accts {
		want[a.addr] = a
	}
	for _, a := range got {
		w := want[a.addr]
		if w == nil {
			return nil, fmt.Errorf("unexpected account %x", a.addr)
		}
		if a.nonce != w.nonce || !a.balance.Eq(w.balance) || !bytes.Equal(a.code, w.code) || len(a.storage) != len(w.storage) {
			return nil, fmt.Errorf("account %x differs from the generated one", a.addr)
		}
		for k, v := range w.storage {
			if a.storage[k] != v {
				return nil, fmt.Errorf("account %x slot %x differs", a.addr, k)
			}
		}
		delete(want, a.addr)
	}
	r, err := ubtRootOf(got)
	if err != nil {
		return nil, err
	}
	if r != ubtRoot {
		return nil, fmt.Errorf("UBT root of the dump %x != UBT root of the generated accounts %x", r, ubtRoot)
	}
	return summarize("", mptRoot, ubtRoot, got, skipped), nil
}

func runFixtures(dir string, seed uint64, check bool) error {
	files, err := buildFixtures(seed)
	if err != nil {
		return err
	}
	if check {
		for _, f := range files {
			have, err := os.ReadFile(filepath.Join(dir, f.name))
			if err != nil {
				return err
			}
			if !bytes.Equal(have, f.data) {
				return fmt.Errorf("%s differs from what this program writes", filepath.Join(dir, f.name))
			}
		}
		fmt.Printf("%d files in %s are up to date\n", len(files), dir)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
		fmt.Printf("%-36s %d bytes\n", f.name, len(f.data))
	}
	return nil
}

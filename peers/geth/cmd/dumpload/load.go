package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
)

// result is what dumpload reports (the JSON line on stderr).
type result struct {
	Root         string  `json:"root"`
	DumpRoot     string  `json:"dump_root"` // the dump's first line (its MPT root)
	API          string  `json:"api"`
	GroupDepth   int     `json:"group_depth"`
	Accounts     uint64  `json:"accounts"`
	Skipped      uint64  `json:"skipped_missing_preimages"`
	StorageSlots uint64  `json:"storage_slots"`
	CodeBytes    uint64  `json:"code_bytes"`
	TreeEntries  uint64  `json:"tree_entries"`
	Commits      uint64  `json:"commits"`
	Seconds      float64 `json:"seconds"`
	AccountsPerS float64 `json:"accounts_per_s"`
	EntriesPerS  float64 `json:"entries_per_s"`
	DiskBytes    uint64  `json:"disk_bytes"`
	MaxRSSBytes  uint64  `json:"max_rss_bytes"` // peak resident set of the process (VmHWM)
}

// loader applies accounts to go-ethereum's binary trie and commits them.
type loader interface {
	add(a *account) error
	// commit makes everything added so far durable in the path database's
	// disk layer (flushed to Pebble) and returns the root.
	commit(block uint64) (common.Hash, error)
}

// statedbLoader goes through StateDB, with core/genesis.go's call sequence
// and empty fork rules (EIP-158 off: empty accounts are written). StateDB
// reads the account and every slot's previous value from the trie before
// writing it, as it would for any state change.
type statedbLoader struct {
	sdb  state.Database
	tdb  *triedb.Database
	st   *state.StateDB
	root common.Hash
}

func newStatedbLoader(tdb *triedb.Database, db ethdb.Database) (*statedbLoader, error) {
	l := &statedbLoader{sdb: state.NewDatabase(tdb, state.NewCodeDB(db)), tdb: tdb, root: types.EmptyBinaryHash}
	st, err := state.New(l.root, l.sdb)
	if err != nil {
		return nil, err
	}
	l.st = st
	return l, nil
}

func (l *statedbLoader) add(a *account) error {
	l.st.AddBalance(a.Addr, &a.Balance, tracing.BalanceIncreaseGenesisBalance)
	l.st.SetCode(a.Addr, a.Code, tracing.CodeChangeGenesis)
	l.st.SetNonce(a.Addr, a.Nonce, tracing.NonceChangeGenesis)
	for i, k := range a.Keys {
		l.st.SetState(a.Addr, k, a.Vals[i])
	}
	return nil
}

func (l *statedbLoader) commit(block uint64) (common.Hash, error) {
	root, err := l.st.Commit(params.Rules{}, block)
	if err != nil {
		return common.Hash{}, err
	}
	if root != l.root {
		if err := l.tdb.Commit(root, false); err != nil {
			return common.Hash{}, fmt.Errorf("triedb commit: %w", err)
		}
	}
	l.root = root
	if l.st, err = state.New(root, l.sdb); err != nil {
		return common.Hash{}, err
	}
	return root, nil
}

// trieLoader writes with the binary trie's API the leaves StateDB's commit
// would write (UpdateAccount with the code length, UpdateContractCode,
// UpdateStorage), without StateDB's reads; code goes to the code store.
// It writes no flat state.
type trieLoader struct {
	tdb   *triedb.Database
	gd    int
	tr    *bintrie.BinaryTrie
	codes ethdb.Batch
	root  common.Hash
}

func newTrieLoader(tdb *triedb.Database, db ethdb.Database, gd int) (*trieLoader, error) {
	l := &trieLoader{tdb: tdb, gd: gd, codes: db.NewBatch(), root: types.EmptyBinaryHash}
	var err error
	l.tr, err = bintrie.NewBinaryTrie(l.root, tdb, gd)
	return l, err
}

func (l *trieLoader) add(a *account) error {
	acct := &types.StateAccount{Nonce: a.Nonce, Balance: &a.Balance, Root: types.EmptyRootHash, CodeHash: a.CodeHash[:]}
	if err := l.tr.UpdateAccount(a.Addr, acct, len(a.Code)); err != nil {
		return err
	}
	if len(a.Code) > 0 {
		if err := l.tr.UpdateContractCode(a.Addr, a.CodeHash, a.Code); err != nil {
			return err
		}
		rawdb.WriteCode(l.codes, a.CodeHash, a.Code)
	}
	for i, k := range a.Keys {
		if err := l.tr.UpdateStorage(a.Addr, k[:], common.TrimLeftZeroes(a.Vals[i][:])); err != nil {
			return err
		}
	}
	return nil
}

func (l *trieLoader) commit(block uint64) (common.Hash, error) {
	if err := l.codes.Write(); err != nil {
		return common.Hash{}, err
	}
	l.codes.Reset()
	root, set := l.tr.Commit(false)
	if root != l.root {
		if err := l.tdb.Update(root, l.root, block, trienode.NewWithNodeSet(set), triedb.NewStateSet()); err != nil {
			return common.Hash{}, fmt.Errorf("triedb update: %w", err)
		}
		if err := l.tdb.Commit(root, false); err != nil {
			return common.Hash{}, fmt.Errorf("triedb commit: %w", err)
		}
	}
	l.root = root
	var err error
	l.tr, err = bintrie.NewBinaryTrie(root, l.tdb, l.gd)
	return root, err
}

// openDB creates Pebble in DIR/chaindata (DIR absent or empty) and geth's
// path database over it for the binary trie. --cache is split as geth
// splits its --cache: 50% Pebble, 15% clean trie nodes, 10% clean states.
// The key-value store has no freezer, so pathdb keeps no state history.
func openDB(o *options) (*pebble.Database, ethdb.Database, *triedb.Database, error) {
	entries, err := os.ReadDir(o.db)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(o.db, 0o755); err != nil {
			return nil, nil, nil, err
		}
	case err != nil:
		return nil, nil, nil, err
	case len(entries) > 0:
		return nil, nil, nil, badInput("--db %s is not empty", o.db)
	}
	kv, err := pebble.New(filepath.Join(o.db, "chaindata"), o.cacheMB*50/100, 1024, "dumpload/", false)
	if err != nil {
		return nil, nil, nil, err
	}
	db := rawdb.NewDatabase(kv)
	cfg := *pathdb.Defaults
	cfg.TrieCleanSize = o.cacheMB * 15 / 100 * 1024 * 1024
	cfg.StateCleanSize = o.cacheMB * 10 / 100 * 1024 * 1024
	cfg.TrienodeHistory = -1
	tdb := triedb.NewDatabase(db, &triedb.Config{IsUBT: true, BinTrieGroupDepth: o.groupDepth, PathDB: &cfg})
	return kv, db, tdb, nil
}

func load(o *options, stdin io.Reader) (*result, error) {
	var in io.Reader = stdin
	if o.input != "-" {
		f, err := os.Open(o.input)
		if err != nil {
			return nil, badInput("%v", err)
		}
		defer f.Close()
		in = f
	}
	kv, db, tdb, err := openDB(o)
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			tdb.Close()
			kv.Close()
		}
	}()
	start := time.Now()
	var l loader
	if o.api == "trie" {
		l, err = newTrieLoader(tdb, db, o.groupDepth)
	} else {
		l, err = newStatedbLoader(tdb, db)
	}
	if err != nil {
		return nil, err
	}

	// One goroutine splits lines, decoders turn them into accounts (order
	// does not matter: the trie is the same in any insertion order), this
	// goroutine applies them and commits.
	var (
		lines   = make(chan lineBatch, 64)
		decs    = make(chan decoded, 64)
		done    = make(chan struct{})
		wg      sync.WaitGroup
		readErr error
		dumpRt  common.Hash
	)
	defer close(done)
	readDone := make(chan struct{})
	go func() {
		dumpRt, readErr = readLines(in, lines, done)
		close(readDone)
	}()
	workers := max(1, runtime.NumCPU()-1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			decodeLines(lines, decs, o.skipMissing, done)
		}()
	}
	go func() {
		wg.Wait()
		close(decs)
	}()

	res := &result{API: o.api, GroupDepth: o.groupDepth}
	var (
		pending int
		block   uint64
		root    = types.EmptyBinaryHash
	)
	commit := func() error {
		block++
		var err error
		if root, err = l.commit(block); err != nil {
			return err
		}
		res.Commits++
		pending = 0
		return nil
	}
	for d := range decs {
		if d.err != nil {
			return nil, d.err
		}
		res.Skipped += uint64(d.skipped)
		for _, a := range d.accts {
			if err := l.add(a); err != nil {
				return nil, err
			}
			res.Accounts++
			res.StorageSlots += uint64(len(a.Keys))
			res.CodeBytes += uint64(len(a.Code))
			res.TreeEntries += a.Entries()
			if pending++; pending >= o.commitEvery {
				if err := commit(); err != nil {
					return nil, err
				}
			}
		}
	}
	<-readDone
	if readErr != nil {
		return nil, readErr
	}
	if pending > 0 {
		if err := commit(); err != nil {
			return nil, err
		}
	}
	// Closing the path database waits for the background flush of the last
	// commit; the sync then makes every write durable (fsync of the WAL).
	closed = true
	if err := tdb.Close(); err != nil {
		kv.Close()
		return nil, err
	}
	if err := kv.SyncKeyValue(); err != nil {
		kv.Close()
		return nil, fmt.Errorf("pebble sync: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	res.Root, res.DumpRoot = root.Hex(), dumpRt.Hex()
	res.AccountsPerS = float64(res.Accounts) / res.Seconds
	res.EntriesPerS = float64(res.TreeEntries) / res.Seconds
	res.MaxRSSBytes = maxRSS()

	// The root pathdb persisted with the nodes must be the loaded root.
	if head := rawdb.ReadSnapshotRoot(rawdb.NewTable(db, string(rawdb.VerklePrefix))); res.Accounts > 0 && head != root {
		kv.Close()
		return nil, fmt.Errorf("persisted root %x differs from the loaded root %x", head, root)
	}
	if err := kv.Close(); err != nil {
		return nil, err
	}
	res.DiskBytes, err = dirSize(o.db)
	return res, err
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (uint64, error) {
	var total uint64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += uint64(info.Size())
		}
		return nil
	})
	return total, err
}

// maxRSS is the process's peak resident set size from /proc (0 elsewhere).
func maxRSS() uint64 {
	blob, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(blob), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

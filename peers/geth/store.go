package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
)

const (
	kvDirName     = "chaindata"      // the Pebble database inside DIR
	metaFileName  = "geth-peer.json" // what DIR holds, written once by load
	pebbleHandles = 1024
)

// storeMeta records what a database was loaded with, so that run refuses a
// database made for another engine, group depth or workload mode.
type storeMeta struct {
	Engine     string `json:"engine"`      // bintrie | mpt | ubt
	GroupDepth int    `json:"group_depth"` // bintrie and ubt
	Mode       string `json:"mode"`        // accounts | raw
	Workload   string `json:"workload"`
	Records    uint64 `json:"records"`
	LoadRoot   string `json:"load_root"`
}

// store is an open database: Pebble, geth's path database over it and, in
// accounts mode, geth's state database (StateDB's backend).
type store struct {
	dir  string
	kv   *pebble.Database
	db   ethdb.Database
	tdb  *triedb.Database
	sdb  state.Database // accounts mode only
	opts *engineOpts
	mode string
}

// cacheSplit divides --cache like geth's defaults (cmd/utils: 50% database,
// 15% trie clean cache, 10% snapshot (flat state) clean cache).
func cacheSplit(totalMB int) (pebbleMB, trieCleanMB, stateCleanMB int) {
	return totalMB * 50 / 100, totalMB * 15 / 100, totalMB * 10 / 100
}

// pathdbConfig is geth's path database configured to flush every commit:
// NoAsyncFlush makes triedb.Commit wait until the disk layer's batch has
// been written to Pebble (the caller then syncs Pebble's WAL). State
// history is off because the key-value store has no freezer (ancient
// store); ubt keeps no history either.
func pathdbConfig(opts *engineOpts, mode string) *pathdb.Config {
	_, trieMB, stateMB := cacheSplit(opts.cacheMB)
	return &pathdb.Config{
		TrieCleanSize:     trieMB * 1024 * 1024,
		StateCleanSize:    stateMB * 1024 * 1024,
		WriteBufferSize:   0, // nothing is kept dirty between commits
		TrienodeHistory:   -1,
		NoAsyncFlush:      true,
		NoAsyncGeneration: true,
		// Raw workloads put arbitrary values in the account trie; geth's
		// snapshot generator must not try to decode them as accounts.
		SnapshotNoBuild: mode == modeRaw,
	}
}

func openKV(dir string, opts *engineOpts) (*pebble.Database, error) {
	pebbleMB, _, _ := cacheSplit(opts.cacheMB)
	kv, err := pebble.New(filepath.Join(dir, kvDirName), pebbleMB, pebbleHandles, "geth-peer/", false)
	if err != nil {
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	return kv, nil
}

func newStore(dir string, kv *pebble.Database, opts *engineOpts, mode string) *store {
	db := rawdb.NewDatabase(kv)
	tdb := triedb.NewDatabase(db, &triedb.Config{
		IsUBT:             opts.engine == engineBintrie,
		BinTrieGroupDepth: opts.groupDepth,
		PathDB:            pathdbConfig(opts, mode),
	})
	s := &store{dir: dir, kv: kv, db: db, tdb: tdb, opts: opts, mode: mode}
	if mode == modeAccounts {
		s.sdb = state.NewDatabase(tdb, state.NewCodeDB(db))
	}
	return s
}

// createStore makes a fresh database in dir, which must be absent or empty.
func createStore(dir string, opts *engineOpts, mode string) (*store, error) {
	if err := prepareEmptyDir(dir); err != nil {
		return nil, err
	}
	kv, err := openKV(dir, opts)
	if err != nil {
		return nil, err
	}
	return newStore(dir, kv, opts, mode), nil
}

// prepareEmptyDir creates dir, or checks that it is empty: load makes a
// fresh database.
func prepareEmptyDir(dir string) error {
	if dir == "" {
		return badInput("--db is required")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return badInput("--db %s is not empty; load creates a fresh database", dir)
	}
	return nil
}

// openStore opens a database made by load with the same engine settings.
func openStore(dir string, opts *engineOpts, w *workloadInfo) (*store, *storeMeta, error) {
	meta, err := readMeta(dir, opts, w)
	if err != nil {
		return nil, nil, err
	}
	kv, err := openKV(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	return newStore(dir, kv, opts, w.Mode), meta, nil
}

// readMeta reads what load recorded in dir and checks it against the
// engine settings and the workload's mode.
func readMeta(dir string, opts *engineOpts, w *workloadInfo) (*storeMeta, error) {
	if dir == "" {
		return nil, badInput("--db is required")
	}
	blob, err := os.ReadFile(filepath.Join(dir, metaFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, badInput("--db %s holds no geth-peer database (no %s; run load first)", dir, metaFileName)
	}
	if err != nil {
		return nil, err
	}
	var meta storeMeta
	if err := json.Unmarshal(blob, &meta); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, metaFileName), err)
	}
	if meta.Engine != opts.engine {
		return nil, badInput("--db %s was loaded with --engine %s, not %s", dir, meta.Engine, opts.engine)
	}
	if opts.engine != engineMPT && meta.GroupDepth != opts.groupDepth {
		return nil, badInput("--db %s was loaded with --group-depth %d, not %d", dir, meta.GroupDepth, opts.groupDepth)
	}
	if meta.Mode != w.Mode {
		return nil, badInput("--db %s holds a %s-mode state, the workload is %s-mode", dir, meta.Mode, w.Mode)
	}
	return &meta, nil
}

// head is the root of the state persisted on disk: the root pathdb stores
// next to the disk layer's nodes in the same batch at every flush.
func (s *store) head() common.Hash {
	var db ethdb.KeyValueReader = s.db
	if s.opts.engine == engineBintrie {
		db = rawdb.NewTable(s.db, string(rawdb.VerklePrefix))
	}
	return rawdb.ReadSnapshotRoot(db)
}

// persist makes the state with the given root durable: the path database
// flattens every diff layer down to its disk layer and writes the nodes (and
// flat states) to Pebble in one batch (synchronously, NoAsyncFlush), then
// Pebble's WAL is fsynced. parent is the root before the block; a block that
// does not change the root has nothing to write.
func (s *store) persist(root, parent common.Hash) error {
	if root != parent {
		if err := s.tdb.Commit(root, false); err != nil {
			return fmt.Errorf("triedb commit %x: %w", root, err)
		}
	}
	if err := s.kv.SyncKeyValue(); err != nil {
		return fmt.Errorf("pebble sync: %w", err)
	}
	return nil
}

// writeMeta records the database's settings (once, after load), durably.
func (s *store) writeMeta(meta *storeMeta) error { return writeMetaFile(s.dir, meta) }

// writeMetaFile writes meta to dir's geth-peer.json and syncs it and dir.
func writeMetaFile(dir string, meta *storeMeta) error {
	blob, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, metaFileName)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(blob, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close shuts the path database and Pebble down (no compaction is forced).
func (s *store) close() error {
	err := s.tdb.Close()
	if cerr := s.kv.Close(); err == nil {
		err = cerr
	}
	return err
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

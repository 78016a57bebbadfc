//go:build ubt

package main

// --engine ubt: go-ethereum's state layer over ubt (the Rust storage engine,
// through the cgo bindings in bindings/go). Accounts-mode blocks run
// through geth's own state.StateDB over gethstate.Database, ubt's
// implementation of geth's state.Database; the load and raw-mode workloads
// use ubt's API directly, as the binary-trie engine uses the trie API
// directly (README.md, "--engine ubt").

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	ubt "github.com/ubt/bindings/go"
	"github.com/ubt/bindings/go/gethstate"
)

// ubtDirName is the ubt database inside DIR (beside geth-peer.json).
const ubtDirName = "ubt"

// ubtOptions are ubt's options for the engine flags: --cache is ubt's
// memory budget, --group-depth its page group depth, --flat-index whether
// a database created for an account state keeps ubt's flat index of
// account values (geth's StateDB writes through gethstate's account-level
// operations, which name every value's account; a raw state's tree-key
// writes name none, so a raw database never has one); every commit synced
// (SyncAlways, ubt's default).
func ubtOptions(opts *engineOpts, create bool, mode string) *ubt.Options {
	return &ubt.Options{
		MemoryBudget: uint64(opts.cacheMB) << 20,
		GroupDepth:   uint8(opts.groupDepth),
		NoCreate:     !create,
		FlatIndex:    create && opts.flatIndex && mode != modeRaw,
		Sync:         ubt.SyncAlways,
	}
}

// ubtStore is an open ubt database in DIR/ubt.
type ubtStore struct {
	dir string
	db  *ubt.DB
}

func openUBT(dir string, opts *engineOpts, create bool, mode string) (*ubtStore, error) {
	path := filepath.Join(dir, ubtDirName)
	db, err := ubt.Open(path, ubtOptions(opts, create, mode))
	if err != nil {
		return nil, fmt.Errorf("open ubt in %s: %w", path, err)
	}
	if stats, err := db.Stats(); err != nil {
		db.Close()
		return nil, err
	} else if int(stats.GroupDepth) != opts.groupDepth {
		db.Close()
		return nil, badInput("--db %s holds a ubt database at group depth %d, not %d", dir, stats.GroupDepth, opts.groupDepth)
	} else if want := opts.flatIndex && mode != modeRaw; stats.FlatIndex != want {
		db.Close()
		return nil, badInput("--db %s holds a ubt database with flat index %v, not %v (--flat-index)", dir, stats.FlatIndex, want)
	}
	return &ubtStore{dir: dir, db: db}, nil
}

// head is the root of the state persisted in ubt.
func (u *ubtStore) head() (common.Hash, error) {
	r, err := u.db.CommittedRoot()
	return common.Hash(r), err
}

// persist makes the state with the given root durable: one WAL record,
// fsynced (SyncAlways), as the binary-trie engine flushes and fsyncs every
// block. gethstate's Commit persists the root already when StateDB
// commits; then this only checks it. A block that changes nothing has
// nothing to persist.
func (u *ubtStore) persist(root, parent common.Hash) error {
	head, err := u.head()
	if err != nil {
		return err
	}
	if head == root || root == parent {
		return nil
	}
	if err := u.db.Persist(ubt.Root(root)); err != nil {
		return fmt.Errorf("ubt persist %x: %w", root, err)
	}
	return nil
}

// misses is ubt's count of bucket reads from its data file since open:
// reads below ubt's caches, as pathdb's clean-cache misses are below
// geth's (the page cache may still serve them).
func (u *ubtStore) misses() int64 {
	st, err := u.db.Stats()
	if err != nil {
		return 0
	}
	return int64(st.BucketReads)
}

// ubtChunks is what both ubt loaders share: a chunk's pending writes
// applied as one layer (flush, false when nothing is pending), persisted
// at commit.
type ubtChunks struct {
	u     *ubtStore
	root  common.Hash // last applied root
	flush func() (ubt.Root, bool, error)
}

func (l *ubtChunks) apply() error {
	root, applied, err := l.flush()
	if err != nil {
		return err
	}
	if applied {
		l.root = common.Hash(root)
	}
	return nil
}

// hash is the root of everything added; a failed apply keeps the writes
// pending, and commit reports the failure.
func (l *ubtChunks) hash() common.Hash {
	if err := l.apply(); err != nil {
		return common.Hash{}
	}
	return l.root
}

func (l *ubtChunks) commit(uint64) (common.Hash, error) {
	parent := l.root
	if err := l.apply(); err != nil {
		return common.Hash{}, err
	}
	return l.root, l.u.persist(l.root, parent)
}

// ubtAccountsLoader loads accounts-mode records with ubt's account
// operations, which have geth's BinaryTrie semantics: the calls the
// binary-trie loader makes (UpdateAccount with the code length,
// UpdateContractCode, UpdateStorage, DeleteStorage for a zero value). Each
// chunk is one layer (ApplyAccounts), persisted at commit.
type ubtAccountsLoader struct {
	ubtChunks
	ops []ubt.AccountOp
}

func newUBTAccountsLoader(u *ubtStore) *ubtAccountsLoader {
	l := &ubtAccountsLoader{ubtChunks: ubtChunks{u: u}}
	l.flush = func() (ubt.Root, bool, error) {
		if len(l.ops) == 0 {
			return ubt.Root{}, false, nil
		}
		root, err := u.db.ApplyAccounts(l.ops)
		if err == nil {
			l.ops = l.ops[:0]
		}
		return root, err == nil, err
	}
	return l
}

func (l *ubtAccountsLoader) add(recs []stateRecord) error {
	for i := range recs {
		r := &recs[i]
		switch r.kind {
		case recAccount:
			codeHash := types.EmptyCodeHash
			if len(r.code) > 0 {
				codeHash = crypto.Keccak256Hash(r.code)
			}
			acct := ubt.Account{Nonce: r.nonce, Balance: r.balance.Bytes32(), CodeHash: codeHash, CodeSize: uint32(len(r.code))}
			l.ops = append(l.ops, ubt.SetAccount(r.addr, acct))
			if len(r.code) > 0 {
				l.ops = append(l.ops, ubt.SetCode(r.addr, r.code))
			}
		case recSlot:
			if r.value == (common.Hash{}) {
				l.ops = append(l.ops, ubt.DeleteStorage(r.addr, r.key))
			} else {
				l.ops = append(l.ops, ubt.SetStorage(r.addr, r.key, r.value))
			}
		default:
			return fmt.Errorf("record kind %d in an accounts-mode load", r.kind)
		}
	}
	return nil
}

// ubtRawLoader loads raw-mode records by tree key (ubt's Apply).
type ubtRawLoader struct {
	ubtChunks
	writes []ubt.Write
}

func newUBTRawLoader(u *ubtStore) *ubtRawLoader {
	l := &ubtRawLoader{ubtChunks: ubtChunks{u: u}}
	l.flush = func() (ubt.Root, bool, error) {
		if len(l.writes) == 0 {
			return ubt.Root{}, false, nil
		}
		root, err := u.db.Apply(l.writes)
		if err == nil {
			l.writes = l.writes[:0]
		}
		return root, err == nil, err
	}
	return l
}

func (l *ubtRawLoader) add(recs []stateRecord) error {
	for i := range recs {
		if recs[i].kind != recRaw {
			return fmt.Errorf("record kind %d in a raw-mode load", recs[i].kind)
		}
		l.writes = append(l.writes, ubt.Write{Key: recs[i].key, Value: recs[i].value})
	}
	return nil
}

func cmdLoadUBT(c *command, w *workloadInfo, stdout io.Writer) error {
	if err := prepareEmptyDir(c.db); err != nil {
		return err
	}
	u, err := openUBT(c.db, &c.opts, true, w.Mode)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			u.db.Close()
		}
	}()
	start := time.Now()
	var l stateLoader
	if w.Mode == modeRaw {
		l = newUBTRawLoader(u)
	} else {
		l = newUBTAccountsLoader(u)
	}
	root, n, err := loadAll(w, l, c.opts.chunk)
	if err != nil {
		return err
	}
	if head, err := u.head(); err != nil {
		return err
	} else if head != root {
		return fmt.Errorf("persisted root %x differs from the loaded root %x", head, root)
	}
	seconds := time.Since(start).Seconds()

	// The counterpart of the Pebble engines' full compaction: everything
	// written to ubt's data file, the WAL left empty, so the next open
	// replays nothing into memory.
	compactStart := time.Now()
	if err := u.db.Checkpoint(); err != nil {
		return fmt.Errorf("checkpointing the loaded database: %w", err)
	}
	compactSeconds := time.Since(compactStart).Seconds()

	meta := loadMeta(c, w, n, root)
	if err := writeMetaFile(c.db, meta); err != nil {
		return err
	}
	closed = true
	if err := u.db.Close(); err != nil {
		return err
	}
	return printLoad(stdout, c, n, seconds, compactSeconds, root)
}

func cmdRunUBT(c *command, w *workloadInfo, stdout, stderr io.Writer) error {
	if _, err := readMeta(c.db, &c.opts, w); err != nil {
		return err
	}
	u, err := openUBT(c.db, &c.opts, false, w.Mode)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			u.db.Close()
		}
	}()
	parent, err := u.head()
	if err != nil {
		return err
	}
	var ex blockExecutor
	if w.Mode == modeRaw {
		ex = &ubtRawExec{u: u, parent: parent}
	} else {
		codes := &codeIndex{w: w}
		ex = &statedbExec{
			sdb:     state.Database(gethstate.NewDatabase(u.db)),
			code:    codes.get,
			persist: u.persist,
			parent:  parent,
		}
	}
	if err := replayBlocks(c, w, &runEnv{dir: c.db, misses: u.misses}, ex, stdout, stderr); err != nil {
		return err
	}
	closed = true
	return u.db.Close()
}

// ubtRawExec runs raw-mode blocks with ubt's tree-key API: Get for every
// read (one at a time, as the trie engines read), Apply for the writes (the
// new layer's root is the state hash), Persist for the commit.
type ubtRawExec struct {
	u       *ubtStore
	parent  common.Hash
	newRoot common.Hash
	writes  []ubt.Write
}

func (e *ubtRawExec) root() common.Hash { return e.parent }

func (e *ubtRawExec) witness() map[string][]byte { return nil }

func (e *ubtRawExec) read(b *block) error {
	for i := range b.reads {
		if _, _, err := e.u.db.Get(b.reads[i].key); err != nil {
			return err
		}
	}
	return nil
}

func (e *ubtRawExec) apply(b *block) (common.Hash, error) {
	e.writes = e.writes[:0]
	for i := range b.writes {
		e.writes = append(e.writes, ubt.Write{Key: b.writes[i].key, Value: b.writes[i].value})
	}
	e.newRoot = e.parent
	if len(e.writes) == 0 {
		return e.newRoot, nil
	}
	root, err := e.u.db.Apply(e.writes)
	if err != nil {
		return common.Hash{}, err
	}
	e.newRoot = common.Hash(root)
	return e.newRoot, nil
}

func (e *ubtRawExec) commit(*block) error {
	if len(e.writes) > 0 {
		// Apply made a layer even if the root did not change: persist it.
		if err := e.u.db.Persist(ubt.Root(e.newRoot)); err != nil {
			return fmt.Errorf("ubt persist %x: %w", e.newRoot, err)
		}
	}
	e.parent = e.newRoot
	return nil
}

// codeIndex finds contract code by hash for account writes that change an
// account's code. ubt keeps code only as the account's chunks, with no
// index by hash (geth's engines keep a code store by hash), so the first
// lookup reads the code of every account in the workload's state.jsonl
// (the code the database was loaded with). Rare: only blocks that give an
// account code it did not have need it, and that lookup is inside the
// timed state-hash phase.
type codeIndex struct {
	w     *workloadInfo
	codes map[common.Hash][]byte
}

func (ci *codeIndex) get(h common.Hash) ([]byte, error) {
	if ci.codes == nil {
		ci.codes = make(map[common.Hash][]byte)
		_, err := streamState(ci.w, parseBatch, func(recs []stateRecord) error {
			for i := range recs {
				if recs[i].kind == recAccount && len(recs[i].code) > 0 {
					ci.codes[crypto.Keccak256Hash(recs[i].code)] = recs[i].code
				}
			}
			return nil
		})
		if err != nil {
			ci.codes = nil
			return nil, fmt.Errorf("reading the workload's code: %w", err)
		}
	}
	return ci.codes[h], nil
}

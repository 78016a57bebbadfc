package gethstate

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/triedb"

	ubt "github.com/ubt/bindings/go"
)

// ErrNotTip is wrapped by the error of OpenTrie at a root other than the
// database's tip: ubt has one writer chain, so a block can only be built
// on the tip (call ubt.DB.Revert to move the tip back to a parent first).
var ErrNotTip = errors.New("gethstate: root is not the tip of the ubt database")

// errNotSupported is wrapped by the errors of the state.Database and
// state.Trie methods this adapter does not provide.
var errNotSupported = errors.New("not supported by the ubt adapter")

// Database is a go-ethereum state.Database over a ubt database (see the
// package documentation for its semantics). It is safe for concurrent use;
// tries opened from it must be used by one StateDB at a time, as usual.
type Database struct {
	db *ubt.DB

	mu       sync.Mutex
	flushErr error // the first failed ApplyAccounts of a trie since the last OpenTrie
	// open are the snapshots of the readers handed out and not yet
	// released (by their cleanup or by Close).
	open map[*ubt.Reader]struct{}
}

// Database implements state.Database.
var _ state.Database = (*Database)(nil)

// NewDatabase returns the state.Database over db. The caller keeps
// ownership of db (closing it is the caller's business).
func NewDatabase(db *ubt.DB) *Database {
	return &Database{db: db, open: make(map[*ubt.Reader]struct{})}
}

// Close releases the snapshots of every reader this Database handed out
// that the garbage collector has not released yet (go-ethereum's
// state.Reader has no Close of its own). Reads through those readers
// then fail with ubt.ErrBadHandle. Call it before ubt.DB.Close when the
// process goes on and reopens the directory: an unreleased snapshot keeps
// the database locked in this process. It does not close the ubt.DB,
// which the caller owns. Calling it again releases what was handed out
// since.
func (d *Database) Close() error {
	d.mu.Lock()
	snaps := make([]*ubt.Reader, 0, len(d.open))
	for snap := range d.open {
		snaps = append(snaps, snap)
	}
	clear(d.open)
	d.mu.Unlock()
	var first error
	for _, snap := range snaps {
		if err := snap.Close(); err != nil && first == nil && !errors.Is(err, ubt.ErrBadHandle) {
			first = fmt.Errorf("gethstate: releasing a reader: %w", err)
		}
	}
	return first
}

// track records an open snapshot; release forgets it (its cleanup).
func (d *Database) track(snap *ubt.Reader) {
	d.mu.Lock()
	d.open[snap] = struct{}{}
	d.mu.Unlock()
}

func (d *Database) release(snap *ubt.Reader) {
	d.mu.Lock()
	delete(d.open, snap)
	d.mu.Unlock()
	_ = snap.Close()
}

// DB returns the ubt database the adapter writes to.
func (d *Database) DB() *ubt.DB {
	return d.db
}

// Type returns state.TypeUBT: the state is one unified binary trie.
func (d *Database) Type() state.DatabaseType {
	return state.TypeUBT
}

// normalizeRoot maps go-ethereum's empty-state roots to ubt's empty root
// (32 zero bytes; types.EmptyBinaryHash is the same value).
func normalizeRoot(root common.Hash) ubt.Root {
	if root == types.EmptyRootHash {
		return ubt.Root{}
	}
	return ubt.Root(root)
}

// Reader returns a state.Reader over a ubt snapshot at root: the tip, a
// block still in memory, or the last persisted block (ubt.ErrUnknownRoot
// otherwise). The snapshot is released when the reader becomes
// unreachable, or by Close.
func (d *Database) Reader(root common.Hash) (state.Reader, error) {
	snap, err := d.db.Reader(normalizeRoot(root))
	if err != nil {
		return nil, fmt.Errorf("gethstate: reader at %s: %w", root, err)
	}
	d.track(snap)
	return newReader(snap, d.release), nil
}

// Iteratee fails: ubt does not iterate over accounts or storage slots.
func (d *Database) Iteratee(root common.Hash) (state.Iteratee, error) {
	return nil, fmt.Errorf("gethstate: state iteration (Iteratee at %s): %w", root, errNotSupported)
}

// OpenTrie opens the trie at root, which must be the database's tip
// (otherwise the error wraps ErrNotTip). Writes to the trie become a new
// block layer of the database when the trie is hashed or committed.
func (d *Database) OpenTrie(root common.Hash) (state.Trie, error) {
	tip, err := d.db.Root()
	if err != nil {
		return nil, fmt.Errorf("gethstate: open trie: %w", err)
	}
	if normalizeRoot(root) != tip {
		return nil, fmt.Errorf("%w: cannot open the trie at %s, the tip is %s (to build on an older block, revert to it with ubt.DB.Revert)",
			ErrNotTip, root, common.Hash(tip))
	}
	d.mu.Lock()
	d.flushErr = nil
	d.mu.Unlock()
	return &Trie{d: d, root: common.Hash(tip)}, nil
}

// OpenStorageTrie returns self, the account trie: storage lives in the
// same unified trie.
func (d *Database) OpenStorageTrie(stateRoot common.Hash, address common.Address, root common.Hash, self state.Trie) (state.Trie, error) {
	return self, nil
}

// TrieDB returns nil: the state is not in a triedb. Nothing on
// core/state's StateDB path calls it for this database.
func (d *Database) TrieDB() *triedb.Database {
	return nil
}

// Commit makes the state transition of update durable: nothing when the
// update is empty; otherwise the tip must be update.Root (the trie that
// produced it applied its writes there) and the blocks up to it are
// persisted with ubt.DB.Persist. update.Codes is ignored: the code is in
// the trie's code chunks.
func (d *Database) Commit(update *state.StateUpdate) error {
	d.mu.Lock()
	flushErr := d.flushErr
	d.mu.Unlock()
	if flushErr != nil {
		return fmt.Errorf("gethstate: commit of block %d aborted, a trie write failed: %w", update.BlockNumber, flushErr)
	}
	if update.Empty() {
		return nil
	}
	tip, err := d.db.Root()
	if err != nil {
		return fmt.Errorf("gethstate: commit: %w", err)
	}
	if ubt.Root(update.Root) != tip {
		return fmt.Errorf("%w: cannot commit block %d with root %s, the tip is %s",
			ErrNotTip, update.BlockNumber, update.Root, common.Hash(tip))
	}
	if err := d.db.Persist(tip); err != nil {
		return fmt.Errorf("gethstate: commit of block %d: %w", update.BlockNumber, err)
	}
	return nil
}

// setFlushErr records the first failed write of a trie, for Commit.
func (d *Database) setFlushErr(err error) {
	d.mu.Lock()
	if d.flushErr == nil {
		d.flushErr = err
	}
	d.mu.Unlock()
}

package gethstate

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	ubt "github.com/ubt/bindings/go"
)

var (
	alice = common.HexToAddress("0xa11ce00000000000000000000000000000000001")
	bob   = common.HexToAddress("0xb0b0000000000000000000000000000000000002")
	slot1 = common.HexToHash("0x01")
)

// commitBlock runs ops on a fresh StateDB at parent and commits block n.
func commitBlock(t *testing.T, d state.Database, parent common.Hash, n uint64, ops ...op) common.Hash {
	t.Helper()
	s, err := state.New(parent, d)
	if err != nil {
		t.Fatalf("block %d: state.New: %v", n, err)
	}
	return execBlock(t, s, n, []tx{ops})
}

func TestEmptyDatabase(t *testing.T) {
	udb := openUBT(t, t.TempDir())
	defer udb.Close()
	d := NewDatabase(udb)
	if d.DB() != udb {
		t.Fatal("DB() is not the database given to NewDatabase")
	}
	if d.Type() != state.TypeUBT {
		t.Fatalf("Type() = %v, want TypeUBT", d.Type())
	}
	for _, root := range []common.Hash{types.EmptyBinaryHash, types.EmptyRootHash} {
		tr, err := d.OpenTrie(root)
		if err != nil {
			t.Fatalf("OpenTrie(%s) on an empty database: %v", root, err)
		}
		if h := tr.Hash(); h != (common.Hash{}) {
			t.Fatalf("Hash of the empty trie = %s, want the zero hash", h)
		}
		if !tr.IsUBT() {
			t.Fatal("IsUBT() is false")
		}
		self, err := d.OpenStorageTrie(root, alice, types.EmptyRootHash, tr)
		if err != nil || self != tr {
			t.Fatalf("OpenStorageTrie = %v, %v; want the account trie", self, err)
		}
		r, err := d.Reader(root)
		if err != nil {
			t.Fatalf("Reader(%s) on an empty database: %v", root, err)
		}
		if acc, err := r.Account(alice); acc != nil || err != nil {
			t.Fatalf("Account on the empty state = %v, %v", acc, err)
		}
	}
}

func TestTrieAndReaderSemantics(t *testing.T) {
	udb := openUBT(t, t.TempDir())
	defer udb.Close()
	d := NewDatabase(udb)
	code := []byte{0x60, 0x01, 0x60, 0x02, 0x01, 0x00}
	root := commitBlock(t, d, common.Hash{}, 1,
		opAddBalance(alice, 1000), opDeploy(bob, code), opSetState(bob, slot1, common.HexToHash("0x2a")))

	tr, err := d.OpenTrie(root)
	if err != nil {
		t.Fatal(err)
	}
	// Reads through the trie see the tip; storage absent is nil.
	acc, err := tr.GetAccount(alice)
	if err != nil || acc == nil || acc.Balance.Uint64() != 1000 || acc.Root != (common.Hash{}) ||
		common.BytesToHash(acc.CodeHash) != types.EmptyCodeHash {
		t.Fatalf("GetAccount(alice) = %+v, %v", acc, err)
	}
	if v, err := tr.GetStorage(bob, slot1[:]); err != nil || common.BytesToHash(v) != common.HexToHash("0x2a") || len(v) != 32 {
		t.Fatalf("GetStorage(bob, 1) = %x, %v", v, err)
	}
	if v, err := tr.GetStorage(bob, common.HexToHash("0x99").Bytes()); err != nil || v != nil {
		t.Fatalf("GetStorage of an absent slot = %x, %v; want nil", v, err)
	}
	// A buffered write is visible to the next read; Hash applies it.
	if err := tr.UpdateStorage(alice, slot1[:], []byte{0x07}); err != nil {
		t.Fatal(err)
	}
	if v, err := tr.GetStorage(alice, slot1[:]); err != nil || common.BytesToHash(v) != common.HexToHash("0x07") {
		t.Fatalf("GetStorage after UpdateStorage = %x, %v", v, err)
	}
	h := tr.Hash()
	if tip, _ := udb.Root(); common.Hash(tip) != h || h == root {
		t.Fatalf("Hash() = %s, tip %s, parent %s", h, common.Hash(tip), root)
	}
	if err := tr.UpdateStorage(alice, slot1[:], []byte{0x01}); err != nil {
		t.Fatal(err)
	}
	if err := tr.UpdateStorage(alice, slot1[:], []byte{0x07}); err != nil {
		t.Fatal(err)
	}
	if h2, _ := tr.Commit(false); h2 != h {
		t.Fatalf("rewriting a slot back: root %s, want %s", h2, h)
	}
	// Unsupported features fail clearly.
	if _, err := tr.NodeIterator(nil); err == nil || !strings.Contains(err.Error(), "not supported by the ubt adapter") {
		t.Fatalf("NodeIterator error = %v", err)
	}
	if err := tr.Prove(nil, nil); err == nil || !strings.Contains(err.Error(), "ubt.DB.Prove") {
		t.Fatalf("Prove error = %v", err)
	}
	if _, err := d.Iteratee(root); err == nil || !strings.Contains(err.Error(), "not supported by the ubt adapter") {
		t.Fatalf("Iteratee error = %v", err)
	}
	if w := tr.Witness(); len(w) != 0 {
		t.Fatalf("Witness() = %v", w)
	}
	if _, err := tr.GetStorage(alice, []byte{1}); err == nil {
		t.Fatal("GetStorage with a 1-byte key did not fail")
	}

	// Code reads through a reader: by the account's code hash only.
	r, err := d.Reader(root)
	if err != nil {
		t.Fatal(err)
	}
	hash := common.BytesToHash(crypto.Keccak256(code))
	if got := r.Code(bob, hash); string(got) != string(code) || r.CodeSize(bob, hash) != len(code) || !r.Has(bob, hash) {
		t.Fatalf("Code(bob) = %x, size %d, has %v", got, r.CodeSize(bob, hash), r.Has(bob, hash))
	}
	if r.Code(alice, hash) != nil || r.Has(alice, hash) || r.CodeSize(alice, hash) != 0 {
		t.Fatal("Code of an account with other code is not nil")
	}
	if r.Code(bob, common.HexToHash("0x1234")) != nil {
		t.Fatal("Code with a wrong hash is not nil")
	}
	if r.Code(bob, types.EmptyCodeHash) != nil || r.Code(common.Address{}, hash) != nil {
		t.Fatal("Code of the empty hash or an absent account is not nil")
	}
	if v, err := r.Storage(bob, common.HexToHash("0x99")); err != nil || v != (common.Hash{}) {
		t.Fatalf("Storage of an absent slot = %x, %v", v, err)
	}
}

func TestErrors(t *testing.T) {
	udb := openUBT(t, t.TempDir())
	defer udb.Close()
	d := NewDatabase(udb)
	root1 := commitBlock(t, d, common.Hash{}, 1, opAddBalance(alice, 1000), opSetState(alice, slot1, common.HexToHash("0x05")))
	root2 := commitBlock(t, d, root1, 2, opAddBalance(alice, 1), opSetState(alice, slot1, common.HexToHash("0x06")))

	// OpenTrie below the tip names both roots.
	_, err := d.OpenTrie(root1)
	if !errors.Is(err, ErrNotTip) || !strings.Contains(err.Error(), root1.Hex()) || !strings.Contains(err.Error(), root2.Hex()) {
		t.Fatalf("OpenTrie(root1) error = %v; want ErrNotTip naming %s and %s", err, root1, root2)
	}
	// A StateDB built on a non-tip root fails at commit, with ErrNotTip.
	s, err := state.New(root1, d)
	if err != nil {
		t.Fatal(err)
	}
	s.AddBalance(bob, u256(1), 0)
	s.Finalise(rules)
	if _, err := s.Commit(rules, 2); err == nil {
		t.Fatal("commit of a block on a non-tip parent succeeded")
	}
	if !errors.Is(s.Error(), ErrNotTip) {
		t.Fatalf("StateDB error = %v; want ErrNotTip", s.Error())
	}
	// Commit of an update whose root is not the tip.
	err = d.Commit(&state.StateUpdate{OriginRoot: root1, Root: common.HexToHash("0x1234"), BlockNumber: 3})
	if !errors.Is(err, ErrNotTip) {
		t.Fatalf("Commit of a non-tip root: %v; want ErrNotTip", err)
	}
	if err := d.Commit(&state.StateUpdate{OriginRoot: root2, Root: root2}); err != nil {
		t.Fatalf("Commit of an empty update: %v", err)
	}
	// A reader at an unknown root.
	if _, err := d.Reader(common.HexToHash("0x1234")); !errors.Is(err, ubt.ErrUnknownRoot) {
		t.Fatalf("Reader at an unknown root: %v; want ErrUnknownRoot", err)
	}

	// Reads at a root that is reverted away fail cleanly.
	r, err := d.Reader(root2)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := state.New(root2, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := udb.Revert(ubt.Root(root1)); err != nil {
		t.Fatalf("Revert(root1): %v", err)
	}
	if _, err := r.Account(alice); !errors.Is(err, ubt.ErrSnapshotReverted) {
		t.Fatalf("Account after revert: %v; want ErrSnapshotReverted", err)
	}
	if _, err := r.Storage(alice, slot1); !errors.Is(err, ubt.ErrSnapshotReverted) {
		t.Fatalf("Storage after revert: %v; want ErrSnapshotReverted", err)
	}
	if got := s2.GetBalance(alice); !got.IsZero() {
		t.Fatalf("StateDB balance after revert = %v; want 0 with an error recorded", got)
	}
	if !errors.Is(s2.Error(), ubt.ErrSnapshotReverted) {
		t.Fatalf("StateDB error after revert = %v; want ErrSnapshotReverted", s2.Error())
	}
	// The reverted-to parent is the tip again: a new block builds on it.
	s3, err := state.New(root1, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := s3.GetState(alice, slot1); got != common.HexToHash("0x05") {
		t.Fatalf("slot after revert = %x, want 5", got)
	}
	root2b := execBlock(t, s3, 2, []tx{{opAddBalance(bob, 9)}})
	if tip, _ := udb.Root(); common.Hash(tip) != root2b || root2b == root2 {
		t.Fatalf("block 2b root %s, tip %s, reverted block 2 %s", root2b, common.Hash(tip), root2)
	}
}

// TestCopyPanics documents the known limitation: StateDB.Copy panics once
// the trie is open, since go-ethereum's mustCopyTrie knows only its own
// trie types.
func TestCopyPanics(t *testing.T) {
	udb := openUBT(t, t.TempDir())
	defer udb.Close()
	d := NewDatabase(udb)
	s, err := state.New(common.Hash{}, d)
	if err != nil {
		t.Fatal(err)
	}
	s.AddBalance(alice, u256(1), 0)
	_ = s.Copy() // no trie yet: fine
	s.IntermediateRoot(rules)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "unknown trie type") {
			t.Fatalf("Copy after IntermediateRoot: recovered %v; want the unknown trie type panic", r)
		}
	}()
	s.Copy()
	t.Fatal("Copy after IntermediateRoot did not panic")
}

// TestConcurrentReaders reads committed roots from several goroutines,
// through Database.Reader and StateDBs, while the writer executes and
// commits further blocks. Block n sets alice's balance to 1000n and her
// slot 1 to n, so a reader at block n's root must see exactly those.
func TestConcurrentReaders(t *testing.T) {
	udb := openUBT(t, t.TempDir())
	defer udb.Close()
	d := NewDatabase(udb)

	type published struct {
		n      uint64
		root   common.Hash
		reader state.Reader // opened by the writer right after the commit
	}
	var (
		mu    sync.Mutex
		roots []published
		done  = make(chan struct{})
		errs  = make(chan error, 100)
		wg    sync.WaitGroup
	)
	check := func(n uint64, r state.Reader) error {
		acc, err := r.Account(alice)
		if err != nil {
			return err
		}
		if acc == nil || acc.Balance.Uint64() != 1000*n {
			return fmt.Errorf("block %d: alice = %+v, want balance %d", n, acc, 1000*n)
		}
		v, err := r.Storage(alice, slot1)
		if err != nil {
			return err
		}
		if v != common.BigToHash(u256(n).ToBig()) {
			return fmt.Errorf("block %d: slot 1 = %x", n, v)
		}
		return nil
	}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				snap := append([]published(nil), roots...)
				mu.Unlock()
				if len(snap) == 0 {
					continue
				}
				p := snap[i%len(snap)]
				if err := check(p.n, p.reader); err != nil {
					errs <- err
					return
				}
				// A fresh reader of the newest root: the writer may have
				// persisted a later block meanwhile (only the last persisted
				// block and the layers in memory are readable).
				last := snap[len(snap)-1]
				r, err := d.Reader(last.root)
				if errors.Is(err, ubt.ErrUnknownRoot) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if err := check(last.n, r); err != nil {
					errs <- err
					return
				}
				s, err := state.New(last.root, d)
				if err != nil {
					if errors.Is(err, ubt.ErrUnknownRoot) {
						continue
					}
					errs <- err
					return
				}
				if got := s.GetBalance(alice).Uint64(); got != 1000*last.n || s.Error() != nil {
					errs <- fmt.Errorf("StateDB at block %d: balance %d, error %v", last.n, got, s.Error())
					return
				}
			}
		}()
	}
	sc := newScenario(1, true)
	var root common.Hash
	for n := uint64(1); n <= 30; n++ {
		s, err := state.New(root, d)
		if err != nil {
			t.Fatal(err)
		}
		ops := tx{func(s *state.StateDB) {
			s.SetBalance(alice, u256(1000*n), 0)
			s.SetState(alice, slot1, common.BigToHash(u256(n).ToBig()))
		}}
		txs := append(sc.block(int(n)), ops)
		root = execBlock(t, s, n, txs)
		r, err := d.Reader(root)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		roots = append(roots, published{n, root, r})
		mu.Unlock()
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every published snapshot still reads its own block.
	for _, p := range roots {
		if err := check(p.n, p.reader); err != nil {
			t.Error(err)
		}
	}
}

// Close releases the snapshots of readers still reachable: the directory
// can be reopened at once (without Close it stays locked while a StateDB
// holds a reader), and reads through a released reader fail cleanly.
func TestCloseReleasesReaders(t *testing.T) {
	dir := t.TempDir()
	db := openUBT(t, dir)
	d := NewDatabase(db)
	root := commitBlock(t, d, common.Hash{}, 1, func(s *state.StateDB) {
		s.SetNonce(alice, 7, 0)
	})
	held, err := d.Reader(root) // kept reachable until the end
	if err != nil {
		t.Fatal(err)
	}
	sdb, err := state.New(root, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := sdb.GetNonce(alice); got != 7 {
		t.Fatalf("nonce %d before Close, want 7", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ubt.Open(dir, nil); !errors.Is(err, ubt.ErrLocked) {
		t.Fatalf("reopen with readers held: %v, want ErrLocked", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := ubt.Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen after Database.Close: %v", err)
	}
	defer again.Close()
	if _, err := held.Account(alice); !errors.Is(err, ubt.ErrBadHandle) {
		t.Fatalf("a released reader: %v, want ErrBadHandle", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	runtime.KeepAlive(sdb)
}

package ubt_test

import (
	"os"
	"path/filepath"
	"testing"

	ubt "github.com/ubt/bindings/go"
)

// Every call on a closed database or reader, and a second close, is an
// ErrBadHandle error; a reader outlives the database it came from.
func TestUseAfterCloseAndDoubleClose(t *testing.T) {
	dir := t.TempDir()
	db, err := ubt.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := db.Apply([]ubt.Write{{Key: key(1), Value: word(1)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Reader(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mustCode(t, "second Close", db.Close(), ubt.ErrBadHandle)
	_, err = db.Apply(nil)
	mustCode(t, "Apply after Close", err, ubt.ErrBadHandle)
	_, _, err = db.Get(key(1))
	mustCode(t, "Get after Close", err, ubt.ErrBadHandle)
	_, err = db.Reader(root)
	mustCode(t, "Reader after Close", err, ubt.ErrBadHandle)
	_, err = db.Stats()
	mustCode(t, "Stats after Close", err, ubt.ErrBadHandle)

	if v, found, err := r.Get(key(1)); err != nil || !found || v != word(1) {
		t.Fatalf("a reader after its database closed: %x, %v, %v", v, found, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	mustCode(t, "second Reader.Close", r.Close(), ubt.ErrBadHandle)
	_, _, err = r.Get(key(1))
	mustCode(t, "Reader.Get after Close", err, ubt.ErrBadHandle)
	_, err = r.Root()
	mustCode(t, "Reader.Root after Close", err, ubt.ErrBadHandle)
}

// Opening: a missing database without creation, a directory that is not
// a database, a second writer, a writer beside readers.
func TestOpenErrors(t *testing.T) {
	_, err := ubt.Open(filepath.Join(t.TempDir(), "absent"), &ubt.Options{NoCreate: true})
	mustCode(t, "NoCreate on a missing database", err, ubt.ErrNotFound)

	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ubt.Open(foreign, nil)
	mustCode(t, "a directory of other files", err, ubt.ErrNotADatabase)

	_, err = ubt.Open(t.TempDir(), &ubt.Options{GroupDepth: 9})
	mustCode(t, "group depth 9", err, ubt.ErrInvalidOptions)

	db, dir := open(t, nil)
	if _, err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = ubt.Open(dir, nil)
	mustCode(t, "a second writer", err, ubt.ErrLocked)
	_, err = ubt.OpenReadOnly(dir, nil)
	mustCode(t, "a reader beside the writer", err, ubt.ErrLocked)
}

// A read-only database reads and refuses every write.
func TestReadOnlyRefusesWrites(t *testing.T) {
	db, dir := open(t, nil)
	root, err := db.Apply([]ubt.Write{{Key: key(4), Value: word(4)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := ubt.OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, found, err := ro.Get(key(4)); err != nil || !found || v != word(4) {
		t.Fatalf("read-only Get: %x, %v, %v", v, found, err)
	}
	_, err = ro.Apply([]ubt.Write{{Key: key(5), Value: word(5)}})
	mustCode(t, "Apply on a read-only database", err, ubt.ErrReadOnly)
	_, err = ro.ApplyAccounts([]ubt.AccountOp{ubt.DeleteAccount(addr(1))})
	mustCode(t, "ApplyAccounts on a read-only database", err, ubt.ErrReadOnly)
	// A checkpoint with nothing to write is a no-op, read-only or not.
	if err := ro.Checkpoint(); err != nil {
		t.Fatalf("Checkpoint on a read-only database: %v", err)
	}
	mustCode(t, "Revert on a read-only database", ro.Revert(root), ubt.ErrReadOnly)
}

// Roots out of reach, reverted snapshots, tree-key writes on a flat
// index, and operation kinds the library does not know.
func TestEngineErrors(t *testing.T) {
	db, _ := open(t, nil)
	root1, err := db.Apply([]ubt.Write{{Key: key(1), Value: word(1)}})
	if err != nil {
		t.Fatal(err)
	}
	root2, err := db.Apply([]ubt.Write{{Key: key(2), Value: word(2)}})
	if err != nil {
		t.Fatal(err)
	}
	unknown := ubt.Root{0xde, 0xad}
	mustCode(t, "Persist of an unknown root", db.Persist(unknown), ubt.ErrUnknownRoot)
	mustCode(t, "Revert to an unknown root", db.Revert(unknown), ubt.ErrUnknownRoot)
	_, err = db.Reader(unknown)
	mustCode(t, "Reader at an unknown root", err, ubt.ErrUnknownRoot)

	r2, err := db.Reader(root2)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := db.Revert(root1); err != nil {
		t.Fatal(err)
	}
	if tip, err := db.Root(); err != nil || tip != root1 {
		t.Fatalf("tip after Revert = %v, %v; want %v", tip, err, root1)
	}
	_, _, err = r2.Get(key(2))
	mustCode(t, "a reader of a reverted root", err, ubt.ErrSnapshotReverted)

	_, err = db.ApplyAccounts([]ubt.AccountOp{{Kind: ubt.OpKind(99), Address: addr(1)}})
	mustCode(t, "an unknown operation kind", err, ubt.ErrInvalidArgument)
	if tip, err := db.Root(); err != nil || tip != root1 {
		t.Fatalf("a refused block changed the tip to %v (%v)", tip, err)
	}

	flat, _ := open(t, &ubt.Options{FlatIndex: true})
	_, err = flat.Apply([]ubt.Write{{Key: key(1), Value: word(1)}})
	mustCode(t, "tree-key writes on a flat index", err, ubt.ErrOwnersRequired)
}

package ubt_test

import (
	"bytes"
	"syscall"
	"testing"

	ubt "github.com/ubt/bindings/go"
)

// A block of tree-key writes reads back at the tip, through a reader,
// after a commit and after reopening; the root is the same each way.
func TestWritesReadBackAndSurviveReopen(t *testing.T) {
	db, dir := open(t, nil)
	var writes []ubt.Write
	for i := uint64(1); i <= 500; i++ {
		writes = append(writes, ubt.Write{Key: key(i), Value: word(i * 7)})
	}
	root, err := db.Apply(writes)
	if err != nil {
		t.Fatal(err)
	}
	if root == (ubt.Root{}) {
		t.Fatal("the root of 500 writes is the empty root")
	}
	tip, err := db.Root()
	if err != nil || tip != root {
		t.Fatalf("Root() = %v, %v; want %v", tip, err, root)
	}
	committed, err := db.CommittedRoot()
	if err != nil || committed != (ubt.Root{}) {
		t.Fatalf("CommittedRoot() before any persist = %v, %v; want the empty root", committed, err)
	}
	check := func(label string, getMany func([][32]byte) ([][32]byte, []bool, error)) {
		t.Helper()
		keys := [][32]byte{key(1), key(250), key(500), key(501)}
		values, found, err := getMany(keys)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		for i, want := range []uint64{7, 1750, 3500} {
			if !found[i] || values[i] != word(want) {
				t.Fatalf("%s: key %d = %x (found %v), want %d", label, i, values[i], found[i], want)
			}
		}
		if found[3] || values[3] != ([32]byte{}) {
			t.Fatalf("%s: an absent key reads as found %v, %x", label, found[3], values[3])
		}
	}
	check("db", db.GetMany)
	if v, found, err := db.Get(key(9)); err != nil || !found || v != word(63) {
		t.Fatalf("Get = %x, %v, %v", v, found, err)
	}
	if got, err := db.Commit(); err != nil || got != root {
		t.Fatalf("Commit() = %v, %v; want %v", got, err, root)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := ubt.Open(dir, &ubt.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := again.Root(); err != nil || got != root {
		t.Fatalf("reopened Root() = %v, %v; want %v", got, err, root)
	}
	check("reopened", again.GetMany)
	r, err := again.Reader(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check("reader", r.GetMany)
	stats, err := again.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.LeafCount != 500 || stats.Root != root || stats.GroupDepth == 0 || stats.ReadBackend == "" {
		t.Fatalf("stats %+v: want 500 leaves at root %v, a group depth and a read backend", stats, root)
	}
}

// Account-level writes follow go-ethereum's semantics: a deleted slot is a
// present zero, a deleted account reads as absent while its storage stays,
// code reads back from its chunks.
func TestAccountLevelWrites(t *testing.T) {
	db, _ := open(t, &ubt.Options{FlatIndex: true})
	a := addr(1)
	code := bytes.Repeat([]byte{0x60, 0x01, 0x5b}, 2000) // 6,000 bytes: 194 chunks over two stems
	var codeHash [32]byte
	codeHash[0] = 0xcc
	root1, err := db.ApplyAccounts([]ubt.AccountOp{
		ubt.SetAccount(a, ubt.Account{Nonce: 3, Balance: word(1000), CodeHash: codeHash, CodeSize: uint32(len(code))}),
		ubt.SetCode(a, code),
		ubt.SetStorage(a, word(1), word(11)),
		ubt.SetStorage(a, word(2), word(22)),
	})
	if err != nil {
		t.Fatal(err)
	}
	acct, found, err := db.Account(a)
	if err != nil || !found || acct.Nonce != 3 || acct.Balance != word(1000) || acct.CodeHash != codeHash || acct.CodeSize != 6000 {
		t.Fatalf("Account = %+v, %v, %v", acct, found, err)
	}
	got, found, err := db.Code(a)
	if err != nil || !found || !bytes.Equal(got, code) {
		t.Fatalf("Code = %d bytes, %v, %v; want the %d bytes written", len(got), found, err, len(code))
	}
	root2, err := db.ApplyAccounts([]ubt.AccountOp{ubt.DeleteStorage(a, word(1)), ubt.DeleteAccount(a)})
	if err != nil {
		t.Fatal(err)
	}
	if root2 == root1 {
		t.Fatal("deleting a slot and the account left the root unchanged")
	}
	if _, found, err := db.Account(a); err != nil || found {
		t.Fatalf("a deleted account reads as found %v, %v", found, err)
	}
	if v, found, err := db.Storage(a, word(1)); err != nil || !found || v != ([32]byte{}) {
		t.Fatalf("a deleted slot = %x, found %v, %v; want a present zero", v, found, err)
	}
	if v, found, err := db.Storage(a, word(2)); err != nil || !found || v != word(22) {
		t.Fatalf("a slot of a deleted account = %x, found %v, %v; want it kept", v, found, err)
	}
	// The snapshot at the first root still sees the account.
	r, err := db.Reader(root1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if acct, found, err := r.Account(a); err != nil || !found || acct.Nonce != 3 {
		t.Fatalf("reader at root1: %+v, %v, %v", acct, found, err)
	}
	if got, found, err := r.Code(a); err != nil || !found || !bytes.Equal(got, code) {
		t.Fatalf("reader code: %d bytes, %v, %v", len(got), found, err)
	}
	if _, found, err := db.Code(addr(2)); err != nil || found {
		t.Fatalf("code of an absent account: found %v, %v", found, err)
	}
}

// Proofs from the tip and from a reader verify against their roots and
// are rejected against another root or for unproven keys.
func TestProofsVerify(t *testing.T) {
	db, _ := open(t, nil)
	root, err := db.Apply([]ubt.Write{{Key: key(1), Value: word(5)}, {Key: key(2), Value: word(6)}})
	if err != nil {
		t.Fatal(err)
	}
	keys := [][32]byte{key(1), key(3)}
	proof, err := db.Prove(keys)
	if err != nil {
		t.Fatal(err)
	}
	values, found, err := ubt.VerifyProof(proof, root, keys)
	if err != nil {
		t.Fatal(err)
	}
	if !found[0] || values[0] != word(5) || found[1] {
		t.Fatalf("verified values %x, found %v", values, found)
	}
	other, err := db.Apply([]ubt.Write{{Key: key(1), Value: word(9)}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ubt.VerifyProof(proof, other, keys)
	mustCode(t, "a proof against another root", err, ubt.ErrProofRejected)
	_, _, err = ubt.VerifyProof(proof, root, [][32]byte{key(2)})
	mustCode(t, "a key the proof does not cover", err, ubt.ErrKeyNotProven)
	_, _, err = ubt.VerifyProof([]byte{1, 2, 3}, root, keys)
	mustCode(t, "proof bytes that do not decode", err, ubt.ErrProofRejected)

	r, err := db.Reader(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	proof, err = r.Prove(keys)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ubt.VerifyProof(proof, root, keys); err != nil {
		t.Fatalf("a reader's proof: %v", err)
	}
}

// Direct reads (O_DIRECT) read back what was written, across a reopen
// with a cache far smaller than the data, and Stats says they are in
// effect: on a file system that allows them (anything but tmpfs here),
// and never when they were not asked for.
func TestDirectReads(t *testing.T) {
	db, dir := open(t, &ubt.Options{DirectReads: true})
	var writes []ubt.Write
	for i := uint64(1); i <= 3000; i++ {
		writes = append(writes, ubt.Write{Key: key(i), Value: word(i * 3)})
	}
	root, err := db.Apply(writes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	wantDirect := fs.Type != tmpfsMagic
	for _, direct := range []bool{true, false} {
		again, err := ubt.Open(dir, &ubt.Options{NoCreate: true, DirectReads: direct, MemoryBudget: 256 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := again.Root(); err != nil || got != root {
			t.Fatalf("direct %v: Root() = %v, %v; want %v", direct, got, err, root)
		}
		keys := make([][32]byte, 0, 3000)
		for i := uint64(1); i <= 3000; i++ {
			keys = append(keys, key(i))
		}
		values, found, err := again.GetMany(keys)
		if err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if !found[i] || values[i] != word(uint64(i+1)*3) {
				t.Fatalf("direct %v: key %d = %x (found %v)", direct, i+1, values[i], found[i])
			}
		}
		stats, err := again.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if stats.DirectReads != (direct && wantDirect) {
			t.Fatalf("asked for direct reads %v on file system 0x%x: Stats().DirectReads = %v", direct, fs.Type, stats.DirectReads)
		}
		if err := again.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

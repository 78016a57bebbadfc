package ubt_test

import (
	"errors"
	"testing"

	ubt "github.com/ubt/bindings/go"
)

// open opens a fresh database in a temporary directory and closes it when
// the test ends (a double close is harmless: it returns ErrBadHandle).
func open(t *testing.T, opts *ubt.Options) (*ubt.DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := ubt.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, dir
}

// word is a 32-byte big-endian number.
func word(n uint64) [32]byte {
	var w [32]byte
	for i := 0; i < 8; i++ {
		w[31-i] = byte(n >> (8 * i))
	}
	return w
}

// key is a tree key spread over the key space: stem from n, sub-index n.
func key(n uint64) [32]byte {
	k := word(n * 0x9e3779b97f4a7c15)
	k[0] = byte(n * 31)
	k[31] = byte(n)
	return k
}

// addr is an address made from n.
func addr(n uint64) [20]byte {
	var a [20]byte
	a[0] = 0xaa
	for i := 0; i < 8; i++ {
		a[19-i] = byte(n >> (8 * i))
	}
	return a
}

// mustCode asserts that err carries code.
func mustCode(t *testing.T, what string, err error, code ubt.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, code)
	}
	if !errors.Is(err, code) {
		t.Fatalf("%s: %v, want %v", what, err, code)
	}
	var e *ubt.Error
	if !errors.As(err, &e) || e.Message == "" || e.Op == "" {
		t.Fatalf("%s: %#v is not an *ubt.Error with an operation and a message", what, err)
	}
}

// isCode reports whether err carries code.
func isCode(err error, code ubt.Code) bool {
	return errors.Is(err, code)
}

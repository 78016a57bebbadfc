//go:build ubt

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// ubtEngines are the ubt configurations the tests cover.
var ubtEngines = []engineOpts{
	{engine: engineUBT, groupDepth: ubtDefaultGroupDepth, cacheMB: 64, chunk: 1_000_000, flatIndex: true},
	{engine: engineUBT, groupDepth: ubtDefaultGroupDepth, cacheMB: 64, chunk: 1_000_000},
	{engine: engineUBT, groupDepth: 3, cacheMB: 64, chunk: 1_000_000, flatIndex: true},
}

// TestUBTMatchesBintrie loads and runs both tiny workloads on geth's
// StateDB over ubt (raw mode: ubt's tree-key API) and on geth's own binary
// trie, and checks that every root is the same: the load root, each
// block's root, the expected files, and the persisted root after reopening.
func TestUBTMatchesBintrie(t *testing.T) {
	bintrie := engineOpts{engine: engineBintrie, groupDepth: 5, cacheMB: 64, chunk: 1_000_000}
	for _, wdir := range []string{tinyDir, tinyRawDir} {
		w := mustWorkload(t, wdir)
		wantLoad, wantBlocks := loadAndRun(t, wdir, bintrie, filepath.Join(t.TempDir(), "bintrie"))
		if wantLoad != expectedRoot(t, wdir) || !reflect.DeepEqual(wantBlocks, expectedBlockRoots(t, wdir)) {
			t.Fatalf("%s: bintrie roots %x %x differ from the expected files", wdir, wantLoad, wantBlocks)
		}
		for _, o := range ubtEngines {
			t.Run(w.Name+"/"+o.variant(), func(t *testing.T) {
				db := filepath.Join(t.TempDir(), "db")
				loadRoot, roots := loadAndRun(t, wdir, o, db)
				if loadRoot != wantLoad {
					t.Fatalf("load root %x, bintrie %x", loadRoot, wantLoad)
				}
				if !reflect.DeepEqual(roots, wantBlocks) {
					t.Fatalf("block roots %x\nbintrie     %x", roots, wantBlocks)
				}
				checkUBTHead(t, db, o, w.Mode, roots[len(roots)-1])

				// Running the blocks again on the changed database goes on
				// from the last root (blocks change the state: the first
				// root differs, nothing fails).
				out, errs, code := cli(append(append([]string{"run"}, engineArgs(o)...), "--db", db, "--workload", wdir, "--run", "3")...)
				if code != 0 || strings.Count(out, "\n") != len(roots) {
					t.Fatalf("second run: exit %d, %s%s", code, out, errs)
				}
			})
		}
	}
}

// checkUBTHead reopens a ubt database and checks its persisted root.
func checkUBTHead(t *testing.T, dir string, o engineOpts, mode string, want common.Hash) {
	t.Helper()
	// gethstate's readers hold ubt snapshots until the garbage collector
	// releases them (runtime.AddCleanup), and the snapshots keep the
	// database locked in this process after Close: collect, then reopen.
	var (
		u   *ubtStore
		err error
	)
	for range 50 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if u, err = openUBT(dir, &o, false, mode); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer u.db.Close()
	if stats, err := u.db.Stats(); err != nil || stats.FlatIndex != (o.flatIndex && mode != modeRaw) {
		t.Fatalf("reopened flat index %v (%v), want %v", stats.FlatIndex, err, o.flatIndex && mode != modeRaw)
	}
	if got, err := u.head(); err != nil || got != want {
		t.Fatalf("reopened head %x (%v), want %x", got, err, want)
	}
	if tip, err := u.db.Root(); err != nil || common.Hash(tip) != want {
		t.Fatalf("reopened tip %x (%v), want %x", tip, err, want)
	}
}

// TestUBTChunkedLoad checks that loads committed in chunks reach the root
// of one commit, and that the ubt directory is what disk_bytes counts.
func TestUBTChunkedLoad(t *testing.T) {
	for _, wdir := range []string{tinyDir, tinyRawDir} {
		want := expectedRoot(t, wdir)
		for _, chunk := range []string{"1000000", "7", "1"} {
			db := filepath.Join(t.TempDir(), "db")
			out, errs, code := cli("load", "--engine", "ubt", "--db", db, "--workload", wdir, "--chunk", chunk, "--cache", "32")
			var ev loadEvent
			if err := json.Unmarshal([]byte(out), &ev); err != nil || code != 0 {
				t.Fatalf("%s chunk %s: exit %d, %q, %s", wdir, chunk, code, out, errs)
			}
			if ev.Root != want.Hex() || ev.Engine != "geth-ubt" || ev.Variant != "gd6" || ev.DiskBytes == 0 {
				t.Fatalf("%s chunk %s: %+v, want root %s", wdir, chunk, ev, want.Hex())
			}
			if _, err := os.Stat(filepath.Join(db, ubtDirName)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestUBTBadInput checks ubt-specific refusals.
func TestUBTBadInput(t *testing.T) {
	tmp := t.TempDir()
	loaded := filepath.Join(tmp, "bintrie")
	if _, errs, code := cli("load", "--engine", "bintrie", "--db", loaded, "--workload", tinyDir); code != 0 {
		t.Fatal(errs)
	}
	ubtDB := filepath.Join(tmp, "ubt")
	if _, errs, code := cli("load", "--engine", "ubt", "--db", ubtDB, "--workload", tinyDir); code != 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "--engine", "ubt", "--db", loaded, "--workload", tinyDir, "--run", "1"}, "loaded with --engine bintrie"},
		{[]string{"run", "--engine", "bintrie", "--db", ubtDB, "--workload", tinyDir, "--run", "1"}, "loaded with --engine ubt"},
		{[]string{"run", "--engine", "ubt", "--group-depth", "4", "--db", ubtDB, "--workload", tinyDir, "--run", "1"}, "--group-depth 6"},
		{[]string{"run", "--engine", "ubt", "--flat-index", "off", "--db", ubtDB, "--workload", tinyDir, "--run", "1"}, "flat index"},
		{[]string{"run", "--engine", "ubt", "--flat-index", "maybe", "--db", ubtDB, "--workload", tinyDir, "--run", "1"}, "expected on or off"},
		{[]string{"run", "--engine", "bintrie", "--flat-index", "on", "--db", loaded, "--workload", tinyDir, "--run", "1"}, "--engine ubt only"},
		{[]string{"run", "--engine", "ubt", "--db", ubtDB, "--workload", tinyRawDir, "--run", "1"}, "accounts-mode state"},
		{[]string{"load", "--engine", "ubt", "--db", ubtDB, "--workload", tinyDir}, "not empty"},
	}
	for _, c := range cases {
		out, errs, code := cli(c.args...)
		if code != 2 || !strings.Contains(errs, c.msg) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q", c.args, code, errs, out, c.msg)
		}
	}
}

// TestUBTCodeIndex checks the code lookup by hash from state.jsonl.
func TestUBTCodeIndex(t *testing.T) {
	w := mustWorkload(t, tinyDir)
	ci := &codeIndex{w: w}
	var code []byte
	if _, err := streamState(w, 5, func(recs []stateRecord) error {
		for _, r := range recs {
			if r.kind == recAccount && len(r.code) > 0 && code == nil {
				code = r.code
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := ci.get(crypto.Keccak256Hash(code))
	if err != nil || string(got) != string(code) {
		t.Fatalf("code by hash: %d bytes (%v), want %d", len(got), err, len(code))
	}
	if got, err := ci.get(common.Hash{1}); err != nil || got != nil {
		t.Fatalf("unknown hash: %x %v", got, err)
	}
}

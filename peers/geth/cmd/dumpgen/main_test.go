package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/core/rawdb"
)

const fixtureDir = "../../../../test-vectors/geth-dump"

// The committed fixtures are what the program writes (it is deterministic).
func TestFixturesUpToDate(t *testing.T) {
	files, err := buildFixtures(7864)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(fixtureDir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, f.data) {
			t.Fatalf("%s is stale: regenerate with go run ./cmd/dumpgen -out ../../test-vectors/geth-dump", f.name)
		}
	}
}

// The missing-preimage dump has exactly two lines with "key" and no
// "address", otherwise the same lines as small.jsonl.
func TestMissingPreimageLines(t *testing.T) {
	full := readLines(t, filepath.Join(fixtureDir, smallDump))
	part := readLines(t, filepath.Join(fixtureDir, missingDump))
	if len(full) != len(part) {
		t.Fatalf("%d lines vs %d", len(full), len(part))
	}
	var diff int
	for i := range full {
		if full[i] == part[i] {
			continue
		}
		diff++
		if strings.Contains(part[i], `"address"`) || !strings.Contains(part[i], `"key"`) {
			t.Fatalf("line %d: %s", i+1, part[i][:min(200, len(part[i]))])
		}
	}
	if diff != 2 {
		t.Fatalf("%d lines differ, want 2", diff)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	blob, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(blob), "\n"), "\n")
}

// synthetic runs the generator in memory.
func synthetic(t *testing.T, entries, seed uint64, ubt bool) ([]byte, *synthStats) {
	t.Helper()
	var buf bytes.Buffer
	s, err := writeSynthetic(&buf, entries, seed, ubt)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), s
}

// Every synthetic account line is byte-identical to the line go-ethereum's
// own IterativeDump writes for that account once the accounts are committed
// to a real MPT (only the order and the root line differ).
func TestSyntheticLinesAreGethLines(t *testing.T) {
	out, stats := synthetic(t, 20_000, 3, false)
	_, accts, skipped, err := readDump(bytes.NewReader(out))
	if err != nil || skipped != 0 {
		t.Fatal(err, skipped)
	}
	if uint64(len(accts)) != stats.Accounts || stats.Contracts == 0 || stats.StorageSlots == 0 {
		t.Fatalf("stats %+v, %d accounts read", stats, len(accts))
	}
	db := rawdb.NewMemoryDatabase()
	root, err := buildMPT(db, accts)
	if err != nil {
		t.Fatal(err)
	}
	geth, err := dumpMPT(db, root)
	if err != nil {
		t.Fatal(err)
	}
	ours := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	theirs := strings.Split(strings.TrimSuffix(string(geth), "\n"), "\n")
	if ours[0] != `{"root":"0x0000000000000000000000000000000000000000000000000000000000000000"}` {
		t.Fatalf("root line %s", ours[0])
	}
	ours, theirs = ours[1:], theirs[1:]
	slices.Sort(ours)
	slices.Sort(theirs)
	if len(ours) != len(theirs) {
		t.Fatalf("%d lines, geth wrote %d", len(ours), len(theirs))
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Fatalf("line differs:\nours: %.300s\ngeth: %.300s", ours[i], theirs[i])
		}
	}
}

// Counts are exact, the output is deterministic per seed, and -ubt-root is
// the root of the accounts read back from the output.
func TestSyntheticCountsAndRoot(t *testing.T) {
	out, stats := synthetic(t, 30_000, 11, true)
	again, _ := synthetic(t, 30_000, 11, false)
	if !bytes.Equal(out, again) {
		t.Fatal("two runs with the same seed differ")
	}
	other, _ := synthetic(t, 30_000, 12, false)
	if bytes.Equal(out, other) {
		t.Fatal("different seeds give the same dump")
	}
	_, accts, _, err := readDump(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var entries, slots, code uint64
	for _, a := range accts {
		entries += a.treeEntries()
		slots += uint64(len(a.storage))
		code += uint64(len(a.code))
	}
	if entries != stats.Entries || slots != stats.StorageSlots || code != stats.CodeBytes || uint64(len(accts)) != stats.Accounts {
		t.Fatalf("stats %+v; read back %d accounts, %d entries, %d slots, %d code bytes", stats, len(accts), entries, slots, code)
	}
	if entries < 30_000 || entries > 30_000+2+800 {
		t.Fatalf("%d entries for a target of 30000", entries)
	}
	root, err := ubtRootOf(accts)
	if err != nil {
		t.Fatal(err)
	}
	if root.Hex() != stats.UBTRoot {
		t.Fatalf("ubt root %s, root of the dump %s", stats.UBTRoot, root.Hex())
	}
}

// expected.json matches a fresh reading of small.jsonl.
func TestExpectedMatchesDump(t *testing.T) {
	for _, c := range []struct{ dump, exp string }{{smallDump, smallExpected}, {missingDump, missingExpected}} {
		blob, err := os.ReadFile(filepath.Join(fixtureDir, c.exp))
		if err != nil {
			t.Fatal(err)
		}
		var e expected
		if err := json.Unmarshal(blob, &e); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(fixtureDir, c.dump))
		if err != nil {
			t.Fatal(err)
		}
		root, accts, skipped, err := readDump(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ubt, err := ubtRootOf(accts)
		if err != nil {
			t.Fatal(err)
		}
		got := summarize(c.dump, root, ubt, accts, skipped)
		if *got != e {
			t.Fatalf("%s: read %+v, expected file %+v", c.dump, got, e)
		}
		if e.File == smallDump && (e.SkippedAccounts != 0 || e.Accounts != 1803) {
			t.Fatalf("unexpected %+v", e)
		}
		if e.File == missingDump && e.SkippedAccounts != 2 {
			t.Fatalf("unexpected %+v", e)
		}
	}
}

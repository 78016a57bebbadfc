package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtureDir = "../../../../test-vectors/geth-dump"

type expectedFile struct {
	UBTRoot         string `json:"ubtRoot"`
	Accounts        uint64 `json:"accounts"`
	SkippedAccounts uint64 `json:"skippedAccounts"`
	StorageSlots    uint64 `json:"storageSlots"`
	CodeBytes       uint64 `json:"codeBytes"`
	TreeEntries     uint64 `json:"treeEntries"`
}

func readExpected(t *testing.T, name string) expectedFile {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var e expectedFile
	if err := json.Unmarshal(blob, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// cli runs dumpload in-process.
func cli(stdin string, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func checkResult(t *testing.T, stdout, stderr string, e expectedFile) {
	t.Helper()
	if strings.TrimSpace(stdout) != e.UBTRoot {
		t.Fatalf("root %q, want %s (stderr %s)", stdout, e.UBTRoot, stderr)
	}
	var r result
	if err := json.Unmarshal([]byte(stderr), &r); err != nil {
		t.Fatalf("stderr %q: %v", stderr, err)
	}
	if r.Root != e.UBTRoot || r.Accounts != e.Accounts || r.Skipped != e.SkippedAccounts ||
		r.StorageSlots != e.StorageSlots || r.CodeBytes != e.CodeBytes || r.TreeEntries != e.TreeEntries {
		t.Fatalf("result %+v, expected %+v", r, e)
	}
	if r.Seconds <= 0 || r.EntriesPerS <= 0 || r.DiskBytes == 0 {
		t.Fatalf("result %+v", r)
	}
}

// small.jsonl loads to expected.json's root with both APIs, any group
// depth and any commit interval.
func TestLoadSmall(t *testing.T) {
	e := readExpected(t, "expected.json")
	small := filepath.Join(fixtureDir, "small.jsonl")
	for _, c := range []struct {
		api         string
		gd, commits int
	}{
		{"statedb", 5, 10_000}, {"statedb", 1, 97}, {"statedb", 8, 500},
		{"trie", 5, 10_000}, {"trie", 1, 500}, {"trie", 8, 97},
	} {
		t.Run(fmt.Sprintf("%s-gd%d-every%d", c.api, c.gd, c.commits), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "db")
			out, errs, code := cli("", "--db", db, "--api", c.api, "--group-depth", fmt.Sprint(c.gd), "--commit-every", fmt.Sprint(c.commits), small)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			checkResult(t, out, errs, e)
		})
	}
}

// Standard input works as well as a path.
func TestLoadStdin(t *testing.T) {
	blob, err := os.ReadFile(filepath.Join(fixtureDir, "small.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(string(blob), "--db", filepath.Join(t.TempDir(), "db"), "--api", "trie", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkResult(t, out, errs, readExpected(t, "expected.json"))
}

// A line without address stops the load unless --skip-missing-preimages.
func TestMissingPreimages(t *testing.T) {
	dump := filepath.Join(fixtureDir, "small-missing-preimages.jsonl")
	_, errs, code := cli("", "--db", filepath.Join(t.TempDir(), "db"), dump)
	if code != 2 || !strings.Contains(errs, "line ") || !strings.Contains(errs, "missing preimage") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, api := range []string{"statedb", "trie"} {
		out, errs, code := cli("", "--db", filepath.Join(t.TempDir(), "db"), "--api", api, "--skip-missing-preimages", "--commit-every", "333", dump)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		checkResult(t, out, errs, readExpected(t, "expected-missing-preimages.json"))
	}
}

// Bad flags and bad input exit with status 2 and one line on stderr.
func TestBadInput(t *testing.T) {
	lines := readFixtureLines(t)
	nocode := strings.Replace(lines[1], `"code":"0x`, `"nocode":"0x`, 1)
	if nocode == lines[1] {
		t.Fatal("fixture line 2 has no code")
	}
	nonEmpty := t.TempDir()
	os.WriteFile(filepath.Join(nonEmpty, "x"), []byte("x"), 0o644)
	cases := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"no db", "", []string{"-"}, "--db is required"},
		{"no input", "", []string{"--db", "DB"}, "expected one input file"},
		{"group depth", "", []string{"--db", "DB", "--group-depth", "9", "-"}, "--group-depth"},
		{"api", "", []string{"--db", "DB", "--api", "mpt", "-"}, "--api"},
		{"non-empty db", lines[0] + "\n", []string{"--db", nonEmpty, "-"}, "not empty"},
		{"missing file", "", []string{"--db", "DB", "/nonexistent/dump.jsonl"}, "no such file"},
		{"empty input", "", []string{"--db", "DB", "-"}, "empty input"},
		{"no root line", lines[1] + "\n", []string{"--db", "DB", "-"}, "line 1"},
		{"bad json", lines[0] + "\n" + lines[1] + "\n{\"balance\":\n", []string{"--db", "DB", "-"}, "line 3"},
		{"code missing", lines[0] + "\n" + nocode + "\n", []string{"--db", "DB", "-"}, "codeHash"},
		{"bad balance", lines[0] + "\n" + strings.Replace(lines[1], `"balance":"`, `"balance":"x`, 1) + "\n", []string{"--db", "DB", "-"}, "balance"},
	}
	for _, c := range cases {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			if a == "DB" {
				a = filepath.Join(t.TempDir(), "db")
			}
			args[i] = a
		}
		out, errs, code := cli(c.stdin, args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errs)
		}
	}
}

func readFixtureLines(t *testing.T) []string {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(fixtureDir, "small.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(blob), "\n")
}

// Command dumpload loads an iterative state dump (`geth dump --iterative`,
// one JSON account per line after a {"root":…} line) into go-ethereum's own
// binary trie (EIP-7864, trie/bintrie) on its path database over Pebble, as
// a go-ethereum user would: a UBT StateDB fed with the genesis call sequence
// (AddBalance, SetCode, SetNonce, SetState per slot), committed every
// --commit-every accounts and flushed to disk at every commit so that memory
// stays bounded. It prints the final root on stdout and the throughput on
// stderr. It is the go-ethereum peer of ubt's state import.
//
//	dumpload --db DIR [--group-depth G] [--commit-every N] [--cache MB]
//	         [--api statedb|trie] [--skip-missing-preimages] FILE|-
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// errBadInput marks errors caused by flags or the input (exit status 2).
type errBadInput struct{ msg string }

func (e *errBadInput) Error() string { return e.msg }

func badInput(format string, args ...any) error { return &errBadInput{fmt.Sprintf(format, args...)} }

// options are the command-line settings.
type options struct {
	db          string
	groupDepth  int
	commitEvery int
	cacheMB     int
	api         string
	skipMissing bool
	input       string
}

const usage = `usage: dumpload --db DIR [--group-depth G] [--commit-every N] [--cache MB]
                [--api statedb|trie] [--skip-missing-preimages] FILE|-
`

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("dumpload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.StringVar(&o.db, "db", "", "directory for the new database (absent or empty)")
	fs.IntVar(&o.groupDepth, "group-depth", 5, "binary-trie levels per stored node group (1-8)")
	fs.IntVar(&o.commitEvery, "commit-every", 10_000, "accounts per commit (each commit is flushed to Pebble)")
	fs.IntVar(&o.cacheMB, "cache", 1024, "memory budget in MB, split as geth splits --cache")
	fs.StringVar(&o.api, "api", "statedb", "statedb (StateDB, as a go-ethereum user) or trie (bintrie API directly, no reads)")
	fs.BoolVar(&o.skipMissing, "skip-missing-preimages", false, "skip accounts without address instead of failing")
	if err := fs.Parse(args); err != nil {
		return nil, badInput("%v", err)
	}
	if fs.NArg() != 1 {
		return nil, badInput("expected one input file (or -), got %d arguments", fs.NArg())
	}
	o.input = fs.Arg(0)
	switch {
	case o.db == "":
		return nil, badInput("--db is required")
	case o.groupDepth < 1 || o.groupDepth > 8:
		return nil, badInput("--group-depth %d is not in 1..8", o.groupDepth)
	case o.commitEvery < 1:
		return nil, badInput("--commit-every must be positive")
	case o.cacheMB < 16:
		return nil, badInput("--cache must be at least 16 MB")
	case o.api != "statedb" && o.api != "trie":
		return nil, badInput("--api must be statedb or trie")
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command and returns the exit status: 0, 2 for bad input,
// 1 for other failures. Errors are one line on stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err == nil {
		var res *result
		if res, err = load(o, stdin); err == nil {
			fmt.Fprintln(stdout, res.Root)
			blob, _ := json.Marshal(res)
			fmt.Fprintln(stderr, string(blob))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "dumpload: %v\n", err)
		var bad *errBadInput
		if errors.As(err, &bad) {
			return 2
		}
		return 1
	}
	return 0
}

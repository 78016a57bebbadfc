// Command dumpgen writes state dumps in the format of `geth dump --iterative`
// for ubt's state import, with the binary-trie (UBT) root go-ethereum
// v1.17.10 computes for the same accounts.
//
//	dumpgen -out DIR [-seed S] [-check]
//	    builds a real MPT state with preimages (a few thousand accounts),
//	    dumps it with go-ethereum's own dump code and writes DIR/small.jsonl,
//	    DIR/expected.json, and DIR/small-missing-preimages.jsonl with
//	    DIR/expected-missing-preimages.json (the same state dumped after two
//	    account preimages were deleted). -check compares instead of writing.
//
//	dumpgen -synthetic -entries N [-seed S] -out FILE [-ubt-root]
//	    streams a large dump of about N binary-trie entries in the same line
//	    format without building an MPT (FILE "-" is stdout); prints the exact
//	    counts to stderr, and with -ubt-root also the UBT root computed by
//	    go-ethereum (for small N).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var (
		out       = flag.String("out", "", "output directory (fixture mode) or file (-synthetic; - for stdout)")
		seed      = flag.Uint64("seed", 7864, "seed of the deterministic generator")
		check     = flag.Bool("check", false, "fixture mode: compare with the files in -out instead of writing them")
		synthetic = flag.Bool("synthetic", false, "stream a synthetic dump instead of building the fixtures")
		entries   = flag.Uint64("entries", 1_000_000, "-synthetic: approximate number of binary-trie entries")
		ubtRoot   = flag.Bool("ubt-root", false, "-synthetic: also compute the UBT root with go-ethereum (small N only)")
	)
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: dumpgen -out DIR [-seed S] [-check] | dumpgen -synthetic -entries N [-seed S] -out FILE [-ubt-root]")
		os.Exit(2)
	}
	var err error
	if *synthetic {
		err = runSynthetic(*out, *entries, *seed, *ubtRoot)
	} else {
		err = runFixtures(*out, *seed, *check)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dumpgen: %v\n", err)
		os.Exit(1)
	}
}

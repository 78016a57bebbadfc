// Command geth-peer measures go-ethereum's state storage (the binary trie
// of trie/bintrie at any group depth, and the MPT, both on triedb/pathdb
// over Pebble) on ubt's workloads, and prints the same metrics as
// `ubt bench run` (docs/workload-format.md).
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(runCLI(os.Args[1:], os.Stdout, os.Stderr))
}

// runCLI runs one command and returns the exit status: 0, 2 for bad input,
// 1 for any other failure. Errors are one line on stderr.
func runCLI(args []string, stdout, stderr io.Writer) int {
	c, err := parseCommand(args)
	if err == nil {
		switch c.name {
		case "load":
			err = cmdLoad(c, stdout)
		case "run":
			err = cmdRun(c, stdout, stderr)
		case "root":
			err = cmdRoot(c, stdout)
		default: // help
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "geth-peer: %v\n", err)
		return exitCode(err)
	}
	return 0
}

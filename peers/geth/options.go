package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ethereum/go-ethereum/triedb"
)

const (
	engineBintrie = "bintrie"
	engineMPT     = "mpt"
	engineUBT     = "ubt" // geth's StateDB over ubt (ubt.go, build tag ubt)

	// ubtDefaultGroupDepth is ubt's own default group depth
	// (ubt_engine::DEFAULT_GROUP_DEPTH), used by --engine ubt when
	// --group-depth is not given.
	ubtDefaultGroupDepth = 6

	// defaultChunk bounds load's memory: geth's in-memory binary trie holds
	// about 6.2 KB per stem (a StemNode has 256 value slices), so a chunk of
	// 250,000 random keys peaks near 4.5 GB resident with Go's GC headroom.
	defaultChunk = 250_000
)

// engineOpts are the flags shared by load, run and root.
type engineOpts struct {
	engine     string
	groupDepth int
	cacheMB    int
	chunk      int // load: state records per commit
	// flatIndex (ubt only): on account states, ubt keeps its flat index
	// of account values (--flat-index on, the default, as ubt's runner).
	flatIndex bool
}

// engineName is the "engine" field of the output.
func (o *engineOpts) engineName() string { return "geth-" + o.engine }

// variant is the "variant" field of the output: gdG (bintrie), mpt, or
// for ubt gdG (with its flat index on account states) or gdG-noflat
// (without), named as ubt's own runner names those configurations.
func (o *engineOpts) variant() string {
	switch o.engine {
	case engineMPT:
		return "mpt"
	case engineUBT:
		if o.flatIndex {
			return fmt.Sprintf("gd%d", o.groupDepth)
		}
		return fmt.Sprintf("gd%d-noflat", o.groupDepth)
	}
	return fmt.Sprintf("gd%d", o.groupDepth)
}

// command is a parsed command line.
type command struct {
	name     string
	opts     engineOpts
	db       string
	workload string
	run      int
	verify   bool   // run: report per-block flush evidence on stderr
	witness  string // run: file for the per-block BinaryTrie.Witness() lines
}

const usage = `usage:
  geth-peer load --engine bintrie|mpt|ubt [--group-depth G] --db DIR --workload WDIR [--cache MB] [--chunk N]
  geth-peer run  --engine bintrie|mpt|ubt [--group-depth G] --db DIR --workload WDIR --run R [--cache MB] [--verify-flush] [--witness FILE]
  geth-peer root --engine bintrie [--group-depth G] --workload WDIR
`

// parseCommand parses the arguments after the program name.
func parseCommand(args []string) (*command, error) {
	if len(args) == 0 {
		return nil, badInput("missing command (load, run or root; geth-peer help shows usage)")
	}
	c := &command{name: args[0]}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.opts.engine, "engine", "", "bintrie, mpt or ubt")
	fs.IntVar(&c.opts.groupDepth, "group-depth", triedb.DefaultBinTrieGroupDepth, "group depth (1..8) of the binary trie (default 5) or of ubt (default 6)")
	fs.StringVar(&c.workload, "workload", "", "workload directory")
	fs.IntVar(&c.opts.cacheMB, "cache", 1024, "memory for caches in MiB, split like geth's --cache")
	flatIndex := fs.String("flat-index", "on", "ubt only: on (ubt's flat index of account values on account states) or off")
	switch c.name {
	case "load":
		fs.StringVar(&c.db, "db", "", "database directory (created)")
		fs.IntVar(&c.opts.chunk, "chunk", defaultChunk, "state records per commit")
	case "run":
		fs.StringVar(&c.db, "db", "", "database directory")
		fs.IntVar(&c.run, "run", 0, "run number")
		fs.BoolVar(&c.verify, "verify-flush", false, "print per-block WAL and device write counters on stderr")
		fs.StringVar(&c.witness, "witness", "", "write each block's BinaryTrie.Witness() to FILE (bintrie only)")
	case "root":
	case "help", "-h", "--help":
		return c, nil
	default:
		return nil, badInput("unknown command %q (load, run or root)", c.name)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return nil, badInput("%s: %v", c.name, err)
	}
	if fs.NArg() > 0 {
		return nil, badInput("%s: unexpected argument %q", c.name, strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch *flatIndex {
	case "on":
		c.opts.flatIndex = true
	case "off":
		c.opts.flatIndex = false
	default:
		return nil, badInput("--flat-index %q: expected on or off", *flatIndex)
	}
	if set["flat-index"] && c.opts.engine != engineUBT {
		return nil, badInput("--flat-index applies to --engine ubt only")
	}

	switch c.opts.engine {
	case engineBintrie:
		if c.opts.groupDepth < 1 || c.opts.groupDepth > 8 {
			return nil, badInput("--group-depth %d: must be 1..8", c.opts.groupDepth)
		}
	case engineMPT:
		if set["group-depth"] {
			return nil, badInput("--group-depth applies to --engine bintrie and ubt only")
		}
		c.opts.groupDepth = 0
	case engineUBT:
		if !set["group-depth"] {
			c.opts.groupDepth = ubtDefaultGroupDepth
		}
		if c.opts.groupDepth < 1 || c.opts.groupDepth > 8 {
			return nil, badInput("--group-depth %d: must be 1..8", c.opts.groupDepth)
		}
		if c.verify {
			return nil, badInput("--verify-flush applies to --engine bintrie and mpt only (it watches Pebble's WAL)")
		}
	case "":
		return nil, badInput("%s: --engine is required (bintrie, mpt or ubt)", c.name)
	default:
		return nil, badInput("--engine %q: expected bintrie, mpt or ubt", c.opts.engine)
	}
	if c.name == "root" && c.opts.engine != engineBintrie {
		return nil, badInput("root: only --engine bintrie is supported")
	}
	if c.workload == "" {
		return nil, badInput("%s: --workload is required", c.name)
	}
	if c.name != "root" && c.db == "" {
		return nil, badInput("%s: --db is required", c.name)
	}
	if set["witness"] {
		if c.opts.engine != engineBintrie {
			return nil, badInput("%v", errWitnessEngine)
		}
		if c.witness == "" {
			return nil, badInput("--witness needs a file name")
		}
	}
	if c.name == "run" && !set["run"] {
		return nil, badInput("run: --run is required")
	}
	if c.run < 0 {
		return nil, badInput("--run %d: must be non-negative", c.run)
	}
	if c.opts.cacheMB < 16 {
		return nil, badInput("--cache %d: at least 16 MiB", c.opts.cacheMB)
	}
	if c.name == "load" && c.opts.chunk < 1 {
		return nil, badInput("--chunk %d: must be positive", c.opts.chunk)
	}
	return c, nil
}

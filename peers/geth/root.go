package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
)

// memoryTrieDB is a path database over an in-memory key-value store.
func memoryTrieDB(opts *engineOpts) *triedb.Database {
	return triedb.NewDatabase(rawdb.NewMemoryDatabase(), &triedb.Config{
		IsUBT:             opts.engine == engineBintrie,
		BinTrieGroupDepth: opts.groupDepth,
		PathDB:            pathdb.Defaults,
	})
}

// errNoCommit guards the in-memory loaders, which never commit.
var errNoCommit = errors.New("in-memory root computation does not commit")

func noCommit(common.Hash, common.Hash, uint64, *trienode.NodeSet) error { return errNoCommit }

// stateRoot computes the root of a workload's state in memory, with the
// same loaders as load (one trie, never committed).
func stateRoot(w *workloadInfo, opts *engineOpts) (common.Hash, error) {
	tdb := memoryTrieDB(opts)
	defer tdb.Close()

	var (
		l   stateLoader
		err error
	)
	if w.Mode == modeRaw {
		l, err = newRawLoader(tdb, opts, noCommit)
	} else {
		l, err = newBintrieLoader(tdb, opts.groupDepth, nil, noCommit)
	}
	if err != nil {
		return common.Hash{}, err
	}
	if _, err := streamState(w, parseBatch, l.add); err != nil {
		return common.Hash{}, err
	}
	return l.hash(), nil
}

func cmdRoot(c *command, stdout io.Writer) error {
	w, err := readWorkload(c.workload)
	if err != nil {
		return err
	}
	root, err := stateRoot(w, &c.opts)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, root.Hex())
	return err
}

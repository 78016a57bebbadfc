package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
)

// loadEvent is the line load prints (docs/workload-format.md).
type loadEvent struct {
	Event     string  `json:"event"`
	Engine    string  `json:"engine"`
	Variant   string  `json:"variant"`
	Records   uint64  `json:"records"`
	Seconds   float64 `json:"seconds"`
	Root      string  `json:"root"`
	DiskBytes uint64  `json:"disk_bytes"`
	// CompactSeconds is the full compaction after the load (not in Seconds).
	CompactSeconds float64 `json:"compact_seconds"`
}

// parseBatch is how many parsed records travel from the parser at once.
const parseBatch = 4096

// commitNodes hands one commit's trie nodes to the path database as a new
// layer on top of parent and makes it durable.
func (s *store) commitNodes(root, parent common.Hash, block uint64, set *trienode.NodeSet) error {
	if root != parent {
		if err := s.tdb.Update(root, parent, block, trienode.NewWithNodeSet(set), triedb.NewStateSet()); err != nil {
			return fmt.Errorf("triedb update: %w", err)
		}
	}
	return s.persist(root, parent)
}

// newLoader picks the fastest correct way to load the workload's records:
// the trie API for the binary trie and for raw workloads, StateDB for MPT
// accounts (it also writes the flat state geth's MPT reads go through).
func newLoader(s *store, opts *engineOpts, mode string) (stateLoader, error) {
	switch {
	case mode == modeRaw:
		return newRawLoader(s.tdb, opts, s.commitNodes)
	case opts.engine == engineBintrie:
		return newBintrieLoader(s.tdb, opts.groupDepth, s.db.NewBatch(), s.commitNodes)
	default:
		return newStatedbLoader(s.sdb, emptyRoot(opts.engine), s.persist)
	}
}

// loadAll streams the workload's state into l, committing every chunk
// records, and returns the final root and the number of records.
func loadAll(w *workloadInfo, l stateLoader, chunk int) (common.Hash, uint64, error) {
	var (
		pending int
		block   uint64
		root    common.Hash
	)
	n, err := streamState(w, parseBatch, func(recs []stateRecord) error {
		if err := l.add(recs); err != nil {
			return err
		}
		pending += len(recs)
		if pending >= chunk {
			block++
			var err error
			if root, err = l.commit(block); err != nil {
				return err
			}
			pending = 0
		}
		return nil
	})
	if err != nil {
		return common.Hash{}, n, err
	}
	if pending > 0 || block == 0 {
		block++
		if root, err = l.commit(block); err != nil {
			return common.Hash{}, n, err
		}
	}
	return root, n, nil
}

func cmdLoad(c *command, stdout io.Writer) error {
	w, err := readWorkload(c.workload)
	if err != nil {
		return err
	}
	if c.opts.engine == engineUBT {
		return cmdLoadUBT(c, w, stdout)
	}
	s, err := createStore(c.db, &c.opts, w.Mode)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			s.close()
		}
	}()
	start := time.Now()
	l, err := newLoader(s, &c.opts, w.Mode)
	if err != nil {
		return err
	}
	root, n, err := loadAll(w, l, c.opts.chunk)
	if err != nil {
		return err
	}
	if head := s.head(); head != root && n > 0 {
		return fmt.Errorf("persisted root %x differs from the loaded root %x", head, root)
	}
	seconds := time.Since(start).Seconds()

	// Leave the database as a long-running node's would be: everything in
	// compacted SST files, nothing in the memtable or the WAL. Otherwise
	// the next open replays the load's last WAL into memory and the first
	// blocks read part of the state from RAM, however cold the page cache.
	compactStart := time.Now()
	if err := s.kv.Compact(nil, nil); err != nil {
		return fmt.Errorf("compacting the loaded database: %w", err)
	}
	compactSeconds := time.Since(compactStart).Seconds()

	meta := loadMeta(c, w, n, root)
	if err := s.writeMeta(meta); err != nil {
		return err
	}
	closed = true
	if err := s.close(); err != nil {
		return err
	}
	return printLoad(stdout, c, n, seconds, compactSeconds, root)
}

// loadMeta is the record of a finished load, for geth-peer.json.
func loadMeta(c *command, w *workloadInfo, n uint64, root common.Hash) *storeMeta {
	return &storeMeta{
		Engine:     c.opts.engine,
		GroupDepth: c.opts.groupDepth,
		Mode:       w.Mode,
		Workload:   w.Name,
		Records:    n,
		LoadRoot:   root.Hex(),
	}
}

// printLoad prints the load event of a closed database in c.db: its
// timings, root and size on disk.
func printLoad(stdout io.Writer, c *command, n uint64, seconds, compactSeconds float64, root common.Hash) error {
	size, err := dirSize(c.db)
	if err != nil {
		return err
	}
	return printJSON(stdout, &loadEvent{
		Event:          "load",
		Engine:         c.opts.engineName(),
		Variant:        c.opts.variant(),
		Records:        n,
		Seconds:        round(seconds, 3),
		CompactSeconds: round(compactSeconds, 3),
		Root:           root.Hex(),
		DiskBytes:      size,
	})
}

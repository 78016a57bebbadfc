package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

func cmdRun(c *command, stdout, stderr io.Writer) error {
	w, err := readWorkload(c.workload)
	if err != nil {
		return err
	}
	if c.opts.engine == engineUBT {
		return cmdRunUBT(c, w, stdout, stderr)
	}
	f, err := openInput(w.blocksPath())
	if err != nil {
		return err
	}
	defer f.Close()

	s, _, err := openStore(c.db, &c.opts, w)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			s.close()
		}
	}()
	var wf *witnessFile
	if c.witness != "" {
		if wf, err = createWitnessFile(c.witness); err != nil {
			return err
		}
		defer func() {
			if wf != nil {
				wf.close()
			}
		}()
	}
	parent := s.head()
	if parent == (common.Hash{}) {
		parent = emptyRoot(c.opts.engine)
	}
	var ex blockExecutor
	if w.Mode == modeRaw {
		ex = &rawExec{s: s, opts: &c.opts, parent: parent, record: wf != nil}
	} else {
		e := newStatedbExec(s, parent)
		if wf != nil {
			e.rec = newRecordingState(s)
		}
		ex = e
	}
	env := &runEnv{dir: s.dir, misses: pathdbMisses}
	err = forEachLine(f, func(line []byte, n int) error {
		b, err := parseBlock(line, w.Mode)
		if err != nil {
			return lineError(w.blocksPath(), n, "%v", err)
		}
		before := ex.root()
		m, err := runBlock(c, w, env, ex, b, stderr)
		if err != nil {
			return err
		}
		if err := printJSON(stdout, m); err != nil {
			return err
		}
		if wf == nil {
			return nil
		}
		return wf.write(b.number, before, ex.root(), c.opts.groupDepth, ex.witness())
	})
	if err != nil {
		return err
	}
	if wf != nil {
		err, wf = wf.close(), nil
		if err != nil {
			return fmt.Errorf("--witness: %w", err)
		}
	}
	closed = true
	return s.close()
}

// runEnv is what runBlock measures besides the executor.
type runEnv struct {
	dir string // the database directory (--verify-flush)
	// misses counts, since the process started, the state reads that went
	// below the engine's caches (cache_misses is its delta over a block).
	misses func() int64
}

// replayBlocks runs every block of w's blocks.jsonl on ex and prints one
// metrics line per block (without --witness).
func replayBlocks(c *command, w *workloadInfo, env *runEnv, ex blockExecutor, stdout, stderr io.Writer) error {
	f, err := openInput(w.blocksPath())
	if err != nil {
		return err
	}
	defer f.Close()
	return forEachLine(f, func(line []byte, n int) error {
		b, err := parseBlock(line, w.Mode)
		if err != nil {
			return lineError(w.blocksPath(), n, "%v", err)
		}
		m, err := runBlock(c, w, env, ex, b, stderr)
		if err != nil {
			return err
		}
		return printJSON(stdout, m)
	})
}

// runBlock executes one block and measures it.
func runBlock(c *command, w *workloadInfo, env *runEnv, ex blockExecutor, b *block, stderr io.Writer) (*blockMetrics, error) {
	var ev0 flushEvidence
	io0, miss0 := readProcIO(), env.misses()

	t0 := time.Now()
	if err := ex.read(b); err != nil {
		return nil, fmt.Errorf("block %d: state read: %w", b.number, err)
	}
	readTime := time.Since(t0)
	t1 := time.Now()
	root, err := ex.apply(b)
	if err != nil {
		return nil, fmt.Errorf("block %d: state hash: %w", b.number, err)
	}
	hashTime := time.Since(t1)
	if c.verify { // outside the timed phases
		ev0 = readFlushEvidence(env.dir)
	}
	t2 := time.Now()
	if err := ex.commit(b); err != nil {
		return nil, fmt.Errorf("block %d: commit: %w", b.number, err)
	}
	commitTime := time.Since(t2)
	if c.verify {
		if err := printJSON(stderr, newFlushReport(b.number, ev0, readFlushEvidence(env.dir))); err != nil {
			return nil, err
		}
	}
	io1, miss1 := readProcIO(), env.misses()
	if ex.root() != root {
		return nil, fmt.Errorf("block %d: committed root %x differs from the hashed root %x", b.number, ex.root(), root)
	}

	ms := func(d time.Duration) float64 { return round(float64(d.Nanoseconds())/1e6, 3) }
	total := readTime + hashTime + commitTime
	accountsRead, slotsRead := counts(b.reads)
	accountsWritten, slotsWritten := counts(b.writes)
	m := &blockMetrics{
		Engine:          c.opts.engineName(),
		Variant:         c.opts.variant(),
		Workload:        w.Name,
		Run:             c.run,
		Block:           b.number,
		GasUsed:         b.gasUsed,
		Txs:             b.txs,
		AccountsRead:    accountsRead,
		SlotsRead:       slotsRead,
		SlotsWritten:    slotsWritten,
		AccountsWritten: accountsWritten,
		CacheMisses:     miss1 - miss0,
		ExecutionMs:     0,
		StateReadMs:     ms(readTime),
		StateHashMs:     ms(hashTime),
		CommitMs:        ms(commitTime),
		TotalMs:         ms(total),
		Root:            root.Hex(),
	}
	if total > 0 {
		m.MgasPerS = round(float64(b.gasUsed)/(float64(total.Nanoseconds())/1e6)/1000, 3)
	}
	m.BytesRead, m.BytesWritten = ioDelta(io0, io1)
	return m, nil
}

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ubt/peers/geth/dumpline"
)

// account is one decoded dump line.
type account = dumpline.Account

// lineBatch is a run of consecutive lines; first is the number of the
// first one.
type lineBatch struct {
	first int
	lines [][]byte
}

// decoded is what a decoder worker hands to the loader.
type decoded struct {
	accts   []*account
	skipped int
	err     error
}

const linesPerBatch = 256

// readLines splits the input into line batches. Line 1 (the root line) is
// returned separately. It stops early when done is closed.
func readLines(r io.Reader, out chan<- lineBatch, done <-chan struct{}) (common.Hash, error) {
	defer close(out)
	br := bufio.NewReaderSize(r, 4<<20)
	var (
		root  common.Hash
		batch = lineBatch{first: 2}
		n     int
	)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			n++
			if n == 1 {
				var rerr error
				if root, rerr = dumpline.RootLine(line); rerr != nil {
					return root, badInput("%v", rerr)
				}
			} else if len(bytes.TrimSpace(line)) > 0 {
				if len(batch.lines) == 0 {
					batch.first = n
				}
				batch.lines = append(batch.lines, line)
				if len(batch.lines) == linesPerBatch {
					select {
					case out <- batch:
					case <-done:
						return root, nil
					}
					batch = lineBatch{}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return root, err
		}
	}
	if n == 0 {
		return root, badInput("empty input")
	}
	if len(batch.lines) > 0 {
		select {
		case out <- batch:
		case <-done:
		}
	}
	return root, nil
}

// decodeLines decodes line batches; lines without address are skipped (and
// counted) only if skipMissing is set.
func decodeLines(in <-chan lineBatch, out chan<- decoded, skipMissing bool, done <-chan struct{}) {
	for b := range in {
		var d decoded
		for i, line := range b.lines {
			a, err := dumpline.DecodeAccount(line)
			if errors.Is(err, dumpline.ErrNoAddress) && skipMissing {
				d.skipped++
				continue
			}
			if err != nil {
				d.err = badInput("line %d: %v", b.first+i, err)
				break
			}
			d.accts = append(d.accts, a)
		}
		select {
		case out <- d:
		case <-done:
			return
		}
	}
}

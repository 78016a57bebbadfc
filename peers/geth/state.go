package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"
)

// recKind is the kind of a state.jsonl record.
type recKind uint8

const (
	recAccount recKind = iota + 1
	recSlot
	recRaw
)

// stateRecord is one parsed line of state.jsonl.
type stateRecord struct {
	kind    recKind
	addr    common.Address // account / slot owner
	nonce   uint64
	balance uint256.Int
	code    []byte      // runtime code, nil for none
	key     common.Hash // slot key or raw key
	value   common.Hash // slot or raw value
}

// parseStateLine decodes one state.jsonl line; mode restricts the record kinds.
func parseStateLine(line []byte, mode string, scratch []member, rec *stateRecord) ([]member, error) {
	ms, err := splitFlat(line, scratch)
	if err != nil {
		return ms, err
	}
	field := func(name string) ([]byte, bool) {
		for _, m := range ms {
			if string(m.name) == name {
				return m.val, true
			}
		}
		return nil, false
	}
	str := func(name string) ([]byte, error) {
		for _, m := range ms {
			if string(m.name) == name {
				if !m.isString {
					return nil, fmt.Errorf("%q must be a string", name)
				}
				return m.val, nil
			}
		}
		return nil, fmt.Errorf("missing %q", name)
	}
	// hashField decodes the string field name as a 32-byte hex value.
	hashField := func(name string) (common.Hash, error) {
		v, err := str(name)
		if err != nil {
			return common.Hash{}, err
		}
		h, err := decodeHash(v)
		if err != nil {
			return common.Hash{}, fmt.Errorf("%s: %v", name, err)
		}
		return h, nil
	}
	*rec = stateRecord{}
	if v, ok := field("account"); ok {
		if mode != modeAccounts {
			return ms, errors.New("account record in a raw-mode workload")
		}
		rec.kind = recAccount
		if rec.addr, err = decodeAddress(v); err != nil {
			return ms, fmt.Errorf("account: %v", err)
		}
		n, ok := field("nonce")
		if !ok {
			return ms, errors.New(`missing "nonce"`)
		}
		if rec.nonce, err = decodeUint(n, "nonce"); err != nil {
			return ms, err
		}
		b, err := str("balance")
		if err != nil {
			return ms, err
		}
		bal, err := decodeBalance(b)
		if err != nil {
			return ms, err
		}
		rec.balance = *bal
		c, err := str("code")
		if err != nil {
			return ms, err
		}
		if rec.code, err = decodeBytes(c); err != nil {
			return ms, fmt.Errorf("code: %v", err)
		}
		if len(rec.code) == 0 {
			rec.code = nil
		}
		return ms, nil
	}
	if v, ok := field("slot"); ok {
		if mode != modeAccounts {
			return ms, errors.New("slot record in a raw-mode workload")
		}
		rec.kind = recSlot
		if rec.addr, err = decodeAddress(v); err != nil {
			return ms, fmt.Errorf("slot: %v", err)
		}
		if rec.key, err = hashField("key"); err != nil {
			return ms, err
		}
		rec.value, err = hashField("value")
		return ms, err
	}
	if v, ok := field("raw"); ok {
		if mode != modeRaw {
			return ms, errors.New("raw record in an accounts-mode workload")
		}
		rec.kind = recRaw
		if rec.key, err = decodeHash(v); err != nil {
			return ms, fmt.Errorf("raw: %v", err)
		}
		rec.value, err = hashField("value")
		return ms, err
	}
	return ms, errors.New(`expected an "account", "slot" or "raw" record`)
}

// forEachLine calls fn for every non-blank line of r with its 1-based number.
// Lines may be arbitrarily long.
func forEachLine(r io.Reader, fn func(line []byte, n int) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if ferr := fn(t, n); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// streamState parses w's state.jsonl on a separate goroutine and hands
// batches of up to batchSize records to fn on the calling goroutine. The
// slice passed to fn is reused after fn returns. It returns the number of
// records read.
func streamState(w *workloadInfo, batchSize int, fn func([]stateRecord) error) (uint64, error) {
	f, err := openInput(w.statePath())
	if err != nil {
		return 0, err
	}
	defer f.Close()

	type result struct {
		recs []stateRecord
		err  error
	}
	var (
		full = make(chan result, 2)
		free = make(chan []stateRecord, 3)
		stop = make(chan struct{})
	)
	for range 3 {
		free <- make([]stateRecord, 0, batchSize)
	}
	go func() {
		defer close(full)
		var (
			scratch = make([]member, 0, 8)
			batch   = (<-free)[:0]
		)
		err := forEachLine(f, func(line []byte, n int) error {
			batch = batch[:len(batch)+1]
			var perr error
			if scratch, perr = parseStateLine(line, w.Mode, scratch, &batch[len(batch)-1]); perr != nil {
				return lineError(w.statePath(), n, "%v", perr)
			}
			if len(batch) == batchSize {
				select {
				case full <- result{recs: batch}:
				case <-stop:
					return errStopped
				}
				select {
				case batch = <-free:
					batch = batch[:0]
				case <-stop:
					return errStopped
				}
			}
			return nil
		})
		if err == nil && len(batch) > 0 {
			select {
			case full <- result{recs: batch}:
			case <-stop:
			}
		}
		if err != nil && !errors.Is(err, errStopped) {
			select {
			case full <- result{err: err}:
			case <-stop:
			}
		}
	}()
	var total uint64
	for res := range full {
		if res.err != nil {
			return total, res.err
		}
		if err := fn(res.recs); err != nil {
			close(stop)
			for range full {
			}
			return total, err
		}
		total += uint64(len(res.recs))
		free <- res.recs
	}
	return total, nil
}

var errStopped = errors.New("stopped")

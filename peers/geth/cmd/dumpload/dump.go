package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// account is one decoded dump line.
type account struct {
	addr     common.Address
	nonce    uint64
	balance  uint256.Int
	code     []byte
	codeHash common.Hash
	keys     []common.Hash // storage keys and values, non-zero values only
	vals     []common.Hash
}

// entries is the number of binary-trie leaves the account makes.
func (a *account) entries() uint64 {
	return 2 + (uint64(len(a.code))+30)/31 + uint64(len(a.keys))
}

// errNoAddress marks an account line without "address": go-ethereum had no
// preimage of its key (`geth dump --incompletes`).
var errNoAddress = errors.New("account line has a key but no address (missing preimage; see --skip-missing-preimages)")

// decodeAccount decodes an account line with go-ethereum's own dump record
// (state.DumpAccount) and checks what the line can prove: the code hashes
// to codeHash (a dump made with --nocode cannot be imported) and an account
// whose storage root is not empty lists storage (--nostorage).
func decodeAccount(line []byte) (*account, error) {
	var d state.DumpAccount
	if err := json.Unmarshal(line, &d); err != nil {
		return nil, err
	}
	if d.Address == nil {
		if len(d.AddressHash) == 0 {
			return nil, errors.New("account line has neither address nor key")
		}
		return nil, errNoAddress
	}
	a := &account{addr: *d.Address, nonce: d.Nonce, code: d.Code}
	var err error
	if strings.HasPrefix(d.Balance, "0x") {
		err = a.balance.SetFromHex(d.Balance)
	} else {
		err = a.balance.SetFromDecimal(d.Balance)
	}
	if err != nil {
		return nil, fmt.Errorf("%x: balance %q: %v", a.addr, d.Balance, err)
	}
	a.codeHash = crypto.Keccak256Hash(d.Code)
	if len(d.CodeHash) > 0 && common.BytesToHash(d.CodeHash) != a.codeHash {
		return nil, fmt.Errorf("%x: code does not hash to codeHash (dump written with --nocode?)", a.addr)
	}
	if len(d.Storage) == 0 && len(d.Root) > 0 && common.BytesToHash(d.Root) != types.EmptyRootHash {
		return nil, fmt.Errorf("%x: storage root is not empty but the line lists no storage (dump written with --nostorage?)", a.addr)
	}
	a.keys = make([]common.Hash, 0, len(d.Storage))
	a.vals = make([]common.Hash, 0, len(d.Storage))
	for k, v := range d.Storage {
		raw, err := hex.DecodeString(strings.TrimPrefix(v, "0x"))
		if err != nil || len(raw) > common.HashLength {
			return nil, fmt.Errorf("%x: storage value %q of slot %x", a.addr, v, k)
		}
		if val := common.BytesToHash(raw); val != (common.Hash{}) {
			a.keys = append(a.keys, k)
			a.vals = append(a.vals, val)
		}
	}
	return a, nil
}

// rootLine decodes the first line, {"root":"0x…"}.
func rootLine(line []byte) (common.Hash, error) {
	var head struct {
		Root    *common.Hash `json:"root"`
		Balance *string      `json:"balance"`
	}
	if err := json.Unmarshal(line, &head); err != nil || head.Root == nil || head.Balance != nil {
		return common.Hash{}, errors.New(`line 1 is not the dump's {"root":…} line`)
	}
	return *head.Root, nil
}

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
				if root, rerr = rootLine(line); rerr != nil {
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
			a, err := decodeAccount(line)
			if errors.Is(err, errNoAddress) && skipMissing {
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

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"
)

// blockLine is one line of blocks.jsonl.
type blockLine struct {
	Block   *uint64  `json:"block"`
	GasUsed uint64   `json:"gas_used"`
	Txs     uint64   `json:"txs"`
	Reads   []string `json:"reads"`
	Writes  []string `json:"writes"`
}

// access is one parsed read or write of a block.
type access struct {
	kind recKind // recAccount ("a:"), recSlot ("s:"), recRaw ("r:")
	addr common.Address
	key  common.Hash // slot or raw key

	// writes only
	value    common.Hash // slot or raw value
	nonce    uint64
	balance  uint256.Int
	codeHash common.Hash
	codeSize uint64
}

// block is a parsed blocks.jsonl line.
type block struct {
	number  uint64
	gasUsed uint64
	txs     uint64
	reads   []access
	writes  []access
}

// counts returns accounts and slots (slot or raw keys) among accesses.
func counts(as []access) (accounts, slots int) {
	for i := range as {
		if as[i].kind == recAccount {
			accounts++
		} else {
			slots++
		}
	}
	return
}

func parseBlock(line []byte, mode string) (*block, error) {
	var bl blockLine
	if err := json.Unmarshal(line, &bl); err != nil {
		return nil, err
	}
	if bl.Block == nil {
		return nil, errors.New(`missing "block"`)
	}
	b := &block{number: *bl.Block, gasUsed: bl.GasUsed, txs: bl.Txs}
	b.reads = make([]access, len(bl.Reads))
	for i, s := range bl.Reads {
		if err := parseAccess([]byte(s), mode, false, &b.reads[i]); err != nil {
			return nil, fmt.Errorf("reads[%d] %q: %v", i, clip([]byte(s)), err)
		}
	}
	b.writes = make([]access, len(bl.Writes))
	for i, s := range bl.Writes {
		if err := parseAccess([]byte(s), mode, true, &b.writes[i]); err != nil {
			return nil, fmt.Errorf("writes[%d] %q: %v", i, clip([]byte(s)), err)
		}
	}
	return b, nil
}

// parseAccess parses "a:ADDR", "s:ADDR:SLOT", "r:KEY" and, for writes, the
// "=VALUE" part: "s:ADDR:SLOT=VALUE", "r:KEY=VALUE",
// "a:ADDR=NONCE,BALANCE,CODEHASH,CODESIZE".
func parseAccess(s []byte, mode string, write bool, a *access) error {
	if len(s) < 2 || s[1] != ':' {
		return errors.New(`expected "a:", "s:" or "r:"`)
	}
	target, value, hasValue := bytes.Cut(s[2:], []byte{'='})
	if write != hasValue {
		if write {
			return errors.New(`a write needs "=value"`)
		}
		return errors.New(`a read has no "=value"`)
	}
	var err error
	switch s[0] {
	case 'a':
		a.kind = recAccount
		if a.addr, err = decodeAddress(target); err != nil {
			return err
		}
		if write {
			f := bytes.Split(value, []byte{','})
			if len(f) != 4 {
				return errors.New("an account write is NONCE,BALANCE,CODEHASH,CODESIZE")
			}
			if a.nonce, err = decodeUint(f[0], "nonce"); err != nil {
				return err
			}
			bal, err := decodeBalance(f[1])
			if err != nil {
				return err
			}
			a.balance = *bal
			if a.codeHash, err = decodeHash(f[2]); err != nil {
				return fmt.Errorf("code hash: %v", err)
			}
			if a.codeSize, err = decodeUint(f[3], "code size"); err != nil {
				return err
			}
		}
	case 's':
		a.kind = recSlot
		addr, slot, ok := bytes.Cut(target, []byte{':'})
		if !ok {
			return errors.New("a slot is s:ADDRESS:KEY")
		}
		if a.addr, err = decodeAddress(addr); err != nil {
			return err
		}
		if a.key, err = decodeHash(slot); err != nil {
			return err
		}
		if write {
			if a.value, err = decodeHash(value); err != nil {
				return err
			}
		}
	case 'r':
		a.kind = recRaw
		if a.key, err = decodeHash(target); err != nil {
			return err
		}
		if write {
			if a.value, err = decodeHash(value); err != nil {
				return err
			}
		}
	default:
		return errors.New(`expected "a:", "s:" or "r:"`)
	}
	if (a.kind == recRaw) != (mode == modeRaw) {
		return fmt.Errorf("%c: access in a %s-mode workload", s[0], mode)
	}
	return nil
}

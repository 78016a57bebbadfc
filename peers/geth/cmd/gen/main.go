// Command gen writes small deterministic workloads in the format of
// docs/workload-format.md: the tiny fixtures under testdata/ and random
// raw-key workloads for smoke runs.
//
//	gen accounts --out DIR [--seed S]
//	gen raw --out DIR [--entries N] [--blocks B] [--updates U] [--reads R] [--seed S]
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: gen accounts|raw --out DIR [flags]")
	}
	var err error
	switch os.Args[1] {
	case "accounts":
		err = genAccounts(os.Args[2:])
	case "raw":
		err = genRaw(os.Args[2:])
	default:
		fail("unknown workload kind %q (accounts or raw)", os.Args[1])
	}
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gen: "+format+"\n", args...)
	os.Exit(2)
}

// workload writes the three files of a workload directory.
type workload struct {
	dir    string
	state  *bufio.Writer
	blocks *bufio.Writer
	files  []*os.File
	nState uint64
	nBlock uint64
}

func newWorkload(dir string) (*workload, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &workload{dir: dir}
	for _, name := range []string{"state.jsonl", "blocks.jsonl"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		w.files = append(w.files, f)
	}
	w.state = bufio.NewWriterSize(w.files[0], 1<<20)
	w.blocks = bufio.NewWriterSize(w.files[1], 1<<20)
	return w, nil
}

func (w *workload) stateLine(v any) {
	blob, _ := json.Marshal(v)
	w.state.Write(append(blob, '\n'))
	w.nState++
}

type blockRec struct {
	Block   uint64   `json:"block"`
	GasUsed uint64   `json:"gas_used"`
	Txs     uint64   `json:"txs"`
	Reads   []string `json:"reads"`
	Writes  []string `json:"writes"`
}

func (w *workload) blockLine(b *blockRec) {
	blob, _ := json.Marshal(b)
	w.blocks.Write(append(blob, '\n'))
	w.nBlock++
}

func (w *workload) finish(name, mode string, seed uint64, description string) error {
	for _, b := range []*bufio.Writer{w.state, w.blocks} {
		if err := b.Flush(); err != nil {
			return err
		}
	}
	for _, f := range w.files {
		if err := f.Close(); err != nil {
			return err
		}
	}
	info := struct {
		Format       int    `json:"format"`
		Name         string `json:"name"`
		Mode         string `json:"mode"`
		Seed         uint64 `json:"seed"`
		Description  string `json:"description"`
		StateRecords uint64 `json:"state_records"`
		Blocks       uint64 `json:"blocks"`
	}{1, name, mode, seed, description, w.nState, w.nBlock}
	blob, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(w.dir, "workload.json"), append(blob, '\n'), 0o644)
}

func hx(b []byte) string { return "0x" + hex.EncodeToString(b) }

// stream is a deterministic byte stream: sha256(label || seed || counter).
type stream struct {
	label string
	seed  uint64
	ctr   uint64
}

func (s *stream) next() [32]byte {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], s.seed)
	binary.BigEndian.PutUint64(buf[8:], s.ctr)
	s.ctr++
	return sha256.Sum256(append([]byte(s.label), buf[:]...))
}

func (s *stream) bytes(n int) []byte {
	out := make([]byte, 0, n+32)
	for len(out) < n {
		h := s.next()
		out = append(out, h[:]...)
	}
	return out[:n]
}

// ---- accounts ----

type account struct {
	addr    common.Address
	nonce   uint64
	balance *big.Int
	code    []byte
}

func (a *account) codeHash() common.Hash { return crypto.Keccak256Hash(a.code) }

func (a *account) write() string {
	return fmt.Sprintf("a:%s=%d,%s,%s,%d", hx(a.addr[:]), a.nonce, a.balance, hx(a.codeHash().Bytes()), len(a.code))
}

func genAccounts(args []string) error {
	fs := flag.NewFlagSet("accounts", flag.ExitOnError)
	out := fs.String("out", "", "output directory")
	seed := fs.Uint64("seed", 7864, "seed")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	w, err := newWorkload(*out)
	if err != nil {
		return err
	}
	st := &stream{label: "ubt-peer-accounts", seed: *seed}
	rng := rand.New(rand.NewPCG(*seed, 1))
	addr := func() common.Address { return common.BytesToAddress(st.bytes(20)) }
	word := func() common.Hash { return common.BytesToHash(st.bytes(32)) }

	// 20 externally owned accounts; one is empty (zero nonce and balance),
	// one has the largest balance the binary trie keeps (2^128-1).
	var eoas []*account
	for i := range 20 {
		a := &account{addr: addr(), nonce: uint64(rng.IntN(1000)), balance: new(big.Int).SetUint64(rng.Uint64())}
		a.balance.Mul(a.balance, big.NewInt(1000))
		switch i {
		case 7:
			a.nonce, a.balance = 0, new(big.Int)
		case 11:
			a.balance = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
		}
		eoas = append(eoas, a)
	}
	// 3 contracts: 100 bytes, 500 bytes rich in PUSH32 (push data crossing
	// chunk boundaries), 4500 bytes (code chunks on a second stem).
	var contracts []*account
	for i, size := range []int{100, 500, 4500} {
		code := st.bytes(size)
		if i == 1 {
			for j := 0; j < len(code); j += 29 {
				code[j] = 0x7f // PUSH32
			}
		}
		contracts = append(contracts, &account{addr: addr(), nonce: 1, balance: big.NewInt(int64(rng.IntN(1 << 30))), code: code})
	}
	for _, a := range append(append([]*account{}, eoas...), contracts...) {
		w.stateLine(map[string]any{"account": hx(a.addr[:]), "nonce": a.nonce, "balance": a.balance.String(), "code": hx(a.code)})
	}
	// 50 slots per contract: header slots 0..9 (stored next to the account),
	// 64 and 65 (first main-storage slots), the rest random 32-byte keys.
	// Values are never zero in the initial state.
	slots := make([]map[common.Hash]common.Hash, len(contracts))
	var slotKeys [][]common.Hash
	for ci, c := range contracts {
		slots[ci] = map[common.Hash]common.Hash{}
		var keys []common.Hash
		for j := range 50 {
			var k common.Hash
			switch {
			case j < 10:
				k = common.BigToHash(big.NewInt(int64(j)))
			case j < 12:
				k = common.BigToHash(big.NewInt(int64(54 + j)))
			default:
				k = word()
			}
			v := word()
			if j%5 == 0 {
				v = common.BigToHash(big.NewInt(int64(j + 1))) // short values too
			}
			slots[ci][k] = v
			keys = append(keys, k)
			w.stateLine(map[string]string{"slot": hx(c.addr[:]), "key": hx(k[:]), "value": hx(v[:])})
		}
		slotKeys = append(slotKeys, keys)
	}

	// Blocks: reads in executor order (deduplicated), then the final writes.
	type blk struct {
		reads  []string
		seen   map[string]bool
		writes []string
	}
	newBlk := func() *blk { return &blk{seen: map[string]bool{}} }
	read := func(b *blk, s string) {
		if !b.seen[s] {
			b.seen[s] = true
			b.reads = append(b.reads, s)
		}
	}
	readAcct := func(b *blk, a *account) { read(b, "a:"+hx(a.addr[:])) }
	readSlot := func(b *blk, c int, k common.Hash) { read(b, "s:"+hx(contracts[c].addr[:])+":"+hx(k[:])) }
	writeSlot := func(b *blk, c int, k, v common.Hash) {
		readSlot(b, c, k)
		slots[c][k] = v
		b.writes = append(b.writes, "s:"+hx(contracts[c].addr[:])+":"+hx(k[:])+"="+hx(v[:]))
	}
	emit := func(n uint64, txs uint64, b *blk, accts []*account) {
		for _, a := range accts {
			b.writes = append(b.writes, a.write())
		}
		w.blockLine(&blockRec{Block: n, GasUsed: 21000*txs + uint64(len(b.writes))*5000, Txs: txs, Reads: b.reads, Writes: b.writes})
	}

	// Block 1: two token transfers (sender pays, contract 0's balances move).
	b := newBlk()
	for t := range 2 {
		from := eoas[t]
		readAcct(b, from)
		readAcct(b, contracts[0])
		writeSlot(b, 0, slotKeys[0][12+t], word())
		writeSlot(b, 0, slotKeys[0][20+t], word())
		from.nonce++
		from.balance.Sub(from.balance, big.NewInt(21000*7))
	}
	emit(1, 2, b, []*account{eoas[0], eoas[1]})

	// Block 2: a slot cleared to zero, a fresh slot, a read of an absent slot,
	// a transfer to a new account, a read of an account that does not exist.
	b = newBlk()
	readAcct(b, eoas[2])
	readAcct(b, contracts[1])
	writeSlot(b, 1, slotKeys[1][3], common.Hash{})
	writeSlot(b, 1, word(), word())
	readSlot(b, 1, word())
	fresh := &account{addr: addr(), balance: big.NewInt(1_000_000_007)}
	readAcct(b, fresh)
	read(b, "a:"+hx(addr().Bytes()))
	eoas[2].nonce++
	eoas[2].balance.Sub(eoas[2].balance, big.NewInt(1_000_000_007+21000))
	emit(2, 2, b, []*account{eoas[2], fresh})

	// Block 3: value sent to the large contract (its account is rewritten),
	// its header slot and a main slot updated; the empty account gets funds.
	b = newBlk()
	readAcct(b, eoas[3])
	readAcct(b, contracts[2])
	writeSlot(b, 2, slotKeys[2][0], word())
	writeSlot(b, 2, slotKeys[2][30], word())
	readSlot(b, 0, slotKeys[0][40])
	readAcct(b, eoas[7])
	eoas[3].nonce++
	eoas[3].balance.Sub(eoas[3].balance, big.NewInt(5000))
	contracts[2].balance.Add(contracts[2].balance, big.NewInt(3000))
	eoas[7].balance.Add(eoas[7].balance, big.NewInt(1000))
	emit(3, 2, b, []*account{eoas[3], contracts[2], eoas[7]})

	return w.finish("tiny", "accounts", *seed,
		"20 accounts (one empty, one with balance 2^128-1), 3 contracts with code (100, 500, 4500 bytes) and 50 slots each, 3 blocks")
}

// ---- raw ----

func genRaw(args []string) error {
	fs := flag.NewFlagSet("raw", flag.ExitOnError)
	out := fs.String("out", "", "output directory")
	seed := fs.Uint64("seed", 7864, "seed")
	entries := fs.Uint64("entries", 300, "random key/value pairs in the state")
	blocks := fs.Int("blocks", 3, "blocks")
	updates := fs.Int("updates", 20, "writes per block (existing keys, new values)")
	fresh := fs.Int("fresh", 2, "writes per block to keys not in the state")
	reads := fs.Int("reads", 10, "reads per block of keys not written")
	readWrites := fs.Bool("read-writes", true, "also read every key a block writes, before writing it")
	name := fs.String("name", "tiny-raw", "workload name")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	if *entries == 0 {
		return fmt.Errorf("--entries must be positive")
	}
	w, err := newWorkload(*out)
	if err != nil {
		return err
	}
	keys := &stream{label: "ubt-peer-raw-key", seed: *seed}
	key := func(i uint64) [32]byte { keys.ctr = i; return keys.next() }
	vals := &stream{label: "ubt-peer-raw-value", seed: *seed}
	for i := range *entries {
		k, v := key(i), vals.next()
		w.stateLine(map[string]string{"raw": hx(k[:]), "value": hx(v[:])})
	}
	rng := rand.New(rand.NewPCG(*seed, 2))
	next := *entries // fresh keys continue the key sequence
	for n := 1; n <= *blocks; n++ {
		b := &blockRec{Block: uint64(n), Reads: []string{}, Writes: []string{}}
		seen := map[[32]byte]bool{}
		var ws [][2][32]byte
		for len(ws) < *updates {
			k := key(rng.Uint64N(*entries))
			if !seen[k] {
				seen[k] = true
				ws = append(ws, [2][32]byte{k, vals.next()})
			}
		}
		for range *fresh {
			k := key(next)
			next++
			seen[k] = true
			ws = append(ws, [2][32]byte{k, vals.next()})
		}
		for range *reads {
			k := key(rng.Uint64N(*entries))
			if !seen[k] {
				seen[k] = true
				b.Reads = append(b.Reads, "r:"+hx(k[:]))
			}
		}
		for _, kv := range ws {
			if *readWrites {
				b.Reads = append(b.Reads, "r:"+hx(kv[0][:]))
			}
			b.Writes = append(b.Writes, "r:"+hx(kv[0][:])+"="+hx(kv[1][:]))
		}
		w.blockLine(b)
	}
	desc := fmt.Sprintf("%d random 32-byte keys and values; %d blocks of %d updates of existing keys and %d new keys", *entries, *blocks, *updates, *fresh)
	if *readWrites {
		desc += ", each read before written"
	}
	if *reads > 0 {
		desc += fmt.Sprintf(", plus up to %d reads of other keys", *reads)
	}
	return w.finish(*name, "raw", *seed, strings.TrimSpace(desc))
}

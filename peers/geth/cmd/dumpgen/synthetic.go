package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// The synthetic state's mix. Per account: 8% are contracts. A contract's
// code comes from a pool of shared code: half are EIP-1167 minimal proxies
// (45 bytes), 45% 100..2,000 bytes, 5% 2,000..14,000 bytes. A quarter of
// the contracts have no storage; the others a Pareto-distributed number of
// slots (minimum 3, tail index 0.85: median ~7, about 1 contract in 10,000
// above 100,000 slots), capped at maxSlotsCap and at a quarter of the
// target. The first 1..8 slot keys are small integers (header slots), the
// rest hashed keys, a fifth of them in runs of consecutive keys (arrays).
// At 10,000,000 entries that is about 1,000,000 accounts and 10 tree
// entries per account: 2 header leaves, ~2.3 code chunks, ~6 slots (small
// targets have fewer slots per account: the cap cuts the tail).
const (
	contractPct     = 8
	maxSlotsCap     = 1_000_000
	slotsMin        = 3.0
	slotsTailIndex  = 0.85
	proxyCodes      = 256
	smallCodes      = 512
	largeCodes      = 256
	syntheticStream = 0x73796e74
)

// poolCode is a contract code shared by many accounts.
type poolCode struct {
	code []byte
	hash common.Hash
}

// synthStats are the exact counts of what was generated (printed on stderr).
type synthStats struct {
	Seed          uint64  `json:"seed"`
	TargetEntries uint64  `json:"target_entries"`
	SlotCap       uint64  `json:"slot_cap"` // most slots one contract may get
	Entries       uint64  `json:"tree_entries"`
	Accounts      uint64  `json:"accounts"`
	Contracts     uint64  `json:"contracts"`
	StorageSlots  uint64  `json:"storage_slots"`
	CodeChunks    uint64  `json:"code_chunks"`
	CodeBytes     uint64  `json:"code_bytes"`
	MaxSlots      uint64  `json:"max_slots"` // most slots of one contract
	Contracts100k uint64  `json:"contracts_100k_slots"`
	Bytes         uint64  `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	MBPerSecond   float64 `json:"mb_per_s"`
	EntriesPerSec float64 `json:"entries_per_s"`
	UBTRoot       string  `json:"ubt_root,omitempty"`
}

// synthGen produces the accounts of a synthetic state one at a time.
type synthGen struct {
	rng      *rand.Rand
	target   uint64
	maxSlots uint64
	proxies  []poolCode
	small    []poolCode
	large    []poolCode
	hasher   crypto.KeccakState
	stats    synthStats

	// scratch for the storage root
	hashed []hashedSlot
}

type hashedSlot struct {
	key common.Hash // keccak256 of the slot key
	val []byte      // RLP of the trimmed value
}

func newSynthGen(target, seed uint64) *synthGen {
	g := &synthGen{
		rng:    rand.New(rand.NewPCG(seed, syntheticStream)),
		target: target,
		hasher: crypto.NewKeccakState(),
	}
	g.maxSlots = min(maxSlotsCap, max(target/4, 64))
	g.stats.Seed, g.stats.TargetEntries, g.stats.SlotCap = seed, target, g.maxSlots
	mk := func(code []byte) poolCode { return poolCode{code, crypto.Keccak256Hash(code)} }
	for range proxyCodes {
		code := append(common.FromHex("0x363d3d373d3d3d363d73"), g.bytes(20)...)
		g.proxies = append(g.proxies, mk(append(code, common.FromHex("0x5af43d82803e903d91602b57fd5bf3")...)))
	}
	for range smallCodes {
		g.small = append(g.small, mk(g.bytes(100+g.rng.IntN(1901))))
	}
	for range largeCodes {
		g.large = append(g.large, mk(g.bytes(2000+g.rng.IntN(12001))))
	}
	return g
}

func (g *synthGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (g *synthGen) hash(data []byte) (h common.Hash) {
	g.hasher.Reset()
	g.hasher.Write(data)
	g.hasher.Read(h[:])
	return h
}

// balance is a random value below 2^bits.
func (g *synthGen) balance(bits int) *uint256.Int {
	b := new(uint256.Int).SetBytes(g.bytes(32))
	return b.Rsh(b, uint(256-bits))
}

// next returns the next account's dump record, and the account itself if
// keep is set; nil once the target number of entries is reached.
func (g *synthGen) next(keep bool) (*state.DumpAccount, *account) {
	if g.stats.Entries >= g.target {
		return nil, nil
	}
	var addr common.Address
	copy(addr[:], g.bytes(20))
	d := &state.DumpAccount{
		Root:        types.EmptyRootHash[:],
		CodeHash:    types.EmptyCodeHash[:],
		Address:     &addr,
		AddressHash: g.hash(addr[:]).Bytes(),
	}
	var (
		bal     *uint256.Int
		code    []byte
		storage map[common.Hash]common.Hash
	)
	if g.rng.IntN(100) >= contractPct {
		// Externally owned: a fifth hold nothing, the rest up to ~10^27 wei.
		bal = new(uint256.Int)
		if g.rng.IntN(5) > 0 {
			bal = g.balance(g.rng.IntN(90))
		}
		if g.rng.IntN(10) >= 4 {
			d.Nonce = uint64(g.rng.IntN(1 << g.rng.IntN(21)))
		}
	} else {
		g.stats.Contracts++
		bal = new(uint256.Int)
		if g.rng.IntN(5) == 0 {
			bal = g.balance(g.rng.IntN(70))
		}
		if g.rng.IntN(10) > 0 {
			d.Nonce = 1
		}
		var pc poolCode
		switch r := g.rng.IntN(100); {
		case r < 50:
			pc = g.proxies[g.rng.IntN(len(g.proxies))]
		case r < 95:
			pc = g.small[g.rng.IntN(len(g.small))]
		default:
			pc = g.large[g.rng.IntN(len(g.large))]
		}
		code = pc.code
		d.Code, d.CodeHash = code, pc.hash[:]
		chunks := uint64(len(code)+30) / 31
		g.stats.CodeChunks += chunks
		g.stats.CodeBytes += uint64(len(code))

		if g.rng.IntN(4) > 0 {
			n := uint64(slotsMin * math.Pow(1-g.rng.Float64(), -1/slotsTailIndex))
			used := g.stats.Entries + 2 + chunks
			n = min(n, g.maxSlots)
			if used >= g.target {
				n = 0
			} else {
				n = min(n, g.target-used)
			}
			if n > 0 {
				d.Root, d.Storage, storage = g.storage(int(n), keep)
			}
		}
	}
	d.Balance = bal.String()
	g.stats.Accounts++
	g.stats.Entries += 2 + uint64(len(d.Storage)) + uint64(len(code)+30)/31
	g.stats.StorageSlots += uint64(len(d.Storage))
	if s := uint64(len(d.Storage)); s > g.stats.MaxSlots {
		g.stats.MaxSlots = s
	}
	if len(d.Storage) >= 100_000 {
		g.stats.Contracts100k++
	}
	if !keep {
		return d, nil
	}
	return d, &account{addr: addr, nonce: d.Nonce, balance: bal, code: code, storage: storage}
}

// storage makes n slots: their dump form (keys, values as go-ethereum's
// dump writes them), the MPT storage root of the account, and, if keep is
// set, the slots as hashes.
func (g *synthGen) storage(n int, keep bool) ([]byte, map[common.Hash]string, map[common.Hash]common.Hash) {
	dump := make(map[common.Hash]string, n)
	var kept map[common.Hash]common.Hash
	if keep {
		kept = make(map[common.Hash]common.Hash, n)
	}
	g.hashed = g.hashed[:0]
	add := func(k common.Hash) {
		if _, dup := dump[k]; dup {
			return
		}
		var v []byte
		switch r := g.rng.IntN(10); {
		case r < 4:
			v = g.bytes(1 + g.rng.IntN(4))
		case r < 7:
			v = g.bytes(20)
		default:
			v = g.bytes(32)
		}
		if v[0] == 0 {
			v[0] = 1 // the dump trims leading zeros; keep the length class
		}
		dump[k] = hex.EncodeToString(v)
		if keep {
			kept[k] = common.BytesToHash(v)
		}
		g.hashed = append(g.hashed, hashedSlot{g.hash(k[:]), rlpBytes(v)})
	}
	header := min(n, 1+g.rng.IntN(8))
	for i := range header {
		add(common.Hash{31: byte(i)})
	}
	for len(dump) < n {
		base := common.BytesToHash(g.bytes(32))
		run := 1
		if g.rng.IntN(5) == 0 {
			run = 1 + g.rng.IntN(64)
		}
		for i := 0; i < run && len(dump) < n; i++ {
			add(base)
			base = incHash(base)
		}
	}
	// The account's storage root: an MPT over keccak(key) -> RLP(value).
	slices.SortFunc(g.hashed, func(a, b hashedSlot) int { return bytes.Compare(a.key[:], b.key[:]) })
	st := trie.NewStackTrie(nil)
	for _, s := range g.hashed {
		st.Update(s.key[:], s.val)
	}
	root := st.Hash()
	return root[:], dump, kept
}

// rlpBytes is the RLP encoding of a short byte string (1..32 bytes).
func rlpBytes(v []byte) []byte {
	if len(v) == 1 && v[0] < 0x80 {
		return []byte{v[0]}
	}
	return append([]byte{0x80 + byte(len(v))}, v...)
}

func incHash(h common.Hash) common.Hash {
	for i := len(h) - 1; i >= 0; i-- {
		h[i]++
		if h[i] != 0 {
			break
		}
	}
	return h
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// writeSynthetic streams the dump: a root line (all zero: no MPT is built),
// then one line per account, encoded by json.Encoder from
// state.DumpAccount as go-ethereum's iterative dump does. Lines are in
// generation order, not sorted by key. If ubt is set, every account is
// also applied to an in-memory UBT StateDB and the root is returned.
func writeSynthetic(w io.Writer, target, seed uint64, ubt bool) (*synthStats, error) {
	start := time.Now()
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 4<<20)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(struct {
		Root common.Hash `json:"root"`
	}{}); err != nil {
		return nil, err
	}
	var u *ubtState
	if ubt {
		var err error
		if u, err = newUBTState(); err != nil {
			return nil, err
		}
	}
	g := newSynthGen(target, seed)
	for {
		d, a := g.next(ubt)
		if d == nil {
			break
		}
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
		if u != nil {
			u.apply(a)
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	s := g.stats
	if u != nil {
		root, err := u.commit()
		if err != nil {
			return nil, err
		}
		s.UBTRoot = root.Hex()
	}
	s.Bytes = cw.n
	s.Seconds = time.Since(start).Seconds()
	s.MBPerSecond = float64(s.Bytes) / 1e6 / s.Seconds
	s.EntriesPerSec = float64(s.Entries) / s.Seconds
	return &s, nil
}

func runSynthetic(out string, target, seed uint64, ubt bool) error {
	var w io.Writer = os.Stdout
	var f *os.File
	if out != "-" {
		var err error
		if f, err = os.Create(out); err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	s, err := writeSynthetic(w, target, seed, ubt)
	if err != nil {
		return err
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return err
		}
	}
	blob, _ := json.Marshal(s)
	fmt.Fprintln(os.Stderr, string(blob))
	if ubt && out != "-" {
		fmt.Println(s.UBTRoot) // with -out -, stdout carries the dump
	}
	return nil
}

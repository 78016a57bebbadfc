package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie/bintrie"
)

// witnessLineKeys is a --witness line's fields, in order.
var witnessLineKeys = []string{"block", "root_before", "root_after", "group_depth", "nodes"}

// TestWitnessRecording runs workloads with --witness and checks every line
// against the blobs themselves and the block's accesses: the root blob
// hashes to root_before, every other blob to the hash its parent group
// lists for it, each accessed key's path from the root is recorded down to
// the stem or empty child it ends at, and nothing else is recorded. The
// roots are those of a run without --witness.
func TestWitnessRecording(t *testing.T) {
	tmp := t.TempDir()
	rawDir, accountsDir := filepath.Join(tmp, "raw"), filepath.Join(tmp, "accounts")
	writeRawWitnessWorkload(t, rawDir)
	writeAccountsWitnessWorkload(t, accountsDir)
	for _, wdir := range []string{rawDir, accountsDir, tinyDir, tinyRawDir} {
		w := mustWorkload(t, wdir)
		for _, gd := range []int{1, 5, 8} {
			t.Run(fmt.Sprintf("%s/gd%d", w.Name, gd), func(t *testing.T) {
				o := engineOpts{engine: engineBintrie, groupDepth: gd, cacheMB: 64}
				loadRoot, plainRoots := loadAndRunRoots(t, wdir, o, "")
				file := filepath.Join(t.TempDir(), "witness.jsonl")
				loadRoot2, roots := loadAndRunRoots(t, wdir, o, file)
				if loadRoot2 != loadRoot || !reflect.DeepEqual(roots, plainRoots) {
					t.Fatalf("roots with --witness %x %x, without %x %x", loadRoot2, roots, loadRoot, plainRoots)
				}
				if wdir == tinyDir || wdir == tinyRawDir {
					if want := expectedBlockRoots(t, wdir); !reflect.DeepEqual(roots, want) {
						t.Fatalf("block roots %x, expected_block_roots.txt %x", roots, want)
					}
				}
				checkWitnessFile(t, w, gd, file, append([]common.Hash{loadRoot}, roots...))
			})
		}
	}
}

// loadAndRunRoots loads a workload into a fresh database and runs it (with
// --witness witnessFile unless empty), returning the load root and the
// block roots.
func loadAndRunRoots(t *testing.T, wdir string, o engineOpts, witnessFile string) (common.Hash, []common.Hash) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "db")
	out, errs, code := cli(append(append([]string{"load"}, engineArgs(o)...), "--db", db, "--workload", wdir)...)
	var ev loadEvent
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil {
		t.Fatalf("load: exit %d: %s %s", code, out, errs)
	}
	args := append(append([]string{"run"}, engineArgs(o)...), "--db", db, "--workload", wdir, "--run", "1")
	if witnessFile != "" {
		args = append(args, "--witness", witnessFile)
	}
	out, errs, code = cli(args...)
	if code != 0 {
		t.Fatalf("run %v: exit %d: %s", args, code, errs)
	}
	var roots []common.Hash
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m blockMetrics
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, common.HexToHash(m.Root))
	}
	return common.HexToHash(ev.Root), roots
}

// checkWitnessFile checks the --witness file of a run: roots[0] is the
// loaded root, roots[i] the root after block i.
func checkWitnessFile(t *testing.T, w *workloadInfo, gd int, file string, roots []common.Hash) {
	t.Helper()
	blob, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(blob)), "\n")
	blocks := readBlocks(t, w)
	if len(lines) != len(blocks) {
		t.Fatalf("%d witness lines for %d blocks", len(lines), len(blocks))
	}
	keysOf := blockKeys(t, w, blocks)
	for i, line := range lines {
		if keys := jsonKeys(t, line); !reflect.DeepEqual(keys, witnessLineKeys) {
			t.Fatalf("witness line keys %v, want %v", keys, witnessLineKeys)
		}
		var l witnessLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		b := blocks[i]
		if l.Block != b.number || l.GroupDepth != gd || l.RootBefore != roots[i].Hex() || l.RootAfter != roots[i+1].Hex() {
			t.Fatalf("block %d: line header %d %s %s %d, want %d %s %s %d", b.number,
				l.Block, l.RootBefore, l.RootAfter, l.GroupDepth, b.number, roots[i].Hex(), roots[i+1].Hex(), gd)
		}
		if len(l.Nodes) > 0 {
			first := line[strings.Index(line, `"nodes":[`)+len(`"nodes":[`):]
			if keys := jsonKeys(t, first); !reflect.DeepEqual(keys, []string{"path", "blob"}) {
				t.Fatalf("node keys %v", keys)
			}
		}
		nodes := make(map[string][]byte, len(l.Nodes))
		var paths []string
		for j, n := range l.Nodes {
			if strings.Trim(n.Path, "01") != "" || len(n.Path) > 248 {
				t.Fatalf("block %d: path %q", b.number, n.Path)
			}
			if j > 0 && l.Nodes[j-1].Path >= n.Path {
				t.Fatalf("block %d: nodes not sorted by path: %q then %q", b.number, l.Nodes[j-1].Path, n.Path)
			}
			if !strings.HasPrefix(n.Blob, "0x") || strings.ToLower(n.Blob) != n.Blob {
				t.Fatalf("block %d: blob %q is not lowercase 0x-hex", b.number, n.Blob)
			}
			data, err := hexutil.Decode(n.Blob)
			if err != nil {
				t.Fatalf("block %d: blob %q: %v", b.number, n.Blob, err)
			}
			nodes[n.Path] = data
			paths = append(paths, n.Path)
		}
		keys := keysOf[i]
		if len(keys) == 0 {
			// Opening the trie resolves the root, whatever the block does.
			if len(paths) != 1 || paths[0] != "" {
				t.Fatalf("block %d has no accesses, witness paths %q (want the root only)", b.number, paths)
			}
		}
		visited := walkWitness(t, b.number, gd, roots[i], nodes, keys)
		sort.Strings(visited)
		if !reflect.DeepEqual(visited, paths) {
			t.Fatalf("block %d: recorded paths %q,\nthe accessed keys' paths %q", b.number, paths, visited)
		}
	}
}

// walkWitness follows every key from the root through the recorded blobs,
// checking each blob's hash against the hash its parent lists (the root's
// against root), and returns the paths it read. A path that needs a blob
// the witness lacks fails the test.
func walkWitness(t *testing.T, number uint64, gd int, root common.Hash, nodes map[string][]byte, keys []common.Hash) []string {
	t.Helper()
	read := map[string]bool{"": true}
	blob, ok := nodes[""]
	if !ok {
		t.Fatalf("block %d: no root blob", number)
	}
	if h, err := bintrie.DeserializeAndHash(blob, 0); err != nil || h != root {
		t.Fatalf("block %d: root blob hashes to %x (%v), root_before is %x", number, h, err, root)
	}
	for _, key := range keys {
		bitsOf := func(from, n int) (v int) {
			for i := from; i < from+n; i++ {
				v = v<<1 | int(key[i/8]>>(7-i%8))&1
			}
			return v
		}
		path := ""
		for {
			blob := nodes[path]
			if len(blob) < 2 {
				t.Fatalf("block %d: blob at %q has %d bytes", number, path, len(blob))
			}
			if blob[0] == 1 { // stem
				break
			}
			if int(blob[1]) != gd || len(path)%gd != 0 {
				t.Fatalf("block %d: group blob of depth %d at path %q (G=%d)", number, blob[1], path, gd)
			}
			var next *groupEntry
			for _, e := range groupEntries(t, blob) {
				if e.bits == bitsOf(len(path), e.depth) {
					next = &e
					break
				}
			}
			if next == nil { // the key's path ends at an empty child
				break
			}
			child := path
			for i := len(path); i < len(path)+next.depth; i++ {
				child += string('0' + rune(key[i/8]>>(7-i%8)&1))
			}
			blob, ok := nodes[child]
			if !ok {
				t.Fatalf("block %d: key %x reads the blob at %q, which is not recorded", number, key, child)
			}
			if h, err := bintrie.DeserializeAndHash(blob, len(child)); err != nil || h != next.hash {
				t.Fatalf("block %d: blob at %q hashes to %x (%v), its parent lists %x", number, child, h, err, next.hash)
			}
			read[child] = true
			path = child
		}
	}
	var paths []string
	for p := range read {
		paths = append(paths, p)
	}
	return paths
}

// groupEntry is a frontier entry of a group blob: relative depth, the
// relative path bits as an integer, and the hash.
type groupEntry struct {
	depth, bits int
	hash        common.Hash
}

// groupEntries decodes a group blob: 0x02 | G | bitmap | 3-bit depth codes | hashes.
func groupEntries(t *testing.T, blob []byte) []groupEntry {
	t.Helper()
	g := int(blob[1])
	bitmapLen := max(1, (1<<g)/8)
	bitmap := blob[2 : 2+bitmapLen]
	k := 0
	for _, b := range bitmap {
		k += bits.OnesCount8(b)
	}
	codes := blob[2+bitmapLen : 2+bitmapLen+(3*k+7)/8]
	hashes := blob[2+bitmapLen+(3*k+7)/8:]
	if len(hashes) != 32*k {
		t.Fatalf("group blob of %d entries has %d hash bytes", k, len(hashes))
	}
	var out []groupEntry
	for pos := 0; pos < 1<<g; pos++ {
		if bitmap[pos/8]>>(7-pos%8)&1 == 0 {
			continue
		}
		idx := len(out)
		code := 0
		for b := 0; b < 3; b++ {
			at := 3*idx + b
			code = code<<1 | int(codes[at/8]>>(7-at%8))&1
		}
		depth := code + 1
		out = append(out, groupEntry{depth: depth, bits: pos >> (g - depth), hash: common.BytesToHash(hashes[32*idx : 32*idx+32])})
	}
	return out
}

// blockKeys lists, per block, the tree keys whose paths the block's trie
// resolves (README.md, "Witness recording"): for raw workloads the keys
// read and written; for accounts workloads the basic-data key of every
// account named by a read or write ("a:" or "s:"), every slot written,
// every slot read whose account exists before the block, and the
// code-chunk keys of an account write that changes the code hash.
func blockKeys(t *testing.T, w *workloadInfo, blocks []*block) [][]common.Hash {
	t.Helper()
	codeHash := map[common.Address]common.Hash{} // of the accounts that exist
	if w.Mode == modeAccounts {
		if _, err := streamState(w, 16, func(recs []stateRecord) error {
			for i := range recs {
				if r := &recs[i]; r.kind == recAccount {
					codeHash[r.addr] = crypto.Keccak256Hash(r.code)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	basic := func(a common.Address) common.Hash { return common.BytesToHash(bintrie.GetBinaryTreeKeyBasicData(a)) }
	var out [][]common.Hash
	for _, b := range blocks {
		var keys []common.Hash
		for i, as := range [][]access{b.reads, b.writes} {
			for _, a := range as {
				switch a.kind {
				case recRaw:
					keys = append(keys, a.key)
				case recAccount:
					keys = append(keys, basic(a.addr))
				case recSlot:
					// StateDB loads the account first; it reads a slot of
					// an absent account only to write it.
					keys = append(keys, basic(a.addr))
					if _, exists := codeHash[a.addr]; exists || i == 1 {
						keys = append(keys, common.BytesToHash(bintrie.GetBinaryTreeKeyStorageSlot(a.addr, a.key[:])))
					}
				}
			}
		}
		for _, a := range b.writes {
			if a.kind != recAccount {
				continue
			}
			before, ok := codeHash[a.addr]
			if !ok {
				before = types.EmptyCodeHash
			}
			if before != a.codeHash {
				// Chunk i sits at offset 128+i (UpdateContractCode).
				for i := uint64(0); i < (a.codeSize+30)/31; i++ {
					var offset [32]byte
					binary.BigEndian.PutUint64(offset[24:], i+128)
					keys = append(keys, common.BytesToHash(bintrie.GetBinaryTreeKey(a.addr, offset[:])))
				}
			}
		}
		for _, a := range b.writes {
			switch _, exists := codeHash[a.addr]; {
			case a.kind == recAccount:
				codeHash[a.addr] = a.codeHash
			case a.kind == recSlot && !exists: // creates an empty account
				codeHash[a.addr] = types.EmptyCodeHash
			}
		}
		out = append(out, keys)
	}
	return out
}

// writeWorkload writes a workload directory.
func writeWorkload(t *testing.T, dir, mode string, state, blocks []string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	info := fmt.Sprintf(`{"format":1,"name":%q,"mode":%q,"seed":1,"description":"witness test","state_records":%d,"blocks":%d}`,
		"witness-"+mode, mode, len(state), len(blocks))
	for name, lines := range map[string][]string{"workload.json": {info}, "state.jsonl": state, "blocks.jsonl": blocks} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func blockLineOf(n int, reads, writes []string) string {
	blob, _ := json.Marshal(map[string]any{"block": n, "gas_used": 21000, "txs": 1, "reads": reads, "writes": writes})
	return string(blob)
}

// flipBit returns key with bit i (MSB-first) inverted.
func flipBit(key common.Hash, i int) common.Hash {
	key[i/8] ^= 0x80 >> (i % 8)
	return key
}

// writeRawWitnessWorkload writes a raw workload whose blocks read present
// and absent keys (absent in a present stem, ending at another stem, ending
// at an empty child deep in a chain of internal nodes), write keys that
// split existing stems, zero values, then a block without accesses.
func writeRawWitnessWorkload(t *testing.T, dir string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7864, 1))
	random := func() (h common.Hash) {
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		return h
	}
	withSuffix := func(k common.Hash, s byte) common.Hash { k[31] = s; return k }
	var state []string
	add := func(k common.Hash) {
		state = append(state, fmt.Sprintf(`{"raw":"%s","value":"%s"}`, k.Hex(), random().Hex()))
	}
	var present []common.Hash
	for range 150 {
		k := random()
		present = append(present, k)
		add(k)
	}
	s0 := withSuffix(random(), 0)
	s1 := flipBit(s0, 40)  // splits from s0 at bit 40: alone below it
	s2 := flipBit(s0, 200) // shares 200 bits with s0: a long chain of internal nodes
	for _, k := range []common.Hash{s0, withSuffix(s0, 1), withSuffix(s0, 5), s1, s2} {
		add(k)
	}
	r := func(k common.Hash) string { return "r:" + k.Hex() }
	wr := func(k, v common.Hash) string { return "r:" + k.Hex() + "=" + v.Hex() }
	newStem := flipBit(s1, 90) // splits s1's stem
	blocks := []string{
		blockLineOf(1,
			[]string{r(s0), r(withSuffix(s0, 7)), r(flipBit(s0, 100)), r(flipBit(s1, 60)), r(random()), r(present[3])},
			[]string{wr(withSuffix(s0, 1), random()), wr(newStem, random()), wr(random(), random()), wr(present[5], common.Hash{})}),
		blockLineOf(2,
			[]string{r(newStem), r(flipBit(s2, 230)), r(present[7])},
			[]string{wr(flipBit(s2, 220), random()), wr(present[9], random()), wr(present[3], random())}),
		blockLineOf(3, nil, nil),
		blockLineOf(4, []string{r(present[11]), r(flipBit(newStem, 120))}, nil),
	}
	writeWorkload(t, dir, modeRaw, state, blocks)
}

// writeAccountsWitnessWorkload writes an accounts workload whose blocks
// read present and absent accounts and slots, write slots (new, changed,
// cleared), transfer, create an account, give an account the code of a
// 4,500-byte contract (code chunks beyond the header stem), then a block
// without accesses.
func writeAccountsWitnessWorkload(t *testing.T, dir string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7864, 2))
	addr := func() (a common.Address) {
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		return a
	}
	word := func() (h common.Hash) {
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		return h
	}
	code := make([]byte, 4500)
	for i := range code {
		code[i] = byte(rng.Uint32())
	}
	small := bytes.Repeat([]byte{0x60, 0x01}, 50)
	var state []string
	account := func(a common.Address, nonce uint64, balance string, c []byte) {
		state = append(state, fmt.Sprintf(`{"account":"%s","nonce":%d,"balance":"%s","code":"%s"}`, a.Hex(), nonce, balance, hexutil.Encode(c)))
	}
	slot := func(a common.Address, k, v common.Hash) {
		state = append(state, fmt.Sprintf(`{"slot":"%s","key":"%s","value":"%s"}`, a.Hex(), k.Hex(), v.Hex()))
	}
	var eoas []common.Address
	for i := range 12 {
		a := addr()
		eoas = append(eoas, a)
		account(a, uint64(i), fmt.Sprint(1_000_000+i), nil)
	}
	big, little := addr(), addr()
	account(big, 1, "5", code)
	account(little, 1, "6", small)
	var bigSlots, littleSlots []common.Hash
	for i := range 20 {
		k := common.Hash{31: byte(i)} // header slots
		if i >= 10 {
			k = word()
		}
		bigSlots = append(bigSlots, k)
		slot(big, k, word())
	}
	for range 5 {
		k := word()
		littleSlots = append(littleSlots, k)
		slot(little, k, word())
	}
	empty := common.HexToHash("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
	a := func(x common.Address) string { return "a:" + x.Hex() }
	s := func(x common.Address, k common.Hash) string { return "s:" + x.Hex() + ":" + k.Hex() }
	aw := func(x common.Address, nonce uint64, balance string, ch common.Hash, size int) string {
		return fmt.Sprintf("a:%s=%d,%s,%s,%d", x.Hex(), nonce, balance, ch.Hex(), size)
	}
	sw := func(x common.Address, k, v common.Hash) string { return "s:" + x.Hex() + ":" + k.Hex() + "=" + v.Hex() }
	newAccount, slotOwner := addr(), addr()
	blocks := []string{
		blockLineOf(1,
			[]string{a(eoas[0]), a(eoas[1]), a(addr()), s(big, bigSlots[0]), s(big, word()), s(little, littleSlots[1])},
			[]string{aw(eoas[0], 1, "999000", empty, 0), aw(eoas[1], 2, "1001001", empty, 0),
				sw(big, bigSlots[0], word()), sw(big, word(), word()), sw(little, littleSlots[2], common.Hash{})}),
		blockLineOf(2,
			[]string{a(eoas[2]), s(big, bigSlots[15])},
			[]string{aw(eoas[2], 3, "1000002", crypto.Keccak256Hash(code), len(code)), aw(newAccount, 0, "7", empty, 0),
				aw(big, 1, "9", crypto.Keccak256Hash(code), len(code))}),
		blockLineOf(3, nil, nil),
		blockLineOf(4,
			[]string{a(newAccount), s(eoas[2], bigSlots[0]), a(addr()), s(addr(), word()), s(slotOwner, word())},
			[]string{sw(eoas[3], word(), word()), sw(slotOwner, word(), word())}),
		blockLineOf(5, []string{s(slotOwner, word()), s(little, littleSlots[2])}, []string{sw(eoas[4], common.Hash{}, word())}),
	}
	writeWorkload(t, dir, modeAccounts, state, blocks)
}

func TestPathBits(t *testing.T) {
	for key, want := range map[string]string{"": "", "\x80\x01": "1", "\x40\x05": "01000", "\x00\x01\x10": "0000000000000001"} {
		if got, err := pathBits([]byte(key)); err != nil || got != want {
			t.Errorf("pathBits(%x) = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, key := range []string{"\x00", "\x41\x01", "\x80\x09", "\x80"} {
		if got, err := pathBits([]byte(key)); err == nil {
			t.Errorf("pathBits(%x) = %q, want an error", key, got)
		}
	}
}

func TestWitnessBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "--engine", "mpt", "--db", "x", "--workload", tinyDir, "--run", "1", "--witness", "w"}, "--engine bintrie only"},
		{[]string{"run", "--engine", "bintrie", "--db", "x", "--workload", tinyDir, "--run", "1", "--witness", ""}, "needs a file"},
		{[]string{"load", "--engine", "bintrie", "--db", "x", "--workload", tinyDir, "--witness", "w"}, "witness"},
	} {
		out, errs, code := cli(c.args...)
		if code != 2 || !strings.Contains(errs, c.msg) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.msg)
		}
	}
}

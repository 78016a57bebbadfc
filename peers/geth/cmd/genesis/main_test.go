package main

import (
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/holiman/uint256"
)

const fixtureDir = "../../../../test-vectors/genesis"

// The committed fixtures are exactly what the program writes, and the
// program is deterministic.
func TestFixturesUpToDate(t *testing.T) {
	a, err := build()
	if err != nil {
		t.Fatal(err)
	}
	b, err := build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].name != b[i].name || !bytes.Equal(a[i].text, b[i].text) || a[i].root != b[i].root {
			t.Fatalf("%s: two runs differ", a[i].name)
		}
	}
	if err := compare(fixtureDir, a); err != nil {
		t.Fatalf("%v (regenerate with go run ./cmd/genesis -out %s)", err, filepath.Clean("../../test-vectors/genesis"))
	}
}

func decodeFixture(t *testing.T, name string) types.GenesisAlloc {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if name == "edge-alloc-only.json" {
		var ga types.GenesisAlloc
		if err := ga.UnmarshalJSON(blob); err != nil {
			t.Fatal(err)
		}
		return ga
	}
	var g core.Genesis
	if err := json.Unmarshal(blob, &g); err != nil {
		t.Fatal(err)
	}
	return g.Alloc
}

// modelRoot applies an alloc with the trie API and the rules documented in
// README.md, without StateDB: every account gets its header (UpdateAccount,
// full 256-bit balance handed to the trie), code chunks for non-empty code,
// a storage leaf for every non-zero value and nothing for a zero value.
func modelRoot(t *testing.T, ga types.GenesisAlloc) (common.Hash, *bintrie.BinaryTrie) {
	t.Helper()
	tdb := triedb.NewDatabase(rawdb.NewMemoryDatabase(), &triedb.Config{IsUBT: true, BinTrieGroupDepth: 5, PathDB: pathdb.Defaults})
	t.Cleanup(func() { tdb.Close() })
	tr, err := bintrie.NewBinaryTrie(types.EmptyBinaryHash, tdb, 5)
	if err != nil {
		t.Fatal(err)
	}
	for addr, a := range ga {
		codeHash := crypto.Keccak256Hash(a.Code)
		acct := &types.StateAccount{Nonce: a.Nonce, Balance: uint256.MustFromBig(a.Balance), Root: types.EmptyRootHash, CodeHash: codeHash[:]}
		if err := tr.UpdateAccount(addr, acct, len(a.Code)); err != nil {
			t.Fatal(err)
		}
		if len(a.Code) > 0 {
			if err := tr.UpdateContractCode(addr, codeHash, a.Code); err != nil {
				t.Fatal(err)
			}
		}
		for k, v := range a.Storage {
			if v != (common.Hash{}) {
				if err := tr.UpdateStorage(addr, k[:], common.TrimLeftZeroes(v[:])); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return tr.Hash(), tr
}

// Every root in roots.json equals the trie-API model of its file.
func TestRootsMatchModel(t *testing.T) {
	blob, err := os.ReadFile(filepath.Join(fixtureDir, rootsFile))
	if err != nil {
		t.Fatal(err)
	}
	var roots map[string]string
	if err := json.Unmarshal(blob, &roots); err != nil {
		t.Fatal(err)
	}
	if len(roots) != 3+len(edgeCases()) {
		t.Fatalf("roots.json has %d entries", len(roots))
	}
	for name, want := range roots {
		got, _ := modelRoot(t, decodeFixture(t, name))
		if got.Hex() != want {
			t.Errorf("%s: model root %s, roots.json %s", name, got.Hex(), want)
		}
	}
}

// A zero storage value writes nothing: the file's root equals the root of
// the same alloc without its zero entries, and an account with only zero
// entries is an empty account.
func TestZeroStorageWritesNothing(t *testing.T) {
	ga := decodeFixture(t, "edge-zero-storage.json")
	zeros := 0
	for addr, a := range ga {
		for k, v := range a.Storage {
			if v == (common.Hash{}) {
				delete(a.Storage, k)
				zeros++
			}
		}
		ga[addr] = a
	}
	if zeros != 8 {
		t.Fatalf("expected 8 zero entries, found %d", zeros)
	}
	root, err := hashAllocUBT(ga)
	if err != nil {
		t.Fatal(err)
	}
	if want := fixtureRoot(t, "edge-zero-storage.json"); root != want {
		t.Fatalf("root without zero entries %x, file root %x", root, want)
	}
}

func fixtureRoot(t *testing.T, name string) common.Hash {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(fixtureDir, rootsFile))
	if err != nil {
		t.Fatal(err)
	}
	var roots map[string]string
	if err := json.Unmarshal(blob, &roots); err != nil {
		t.Fatal(err)
	}
	return common.HexToHash(roots[name])
}

// Empty accounts are kept: removing them changes the root.
func TestEmptyAccountsKept(t *testing.T) {
	ga := decodeFixture(t, "edge-empty-account.json")
	for addr, a := range ga {
		if a.Balance.Sign() != 0 || a.Nonce != 0 || len(a.Code) != 0 || len(a.Storage) != 0 {
			t.Fatalf("%x is not empty", addr)
		}
	}
	if root := fixtureRoot(t, "edge-empty-account.json"); root == types.EmptyBinaryHash {
		t.Fatal("empty accounts were dropped")
	}
}

// The binary trie keeps balanceBytes[16:] of a balance longer than 16
// bytes (minimal big-endian encoding): the last len-16 bytes.
func TestBalanceTruncation(t *testing.T) {
	ga := decodeFixture(t, "edge-big-balance.json")
	_, tr := modelRoot(t, ga)
	for addr, a := range ga {
		full := a.Balance.Bytes()
		want := new(big.Int).SetBytes(full)
		if len(full) > 16 {
			want.SetBytes(full[16:])
		}
		got, err := tr.GetAccount(addr)
		if err != nil || got == nil {
			t.Fatalf("%x: %v", addr, err)
		}
		if got.Balance.ToBig().Cmp(want) != 0 {
			t.Errorf("balance %#x (%d bytes): trie keeps %#x, want %#x", a.Balance, len(full), got.Balance, want)
		}
	}
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	if a := ga[common.HexToAddress(addrHex("bb-1"))]; a.Balance.Cmp(two128) != 0 {
		t.Fatalf("bb-1 should be 2^128, is %v", a.Balance)
	}
}

// What geth's decoders accept for the spellings in edge-number-formats.json.
func TestNumberFormats(t *testing.T) {
	ga := decodeFixture(t, "edge-number-formats.json")
	eth := new(big.Int).SetUint64(1e18)
	big30, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	want := []struct {
		bal   *big.Int
		nonce uint64
	}{
		{eth, 5}, {eth, 5}, {eth, 5}, {eth, 5}, {eth, 5}, {big.NewInt(123), 7},
		{new(big.Int), ^uint64(0)}, {new(big.Int), ^uint64(0)}, {big30, ^uint64(0)}, {big.NewInt(0xabcdef), 0xff},
	}
	for i, w := range want {
		a, ok := ga[common.HexToAddress(addrHex("nf-"+string(rune('0'+i))))]
		if !ok {
			t.Fatalf("account nf-%d missing", i)
		}
		if a.Balance.Cmp(w.bal) != 0 || a.Nonce != w.nonce {
			t.Errorf("nf-%d: balance %v nonce %d, want %v %d", i, a.Balance, a.Nonce, w.bal, w.nonce)
		}
	}
}

// Storage keys and values are left-padded to 32 bytes; "0x" and "" are 0.
func TestStorageFormats(t *testing.T) {
	ga := decodeFixture(t, "edge-storage-formats.json")
	a := ga[common.HexToAddress(addrHex("sf-a"))]
	checks := map[common.Hash]common.Hash{
		common.HexToHash("0x01"):     common.HexToHash("0x2a"),
		common.HexToHash("0x02"):     common.HexToHash("0x2b"),
		common.HexToHash("0x03"):     common.HexToHash("0x2c"),
		common.HexToHash("0xabcdef"): common.HexToHash("0xff"),
		{}:                           common.HexToHash("0x07"),
		common.HexToHash("0x0100"):   common.HexToHash("0x09"),
	}
	for k, v := range checks {
		if a.Storage[k] != v {
			t.Errorf("slot %x = %x, want %x", k, a.Storage[k], v)
		}
	}
	c := ga[common.HexToAddress(addrHex("sf-c"))]
	if c.Storage[common.Hash{}] != common.HexToHash("0x01") || c.Storage[common.HexToHash("0x40")] != common.HexToHash("0x40") {
		t.Errorf("sf-c storage %v", c.Storage)
	}
}

// Spellings geth's decoders reject (an importer should reject them too).
func TestRejectedInputs(t *testing.T) {
	const a = `"0x00000000000000000000000000000000000000aa"`
	bad := map[string]string{
		"missing balance":         `{` + a + `:{"nonce":"0x1"}}`,
		"null balance":            `{` + a + `:{"balance":null}}`,
		"balance 0x":              `{` + a + `:{"balance":"0x"}}`,
		"balance exponent":        `{` + a + `:{"balance":1e18}}`,
		"balance fraction":        `{` + a + `:{"balance":"1.5"}}`,
		"balance over 256 bits":   `{` + a + `:{"balance":"0x1` + strings.Repeat("00", 32) + `"}}`,
		"nonce over 64 bits":      `{` + a + `:{"balance":"0","nonce":"18446744073709551616"}}`,
		"negative hex balance":    `{` + a + `:{"balance":"-0x1"}}`,
		"negative nonce":          `{` + a + `:{"balance":"0","nonce":-1}}`,
		"code without 0x":         `{` + a + `:{"balance":"0","code":"6000"}}`,
		"code odd length":         `{` + a + `:{"balance":"0","code":"0x600"}}`,
		"storage odd length":      `{` + a + `:{"balance":"0","storage":{"0x1":"0x01"}}}`,
		"storage value odd":       `{` + a + `:{"balance":"0","storage":{"0x01":"0x1"}}}`,
		"storage 0X prefix":       `{` + a + `:{"balance":"0","storage":{"0X01":"0x01"}}}`,
		"storage key too long":    `{` + a + `:{"balance":"0","storage":{"0x` + strings.Repeat("00", 33) + `":"0x01"}}}`,
		"storage value as number": `{` + a + `:{"balance":"0","storage":{"0x01":1}}}`,
		"short address":           `{"0x00aa":{"balance":"0"}}`,
	}
	for name, text := range bad {
		var ga types.GenesisAlloc
		if err := ga.UnmarshalJSON([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A whole genesis needs gasLimit, difficulty and alloc.
	for _, text := range []string{`{"difficulty":"0x0","alloc":{}}`, `{"gasLimit":"0x0","alloc":{}}`, `{"gasLimit":"0x0","difficulty":"0x0"}`} {
		var g core.Genesis
		if err := json.Unmarshal([]byte(text), &g); err == nil {
			t.Errorf("%s: accepted", text)
		}
	}
}

// A negative balance -x decodes and becomes 2^256-x (uint256.MustFromBig
// wraps it); the trie then keeps its last 16 bytes.
func TestNegativeBalance(t *testing.T) {
	ga := decodeFixture(t, "edge-negative-balance.json")
	wrapped := types.GenesisAlloc{}
	for addr, a := range ga {
		if a.Balance.Sign() >= 0 {
			t.Fatalf("%x: balance %v is not negative", addr, a.Balance)
		}
		w := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 256), a.Balance)
		if !uint256.MustFromBig(a.Balance).Eq(uint256.MustFromBig(w)) {
			t.Fatalf("%v does not wrap to %v", a.Balance, w)
		}
		wrapped[addr] = types.Account{Balance: w}
	}
	root, err := hashAllocUBT(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if want := fixtureRoot(t, "edge-negative-balance.json"); root != want {
		t.Fatalf("root with wrapped balances %x, file root %x", root, want)
	}
}

// Two spellings of one address (or slot) in the same object: the later one
// wins, as encoding/json assigns map entries in document order.
func TestDuplicateKeysLaterWins(t *testing.T) {
	var ga types.GenesisAlloc
	text := `{"0x00000000000000000000000000000000000000aa":{"balance":"1","storage":{"0x01":"0x05","0x0001":"0x06"}},` +
		`"00000000000000000000000000000000000000AA":{"balance":"2","storage":{"01":"0x07","0x000001":"0x08"}}}`
	if err := ga.UnmarshalJSON([]byte(text)); err != nil {
		t.Fatal(err)
	}
	a := ga[common.HexToAddress("0xaa")]
	if len(ga) != 1 || a.Balance.Int64() != 2 || len(a.Storage) != 1 || a.Storage[common.HexToHash("0x01")] != common.HexToHash("0x08") {
		t.Fatalf("got %d accounts, %+v", len(ga), a)
	}
}

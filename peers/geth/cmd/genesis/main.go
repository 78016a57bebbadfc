// Command genesis writes the genesis fixtures of ubt's state import
// (test-vectors/genesis): the mainnet, Sepolia and Hoodi genesis objects as
// go-ethereum marshals them, small edge-case genesis and alloc files, and
// roots.json, the binary-trie (UBT) state root go-ethereum v1.17.10 computes
// for each file.
//
//	genesis -out DIR
//	genesis -out DIR -check   (compare with the files in DIR, write nothing)
//
// Every root is computed from the exact text written to DIR, decoded with
// go-ethereum's own unmarshalling (core.Genesis or types.GenesisAlloc), and
// checked against go-ethereum's exported genesis path (ToBlock and Commit of
// a genesis whose config enables the binary trie at genesis).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/holiman/uint256"
)

// rootsFile maps every fixture file name to its expected UBT root.
const rootsFile = "roots.json"

func main() {
	out := flag.String("out", "", "output directory (test-vectors/genesis)")
	check := flag.Bool("check", false, "compare with the files in -out instead of writing them")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "genesis: -out is required")
		os.Exit(2)
	}
	files, err := build()
	if err == nil {
		if *check {
			err = compare(*out, files)
		} else {
			err = write(*out, files)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "genesis: %v\n", err)
		os.Exit(1)
	}
}

// fixture is one input file and the UBT root of the state it describes.
type fixture struct {
	name string
	text []byte
	root common.Hash
}

// build produces every fixture file, roots.json last.
func build() ([]fixture, error) {
	var files []fixture
	for _, n := range networks() {
		f, err := networkFixture(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		files = append(files, f)
	}
	for _, e := range edgeCases() {
		f, err := edgeFixture(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		files = append(files, f)
	}
	roots := make(map[string]string, len(files))
	for _, f := range files {
		roots[f.name] = f.root.Hex()
	}
	blob, err := json.MarshalIndent(roots, "", "  ") // keys sorted
	if err != nil {
		return nil, err
	}
	return append(files, fixture{name: rootsFile, text: append(blob, '\n')}), nil
}

func write(dir string, files []fixture) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.text, 0o644); err != nil {
			return err
		}
		if f.name != rootsFile {
			fmt.Printf("%-32s %s\n", f.name, f.root.Hex())
		}
	}
	return nil
}

func compare(dir string, files []fixture) error {
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return err
		}
		if !bytes.Equal(have, f.text) {
			return fmt.Errorf("%s differs from what this program writes", filepath.Join(dir, f.name))
		}
	}
	fmt.Printf("%d files in %s are up to date\n", len(files), dir)
	return nil
}

// network is one of go-ethereum's built-in genesis blocks.
type network struct {
	name    string
	genesis *core.Genesis
	hash    common.Hash // the MPT genesis block hash go-ethereum ships
}

func networks() []network {
	return []network{
		{"mainnet.json", core.DefaultGenesisBlock(), params.MainnetGenesisHash},
		{"sepolia.json", core.DefaultSepoliaGenesisBlock(), params.SepoliaGenesisHash},
		{"hoodi.json", core.DefaultHoodiGenesisBlock(), params.HoodiGenesisHash},
	}
}

// networkFixture marshals a built-in genesis with go-ethereum's encoder
// (gen_genesis.go), decodes the text again and computes its UBT root. The
// decoded genesis must still produce the network's MPT genesis block hash,
// which shows the text carries the whole genesis.
func networkFixture(n network) (fixture, error) {
	text, err := json.Marshal(n.genesis)
	if err != nil {
		return fixture{}, err
	}
	text = append(text, '\n')
	var g core.Genesis
	if err := json.Unmarshal(text, &g); err != nil {
		return fixture{}, err
	}
	if h := g.ToBlock().Hash(); h != n.hash {
		return fixture{}, fmt.Errorf("decoded genesis has block hash %x, want %x", h, n.hash)
	}
	root, err := genesisRoot(&g)
	if err != nil {
		return fixture{}, err
	}
	// The in-memory genesis go-ethereum ships must give the same root.
	if r, err := exportedRoot(n.genesis); err != nil || r != root {
		return fixture{}, fmt.Errorf("root of the built-in genesis %x (err %v) != root of its JSON %x", r, err, root)
	}
	return fixture{name: n.name, text: text, root: root}, nil
}

// edgeFixture decodes an edge case's text as go-ethereum would (a whole
// genesis with core.Genesis, a bare alloc with types.GenesisAlloc) and
// computes its UBT root.
func edgeFixture(e edgeCase) (fixture, error) {
	var text bytes.Buffer
	if err := json.Indent(&text, []byte(e.text), "", "  "); err != nil {
		return fixture{}, fmt.Errorf("fixture text is not JSON: %w", err)
	}
	text.WriteByte('\n')
	var g core.Genesis
	if e.allocOnly {
		if err := g.Alloc.UnmarshalJSON(text.Bytes()); err != nil {
			return fixture{}, err
		}
	} else if err := json.Unmarshal(text.Bytes(), &g); err != nil {
		return fixture{}, err
	}
	if len(g.Alloc) != e.accounts {
		return fixture{}, fmt.Errorf("decoded %d accounts, the case has %d", len(g.Alloc), e.accounts)
	}
	root, err := genesisRoot(&g)
	if err != nil {
		return fixture{}, err
	}
	return fixture{name: e.name, text: text.Bytes(), root: root}, nil
}

// genesisRoot is the UBT root of g's alloc by hashAlloc's sequence, checked
// against go-ethereum's exported paths.
func genesisRoot(g *core.Genesis) (common.Hash, error) {
	root, err := hashAllocUBT(g.Alloc)
	if err != nil {
		return common.Hash{}, err
	}
	if r, err := exportedRoot(g); err != nil || r != root {
		return common.Hash{}, fmt.Errorf("exported genesis path gives %x (err %v), hashAlloc's sequence %x", r, err, root)
	}
	return root, nil
}

// hashAllocUBT repeats core/genesis.go's unexported hashAlloc(ga, true): a
// StateDB over a path database in memory configured for the binary trie,
// then per account AddBalance (if a balance is given), SetCode, SetNonce and
// SetState for every storage entry, then Commit with empty fork rules (so
// EIP-158 is off and empty accounts are kept).
func hashAllocUBT(ga types.GenesisAlloc) (common.Hash, error) {
	tdb := triedb.NewDatabase(rawdb.NewMemoryDatabase(), &triedb.Config{
		PathDB:            pathdb.Defaults,
		IsUBT:             true,
		BinTrieGroupDepth: triedb.UBTDefaults.BinTrieGroupDepth,
	})
	defer tdb.Close()
	statedb, err := state.New(types.EmptyBinaryHash, state.NewDatabase(tdb, nil))
	if err != nil {
		return common.Hash{}, err
	}
	for addr, account := range ga {
		if account.Balance != nil {
			statedb.AddBalance(addr, uint256.MustFromBig(account.Balance), tracing.BalanceIncreaseGenesisBalance)
		}
		statedb.SetCode(addr, account.Code, tracing.CodeChangeGenesis)
		statedb.SetNonce(addr, account.Nonce, tracing.NonceChangeGenesis)
		for key, value := range account.Storage {
			statedb.SetState(addr, key, value)
		}
	}
	return statedb.Commit(params.Rules{}, 0)
}

// exportedRoot computes the UBT root through go-ethereum's exported API: a
// copy of g whose chain config sets enableUBTAtGenesis, so that ToBlock
// (hashAlloc) and Commit (flushAlloc into a binary-trie database) both build
// the binary trie. The two must agree.
func exportedRoot(g *core.Genesis) (common.Hash, error) {
	cpy := *g
	if g.Config != nil {
		cfg := *g.Config
		cpy.Config = &cfg
	} else {
		cpy.Config = &params.ChainConfig{ChainID: common.Big1}
	}
	cpy.Config.EnableUBTAtGenesis = true
	if !cpy.IsUBT() {
		return common.Hash{}, errors.New("genesis does not report IsUBT")
	}
	root := cpy.ToBlock().Root()

	db := rawdb.NewMemoryDatabase()
	tdb := triedb.NewDatabase(db, triedb.UBTDefaults)
	defer tdb.Close()
	// Commit insists on a valid config; a config-less edge case gets one
	// with no forks, which does not change the state.
	block, err := cpy.Commit(db, tdb, nil)
	if err != nil {
		return common.Hash{}, fmt.Errorf("genesis commit: %w", err)
	}
	if block.Root() != root {
		return common.Hash{}, fmt.Errorf("ToBlock root %x != Commit root %x", root, block.Root())
	}
	return root, nil
}

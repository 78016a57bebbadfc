package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie/bintrie"
)

// run --witness FILE: per executed block, the node blobs that the binary
// trie serving the block resolved from the database (BinaryTrie.Witness()),
// as one JSON line. See README.md, "Witness recording".

// witnessLine is one line of the --witness file.
type witnessLine struct {
	Block      uint64        `json:"block"`
	RootBefore string        `json:"root_before"`
	RootAfter  string        `json:"root_after"`
	GroupDepth int           `json:"group_depth"`
	Nodes      []witnessNode `json:"nodes"`
}

// witnessNode is one resolved blob: its path as a string of '0'/'1'
// characters from the root ("" for the root) and the blob as 0x-hex.
type witnessNode struct {
	Path string `json:"path"`
	Blob string `json:"blob"`
}

// witnessFile writes the --witness lines.
type witnessFile struct {
	f *os.File
	w *bufio.Writer
}

func createWitnessFile(path string) (*witnessFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--witness: %w", err)
	}
	return &witnessFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// write appends the line of one block; nodes is Witness() keyed by geth's
// path keys.
func (wf *witnessFile) write(block uint64, before, after common.Hash, groupDepth int, nodes map[string][]byte) error {
	line, err := newWitnessLine(block, before, after, groupDepth, nodes)
	if err != nil {
		return fmt.Errorf("block %d: witness: %w", block, err)
	}
	return printJSON(wf.w, line)
}

// close flushes and closes the file.
func (wf *witnessFile) close() error {
	err := wf.w.Flush()
	if cerr := wf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func newWitnessLine(block uint64, before, after common.Hash, groupDepth int, nodes map[string][]byte) (*witnessLine, error) {
	line := &witnessLine{
		Block:      block,
		RootBefore: before.Hex(),
		RootAfter:  after.Hex(),
		GroupDepth: groupDepth,
		Nodes:      make([]witnessNode, 0, len(nodes)),
	}
	for key, blob := range nodes {
		bits, err := pathBits([]byte(key))
		if err != nil {
			return nil, err
		}
		line.Nodes = append(line.Nodes, witnessNode{Path: bits, Blob: hexutil.Encode(blob)})
	}
	// Byte order of the bit strings: a parent sorts before its subtree, the
	// 0 subtree before the 1 subtree (ubt's witness_paths order).
	sort.Slice(line.Nodes, func(i, j int) bool { return line.Nodes[i].Path < line.Nodes[j].Path })
	return line, nil
}

// pathBits turns geth's path key (the bits packed MSB-first into
// ceil(n/8) bytes, unused trailing bits zero, then one byte n; empty for
// the root) into n '0'/'1' characters.
func pathBits(key []byte) (string, error) {
	if len(key) == 0 {
		return "", nil
	}
	n := int(key[len(key)-1])
	packed := key[:len(key)-1]
	if n == 0 || n > 248 || len(packed) != (n+7)/8 {
		return "", fmt.Errorf("malformed path key %x", key)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range n {
		b.WriteByte('0' + (packed[i/8]>>(7-i%8))&1)
	}
	if n%8 != 0 && packed[len(packed)-1]&(0xff>>(n%8)) != 0 {
		return "", fmt.Errorf("path key %x has non-zero trailing bits", key)
	}
	return b.String(), nil
}

// recordingState opens, for accounts-mode blocks, a StateDB whose reads
// and writes all go through one binary trie opened at the block's parent
// root, so that the trie's Witness() covers the whole block. geth's own
// StateDB reads through a separate trie (its state reader opens one) and
// writes through the trie of OpenTrie, so either trie alone would miss
// part of the block. The values read and written are the same, and so are
// the roots.
type recordingState struct {
	sdb        state.Database
	code       state.ContractCodeReader
	groupDepth int
}

func newRecordingState(s *store) *recordingState {
	return &recordingState{sdb: s.sdb, code: state.NewCodeDB(s.db).Reader(), groupDepth: s.opts.groupDepth}
}

// open returns the block's StateDB and the trie that serves it.
func (r *recordingState) open(root common.Hash) (*state.StateDB, *bintrie.BinaryTrie, error) {
	tr, err := bintrie.NewBinaryTrie(root, r.sdb.TrieDB(), r.groupDepth)
	if err != nil {
		return nil, nil, err
	}
	db := &oneTrieDatabase{Database: r.sdb, root: root, tr: tr}
	st, err := state.NewWithReader(root, db, &oneTrieReader{ContractCodeReader: r.code, tr: tr})
	if err != nil {
		return nil, nil, err
	}
	return st, tr, nil
}

// oneTrieDatabase is the store's state database, except that OpenTrie
// returns the block's trie.
type oneTrieDatabase struct {
	state.Database
	root common.Hash
	tr   *bintrie.BinaryTrie
}

func (d *oneTrieDatabase) OpenTrie(root common.Hash) (state.Trie, error) {
	if root != d.root {
		return nil, fmt.Errorf("witness recording: trie opened at %x, the block's parent is %x", root, d.root)
	}
	return d.tr, nil
}

// oneTrieReader reads accounts and slots from the block's trie, as geth's
// binary-trie state reader reads them from its own trie.
type oneTrieReader struct {
	state.ContractCodeReader
	tr   *bintrie.BinaryTrie
	lock sync.Mutex
}

func (r *oneTrieReader) Account(addr common.Address) (*types.StateAccount, error) {
	r.lock.Lock()
	defer r.lock.Unlock()
	acct, err := r.tr.GetAccount(addr)
	if err != nil || acct == nil {
		return nil, err
	}
	return acct.Copy(), nil
}

func (r *oneTrieReader) Storage(addr common.Address, key common.Hash) (common.Hash, error) {
	r.lock.Lock()
	defer r.lock.Unlock()
	ret, err := r.tr.GetStorage(addr, key.Bytes())
	if err != nil {
		return common.Hash{}, err
	}
	var value common.Hash
	value.SetBytes(ret)
	return value, nil
}

var errWitnessEngine = errors.New("--witness applies to --engine bintrie only (it records BinaryTrie.Witness())")

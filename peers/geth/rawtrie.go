package main

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
)

// rawTrie is one trie keyed by raw 32-byte keys (raw-mode workloads): for
// the binary trie the key is the tree key itself (stem = first 31 bytes,
// suffix = last byte); for the MPT it is the path in one plain (unhashed)
// trie.
type rawTrie interface {
	get(key common.Hash) ([]byte, error)
	// update sets keys[i] to values[i]; the value slices are retained.
	update(keys []common.Hash, values [][]byte) error
	hash() common.Hash
	// commit collects the dirty nodes; the trie is unusable afterwards.
	commit() (common.Hash, *trienode.NodeSet)
	// witness is the trie's Witness(): every node blob it resolved from the
	// database, keyed by path (also after commit).
	witness() map[string][]byte
}

func openRawTrie(tdb *triedb.Database, opts *engineOpts, root common.Hash) (rawTrie, error) {
	if opts.engine == engineBintrie {
		t, err := bintrie.NewBinaryTrie(root, tdb, opts.groupDepth)
		if err != nil {
			return nil, err
		}
		return &rawBinTrie{t: t}, nil
	}
	t, err := trie.New(trie.TrieID(root), tdb)
	if err != nil {
		return nil, err
	}
	return &rawMPT{t: t}, nil
}

type rawBinTrie struct {
	t    *bintrie.BinaryTrie
	vals [bintrie.StemNodeWidth][]byte // UpdateStem's sparse value row, reused
}

func (r *rawBinTrie) get(key common.Hash) ([]byte, error) { return r.t.GetWithHashedKey(key[:]) }

func (r *rawBinTrie) update(keys []common.Hash, values [][]byte) error {
	for i := range keys {
		suffix := keys[i][bintrie.StemSize]
		r.vals[suffix] = values[i]
		err := r.t.UpdateStem(keys[i][:bintrie.StemSize], r.vals[:])
		r.vals[suffix] = nil
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *rawBinTrie) hash() common.Hash { return r.t.Hash() }

func (r *rawBinTrie) commit() (common.Hash, *trienode.NodeSet) { return r.t.Commit(false) }

func (r *rawBinTrie) witness() map[string][]byte { return r.t.Witness() }

type rawMPT struct{ t *trie.Trie }

func (r *rawMPT) get(key common.Hash) ([]byte, error) { return r.t.Get(key[:]) }

func (r *rawMPT) update(keys []common.Hash, values [][]byte) error {
	for i := range keys {
		if err := r.t.Update(keys[i][:], values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (r *rawMPT) hash() common.Hash { return r.t.Hash() }

func (r *rawMPT) commit() (common.Hash, *trienode.NodeSet) { return r.t.Commit(false) }

func (r *rawMPT) witness() map[string][]byte { return r.t.Witness() }

// Package gethstate adapts a ubt database to go-ethereum's state package,
// so that
//
//	sdb, err := state.New(root, gethstate.NewDatabase(db))
//
// gives a working go-ethereum *state.StateDB whose state lives in ubt: the
// same EIP-7864 unified binary trie, with the same roots, as go-ethereum's
// own binary trie (trie/bintrie over triedb with IsUBT).
//
// # Design
//
// Database implements state.Database:
//
//   - Type is state.TypeUBT, and OpenStorageTrie returns the account trie
//     itself: there is one unified trie, as in go-ethereum's UBTDatabase.
//
//   - Reader(root) is a state.Reader over a ubt.Reader snapshot at root
//     (the tip, any block still in memory, or the last persisted block). An
//     account is nil when absent (both header leaves absent or zeroed, as
//     bintrie's GetAccount); otherwise its Nonce, Balance (the 32
//     big-endian bytes as a uint256), CodeHash, and Root left zero
//     (common.Hash{}), which is what bintrie.BinaryTrie.GetAccount returns
//     through go-ethereum's ubtTrieReader (go-ethereum's path-database flat
//     reader reports types.EmptyRootHash instead; StateDB does not use the
//     field for a TypeUBT database). A storage slot is its 32-byte value,
//     the zero hash when absent. Contract code comes from the trie's code
//     chunks (ubt.Reader.Code, reassembled up to the code size BasicData
//     records): Code, CodeSize and Has answer nil, 0 and false when the
//     account is absent, when its code hash is not the one asked for, or
//     when the hash is types.EmptyCodeHash. When the reassembled code does
//     not hash to the code hash (BasicData holding a wrong code size, see
//     Limitations), the library recovers it from the chunks alone: the
//     shortest prefix of the chunks' code bytes that hashes to it (nil
//     here if none does). go-ethereum's state.Reader has no Close: the snapshot is
//     released by a cleanup (runtime.AddCleanup) once the Go reader is
//     unreachable, or by Database.Close, so a block stays in ubt's memory
//     while some StateDB still holds a reader of it. Readers are safe for concurrent use.
//
//   - OpenTrie(root) accepts only the database's tip (ubt.DB.Root): ubt has
//     one writer chain, so a trie opened anywhere else fails with an error
//     wrapping ErrNotTip that names both roots. To abandon a block and
//     build another on its parent, call ubt.DB.Revert(parent) first. An
//     empty database accepts types.EmptyBinaryHash (the zero hash, what
//     go-ethereum passes for an empty binary trie) and types.EmptyRootHash.
//
//   - The Trie buffers writes, in order, under a mutex (StateDB.commit
//     calls it from several goroutines): UpdateAccount is ubt.SetAccount
//     (code size = codeLen; a balance of 2^128 or more is truncated by the
//     library as bintrie truncates it), UpdateStorage is ubt.SetStorage with
//     the value left-padded (or cut to its first 32 bytes) as bintrie does,
//     DeleteStorage is ubt.DeleteStorage (32 zero bytes, as bintrie),
//     UpdateContractCode is ubt.SetCode (code chunks only), DeleteAccount is
//     ubt.DeleteAccount (zeroes the BasicData and CodeHash leaves only), and
//     the Batch variants loop. Hash applies the buffer as one block layer
//     (ubt.DB.ApplyAccounts) and returns its root; with nothing buffered it
//     returns the tip. GetAccount and GetStorage apply the buffer, then read
//     the tip. Commit applies the buffer and returns the root with an empty
//     trienode.NodeSet: the nodes live in ubt, not in a triedb. Witness is
//     empty, GetKey is nil, NodeIterator and Prove fail (ubt proofs come
//     from ubt.DB.Prove and ubt.Reader.Prove), PrefetchAccount and
//     PrefetchStorage do nothing, IsUBT is true. An error of the library
//     while applying the buffer is returned by the next call that can
//     return one (GetAccount, GetStorage, and Database.Commit of the
//     update); Hash and Trie.Commit, which cannot, return the zero hash.
//
//   - Commit(update) does nothing for an empty update (update.Root equal to
//     update.OriginRoot); otherwise the tip must be update.Root, and the
//     blocks up to it are made durable with ubt.DB.Persist. Contract code
//     needs no store of its own (it is in the trie's code chunks), so
//     update.Codes is ignored.
//
//   - TrieDB returns nil: nothing on core/state's StateDB path calls it for
//     this database. Iteratee fails: ubt has no iterator over accounts or
//     storage (StateDB only needs one to wipe storage before Cancun in MPT
//     mode, or to dump the state).
//
// # Limitations
//
// StateDB.Copy panics once the StateDB has opened its trie (at the first
// IntermediateRoot or Commit): go-ethereum's mustCopyTrie (core/state,
// database.go) copies only its own trie types (*trie.StateTrie,
// *transitiontrie.TransitionTrie, *bintrie.BinaryTrie) and panics with
// "unknown trie type" on any other. Copy before that works.
//
// A reader answers code by address, not by hash alone as go-ethereum's
// code database does: Has(addr, hash) is false when addr has other code
// even if another account holds code with that hash (StateDB only asks for
// an account's own code hash; CommitWithUpdate's Duplicate flag, a
// statistic, is computed from this).
//
// go-ethereum writes the code size of an updated account as the length of
// the code the StateDB has loaded (statedb.go, updateStateObject passes
// len(obj.code) to UpdateAccount), which is 0 when an existing contract is
// changed (e.g. credited by a withdrawal or as fee recipient) without its
// code having been read in that block. go-ethereum's binary trie then
// records code size 0 in BasicData while keeping the code hash and the
// chunks, and so does ubt, as it must for the roots to agree. ubt.Reader.Code
// then recovers the code from the chunks by its hash (see Reader above):
// reads agree with go-ethereum, which reads code by hash from its code
// database, at the cost of hashing every prefix of the chunks once per
// such read.
//
// Since go-ethereum's state.Reader has no Close, the snapshots of the
// readers are closed by cleanups once unreachable; a ubt.DB closed while
// StateDBs or readers of it are still reachable keeps its directory locked
// in this process (ubt.ErrLocked on reopen) until then. Database.Close
// releases them at once (reads through them then fail with
// ubt.ErrBadHandle): call it before ubt.DB.Close when the process reopens
// the directory.
//
// The trie prefetcher (StateDB.StartPrefetcher) is neither needed nor
// tested: its reads go through this package's no-op prefetch methods.
package gethstate

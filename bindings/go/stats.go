package ubt

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// Stats are the figures of an open database (DB.Stats).
type Stats struct {
	// Root of the persisted state the figures describe.
	Root Root
	// Checkpoint generation.
	Generation uint64
	// Sequence number of the last commit.
	CommitSeq uint64
	// Stems stored.
	StemCount uint64
	// Values stored.
	LeafCount uint64
	// Buckets in use.
	BucketCount uint64
	// Internal nodes of the resident upper trie.
	UpperNodeCount uint64
	// Upper-trie pages.
	PageCount uint64
	// Deepest bucket subtree.
	BucketDepthMax uint64
	// Mean bucket subtree depth.
	BucketDepthMean float64
	// Size of the data file in bytes.
	DataFileBytes uint64
	// Bytes of the data file in use.
	DataUsedBytes uint64
	// Bytes in the WAL now.
	WALBytes uint64
	// Buckets changed since the last checkpoint.
	DirtyBuckets uint64
	// Bytes of those changes held in memory.
	DirtyBytes uint64
	// Bytes the read cache holds.
	CacheBytes uint64
	// Resident upper-trie bytes.
	UpperTrieBytes uint64
	// The configured memory budget in bytes.
	MemoryBudgetBytes uint64
	// Buckets read from disk since open.
	BucketReads uint64
	// Bytes of those reads.
	BucketReadBytes uint64
	// Reads answered by the cache since open.
	CacheHits uint64
	// Data-file bytes written since open.
	DataBytesWritten uint64
	// WAL bytes written since open.
	WALBytesWritten uint64
	// Commits since open.
	Commits uint64
	// Checkpoints since open.
	Checkpoints uint64
	// Records of the flat index (0 without one).
	FlatRecords uint64
	// Group depth of the upper-trie pages.
	GroupDepth uint8
	// Whether the database keeps a flat index.
	FlatIndex bool
	// Whether the engine refuses writes after a failed one.
	Poisoned bool
	// Whether one of the two meta slots failed its checks at open.
	MetaSlotDamaged bool
	// Whether the revert window's record failed its checks at open.
	RevertWindowDamaged bool
	// Whether data-file reads bypass the page cache (Options.DirectReads,
	// where the file system allows it).
	DirectReads bool
	// How batched reads are issued ("io_uring", "pread-pool", "sequential").
	ReadBackend string
}

// Stats returns the database's figures.
func (db *DB) Stats() (Stats, error) {
	var c C.UbtStats
	if err := statusErr("Stats", C.ubtgo_db_stats(db.handle, &c)); err != nil {
		return Stats{}, err
	}
	return Stats{
		Root:                *(*Root)(unsafe.Pointer(&c.root)),
		Generation:          uint64(c.generation),
		CommitSeq:           uint64(c.commit_seq),
		StemCount:           uint64(c.stem_count),
		LeafCount:           uint64(c.leaf_count),
		BucketCount:         uint64(c.bucket_count),
		UpperNodeCount:      uint64(c.upper_node_count),
		PageCount:           uint64(c.page_count),
		BucketDepthMax:      uint64(c.bucket_depth_max),
		BucketDepthMean:     float64(c.bucket_depth_mean),
		DataFileBytes:       uint64(c.data_file_bytes),
		DataUsedBytes:       uint64(c.data_used_bytes),
		WALBytes:            uint64(c.wal_bytes),
		DirtyBuckets:        uint64(c.dirty_buckets),
		DirtyBytes:          uint64(c.dirty_bytes),
		CacheBytes:          uint64(c.cache_bytes),
		UpperTrieBytes:      uint64(c.upper_trie_bytes),
		MemoryBudgetBytes:   uint64(c.memory_budget_bytes),
		BucketReads:         uint64(c.bucket_reads),
		BucketReadBytes:     uint64(c.bucket_read_bytes),
		CacheHits:           uint64(c.cache_hits),
		DataBytesWritten:    uint64(c.data_bytes_written),
		WALBytesWritten:     uint64(c.wal_bytes_written),
		Commits:             uint64(c.commits),
		Checkpoints:         uint64(c.checkpoints),
		FlatRecords:         uint64(c.flat_records),
		GroupDepth:          uint8(c.group_depth),
		FlatIndex:           c.flat_index != 0,
		Poisoned:            c.poisoned != 0,
		MetaSlotDamaged:     c.meta_slot_damaged != 0,
		RevertWindowDamaged: c.revert_window_damaged != 0,
		DirectReads:         c.direct_reads != 0,
		ReadBackend:         C.GoString(&c.read_backend[0]),
	}, nil
}

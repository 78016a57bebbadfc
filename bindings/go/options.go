package ubt

/*
#include "shim.h"
*/
import "C"

// SyncMode says when a commit's WAL record is synced.
type SyncMode uint8

const (
	// SyncAlways syncs every commit's WAL record before the commit
	// returns: an acknowledged commit survives power loss. The default.
	SyncAlways SyncMode = C.UBT_SYNC_ALWAYS
	// SyncNever writes WAL records without syncing: a process crash loses
	// nothing, a power loss may lose the latest commits (the database
	// reopens at an earlier consistent commit). Checkpoints still sync.
	SyncNever SyncMode = C.UBT_SYNC_NEVER
)

// ReadBackend says how batched reads are issued.
type ReadBackend uint8

const (
	// ReadBackendAuto uses io_uring when the kernel allows it, else a
	// thread pool of preads. The default.
	ReadBackendAuto ReadBackend = C.UBT_READ_BACKEND_AUTO
	// ReadBackendThreadPool always uses the thread pool of preads.
	ReadBackendThreadPool ReadBackend = C.UBT_READ_BACKEND_THREAD_POOL
)

// Options say how to open a database. The zero value (and a nil
// *Options) means the engine's defaults: every zero field keeps its
// default.
type Options struct {
	// MemoryBudget is the memory for caches and unflushed changes, in
	// bytes (0: the default, 1 GiB). The upper trie (about 2.5 bytes per
	// stored value) is resident on top of it.
	MemoryBudget uint64
	// WALBytesMax is the WAL size that triggers a checkpoint, in bytes
	// (0: the default, 256 MiB; at most 1 GiB).
	WALBytesMax uint64
	// RevertDepth is how many of the latest persisted blocks can be
	// reverted (0: the default, 128).
	RevertDepth uint64
	// GroupDepth (1 to 8) of the upper-trie pages, fixed when the database
	// is created; 0 accepts the stored one (6 when creating). A non-zero
	// value must equal the stored one (ErrInvalidOptions otherwise).
	GroupDepth uint8
	// NoCreate makes Open fail with ErrNotFound when the directory holds
	// no database, instead of creating one. Ignored by OpenReadOnly.
	NoCreate bool
	// FlatIndex, when creating, keeps a flat index of account values;
	// every write must then name its account (ApplyAccounts; Apply fails
	// with ErrOwnersRequired). Ignored when the database exists.
	FlatIndex bool
	// Sync is when commits are synced (default SyncAlways).
	Sync SyncMode
	// ReadBackend is how batched reads are issued (default
	// ReadBackendAuto).
	ReadBackend ReadBackend
	// DirectReads reads the data file around the page cache (O_DIRECT)
	// where the file system allows it: a bucket missing from the engine's
	// cache costs one device read and is not cached twice. Give the
	// engine the memory (MemoryBudget) the page cache would have used.
	DirectReads bool
	// BucketBytes is the bucket capacity in bytes, fixed when the
	// database is created: a power of two from 4096 to 65536 (0: the
	// stored one, 4096 when creating). Larger buckets shrink the resident
	// upper trie in proportion and cost more bytes read and rewritten per
	// changed bucket.
	BucketBytes uint64
}

// toC fills the C options: the engine's defaults, overridden by the
// non-zero fields of o.
func (o *Options) toC() (C.UbtOptions, error) {
	var c C.UbtOptions
	if err := statusErr("Open", C.ubtgo_options_default(&c)); err != nil {
		return c, err
	}
	if o == nil {
		return c, nil
	}
	if o.MemoryBudget != 0 {
		c.memory_budget_bytes = C.uint64_t(o.MemoryBudget)
	}
	if o.WALBytesMax != 0 {
		c.wal_bytes_max = C.uint64_t(o.WALBytesMax)
	}
	if o.RevertDepth != 0 {
		c.revert_depth = C.uint64_t(o.RevertDepth)
	}
	if o.GroupDepth != 0 {
		c.group_depth = C.uint8_t(o.GroupDepth)
	}
	if o.NoCreate {
		c.create_if_missing = 0
	}
	if o.FlatIndex {
		c.flat_index = 1
	}
	if o.Sync != SyncAlways {
		c.sync_mode = C.uint8_t(o.Sync)
	}
	if o.ReadBackend != ReadBackendAuto {
		c.read_backend = C.uint8_t(o.ReadBackend)
	}
	if o.DirectReads {
		c.direct_reads = 1
	}
	if o.BucketBytes != 0 {
		c.bucket_bytes = C.uint64_t(o.BucketBytes)
	}
	return c, nil
}

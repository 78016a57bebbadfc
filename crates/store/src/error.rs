//! The store's typed errors. Callers can tell bad bytes on disk
//! ([`StoreError::Corrupted`]) from the operating system failing
//! ([`StoreError::Io`]) from their own mistakes (the other variants).

use std::io;

/// Which on-disk structure an error concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// The double-buffered meta record.
    Meta,
    /// A bucket of stem records.
    Bucket,
    /// An upper-trie page.
    TriePage,
    /// A write-ahead-log record.
    Wal,
    /// The trie as a whole (hashes that do not add up).
    Trie,
    /// The reverse diffs kept for reverts.
    Revert,
    /// A leaf of the flat index.
    FlatLeaf,
    /// A directory node of the flat index.
    FlatNode,
}

impl std::fmt::Display for Structure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Structure::Meta => "meta record",
            Structure::Bucket => "bucket",
            Structure::TriePage => "trie page",
            Structure::Wal => "WAL record",
            Structure::Trie => "trie",
            Structure::Revert => "revert segment",
            Structure::FlatLeaf => "flat leaf",
            Structure::FlatNode => "flat directory node",
        })
    }
}

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The operating system reported an error.
    #[error("I/O error while {during}: {source}")]
    Io {
        /// What the store was doing.
        during: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Bytes on disk fail a check: a checksum, a structural rule, or a hash.
    #[error("corrupted {structure} at {location}: {detail}")]
    Corrupted {
        /// Which structure.
        structure: Structure,
        /// Where (file and offset, or a trie position).
        location: String,
        /// Which check failed.
        detail: String,
    },
    /// A previous write, sync or commit failed; the handle refuses writes
    /// until the database is reopened.
    #[error("a previous write failed ({0}); reopen the database to continue")]
    Poisoned(String),
    /// The directory holds no database and creation was not requested.
    #[error("no database at {0}")]
    NotFound(String),
    /// The directory is not empty and does not hold a ubt database.
    #[error("{0} is not a ubt database (unexpected files or wrong magic)")]
    NotADatabase(String),
    /// Another handle holds the writer lock.
    #[error("database at {0} is locked by another process or handle")]
    Locked(String),
    /// The options do not match the database or are out of range.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// The database was created with another group depth.
    #[error("database has group depth {stored}, but group depth {requested} was requested")]
    GroupDepthMismatch {
        /// Group depth in the meta record.
        stored: u8,
        /// Group depth in the options.
        requested: u8,
    },
    /// The database was created with another bucket capacity.
    #[error(
        "database has a bucket capacity of {stored} bytes, but {requested} bytes were requested"
    )]
    BucketBytesMismatch {
        /// Bucket capacity in the meta record.
        stored: usize,
        /// Bucket capacity in the options.
        requested: usize,
    },
    /// The database uses an on-disk format this build does not read.
    #[error(
        "unsupported format version {found} (this build reads version {supported}); \
         rebuild the database from its source with `ubt load` or `ubt import`"
    )]
    UnsupportedVersion {
        /// Version on disk.
        found: u16,
        /// Version this build reads and writes.
        supported: u16,
    },
    /// No layer (in memory, or on disk for a revert) has this root.
    #[error("no block with root 0x{} is within reach", alloy_primitives::hex::encode(.0))]
    UnknownRoot([u8; 32]),
    /// A revert asked for a root older than the reverse diffs kept.
    #[error("cannot revert to 0x{}: only the last {depth} blocks can be reverted", alloy_primitives::hex::encode(.root))]
    RevertTooDeep {
        /// The requested root.
        root: [u8; 32],
        /// How many blocks can be reverted.
        depth: usize,
    },
    /// A snapshot reader's root was reverted away.
    #[error("the snapshot at 0x{} was reverted", alloy_primitives::hex::encode(.0))]
    SnapshotReverted([u8; 32]),
    /// A bulk-build input is not sorted by key.
    #[error("bulk-build input is not sorted: entry {index} has a smaller key than the one before")]
    UnsortedInput {
        /// Zero-based index of the offending entry.
        index: u64,
    },
    /// A bulk build was asked to write into a directory that holds a database.
    #[error("{0} already holds a database")]
    AlreadyExists(String),
    /// A block has more writes than one WAL record can hold.
    #[error(
        "a block of {writes} writes is larger than the most one block may hold ({max}); \
         apply it with a bulk apply, which commits through a checkpoint"
    )]
    BlockTooLarge {
        /// Writes in the block (or keys a revert must restore).
        writes: u64,
        /// The most a block may hold.
        max: u64,
    },
    /// A WAL record would exceed the most replay accepts (the writer never
    /// asks for one; this guards the encoder).
    #[error("a WAL record of {bytes} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Bytes the record would take.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// The database path, or a file in it, is not what a database can be
    /// (a symbolic link, not a regular file, a dangling link, empty).
    #[error("{0}")]
    InvalidPath(String),
    /// The database was opened read-only.
    #[error("the database at {0} is open read-only")]
    ReadOnly(String),
    /// A write without its account on a database that keeps a flat index
    /// of account values: the index files every value under its account,
    /// so writes must name theirs (account-level writes).
    #[error(
        "the database keeps a flat index of account values: writes must name their accounts \
         (apply account-level writes)"
    )]
    OwnersRequired,
}

/// Result alias for the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// An I/O error while doing `during`.
    pub fn io(during: &'static str) -> impl FnOnce(io::Error) -> StoreError {
        move |source| StoreError::Io { during, source }
    }

    /// A corruption report.
    pub fn corrupted(
        structure: Structure,
        location: impl Into<String>,
        detail: impl Into<String>,
    ) -> StoreError {
        StoreError::Corrupted {
            structure,
            location: location.into(),
            detail: detail.into(),
        }
    }

    /// Whether this error reports corrupted bytes.
    pub fn is_corruption(&self) -> bool {
        matches!(self, StoreError::Corrupted { .. })
    }
}

//! Every byte the store reads or writes goes through the two narrow traits
//! of this module, so that tests can swap the operating system's files for
//! a simulated disk that loses unsynced writes, tears them or fails on
//! command (`sim`, with the crate's `testing` feature).
//!
//! * [`StoreFile`]: positioned reads and writes, `sync_data`, `set_len`,
//!   and batched reads that an implementation may issue concurrently.
//! * [`StoreDir`]: the directory holding a database's files: opening them
//!   (read and write, or read-only), listing, directory syncs, and the
//!   directory's locks.
//!
//! [`os`] implements them on real files, with batched reads through
//! io_uring where the kernel allows it and a pool of `pread` threads
//! otherwise ([`ReadBackendKind`], chosen when the directory is opened).
//! This module (with its children) is the only place allowed `unsafe`.
//!
//! # Locks
//!
//! A directory has a readers-writer lock, taken without waiting:
//! [`StoreDir::lock_exclusive`] for the one writer (refused while any other
//! handle holds either lock), [`StoreDir::lock_shared`] for read-only opens
//! (any number of them, refused while a writer holds the directory). A
//! lock lasts as long as its guard ([`DirLock`]). On real files it is a
//! `flock` on the directory itself, not on a lock file that could be
//! deleted or replaced under its holder, and it needs no write access
//! ([`os`] explains why).
//!
//! # Database files are regular files
//!
//! [`StoreDir::open_file`] and [`StoreDir::open_file_read_only`] open only
//! regular files: on real files a symbolic link is never followed
//! (`O_NOFOLLOW`) and a directory, FIFO, socket or device is refused (an
//! open never blocks on a FIFO), with `InvalidInput` errors naming the
//! path. Read-only files refuse every write, `set_len` and sync, so a
//! read-only open cannot change a byte and works on read-only media.

pub(crate) mod coalesce;
mod direct;
pub mod os;
mod pread_pool;
pub(crate) mod scratch;
#[cfg(feature = "testing")]
pub mod sim;
#[cfg(target_os = "linux")]
mod uring;

use std::fmt::Debug;
use std::io;
use std::sync::Arc;

/// One read of a batch: `len` bytes at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to read; the whole range must lie inside the file.
    pub len: usize,
}

/// How batched reads are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadBackendKind {
    /// Linux io_uring: every read of a batch in flight at once.
    IoUring,
    /// A pool of threads issuing blocking `pread` calls concurrently.
    ThreadPool,
    /// One read after another on the calling thread (simulated files).
    Sequential,
}

impl ReadBackendKind {
    /// A short name for statistics and reports.
    pub fn name(self) -> &'static str {
        match self {
            ReadBackendKind::IoUring => "io_uring",
            ReadBackendKind::ThreadPool => "pread-pool",
            ReadBackendKind::Sequential => "sequential",
        }
    }
}

/// Which batched-read backend a directory should use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadBackendChoice {
    /// io_uring if the kernel allows it (probed at open), else the pool.
    #[default]
    Auto,
    /// Always the `pread` thread pool.
    ThreadPool,
}

/// A file of the store. Reads of ranges past the end of the file are
/// errors (`UnexpectedEof`), never short reads.
pub trait StoreFile: Send + Sync + Debug {
    /// Fills `buf` from `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// `len` bytes at `offset`, in a buffer of the file's own (a direct
    /// read hands over the buffer it read into, without a second copy).
    fn read_owned(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, offset).map(|()| buf)
    }

    /// `len` bytes at `offset` in a shared buffer of their own: the one
    /// allocation a cached read keeps (implementations read through a
    /// per-thread buffer and copy once).
    fn read_shared(&self, offset: u64, len: usize) -> io::Result<Arc<[u8]>> {
        self.read_owned(offset, len).map(Arc::from)
    }

    /// Writes all of `buf` at `offset`, growing the file if needed.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;

    /// Makes every completed write durable (data and the file length).
    fn sync_data(&self) -> io::Result<()>;

    /// Truncates or extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// The file length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Reads every request, calling `done(index, result)` on the calling
    /// thread as each completes (in completion order, not request order).
    /// Implementations keep as many reads in flight as they can.
    fn read_batch_each(
        &self,
        requests: &[ReadRequest],
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) {
        for (index, request) in requests.iter().enumerate() {
            let mut buf = vec![0u8; request.len];
            let result = self.read_exact_at(&mut buf, request.offset).map(|()| buf);
            done(index, result);
        }
    }

    /// Reads every request; results in request order.
    fn read_batch(&self, requests: &[ReadRequest]) -> Vec<io::Result<Vec<u8>>> {
        let mut results: Vec<Option<io::Result<Vec<u8>>>> =
            (0..requests.len()).map(|_| None).collect();
        self.read_batch_each(requests, &mut |index, result| {
            results[index] = Some(result);
        });
        results
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| Err(io::Error::other("batched read never completed")))
            })
            .collect()
    }

    /// Tells the operating system that reads will be random (no
    /// readahead). A hint: failures are ignored.
    fn advise_random(&self) {}

    /// Makes this file's reads bypass the operating system's page cache
    /// from now on (`O_DIRECT` on Linux), where the file system allows
    /// it; says whether they now do. Writes are unchanged, and a read
    /// still sees every completed write. Files that cannot (simulated
    /// files, other systems) keep their reads and say `false`.
    fn enable_direct_reads(&self) -> io::Result<bool> {
        Ok(false)
    }

    /// Whether reads bypass the page cache ([`Self::enable_direct_reads`]).
    fn reads_direct(&self) -> bool {
        false
    }

    /// How this file issues batched reads.
    fn read_backend(&self) -> ReadBackendKind {
        ReadBackendKind::Sequential
    }
}

/// The directory holding one database's files.
pub trait StoreDir: Send + Sync + Debug {
    /// Opens `name` for reading and writing, creating it (empty) if
    /// `create` is set and it is missing. Refuses anything but a regular
    /// file (a symbolic link is not followed) with `InvalidInput`.
    fn open_file(&self, name: &str, create: bool) -> io::Result<Arc<dyn StoreFile>>;

    /// Opens `name` for reading only (never creates, never writes): for
    /// read-only opens of a database, which must work on read-only media.
    fn open_file_read_only(&self, name: &str) -> io::Result<Arc<dyn StoreFile>>;

    /// Whether the directory has an entry `name`.
    fn exists(&self, name: &str) -> io::Result<bool>;

    /// The names of the entries in the directory.
    fn list(&self) -> io::Result<Vec<String>>;

    /// Makes file creations in the directory durable.
    fn sync_dir(&self) -> io::Result<()>;

    /// Takes the exclusive writer lock for this directory; fails with
    /// `WouldBlock` if another handle holds the exclusive or a shared lock
    /// (two locks of one process conflict like those of two processes).
    /// The lock is released when the returned guard is dropped.
    fn lock_exclusive(&self) -> io::Result<Box<dyn DirLock>>;

    /// Takes a shared lock on the directory: any number of shared holders,
    /// none while an exclusive holder exists. Fails with `WouldBlock` if a
    /// writer holds the exclusive lock. Released when the guard drops.
    fn lock_shared(&self) -> io::Result<Box<dyn DirLock>>;

    /// A human-readable location for error messages.
    fn describe(&self) -> String;
}

/// Holds a directory's lock (the writer's exclusive lock or a read-only
/// open's shared lock) while alive.
pub trait DirLock: Send + Sync + Debug {}

//! Every byte the store reads or writes goes through the two narrow traits
//! of this module, so that tests can swap the operating system's files for
//! a simulated disk that loses unsynced writes, tears them or fails on
//! command ([`sim`]).
//!
//! * [`StoreFile`]: positioned reads and writes, `sync_data`, `set_len`,
//!   and batched reads that an implementation may issue concurrently.
//! * [`StoreDir`]: the directory holding a database's files.
//!
//! [`os`] implements them on real files, with batched reads through
//! io_uring where the kernel allows it and a pool of `pread` threads
//! otherwise ([`ReadBackendKind`], chosen when the directory is opened).
//! This module (with its children) is the only place allowed `unsafe`.

pub mod os;
mod pread_pool;
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

    /// How this file issues batched reads.
    fn read_backend(&self) -> ReadBackendKind {
        ReadBackendKind::Sequential
    }
}

/// The directory holding one database's files.
pub trait StoreDir: Send + Sync + Debug {
    /// Opens `name`, creating it (empty) if `create` is set and it is missing.
    fn open_file(&self, name: &str, create: bool) -> io::Result<Arc<dyn StoreFile>>;

    /// Whether `name` exists.
    fn exists(&self, name: &str) -> io::Result<bool>;

    /// The names of the entries in the directory.
    fn list(&self) -> io::Result<Vec<String>>;

    /// Makes file creations in the directory durable.
    fn sync_dir(&self) -> io::Result<()>;

    /// Takes the exclusive writer lock for this directory; fails with
    /// `WouldBlock` if another handle holds it. The lock is released when
    /// the returned guard is dropped.
    fn lock_exclusive(&self) -> io::Result<Box<dyn DirLock>>;

    /// A human-readable location for error messages.
    fn describe(&self) -> String;
}

/// Holds a directory's writer lock while alive.
pub trait DirLock: Send + Sync + Debug {}

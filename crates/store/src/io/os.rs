//! Real files: [`OsDir`] and [`OsFile`] implement [`StoreDir`] and
//! [`StoreFile`] on the operating system's files.
//!
//! Positioned reads and writes use `pread`/`pwrite`
//! ([`std::os::unix::fs::FileExt`]), `sync_data` is `fdatasync`. Batched
//! reads go through io_uring when the kernel allows it (probed once when
//! the directory is opened, Linux only) and through a process-wide pool of
//! `pread` threads otherwise; every file of a directory uses the backend
//! chosen for it.

use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    pread_pool, DirLock, ReadBackendChoice, ReadBackendKind, ReadRequest, StoreDir, StoreFile,
};

/// Name of the lock file [`OsDir::lock_exclusive`] locks.
pub const LOCK_FILE: &str = "LOCK";

/// How a directory's files issue batched reads.
enum ReadEngine {
    /// io_uring, with the directory's pool of rings.
    #[cfg(target_os = "linux")]
    IoUring(super::uring::RingPool),
    /// The process-wide `pread` thread pool.
    ThreadPool,
}

impl ReadEngine {
    fn choose(choice: ReadBackendChoice) -> ReadEngine {
        match choice {
            ReadBackendChoice::ThreadPool => ReadEngine::ThreadPool,
            ReadBackendChoice::Auto => {
                #[cfg(target_os = "linux")]
                if let Ok(rings) = super::uring::RingPool::probe() {
                    return ReadEngine::IoUring(rings);
                }
                ReadEngine::ThreadPool
            }
        }
    }

    fn kind(&self) -> ReadBackendKind {
        match self {
            #[cfg(target_os = "linux")]
            ReadEngine::IoUring(_) => ReadBackendKind::IoUring,
            ReadEngine::ThreadPool => ReadBackendKind::ThreadPool,
        }
    }
}

/// A directory of real files holding one database.
pub struct OsDir {
    path: PathBuf,
    engine: Arc<ReadEngine>,
}

impl fmt::Debug for OsDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OsDir")
            .field("path", &self.path)
            .field("read_backend", &self.engine.kind().name())
            .finish()
    }
}

/// Adds the path to an error's message, keeping its kind.
fn with_path(error: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}

impl OsDir {
    /// Opens the directory at `path`, creating it (and its parents) if
    /// `create` is set, and chooses how its files issue batched reads:
    /// with [`ReadBackendChoice::Auto`], io_uring if a probe ring can be
    /// created and completes a no-op, else the `pread` thread pool.
    ///
    /// Fails with `NotFound` if the directory is missing and `create` is
    /// not set, and with `NotADirectory` if `path` is something else.
    pub fn open(path: &Path, create: bool, backend: ReadBackendChoice) -> io::Result<OsDir> {
        if create {
            fs::create_dir_all(path).map_err(|e| with_path(e, "create directory", path))?;
        }
        let metadata = fs::metadata(path).map_err(|e| with_path(e, "open directory", path))?;
        if !metadata.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("open directory {}: not a directory", path.display()),
            ));
        }
        Ok(OsDir {
            path: path.to_path_buf(),
            engine: Arc::new(ReadEngine::choose(backend)),
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the directory's files issue batched reads.
    pub fn read_backend(&self) -> ReadBackendKind {
        self.engine.kind()
    }

    /// Opens `name` in the directory as an [`OsFile`] (read and write),
    /// creating it empty if `create` is set and it is missing.
    pub fn open_os_file(&self, name: &str, create: bool) -> io::Result<OsFile> {
        let path = self.file_path(name)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .open(&path)
            .map_err(|e| with_path(e, "open file", &path))?;
        Ok(OsFile {
            file: Arc::new(file),
            path,
            engine: Arc::clone(&self.engine),
        })
    }

    /// The path of `name`, which must be a plain file name.
    fn file_path(&self, name: &str) -> io::Result<PathBuf> {
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid file name {name:?} in {}", self.path.display()),
            ));
        }
        Ok(self.path.join(name))
    }
}

impl StoreDir for OsDir {
    fn open_file(&self, name: &str, create: bool) -> io::Result<Arc<dyn StoreFile>> {
        Ok(Arc::new(self.open_os_file(name, create)?))
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        self.file_path(name)?.try_exists()
    }

    fn list(&self) -> io::Result<Vec<String>> {
        fs::read_dir(&self.path)
            .and_then(|entries| {
                entries
                    .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .map_err(|e| with_path(e, "list directory", &self.path))
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.path)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| with_path(e, "sync directory", &self.path))
    }

    fn lock_exclusive(&self) -> io::Result<Box<dyn DirLock>> {
        let path = self.path.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| with_path(e, "open lock file", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(OsDirLock { _file: file, path })),
            Err(TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another writer", path.display()),
            )),
            Err(TryLockError::Error(e)) => Err(with_path(e, "lock", &path)),
        }
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// The writer lock of an [`OsDir`]: an exclusive `flock` on its `LOCK`
/// file, released when the guard (and with it the file) is dropped.
#[derive(Debug)]
pub struct OsDirLock {
    _file: File,
    path: PathBuf,
}

impl OsDirLock {
    /// The locked file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl DirLock for OsDirLock {}

/// A real file of an [`OsDir`].
pub struct OsFile {
    file: Arc<File>,
    path: PathBuf,
    engine: Arc<ReadEngine>,
}

impl fmt::Debug for OsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OsFile")
            .field("path", &self.path)
            .field("read_backend", &self.engine.kind().name())
            .finish()
    }
}

impl OsFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl StoreFile for OsFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    #[allow(unsafe_code)]
    fn advise_random(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: posix_fadvise only reads its integer arguments; the
        // descriptor is owned by `self.file` and open for the whole call.
        let _ =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read_batch_each(
        &self,
        requests: &[ReadRequest],
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) {
        if let [request] = requests {
            // One read gains nothing from another thread or a ring.
            done(
                0,
                pread_pool::read_exact(&self.file, request.offset, request.len),
            );
            return;
        }
        if requests.is_empty() {
            return;
        }
        match &*self.engine {
            #[cfg(target_os = "linux")]
            ReadEngine::IoUring(rings) => rings.read_batch(&self.file, requests, done),
            ReadEngine::ThreadPool => {
                pread_pool::read_batch(&self.file, requests.iter().copied().enumerate(), done)
            }
        }
    }

    fn read_backend(&self) -> ReadBackendKind {
        self.engine.kind()
    }
}

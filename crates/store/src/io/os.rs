//! Real files: [`OsDir`] and [`OsFile`] implement [`StoreDir`] and
//! [`StoreFile`] on the operating system's files.
//!
//! Positioned reads and writes use `pread`/`pwrite`
//! ([`std::os::unix::fs::FileExt`]), `sync_data` is `fdatasync`. Batched
//! reads go through io_uring when the kernel allows it (probed once when
//! the directory is opened, Linux only) and through a process-wide pool of
//! `pread` threads otherwise; every file of a directory uses the backend
//! chosen for it.
//!
//! # Locking
//!
//! The locks of [`StoreDir`] are `flock`s on the database **directory
//! itself** (opened `O_RDONLY | O_DIRECTORY`, a new open file description
//! per guard, so two guards of one process conflict like two processes):
//! [`OsDir::lock_exclusive`] takes `LOCK_EX | LOCK_NB` (the one writer),
//! [`OsDir::lock_shared`] takes `LOCK_SH | LOCK_NB` (read-only opens, any
//! number of them, none while a writer holds the directory). The guard
//! ([`OsDirLock`]) owns the descriptor; dropping it unlocks and closes the
//! descriptor, and the death of the process releases the lock too.
//! Descriptors are opened close-on-exec, so a child process never keeps a
//! lock past its `exec`.
//!
//! Why not a lock file: a `flock` belongs to an inode, and a file can be
//! deleted or replaced under its holder, after which the next writer locks
//! the new file and two writers run at once. The directory cannot be
//! swapped that way while it holds the database's files (and a directory
//! found with another device and inode than when the [`OsDir`] was opened
//! is refused), and locking it needs no write access, so read-only opens
//! work on read-only media. No `LOCK` file is created any more; databases
//! made by older versions may still hold one ([`LOCK_FILE`]), which is
//! ignored. The locks are advisory: they keep ubt handles apart, not other
//! programs; and they need a file system with working `flock` on
//! directories (local file systems do; NFS, which emulates `flock` with
//! byte-range locks needing write access, is not supported).
//!
//! # Which files are opened
//!
//! Database files must be **regular files** in the directory. They are
//! opened with `O_NOFOLLOW` (a symbolic link is refused, never followed:
//! otherwise a truncation of the WAL would truncate whatever the link
//! points to) and `O_NONBLOCK` (so that opening a FIFO cannot block; the
//! flag is cleared once the file is known to be regular), after a check
//! of the entry with `lstat`, and the open descriptor is checked again
//! with `fstat`. A symbolic link, a directory, a FIFO, a socket or a device
//! is refused with [`io::ErrorKind::InvalidInput`] and a message naming
//! the path ("... is a symbolic link; database files must be regular
//! files", "... is not a regular file (a FIFO); ..."), which callers can
//! tell apart from I/O failures. The database directory itself may be
//! reached through a symbolic link (the user chose the path), but not
//! through a dangling one.
//!
//! Files opened with [`StoreDir::open_file_read_only`] are opened
//! `O_RDONLY`; their `write_all_at`, `set_len` and `sync_data` fail with
//! [`io::ErrorKind::PermissionDenied`] without any system call.

use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::pread_pool::{self, Reader};
use super::{
    direct, DirLock, ReadBackendChoice, ReadBackendKind, ReadRequest, StoreDir, StoreFile,
};

/// Name of the lock file that versions before the directory lock created
/// (and locked) in the database directory. Nothing creates or locks it any
/// more; it is still one of the database's own names, so that a directory
/// holding it is not taken for someone else's.
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
    /// Device and inode of the directory when it was opened: the locks
    /// refuse a directory that has been replaced since.
    identity: (u64, u64),
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

/// The error for a database file that is a symbolic link.
fn symlink_error(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link; database files must be regular files",
            path.display()
        ),
    )
}

/// Refuses anything but a regular file (`metadata` from `lstat` or
/// `fstat`) with an `InvalidInput` error naming `path` and what it is.
fn check_regular(metadata: &Metadata, path: &Path) -> io::Result<()> {
    let file_type = metadata.file_type();
    if file_type.is_file() {
        return Ok(());
    }
    if file_type.is_symlink() {
        return Err(symlink_error(path));
    }
    let what = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "an unknown kind of file"
    };
    Err(not_regular_error(path, what))
}

/// The error for a database file that is `what` (a directory, a FIFO, ...)
/// rather than a regular file.
fn not_regular_error(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is not a regular file ({what}); database files must be regular files",
            path.display()
        ),
    )
}

/// Opens the directory at `path` itself (`O_RDONLY | O_DIRECTORY`,
/// close-on-exec like every descriptor std opens).
fn open_directory(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
}

/// Clears `O_NONBLOCK` (set to open without blocking on a FIFO) on a
/// descriptor now known to be a regular file, so that io_uring never
/// answers `EAGAIN` instead of waiting for the disk.
#[allow(unsafe_code)]
fn clear_nonblock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl with F_GETFL/F_SETFL reads and sets the status flags
    // of a descriptor owned by `file`, open for the whole call; no memory
    // is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK != 0 {
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// How [`OsDir`] opens a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// `O_RDONLY`; never creates.
    ReadOnly,
    /// `O_RDWR`, with `O_CREAT` if `create`.
    ReadWrite { create: bool },
}

impl OsDir {
    /// Opens the directory at `path`, creating it (and its parents) if
    /// `create` is set, and chooses how its files issue batched reads:
    /// with [`ReadBackendChoice::Auto`], io_uring if a probe ring can be
    /// created and completes a no-op, else the `pread` thread pool.
    ///
    /// `path` may be a symbolic link to a directory. Fails with
    /// `InvalidInput` for an empty path; with `NotFound` if the directory
    /// is missing and `create` is not set; for a dangling symbolic link
    /// with an error saying so (`NotFound` without `create`,
    /// `InvalidInput` with it: the link's target is not created); and with
    /// `NotADirectory` if `path` is something else.
    pub fn open(path: &Path, create: bool, backend: ReadBackendChoice) -> io::Result<OsDir> {
        if path.as_os_str().is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty database path",
            ));
        }
        if let Ok(link) = fs::symlink_metadata(path) {
            if link.file_type().is_symlink() {
                if let Err(error) = fs::metadata(path) {
                    if error.kind() == io::ErrorKind::NotFound {
                        let target = fs::read_link(path)
                            .map(|t| format!(" (to {})", t.display()))
                            .unwrap_or_default();
                        return Err(if create {
                            io::Error::new(
                                io::ErrorKind::InvalidInput,
                                format!(
                                    "{} is a dangling symbolic link{target}; not creating a \
                                     database through it",
                                    path.display()
                                ),
                            )
                        } else {
                            io::Error::new(
                                io::ErrorKind::NotFound,
                                format!("{} is a dangling symbolic link{target}", path.display()),
                            )
                        });
                    }
                }
            }
        }
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
            identity: (metadata.dev(), metadata.ino()),
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
    /// creating it empty if `create` is set and it is missing. Refuses
    /// anything but a regular file (see the [module docs](self)).
    pub fn open_os_file(&self, name: &str, create: bool) -> io::Result<OsFile> {
        self.open_regular(name, Access::ReadWrite { create })
    }

    /// Opens `name` in the directory as a read-only [`OsFile`]; never
    /// creates it. Refuses anything but a regular file.
    pub fn open_os_file_read_only(&self, name: &str) -> io::Result<OsFile> {
        self.open_regular(name, Access::ReadOnly)
    }

    /// Opens the regular file `name`: `lstat` first (a symbolic link or a
    /// special file is refused before it is opened), then `open` with
    /// `O_NOFOLLOW | O_NONBLOCK` and `fstat` of the descriptor (the entry
    /// may have been swapped in between), then `O_NONBLOCK` cleared.
    fn open_regular(&self, name: &str, access: Access) -> io::Result<OsFile> {
        let path = self.file_path(name)?;
        let create = access == Access::ReadWrite { create: true };
        match fs::symlink_metadata(&path) {
            Ok(metadata) => check_regular(&metadata, &path)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound && create => {}
            Err(error) => return Err(with_path(error, "open file", &path)),
        }
        let read_only = access == Access::ReadOnly;
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(create)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|error| match error.raw_os_error() {
                // The entry was swapped after lstat: O_NOFOLLOW met a
                // symbolic link, or O_RDWR a directory.
                Some(libc::ELOOP) => symlink_error(&path),
                Some(libc::EISDIR) => not_regular_error(&path, "a directory"),
                _ => with_path(error, "open file", &path),
            })?;
        let metadata = file
            .metadata()
            .map_err(|e| with_path(e, "stat file", &path))?;
        check_regular(&metadata, &path)?;
        clear_nonblock(&file).map_err(|e| with_path(e, "open file", &path))?;
        Ok(OsFile {
            file: Arc::new(file),
            direct: OnceLock::new(),
            path,
            read_only,
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

    /// Takes the directory's `flock` (shared or exclusive, never waiting)
    /// on a new descriptor of the directory, which the guard keeps.
    fn lock(&self, shared: bool) -> io::Result<OsDirLock> {
        let path = &self.path;
        let dir = open_directory(path).map_err(|e| with_path(e, "open directory to lock", path))?;
        let metadata = dir
            .metadata()
            .map_err(|e| with_path(e, "stat directory to lock", path))?;
        if (metadata.dev(), metadata.ino()) != self.identity {
            return Err(io::Error::other(format!(
                "{} was replaced by another directory since it was opened",
                path.display()
            )));
        }
        let result = if shared {
            dir.try_lock_shared()
        } else {
            dir.try_lock()
        };
        match result {
            Ok(()) => Ok(OsDirLock {
                dir,
                path: path.clone(),
                shared,
            }),
            Err(TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                if shared {
                    format!("{} is locked by a writer", path.display())
                } else {
                    format!(
                        "{} is locked by another handle (a writer or a read-only open)",
                        path.display()
                    )
                },
            )),
            Err(TryLockError::Error(e)) => Err(with_path(e, "lock directory", path)),
        }
    }
}

impl StoreDir for OsDir {
    fn open_file(&self, name: &str, create: bool) -> io::Result<Arc<dyn StoreFile>> {
        Ok(Arc::new(self.open_os_file(name, create)?))
    }

    fn open_file_read_only(&self, name: &str) -> io::Result<Arc<dyn StoreFile>> {
        Ok(Arc::new(self.open_os_file_read_only(name)?))
    }

    /// Whether the directory has an entry `name` of any kind (a symbolic
    /// link counts, dangling or not, so that opening it reports why it is
    /// refused rather than creating through it).
    fn exists(&self, name: &str) -> io::Result<bool> {
        let path = self.file_path(name)?;
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(with_path(error, "stat", &path)),
        }
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
        open_directory(&self.path)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| with_path(e, "sync directory", &self.path))
    }

    fn lock_exclusive(&self) -> io::Result<Box<dyn DirLock>> {
        Ok(Box::new(self.lock(false)?))
    }

    fn lock_shared(&self) -> io::Result<Box<dyn DirLock>> {
        Ok(Box::new(self.lock(true)?))
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// A lock of an [`OsDir`]: a `flock` (exclusive for the writer, shared for
/// a read-only open) on a descriptor of the directory itself, released
/// when the guard is dropped.
///
/// The drop unlocks explicitly (`LOCK_UN`) before closing the descriptor:
/// a `flock` belongs to the open file description, which a child process
/// forked by another thread shares until it calls `exec` (close-on-exec
/// only closes it then), so closing alone could leave the lock held for a
/// moment after the guard is gone.
#[derive(Debug)]
pub struct OsDirLock {
    dir: File,
    path: PathBuf,
    shared: bool,
}

impl Drop for OsDirLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock anyway if this fails.
        let _ = self.dir.unlock();
    }
}

impl OsDirLock {
    /// The locked directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this is a shared (read-only) lock rather than the writer's.
    pub fn is_shared(&self) -> bool {
        self.shared
    }
}

impl DirLock for OsDirLock {}

/// A real file of an [`OsDir`].
pub struct OsFile {
    file: Arc<File>,
    /// A second descriptor, opened `O_DIRECT` for reading, once
    /// [`StoreFile::enable_direct_reads`] succeeded: every read goes
    /// through it from then on.
    direct: OnceLock<Arc<File>>,
    path: PathBuf,
    /// Opened `O_RDONLY`: writes, `set_len` and syncs are refused.
    read_only: bool,
    engine: Arc<ReadEngine>,
}

impl fmt::Debug for OsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OsFile")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .field("read_backend", &self.engine.kind().name())
            .field("direct_reads", &self.direct.get().is_some())
            .finish()
    }
}

impl OsFile {
    /// The descriptor reads go through, and whether it is direct.
    fn reader(&self) -> Reader {
        match self.direct.get() {
            Some(file) => Reader {
                file: Arc::clone(file),
                direct: true,
            },
            None => Reader {
                file: Arc::clone(&self.file),
                direct: false,
            },
        }
    }

    /// Opens the file again, `O_DIRECT` and read-only, checking that the
    /// path still names the same file; `None` if the file system refuses
    /// direct reads (`EINVAL`, at the open or at a first read).
    #[cfg(target_os = "linux")]
    fn open_direct(&self) -> io::Result<Option<File>> {
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.path);
        let file = match opened {
            Ok(file) => file,
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
            Err(error) => return Err(with_path(error, "open for direct reads", &self.path)),
        };
        let stat = |f: &File| f.metadata().map(|m| (m.dev(), m.ino(), m.len()));
        let (device, inode, len) =
            stat(&file).map_err(|e| with_path(e, "stat file", &self.path))?;
        let (expected_device, expected_inode, _) =
            stat(&self.file).map_err(|e| with_path(e, "stat file", &self.path))?;
        if (device, inode) != (expected_device, expected_inode) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} was replaced after it was opened; not reading it",
                    self.path.display()
                ),
            ));
        }
        clear_nonblock(&file).map_err(|e| with_path(e, "open file", &self.path))?;
        // Some file systems accept the flag and refuse the reads.
        if len > 0 {
            if let Err(error) = direct::read_exact(&file, 0, 1) {
                return match error.raw_os_error() {
                    Some(libc::EINVAL) => Ok(None),
                    _ => Err(with_path(error, "read directly", &self.path)),
                };
            }
        }
        Ok(Some(file))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Fails if the file was opened read-only (before any system call).
    fn check_writable(&self, what: &str) -> io::Result<()> {
        if self.read_only {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{what} {}: the file was opened read-only",
                    self.path.display()
                ),
            ));
        }
        Ok(())
    }
}

impl StoreFile for OsFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.direct.get() {
            Some(direct) => direct::read_into(direct, offset, buf),
            None => self.file.read_exact_at(buf, offset),
        }
    }

    fn read_owned(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.reader().read_exact(offset, len)
    }

    fn read_shared(&self, offset: u64, len: usize) -> io::Result<Arc<[u8]>> {
        match self.direct.get() {
            Some(direct) => direct::read_shared(direct, offset, len),
            None => super::scratch::with_buffer(len, |buf| {
                self.file.read_exact_at(buf, offset)?;
                Ok(Arc::from(&*buf))
            }),
        }
    }

    fn enable_direct_reads(&self) -> io::Result<bool> {
        if self.direct.get().is_some() {
            return Ok(true);
        }
        #[cfg(target_os = "linux")]
        if let Some(file) = self.open_direct()? {
            // Another thread may have won the race: either descriptor is
            // as good.
            let _ = self.direct.set(Arc::new(file));
            return Ok(true);
        }
        Ok(false)
    }

    fn reads_direct(&self) -> bool {
        self.direct.get().is_some()
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
        self.check_writable("write to")?;
        self.file.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.check_writable("sync")?;
        self.file.sync_data()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.check_writable("set the length of")?;
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
            done(0, self.read_owned(request.offset, request.len));
            return;
        }
        if requests.is_empty() {
            return;
        }
        match &*self.engine {
            #[cfg(target_os = "linux")]
            ReadEngine::IoUring(rings) => rings.read_batch(&self.reader(), requests, done),
            ReadEngine::ThreadPool => {
                pread_pool::read_batch(&self.reader(), requests.iter().copied().enumerate(), done)
            }
        }
    }

    fn read_backend(&self) -> ReadBackendKind {
        self.engine.kind()
    }
}

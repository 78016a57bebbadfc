//! The cold-cache protocol: drop a set of files from the operating
//! system's page cache before a cold-read measurement, then check with
//! `mincore(2)` that none of their bytes are still resident.
//!
//! Two ways to drop, chosen by [`drop_page_cache`]:
//!
//! * [`ColdMethod::DropCaches`]: as root with a writable
//!   `/proc/sys/vm/drop_caches`, `sync(2)` then write `3` to it. This drops
//!   the clean page cache, dentries and inodes of the **whole machine**,
//!   not just the files given: anything else running at the time (another
//!   benchmark, a build) loses its cache too.
//! * [`ColdMethod::FadviseDontneed`]: otherwise, for each file, `fsync`
//!   then `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file. Only
//!   those files are affected; the kernel does not drop pages that are
//!   dirty, under writeback or mapped by a process, so residency is
//!   checked afterwards ([`make_cold`]).
//!
//! The opposite, [`make_warm`], reads files into the page cache through
//! one fixed buffer (never the whole file into memory: a data file may be
//! larger than the process's memory).
//!
//! Residency ([`resident_bytes`]) is read with `mincore(2)` over a
//! read-only shared mapping of each file; the mapping is never touched, so
//! measuring does not fault pages in. Linux (since 5.2) reports page-cache
//! residency for a file mapping only to a process that owns the file or may
//! write it; for other files it reports only the pages mapped in the
//! calling process, i.e. zero here. Run the protocol as the owner of the
//! files (or as root).
//!
//! This module is allowed `unsafe` for the `libc` calls (`geteuid`,
//! `sync`, `posix_fadvise`, `mincore`) and the `mmap`.

#![allow(unsafe_code)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::BenchError;

/// The file that drops the kernel's caches when `3` is written to it.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// `mincore` is called over at most this many pages at a time, so the
/// residency vector stays small for large files.
const MINCORE_CHUNK_PAGES: usize = 1 << 16;

/// How the page cache was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColdMethod {
    /// `sync(2)` then `3` written to `/proc/sys/vm/drop_caches` (root only;
    /// affects the whole machine).
    DropCaches,
    /// `fsync` then `posix_fadvise(POSIX_FADV_DONTNEED)` on each file.
    FadviseDontneed,
}

impl ColdMethod {
    /// A short name for reports: `drop_caches` or `fadvise_dontneed`.
    pub fn name(self) -> &'static str {
        match self {
            ColdMethod::DropCaches => "drop_caches",
            ColdMethod::FadviseDontneed => "fadvise_dontneed",
        }
    }
}

/// What [`make_cold`] did and what it left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ColdReport {
    /// How the page cache was dropped on the first attempt.
    pub method: ColdMethod,
    /// Regular files covered, after expanding directories.
    pub files: u64,
    /// Bytes of those files resident in the page cache before dropping.
    pub resident_bytes_before: u64,
    /// Bytes still resident after dropping (and after the fadvise retry,
    /// if there was one). Zero means the files are cold.
    pub resident_bytes_after: u64,
    /// Whether the first attempt left bytes resident, so `fsync` +
    /// `POSIX_FADV_DONTNEED` was applied to every file once more.
    pub retried_fadvise: bool,
}

/// The regular files named by `paths`, sorted and without duplicates.
/// A directory stands for every regular file below it (recursively;
/// symbolic links inside directories are not followed). A path given
/// directly is followed if it is a symbolic link. Paths that are neither
/// regular files nor directories (sockets, devices, FIFOs) are skipped.
pub fn expand_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, BenchError> {
    let mut out = Vec::new();
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| BenchError::io_at("stat", path, e))?;
        if meta.is_dir() {
            walk_dir(path, &mut out)?;
        } else if meta.is_file() {
            out.push(path.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Appends the regular files below `dir` to `out`.
fn walk_dir(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), BenchError> {
    let entries = fs::read_dir(dir).map_err(|e| BenchError::io_at("list directory", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| BenchError::io_at("list directory", dir, e))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| BenchError::io_at("stat", &path, e))?;
        if kind.is_dir() {
            walk_dir(&path, out)?;
        } else if kind.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// Drops `files` (directories expanded as in [`expand_files`]) from the
/// page cache: `drop_caches` as root if the kernel lets us write it, else
/// `fsync` + `POSIX_FADV_DONTNEED` on each file. Does not check the result;
/// [`make_cold`] does.
pub fn drop_page_cache(files: &[PathBuf]) -> Result<ColdMethod, BenchError> {
    let files = expand_files(files)?;
    drop_expanded(&files)
}

/// [`drop_page_cache`] on already expanded files.
fn drop_expanded(files: &[PathBuf]) -> Result<ColdMethod, BenchError> {
    if try_drop_caches() {
        return Ok(ColdMethod::DropCaches);
    }
    fadvise_expanded(files)?;
    Ok(ColdMethod::FadviseDontneed)
}

/// `sync` then `3` into `/proc/sys/vm/drop_caches`, if running as root and
/// the file can be written. Returns whether the caches were dropped.
fn try_drop_caches() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return false;
    }
    let Ok(mut control) = OpenOptions::new().write(true).open(DROP_CACHES) else {
        return false;
    };
    // SAFETY: sync has no preconditions and cannot fail; it returns once
    // every dirty page in the system has been written.
    unsafe { libc::sync() };
    control.write_all(b"3").is_ok()
}

/// Drops `files` (directories expanded) from the page cache with `fsync`
/// then `posix_fadvise(POSIX_FADV_DONTNEED)` on each, whatever the
/// privileges: only these files are affected. [`drop_page_cache`] uses it
/// when it cannot drop the whole cache.
pub fn fadvise_dontneed(files: &[PathBuf]) -> Result<(), BenchError> {
    let files = expand_files(files)?;
    fadvise_expanded(&files)
}

/// [`fadvise_dontneed`] on already expanded files.
fn fadvise_expanded(files: &[PathBuf]) -> Result<(), BenchError> {
    for path in files {
        let file = File::open(path).map_err(|e| BenchError::io_at("open", path, e))?;
        // Dirty pages cannot be dropped: make them clean first.
        file.sync_all()
            .map_err(|e| BenchError::io_at("fsync", path, e))?;
        fadvise(&file, libc::POSIX_FADV_DONTNEED)
            .map_err(|e| BenchError::io_at("posix_fadvise(DONTNEED)", path, e))?;
    }
    Ok(())
}

/// `posix_fadvise(fd, 0, 0, advice)`: `advice` for the whole of `file`.
pub(crate) fn fadvise(file: &File, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: the descriptor is open for the duration of the call (borrowed
    // from `file`); posix_fadvise only reads its integer arguments.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
    // posix_fadvise returns the error number instead of setting errno.
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// The system's page size in bytes.
fn page_size() -> usize {
    // SAFETY: sysconf only reads its integer argument.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}

/// Bytes of `files` (directories expanded as in [`expand_files`]) resident
/// in the page cache, from `mincore(2)`: each resident page counts a full
/// page, except the last page of a file, which counts only up to the end
/// of the file. Empty files count zero. See the module documentation for
/// the ownership condition under which Linux reports residency.
pub fn resident_bytes(files: &[PathBuf]) -> Result<u64, BenchError> {
    let files = expand_files(files)?;
    resident_expanded(&files)
}

/// [`resident_bytes`] on already expanded files.
fn resident_expanded(files: &[PathBuf]) -> Result<u64, BenchError> {
    let page = page_size();
    let mut total = 0u64;
    for path in files {
        total += file_resident_bytes(path, page)?;
    }
    Ok(total)
}

/// Resident bytes of one regular file.
fn file_resident_bytes(path: &Path, page: usize) -> Result<u64, BenchError> {
    let file = File::open(path).map_err(|e| BenchError::io_at("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| BenchError::io_at("stat", path, e))?
        .len();
    if len == 0 {
        return Ok(0);
    }
    let len = usize::try_from(len).map_err(|_| {
        BenchError::io_at(
            "mmap",
            path,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "file larger than the address space",
            ),
        )
    })?;
    // SAFETY: the mapping is read-only and shared, and is never read or
    // written through: it only gives `mincore` an address range. Another
    // process truncating the file could make accesses fault, but there are
    // none.
    let map = unsafe { memmap2::MmapOptions::new().len(len).map(&file) }
        .map_err(|e| BenchError::io_at("mmap", path, e))?;
    let base = map.as_ptr();
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages.min(MINCORE_CHUNK_PAGES)];
    let mut resident = 0u64;
    let mut first = 0usize;
    while first < pages {
        let count = (pages - first).min(MINCORE_CHUNK_PAGES);
        let start = first * page;
        let chunk_len = (len - start).min(count * page);
        // SAFETY: `start` is page-aligned (the mapping starts on a page and
        // `start` is a multiple of the page size) and `start + chunk_len`
        // lies inside the mapping, which lives until `map` is dropped after
        // the loop; `vec` holds at least `count` = ceil(chunk_len / page)
        // bytes for the kernel to fill.
        let rc = unsafe {
            libc::mincore(
                base.add(start) as *mut libc::c_void,
                chunk_len,
                vec.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(BenchError::io_at(
                "mincore",
                path,
                io::Error::last_os_error(),
            ));
        }
        for (i, &flags) in vec[..count].iter().enumerate() {
            if flags & 1 != 0 {
                let page_start = start + i * page;
                resident += (len - page_start).min(page) as u64;
            }
        }
        first += count;
    }
    Ok(resident)
}

/// The cold-cache protocol: measures the residency of `files` (directories
/// expanded as in [`expand_files`]), drops them with [`drop_page_cache`],
/// measures again, and if bytes are still resident applies `fsync` +
/// `POSIX_FADV_DONTNEED` to every file once more and measures a last time.
/// A non-zero [`ColdReport::resident_bytes_after`] is reported, not an
/// error: the caller decides whether a partly warm run is acceptable.
pub fn make_cold(files: &[PathBuf]) -> Result<ColdReport, BenchError> {
    let files = expand_files(files)?;
    let resident_bytes_before = resident_expanded(&files)?;
    let method = drop_expanded(&files)?;
    let mut resident_bytes_after = resident_expanded(&files)?;
    let mut retried_fadvise = false;
    if resident_bytes_after > 0 {
        fadvise_expanded(&files)?;
        retried_fadvise = true;
        resident_bytes_after = resident_expanded(&files)?;
    }
    Ok(ColdReport {
        method,
        files: files.len() as u64,
        resident_bytes_before,
        resident_bytes_after,
        retried_fadvise,
    })
}

/// Bytes per read of [`make_warm`].
const WARM_READ_BYTES: usize = 1 << 20;

/// Reads every byte of `files` (directories expanded as in
/// [`expand_files`]) so the page cache holds them, through one 1 MiB
/// buffer; returns the bytes read. The process's memory does not grow
/// with the files (the page cache is the kernel's, outside the resident
/// set).
pub fn make_warm(files: &[PathBuf]) -> Result<u64, BenchError> {
    use std::io::Read;
    let mut buffer = vec![0u8; WARM_READ_BYTES];
    let mut total = 0u64;
    for path in expand_files(files)? {
        let mut file = File::open(&path).map_err(|e| BenchError::io_at("open", &path, e))?;
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => total += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BenchError::io_at("read", &path, e)),
            }
        }
    }
    Ok(total)
}

//! The import's temporary directory: made on first use (an import that
//! fits in memory makes none), named after the process, and removed with
//! everything in it when the import ends, also on failure (a process that
//! is killed leaves it behind: `.ubt-import-<pid>-<n>` in the base
//! directory).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::ImportError;

/// A lazily made temporary directory and the files in it.
#[derive(Debug)]
pub(crate) struct TempSpace {
    base: PathBuf,
    dir: Mutex<Option<PathBuf>>,
    next_file: AtomicU64,
}

impl TempSpace {
    /// Temporary files will go in a new directory inside `base`.
    pub fn new(base: PathBuf) -> TempSpace {
        TempSpace {
            base,
            dir: Mutex::new(None),
            next_file: AtomicU64::new(0),
        }
    }

    /// The directory, made now if it does not exist yet.
    fn dir(&self) -> Result<PathBuf, ImportError> {
        let mut dir = self.dir.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = dir.as_ref() {
            return Ok(path.clone());
        }
        let pid = std::process::id();
        let mut attempt = 0u32;
        loop {
            let path = self.base.join(format!(".ubt-import-{pid}-{attempt}"));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    *dir = Some(path.clone());
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 => {
                    attempt += 1;
                }
                Err(e) => {
                    return Err(ImportError::io(
                        &self.base,
                        "creating the temporary directory",
                    )(e))
                }
            }
        }
    }

    /// A new file named after `label`, open for writing and reading.
    pub fn create(&self, label: &str) -> Result<(PathBuf, File), ImportError> {
        let dir = self.dir()?;
        let n = self.next_file.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{label}-{n}.bin"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(ImportError::io(&path, "creating a temporary file"))?;
        Ok((path, file))
    }

    /// Removes a file made by [`TempSpace::create`] (best effort: the
    /// directory goes at the end anyway).
    pub fn remove(&self, path: &Path) {
        let _ = std::fs::remove_file(path);
    }

    /// The directory, if it was made.
    #[cfg(test)]
    pub fn made(&self) -> Option<PathBuf> {
        self.dir.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for TempSpace {
    fn drop(&mut self) {
        let dir = self.dir.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

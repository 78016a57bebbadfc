//! The database directory of an import: checked and locked before the
//! input is read, and put back the way it was if the import fails.
//!
//! An import makes a new database. The directory may be absent (it is
//! made), empty, or hold an empty database (what a build that failed or
//! was killed leaves); anything else is refused: a database with data, or
//! files that are not a database's. The check opens the database (made
//! empty now if absent), which takes the directory's lock; the handle is
//! held while the input is read and sorted, so no other ubt process can
//! open the directory, and dropped just before the build opens it again.
//!
//! On failure, the files the import made are removed, and the directory
//! too if the import made it: a failed import leaves nothing behind. A
//! killed import leaves an empty database, which the next import or
//! `ubt load` takes as empty.

use std::path::{Path, PathBuf};

use ubt_engine::{Db, Options, DATA_FILE, META_FILE, WAL_FILE};

use crate::error::{ImportError, TargetProblem};
use crate::options::ImportOptions;

/// File names a ubt database directory may hold (`LOCK`: made by older
/// versions, ignored by the store).
const DATABASE_FILES: [&str; 4] = [META_FILE, DATA_FILE, WAL_FILE, "LOCK"];
/// The files a new database is made of.
const MADE_FILES: [&str; 3] = [META_FILE, DATA_FILE, WAL_FILE];

/// The checked, locked database directory.
#[derive(Debug)]
pub(crate) struct Target {
    path: PathBuf,
    /// Whether the import made the directory.
    made_dir: bool,
    /// Which of [`MADE_FILES`] existed before the import.
    existed: [bool; 3],
    /// The empty database, held open as the directory's lock.
    lock: Option<Db>,
}

fn target_error(path: &Path, problem: TargetProblem) -> ImportError {
    ImportError::Target {
        path: path.to_path_buf(),
        problem,
    }
}

/// The store's options for the database of an import.
pub(crate) fn store_options(options: &ImportOptions) -> Options {
    Options {
        group_depth: options.group_depth,
        bucket_bytes: options.bucket_bytes,
        memory_budget_bytes: options.memory_bytes,
        create_if_missing: true,
        flat_index: options.flat_index,
        ..Options::default()
    }
}

/// Checks `path` and locks it; see the module documentation.
pub(crate) fn prepare(path: &Path, options: &ImportOptions) -> Result<Target, ImportError> {
    let made_dir = match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => false,
        Ok(_) => return Err(target_error(path, TargetProblem::NotADirectory)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(ImportError::io(path, "inspecting the database directory")(
                e,
            ))
        }
    };
    let mut existed = [false; 3];
    if !made_dir {
        let entries = std::fs::read_dir(path)
            .map_err(ImportError::io(path, "listing the database directory"))?;
        for entry in entries {
            let entry = entry.map_err(ImportError::io(path, "listing the database directory"))?;
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|n| DATABASE_FILES.contains(n)) else {
                return Err(target_error(path, TargetProblem::NotEmpty));
            };
            if let Some(index) = MADE_FILES.iter().position(|made| *made == name) {
                existed[index] = true;
            }
        }
    }
    let mut target = Target {
        path: path.to_path_buf(),
        made_dir,
        existed,
        lock: None,
    };
    if existed[0] {
        // Looked at read-only first: a database with data is refused
        // without a byte written (a writable open may recover its WAL).
        match Db::open_read_only(path, store_options(options)) {
            Ok(db) => {
                let stats = db.stats();
                drop(db);
                if stats.generation != 0 || stats.commit_seq != 0 || stats.leaf_count != 0 {
                    return Err(target_error(path, TargetProblem::HoldsDatabase));
                }
            }
            // A meta file without a valid slot beside empty data files: a
            // creation that was killed before it completed (nothing was
            // ever committed). The writable open below completes it.
            Err(ubt_engine::Error::NotFound(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    match Db::open(path, store_options(options)) {
        Ok(db) => {
            target.lock = Some(db);
            Ok(target)
        }
        Err(error) => {
            target.discard();
            Err(error.into())
        }
    }
}

impl Target {
    /// The directory temporary files go into by default: the database
    /// directory's parent.
    pub fn parent(&self) -> PathBuf {
        match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lets go of the lock, for the build to open the directory.
    pub fn release(&mut self) {
        self.lock = None;
    }

    /// Removes what the import made: its files, and the directory if it
    /// made it. Best effort: the import's own error is what is reported.
    pub fn discard(mut self) {
        self.lock = None;
        for (name, existed) in MADE_FILES.iter().zip(self.existed) {
            if !existed {
                let _ = std::fs::remove_file(self.path.join(name));
            }
        }
        if self.made_dir {
            // Only if empty: never remove what someone else put there.
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

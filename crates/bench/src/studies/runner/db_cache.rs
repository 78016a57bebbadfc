//! Loaded databases kept between runs: each engine configuration loads a
//! state once into a pristine directory, and every run starts from a fresh
//! copy of it with the page cache dropped, so every run sees the same
//! bytes, cold.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::measure::cold::{make_cold, ColdReport};
use crate::BenchError;

/// The marker written beside a pristine database once its load finished:
/// what was loaded, so a later run reuses it only for the same state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadMarker {
    /// The engine configuration (`ubt gd6`, `geth-bintrie gd5`).
    pub configuration: String,
    /// The state file loaded ([`state_identity`]).
    pub state: String,
    /// Its length in bytes and modification time (seconds since the
    /// epoch): a regenerated state is loaded again.
    pub state_bytes: u64,
    /// See `state_bytes`.
    pub state_mtime_s: u64,
    /// The root after the load (0x-hex).
    pub root: String,
    /// Tree entries of the state (records when the state does not say).
    pub entries: u64,
    /// Wall time of the load.
    pub seconds: f64,
    /// Bytes of the database directory after the load.
    pub disk_bytes: u64,
    /// ubt's on-disk format version when it was loaded: a database of
    /// another format is loaded again (a marker without it, too).
    pub format_version: u16,
}

/// Identity of a state file: its device and inode (so hard links of one
/// file, such as the raw workloads' shared state, are one state; the
/// canonical path elsewhere), length and modification time.
pub fn state_identity(state: &Path) -> Result<(String, u64, u64), BenchError> {
    let meta = std::fs::metadata(state).map_err(|e| BenchError::io_at("stat", state, e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    #[cfg(unix)]
    let identity = {
        use std::os::unix::fs::MetadataExt;
        format!("device {} inode {}", meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let identity = state
        .canonicalize()
        .map_err(|e| BenchError::io_at("resolving", state, e))?
        .display()
        .to_string();
    Ok((identity, meta.len(), mtime))
}

fn marker_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".loaded.json");
    db.with_file_name(name)
}

/// The marker of the pristine database `db` if it exists and was loaded
/// from `state` for `configuration`.
pub fn loaded(
    db: &Path,
    configuration: &str,
    state: &Path,
) -> Result<Option<LoadMarker>, BenchError> {
    let Ok(text) = std::fs::read_to_string(marker_path(db)) else {
        return Ok(None);
    };
    let Ok(marker) = serde_json::from_str::<LoadMarker>(&text) else {
        return Ok(None);
    };
    let (path, bytes, mtime) = state_identity(state)?;
    let same = marker.configuration == configuration
        && marker.state == path
        && marker.state_bytes == bytes
        && marker.state_mtime_s == mtime
        && marker.format_version == ubt_engine::FORMAT_VERSION
        && db.is_dir();
    Ok(same.then_some(marker))
}

/// Removes `db` and its marker before a new load.
pub fn forget(db: &Path) -> Result<(), BenchError> {
    let _ = std::fs::remove_file(marker_path(db));
    remove_dir(db)
}

/// Records that `db` holds a finished load.
pub fn mark_loaded(db: &Path, marker: &LoadMarker) -> Result<(), BenchError> {
    let path = marker_path(db);
    let text = serde_json::to_string_pretty(marker)
        .map_err(|e| BenchError::io_at("serializing", &path, e.into()))?;
    std::fs::write(&path, text).map_err(|e| BenchError::io_at("writing", &path, e))
}

/// A marker for a load of `state` that started at `started`.
pub fn new_marker(
    configuration: &str,
    state: &Path,
    root: String,
    entries: u64,
    started: Instant,
    db: &Path,
) -> Result<LoadMarker, BenchError> {
    let (state, state_bytes, state_mtime_s) = state_identity(state)?;
    Ok(LoadMarker {
        configuration: configuration.to_owned(),
        state,
        state_bytes,
        state_mtime_s,
        root,
        entries,
        seconds: started.elapsed().as_secs_f64(),
        disk_bytes: dir_bytes(db)?,
        format_version: ubt_engine::FORMAT_VERSION,
    })
}

fn remove_dir(dir: &Path) -> Result<(), BenchError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BenchError::io_at("removing", dir, e)),
    }
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries =
            std::fs::read_dir(&current).map_err(|e| BenchError::io_at("listing", &current, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| BenchError::io_at("listing", &current, e))?;
            let kind = entry
                .file_type()
                .map_err(|e| BenchError::io_at("stat", &entry.path(), e))?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> Result<u64, BenchError> {
    let mut total = 0;
    for file in files_under(dir)? {
        total += std::fs::metadata(&file)
            .map_err(|e| BenchError::io_at("stat", &file, e))?
            .len();
    }
    Ok(total)
}

/// Replaces `run_dir` with a copy of `pristine`, then drops every file of
/// the copy from the page cache (checked with `mincore`) unless `warm`.
pub fn fresh_copy(
    pristine: &Path,
    run_dir: &Path,
    warm: bool,
) -> Result<Option<ColdReport>, BenchError> {
    remove_dir(run_dir)?;
    for file in files_under(pristine)? {
        let relative = file
            .strip_prefix(pristine)
            .map_err(|e| BenchError::io_at("copying", &file, std::io::Error::other(e)))?;
        let target = run_dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| BenchError::io_at("creating", parent, e))?;
        }
        std::fs::copy(&file, &target).map_err(|e| BenchError::io_at("copying", &file, e))?;
    }
    std::fs::create_dir_all(run_dir).map_err(|e| BenchError::io_at("creating", run_dir, e))?;
    if warm {
        return Ok(None);
    }
    let files = files_under(run_dir)?;
    let report = make_cold(&files)?;
    if report.resident_bytes_after != 0 {
        return Err(BenchError::Engine {
            what: "dropping the page cache".into(),
            message: format!(
                "{} bytes of {} stay resident after {}",
                report.resident_bytes_after,
                run_dir.display(),
                report.method.name()
            ),
        });
    }
    Ok(Some(report))
}

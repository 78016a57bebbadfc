//! The directory locks of real files (`OsDir::lock_exclusive`,
//! `OsDir::lock_shared`): one writer or any number of read-only opens,
//! held on the database directory itself, so that deleting or replacing a
//! `LOCK` file cannot let a second writer in.
//!
//! The cross-process test re-executes this test binary
//! (`--exact <probe test> --nocapture`) with `UBT_OS_LOCKS_CHILD=<mode>:<dir>`
//! set: the child tries the lock of `<mode>` (`exclusive` or `shared`) on a
//! fresh `OsDir` of `<dir>` and prints `probe: locked`, `probe: wouldblock`
//! or `probe: error <message>`.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use ubt_store::io::os::{OsDir, LOCK_FILE};
use ubt_store::io::{DirLock, ReadBackendChoice, StoreDir};

/// The environment variable that turns the probe test into the child.
const CHILD_ENV: &str = "UBT_OS_LOCKS_CHILD";
/// The probe test's name, for `--exact`.
const PROBE_TEST: &str = "child_lock_probe";

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("ubt-os-locks-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh handle on `path`, as a second process or a second `Store`
/// would make.
fn fresh(path: &Path) -> OsDir {
    OsDir::open(path, false, ReadBackendChoice::ThreadPool).expect("open the directory")
}

/// Asserts that `result` is the `WouldBlock` refusal of a lock.
fn assert_blocked(result: io::Result<Box<dyn DirLock>>, context: &str) {
    match result {
        Ok(guard) => panic!("{context}: the lock was granted ({guard:?})"),
        Err(error) => assert_eq!(
            error.kind(),
            io::ErrorKind::WouldBlock,
            "{context}: {error}"
        ),
    }
}

/// The lock of `mode` on a fresh handle of `path`.
fn try_lock(path: &Path, mode: &str) -> io::Result<Box<dyn DirLock>> {
    let dir = fresh(path);
    match mode {
        "exclusive" => dir.lock_exclusive(),
        "shared" => dir.lock_shared(),
        _ => panic!("unknown lock mode {mode:?}"),
    }
}

/// The child side of [`probe_in_child`]; a no-op in a normal test run.
#[test]
fn child_lock_probe() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, dir) = spec
        .split_once(':')
        .expect("UBT_OS_LOCKS_CHILD is <mode>:<dir>");
    let line = match try_lock(Path::new(dir), mode) {
        Ok(_guard) => "probe: locked".to_string(),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => "probe: wouldblock".to_string(),
        Err(error) => format!("probe: error {error}"),
    };
    println!("{line}");
}

/// Runs [`child_lock_probe`] in another process on `path`; returns its
/// `probe:` answer (`locked`, `wouldblock` or `error ...`).
fn probe_in_child(path: &Path, mode: &str) -> String {
    let exe = std::env::current_exe().expect("test binary");
    let output = Command::new(exe)
        .args(["--exact", PROBE_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{mode}:{}", path.display()))
        .stdin(Stdio::null())
        .output()
        .expect("run the child probe");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child probe failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .find_map(|line| line.split_once("probe: ").map(|(_, answer)| answer.trim()))
        .unwrap_or_else(|| panic!("the child printed no probe line:\n{stdout}"))
        .to_string()
}

#[test]
fn deleting_the_lock_file_does_not_let_a_second_writer_in() {
    let tmp = TempDir::new("delete");
    // An old database may still hold a LOCK file.
    std::fs::write(tmp.path().join(LOCK_FILE), b"").unwrap();
    let writer = fresh(tmp.path());
    let guard = writer.lock_exclusive().expect("first writer");
    assert_blocked(try_lock(tmp.path(), "exclusive"), "second writer");

    std::fs::remove_file(tmp.path().join(LOCK_FILE)).unwrap();
    assert_blocked(
        try_lock(tmp.path(), "exclusive"),
        "second writer after LOCK was deleted",
    );
    // A new LOCK file (and any other new file) changes nothing either.
    std::fs::write(tmp.path().join(LOCK_FILE), b"").unwrap();
    std::fs::write(tmp.path().join("unrelated"), b"x").unwrap();
    assert_blocked(
        try_lock(tmp.path(), "exclusive"),
        "second writer after LOCK was recreated",
    );
    std::fs::remove_file(tmp.path().join(LOCK_FILE)).unwrap();
    assert_blocked(
        try_lock(tmp.path(), "exclusive"),
        "second writer after LOCK was deleted again",
    );
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "wouldblock");

    drop(guard);
    drop(try_lock(tmp.path(), "exclusive").expect("the lock is free after the drop"));
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "locked");
}

#[test]
fn locking_creates_no_file() {
    let tmp = TempDir::new("nofile");
    let dir = fresh(tmp.path());
    let guard = dir.lock_exclusive().unwrap();
    assert_eq!(dir.list().unwrap(), Vec::<String>::new());
    drop(guard);
    assert_eq!(dir.list().unwrap(), Vec::<String>::new());
    assert!(!tmp.path().join(LOCK_FILE).exists());
}

#[test]
fn a_writer_in_another_process_is_locked_out() {
    let tmp = TempDir::new("process");
    let dir = fresh(tmp.path());
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "locked");
    let guard = dir.lock_exclusive().unwrap();
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "wouldblock");
    // Whatever happens to a LOCK file while the writer runs.
    let lock_file = tmp.path().join(LOCK_FILE);
    if lock_file.exists() {
        std::fs::remove_file(&lock_file).unwrap();
    }
    assert_eq!(
        probe_in_child(tmp.path(), "exclusive"),
        "wouldblock",
        "after deleting LOCK"
    );
    drop(guard);
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "locked");
}

#[test]
fn shared_locks_coexist_and_keep_the_writer_out() {
    let tmp = TempDir::new("shared");
    let dir = fresh(tmp.path());
    let reader = dir.lock_shared().expect("first reader");
    let second = try_lock(tmp.path(), "shared").expect("a second reader");
    let third = dir
        .lock_shared()
        .expect("a third reader on the same handle");
    assert_blocked(dir.lock_exclusive(), "writer on a reader's handle");
    assert_blocked(try_lock(tmp.path(), "exclusive"), "writer beside readers");
    assert_eq!(probe_in_child(tmp.path(), "shared"), "locked");
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "wouldblock");
    drop(reader);
    drop(third);
    assert_blocked(
        try_lock(tmp.path(), "exclusive"),
        "writer beside one reader",
    );
    drop(second);

    let writer = try_lock(tmp.path(), "exclusive").expect("the writer, readers gone");
    assert_blocked(dir.lock_shared(), "reader beside the writer");
    assert_blocked(try_lock(tmp.path(), "shared"), "reader beside the writer");
    assert_eq!(probe_in_child(tmp.path(), "shared"), "wouldblock");
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "wouldblock");
    drop(writer);
    drop(dir.lock_shared().expect("a reader after the writer"));
    assert_eq!(probe_in_child(tmp.path(), "shared"), "locked");
}

#[test]
fn a_read_only_open_in_another_process_keeps_the_writer_out() {
    let tmp = TempDir::new("reader-process");
    let dir = fresh(tmp.path());
    let _reader = dir.lock_shared().unwrap();
    // Deleting or adding files changes nothing.
    std::fs::write(tmp.path().join(LOCK_FILE), b"").unwrap();
    std::fs::remove_file(tmp.path().join(LOCK_FILE)).unwrap();
    assert_eq!(probe_in_child(tmp.path(), "exclusive"), "wouldblock");
    assert_eq!(probe_in_child(tmp.path(), "shared"), "locked");
}

#[test]
fn a_link_to_the_directory_locks_the_same_directory() {
    let tmp = TempDir::new("link");
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let guard = fresh(&link).lock_exclusive().unwrap();
    assert_blocked(try_lock(&real, "exclusive"), "writer through the real path");
    assert_blocked(try_lock(&real, "shared"), "reader through the real path");
    assert_eq!(probe_in_child(&real, "exclusive"), "wouldblock");
    drop(guard);
    let _reader = fresh(&real).lock_shared().unwrap();
    assert_blocked(try_lock(&link, "exclusive"), "writer through the link");
}

#[test]
fn a_replaced_directory_is_not_locked() {
    let tmp = TempDir::new("replaced");
    let path = tmp.path().join("db");
    std::fs::create_dir(&path).unwrap();
    let dir = fresh(&path);
    let guard = dir.lock_exclusive().unwrap();
    // The directory is moved away and another one put in its place: a
    // handle opened before cannot lock the newcomer.
    std::fs::rename(&path, tmp.path().join("moved")).unwrap();
    std::fs::create_dir(&path).unwrap();
    let other = fresh(&tmp.path().join("moved"));
    assert_blocked(other.lock_exclusive(), "writer on the moved directory");
    let error = dir.lock_shared().unwrap_err();
    assert!(error.to_string().contains("was replaced"), "{error}");
    drop(guard);
}

//! What the CLI's integration tests share: running the `ubt` binary, and
//! temporary directories.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Runs `ubt` with `args`, writing `stdin` (if any) from a thread so that
/// ubt may stop reading early (a broken pipe is fine). Fails the test if
/// ubt panicked.
pub fn run_ubt(args: &[&str], stdin: Option<Vec<u8>>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ubt"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ubt");
    let mut input = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        if let Some(bytes) = stdin {
            let _ = input.write_all(&bytes);
        }
    });
    let output = child.wait_with_output().expect("wait ubt");
    writer.join().expect("stdin writer");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked"),
        "ubt {args:?} panicked: {stderr}"
    );
    output
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory whose name holds `label`.
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("ubt-cli-{label}-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// The path of `name` in the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `bytes` to `name`; returns its path as text.
    pub fn write(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.path(name);
        std::fs::write(&path, bytes).expect("write temp file");
        text(&path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A path as text (the tests' paths are UTF-8).
pub fn text(path: &Path) -> String {
    path.to_str().expect("utf-8 path").to_string()
}

/// A command's standard output, as text.
pub fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A command's standard error, as text.
pub fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

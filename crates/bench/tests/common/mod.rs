//! Helpers shared by the bench crate's integration tests.

// Each test binary uses the helpers it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ubt_bench::studies::runner::geth::default_source_dir;
use ubt_bench::studies::runner::kind::Workload;
use ubt_bench::studies::runner::{FlatMode, PrefetchMode, RunConfig};
use ubt_evm::workloads::BlockShape;

/// A directory under the system's temporary directory, named after the
/// test binary, `tag` and the process, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// Creates it empty.
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "ubt-{}-{tag}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small warm run of ubt alone (group depth 4, one run of one block):
/// tests set peers or other fields as they need.
pub fn run_config(states: Vec<PathBuf>, out: &Path, workloads: Option<Vec<Workload>>) -> RunConfig {
    RunConfig {
        states,
        out_dir: out.to_path_buf(),
        workloads,
        shape: BlockShape::Gd,
        blocks: 1,
        runs: 1,
        group_depths: vec![4],
        prefetch: PrefetchMode::Both,
        flat_index: FlatMode::On,
        peers: Vec::new(),
        peer_source: default_source_dir(),
        // Temporary directories may be on tmpfs, where the page cache
        // cannot be dropped; the cold protocol has its own tests.
        warm: true,
        memory_budget_bytes: None,
        direct_reads: false,
        device_probe: None,
        command: "test".into(),
    }
}

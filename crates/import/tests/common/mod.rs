//! What the import tests share: temporary directories, imports from
//! bytes, and the independent root of generated accounts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use alloy_primitives::B256;
use ubt_import::testing::SyntheticAccount;
use ubt_import::{ImportError, ImportOptions, ImportReport, NoProgress};

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory whose name holds `label`.
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "ubt-import-{label}-test-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// The path of `name` in the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Imports `dump` into `db`.
pub fn import_dump(
    db: &Path,
    dump: &[u8],
    options: &ImportOptions,
) -> Result<ImportReport, ImportError> {
    ubt_import::import_geth_dump(dump, db, options, &NoProgress)
}

/// Imports the genesis `document` into `db`.
pub fn import_genesis_bytes(
    db: &Path,
    document: &[u8],
    options: &ImportOptions,
) -> Result<ImportReport, ImportError> {
    ubt_import::import_genesis(document, db, options, &NoProgress)
}

/// The root of `accounts` by `ubt-spec` alone.
pub fn oracle_root(accounts: &[SyntheticAccount]) -> B256 {
    let mut entries: Vec<(B256, B256)> = accounts.iter().flat_map(|a| a.tree_entries()).collect();
    B256::from(ubt_spec::sorted_root::root_of_entries(&mut entries))
}

/// The vectors directory of the repository.
pub fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors")
}

//! What an import did: the root, the counts and where the time went.

use std::time::Duration;

use alloy_primitives::B256;
use ubt_engine::{BuildReport, FlatBuildReport};

/// What the input held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Accounts imported.
    pub accounts: u64,
    /// Storage slots with a non-zero value (one leaf each).
    pub storage_slots: u64,
    /// Storage slots with a zero value: no-ops on a fresh account, so no
    /// leaf (geth's `SetState` semantics).
    pub zero_storage_values: u64,
    /// Bytes of code, over all accounts.
    pub code_bytes: u64,
    /// Tree entries (leaves) derived.
    pub tree_entries: u64,
    /// Dump accounts skipped for lack of an address
    /// (`skip_missing_preimages`).
    pub skipped_accounts: u64,
}

impl Counts {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Counts) {
        self.accounts += other.accounts;
        self.storage_slots += other.storage_slots;
        self.zero_storage_values += other.zero_storage_values;
        self.code_bytes += other.code_bytes;
        self.tree_entries += other.tree_entries;
        self.skipped_accounts += other.skipped_accounts;
    }
}

/// Wall-clock time of each phase. The read phase overlaps parsing with
/// reading; `parse` is its time outside sorting and spilling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimings {
    /// Reading, parsing and deriving tree keys (the read phase without
    /// the sorting and spilling it waited for).
    pub parse: Duration,
    /// Sorting buffers (each spilled run and the in-memory final one).
    pub sort: Duration,
    /// Writing spill runs.
    pub spill: Duration,
    /// Intermediate merge passes (when runs outnumber the fan-in).
    pub merge: Duration,
    /// The final merge streamed into the database build, and the build.
    pub build: Duration,
    /// The flat index: the account-ordered sort's merges and its build.
    pub flat_index: Duration,
    /// The whole import.
    pub total: Duration,
}

/// What an import did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportReport {
    /// The state root of the new database.
    pub root: B256,
    /// The root the input names for itself (a dump's first line: the
    /// state root of the node that wrote it, in its own trie), if any.
    pub source_root: Option<B256>,
    /// What the input held.
    pub counts: Counts,
    /// Bytes of input read.
    pub input_bytes: u64,
    /// Sorted runs spilled to temporary files (0: everything fit in
    /// memory), of both sorts.
    pub spill_runs: u64,
    /// Intermediate merges (runs merged into a new run before the final
    /// merge), of both sorts.
    pub merge_passes: u64,
    /// Where the time went.
    pub timings: PhaseTimings,
    /// What the database build did.
    pub build: BuildReport,
    /// What the flat index's build did, when the import built one.
    pub flat_index: Option<FlatBuildReport>,
}

//! Progress reports for a caller that draws them (the CLI's bars).

use std::time::Duration;

/// The phases of an import, in order. `Merge` happens only when the spill
/// runs outnumber the merge fan-in, `Index` only when the import builds the
/// flat index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading and parsing the input, deriving tree keys, sorting and
    /// spilling; progress in input bytes.
    Read,
    /// Intermediate merge passes; progress in entries.
    Merge,
    /// The final merge into the database build; progress in entries.
    Build,
    /// The flat index of account values: the merge of the account-ordered
    /// sort into its build; progress in entries.
    Index,
}

impl Phase {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Read => "reading",
            Phase::Merge => "merging",
            Phase::Build => "building",
            Phase::Index => "indexing accounts",
        }
    }
}

/// Where an import is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The current phase.
    pub phase: Phase,
    /// Units done in this phase (input bytes, or entries).
    pub done: u64,
    /// Units in this phase, when known.
    pub total: Option<u64>,
    /// Accounts read so far.
    pub accounts: u64,
    /// Tree entries derived so far.
    pub entries: u64,
}

/// Receives progress from an import, on the importing thread. Every method
/// has an empty default.
pub trait Progress: Sync {
    /// A phase starts.
    fn phase_started(&self, _status: &Status) {}
    /// The phase advanced (called every few megabytes or entries).
    fn advanced(&self, _status: &Status) {}
    /// A phase ended after `elapsed`.
    fn phase_finished(&self, _status: &Status, _elapsed: Duration) {}
}

/// Ignores all progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

//! Loading a state of accounts into a ubt configuration through
//! `ubt_import::import_items`: the state file is read a batch of lines at
//! a time (a generated state is generated a batch at a time instead), the tree entries (and the flat index's records) go through the
//! import's external sort, and the build streams from its final merge.
//! Memory is the import's bound (the run's memory budget, 1 GiB by
//! default) whatever the state's size; spill runs go to a temporary
//! directory beside the database, removed at the end.
//!
//! The import runs on a thread of its own; its progress comes back over a
//! channel and is shown as the run's phases.

use std::path::Path;
use std::sync::mpsc::{channel, Sender};

use ubt_import::{import_items, ImportError, ImportOptions, Phase, Problem, Progress, Status};

use super::RunEvent;
use crate::gen::{ChainParams, GeneratedItems, GeneratedProbe, StateItems, StateItemsProbe};
use crate::BenchError;

/// What a load built.
pub(super) struct Imported {
    /// The state root, `0x` and 64 hex digits.
    pub root: String,
    /// Tree entries in the database.
    pub entries: u64,
}

/// A progress report from the importing thread.
enum Report {
    Started(Status),
    Advanced(Status),
    Finished,
}

/// Forwards the import's progress to the calling thread.
struct Forward(Sender<Report>);

impl Progress for Forward {
    fn phase_started(&self, status: &Status) {
        let _ = self.0.send(Report::Started(*status));
    }

    fn advanced(&self, status: &Status) {
        let _ = self.0.send(Report::Advanced(*status));
    }

    fn phase_finished(&self, _status: &Status, _elapsed: std::time::Duration) {
        let _ = self.0.send(Report::Finished);
    }
}

/// Where a state of accounts comes from.
pub(super) enum StateInput<'a> {
    /// A `state.jsonl` file.
    File(&'a Path),
    /// Generated from its recipe ([`GeneratedItems`]), `records` of them.
    Generated {
        /// The recipe.
        params: ChainParams,
        /// Records it generates (`workload.json`'s `state_records`).
        records: u64,
    },
}

/// How far the read of a state has come: bytes of the file, or records
/// generated.
enum ReadProbe {
    File(StateItemsProbe),
    Generated(GeneratedProbe),
}

impl ReadProbe {
    fn done(&self) -> u64 {
        match self {
            ReadProbe::File(probe) => probe.read_bytes(),
            ReadProbe::Generated(probe) => probe.records(),
        }
    }

    fn failure(&self) -> Option<BenchError> {
        match self {
            ReadProbe::File(probe) => probe.failure(),
            ReadProbe::Generated(_) => None,
        }
    }
}

/// Imports a state of accounts into a new database at `db`; `None` (and
/// no database) when a record rewrites an earlier record's key, which the
/// import refuses and the state format allows.
pub(super) fn import_state(
    input: StateInput<'_>,
    db: &Path,
    options: &ImportOptions,
    label: &str,
    events: &mut dyn FnMut(RunEvent),
) -> Result<Option<Imported>, BenchError> {
    match input {
        StateInput::File(state) => {
            let (items, probe, file_bytes) = StateItems::open(state)?;
            let probe = ReadProbe::File(probe);
            import_from(items, &probe, file_bytes, db, options, label, events)
        }
        StateInput::Generated { params, records } => {
            let (items, probe) = GeneratedItems::start(&params);
            let probe = ReadProbe::Generated(probe);
            import_from(items, &probe, records, db, options, label, events)
        }
    }
}

/// [`import_state`] from `items`; the read phase's units are `probe`'s,
/// `read_total` of them.
fn import_from(
    items: impl Iterator<Item = std::io::Result<ubt_import::StateItem>> + Send,
    probe: &ReadProbe,
    read_total: u64,
    db: &Path,
    options: &ImportOptions,
    label: &str,
    events: &mut dyn FnMut(RunEvent),
) -> Result<Option<Imported>, BenchError> {
    let (sender, receiver) = channel();
    let forward = Forward(sender);
    let outcome = std::thread::scope(|scope| {
        let importing = scope.spawn(move || import_items(items, db, options, &forward));
        let mut shown = Shown::default();
        for report in receiver {
            shown.show(report, probe, read_total, label, events);
        }
        if shown.open {
            // The import stopped inside a phase.
            events(RunEvent::Done);
        }
        importing.join()
    });
    let report = match outcome {
        Ok(Ok(report)) => report,
        Ok(Err(ImportError::Input(input)))
            if matches!(input.problem, Problem::DuplicateTreeKey { .. }) =>
        {
            return Ok(None);
        }
        Ok(Err(error)) => {
            // The state file's own error says where, better than the
            // import's view of it.
            return Err(probe.failure().unwrap_or_else(|| BenchError::Engine {
                what: format!("loading {label}"),
                message: error.to_string(),
            }));
        }
        Err(_) => {
            return Err(BenchError::Engine {
                what: format!("loading {label}"),
                message: "the importing thread panicked".into(),
            })
        }
    };
    Ok(Some(Imported {
        root: format!("{:#x}", report.root),
        entries: report.counts.tree_entries,
    }))
}

/// What the run's progress shows of the import.
#[derive(Default)]
struct Shown {
    /// Units already shown in the current phase.
    done: u64,
    /// The current phase is the read.
    reading: bool,
    /// A phase has started and not finished.
    open: bool,
}

impl Shown {
    fn show(
        &mut self,
        report: Report,
        probe: &ReadProbe,
        read_total: u64,
        label: &str,
        events: &mut dyn FnMut(RunEvent),
    ) {
        match report {
            Report::Started(status) => {
                self.done = 0;
                self.reading = status.phase == Phase::Read;
                self.open = true;
                let (what, total) = match status.phase {
                    // The read phase's units are the probe's.
                    Phase::Read => ("reading and sorting the state", read_total),
                    Phase::Merge => ("merging sorted runs", 0),
                    Phase::Build => ("building", status.total.unwrap_or(0)),
                    Phase::Index => ("building the flat index", status.total.unwrap_or(0)),
                };
                events(RunEvent::Phase {
                    label: format!("{label}: {what}"),
                    total,
                });
            }
            Report::Advanced(status) => {
                let done = if self.reading {
                    probe.done()
                } else {
                    status.done
                };
                events(RunEvent::Advance(done.saturating_sub(self.done)));
                self.done = self.done.max(done);
            }
            Report::Finished => {
                self.open = false;
                events(RunEvent::Done);
            }
        }
    }
}

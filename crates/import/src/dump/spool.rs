//! The slots of a long dump line, held until the line's `address` arrives
//! (it comes after `storage`): in memory up to a limit, then sorted by
//! slot and written as spill runs to the temporary directory, read back
//! in order once the account is known. Memory stays bounded however many
//! slots one account has.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;

use super::line::SlotSink;
use crate::entries::Entry;
use crate::error::ImportError;
use crate::sort::buffer::sort_records;
use crate::sort::run::{RunError, RunReader, RunWriter};
use crate::sort::tmp::TempSpace;

/// Slots handed back per call of [`Spool::drain`]'s callback, at most.
pub(crate) const DRAIN_SLOTS: usize = 1 << 16;

/// A long line's slots (`key`: the slot, `value`: its value).
pub(crate) struct Spool<'t> {
    temp: &'t TempSpace,
    pending: Vec<Entry>,
    limit: usize,
    runs: Vec<(PathBuf, u64)>,
    count: u64,
    origin: u64,
}

impl<'t> Spool<'t> {
    /// A spool for line `origin` holding up to `limit` slots in memory.
    pub fn new(temp: &'t TempSpace, limit: usize, origin: u64) -> Spool<'t> {
        Spool {
            temp,
            pending: Vec::new(),
            limit: limit.max(1),
            runs: Vec::new(),
            count: 0,
            origin,
        }
    }

    /// Writes the pending slots as a run.
    fn spill(&mut self) -> Result<(), ImportError> {
        sort_records(&mut self.pending);
        let (path, file) = self.temp.create("spool")?;
        let written = RunWriter::new(BufWriter::new(file), self.pending.len() as u64).and_then(
            |mut writer| {
                for entry in &self.pending {
                    writer.push(entry)?;
                }
                writer.finish()
            },
        );
        if let Err(e) = written {
            self.temp.remove(&path);
            return Err(ImportError::io(&path, "writing spooled storage")(e));
        }
        self.runs.push((path, self.pending.len() as u64));
        self.pending.clear();
        Ok(())
    }

    /// Hands every slot back, in pieces of at most [`DRAIN_SLOTS`]
    /// (`(slot, value)` pairs), spilled runs first.
    pub fn drain<E: From<ImportError>>(
        mut self,
        mut piece: impl FnMut(&[([u8; 32], [u8; 32])]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut buffer =
            Vec::with_capacity(DRAIN_SLOTS.min(usize::try_from(self.count).unwrap_or(usize::MAX)));
        for (path, entries) in std::mem::take(&mut self.runs) {
            let result = read_run(&path, entries, &mut buffer, &mut piece);
            self.temp.remove(&path);
            result?;
        }
        for chunk in self.pending.chunks(DRAIN_SLOTS) {
            buffer.clear();
            buffer.extend(chunk.iter().map(|e| (e.key, e.value)));
            piece(&buffer)?;
        }
        Ok(())
    }
}

/// Reads the run at `path` (of `entries` entries) in pieces.
fn read_run<E: From<ImportError>>(
    path: &PathBuf,
    entries: u64,
    buffer: &mut Vec<([u8; 32], [u8; 32])>,
    piece: &mut impl FnMut(&[([u8; 32], [u8; 32])]) -> Result<(), E>,
) -> Result<(), E> {
    let file = File::open(path).map_err(ImportError::io(path, "opening spooled storage"))?;
    let run_error = |error| ImportError::Run {
        path: path.clone(),
        error,
    };
    let mut reader = RunReader::<_, Entry>::open(BufReader::new(file)).map_err(run_error)?;
    if reader.entries() != entries {
        return Err(run_error(RunError::WrongCount {
            expected: entries,
            found: reader.entries(),
        })
        .into());
    }
    buffer.clear();
    while let Some(entry) = reader.next_entry().map_err(run_error)? {
        buffer.push((entry.key, entry.value));
        if buffer.len() == DRAIN_SLOTS {
            piece(buffer)?;
            buffer.clear();
        }
    }
    if !buffer.is_empty() {
        piece(buffer)?;
        buffer.clear();
    }
    Ok(())
}

impl SlotSink for Spool<'_> {
    fn push(&mut self, slot: [u8; 32], value: [u8; 32]) -> Result<(), ImportError> {
        self.pending.push(Entry {
            key: slot,
            value,
            origin: self.origin,
        });
        self.count += 1;
        if self.pending.len() >= self.limit {
            self.spill()?;
        }
        Ok(())
    }

    fn count(&self) -> u64 {
        self.count
    }
}

impl Drop for Spool<'_> {
    fn drop(&mut self) {
        for (path, _) in &self.runs {
            self.temp.remove(path);
        }
    }
}

//! What the runs leave behind: `<out>/metrics.jsonl`, read back to resume
//! and appended to one run at a time, and the `blocks.jsonl` the first run
//! of an EVM workload records for the peer to replay.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::blocks::BlockLine;
use super::ubt_exec;
use crate::formats::metrics::{read_metrics_file, BlockMetrics};
use crate::gen::write::LineWriter;
use crate::BenchError;

/// A run's identity in the metrics: engine, variant, workload, run.
pub(super) type RunKey = (String, String, String, u32);

/// The metrics file and the runs it holds.
pub(super) struct RunRecord {
    /// `<out>/metrics.jsonl`.
    pub(super) path: PathBuf,
    /// Every line so far, from earlier invocations and from this one.
    pub(super) metrics: Vec<BlockMetrics>,
    /// The runs done.
    done: HashSet<RunKey>,
}

impl RunRecord {
    /// Reads `<out>/metrics.jsonl` if it exists.
    pub(super) fn open(out_dir: &Path) -> Result<Self, BenchError> {
        let path = out_dir.join("metrics.jsonl");
        let metrics = if path.is_file() {
            read_metrics_file(&path)?
        } else {
            Vec::new()
        };
        let done = metrics
            .iter()
            .map(|m| {
                (
                    m.engine.clone(),
                    m.variant.clone(),
                    m.workload.clone(),
                    m.run,
                )
            })
            .collect();
        Ok(RunRecord {
            path,
            metrics,
            done,
        })
    }

    /// Whether the run is in the file already.
    pub(super) fn is_done(&self, key: &RunKey) -> bool {
        self.done.contains(key)
    }

    /// ubt's roots after each block of `workload`'s first run, if recorded.
    pub(super) fn ubt_roots(&self, workload: &str) -> Option<Vec<String>> {
        self.metrics
            .iter()
            .filter(|m| m.engine == ubt_exec::ENGINE && m.workload == workload && m.run == 1)
            .fold(None, |acc: Option<BTreeMap<u64, String>>, m| {
                let mut acc = acc.unwrap_or_default();
                acc.insert(m.block, m.root.clone());
                Some(acc)
            })
            .map(|roots| roots.into_values().collect())
    }

    /// Appends one run's lines (durably) and counts the run done.
    pub(super) fn append(
        &mut self,
        key: RunKey,
        produced: Vec<BlockMetrics>,
    ) -> Result<(), BenchError> {
        append_metrics(&self.path, &produced)?;
        self.done.insert(key);
        self.metrics.extend(produced);
        Ok(())
    }
}

/// Writes `blocks.jsonl` atomically (a temporary file renamed), through
/// the workload files' one line writer ([`LineWriter::block`]).
pub(super) fn write_blocks(path: &Path, lines: &[BlockLine]) -> Result<(), BenchError> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut out = LineWriter::create(&tmp)?;
    for line in lines {
        out.block(
            line.block,
            line.gas_used,
            line.txs,
            &line.reads,
            &line.writes,
        )?;
    }
    out.finish()?;
    std::fs::rename(&tmp, path).map_err(|e| BenchError::io_at("renaming", &tmp, e))
}

/// Appends one run's lines in one write.
fn append_metrics(path: &Path, lines: &[BlockMetrics]) -> Result<(), BenchError> {
    let mut text = String::new();
    for line in lines {
        let json = serde_json::to_string(line)
            .map_err(|e| BenchError::io_at("serializing metrics for", path, e.into()))?;
        text.push_str(&json);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| BenchError::io_at("opening", path, e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|e| BenchError::io_at("appending to", path, e))
}

//! Block metrics as `ubt bench run` and the go-ethereum peer print them
//! (docs/workload-format.md, "Metrics"): one JSON object per block per
//! run. Reading them, grouping them by workload and configuration without
//! the warm-up run, and the per-slot figures derived from them.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::formats::natural::natural_cmp;

/// The run that warms caches up; it is excluded from statistics.
pub const WARMUP_RUN: u32 = 1;

/// One block of one run of one engine configuration on one workload.
///
/// Fields are those of docs/workload-format.md; unknown fields are
/// accepted and ignored, `bytes_read` and `bytes_written` may be absent or
/// null.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockMetrics {
    /// `ubt`, `geth-bintrie`, `geth-mpt`, `geth-ubt`.
    pub engine: String,
    /// Configuration label, e.g. `gd5` (group depth).
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Run number; run 1 is the warm-up ([`WARMUP_RUN`]).
    pub run: u32,
    /// Block number within the workload.
    pub block: u64,
    /// Gas of the block.
    pub gas_used: u64,
    /// Transactions in the block.
    pub txs: u64,
    /// Accounts read.
    pub accounts_read: u64,
    /// Storage slots read.
    pub slots_read: u64,
    /// Storage slots written.
    pub slots_written: u64,
    /// Accounts written.
    pub accounts_written: u64,
    /// Reads that went below the engine's caches (engine-defined).
    pub cache_misses: u64,
    /// EVM time excluding state reads (0 for replaying engines).
    pub execution_ms: f64,
    /// Time inside state reads.
    pub state_read_ms: f64,
    /// Applying the writes and computing the root.
    pub state_hash_ms: f64,
    /// Making the block durable.
    pub commit_ms: f64,
    /// The whole block.
    pub total_ms: f64,
    /// `gas_used / total_ms / 1000`.
    pub mgas_per_s: f64,
    /// Bytes read from the engine's files, when known.
    #[serde(default)]
    pub bytes_read: Option<u64>,
    /// Bytes written to the engine's files, when known.
    #[serde(default)]
    pub bytes_written: Option<u64>,
    /// State root after the block (0x-hex).
    pub root: String,
}

/// `numerator / denominator`, `None` for a zero denominator.
fn per(numerator: f64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator / denominator as f64)
}

impl BlockMetrics {
    /// The engine configuration that produced the block.
    pub fn configuration(&self) -> Configuration {
        Configuration {
            engine: self.engine.clone(),
            variant: self.variant.clone(),
        }
    }

    /// The group the block belongs to.
    pub fn group_key(&self) -> GroupKey {
        GroupKey {
            workload: self.workload.clone(),
            configuration: self.configuration(),
        }
    }

    /// `state_read_ms / slots_read`; `None` without slot reads.
    pub fn ms_per_slot_read(&self) -> Option<f64> {
        per(self.state_read_ms, self.slots_read)
    }

    /// `total_ms / (slots_read + slots_written)`; `None` without slots.
    pub fn ms_per_slot_total(&self) -> Option<f64> {
        per(self.total_ms, self.slots_read + self.slots_written)
    }

    /// `state_read_ms / cache_misses`; `None` without misses.
    pub fn ms_per_cache_miss(&self) -> Option<f64> {
        per(self.state_read_ms, self.cache_misses)
    }
}

/// An engine and one of its configurations, ordered by engine then
/// variant in natural order (`gd2 < gd10`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Configuration {
    /// Engine name.
    pub engine: String,
    /// Variant label.
    pub variant: String,
}

impl Ord for Configuration {
    fn cmp(&self, other: &Self) -> Ordering {
        natural_cmp(&self.engine, &other.engine)
            .then_with(|| natural_cmp(&self.variant, &other.variant))
    }
}

impl PartialOrd for Configuration {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Configuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.engine, self.variant)
    }
}

/// A workload and a configuration, ordered by workload then
/// configuration (natural order throughout).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// Workload name.
    pub workload: String,
    /// Engine and variant.
    pub configuration: Configuration,
}

impl Ord for GroupKey {
    fn cmp(&self, other: &Self) -> Ordering {
        natural_cmp(&self.workload, &other.workload)
            .then_with(|| self.configuration.cmp(&other.configuration))
    }
}

impl PartialOrd for GroupKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The blocks of every (workload, engine, variant) without the warm-up
/// run, in order of [`GroupKey`]; within a group, blocks keep their input
/// order. A group whose only blocks are warm-up blocks is absent.
pub fn group_measured(metrics: &[BlockMetrics]) -> BTreeMap<GroupKey, Vec<BlockMetrics>> {
    let mut groups: BTreeMap<GroupKey, Vec<BlockMetrics>> = BTreeMap::new();
    for block in metrics.iter().filter(|m| m.run != WARMUP_RUN) {
        groups
            .entry(block.group_key())
            .or_default()
            .push(block.clone());
    }
    groups
}

/// Parses one line: `Ok(None)` for a blank line or an event record (an
/// object with an `"event"` field, such as the peer's `load` summary),
/// `Err` with a message for anything that is not a block-metrics object.
pub fn parse_metrics_line(line: &str) -> Result<Option<BlockMetrics>, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("not a JSON object".into());
    };
    if object.contains_key("event") {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| format!("not block metrics: {e}"))
}

/// Longest metrics line accepted (one block's record is a few hundred bytes).
pub const METRICS_LINE_BYTES_MAX: usize = 1 << 20;

/// Reads JSON-lines block metrics; an error names `source_name` and the
/// 1-based number of the first bad line. Blank lines and event records are
/// skipped (see [`parse_metrics_line`]).
pub fn read_metrics(
    reader: impl BufRead,
    source_name: &str,
) -> Result<Vec<BlockMetrics>, BenchError> {
    let mut out = Vec::new();
    for (index, line) in
        crate::formats::lines::bounded_lines(reader, METRICS_LINE_BYTES_MAX).enumerate()
    {
        let error = |message: String| BenchError::Metrics {
            source_name: source_name.to_string(),
            line: index + 1,
            message,
        };
        let line = line.map_err(|e| error(format!("unreadable: {e}")))?;
        if let Some(metrics) = parse_metrics_line(&line).map_err(error)? {
            out.push(metrics);
        }
    }
    Ok(out)
}

/// Reads the block metrics of a file (see [`read_metrics`]).
pub fn read_metrics_file(path: &Path) -> Result<Vec<BlockMetrics>, BenchError> {
    let file = std::fs::File::open(path).map_err(|e| BenchError::io_at("opening", path, e))?;
    read_metrics(std::io::BufReader::new(file), &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"engine":"ubt","variant":"gd6","workload":"erc20_balanceof","run":2,"block":1,
        "gas_used":16777216,"txs":1,"accounts_read":2,"slots_read":6141,"slots_written":0,
        "accounts_written":0,"cache_misses":6141,"execution_ms":31.2,"state_read_ms":420.5,
        "state_hash_ms":0.3,"commit_ms":1.1,"total_ms":453.1,"mgas_per_s":37.03,
        "bytes_read":25153536,"bytes_written":0,"root":"0x01"}"#;

    fn one_line(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join("")
    }

    #[test]
    fn the_documented_example_parses_and_derives() {
        let m = parse_metrics_line(&one_line(LINE)).unwrap().unwrap();
        assert_eq!(m.variant, "gd6");
        assert_eq!(m.bytes_read, Some(25_153_536));
        assert_eq!(m.ms_per_slot_read(), Some(420.5 / 6141.0));
        assert_eq!(m.ms_per_slot_total(), Some(453.1 / 6141.0));
        assert_eq!(m.ms_per_cache_miss(), Some(420.5 / 6141.0));
        let again: BlockMetrics =
            serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(again, m);
    }

    #[test]
    fn optional_and_unknown_fields() {
        let line = one_line(LINE)
            .replace(r#""bytes_read":25153536,"#, r#""extra":{"x":1},"#)
            .replace(r#""bytes_written":0"#, r#""bytes_written":null"#);
        let m = parse_metrics_line(&line).unwrap().unwrap();
        assert_eq!((m.bytes_read, m.bytes_written), (None, None));
    }

    #[test]
    fn zero_denominators_give_none() {
        let mut m = parse_metrics_line(&one_line(LINE)).unwrap().unwrap();
        m.slots_read = 0;
        m.cache_misses = 0;
        assert_eq!(m.ms_per_slot_read(), None);
        assert_eq!(m.ms_per_slot_total(), None);
        assert_eq!(m.ms_per_cache_miss(), None);
    }

    #[test]
    fn blank_lines_and_events_are_skipped() {
        assert_eq!(parse_metrics_line("   "), Ok(None));
        let event = r#"{"event":"load","engine":"geth-mpt","variant":"x","records":3,"seconds":1.5,"root":"0x","disk_bytes":9}"#;
        assert_eq!(parse_metrics_line(event), Ok(None));
        assert!(parse_metrics_line("[1]")
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(parse_metrics_line("{").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn groups_drop_the_warmup_and_sort_naturally() {
        let base = parse_metrics_line(&one_line(LINE)).unwrap().unwrap();
        let mut metrics = Vec::new();
        for variant in ["gd10", "gd2"] {
            for run in 1..=3 {
                let mut m = base.clone();
                m.variant = variant.into();
                m.run = run;
                metrics.push(m);
            }
        }
        let groups = group_measured(&metrics);
        let variants: Vec<&str> = groups
            .keys()
            .map(|k| k.configuration.variant.as_str())
            .collect();
        assert_eq!(variants, ["gd2", "gd10"]);
        assert!(groups.values().all(|blocks| blocks.len() == 2));
        assert!(groups.values().flatten().all(|m| m.run != WARMUP_RUN));
    }
}

//! The go-ethereum peer (`peers/geth`): built with the machine's Go when
//! there is one, loaded once per configuration, run on the same workload
//! directories as ubt; its metrics lines join ubt's.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::formats::metrics::{parse_metrics_line, BlockMetrics};
use crate::BenchError;

/// Where the peer's Go sources are in this repository: found through the
/// manifest directory cargo gives at run time (`cargo run`, `cargo test`),
/// then the current directory and its ancestors, then the manifest
/// directory this crate was compiled in (a build cache shared between
/// clones can hold a path of another clone, hence the run-time lookups
/// first).
pub fn default_source_dir() -> PathBuf {
    const RELATIVE: &str = "peers/geth";
    let compiled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        let dir = PathBuf::from(dir);
        roots.extend([dir.join("../.."), dir]);
    }
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    roots.push(compiled.clone());
    roots
        .into_iter()
        .map(|root| root.join(RELATIVE))
        .find(|dir| dir.join("go.mod").is_file())
        .unwrap_or_else(|| compiled.join(RELATIVE))
}

/// One of the peer's engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GethEngine {
    /// go-ethereum's binary trie (`trie/bintrie`) at a group depth.
    BinTrie {
        /// Levels per serialized node group (1..=8; geth's default is 5).
        group_depth: u8,
    },
    /// go-ethereum's Merkle Patricia tries with pathdb's flat state.
    Mpt,
}

impl GethEngine {
    /// The `engine` field of its metrics.
    pub fn engine(self) -> &'static str {
        match self {
            GethEngine::BinTrie { .. } => "geth-bintrie",
            GethEngine::Mpt => "geth-mpt",
        }
    }

    /// The `variant` field of its metrics.
    pub fn variant(self) -> String {
        match self {
            GethEngine::BinTrie { group_depth } => format!("gd{group_depth}"),
            GethEngine::Mpt => "mpt".into(),
        }
    }

    fn args(self) -> Vec<String> {
        match self {
            GethEngine::BinTrie { group_depth } => vec![
                "--engine".into(),
                "bintrie".into(),
                "--group-depth".into(),
                group_depth.to_string(),
            ],
            GethEngine::Mpt => vec!["--engine".into(), "mpt".into()],
        }
    }
}

impl fmt::Display for GethEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.engine(), self.variant())
    }
}

/// `go version`, or `None` when Go is not installed.
pub fn go_version() -> Option<String> {
    let output = Command::new("go").arg("version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Builds the peer from `source` into `bin_dir/geth-peer` (Go's own cache
/// makes a rebuild take seconds) and returns the binary's path.
pub fn build(source: &Path, bin_dir: &Path) -> Result<PathBuf, BenchError> {
    if !source.join("go.mod").is_file() {
        return Err(BenchError::InvalidOptions {
            what: format!(
                "no go-ethereum peer sources (go.mod) in {}; pass --peer-source DIR",
                source.display()
            ),
        });
    }
    std::fs::create_dir_all(bin_dir).map_err(|e| BenchError::io_at("creating", bin_dir, e))?;
    let bin = bin_dir.join("geth-peer");
    let bin_abs = std::path::absolute(&bin).map_err(|e| BenchError::io_at("resolving", &bin, e))?;
    let output = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin_abs)
        .arg("./")
        .current_dir(source)
        .output()
        .map_err(|e| BenchError::io_at("running go build in", source, e))?;
    if !output.status.success() {
        return Err(BenchError::Engine {
            what: format!("building the go-ethereum peer in {}", source.display()),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(bin_abs)
}

/// What the peer's `load` printed.
#[derive(Clone, Debug)]
pub struct LoadOutcome {
    /// The root after the load.
    pub root: String,
    /// Records loaded.
    pub records: u64,
    /// Wall time including the process start.
    pub seconds: f64,
}

fn run_peer(bin: &Path, args: &[String], what: &str) -> Result<String, BenchError> {
    let output = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::io_at("starting", bin, e))?;
    if !output.status.success() {
        return Err(BenchError::Engine {
            what: what.to_owned(),
            message: format!(
                "geth-peer {} exited with {}: {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    String::from_utf8(output.stdout).map_err(|_| BenchError::Engine {
        what: what.to_owned(),
        message: "geth-peer printed bytes that are not UTF-8".into(),
    })
}

/// Loads the state of `workload` into the new database `db`.
pub fn load(
    bin: &Path,
    engine: GethEngine,
    db: &Path,
    workload: &Path,
) -> Result<LoadOutcome, BenchError> {
    let started = Instant::now();
    let mut args = vec!["load".to_owned()];
    args.extend(engine.args());
    args.extend(["--db".into(), db.display().to_string()]);
    args.extend(["--workload".into(), workload.display().to_string()]);
    let what = format!("loading the state into {engine}");
    let stdout = run_peer(bin, &args, &what)?;
    for line in stdout.lines() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if value.get("event").and_then(|e| e.as_str()) == Some("load") {
            return Ok(LoadOutcome {
                root: value["root"].as_str().unwrap_or_default().to_owned(),
                records: value["records"].as_u64().unwrap_or_default(),
                seconds: started.elapsed().as_secs_f64(),
            });
        }
    }
    Err(BenchError::Engine {
        what,
        message: "geth-peer load printed no load event".into(),
    })
}

/// Runs the blocks of `workload` on the loaded database `db` as run
/// `run`, relabelling the workload as `workload_name`.
pub fn run(
    bin: &Path,
    engine: GethEngine,
    db: &Path,
    workload: &Path,
    workload_name: &str,
    run: u32,
) -> Result<Vec<BlockMetrics>, BenchError> {
    let mut args = vec!["run".to_owned()];
    args.extend(engine.args());
    args.extend(["--db".into(), db.display().to_string()]);
    args.extend(["--workload".into(), workload.display().to_string()]);
    args.extend(["--run".into(), run.to_string()]);
    let what = format!("running {engine} on {workload_name}");
    let stdout = run_peer(bin, &args, &what)?;
    let mut out = Vec::new();
    for (index, line) in stdout.lines().enumerate() {
        let parsed = parse_metrics_line(line).map_err(|message| BenchError::Metrics {
            source_name: format!("geth-peer run ({engine})"),
            line: index + 1,
            message,
        })?;
        if let Some(mut metrics) = parsed {
            metrics.workload = workload_name.to_owned();
            out.push(metrics);
        }
    }
    Ok(out)
}

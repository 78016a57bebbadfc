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
    /// go-ethereum's `state.StateDB` over ubt (`bindings/go/gethstate`);
    /// needs the peer built with the `ubt` tag, which links ubt's static
    /// library.
    Ubt {
        /// ubt's group depth (1..=8).
        group_depth: u8,
        /// Whether ubt keeps its flat index of account values (account
        /// states only; the runner sets it from `--flat-index`, as for
        /// ubt's own configurations).
        flat: bool,
    },
}

impl GethEngine {
    /// The `engine` field of its metrics.
    pub fn engine(self) -> &'static str {
        match self {
            GethEngine::BinTrie { .. } => "geth-bintrie",
            GethEngine::Mpt => "geth-mpt",
            GethEngine::Ubt { .. } => "geth-ubt",
        }
    }

    /// The engine named `name` (`geth-bintrie`, `geth-mpt`, `geth-ubt`),
    /// with the binary trie at `bintrie_group_depth` and ubt at
    /// `ubt_group_depth`.
    pub fn from_name(name: &str, bintrie_group_depth: u8, ubt_group_depth: u8) -> Option<Self> {
        match name {
            "geth-bintrie" => Some(GethEngine::BinTrie {
                group_depth: bintrie_group_depth,
            }),
            "geth-mpt" => Some(GethEngine::Mpt),
            "geth-ubt" => Some(GethEngine::Ubt {
                group_depth: ubt_group_depth,
                flat: true,
            }),
            _ => None,
        }
    }

    /// Whether its state is the EIP-7864 binary trie, whose roots must be
    /// ubt's (go-ethereum's binary trie, and geth's state layer over ubt).
    pub fn binary_trie(self) -> bool {
        matches!(self, GethEngine::BinTrie { .. } | GethEngine::Ubt { .. })
    }

    /// Whether the peer must be built with ubt (the `ubt` build tag).
    pub fn needs_ubt(self) -> bool {
        matches!(self, GethEngine::Ubt { .. })
    }

    /// The group depth it is configured with (`None` for the MPT).
    pub fn group_depth(self) -> Option<u8> {
        match self {
            GethEngine::BinTrie { group_depth } | GethEngine::Ubt { group_depth, .. } => {
                Some(group_depth)
            }
            GethEngine::Mpt => None,
        }
    }

    /// The `variant` field of its metrics.
    pub fn variant(self) -> String {
        match self {
            GethEngine::BinTrie { group_depth } => format!("gd{group_depth}"),
            GethEngine::Mpt => "mpt".into(),
            GethEngine::Ubt { group_depth, flat } => {
                format!("gd{group_depth}{}", if flat { "" } else { "-noflat" })
            }
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
            GethEngine::Ubt { group_depth, flat } => vec![
                "--engine".into(),
                "ubt".into(),
                "--group-depth".into(),
                group_depth.to_string(),
                "--flat-index".into(),
                if flat { "on" } else { "off" }.into(),
            ],
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
/// makes a rebuild take seconds) and returns the binary's path. With
/// `with_ubt` (a `geth-ubt` peer runs), ubt's static library is built
/// first ([`build_ubt_library`]) and the peer with `go build -tags ubt`;
/// otherwise with a plain `go build`, which needs no Rust library.
pub fn build(source: &Path, bin_dir: &Path, with_ubt: bool) -> Result<PathBuf, BenchError> {
    if !source.join("go.mod").is_file() {
        return Err(BenchError::InvalidOptions {
            what: format!(
                "no go-ethereum peer sources (go.mod) in {}; pass --peer-source DIR",
                source.display()
            ),
        });
    }
    if with_ubt {
        build_ubt_library(source)?;
    }
    std::fs::create_dir_all(bin_dir).map_err(|e| BenchError::io_at("creating", bin_dir, e))?;
    let bin = bin_dir.join("geth-peer");
    let bin_abs = std::path::absolute(&bin).map_err(|e| BenchError::io_at("resolving", &bin, e))?;
    let output = Command::new("go")
        .args(go_build_args(with_ubt))
        .arg(&bin_abs)
        .arg("./")
        .current_dir(source)
        .output()
        .map_err(|e| BenchError::io_at("running go build in", source, e))?;
    if !output.status.success() {
        return Err(BenchError::Engine {
            what: format!(
                "building the go-ethereum peer in {}{}",
                source.display(),
                if with_ubt {
                    " (go build -tags ubt)"
                } else {
                    ""
                }
            ),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(bin_abs)
}

/// `go build`'s arguments up to the output path.
fn go_build_args(with_ubt: bool) -> Vec<&'static str> {
    if with_ubt {
        vec!["build", "-tags", "ubt", "-o"]
    } else {
        vec!["build", "-o"]
    }
}

/// The script that builds the static library the ubt bindings link:
/// `bindings/go/build.sh`, two levels above the peer's sources.
pub fn ubt_build_script(source: &Path) -> PathBuf {
    source.join("../../bindings/go/build.sh")
}

/// Builds ubt's static library for the Go bindings (`bindings/go/build.sh`:
/// `cargo build --release -p ubt-ffi`, copied into `bindings/go/lib`).
pub fn build_ubt_library(source: &Path) -> Result<(), BenchError> {
    let script = ubt_build_script(source);
    if !script.is_file() {
        return Err(BenchError::InvalidOptions {
            what: format!(
                "geth-ubt needs ubt's Go bindings: no {} next to the peer sources in {}",
                script.display(),
                source.display()
            ),
        });
    }
    let output = Command::new("sh")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::io_at("running", &script, e))?;
    if !output.status.success() {
        return Err(BenchError::Engine {
            what: format!(
                "building ubt's static library for geth-ubt ({})",
                script.display()
            ),
            message: format!(
                "{} exited with {}: {}",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_by_name() {
        let ubt = GethEngine::from_name("geth-ubt", 5, 6).unwrap();
        assert_eq!(
            ubt,
            GethEngine::Ubt {
                group_depth: 6,
                flat: true
            }
        );
        assert_eq!(ubt.engine(), "geth-ubt");
        assert_eq!(ubt.variant(), "gd6");
        assert_eq!(ubt.to_string(), "geth-ubt gd6");
        assert_eq!(
            ubt.args(),
            [
                "--engine",
                "ubt",
                "--group-depth",
                "6",
                "--flat-index",
                "on"
            ]
            .map(String::from)
        );
        let noflat = GethEngine::Ubt {
            group_depth: 6,
            flat: false,
        };
        assert_eq!(noflat.variant(), "gd6-noflat");
        assert_eq!(
            noflat.args(),
            [
                "--engine",
                "ubt",
                "--group-depth",
                "6",
                "--flat-index",
                "off"
            ]
            .map(String::from)
        );
        assert!(ubt.binary_trie() && ubt.needs_ubt());
        assert_eq!(ubt.group_depth(), Some(6));

        let bintrie = GethEngine::from_name("geth-bintrie", 5, 6).unwrap();
        assert_eq!(bintrie, GethEngine::BinTrie { group_depth: 5 });
        assert!(bintrie.binary_trie() && !bintrie.needs_ubt());
        let mpt = GethEngine::from_name("geth-mpt", 5, 6).unwrap();
        assert_eq!(mpt, GethEngine::Mpt);
        assert!(!mpt.binary_trie() && !mpt.needs_ubt());
        assert_eq!(mpt.group_depth(), None);
        for name in [GethEngine::BinTrie { group_depth: 3 }, GethEngine::Mpt, ubt] {
            assert_eq!(
                GethEngine::from_name(name.engine(), 3, 6),
                Some(name),
                "{name}"
            );
        }
        assert_eq!(GethEngine::from_name("geth", 5, 6), None);
        assert_eq!(GethEngine::from_name("ubt", 5, 6), None);
    }

    #[test]
    fn build_tags_only_for_ubt() {
        assert_eq!(go_build_args(false), ["build", "-o"]);
        assert_eq!(go_build_args(true), ["build", "-tags", "ubt", "-o"]);
        assert!(ubt_build_script(Path::new("/r/peers/geth"))
            .ends_with("peers/geth/../../bindings/go/build.sh"));
    }

    #[test]
    fn missing_bindings_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("ubt-bench-geth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = build_ubt_library(&dir).unwrap_err().to_string();
        assert!(err.contains("geth-ubt needs ubt's Go bindings"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! `ubt bench` refuses bad arguments with a one-line error naming the
//! problem and exit code 2, before doing any work.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn ubt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ubt"))
        .args(args)
        .output()
        .expect("run ubt")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ubt-bench-args-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Exit 2, nothing on stdout, one error line on stderr containing `needle`.
fn refused(args: &[&str], needle: &str) {
    let out = ubt(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed {:?}", out.stdout);
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

/// A tiny chain-like state, generated once per test that needs it.
fn state(name: &str) -> PathBuf {
    let dir = scratch(name);
    let out = ubt(&[
        "bench",
        "gen",
        "--out",
        dir.to_str().unwrap(),
        "--entries",
        "5000",
        "--holders",
        "100",
        "--sequential-slots",
        "100",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn unknown_workloads_and_shapes_are_refused() {
    let state = state("workloads");
    let s = state.to_str().unwrap();
    refused(
        &[
            "bench",
            "run",
            "--state",
            s,
            "--workloads",
            "erc20_transfer",
        ],
        "unknown workload",
    );
    refused(
        &[
            "bench",
            "run",
            "--state",
            s,
            "--workloads",
            "erc20_mixed_40_60",
        ],
        "unknown workload",
    );
    refused(&["bench", "run", "--state", s, "--shape", "huge"], "huge");
    let _ = std::fs::remove_dir_all(state);
}

#[test]
fn blocks_the_state_cannot_hold_are_refused_before_loading() {
    let state = state("holders");
    let out = scratch("holders-out");
    let (s, o) = (state.to_str().unwrap(), out.to_str().unwrap());
    // 100 holders cannot feed a 6,000-call balanceOf block.
    refused(
        &[
            "bench",
            "run",
            "--state",
            s,
            "--out",
            o,
            "--workloads",
            "erc20_balanceof",
            "--peers",
            "none",
        ],
        "holders",
    );
    // 100 preset slots cannot feed a 7,800-slot load block.
    refused(
        &[
            "bench",
            "run",
            "--state",
            s,
            "--out",
            o,
            "--workloads",
            "sload_seq",
            "--peers",
            "none",
        ],
        "preset slots",
    );
    assert!(!out.join("db").exists(), "nothing was loaded");
    let _ = std::fs::remove_dir_all(state);
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn missing_states_and_bad_counts_are_refused() {
    let missing = scratch("missing");
    let m = missing.to_str().unwrap();
    refused(&["bench", "run", "--state", m], "workload.json");
    refused(
        &["bench", "sweep", "--state", m, "--group-depths", "0..3"],
        "group-depths",
    );
    refused(
        &["bench", "sweep", "--state", m, "--group-depths", "2,9"],
        "group-depths",
    );
    refused(&["bench", "run", "--state", m, "--group-depth", "9"], "9");
    refused(&["bench", "gen", "--out", m, "--entries", "0"], "--entries");
    refused(
        &[
            "bench",
            "gen",
            "--out",
            m,
            "--mode",
            "raw",
            "--state",
            "generated",
        ],
        "chain mode only",
    );
    refused(&["bench", "--entries", "1000"], "--entries");
    refused(
        &["bench", "report", "--metrics", m, "--out", m],
        "no such file",
    );
    let state = state("counts");
    let s = state.to_str().unwrap();
    refused(
        &[
            "bench", "run", "--state", s, "--runs", "0", "--peers", "none",
        ],
        "--runs",
    );
    refused(
        &[
            "bench", "run", "--state", s, "--blocks", "0", "--peers", "none",
        ],
        "--blocks",
    );
    let _ = std::fs::remove_dir_all(state);
}

#[test]
fn malformed_metrics_are_refused_with_their_line() {
    let dir = scratch("metrics");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("metrics.jsonl");
    std::fs::write(&file, "{\"engine\":\"ubt\"}\n").unwrap();
    refused(
        &[
            "bench",
            "report",
            "--metrics",
            file.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ],
        "line 1",
    );
    let _ = std::fs::remove_dir_all(dir);
}

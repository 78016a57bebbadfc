//! Runs the full default device probe ([`ubt_bench::measure::device::probe`]) and
//! prints its result as JSON.
//!
//! ```text
//! cargo run --release -p ubt-bench --example device_probe [DIR]
//! ```
//!
//! `DIR` defaults to `/work/device-probe-tmp`. A directory the probe
//! creates is removed afterwards; in a directory that already existed only
//! the scratch file is removed.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::path::PathBuf;
use std::process::ExitCode;

use ubt_bench::measure::device::{probe, DeviceProbeOptions, PROBE_FILE_NAME};

fn main() -> ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/device-probe-tmp"));
    let existed = dir.exists();
    let result = probe(&dir, &DeviceProbeOptions::default());
    let cleanup = if existed {
        std::fs::remove_file(dir.join(PROBE_FILE_NAME))
    } else {
        std::fs::remove_dir_all(&dir)
    };
    if let Err(e) = cleanup {
        eprintln!("warning: cleaning up {}: {e}", dir.display());
    }
    match result {
        Ok(limits) => {
            match serde_json::to_string_pretty(&limits) {
                Ok(json) => println!("{json}"),
                Err(e) => {
                    eprintln!("error: serialising the result: {e}");
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

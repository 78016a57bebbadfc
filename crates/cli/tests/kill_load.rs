//! Adversarial review, finding 10: `ubt load` of more than 1M writes into
//! an existing database was committed in chunks, so a `kill -9` mid-run
//! recovered to intermediate chunk states (the test loads 1.5M writes: the
//! old chunking committed after the first 1M). A load is now one atomic block:
//! killed at any moment, the database opens at the state before the load
//! or after it, and `verify` is clean.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::TempDir;
use ubt_spec::rng::SplitMix64;

fn ubt(args: &[&str]) -> Output {
    common::run_ubt(args, None)
}

fn stdout_line(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// `n` JSON lines of keys and values from the seeded generator.
fn lines(n: usize, seed: u64) -> String {
    let mut rng = SplitMix64::new(seed);
    let mut next = || rng.next_u64();
    let mut out = String::with_capacity(n * 140);
    for _ in 0..n {
        let key: String = (0..4).map(|_| format!("{:016x}", next())).collect();
        let value: String = (0..4).map(|_| format!("{:016x}", next())).collect();
        out += &format!("{{\"key\":\"0x{key}\",\"value\":\"0x{value}\"}}\n");
    }
    out
}

fn text(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[test]
fn a_load_killed_at_any_moment_lands_whole_or_not_at_all() {
    let dir = TempDir::new("kill-load");
    let base_input = dir.0.join("base.jsonl");
    let load_input = dir.0.join("load.jsonl");
    let union_input = dir.0.join("union.jsonl");
    let base = lines(20_000, 1);
    let load = lines(1_500_000, 2);
    std::fs::write(&base_input, &base).expect("write");
    std::fs::write(&load_input, &load).expect("write");
    let mut union = std::fs::File::create(&union_input).expect("create");
    union.write_all(base.as_bytes()).expect("write");
    union.write_all(load.as_bytes()).expect("write");
    drop(union);
    let root_before = stdout_line(&ubt(&["root", "--input", text(&base_input)]));
    let root_after = stdout_line(&ubt(&["root", "--input", text(&union_input)]));

    // How long an uninterrupted load takes, to spread the kills over it.
    let pristine = dir.0.join("pristine");
    assert_eq!(
        stdout_line(&ubt(&[
            "load",
            "--db",
            text(&pristine),
            "--input",
            text(&base_input)
        ])),
        root_before
    );
    let timing = dir.0.join("timing");
    copy_dir(&pristine, &timing);
    let started = Instant::now();
    let loaded = ubt(&["load", "--db", text(&timing), "--input", text(&load_input)]);
    let full = started.elapsed();
    assert_eq!(stdout_line(&loaded), root_after);

    let kills = 12u32;
    let mut landed = [0u32; 2];
    for k in 0..kills {
        let db = dir.0.join(format!("db{k}"));
        copy_dir(&pristine, &db);
        let mut child = Command::new(env!("CARGO_BIN_EXE_ubt"))
            .args(["load", "--db", text(&db), "--input", text(&load_input)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(
            full.mul_f64(1.1 * f64::from(k) / f64::from(kills)) + Duration::from_millis(5),
        );
        let _ = child.kill();
        let _ = child.wait();
        let root = stdout_line(&ubt(&["root", "--db", text(&db)]));
        assert!(
            root == root_before || root == root_after,
            "kill {k} at {:?} of {full:?}: the database opened at {root}, neither before nor after the load",
            full.mul_f64(1.1 * f64::from(k) / f64::from(kills))
        );
        landed[usize::from(root == root_after)] += 1;
        let verified = ubt(&["verify", "--db", text(&db)]);
        assert!(verified.status.success(), "kill {k}: verify failed");
        let _ = std::fs::remove_dir_all(&db);
    }
    println!(
        "{kills} kills over a {full:?} load: {} before the load, {} after",
        landed[0], landed[1]
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for entry in std::fs::read_dir(from).expect("list") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

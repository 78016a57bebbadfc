//! The `ubt` command-line contract: `ubt root` gives geth's roots for vector
//! inputs (from a file and from stdin, later lines overwriting earlier ones),
//! `ubt key` gives geth's keys, and every kind of bad input gets a one-line
//! error, exit code 2, no output and no panic.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn ubt(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ubt"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ubt");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("wait ubt")
}

fn repo_file(relative: &str) -> PathBuf {
    manifest_dir().join("../..").join(relative)
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ubt-cli-test-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("write temp file");
    path
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn vectors(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(repo_file(&format!("test-vectors/{name}"))).expect("read");
    serde_json::from_str(&text).expect("json")
}

fn line(key: &str, value: &str) -> String {
    format!("{{\"key\":\"{key}\",\"value\":\"{value}\"}}\n")
}

#[test]
fn root_of_plain_insert_vectors_matches_geth() {
    let tries = vectors("tries.json");
    let mut checked = 0;
    for case in tries["cases"].as_array().expect("cases") {
        let steps = case["steps"].as_array().expect("steps");
        if !steps.iter().all(|s| s["op"] == "insert") {
            continue;
        }
        let input: String = steps
            .iter()
            .map(|s| {
                line(
                    s["key"].as_str().expect("key"),
                    s["value"].as_str().expect("value"),
                )
            })
            .collect();
        let root = case["root"].as_str().expect("root");
        let path = temp_file("vector.jsonl", &input);
        let from_file = ubt(&["root", "--input", path.to_str().expect("path")], None);
        std::fs::remove_file(&path).ok();
        assert!(
            from_file.status.success(),
            "{}",
            String::from_utf8_lossy(&from_file.stderr)
        );
        assert_eq!(stdout(&from_file), root, "case {}", case["name"]);
        let from_stdin = ubt(&["root", "--input", "-"], Some(&input));
        assert_eq!(stdout(&from_stdin), root, "case {} via stdin", case["name"]);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} plain-insert cases found");
}

#[test]
fn bundled_example_gives_the_generated_1000_root() {
    let tries = vectors("tries.json");
    let case = tries["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == "generated_1000")
        .expect("generated_1000");
    let example = repo_file("examples/state.jsonl");
    let out = ubt(&["root", "--input", example.to_str().expect("path")], None);
    assert_eq!(stdout(&out), case["root"].as_str().expect("root"));
}

#[test]
fn later_lines_overwrite_earlier_ones() {
    let key = format!("0x{}", "11".repeat(32));
    let first = format!("0x{}", "22".repeat(32));
    let second = format!("0x{}", "33".repeat(32));
    let both = ubt(
        &["root", "--input", "-"],
        Some(&(line(&key, &first) + &line(&key, &second))),
    );
    let last_only = ubt(&["root", "--input", "-"], Some(&line(&key, &second)));
    let first_only = ubt(&["root", "--input", "-"], Some(&line(&key, &first)));
    assert_eq!(stdout(&both), stdout(&last_only));
    assert_ne!(stdout(&both), stdout(&first_only));
}

#[test]
fn key_command_matches_geth() {
    let keys = vectors("keys.json");
    let basic = &keys["basic_data_key"][1];
    let out = ubt(
        &[
            "key",
            "--address",
            basic["address"].as_str().expect("a"),
            "--basic-data",
        ],
        None,
    );
    assert_eq!(stdout(&out), basic["key"].as_str().expect("key"));
    let code_hash = &keys["code_hash_key"][1];
    let address = code_hash["address"].as_str().expect("a");
    let out = ubt(&["key", "--address", address, "--code-hash"], None);
    assert_eq!(stdout(&out), code_hash["key"].as_str().expect("key"));
    for case in keys["storage_slot_key"].as_array().expect("slots") {
        let args = [
            "key",
            "--address",
            case["address"].as_str().expect("a"),
            "--slot",
        ];
        let out = ubt(
            &[&args[..], &[case["slot"].as_str().expect("slot")]].concat(),
            None,
        );
        assert_eq!(
            stdout(&out),
            case["key"].as_str().expect("key"),
            "slot {}",
            case["slot"]
        );
    }
    for case in keys["code_chunk_key"].as_array().expect("chunks") {
        let chunk = case["chunk_id"].as_u64().expect("chunk").to_string();
        let address = case["address"].as_str().expect("a");
        let out = ubt(&["key", "--address", address, "--chunk", &chunk], None);
        assert_eq!(
            stdout(&out),
            case["key"].as_str().expect("key"),
            "chunk {chunk}"
        );
    }
    // A short slot number means the same 256-bit value.
    let address = "0x00000000000000000000000000000000deadbeef";
    let short = ubt(&["key", "--address", address, "--slot", "0x5"], None);
    let long = format!("0x{:0>64}", "5");
    let full = ubt(&["key", "--address", address, "--slot", &long], None);
    assert_eq!(stdout(&short), stdout(&full));
}

fn assert_bad_input(output: &Output, expected_fragment: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        output.stdout.is_empty(),
        "stdout not empty: {:?}",
        output.stdout
    );
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(
        stderr.contains(expected_fragment),
        "expected {expected_fragment:?} in {stderr:?}"
    );
}

#[test]
fn bad_input_lines_exit_2_with_the_line_number() {
    let good = line(
        &format!("0x{}", "11".repeat(32)),
        &format!("0x{}", "22".repeat(32)),
    );
    let cases = [
        (
            format!(
                "{good}{{\"key\":\"0xzz{}\",\"value\":\"0x00\"}}\n",
                "1".repeat(62)
            ),
            ":2: invalid hex",
        ),
        (
            format!("{good}\n{}", line("0x12", "0x34")),
            ":3: \"key\" must be 32 bytes",
        ),
        (
            line(&format!("0x{}", "11".repeat(32)), "0x1234"),
            ":1: \"value\" must be 32 bytes",
        ),
        (
            "{\"key\":\"0x00\",\"value\":\"0x00\",\"foo\":1}\n".to_string(),
            ":1: unknown field \"foo\"",
        ),
        (
            format!("{{\"key\":\"0x{}\"}}\n", "11".repeat(32)),
            ":1: missing field \"value\"",
        ),
        (
            "this is not json\n".to_string(),
            ":1: expected a JSON object",
        ),
        ("{\"key\":\n".to_string(), ":1: not a JSON object"),
        ("[1,2]\n".to_string(), ":1: expected a JSON object"),
    ];
    for (input, fragment) in cases {
        let out = ubt(&["root", "--input", "-"], Some(&input));
        assert_bad_input(&out, fragment);
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "one line"
        );
    }
}

#[test]
fn bad_arguments_exit_2() {
    let missing = ubt(&["root", "--input", "/nonexistent/ubt-input.jsonl"], None);
    assert_bad_input(&missing, "cannot read /nonexistent/ubt-input.jsonl");
    let address = "0x00000000000000000000000000000000deadbeef";
    assert_bad_input(
        &ubt(&["key", "--address", "0x1234", "--basic-data"], None),
        "--address",
    );
    assert_bad_input(
        &ubt(&["key", "--address", address, "--slot", "0xgg"], None),
        "--slot",
    );
    assert_bad_input(
        &ubt(&["key", "--address", address, "--slot", "5"], None),
        "--slot",
    );
    let both = ubt(
        &["key", "--address", address, "--basic-data", "--code-hash"],
        None,
    );
    assert_eq!(both.status.code(), Some(2));
    let neither = ubt(&["key", "--address", address], None);
    assert_eq!(neither.status.code(), Some(2));
}

/// This crate's directory: cargo's run-time value first (a build cache
/// shared between clones may hold a binary compiled in another clone),
/// the compile-time one otherwise.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

//! Hostile and malformed input to the `ubt` binary: each failure is exactly
//! one line `ubt: error: ...` on standard error with exit code 2 (bad input
//! or usage) or 1 (the rest), nothing on standard output, and no panic.
//!
//! Covers input without newlines (a 10 MB line in a file and on standard
//! input, `/dev/zero`), text that is not UTF-8, binary files, a leading
//! byte-order mark (accepted), look-alike hex digits, JSON arrays as
//! entries, empty path arguments, control characters in paths and in input
//! text, and clap's usage errors.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::process::Output;

mod common;

use common::{run_ubt as ubt, stderr_of, text, TempDir as Dir};

/// A temporary directory of this test file, whose paths are text.
struct TempDir(Dir);

impl TempDir {
    fn new() -> TempDir {
        TempDir(Dir::new("bad-input"))
    }

    fn path(&self, name: &str) -> String {
        text(&self.0.path(name))
    }

    fn write(&self, name: &str, bytes: &[u8]) -> String {
        self.0.write(name, bytes)
    }
}

/// The failure contract: exit `code`, empty standard output, exactly one
/// line on standard error, `ubt: error: ` first, holding every fragment.
fn assert_failure(output: &Output, code: i32, fragments: &[&str]) {
    let err = stderr_of(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err:?}");
    assert!(
        output.stdout.is_empty(),
        "stdout: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(err.ends_with('\n'), "no line end: {err:?}");
    assert_eq!(
        err.trim_end_matches('\n').split(['\n', '\r']).count(),
        1,
        "not one line: {err:?}"
    );
    assert!(err.starts_with("ubt: error: "), "{err:?}");
    for fragment in fragments {
        assert!(err.contains(fragment), "expected {fragment:?} in {err:?}");
    }
}

fn assert_success(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        stderr_of(output)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn line(key: u8, value: u8) -> String {
    format!(
        "{{\"key\":\"0x{}\",\"value\":\"0x{}\"}}\n",
        format!("{key:02x}").repeat(32),
        format!("{value:02x}").repeat(32)
    )
}

/// Ten million bytes and not one newline.
fn no_newline() -> Vec<u8> {
    vec![b'a'; 10_000_000]
}

const TOO_LONG: &str = ":1: line is longer than 65536 bytes";

#[test]
fn a_line_without_end_is_refused_at_the_bound_from_a_file() {
    let dir = TempDir::new();
    let file = dir.write("long.jsonl", &no_newline());
    let out = ubt(&["root", "--input", &file], None);
    assert_failure(&out, 2, &[&format!("{file}{TOO_LONG}")]);
    let db = dir.path("db");
    let out = ubt(&["load", "--db", &db, "--input", &file], None);
    assert_failure(&out, 2, &[&format!("{file}{TOO_LONG}")]);
    let out = ubt(
        &["export-bin", "--input", &file, "--output", &dir.path("o")],
        None,
    );
    assert_failure(&out, 2, &[TOO_LONG]);
    // A long third line is named as the third.
    let mut late = (line(1, 2) + &line(3, 4)).into_bytes();
    late.extend_from_slice(&no_newline());
    late.push(b'\n');
    let file = dir.write("late.jsonl", &late);
    let out = ubt(&["root", "--input", &file], None);
    assert_failure(&out, 2, &[":3: line is longer than 65536 bytes"]);
}

#[test]
fn a_line_without_end_is_refused_at_the_bound_from_stdin() {
    let out = ubt(&["root", "--input", "-"], Some(no_newline()));
    assert_failure(&out, 2, &[&format!("<stdin>{TOO_LONG}")]);
    let dir = TempDir::new();
    let db = dir.path("db");
    let out = ubt(&["load", "--db", &db, "--input", "-"], Some(no_newline()));
    assert_failure(&out, 2, &[&format!("<stdin>{TOO_LONG}")]);
}

/// Endless NUL bytes: refused after one bounded line, as binary data.
#[test]
fn dev_zero_is_refused_after_one_bounded_line() {
    let out = ubt(&["root", "--input", "/dev/zero"], None);
    assert_failure(&out, 2, &["/dev/zero:1: ", "not ubt binary input"]);
    let dir = TempDir::new();
    let db = dir.path("db");
    let out = ubt(&["load", "--db", &db, "--input", "/dev/zero"], None);
    assert_failure(&out, 2, &["/dev/zero:1: ", "no UBTKV001 magic"]);
    let out = ubt(
        &[
            "load",
            "--db",
            &db,
            "--input",
            "/dev/zero",
            "--format",
            "jsonl",
        ],
        None,
    );
    assert_failure(&out, 2, &["/dev/zero:1: "]);
}

#[test]
fn text_that_is_not_utf8_is_an_input_error_naming_the_line() {
    let dir = TempDir::new();
    let mut bytes = (line(1, 2) + &line(3, 4)).into_bytes();
    bytes.extend_from_slice(b"{\"key\":\"0x\xff\xfe\"}\n");
    let file = dir.write("latin.jsonl", &bytes);
    for args in [
        vec!["root", "--input", file.as_str()],
        vec!["root", "--input", "-"],
    ] {
        let stdin = (args[2] == "-").then(|| bytes.clone());
        let out = ubt(&args, stdin);
        assert_failure(&out, 2, &[":3: not UTF-8 text", "byte 0xff"]);
        assert!(
            !stderr_of(&out).contains("cannot read"),
            "{}",
            stderr_of(&out)
        );
    }
    let db = dir.path("db");
    let out = ubt(&["load", "--db", &db, "--input", &file], None);
    assert_failure(&out, 2, &[&format!("{file}:3: not UTF-8 text")]);
}

#[test]
fn binary_files_are_named_as_binary() {
    let dir = TempDir::new();
    // An ELF header: text-like magic, then NUL bytes.
    let mut elf = b"\x7fELF\x02\x01\x01\x00".to_vec();
    elf.extend_from_slice(&[0u8; 1000]);
    let file = dir.write("program", &elf);
    let expected = "not JSON lines, and not ubt binary input (no UBTKV001 magic)";
    let out = ubt(&["root", "--input", &file], None);
    assert_failure(&out, 2, &[&format!("{file}:1: "), expected, "7f 45 4c 46"]);
    let db = dir.path("db");
    let out = ubt(&["load", "--db", &db, "--input", &file], None);
    assert_failure(&out, 2, &[expected]);
    // Random-looking bytes with a newline early on.
    let noise: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let out = ubt(&["root", "--input", "-"], Some(noise));
    assert_failure(&out, 2, &["<stdin>:1: ", expected]);
    // ubt's own binary format where JSON lines are read.
    let mut bin = b"UBTKV001".to_vec();
    bin.extend_from_slice(&[7u8; 64]);
    let file = dir.write("state.bin", &bin);
    let out = ubt(&["root", "--input", &file], None);
    assert_failure(&out, 2, &[":1: ", "UBTKV001 magic", "not JSON lines"]);
}

/// Decision: a byte-order mark at the start of the input is skipped; a
/// later one is an error.
#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let plain = line(1, 2) + &line(3, 4);
    let expected = assert_success(&ubt(
        &["root", "--input", "-"],
        Some(plain.clone().into_bytes()),
    ));
    let with_bom = format!("\u{feff}{plain}").into_bytes();
    let got = assert_success(&ubt(&["root", "--input", "-"], Some(with_bom.clone())));
    assert_eq!(got, expected);
    let dir = TempDir::new();
    let file = dir.write("bom.jsonl", &with_bom);
    let db = dir.path("db");
    let loaded = assert_success(&ubt(&["load", "--db", &db, "--input", &file], None));
    assert_eq!(loaded, expected);
    let late = format!("{}\u{feff}{}", line(1, 2), line(3, 4)).into_bytes();
    let out = ubt(&["root", "--input", "-"], Some(late));
    assert_failure(&out, 2, &["<stdin>:2: "]);
}

#[test]
fn look_alike_hex_digits_are_named_and_counted_as_characters() {
    let out = ubt(
        &[
            "key",
            "--address",
            &format!("0x{}", "１".repeat(40)),
            "--basic-data",
        ],
        None,
    );
    assert_failure(&out, 2, &["--address", "'１' (U+FF11)"]);
    assert!(!stderr_of(&out).contains("120"), "{}", stderr_of(&out));
    let out = ubt(
        &[
            "key",
            "--address",
            &format!("０ｘ{}", "1".repeat(40)),
            "--basic-data",
        ],
        None,
    );
    assert_failure(&out, 2, &["must start with 0x", "'０' (U+FF10)"]);
    let address = format!("0x{}", "11".repeat(20));
    let out = ubt(&["key", "--address", &address, "--slot", "0x１２"], None);
    assert_failure(&out, 2, &["--slot", "'１' (U+FF11)"]);
    let wide = format!(
        "{{\"key\":\"0x{}\",\"value\":\"0x{}\"}}\n",
        "１２".repeat(32),
        "00".repeat(32)
    );
    let out = ubt(&["root", "--input", "-"], Some(wide.into_bytes()));
    assert_failure(&out, 2, &[":1: invalid hex in \"key\"", "'１' (U+FF11)"]);
    assert!(!stderr_of(&out).contains("192"), "{}", stderr_of(&out));
    // A short key counts its characters.
    let short = format!(
        "{{\"key\":\"0x{}\",\"value\":\"0x{}\"}}\n",
        "ab".repeat(3),
        "00".repeat(32)
    );
    let out = ubt(&["root", "--input", "-"], Some(short.into_bytes()));
    assert_failure(
        &out,
        2,
        &[":1: \"key\" must be 32 bytes (64 hex digits), got 6 hex digits"],
    );
}

#[test]
fn a_json_array_is_not_an_entry() {
    let array = format!("[\"0x{}\",\"0x{}\"]\n", "11".repeat(32), "22".repeat(32));
    let input = line(1, 2) + &array;
    let out = ubt(&["root", "--input", "-"], Some(input.into_bytes()));
    assert_failure(
        &out,
        2,
        &[":2: expected a JSON object {\"key\":", "found an array"],
    );
}

/// Empty path arguments are usage errors, refused before anything runs
/// (the bench cases would otherwise stop later, on other checks).
#[test]
fn empty_paths_are_usage_errors() {
    let key = format!("0x{}", "00".repeat(32));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["root", "--db", ""], "--db"),
        (vec!["root", "--input", ""], "--input"),
        (
            vec!["load", "--db", "", "--input", "/nonexistent/in"],
            "--db",
        ),
        (
            vec!["load", "--db", "/nonexistent/db", "--input", ""],
            "--input",
        ),
        (vec!["get", "--db", "", &key], "--db"),
        (vec!["verify", "--db", ""], "--db"),
        (vec!["stats", "--db", ""], "--db"),
        (
            vec!["export-bin", "--input", "", "--output", "/nonexistent/o"],
            "--input",
        ),
        (
            vec!["export-bin", "--input", "/nonexistent/i", "--output", ""],
            "--output",
        ),
        (vec!["bench", "--out", "", "--entries", "1"], "--out"),
        (vec!["bench", "gen", "--out", "", "--entries", "0"], "--out"),
        (
            vec!["bench", "store", "--dir", "", "--entries", "0"],
            "--dir",
        ),
        (
            vec!["bench", "store", "--json", "", "--entries", "0"],
            "--json",
        ),
        (
            vec!["bench", "overlay", "--dir", "", "--accounts", "1"],
            "--dir",
        ),
        (
            vec!["bench", "overlay", "--json", "", "--accounts", "1"],
            "--json",
        ),
        (vec!["bench", "run", "--state", ""], "--state"),
        (
            vec!["bench", "run", "--state", "/nonexistent/s", "--out", ""],
            "--out",
        ),
        (
            vec![
                "bench",
                "run",
                "--state",
                "/nonexistent/s",
                "--peer-source",
                "",
            ],
            "--peer-source",
        ),
        (vec!["bench", "sweep", "--state", ""], "--state"),
        (
            vec![
                "bench",
                "report",
                "--metrics",
                "",
                "--out",
                "/nonexistent/r",
            ],
            "--metrics",
        ),
        (
            vec![
                "bench",
                "report",
                "--metrics",
                "/nonexistent/m",
                "--out",
                "",
            ],
            "--out",
        ),
    ];
    for (args, flag) in cases {
        let out = ubt(&args, None);
        let expected = format!("a value is required for '{flag}");
        assert_failure(&out, 2, &[&expected, "(see 'ubt --help')"]);
    }
}

#[test]
fn control_characters_in_paths_and_text_stay_on_one_line() {
    let out = ubt(&["root", "--input", "/nonexistent/a\nb\rc"], None);
    assert_failure(&out, 2, &["cannot read /nonexistent/a\\nb\\rc:"]);
    let out = ubt(&["root", "--db", "/nonexistent/d\ne"], None);
    assert_failure(&out, 1, &["/nonexistent/d\\ne"]);
    let out = ubt(&["verify", "--db", "/nonexistent/f\r\ng\u{1b}[31m"], None);
    assert_failure(&out, 1, &["/nonexistent/f\\r\\ng\\u{1b}[31m"]);
    let dir = TempDir::new();
    let file = dir.write("bad\nname.jsonl", b"[]\n");
    let out = ubt(&["root", "--input", &file], None);
    assert_failure(&out, 2, &["bad\\nname.jsonl:1: expected a JSON object"]);
    // An escaped newline in a JSON field name reaches the message decoded.
    let field = format!(
        "{{\"key\":\"0x{}\",\"value\":\"0x{}\",\"x\\ny\\rz\":1}}\n",
        "11".repeat(32),
        "22".repeat(32)
    );
    let out = ubt(&["root", "--input", "-"], Some(field.into_bytes()));
    assert_failure(&out, 2, &[":1: unknown field \"x\\ny\\rz\""]);
    // A bad character in a hex argument is shown escaped.
    let out = ubt(&["key", "--address", "0x\n1", "--basic-data"], None);
    assert_failure(&out, 2, &["'\\n'"]);
}

#[test]
fn usage_errors_are_one_line() {
    let cases: [&[&str]; 7] = [
        &["root", "--frobnicate"],
        &["load", "--input", "x"],
        &["frobnicate"],
        &[],
        &["load", "--db", "d", "--input", "i", "--group-depth", "9"],
        &["root", "--input", "a", "--db", "b"],
        &["bench", "--no-such-option"],
    ];
    for args in cases {
        let out = ubt(args, None);
        assert_failure(&out, 2, &["(see 'ubt --help')"]);
        assert!(!stderr_of(&out).contains("Usage"), "{}", stderr_of(&out));
        assert!(
            !stderr_of(&out).contains("ubt: error: error:"),
            "{}",
            stderr_of(&out)
        );
    }
    let missing = ubt(&["load", "--input", "x"], None);
    assert_failure(&missing, 2, &["required", "--db <DIR>"]);
    let unknown = ubt(&["root", "--frobnicate"], None);
    assert_failure(&unknown, 2, &["'--frobnicate'"]);
    let sub = ubt(&["frobnicate"], None);
    assert_failure(&sub, 2, &["'frobnicate'"]);
}

#[test]
fn help_and_version_still_go_to_stdout() {
    for args in [&["--help"][..], &["root", "--help"], &["help"], &["-h"]] {
        let out = ubt(args, None);
        let text = assert_success(&out);
        assert!(text.contains("Usage"), "{args:?}: {text}");
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr_of(&out));
    }
    let out = ubt(&["--version"], None);
    assert!(assert_success(&out).starts_with("ubt "));
    assert!(out.stderr.is_empty());
}

//! `ubt import genesis` and `ubt import geth-dump` as a user runs them:
//! the root as the last line of standard output (go-ethereum's, from the
//! vectors), a summary on standard error, bad input as one line naming the
//! file and line or JSON path with exit 2 and no database left behind,
//! I/O failures with exit 1.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{run_ubt as ubt, stderr_of, text, TempDir};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors")
}

fn vector(path: &str) -> String {
    text(&vectors().join(path))
}

fn expected_root(file: &str, field: &str, name: &str) -> String {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(vectors().join(file)).expect("read vector"))
            .expect("vector is JSON");
    let key = if field.is_empty() { name } else { field };
    json[key].as_str().expect("a root").to_string()
}

/// Exit 0; the last line of standard output.
fn root_of(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        stderr_of(output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().last().unwrap_or_default().to_string()
}

/// Exit `code`, nothing on standard output, one line on standard error
/// holding every fragment.
fn assert_failure(output: &Output, code: i32, fragments: &[&str]) {
    let err = stderr_of(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err:?}");
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("ubt: error: "), "{err:?}");
    for fragment in fragments {
        assert!(err.contains(fragment), "expected {fragment:?} in {err:?}");
    }
}

#[test]
fn genesis_files_import_to_go_ethereums_roots() {
    let dir = TempDir::new("import-genesis");
    for file in ["mainnet.json", "hoodi.json", "edge-alloc-only.json"] {
        let db = text(&dir.path(file));
        let output = ubt(
            &[
                "import",
                "genesis",
                "--db",
                &db,
                &vector(&format!("genesis/{file}")),
            ],
            None,
        );
        assert_eq!(
            root_of(&output),
            expected_root("genesis/roots.json", "", file),
            "{file}"
        );
        assert!(
            stderr_of(&output).contains("ubt: imported "),
            "{}",
            stderr_of(&output)
        );
    }
    // From standard input, with a tiny memory bound and a group depth.
    let db = text(&dir.path("stdin"));
    let input = std::fs::read(vectors().join("genesis/sepolia.json")).expect("read");
    let output = ubt(
        &[
            "import",
            "genesis",
            "--db",
            &db,
            "--memory",
            "64KiB",
            "--group-depth",
            "3",
            "-",
        ],
        Some(input),
    );
    assert_eq!(
        root_of(&output),
        expected_root("genesis/roots.json", "", "sepolia.json")
    );
    let output = ubt(&["root", "--db", &db], None);
    assert_eq!(
        root_of(&output),
        expected_root("genesis/roots.json", "", "sepolia.json")
    );
}

#[test]
fn geth_dumps_import_to_go_ethereums_roots() {
    let dir = TempDir::new("import-dump");
    let dump = vector("geth-dump/small.jsonl");
    let want = expected_root("geth-dump/expected.json", "ubtRoot", "");
    let db = text(&dir.path("a"));
    assert_eq!(
        root_of(&ubt(&["import", "geth-dump", "--db", &db, &dump], None)),
        want
    );
    // Spilled and merged, temporary files in a directory of our choice.
    let tmp = dir.path("tmp");
    std::fs::create_dir(&tmp).expect("mkdir");
    let db = text(&dir.path("b"));
    let output = ubt(
        &[
            "import",
            "geth-dump",
            "--db",
            &db,
            "--memory",
            "65536",
            "--tmp-dir",
            &text(&tmp),
            &dump,
        ],
        None,
    );
    assert_eq!(root_of(&output), want);
    assert!(
        std::fs::read_dir(&tmp).expect("list").next().is_none(),
        "temporary files left"
    );

    // Missing preimages: an error naming the line, or skipped on request.
    let missing = vector("geth-dump/small-missing-preimages.jsonl");
    let db = dir.path("c");
    let output = ubt(&["import", "geth-dump", "--db", &text(&db), &missing], None);
    assert_failure(
        &output,
        2,
        &["small-missing-preimages.jsonl:", "missing preimage"],
    );
    assert!(!db.exists(), "a failed import left its directory");
    let output = ubt(
        &[
            "import",
            "geth-dump",
            "--skip-missing-preimages",
            "--db",
            &text(&db),
            &missing,
        ],
        None,
    );
    assert_eq!(
        root_of(&output),
        expected_root("geth-dump/expected-missing-preimages.json", "ubtRoot", "")
    );
    assert!(
        stderr_of(&output).contains("2 skipped"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn bad_input_is_one_line_with_exit_2_and_nothing_left_behind() {
    let dir = TempDir::new("import-bad");
    let db = dir.path("db");
    let db_text = text(&db);
    let negative = vector("genesis/edge-negative-balance.json");
    let output = ubt(&["import", "genesis", "--db", &db_text, &negative], None);
    assert_failure(
        &output,
        2,
        &[
            "edge-negative-balance.json: alloc.0x",
            ".balance: balance is negative",
        ],
    );
    assert!(!db.exists());

    let broken = dir.path("broken.jsonl");
    std::fs::write(&broken, "{\"root\":\"0x00\"}\n").expect("write");
    let output = ubt(
        &["import", "geth-dump", "--db", &db_text, &text(&broken)],
        None,
    );
    assert_failure(
        &output,
        2,
        &["broken.jsonl:1: root: 2 hex digits, expected 64"],
    );
    assert!(!db.exists());

    let output = ubt(
        &[
            "import",
            "genesis",
            "--db",
            &db_text,
            &text(&dir.path("absent.json")),
        ],
        None,
    );
    assert_failure(&output, 2, &["cannot read", "absent.json"]);
    assert!(!db.exists());

    for memory in ["1000", "lots", "1.5"] {
        let output = ubt(
            &[
                "import", "genesis", "--db", &db_text, "--memory", memory, &negative,
            ],
            None,
        );
        assert_failure(&output, 2, &[]);
    }
    assert!(!db.exists());

    // An existing database is refused and kept.
    let good = vector("genesis/edge-empty-account.json");
    let output = ubt(&["import", "genesis", "--db", &db_text, &good], None);
    let root = root_of(&output);
    let output = ubt(&["import", "genesis", "--db", &db_text, &good], None);
    assert_failure(&output, 2, &["already holds a database"]);
    assert_eq!(root_of(&ubt(&["root", "--db", &db_text], None)), root);

    // A temporary directory that does not exist: an I/O failure (exit 1),
    // nothing left behind.
    let db = dir.path("db2");
    let output = ubt(
        &[
            "import",
            "geth-dump",
            "--db",
            &text(&db),
            "--memory",
            "64KiB",
            "--tmp-dir",
            &text(&dir.path("no-such-dir")),
            &vector("geth-dump/small.jsonl"),
        ],
        None,
    );
    assert_failure(&output, 1, &["no-such-dir"]);
    assert!(!db.exists());
}

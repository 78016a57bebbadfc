//! The `ubt` store commands' contract: `load` (JSON lines and the binary
//! format, new and existing databases) gives geth's roots and the same root
//! as `ubt root --input`; `get`, `root --db`, `verify` and `stats` read what
//! was loaded; corruption, missing databases and bad input each get a
//! one-line error with the documented exit code, and nothing panics.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{run_ubt, stderr_of, text, TempDir as Dir};
use ubt_spec::rng::SplitMix64;

/// Runs `ubt` with `args` and optional standard input.
fn ubt(args: &[&str], stdin: Option<&[u8]>) -> Output {
    run_ubt(args, stdin.map(<[u8]>::to_vec))
}

/// A temporary directory of this test file.
struct TempDir(Dir);

impl TempDir {
    fn new() -> TempDir {
        TempDir(Dir::new("store"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> String {
        self.0.write(name, bytes)
    }
}

fn repo_file(relative: &str) -> String {
    text(&manifest_dir().join("../..").join(relative))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Asserts success and exactly one line on stdout; returns it.
fn one_line(output: &Output) -> String {
    assert!(output.status.success(), "failed: {}", stderr_of(output));
    let out = stdout(output);
    assert_eq!(out.lines().count(), 1, "stdout: {out:?}");
    out
}

/// Asserts a failure with `code`, one `ubt: error:` line on stderr that
/// contains `fragment`, and nothing on stdout.
fn assert_fails(output: &Output, code: i32, fragment: &str) {
    let err = stderr_of(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err}");
    assert!(output.stdout.is_empty(), "stdout: {}", stdout(output));
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("ubt: error: "), "{err:?}");
    assert!(err.contains(fragment), "expected {fragment:?} in {err:?}");
}

fn line(key: &str, value: &str) -> String {
    format!("{{\"key\":\"{key}\",\"value\":\"{value}\"}}\n")
}

fn hex32(byte: u8) -> String {
    format!("0x{}", format!("{byte:02x}").repeat(32))
}

/// The entries of a JSON-lines text, in order.
fn parse_jsonl(input: &str) -> Vec<(String, String)> {
    input
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            (
                v["key"].as_str().expect("key").to_string(),
                v["value"].as_str().expect("value").to_string(),
            )
        })
        .collect()
}

/// The binary format, written here independently of `ubt export-bin`.
fn to_binary(entries: &[(String, String)]) -> Vec<u8> {
    let mut out = b"UBTKV001".to_vec();
    for (key, value) in entries {
        for hex in [key, value] {
            let digits = hex.strip_prefix("0x").expect("0x");
            for i in 0..32 {
                out.push(u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).expect("hex"));
            }
        }
    }
    out
}

fn root_of_input(path: &str) -> String {
    one_line(&ubt(&["root", "--input", path], None))
}

fn load(db: &str, input: &str) -> Output {
    ubt(&["load", "--db", db, "--input", input], None)
}

fn stats_json(db: &str) -> serde_json::Value {
    let out = ubt(&["stats", "--db", db, "--json"], None);
    assert!(out.status.success(), "{}", stderr_of(&out));
    serde_json::from_slice(&out.stdout).expect("stats --json is JSON")
}

/// The plain-insert cases of test-vectors/tries.json: (name, JSON lines, root).
fn plain_insert_cases() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(repo_file("test-vectors/tries.json")).expect("read");
    let tries: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut cases = Vec::new();
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
        cases.push((
            case["name"].as_str().expect("name").to_string(),
            input,
            case["root"].as_str().expect("root").to_string(),
        ));
    }
    assert!(cases.len() >= 10, "only {} plain-insert cases", cases.len());
    cases
}

#[test]
fn load_jsonl_then_root_and_get_give_the_vectors() {
    let absent_key = hex32(0x5a);
    for (name, input, root) in plain_insert_cases() {
        let dir = TempDir::new();
        let file = dir.write("input.jsonl", input.as_bytes());
        let db = text(&dir.path("db"));
        assert_eq!(one_line(&load(&db, &file)), root, "load, case {name}");
        assert_eq!(root_of_input(&file), root, "root --input, case {name}");
        assert_eq!(
            one_line(&ubt(&["root", "--db", &db], None)),
            root,
            "root --db, case {name}"
        );
        // Later lines win, so the expected value of a key is its last one.
        let mut expected = std::collections::BTreeMap::new();
        for (key, value) in parse_jsonl(&input) {
            expected.insert(key, value);
        }
        for (key, value) in &expected {
            let got = one_line(&ubt(&["get", "--db", &db, key], None));
            assert_eq!(&got, value, "get {key}, case {name}");
        }
        if !expected.contains_key(&absent_key) {
            let got = one_line(&ubt(&["get", "--db", &db, &absent_key], None));
            assert_eq!(got, "absent", "case {name}");
        }
    }
}

#[test]
fn binary_format_gives_the_same_root() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let expected = root_of_input(&example);
    let entries = parse_jsonl(&std::fs::read_to_string(&example).expect("read example"));
    let bin = dir.write("state.bin", &to_binary(&entries));

    // Detected by its magic, named explicitly, and from standard input.
    let detected = text(&dir.path("detected"));
    assert_eq!(one_line(&load(&detected, &bin)), expected);
    let named = text(&dir.path("named"));
    let out = ubt(
        &["load", "--db", &named, "--input", &bin, "--format", "bin"],
        None,
    );
    assert_eq!(one_line(&out), expected);
    let piped = text(&dir.path("piped"));
    let bytes = std::fs::read(&bin).expect("read bin");
    let out = ubt(&["load", "--db", &piped, "--input", "-"], Some(&bytes));
    assert_eq!(one_line(&out), expected);
    assert_eq!(one_line(&ubt(&["root", "--db", &piped], None)), expected);

    // export-bin writes the same bytes as the format's definition.
    let exported = text(&dir.path("exported.bin"));
    let out = ubt(
        &["export-bin", "--input", &example, "--output", &exported],
        None,
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(std::fs::read(&exported).expect("read exported"), bytes);
}

#[test]
fn loading_into_an_existing_database_gives_the_root_of_the_union() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let first = std::fs::read_to_string(&example).expect("read example");
    let first_entries = parse_jsonl(&first);
    // New keys, overwrites of loaded keys, and a key written twice.
    let mut second = String::new();
    for byte in 0..40u8 {
        second += &line(&hex32(byte), &hex32(byte.wrapping_mul(7)));
    }
    for (key, _) in first_entries.iter().take(25) {
        second += &line(key, &hex32(0xee));
    }
    second += &line(&hex32(3), &hex32(0x99));
    let second_file = dir.write("second.jsonl", second.as_bytes());
    let union_file = dir.write("union.jsonl", (first.clone() + &second).as_bytes());
    let third: Vec<(String, String)> = (40..60u8).map(|b| (hex32(b), hex32(1))).collect();
    let third_bin = dir.write("third.bin", &to_binary(&third));
    let all = first.clone() + &second + &third.iter().map(|(k, v)| line(k, v)).collect::<String>();
    let all_file = dir.write("all.jsonl", all.as_bytes());

    let db = text(&dir.path("db"));
    let built = load(&db, &example);
    assert_eq!(one_line(&built), root_of_input(&example));
    assert!(stderr_of(&built).contains("built"), "{}", stderr_of(&built));
    let applied = load(&db, &second_file);
    assert_eq!(one_line(&applied), root_of_input(&union_file));
    assert!(
        stderr_of(&applied).contains("applied"),
        "{}",
        stderr_of(&applied)
    );
    let out = ubt(&["get", "--db", &db, &hex32(3)], None);
    assert_eq!(one_line(&out), hex32(0x99), "the later write wins");
    let out = ubt(&["get", "--db", &db, &first_entries[0].0], None);
    assert_eq!(one_line(&out), hex32(0xee));
    // The binary format into an existing database, too.
    assert_eq!(one_line(&load(&db, &third_bin)), root_of_input(&all_file));
    assert_eq!(
        one_line(&ubt(&["root", "--db", &db], None)),
        root_of_input(&all_file)
    );
    assert_eq!(
        one_line(&ubt(&["verify", "--db", &db], None))
            .split(':')
            .next(),
        Some("ok")
    );
}

#[test]
fn duplicate_keys_in_one_new_load_keep_the_last_value() {
    let dir = TempDir::new();
    let key = hex32(0x11);
    let input =
        line(&key, &hex32(0x22)) + &line(&hex32(0x10), &hex32(1)) + &line(&key, &hex32(0x33));
    let file = dir.write("dups.jsonl", input.as_bytes());
    let db = text(&dir.path("db"));
    assert_eq!(one_line(&load(&db, &file)), root_of_input(&file));
    assert_eq!(
        one_line(&ubt(&["get", "--db", &db, &key], None)),
        hex32(0x33)
    );
}

#[test]
fn group_depth_is_fixed_at_creation() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    let out = ubt(
        &[
            "load",
            "--db",
            &db,
            "--group-depth",
            "3",
            "--input",
            &example,
        ],
        None,
    );
    assert_eq!(one_line(&out), root_of_input(&example));
    assert_eq!(stats_json(&db)["group_depth"], 3);
    let again = ubt(
        &[
            "load",
            "--db",
            &db,
            "--group-depth",
            "5",
            "--input",
            &example,
        ],
        None,
    );
    assert_fails(&again, 2, "group depth 3");
    assert!(
        stderr_of(&again).contains("group depth 5"),
        "{}",
        stderr_of(&again)
    );
    // The same depth, or none, is accepted.
    let out = ubt(
        &[
            "load",
            "--db",
            &db,
            "--group-depth",
            "3",
            "--input",
            &example,
        ],
        None,
    );
    assert_eq!(one_line(&out), root_of_input(&example));
    assert_eq!(one_line(&load(&db, &example)), root_of_input(&example));
    let out = ubt(
        &[
            "load",
            "--db",
            &db,
            "--group-depth",
            "9",
            "--input",
            &example,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bucket_capacity_is_fixed_at_creation() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    let load_with = |kib: &str| {
        ubt(
            &[
                "load",
                "--db",
                &db,
                "--bucket-kib",
                kib,
                "--input",
                &example,
            ],
            None,
        )
    };
    for bad in ["3", "12", "128", "x"] {
        let out = load_with(bad);
        assert_eq!(out.status.code(), Some(2), "--bucket-kib {bad}");
        assert!(
            !dir.path("db").join("ubt.meta").exists(),
            "{bad}: nothing created"
        );
    }
    assert_eq!(one_line(&load_with("16")), root_of_input(&example));
    assert_eq!(stats_json(&db)["bucket_bytes"], 16384);
    let again = load_with("8");
    assert_fails(&again, 2, "16384 bytes");
    // The same capacity, or none, is accepted; the root does not depend on it.
    assert_eq!(one_line(&load_with("16")), root_of_input(&example));
    assert_eq!(one_line(&load(&db, &example)), root_of_input(&example));
    assert_eq!(stats_json(&db)["bucket_bytes"], 16384);
}

fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[offset] ^= 0xff;
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn verify_reports_a_flipped_data_byte() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    assert!(load(&db, &example).status.success());
    let good = ubt(&["verify", "--db", &db], None);
    let summary = one_line(&good);
    assert!(summary.starts_with("ok: "), "{summary}");
    assert!(summary.contains("1000 values"), "{summary}");

    // Byte 100 of the first block: inside the first bucket.
    flip_byte(&dir.path("db").join("ubt.data"), 100);
    let bad = ubt(&["verify", "--db", &db], None);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr_of(&bad));
    let report = stdout(&bad);
    assert!(report.lines().count() >= 1);
    assert!(
        report.lines().all(|l| l.starts_with("problem: ")),
        "{report}"
    );
    assert!(report.contains("corrupted bucket"), "{report}");
    let err = stderr_of(&bad);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("verification found"), "{err}");
}

#[test]
fn flipped_newest_meta_slot_falls_back_or_fails_cleanly() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    let loaded = one_line(&load(&db, &example));
    let generation = stats_json(&db)["generation"].as_u64().expect("generation");
    // Slot g % 2 of ubt.meta (4 KiB each) holds generation g.
    let slot = (generation % 2) as usize;
    flip_byte(&dir.path("db").join("ubt.meta"), slot * 4096 + 100);

    let root = ubt(&["root", "--db", &db], None);
    let verify = ubt(&["verify", "--db", &db], None);
    match root.status.code() {
        // The engine opens the older checkpoint (generation - 1): for a
        // fresh build that is the empty database created first.
        Some(0) => {
            let root = one_line(&root);
            let empty = format!("0x{}", "0".repeat(64));
            assert!(root == loaded || root == empty, "root {root}");
            assert!(verify.status.success(), "{}", stderr_of(&verify));
            let older = stats_json(&db)["generation"].as_u64().expect("generation");
            assert!(older < generation || root == loaded);
        }
        // Or it reports the damaged meta record.
        Some(1) => {
            assert_fails(&root, 1, "meta");
            assert_fails(&verify, 1, "meta");
        }
        other => panic!("root --db exited {other:?}: {}", stderr_of(&root)),
    }
}

#[test]
fn flipped_trie_page_byte_fails_open_with_exit_1() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    assert!(load(&db, &example).status.success());
    // The bulk build writes the buckets first and the pages last: the last
    // block of the data file holds the root page.
    let data = dir.path("db").join("ubt.data");
    let len = std::fs::metadata(&data).expect("metadata").len() as usize;
    flip_byte(&data, len - 4096 + 100);
    for command in ["verify", "root", "stats"] {
        let out = ubt(&[command, "--db", &db], None);
        assert_fails(&out, 1, "corrupted trie page");
    }
    let out = ubt(&["get", "--db", &db, &hex32(1)], None);
    assert_fails(&out, 1, "corrupted trie page");
}

/// A database of the previous on-disk format (its meta copies rewritten
/// to the previous version under a valid checksum) is refused by every
/// command that opens it: exit 1, one line naming both versions and how to
/// rebuild, and not a byte of it changed.
#[test]
fn a_database_of_the_previous_format_is_refused_and_left_alone() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    assert!(load(&db, &example).status.success());
    let meta_path = dir.path("db").join("ubt.meta");
    let mut meta = std::fs::read(&meta_path).expect("meta");
    let previous = ubt_store::FORMAT_VERSION - 1;
    for slot in meta.chunks_exact_mut(4096) {
        // Checksum (4 bytes), magic (8), version (2, little-endian).
        if &slot[4..12] == b"UBT-META" {
            slot[12..14].copy_from_slice(&previous.to_le_bytes());
            let crc = ubt_store::format::checksum(&slot[4..]);
            slot[..4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    std::fs::write(&meta_path, &meta).expect("write meta");
    let files = |dir: &TempDir| -> Vec<Vec<u8>> {
        ["ubt.meta", "ubt.data", "ubt.wal"]
            .iter()
            .map(|name| std::fs::read(dir.path("db").join(name)).expect(name))
            .collect()
    };
    let before = files(&dir);
    let expected = format!(
        "unsupported format version {previous} (this build reads version {})",
        ubt_store::FORMAT_VERSION
    );
    for command in ["verify", "root", "stats"] {
        let out = ubt(&[command, "--db", &db], None);
        assert_fails(&out, 1, &expected);
        assert_fails(&out, 1, "ubt load");
    }
    assert_fails(&ubt(&["get", "--db", &db, &hex32(1)], None), 1, &expected);
    assert_eq!(files(&dir), before, "a refused open changed the files");
}

#[test]
fn missing_database_exits_1_and_creates_nothing() {
    let dir = TempDir::new();
    let missing = dir.path("no-such-db");
    let db = text(&missing);
    let key = hex32(1);
    let cases: [&[&str]; 5] = [
        &["get", "--db", &db, &key],
        &["root", "--db", &db],
        &["verify", "--db", &db],
        &["stats", "--db", &db],
        &["stats", "--db", &db, "--json"],
    ];
    for args in cases {
        assert_fails(&ubt(args, None), 1, "no database at");
    }
    assert!(!missing.exists(), "a read command created the directory");
}

#[test]
fn bad_keys_and_inputs_exit_2() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    assert!(load(&db, &example).status.success());
    for key in ["0x12", "1234", &format!("0x{}", "zz".repeat(32))] {
        assert_fails(&ubt(&["get", "--db", &db, key], None), 2, "key");
    }

    // A binary file of the wrong length names its byte count, whether the
    // format is detected, named, or read from standard input.
    let mut bytes = to_binary(&[(hex32(1), hex32(2))]);
    bytes.extend_from_slice(&[7u8; 10]);
    let bad = dir.write("bad.bin", &bytes);
    let fresh = text(&dir.path("fresh"));
    assert_fails(&load(&fresh, &bad), 2, "82 bytes");
    let out = ubt(
        &["load", "--db", &fresh, "--input", &bad, "--format", "bin"],
        None,
    );
    assert_fails(&out, 2, "82 bytes");
    let out = ubt(&["load", "--db", &fresh, "--input", "-"], Some(&bytes));
    assert_fails(&out, 2, "82 bytes");
    let short = dir.write("short.bin", b"UBTK");
    let out = ubt(
        &["load", "--db", &fresh, "--input", &short, "--format", "bin"],
        None,
    );
    assert_fails(&out, 2, "4 bytes");
    // A file without the magic is not binary input.
    let out = ubt(
        &[
            "load", "--db", &fresh, "--input", &example, "--format", "bin",
        ],
        None,
    );
    assert_fails(&out, 2, "magic");
    // Bad JSON lines, as `ubt root` reports them.
    let jsonl = dir.write("bad.jsonl", line("0x12", "0x34").as_bytes());
    assert_fails(
        &load(&fresh, &jsonl),
        2,
        "bad.jsonl:1: \"key\" must be 32 bytes",
    );
    assert_fails(
        &load(&fresh, &text(&dir.path("no-such-input"))),
        2,
        "cannot read",
    );
    assert!(
        !dir.path("fresh").join("ubt.meta").exists(),
        "bad input created a database"
    );
    // An existing database is left as it was.
    assert_fails(&load(&db, &bad), 2, "82 bytes");
    assert_eq!(
        one_line(&ubt(&["root", "--db", &db], None)),
        root_of_input(&example)
    );
}

#[test]
fn stats_json_has_the_counts_and_the_root() {
    let dir = TempDir::new();
    let example = repo_file("examples/state.jsonl");
    let db = text(&dir.path("db"));
    let root = one_line(&load(&db, &example));
    let stats = stats_json(&db);
    assert_eq!(stats["leaf_count"], 1000);
    assert_eq!(stats["stem_count"], 1000);
    assert_eq!(stats["root"], root.as_str());
    let table = ubt(&["stats", "--db", &db], None);
    assert!(table.status.success());
    let table = stdout(&table);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("root") && l.ends_with(&root)),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("values") && l.ends_with(" 1000")),
        "{table}"
    );
}

/// Pseudo-random 32-byte hex strings from the seeded generator.
fn pseudo_random_hex(rng: &mut SplitMix64) -> String {
    let mut out = String::from("0x");
    for _ in 0..4 {
        out += &format!("{:016x}", rng.next_u64());
    }
    out
}

#[test]
fn a_large_load_into_a_small_database_gives_the_root_of_the_union() {
    let dir = TempDir::new();
    let example = std::fs::read_to_string(repo_file("examples/state.jsonl")).expect("read");
    let small: String = example
        .lines()
        .take(100)
        .map(|l| format!("{l}\n"))
        .collect();
    let mut rng = SplitMix64::new(7);
    let large: String = (0..40_000)
        .map(|_| {
            let key = pseudo_random_hex(&mut rng);
            line(&key, &pseudo_random_hex(&mut rng))
        })
        .collect();
    let small_file = dir.write("small.jsonl", small.as_bytes());
    let large_file = dir.write("large.jsonl", large.as_bytes());
    let union_file = dir.write("union.jsonl", (small + &large).as_bytes());
    let db = text(&dir.path("db"));
    assert!(load(&db, &small_file).status.success());
    let out = load(&db, &large_file);
    assert_eq!(one_line(&out), root_of_input(&union_file));
    let note = stderr_of(&out);
    assert!(
        note.contains("applied 40000 writes") && note.contains("as one block"),
        "{note}"
    );
    let stats = stats_json(&db);
    assert_eq!(stats["leaf_count"], 40_100);
    let summary = one_line(&ubt(&["verify", "--db", &db], None));
    assert!(summary.starts_with("ok: "), "{summary}");
}

/// This crate's directory: cargo's run-time value first (a build cache
/// shared between clones may hold a binary compiled in another clone),
/// the compile-time one otherwise.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

/// The bytes of every file of the database at `db`.
fn snapshot_files(db: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(db)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect();
    files.sort();
    files
}

/// Adversarial review, findings 4 and 9: the first `root`/`get`/`verify`
/// cut the WAL after its last intact record (destroying the evidence), and
/// every read command took the writer's lock. Read commands now change no
/// byte, even of a WAL with a torn tail.
#[test]
fn read_commands_change_no_byte_of_the_database() {
    let dir = TempDir::new();
    let db_path = dir.path("db");
    let db = text(&db_path);
    let input = repo_file("examples/state.jsonl");
    assert!(load(&db, &input).status.success());
    let mut rng = SplitMix64::new(3);
    let more: String = (0..50)
        .map(|_| line(&pseudo_random_hex(&mut rng), &pseudo_random_hex(&mut rng)))
        .collect();
    assert!(load(&db, &dir.write("more.jsonl", more.as_bytes()))
        .status
        .success());
    // A torn tail after the last record, as a crash mid-commit leaves.
    let wal = db_path.join("ubt.wal");
    let mut bytes = std::fs::read(&wal).expect("wal");
    bytes.extend_from_slice(&[0x5a; 300]);
    std::fs::write(&wal, &bytes).expect("write wal");
    let before = snapshot_files(&db_path);
    let key = parse_jsonl(&std::fs::read_to_string(&input).expect("input"))[0]
        .0
        .clone();
    for args in [
        vec!["get", "--db", &db, &key],
        vec!["root", "--db", &db],
        vec!["verify", "--db", &db],
        vec!["stats", "--db", &db],
    ] {
        let out = ubt(&args, None);
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        assert_eq!(
            snapshot_files(&db_path),
            before,
            "{args:?} changed the database"
        );
    }
}

/// Adversarial review, finding 5: with `ubt.wal` a symbolic link, `ubt
/// root` followed it and truncated its target to 0 bytes.
#[test]
fn a_symlinked_database_file_is_refused_and_its_target_untouched() {
    let dir = TempDir::new();
    let db_path = dir.path("db");
    let db = text(&db_path);
    assert!(load(&db, &repo_file("examples/state.jsonl"))
        .status
        .success());
    let victim = dir.write("victim.txt", b"precious bytes that must survive\n");
    let wal = db_path.join("ubt.wal");
    std::fs::rename(&wal, dir.path("moved.wal")).expect("move");
    std::os::unix::fs::symlink(&victim, &wal).expect("symlink");
    for args in [
        vec!["root", "--db", &db],
        vec!["get", "--db", &db, &hex32(1)],
    ] {
        let out = ubt(&args, None);
        assert_fails(&out, 1, "symbolic link");
    }
    assert_eq!(
        std::fs::read(&victim).expect("victim"),
        b"precious bytes that must survive\n"
    );
}

/// Adversarial review, finding 11: a deleted `ubt.meta` in a populated
/// directory said "no database"; it is a damaged one.
#[test]
fn a_missing_meta_file_beside_data_is_a_damaged_database() {
    let dir = TempDir::new();
    let db_path = dir.path("db");
    let db = text(&db_path);
    assert!(load(&db, &repo_file("examples/state.jsonl"))
        .status
        .success());
    std::fs::remove_file(db_path.join("ubt.meta")).expect("remove");
    assert_fails(
        &ubt(&["root", "--db", &db], None),
        1,
        "meta file is missing",
    );
    let out = load(&db, &repo_file("examples/state.jsonl"));
    assert_fails(&out, 1, "meta file is missing");
}

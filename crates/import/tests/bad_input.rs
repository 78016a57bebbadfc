//! Every kind of bad input is a typed error at the right place (a JSON
//! path in a genesis, a line and path in a dump), and a failed import
//! leaves the database directory as it found it; directories that cannot
//! take a new database are refused untouched.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::{Address, B256, U256};
use common::{import_dump, import_genesis_bytes, TempDir};
use ubt_import::testing::{
    write_dump_line, write_dump_root, write_genesis, Generator, SyntheticAccount,
};
use ubt_import::{ImportError, ImportOptions, Location, Problem, TargetProblem, MIN_MEMORY_BYTES};

const A: &str = "0x00000000000000000000000000000000000000aa";

/// What a case expects of the problem.
type Check = fn(&Problem) -> bool;

fn genesis(alloc: &str) -> Vec<u8> {
    format!("{{\"config\":{{\"chainId\":1}},\"alloc\":{{{alloc}}}}}").into_bytes()
}

/// Imports `input` into a fresh directory; checks that the failure left
/// nothing behind; returns the error.
fn genesis_error(input: &[u8], options: &ImportOptions) -> ImportError {
    let dir = TempDir::new("bad-genesis");
    let db = dir.path("db");
    let error = import_genesis_bytes(&db, input, options).expect_err("bad input is refused");
    assert!(
        !db.exists(),
        "{error}: the database directory was left behind"
    );
    let left: Vec<_> = std::fs::read_dir(&dir.0).expect("list").collect();
    assert!(left.is_empty(), "{error}: left {left:?}");
    error
}

fn dump_error(input: &[u8], options: &ImportOptions) -> ImportError {
    let dir = TempDir::new("bad-dump");
    let db = dir.path("db");
    let error = import_dump(&db, input, options).expect_err("bad input is refused");
    assert!(
        !db.exists(),
        "{error}: the database directory was left behind"
    );
    let left: Vec<_> = std::fs::read_dir(&dir.0).expect("list").collect();
    assert!(left.is_empty(), "{error}: left {left:?}");
    error
}

/// The path and problem of an input error.
fn input(error: ImportError) -> (Location, Problem) {
    match error {
        ImportError::Input(input) => (input.location, input.problem),
        other => panic!("not an input error: {other}"),
    }
}

#[test]
#[allow(clippy::too_many_lines)] // one table of cases
fn bad_genesis_inputs_name_their_json_path() {
    let defaults = ImportOptions::default();
    let slot_1 = format!("0x{}01", "00".repeat(31));
    let cases: Vec<(String, &str, Check)> = vec![
        (
            format!("\"{A}\":{{\"balance\":\"-1\"}}"),
            "alloc.0x00000000000000000000000000000000000000aa.balance",
            |p| *p == Problem::NegativeBalance,
        ),
        (
            format!("\"{A}\":{{\"balance\":\"0x1{}\"}}", "0".repeat(64)),
            "alloc.0x00000000000000000000000000000000000000aa.balance",
            |p| *p == Problem::BalanceTooLarge,
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1e18\"}}"),
            "alloc.0x00000000000000000000000000000000000000aa.balance",
            |p| matches!(p, Problem::InvalidNumber { .. }),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"nonce\":18446744073709551616}}"),
            "alloc.0x00000000000000000000000000000000000000aa.nonce",
            |p| *p == Problem::NonceTooLarge,
        ),
        (
            "\"0x1234\":{\"balance\":\"1\"}".to_string(),
            "alloc.0x1234",
            |p| matches!(p, Problem::WrongLength { expected: 40, actual: 4, .. }),
        ),
        (
            format!("\"0x{}zz\":{{\"balance\":\"1\"}}", "00".repeat(19)),
            "alloc.0x00000000000000000000000000000000000000zz",
            |p| matches!(p, Problem::InvalidHex { .. }),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"storage\":{{\"0x{}\":\"0x01\"}}}}", "1".repeat(66)),
            "alloc.0x00000000000000000000000000000000000000aa.storage.0x111111111111111111111111111111111111111111111111111111111111111111",
            |p| matches!(p, Problem::WrongLength { expected: 64, actual: 66, .. }),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"storage\":{{\"0x01\":\"0x123\"}}}}"),
            "alloc.0x00000000000000000000000000000000000000aa.storage.0x0000000000000000000000000000000000000000000000000000000000000001",
            |p| matches!(p, Problem::InvalidHex { .. }),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"storage\":{{\"0x01\":5}}}}"),
            "alloc.0x00000000000000000000000000000000000000aa.storage.0x0000000000000000000000000000000000000000000000000000000000000001",
            |p| matches!(p, Problem::Json(_)),
        ),
        (
            format!("\"{A}\":{{\"nonce\":\"1\"}}"),
            "alloc.0x00000000000000000000000000000000000000aa",
            |p| *p == Problem::MissingField("balance"),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"Balance\":\"2\"}}"),
            "alloc.0x00000000000000000000000000000000000000aa",
            |p| *p == Problem::DuplicateField("balance".into()),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"code\":\"6001\"}}"),
            "alloc.0x00000000000000000000000000000000000000aa.code",
            |p| matches!(p, Problem::InvalidHex { what: "code", .. }),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"code\":[1]}}"),
            "alloc.0x00000000000000000000000000000000000000aa.code",
            |p| matches!(p, Problem::InvalidHex { what: "code", .. }),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\"}},\"{}\":{{\"balance\":\"2\"}}", A.to_uppercase().replace("0X", "")),
            "alloc.0x00000000000000000000000000000000000000aa",
            |p| matches!(p, Problem::DuplicateAccount { address: Some(a) } if *a == Address::with_last_byte(0xaa)),
        ),
        (
            format!("\"{A}\":{{\"balance\":\"1\",\"storage\":{{\"0x01\":\"0x01\",\"{slot_1}\":\"0x02\"}}}}"),
            "alloc.0x00000000000000000000000000000000000000aa.storage",
            |p| matches!(p, Problem::DuplicateStorageKey { .. }),
        ),
        (
            format!("\"{A}\":null"),
            "alloc.0x00000000000000000000000000000000000000aa",
            |p| matches!(p, Problem::Json(_)),
        ),
    ];
    for (alloc, path, check) in cases {
        let (location, problem) = input(genesis_error(&genesis(&alloc), &defaults));
        assert_eq!(location.path, path, "{alloc}: {problem}");
        assert!(check(&problem), "{alloc}: {problem}");
    }
    // Whole-document problems.
    let (location, problem) = input(genesis_error(b"{\"config\":{}}", &defaults));
    assert_eq!(
        (location.path.as_str(), problem),
        ("", Problem::MissingAlloc)
    );
    let (_, problem) = input(genesis_error(b"{\"alloc\":{}} {}", &defaults));
    assert!(
        matches!(problem, Problem::Json(ref m) if m.contains("trailing characters")),
        "{problem}"
    );
    let (location, problem) = input(genesis_error(
        format!("{{\"alloc\":{{\"{A}\":{{\"balance\":\"1\"").as_bytes(),
        &defaults,
    ));
    assert!(
        matches!(problem, Problem::Json(ref m) if m.contains("EOF")),
        "{problem}"
    );
    assert_eq!(location.path, format!("alloc.{A}"));
    let (_, problem) = input(genesis_error(b"", &defaults));
    assert!(matches!(problem, Problem::Json(_)));
    let (location, problem) = input(genesis_error(b"{\"alloc\":{},\"ALLOC\":{}}", &defaults));
    assert_eq!(
        (location.path.as_str(), problem),
        ("", Problem::DuplicateField("ALLOC".into()))
    );
    // A bare alloc map names its accounts without the `alloc.` prefix.
    let (location, problem) = input(genesis_error(
        format!("{{\"{A}\":{{\"balance\":\"-2\"}}}}").as_bytes(),
        &defaults,
    ));
    assert_eq!(
        (location.path.as_str(), problem),
        (&*format!("{A}.balance"), Problem::NegativeBalance)
    );
}

fn accounts(count: usize) -> Vec<SyntheticAccount> {
    let mut generator = Generator::new(11, 200);
    (0..count).map(|_| generator.next_account()).collect()
}

/// A dump of `accounts`, its lines as text (line 1 the root line).
fn dump_lines(accounts: &[SyntheticAccount]) -> Vec<String> {
    let mut out = Vec::new();
    write_dump_root(&mut out, &B256::repeat_byte(1)).expect("write");
    for account in accounts {
        write_dump_line(&mut out, account).expect("write");
    }
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect()
}

fn join(lines: &[String]) -> Vec<u8> {
    (lines.join("\n") + "\n").into_bytes()
}

#[test]
#[allow(clippy::too_many_lines)] // one table of cases
fn bad_dump_lines_name_their_line() {
    let defaults = ImportOptions::default();
    let accounts = accounts(40);
    let lines = dump_lines(&accounts);
    let contract = accounts
        .iter()
        .position(|a| !a.code.is_empty() && !a.storage.is_empty())
        .expect("a contract with storage")
        + 2;
    let plain = accounts
        .iter()
        .position(|a| a.code.is_empty())
        .expect("a plain account")
        + 2;
    let edit = |line: usize, f: &dyn Fn(&str) -> String| {
        let mut copy = lines.clone();
        copy[line - 1] = f(&copy[line - 1]);
        join(&copy)
    };
    let cut = |text: &str, field: &str| -> String {
        // Removes `,"field":value` (a string, a flat object or a number).
        let start = text.find(&format!(",\"{field}\":")).expect("field present");
        let value = start + field.len() + 4;
        let end = match &text[value..value + 1] {
            "{" => value + text[value..].find('}').expect("object end") + 1,
            "\"" => value + 1 + text[value + 1..].find('"').expect("string end") + 1,
            _ => value + text[value..].find([',', '}']).expect("number end"),
        };
        format!("{}{}", &text[..start], &text[end..])
    };
    let cases: Vec<(Vec<u8>, usize, &str, Check)> = vec![
        (
            edit(plain, &|t| t[..t.len() - 3].to_string()),
            plain,
            "",
            |p| matches!(p, Problem::Json(m) if m.contains("column")),
        ),
        (edit(contract, &|t| cut(t, "code")), contract, "", |p| {
            matches!(p, Problem::CodeMissing(_))
        }),
        (edit(contract, &|t| cut(t, "storage")), contract, "", |p| {
            matches!(p, Problem::StorageMissing(_))
        }),
        (
            edit(contract, &|t| {
                t.replacen("\"code\":\"0x", "\"code\":\"0x00", 1)
            }),
            contract,
            "",
            |p| matches!(p, Problem::CodeHashMismatch { .. }),
        ),
        (
            edit(plain, &|t| {
                let at = t.find("\"key\":\"0x").expect("key") + 9;
                let flipped = if &t[at..at + 1] == "0" { "1" } else { "0" };
                format!("{}{flipped}{}", &t[..at], &t[at + 1..])
            }),
            plain,
            "",
            |p| matches!(p, Problem::AddressHashMismatch { .. }),
        ),
        (edit(plain, &|t| cut(t, "address")), plain, "", |p| {
            *p == Problem::MissingAddress
        }),
        (
            edit(plain, &|t| {
                t.replacen("\"balance\":\"", "\"balance\":\"-", 1)
            }),
            plain,
            "balance",
            |p| *p == Problem::NegativeBalance,
        ),
        (
            edit(plain, &|t| t.replacen("\"nonce\":", "\"nonce\":-", 1)),
            plain,
            "nonce",
            |p| matches!(p, Problem::Json(_)),
        ),
        (edit(plain, &|t| cut(t, "codeHash")), plain, "", |p| {
            *p == Problem::MissingField("codeHash")
        }),
        (
            edit(3, &|_| format!("{{\"root\":\"{}\"}}", B256::ZERO)),
            3,
            "",
            |p| *p == Problem::MisplacedRootLine,
        ),
        (
            edit(contract, &|t| {
                t.replacen("\"storage\":{\"0x", "\"storage\":{\"0x00", 1)
            }),
            contract,
            "storage.0x00",
            |p| matches!(p, Problem::WrongLength { expected: 64, .. }),
        ),
    ];
    for (input, line, path, check) in cases {
        let (location, problem) = input_error(dump_error(&input, &defaults));
        assert_eq!(location.line, Some(line as u64), "{problem}");
        assert!(
            location.path.starts_with(path),
            "{}: {problem}",
            location.path
        );
        assert!(check(&problem), "line {line}: {problem}");
    }
    // A storage value over 32 bytes.
    let long_value = edit(contract, &|t| {
        let at = t.find("\"storage\":{\"").expect("storage") + "\"storage\":{\"".len() + 66 + 3;
        format!("{}{}{}", &t[..at], "11".repeat(33), &t[at..])
    });
    let (location, problem) = input_error(dump_error(&long_value, &defaults));
    assert_eq!(location.line, Some(contract as u64));
    assert!(location.path.starts_with("storage.0x"), "{}", location.path);
    assert!(
        matches!(problem, Problem::WrongLength { expected: 64, .. }),
        "{problem}"
    );
}

fn input_error(error: ImportError) -> (Location, Problem) {
    input(error)
}

#[test]
fn duplicates_name_both_lines_in_memory_and_across_spill_runs() {
    let accounts = accounts(3000);
    let mut lines = dump_lines(&accounts);
    let first = 7;
    lines.push(lines[first - 1].clone());
    let last = lines.len();
    let tiny = ImportOptions {
        memory_bytes: MIN_MEMORY_BYTES,
        ..ImportOptions::default()
    };
    for options in [ImportOptions::default(), tiny.clone()] {
        let (location, problem) = input_error(dump_error(&join(&lines), &options));
        assert_eq!(
            (location.line, location.other_line),
            (Some(first as u64), Some(last as u64))
        );
        assert_eq!(problem, Problem::DuplicateAccount { address: None });
    }
    // The same account twice in a genesis names its address.
    let mut twice = accounts.clone();
    twice.push(accounts[5].clone());
    let mut document = Vec::new();
    write_genesis(&mut document, &twice).expect("write");
    for options in [ImportOptions::default(), tiny] {
        let (location, problem) = input_error(genesis_error(&document, &options));
        assert_eq!(location.path, format!("alloc.{:#x}", accounts[5].address));
        assert_eq!(
            problem,
            Problem::DuplicateAccount {
                address: Some(accounts[5].address)
            }
        );
    }
    // A slot twice in one line.
    let account = SyntheticAccount {
        address: Address::repeat_byte(3),
        nonce: 0,
        balance: U256::from(1u8),
        code: Vec::new(),
        storage: vec![([1; 32], [2; 32]), ([1; 32], [3; 32])],
    };
    let lines = dump_lines(&[account]);
    let (location, problem) = input_error(dump_error(&join(&lines), &ImportOptions::default()));
    assert_eq!(
        (location.line, location.path.as_str()),
        (Some(2), "storage")
    );
    assert!(
        matches!(problem, Problem::DuplicateStorageKey { .. }),
        "{problem}"
    );
}

#[test]
fn directories_that_cannot_take_a_new_database_are_refused_untouched() {
    let dir = TempDir::new("targets");
    let document = genesis(&format!("\"{A}\":{{\"balance\":\"1\"}}"));
    let defaults = ImportOptions::default();

    // A database with data: refused, and still the same database.
    let db = dir.path("full");
    let root = import_genesis_bytes(&db, &document, &defaults)
        .expect("first import")
        .root;
    let listing = |path: &std::path::Path| {
        let mut names: Vec<(String, u64)> = std::fs::read_dir(path)
            .expect("list")
            .map(|e| {
                let e = e.expect("entry");
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().expect("stat").len(),
                )
            })
            .collect();
        names.sort();
        names
    };
    let before = listing(&db);
    let error = import_genesis_bytes(&db, &document, &defaults).expect_err("refused");
    assert!(
        matches!(
            error,
            ImportError::Target {
                problem: TargetProblem::HoldsDatabase,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.is_bad_input());
    assert_eq!(listing(&db), before);
    let reopened =
        ubt_engine::Db::open_read_only(&db, ubt_engine::Options::default()).expect("open");
    assert_eq!(B256::from(reopened.root()), root);
    drop(reopened);

    // Someone else's files: refused, untouched.
    let other = dir.path("other");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("notes.txt"), b"mine").expect("write");
    let error = import_genesis_bytes(&other, &document, &defaults).expect_err("refused");
    assert!(
        matches!(
            error,
            ImportError::Target {
                problem: TargetProblem::NotEmpty,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(listing(&other), vec![("notes.txt".to_string(), 4)]);

    // A file: refused.
    let file = dir.path("file");
    std::fs::write(&file, b"x").expect("write");
    let error = import_genesis_bytes(&file, &document, &defaults).expect_err("refused");
    assert!(
        matches!(
            error,
            ImportError::Target {
                problem: TargetProblem::NotADirectory,
                ..
            }
        ),
        "{error}"
    );

    // An empty directory: a failed import leaves it empty, a good one fills it.
    let empty = dir.path("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let bad = genesis(&format!("\"{A}\":{{\"balance\":\"-1\"}}"));
    import_genesis_bytes(&empty, &bad, &defaults).expect_err("bad input");
    assert!(listing(&empty).is_empty());
    let good = import_genesis_bytes(&empty, &document, &defaults).expect("import");
    assert_eq!(good.root, root);

    // Options out of range.
    let error = import_genesis_bytes(
        &dir.path("small"),
        &document,
        &ImportOptions {
            memory_bytes: 1000,
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(matches!(error, ImportError::Options(_)), "{error}");
    assert!(!dir.path("small").exists());
}

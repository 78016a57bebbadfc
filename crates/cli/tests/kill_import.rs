//! `kill -9` of `ubt import geth-dump` at any moment: a synthetic dump of
//! about 260,000 tree entries (plain accounts, contracts with code and
//! storage, a few accounts whose lines are long enough to be streamed with
//! their storage spooled) imported with 256 KiB of memory, so that it
//! spills about 70 sorted runs and merges them in several passes before
//! the build. One uninterrupted import, watched through its files, gives
//! the expected root and when each phase starts; then the import is
//! started again and again and killed: at once, just after it would have
//! ended, and in turn in the parse, spill, merge and build phases (once
//! the phase is seen to start, at positions spread over its length; the
//! build phase includes the flat index's). Where each kill landed is
//! printed, not asserted.
//!
//! After each kill the database directory holds, as the import's rules
//! say (crate documentation of `ubt-import`, "An import makes a new
//! database" and "The flat index of account values is built too"):
//! nothing (no directory, or no database in it), an empty database
//! (nothing committed), the complete import at the expected root with its
//! flat index (one record per entry), or the complete tree without the
//! index (killed while the index was built); `ubt root`, `ubt stats` and `ubt verify` agree, and nothing else
//! is in the directory. The temporary directory a killed import leaves is
//! `.ubt-import-<pid>-<n>` in the database directory's parent (the
//! default of `--tmp-dir`); nothing else is left there. Then the same
//! import into the same directory: it succeeds with the expected root, or,
//! when the killed one had already landed, is refused with exit 2 and
//! leaves the database as it was.
//!
//! 16 kills by default, 200 with `UBT_LONG=1`; `UBT_KILLS=<n>` for any
//! number.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use ubt_import::testing::{write_dump_line, write_dump_root, Generator};

mod common;

use common::{run_ubt, stderr_of, stdout_of, text, TempDir};

/// The sort memory of every import: small, so that it spills and merges.
const MEMORY: &str = "256KiB";
/// [`MEMORY`] in bytes.
const MEMORY_BYTES: usize = 256 << 10;
/// The names a database directory may hold.
const DATABASE_FILES: [&str; 3] = ["ubt.meta", "ubt.data", "ubt.wal"];

fn kills() -> u32 {
    if let Some(n) = std::env::var("UBT_KILLS").ok().and_then(|v| v.parse().ok()) {
        return n;
    }
    let long = std::env::var("UBT_LONG").is_ok_and(|v| v != "0" && !v.is_empty());
    if long {
        200
    } else {
        16
    }
}

/// What [`write_dump`] wrote.
struct Dump {
    /// Tree entries the accounts stand for.
    entries: u64,
    /// Lines longer than a sixteenth of [`MEMORY`]: parsed as a stream,
    /// their storage spooled to a temporary file.
    long_lines: u64,
}

/// Writes a `geth dump --iterative` of `accounts` accounts from the import
/// crate's seeded generator (every 1,000th contract has 3,000 slots: a
/// long line).
fn write_dump(path: &Path, accounts: u64, seed: u64) -> Dump {
    let mut generator = Generator::new(seed, 3000);
    let mut out = BufWriter::new(std::fs::File::create(path).expect("create the dump"));
    write_dump_root(&mut out, &B256::repeat_byte(0x5a)).expect("write");
    let mut dump = Dump {
        entries: 0,
        long_lines: 0,
    };
    let mut line = Vec::new();
    for _ in 0..accounts {
        let account = generator.next_account();
        dump.entries += account.tree_entry_count();
        line.clear();
        write_dump_line(&mut line, &account).expect("encode");
        if line.len() > MEMORY_BYTES / 16 {
            dump.long_lines += 1;
        }
        out.write_all(&line).expect("write");
    }
    out.flush().expect("flush");
    dump
}

/// Exit 0; the last line of standard output.
fn last_line(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        stderr_of(output)
    );
    stdout_of(output)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

/// The number before `label` in the import's summary line.
fn summary_number(summary: &str, label: &str) -> u64 {
    let at = summary
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} not in the summary: {summary}"));
    let digits: String = summary[..at]
        .trim_end()
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .chars()
        .rev()
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number before {label:?}: {summary}"))
}

fn import_args<'a>(db: &'a str, dump: &'a str) -> [&'a str; 7] {
    ["import", "geth-dump", "--db", db, "--memory", MEMORY, dump]
}

/// What a killed import left in its database directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Left {
    /// No directory.
    NoDirectory,
    /// A directory without a database (or with one whose creation never
    /// completed: the store opens none).
    NoDatabase,
    /// A database with nothing committed.
    Empty,
    /// The complete import.
    Complete,
    /// The complete tree without its flat index (killed while the index
    /// was built): reads are served by the tree.
    CompleteWithoutIndex,
}

/// The figures of `ubt stats --json` this test reads.
struct Stats {
    generation: u64,
    commit_seq: u64,
    leaf_count: u64,
    root: String,
    flat_index: bool,
    flat_records: u64,
}

fn stats(db: &str) -> Result<Stats, String> {
    let output = run_ubt(&["stats", "--db", db, "--json"], None);
    if !output.status.success() {
        return Err(stderr_of(&output));
    }
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&output)).expect("stats --json is JSON");
    let number = |field: &str| json[field].as_u64().unwrap_or_else(|| panic!("{field}"));
    Ok(Stats {
        generation: number("generation"),
        commit_seq: number("commit_seq"),
        leaf_count: number("leaf_count"),
        root: json["root"].as_str().expect("root").to_string(),
        flat_index: json["flat_index"].as_bool().expect("flat_index"),
        flat_records: number("flat_records"),
    })
}

/// Classifies what is in `db` after a kill and checks it is one of the
/// allowed states, whole and consistent.
fn inspect(db: &Path, expected_root: &str, expected_leaves: u64, what: &str) -> Left {
    if !db.exists() {
        return Left::NoDirectory;
    }
    let names: Vec<String> = std::fs::read_dir(db)
        .expect("list the database directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    for name in &names {
        assert!(
            DATABASE_FILES.contains(&name.as_str()),
            "{what}: {name} in the database directory"
        );
    }
    let db_text = text(db);
    let stats = match stats(&db_text) {
        Ok(stats) => stats,
        Err(error) => {
            // Only "there is no database here" is allowed; anything else
            // (a corrupt meta file, say) is a broken state.
            assert!(
                error.starts_with("ubt: error: no database"),
                "{what}: the directory ({names:?}) does not open: {error}"
            );
            return Left::NoDatabase;
        }
    };
    let root = last_line(&run_ubt(&["root", "--db", &db_text], None));
    assert_eq!(root, stats.root, "{what}: `ubt root` and `ubt stats`");
    let verified = run_ubt(&["verify", "--db", &db_text], None);
    assert!(
        verified.status.success(),
        "{what}: verify failed: {}",
        stderr_of(&verified)
    );
    if stats.generation == 0 && stats.commit_seq == 0 && stats.leaf_count == 0 {
        assert_eq!(root, format!("0x{}", "00".repeat(32)), "{what}: empty");
        return Left::Empty;
    }
    assert_eq!(
        root, expected_root,
        "{what}: the database holds something, but not the complete import"
    );
    assert_eq!(stats.leaf_count, expected_leaves, "{what}");
    if !stats.flat_index {
        return Left::CompleteWithoutIndex;
    }
    assert_eq!(
        stats.flat_records, expected_leaves,
        "{what}: the flat index"
    );
    Left::Complete
}

/// The names in `parent` other than `db`, which must all be the killed
/// import's temporary directories (`.ubt-import-<pid>-<n>`).
fn leftovers(parent: &Path, killed_pid: u32, what: &str) -> usize {
    let prefix = format!(".ubt-import-{killed_pid}-");
    let mut count = 0;
    for entry in std::fs::read_dir(parent).expect("list") {
        let name = entry.expect("entry").file_name();
        let name = name.to_string_lossy();
        if name == "db" {
            continue;
        }
        assert!(
            name.starts_with(&prefix),
            "{what}: {name} left beside the database (expected only {prefix}<n>)"
        );
        count += 1;
    }
    count
}

/// Where a running import was, judged from its files just before the
/// kill (for the summary only: the kill lands a little later).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seen {
    /// No database made yet.
    Starting,
    /// Reading, nothing spilled yet.
    Reading,
    /// Spill runs (or spooled storage) being written.
    Spilling,
    /// Merged runs being written (file numbers past the spills').
    Merging,
    /// The database file being written.
    Building,
    /// The process had ended.
    Ended,
}

/// The highest number of a temporary file (`<label>-<n>.bin`) in the
/// import's temporary directories under `parent`, if any.
fn last_temporary_file(parent: &Path) -> Option<u64> {
    let mut last = None;
    for entry in std::fs::read_dir(parent).ok()?.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(".ubt-import-")
        {
            continue;
        }
        for file in std::fs::read_dir(entry.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            let number = name
                .strip_suffix(".bin")
                .and_then(|stem| stem.rsplit('-').next())
                .and_then(|n| n.parse::<u64>().ok());
            last = last.max(number);
        }
    }
    last
}

fn seen(parent: &Path, read_files: u64) -> Seen {
    let db = parent.join("db");
    let data = std::fs::metadata(db.join("ubt.data")).map_or(0, |m| m.len());
    if data > 0 {
        return Seen::Building;
    }
    match last_temporary_file(parent) {
        Some(n) if n >= read_files => Seen::Merging,
        Some(_) => Seen::Spilling,
        None if db.join("ubt.meta").exists() => Seen::Reading,
        None => Seen::Starting,
    }
}

#[test]
fn an_import_killed_at_any_moment_leaves_nothing_an_empty_database_or_all() {
    let dir = TempDir::new("kill-import");
    let dump_path = dir.path("dump.jsonl");
    let generated = write_dump(&dump_path, 16_000, 0x1e7);
    let entries = generated.entries;
    let dump = text(&dump_path);

    // The uninterrupted import: the expected root, and when each phase
    // starts (watched through its files), to aim the kills.
    let reference_parent = dir.path("reference");
    std::fs::create_dir(&reference_parent).expect("mkdir");
    let reference = reference_import(&reference_parent, &dump);
    let expected_root = reference.root.clone();
    let summary = &reference.summary;
    assert!(
        summary.contains(&format!("{entries} tree entries")),
        "{summary}"
    );
    // The configuration exercises what the kills should interrupt.
    let spill_runs = summary_number(summary, "spill runs");
    assert!(spill_runs > 20, "{summary}");
    assert!(summary_number(summary, "merge passes") > 0, "{summary}");
    assert!(generated.long_lines >= 5);
    assert_eq!(
        leftovers(&reference_parent, 0, "uninterrupted import"),
        0,
        "an import that ends removes its temporary directory"
    );
    let reference_stats = stats(&text(&reference_parent.join("db"))).expect("stats");
    let expected_leaves = reference_stats.leaf_count;
    assert_eq!(expected_leaves, entries);
    assert!(
        reference_stats.flat_index,
        "the import builds the flat index"
    );
    assert_eq!(reference_stats.flat_records, entries);
    // Temporary files of the read phase: the spill runs and the spooled
    // storage of the long lines; merges number theirs after them.
    let read_files = spill_runs + generated.long_lines;
    let phases = reference.phases(read_files);

    let kills = kills();
    let mut landed: BTreeMap<Left, u32> = BTreeMap::new();
    let mut seen_at_kill: BTreeMap<Seen, u32> = BTreeMap::new();
    let mut temporary_left = 0;
    for k in 0..kills {
        let parent = dir.path(&format!("kill{k}"));
        std::fs::create_dir(&parent).expect("mkdir");
        let db = parent.join("db");
        let db_text = text(&db);
        let aim = phases.aim(k);
        let mut child = Command::new(env!("CARGO_BIN_EXE_ubt"))
            .args(import_args(&db_text, &dump))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let pid = child.id();
        wait_for(&mut child, &parent, read_files, aim.after);
        std::thread::sleep(aim.delay);
        let phase = match child.try_wait() {
            Ok(Some(_)) => Seen::Ended,
            _ => seen(&parent, read_files),
        };
        *seen_at_kill.entry(phase).or_default() += 1;
        let _ = child.kill();
        let status = child.wait().expect("wait");
        let what = format!("kill {k}, {aim:?} ({phase:?} seen; phases {phases:?})");

        let left = inspect(&db, &expected_root, expected_leaves, &what);
        if status.success() {
            assert_eq!(left, Left::Complete, "{what}: the import ended");
        }
        *landed.entry(left).or_default() += 1;
        if leftovers(&parent, pid, &what) > 0 {
            temporary_left += 1;
        }
        rerun(&db, &dump, left, &expected_root, &what);
        let after_rerun = if left == Left::CompleteWithoutIndex {
            // Refused: the database holds data; it stays as it was.
            Left::CompleteWithoutIndex
        } else {
            Left::Complete
        };
        assert_eq!(
            inspect(&db, &expected_root, expected_leaves, &what),
            after_rerun,
            "{what}: after the rerun"
        );
        // The rerun cleaned up after itself: only the killed import's
        // temporary directory may be there.
        leftovers(&parent, pid, &what);
        let _ = std::fs::remove_dir_all(&parent);
    }
    println!(
        "{kills} kills of an import of {entries} entries ({spill_runs} spill runs; {phases:?}): \
         seen before the kill {seen_at_kill:?}; left {landed:?}; \
         {temporary_left} left a temporary directory"
    );
}

/// The uninterrupted import, watched.
struct Reference {
    root: String,
    summary: String,
    /// (time since the start, the highest temporary file number, the
    /// database file's length), about every millisecond.
    samples: Vec<(Duration, Option<u64>, u64)>,
    end: Duration,
}

/// When each phase of the reference import started.
#[derive(Debug)]
struct Phases {
    spill: Duration,
    merge: Duration,
    build: Duration,
    end: Duration,
}

impl Reference {
    /// The phase boundaries: the first temporary file, the first merged
    /// run's, the first byte of the database file. A boundary the samples
    /// missed (a phase shorter than the sampling) falls back to a share of
    /// the run.
    fn phases(&self, read_files: u64) -> Phases {
        let first = |test: &dyn Fn(Option<u64>, u64) -> bool, share: f64| {
            self.samples
                .iter()
                .find(|(_, file, data)| test(*file, *data))
                .map_or(self.end.mul_f64(share), |(at, _, _)| *at)
        };
        let spill = first(&|file, _| file.is_some(), 0.1);
        let merge = first(&|file, _| file.is_some_and(|n| n >= read_files), 0.3).max(spill);
        let build = first(&|_, data| data > 0, 0.8).max(merge);
        Phases {
            spill,
            merge,
            build,
            end: self.end,
        }
    }
}

/// When a kill lands: once the import's files show `after` (at once for
/// [`Seen::Starting`]), wait `delay`.
#[derive(Clone, Copy, Debug)]
struct Aim {
    after: Seen,
    delay: Duration,
}

impl Phases {
    /// Where kill `k` lands: the first at once, the second just after the
    /// reference's end, the others in turn in the parse, spill, merge and
    /// build phases: once the phase is seen to start, at positions spread
    /// over the reference's length of it (golden-ratio steps; the build's
    /// over its first 80%, before the meta write and the exit).
    fn aim(&self, k: u32) -> Aim {
        let phases = [
            (Seen::Starting, self.spill),
            (Seen::Spilling, self.merge - self.spill),
            (Seen::Merging, self.build - self.merge),
            (Seen::Building, self.end - self.build),
        ];
        match k {
            0 => Aim {
                after: Seen::Starting,
                delay: Duration::ZERO,
            },
            1 => Aim {
                after: Seen::Starting,
                delay: self.end + Duration::from_millis(20),
            },
            _ => {
                let phase = (k as usize - 2) % phases.len();
                let (after, length) = phases[phase];
                let round = f64::from((k - 2) / phases.len() as u32);
                let mut position = (0.5 + round * 0.618_033_988_7).fract();
                if after == Seen::Building {
                    position *= 0.8;
                }
                Aim {
                    after,
                    delay: length.mul_f64(position),
                }
            }
        }
    }
}

/// Waits until `child`'s files in `parent` show `after` or a later
/// phase, or it ends.
fn wait_for(child: &mut Child, parent: &Path, read_files: u64, after: Seen) {
    if after == Seen::Starting {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) || seen(parent, read_files) >= after {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!("the import never reached {after:?}");
}

/// Runs the import into `parent/db`, sampling its files until it ends.
fn reference_import(parent: &Path, dump: &str) -> Reference {
    let db = parent.join("db");
    let out_path = parent.with_extension("stdout");
    let err_path = parent.with_extension("stderr");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ubt"))
        .args(import_args(&text(&db), dump))
        .stdout(std::fs::File::create(&out_path).expect("create"))
        .stderr(std::fs::File::create(&err_path).expect("create"))
        .spawn()
        .expect("spawn");
    let mut samples = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        let data = std::fs::metadata(db.join("ubt.data")).map_or(0, |m| m.len());
        samples.push((started.elapsed(), last_temporary_file(parent), data));
        std::thread::sleep(Duration::from_millis(1));
    };
    let end = started.elapsed();
    let stdout = std::fs::read_to_string(&out_path).expect("read");
    let summary = std::fs::read_to_string(&err_path).expect("read");
    assert!(status.success(), "the reference import failed: {summary}");
    assert!(!summary.contains("panicked"), "{summary}");
    Reference {
        root: stdout.lines().last().unwrap_or_default().to_string(),
        summary,
        samples,
        end,
    }
}

/// The same import again into `db`: the expected root, or, if the killed
/// one had landed, refused with exit 2 and the database kept.
fn rerun(db: &Path, dump: &str, left: Left, expected_root: &str, what: &str) {
    let db_text = text(db);
    let rerun = run_ubt(&import_args(&db_text, dump), None);
    if matches!(left, Left::Complete | Left::CompleteWithoutIndex) {
        let error = stderr_of(&rerun);
        assert_eq!(rerun.status.code(), Some(2), "{what}: rerun: {error}");
        assert!(
            error.contains("already holds a database"),
            "{what}: rerun: {error}"
        );
        assert!(rerun.stdout.is_empty(), "{what}: rerun printed a root");
    } else {
        assert_eq!(
            last_line(&rerun),
            expected_root,
            "{what}: the rerun after {left:?}"
        );
    }
}

/// The states a kill leaves while the import creates its database, made
/// exactly: the import is killed while it waits for its input (after the
/// creation), and the creation's intermediate states are cut from that
/// database's files in the order the store writes them (data file, WAL,
/// then the meta file, blank first, then slot by slot). The store takes
/// every one as "nothing committed"; the import must too.
#[test]
fn an_import_killed_while_creating_its_database_can_be_rerun() {
    let dir = TempDir::new("kill-import-create");
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors/geth-dump");
    let dump = text(&vectors.join("small.jsonl"));
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(vectors.join("expected.json")).expect("read"))
            .expect("JSON");
    let expected_root = expected["ubtRoot"].as_str().expect("ubtRoot");
    let expected_leaves = expected["treeEntries"].as_u64().expect("treeEntries");

    // Killed while reading standard input: the database is made, empty.
    let waiting = dir.path("waiting");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ubt"))
        .args(["import", "geth-dump", "--db", &text(&waiting), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let meta = waiting.join("ubt.meta");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&meta).map_or(0, |m| m.len()) < 16384 {
        assert!(Instant::now() < deadline, "the import made no database");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Past the creation's last sync.
    std::thread::sleep(Duration::from_millis(100));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        inspect(&waiting, expected_root, expected_leaves, "waiting"),
        Left::Empty
    );

    let meta_bytes = std::fs::read(&meta).expect("read meta");
    type Cut = (&'static str, &'static [&'static str], Option<usize>);
    let cuts: [Cut; 6] = [
        ("directory only", &[], None),
        ("data file", &["ubt.data"], None),
        ("data file and WAL", &["ubt.data", "ubt.wal"], None),
        ("blank meta file", &["ubt.data", "ubt.wal"], Some(0)),
        ("one meta slot", &["ubt.data", "ubt.wal"], Some(4096)),
        ("two meta slots", &["ubt.data", "ubt.wal"], Some(8192)),
    ];
    for (label, files, meta_len) in cuts {
        let db = dir.path(label);
        std::fs::create_dir(&db).expect("mkdir");
        for name in files {
            std::fs::copy(waiting.join(name), db.join(name)).expect("copy");
        }
        if let Some(len) = meta_len {
            std::fs::write(db.join("ubt.meta"), &meta_bytes[..len]).expect("write meta");
        }
        let left = inspect(&db, expected_root, expected_leaves, label);
        assert!(
            matches!(left, Left::NoDatabase | Left::Empty),
            "{label}: {left:?}"
        );
        rerun(&db, &dump, left, expected_root, label);
    }
    rerun(&waiting, &dump, Left::Empty, expected_root, "waiting");
}

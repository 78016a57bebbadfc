//! Real-file I/O: `OsDir` and `OsFile` on both batched-read backends.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ubt_spec::rng::SplitMix64;
use ubt_store::io::os::OsDir;
use ubt_store::io::{ReadBackendChoice, ReadBackendKind, ReadRequest, StoreDir, StoreFile};

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("ubt-os-io-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const BACKENDS: [ReadBackendChoice; 2] = [ReadBackendChoice::ThreadPool, ReadBackendChoice::Auto];

const FILE_LEN: usize = 8 << 20;

/// A directory with file "data" holding `FILE_LEN` pseudo-random bytes.
fn setup(tag: &str, choice: ReadBackendChoice) -> (TempDir, OsDir, Arc<dyn StoreFile>, Vec<u8>) {
    let tmp = TempDir::new(tag);
    let dir = OsDir::open(tmp.path(), true, choice).unwrap();
    let file = dir.open_file("data", true).unwrap();
    let mut content = vec![0u8; FILE_LEN];
    SplitMix64(0x5eed).fill(&mut content);
    for (i, chunk) in content.chunks(1 << 20).enumerate() {
        file.write_all_at(chunk, (i << 20) as u64).unwrap();
    }
    file.sync_data().unwrap();
    (tmp, dir, file, content)
}

fn random_requests(rng: &mut SplitMix64, count: usize, file_len: usize) -> Vec<ReadRequest> {
    (0..count)
        .map(|_| {
            let len = 1 + rng.below(16 << 10) as usize;
            let offset = rng.below((file_len - len + 1) as u64);
            ReadRequest { offset, len }
        })
        .collect()
}

fn expected(content: &[u8], request: ReadRequest) -> &[u8] {
    let start = request.offset as usize;
    &content[start..start + request.len]
}

#[test]
fn backend_choice() {
    for choice in BACKENDS {
        let (_tmp, dir, file, _) = setup("choice", choice);
        let kind = dir.read_backend();
        assert_eq!(file.read_backend(), kind);
        match choice {
            ReadBackendChoice::ThreadPool => assert_eq!(kind, ReadBackendKind::ThreadPool),
            ReadBackendChoice::Auto => {
                assert!(matches!(
                    kind,
                    ReadBackendKind::IoUring | ReadBackendKind::ThreadPool
                ));
                eprintln!("Auto chose {}", kind.name());
            }
        }
    }
}

#[test]
fn random_batched_reads_match_content() {
    for choice in BACKENDS {
        let (_tmp, dir, file, content) = setup("random", choice);
        let mut rng = SplitMix64(42);
        let requests = random_requests(&mut rng, 5_000, FILE_LEN);
        let results = file.read_batch(&requests);
        assert_eq!(results.len(), requests.len());
        for (request, result) in requests.iter().zip(results) {
            let data = result.unwrap_or_else(|e| panic!("{}: {request:?}: {e}", dir.describe()));
            assert_eq!(data, expected(&content, *request), "{request:?}");
        }
        // read_batch_each answers every index exactly once.
        let mut answered = vec![0u32; requests.len()];
        file.read_batch_each(&requests, &mut |index, result| {
            answered[index] += 1;
            assert_eq!(result.unwrap(), expected(&content, requests[index]));
        });
        assert!(answered.iter().all(|&n| n == 1));
    }
}

#[test]
fn read_past_end_fails_for_that_request_only() {
    for choice in BACKENDS {
        let (_tmp, _dir, file, content) = setup("eof", choice);
        let len = FILE_LEN as u64;
        let bad = [
            ReadRequest {
                offset: len - 10,
                len: 20,
            },
            ReadRequest {
                offset: len,
                len: 1,
            },
            ReadRequest {
                offset: len + 4096,
                len: 4096,
            },
        ];
        let mut requests = random_requests(&mut SplitMix64(7), 300, FILE_LEN);
        let bad_at = [0usize, 150, 299];
        for (&at, &request) in bad_at.iter().zip(&bad) {
            requests[at] = request;
        }
        // Zero-length reads succeed, even at the end of the file.
        requests[10] = ReadRequest {
            offset: len,
            len: 0,
        };
        let results = file.read_batch(&requests);
        for (i, (request, result)) in requests.iter().zip(results).enumerate() {
            if bad_at.contains(&i) {
                let err = result.expect_err("read past the end must fail");
                assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{request:?}");
            } else {
                assert_eq!(result.unwrap(), expected(&content, *request));
            }
        }
        // A batch of one takes the direct path; same rule.
        let one = file.read_batch(&bad[..1]);
        assert_eq!(
            one[0].as_ref().unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        let mut buf = [0u8; 8];
        let err = file.read_exact_at(&mut buf, len - 4).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}

#[test]
fn empty_batch() {
    for choice in BACKENDS {
        let (_tmp, _dir, file, _) = setup("empty", choice);
        assert!(file.read_batch(&[]).is_empty());
        file.read_batch_each(&[], &mut |_, _| panic!("no request, no completion"));
    }
}

#[test]
fn concurrent_batches_from_four_threads() {
    for choice in BACKENDS {
        let (_tmp, _dir, file, content) = setup("concurrent", choice);
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                let file = &file;
                let content = &content;
                scope.spawn(move || {
                    let mut rng = SplitMix64(1000 + t);
                    for _ in 0..10 {
                        let requests = random_requests(&mut rng, 500, FILE_LEN);
                        let results = file.read_batch(&requests);
                        for (request, result) in requests.iter().zip(results) {
                            assert_eq!(result.unwrap(), expected(content, *request));
                        }
                    }
                });
            }
        });
    }
}

#[test]
fn panicking_callback_leaves_backend_usable() {
    for choice in BACKENDS {
        let (_tmp, _dir, file, content) = setup("panic", choice);
        let requests = random_requests(&mut SplitMix64(9), 1_000, FILE_LEN);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut seen = 0;
            file.read_batch_each(&requests, &mut |_, _| {
                seen += 1;
                if seen == 200 {
                    panic!("callback fails mid-batch");
                }
            });
        }));
        assert!(outcome.is_err());
        for (request, result) in requests.iter().zip(file.read_batch(&requests)) {
            assert_eq!(result.unwrap(), expected(&content, *request));
        }
    }
}

#[test]
fn lock_is_exclusive_until_dropped() {
    let tmp = TempDir::new("lock");
    let dir = OsDir::open(tmp.path(), true, ReadBackendChoice::Auto).unwrap();
    let other = OsDir::open(tmp.path(), false, ReadBackendChoice::ThreadPool).unwrap();
    let guard = dir.lock_exclusive().unwrap();
    let err = dir.lock_exclusive().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    let err = other.lock_exclusive().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    drop(guard);
    let guard = other.lock_exclusive().unwrap();
    assert_eq!(
        dir.lock_exclusive().unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    drop(guard);
    drop(dir.lock_exclusive().unwrap());
}

#[test]
fn write_sync_len_round_trip() {
    let tmp = TempDir::new("rw");
    let dir = OsDir::open(tmp.path(), true, ReadBackendChoice::Auto).unwrap();
    assert_eq!(dir.describe(), tmp.path().display().to_string());
    assert!(!dir.exists("wal").unwrap());
    let err = dir.open_file("wal", false).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    let file = dir.open_file("wal", true).unwrap();
    dir.sync_dir().unwrap();
    assert!(dir.exists("wal").unwrap());
    assert!(file.is_empty().unwrap());

    file.write_all_at(b"hello", 0).unwrap();
    file.write_all_at(b"world", 10_000).unwrap();
    file.sync_data().unwrap();
    assert_eq!(file.len().unwrap(), 10_005);
    let mut buf = [0xffu8; 5];
    file.read_exact_at(&mut buf, 9_998).unwrap();
    assert_eq!(&buf, b"\0\0wor");

    file.set_len(3).unwrap();
    file.sync_data().unwrap();
    assert_eq!(file.len().unwrap(), 3);
    let mut buf = [0u8; 3];
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"hel");
    file.set_len(4096).unwrap();
    assert_eq!(file.len().unwrap(), 4096);
    assert!(!file.is_empty().unwrap());

    // Reopened (read and write), the data is there.
    drop(file);
    let file = dir.open_file("wal", false).unwrap();
    let results = file.read_batch(&[
        ReadRequest { offset: 0, len: 3 },
        ReadRequest {
            offset: 4090,
            len: 6,
        },
    ]);
    assert_eq!(results[0].as_ref().unwrap(), b"hel");
    assert_eq!(results[1].as_ref().unwrap(), &[0u8; 6]);
    file.write_all_at(b"!", 4096).unwrap();
    assert_eq!(file.len().unwrap(), 4097);

    for bad in ["", ".", "..", "a/b"] {
        let err = dir.open_file(bad, true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
    }
}

#[test]
fn open_missing_directory() {
    let tmp = TempDir::new("missing");
    let err = OsDir::open(tmp.path(), false, ReadBackendChoice::Auto).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains(&tmp.path().display().to_string()));

    let dir = OsDir::open(&tmp.path().join("a/b"), true, ReadBackendChoice::Auto).unwrap();
    let file = dir.open_file("plain", true).unwrap();
    drop(file);
    let err = OsDir::open(&dir.path().join("plain"), false, ReadBackendChoice::Auto).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
}

/// Measurement, not a test: 4 KiB random reads per second from a cold page
/// cache, per backend. Run with
/// `cargo test --release -p ubt-store --test os_io -- --ignored --nocapture measure`
/// as root (to drop the page cache). `UBT_IO_MEASURE_DIR` picks the
/// directory (default: the temp dir), `UBT_IO_MEASURE_GIB` the file size.
#[test]
#[ignore]
fn measure_random_4k_reads() {
    let base = std::env::var_os("UBT_IO_MEASURE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let gib: u64 = std::env::var("UBT_IO_MEASURE_GIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let file_len = gib << 30;
    let path = base.join("ubt-os-io-measure");
    let dir = OsDir::open(&path, true, ReadBackendChoice::ThreadPool).unwrap();
    let file = dir.open_file("data", true).unwrap();
    if file.len().unwrap() != file_len {
        let mut chunk = vec![0u8; 4 << 20];
        let mut rng = SplitMix64(1);
        file.set_len(0).unwrap();
        for offset in (0..file_len).step_by(chunk.len()) {
            rng.fill(&mut chunk);
            file.write_all_at(&chunk, offset).unwrap();
        }
        file.sync_data().unwrap();
    }
    drop(file);
    const READS: usize = 100_000;
    for batch in [128usize, 1024] {
        for choice in BACKENDS {
            let dir = OsDir::open(&path, false, choice).unwrap();
            let file = dir.open_file("data", false).unwrap();
            let dropped = std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok();
            let mut rng = SplitMix64(77);
            let requests: Vec<ReadRequest> = (0..READS)
                .map(|_| ReadRequest {
                    offset: rng.below(file_len / 4096) * 4096,
                    len: 4096,
                })
                .collect();
            let start = Instant::now();
            let mut ok = 0usize;
            for chunk in requests.chunks(batch) {
                file.read_batch_each(chunk, &mut |_, result| ok += result.map_or(0, |_| 1));
            }
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(ok, READS);
            println!(
                "{:>10} batch {batch:>5}: {:>9.0} reads/s ({READS} x 4 KiB random, {gib} GiB file, page cache dropped: {dropped})",
                dir.read_backend().name(),
                READS as f64 / secs,
            );
        }
    }
    if std::env::var_os("UBT_IO_MEASURE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&path);
    }
}

/// The database file names, as the store names them.
const DATABASE_FILES: [&str; 3] = ["ubt.wal", "ubt.meta", "ubt.data"];

/// Runs `f` on another thread and fails the test if it has not returned
/// within ten seconds (an open of a FIFO must not block).
fn promptly<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} did not return within 10 s"))
}

/// Asserts that `result` is the refusal of a file that is not a regular
/// file: `InvalidInput`, naming the path and saying `why`.
fn assert_refused<T: std::fmt::Debug>(result: io::Result<T>, path: &Path, why: &str) {
    let error = result.expect_err("the open must be refused");
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "{message:?} names {}",
        path.display()
    );
    assert!(message.contains(why), "{message:?} says {why:?}");
    assert!(
        message.contains("database files must be regular files"),
        "{message:?}"
    );
}

#[test]
fn symlinked_database_files_are_refused_and_the_target_untouched() {
    let tmp = TempDir::new("symlink");
    let dir = OsDir::open(&tmp.path().join("db"), true, ReadBackendChoice::Auto).unwrap();
    let victim = tmp.path().join("victim");
    let victim_bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    std::fs::write(&victim, &victim_bytes).unwrap();
    for name in DATABASE_FILES {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(dir.exists(name).unwrap(), "{name}: the link is an entry");
        for create in [false, true] {
            assert_refused(dir.open_file(name, create), &link, "is a symbolic link");
        }
        assert_refused(dir.open_file_read_only(name), &link, "is a symbolic link");
        assert_eq!(std::fs::read(&victim).unwrap(), victim_bytes, "{name}");
        std::fs::remove_file(&link).unwrap();

        // A dangling link is refused too, and its target never created.
        let missing = tmp.path().join("missing");
        std::os::unix::fs::symlink(&missing, &link).unwrap();
        for create in [false, true] {
            assert_refused(dir.open_file(name, create), &link, "is a symbolic link");
        }
        assert_refused(dir.open_file_read_only(name), &link, "is a symbolic link");
        assert!(!missing.exists(), "{name}: the link's target was created");
        std::fs::remove_file(&link).unwrap();
    }
}

#[test]
fn a_fifo_or_a_directory_is_refused_promptly() {
    let tmp = TempDir::new("fifo");
    let dir = Arc::new(OsDir::open(tmp.path(), true, ReadBackendChoice::Auto).unwrap());
    let fifo = dir.path().join("ubt.wal");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}: {status}", fifo.display());
    for create in [false, true] {
        let dir = Arc::clone(&dir);
        let result = promptly("opening a FIFO", move || {
            dir.open_file("ubt.wal", create).map(|_| ())
        });
        assert_refused(result, &fifo, "is not a regular file");
    }
    let reader = Arc::clone(&dir);
    let result = promptly("opening a FIFO read-only", move || {
        reader.open_file_read_only("ubt.wal").map(|_| ())
    });
    assert_refused(result, &fifo, "is not a regular file");

    let sub = dir.path().join("ubt.data");
    std::fs::create_dir(&sub).unwrap();
    for create in [false, true] {
        assert_refused(
            dir.open_file("ubt.data", create).map(|_| ()),
            &sub,
            "is not a regular file",
        );
    }
    assert_refused(
        dir.open_file_read_only("ubt.data").map(|_| ()),
        &sub,
        "is not a regular file",
    );
}

#[test]
fn database_path_rules() {
    for create in [false, true] {
        let error = OsDir::open(Path::new(""), create, ReadBackendChoice::Auto).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
        assert!(error.to_string().contains("empty database path"), "{error}");
    }

    // A dangling symbolic link: a clear error, and nothing created.
    let tmp = TempDir::new("dangling");
    std::fs::create_dir_all(tmp.path()).unwrap();
    let target = tmp.path().join("target");
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for create in [false, true] {
        let error = OsDir::open(&link, create, ReadBackendChoice::Auto).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains(&format!("{} is a dangling symbolic link", link.display())),
            "{message}"
        );
        if !create {
            assert_eq!(error.kind(), io::ErrorKind::NotFound, "{message}");
        }
        assert!(!target.exists(), "the link's target was created");
    }

    // A link to a real directory is the user's choice: allowed.
    std::fs::create_dir(&target).unwrap();
    let dir = OsDir::open(&link, false, ReadBackendChoice::Auto).unwrap();
    drop(dir.open_file("ubt.wal", true).unwrap());
    assert!(target.join("ubt.wal").is_file());
    let dir = OsDir::open(&link, true, ReadBackendChoice::Auto).unwrap();
    assert!(dir.exists("ubt.wal").unwrap());
}

#[test]
fn read_only_files_read_and_refuse_every_change() {
    for choice in BACKENDS {
        let (tmp, dir, writer, content) = setup("read-only", choice);
        drop(writer);
        let path = tmp.path().join("data");
        let before = std::fs::metadata(&path).unwrap();
        let file = dir.open_file_read_only("data").unwrap();
        assert_eq!(file.read_backend(), dir.read_backend());
        assert_eq!(file.len().unwrap(), FILE_LEN as u64);
        let mut buf = vec![0u8; 4096];
        file.read_exact_at(&mut buf, 12_345).unwrap();
        assert_eq!(buf, content[12_345..12_345 + 4096]);
        let requests = random_requests(&mut SplitMix64(3), 500, FILE_LEN);
        for (request, result) in requests.iter().zip(file.read_batch(&requests)) {
            assert_eq!(result.unwrap(), expected(&content, *request));
        }

        let refusals = [
            ("write", file.write_all_at(b"x", 0)),
            (
                "write past the end",
                file.write_all_at(b"x", FILE_LEN as u64),
            ),
            ("set_len shrinking", file.set_len(0)),
            ("set_len growing", file.set_len(FILE_LEN as u64 * 2)),
            ("sync_data", file.sync_data()),
        ];
        for (what, result) in refusals {
            let error = result.expect_err(what);
            assert_eq!(
                error.kind(),
                io::ErrorKind::PermissionDenied,
                "{what}: {error}"
            );
            assert!(
                error.to_string().contains("opened read-only"),
                "{what}: {error}"
            );
            assert!(
                error.to_string().contains(&path.display().to_string()),
                "{what}: {error}"
            );
        }
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(after.len(), FILE_LEN as u64);
        assert_eq!(after.modified().unwrap(), before.modified().unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), content);

        // Never creates.
        let error = dir.open_file_read_only("absent").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound, "{error}");
        assert!(!dir.exists("absent").unwrap());
        for bad in ["", ".", "..", "a/b"] {
            let error = dir.open_file_read_only(bad).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}

#[test]
fn read_only_open_needs_no_write_permission() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("mode");
    let dir = OsDir::open(tmp.path(), true, ReadBackendChoice::ThreadPool).unwrap();
    let file = dir.open_file("data", true).unwrap();
    file.write_all_at(b"read me", 0).unwrap();
    drop(file);
    let path = tmp.path().join("data");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let file = dir.open_file_read_only("data").unwrap();
    let mut buf = [0u8; 7];
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"read me");
}

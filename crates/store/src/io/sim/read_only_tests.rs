//! Tests of the simulated disk's shared locks, read-only files, read-only
//! media and mutating-call count.

use super::*;
use crate::io::ReadRequest;

/// A directory with `name` created, its name synced, holding `bytes`
/// durably, plus one pending write (`b"P"` at 0) so that live and durable
/// images differ.
fn dir_with_pending(name: &str, bytes: &[u8]) -> (SimDir, Arc<dyn StoreFile>) {
    let dir = SimDir::new();
    let file = dir.open_file(name, true).expect("create simulated file");
    file.write_all_at(bytes, 0).unwrap();
    file.sync_data().unwrap();
    dir.sync_dir().unwrap();
    file.write_all_at(b"P", 0).unwrap();
    (dir, file)
}

/// Everything a read-only handle must leave alone.
#[derive(Debug, PartialEq, Eq)]
struct State {
    names: Vec<String>,
    live: Vec<Option<Vec<u8>>>,
    durable: Vec<Option<Vec<u8>>>,
    pending: Vec<Option<usize>>,
    events: Vec<SimEvent>,
}

fn state(dir: &SimDir) -> State {
    let names = dir.file_names();
    State {
        live: names.iter().map(|n| dir.file_bytes(n)).collect(),
        durable: names.iter().map(|n| dir.durable_bytes(n)).collect(),
        pending: names.iter().map(|n| dir.pending_ops(n)).collect(),
        events: dir.events(),
        names,
    }
}

fn assert_would_block(result: io::Result<Box<dyn DirLock>>, context: &str) {
    match result {
        Ok(guard) => panic!("{context}: granted {guard:?}"),
        Err(error) => assert_eq!(error.kind(), io::ErrorKind::WouldBlock, "{context}"),
    }
}

#[test]
fn shared_locks_coexist_and_exclude_the_writer() {
    let dir = SimDir::new();
    let clone = dir.clone();
    let first = dir.lock_shared().unwrap();
    assert!(format!("{first:?}").contains("shared"), "{first:?}");
    let second = clone.lock_shared().unwrap();
    let third = dir.lock_shared().unwrap();
    assert_would_block(dir.lock_exclusive(), "writer beside three readers");
    assert_would_block(clone.lock_exclusive(), "writer beside three readers");
    drop(first);
    drop(third);
    assert_would_block(dir.lock_exclusive(), "writer beside one reader");
    // A crash image is another directory with its own lock.
    let image = dir.crash_image(CrashMode::KeepUnsynced, 0);
    drop(image.lock_exclusive().unwrap());
    drop(second);

    let writer = clone.lock_exclusive().unwrap();
    assert!(format!("{writer:?}").contains("exclusive"), "{writer:?}");
    assert_would_block(dir.lock_shared(), "reader beside the writer");
    assert_would_block(dir.lock_exclusive(), "second writer");
    drop(writer);
    let reader = dir.lock_shared().unwrap();
    drop(reader);
    drop(dir.lock_exclusive().unwrap());
    assert_eq!(dir.op_count(), 0, "locking is not an operation");
    assert_eq!(dir.mutating_op_count(), 0);
}

#[test]
fn read_only_files_refuse_changes_without_an_operation() {
    let (dir, writer) = dir_with_pending("f", b"abcdef");
    let ops = dir.op_count();
    let mutating = dir.mutating_op_count();
    let file = dir.open_file_read_only("f").unwrap();
    assert!(format!("{file:?}").contains("read-only"), "{file:?}");
    assert_eq!(dir.op_count(), ops + 1, "opening is an operation");
    let before = state(&dir);

    let refusals = [
        ("write", file.write_all_at(b"XY", 1)),
        ("empty write", file.write_all_at(b"", 0)),
        ("set_len shrinking", file.set_len(1)),
        ("set_len growing", file.set_len(100)),
        ("sync", file.sync_data()),
    ];
    for (what, result) in refusals {
        let error = result.expect_err(what);
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{what}");
        assert!(error.to_string().contains("read-only"), "{what}: {error}");
    }
    assert_eq!(state(&dir), before, "a refused call changed something");
    assert_eq!(dir.op_count(), ops + 1, "refused calls are not operations");
    assert_eq!(dir.mutating_op_count(), mutating + 5, "refused calls count");

    // A crash point or fault does not turn a refusal into something else.
    dir.set_crash_at(Some(dir.op_count()));
    let error = file.write_all_at(b"Z", 0).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
    assert!(!dir.crashed());
    dir.set_crash_at(None);

    // Reads see the live image, pending write included.
    assert_eq!(file.len().unwrap(), 6);
    let mut buf = [0u8; 6];
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"Pbcdef");
    // The read-write handle still writes, and the reader sees it.
    writer.write_all_at(b"Q", 5).unwrap();
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"PbcdeQ");

    // Never creates: a missing name is NotFound and stays missing.
    let ops = dir.op_count();
    let error = dir.open_file_read_only("g").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    assert_eq!(dir.op_count(), ops + 1);
    assert_eq!(dir.file_names(), ["f"]);
}

/// Reads of a read-only file: the same results, errors and operation
/// indices as reads of a read-write one, under the same injected faults
/// and crash point.
#[test]
fn read_only_reads_behave_like_read_write_reads() {
    type Outcome = (
        Vec<Result<Vec<u8>, (io::ErrorKind, Option<i32>)>>,
        u64,
        bool,
    );
    let run = |read_only: bool| -> Outcome {
        let (dir, _writer) = dir_with_pending("f", &(0..200u8).collect::<Vec<_>>());
        let file = if read_only {
            dir.open_file_read_only("f").unwrap()
        } else {
            dir.open_file("f", false).unwrap()
        };
        let base = dir.op_count();
        dir.fail_op(base + 1, FaultKind::Eio);
        dir.fail_op(base + 3, FaultKind::Enospc);
        dir.fail_op(base + 6, FaultKind::DiskFull);
        dir.set_crash_at(Some(base + 12));
        let mut results = Vec::new();
        let requests: Vec<ReadRequest> = (0..4)
            .map(|i| ReadRequest {
                offset: i * 40,
                len: 50,
            })
            .chain([ReadRequest {
                offset: 190,
                len: 20,
            }])
            .collect();
        for round in 0..3 {
            let mut buf = vec![0u8; 10 + round];
            results.push(
                file.read_exact_at(&mut buf, round as u64 * 7)
                    .map(|()| buf)
                    .map_err(|e| (e.kind(), e.raw_os_error())),
            );
            results.push(
                file.len()
                    .map(|len| len.to_le_bytes().to_vec())
                    .map_err(|e| (e.kind(), e.raw_os_error())),
            );
            for result in file.read_batch(&requests) {
                results.push(result.map_err(|e| (e.kind(), e.raw_os_error())));
            }
        }
        (results, dir.op_count() - base, dir.crashed())
    };
    let read_write = run(false);
    let read_only = run(true);
    assert_eq!(read_only, read_write);
    // The script did meet every kind of failure.
    let errors: Vec<_> = read_write
        .0
        .iter()
        .filter_map(|r| r.clone().err())
        .collect();
    assert!(errors.contains(&(io::ErrorKind::Other, None)), "{errors:?}");
    assert!(errors.iter().any(|e| e.1 == Some(libc::EIO)), "{errors:?}");
    assert!(
        errors.iter().any(|e| e.1 == Some(libc::ENOSPC)),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.0 == io::ErrorKind::UnexpectedEof),
        "{errors:?}"
    );
    assert!(read_write.2, "the crash point was reached");
}

fn assert_erofs<T: fmt::Debug>(result: io::Result<T>, what: &str) {
    let error = result.expect_err(what);
    assert_eq!(error.raw_os_error(), Some(libc::EROFS), "{what}: {error}");
}

#[test]
fn read_only_media_refuses_every_change_with_erofs() {
    let (dir, writer) = dir_with_pending("f", b"abcdef");
    dir.set_read_only_media(true);
    assert!(dir.read_only_media());
    let before = state(&dir);
    let ops = dir.op_count();
    let mutating = dir.mutating_op_count();

    assert_erofs(writer.write_all_at(b"X", 0), "write");
    assert_erofs(writer.set_len(1), "set_len shrinking");
    assert_erofs(writer.set_len(100), "set_len growing");
    assert_erofs(writer.sync_data(), "sync_data");
    assert_erofs(dir.sync_dir(), "sync_dir");
    assert_erofs(dir.open_file("g", true), "creation");
    assert_erofs(dir.open_file("f", true), "read-write open with create");
    assert_erofs(dir.open_file("f", false), "read-write open");
    assert_eq!(
        dir.open_file("g", false).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(dir.op_count(), ops + 9, "each failure is an operation");
    assert_eq!(dir.mutating_op_count(), mutating + 7);
    assert_eq!(state(&dir), before, "read-only media changed");
    assert_eq!(dir.file_names(), ["f"]);

    // Reading works, through both kinds of handle.
    let mutating = dir.mutating_op_count();
    let reader = dir.open_file_read_only("f").unwrap();
    let mut buf = [0u8; 6];
    reader.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"Pbcdef");
    writer.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"Pbcdef");
    assert_eq!(reader.len().unwrap(), 6);
    assert!(dir.exists("f").unwrap());
    assert_eq!(dir.list().unwrap(), ["f"]);
    drop(dir.lock_shared().unwrap());
    assert_eq!(dir.mutating_op_count(), mutating, "reads are not mutating");
    // A read-only file refuses before the media is asked.
    assert_eq!(
        reader.sync_data().unwrap_err().kind(),
        io::ErrorKind::PermissionDenied
    );

    // Crash points and injected faults come first.
    dir.fail_op(dir.op_count(), FaultKind::Eio);
    assert_eq!(
        writer.write_all_at(b"X", 0).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    dir.set_crash_at(Some(dir.op_count()));
    assert_eq!(
        writer.sync_data().unwrap_err().kind(),
        io::ErrorKind::Other,
        "simulated crash"
    );
    assert!(dir.crashed());
    dir.set_crash_at(None);

    // A crash image has writable media; so has the disk once switched back.
    let image = dir.crash_image(CrashMode::KeepUnsynced, 0);
    assert!(!image.read_only_media());
    assert_eq!(image.mutating_op_count(), 0);
    drop(image.open_file("g", true).unwrap());
    dir.set_read_only_media(false);
    writer.write_all_at(b"X", 0).unwrap();
    writer.sync_data().unwrap();
    assert_eq!(dir.durable_bytes("f").unwrap(), b"Xbcdef");
}

#[test]
fn mutating_op_count_counts_exactly_the_changing_calls() {
    let dir = SimDir::new();
    let file = dir.open_file("f", true).unwrap();
    assert_eq!(dir.mutating_op_count(), 1, "creation");
    file.write_all_at(b"abc", 0).unwrap();
    file.set_len(2).unwrap();
    file.sync_data().unwrap();
    dir.sync_dir().unwrap();
    assert_eq!(dir.mutating_op_count(), 5);
    // Opening an existing file with `create` may create: counted.
    drop(dir.open_file("f", true).unwrap());
    assert_eq!(dir.mutating_op_count(), 6);
    // Failed calls count too.
    dir.fail_op(dir.op_count(), FaultKind::Eio);
    assert!(file.write_all_at(b"x", 0).is_err());
    assert_eq!(dir.mutating_op_count(), 7);

    let mark = dir.mutating_op_count();
    let reader = dir.open_file_read_only("f").unwrap();
    drop(dir.open_file("f", false).unwrap());
    let mut buf = [0u8; 2];
    file.read_exact_at(&mut buf, 0).unwrap();
    reader.read_exact_at(&mut buf, 0).unwrap();
    let _ = reader.read_batch(&[ReadRequest { offset: 0, len: 1 }]);
    file.len().unwrap();
    reader.is_empty().unwrap();
    dir.exists("f").unwrap();
    dir.list().unwrap();
    drop(dir.lock_shared().unwrap());
    drop(dir.lock_exclusive().unwrap());
    let _ = dir.crash_image(CrashMode::DropUnsynced, 0);
    dir.flip_bit("f", 0, 0).unwrap();
    dir.write_raw("f", 0, b"a").unwrap();
    assert_eq!(dir.mutating_op_count(), mark, "none of these is mutating");
}

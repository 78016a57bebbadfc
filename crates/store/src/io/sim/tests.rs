use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::io::ReadRequest;

fn create(dir: &SimDir, name: &str) -> Arc<dyn StoreFile> {
    dir.open_file(name, true).expect("create simulated file")
}

/// A directory with `name` created, its name synced, holding `bytes`
/// durably.
fn synced_file(name: &str, bytes: &[u8]) -> (SimDir, Arc<dyn StoreFile>) {
    let dir = SimDir::new();
    let file = create(&dir, name);
    file.write_all_at(bytes, 0).unwrap();
    file.sync_data().unwrap();
    dir.sync_dir().unwrap();
    (dir, file)
}

fn read_all(file: &dyn StoreFile) -> Vec<u8> {
    let mut buf = vec![0u8; file.len().unwrap() as usize];
    file.read_exact_at(&mut buf, 0).unwrap();
    buf
}

#[test]
fn unsynced_writes_vanish_under_drop_and_survive_under_keep() {
    let (dir, file) = synced_file("f", &[1u8; 1000]);
    file.write_all_at(&[2u8; 100], 500).unwrap();
    file.write_all_at(&[3u8; 50], 1200).unwrap();
    let mut live = vec![1u8; 1000];
    live[500..600].fill(2);
    live.resize(1250, 0);
    live[1200..1250].fill(3);
    assert_eq!(read_all(&*file), live);
    assert_eq!(dir.file_bytes("f").unwrap(), live);
    assert_eq!(dir.durable_bytes("f").unwrap(), vec![1u8; 1000]);
    assert_eq!(dir.pending_ops("f"), Some(2));

    let dropped = dir.crash_image(CrashMode::DropUnsynced, 0);
    assert_eq!(dropped.file_bytes("f").unwrap(), vec![1u8; 1000]);
    let kept = dir.crash_image(CrashMode::KeepUnsynced, 0);
    assert_eq!(kept.file_bytes("f").unwrap(), live);

    // Once synced, both modes keep everything.
    file.sync_data().unwrap();
    assert_eq!(dir.pending_ops("f"), Some(0));
    assert_eq!(dir.durable_bytes("f").unwrap(), live);
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::RandomSubset,
        CrashMode::Torn,
    ] {
        let image = dir.crash_image(mode, 7);
        assert_eq!(image.file_bytes("f").unwrap(), live, "{mode:?}");
        assert_eq!(image.pending_ops("f"), Some(0));
        // The image is independent of the original.
        let reopened = image.open_file("f", false).unwrap();
        reopened.write_all_at(&[9], 0).unwrap();
        assert_eq!(dir.file_bytes("f").unwrap()[0], 1);
    }
}

#[test]
fn images_are_fully_synced_fresh_directories() {
    let (dir, file) = synced_file("f", b"hello");
    file.write_all_at(b"J", 0).unwrap();
    dir.fail_op(dir.op_count() + 5, FaultKind::EioPersistent);
    let _lock = dir.lock_exclusive().unwrap();
    let image = dir.crash_image(CrashMode::KeepUnsynced, 0);
    assert_eq!(image.op_count(), 0);
    assert!(image.events().is_empty());
    assert_eq!(image.durable_bytes("f").unwrap(), b"Jello");
    assert!(image.lock_exclusive().is_ok());
    let f = image.open_file("f", false).unwrap();
    for _ in 0..10 {
        f.len().unwrap();
    }
    // Names in an image are durable.
    assert_eq!(
        image
            .crash_image(CrashMode::DropUnsynced, 0)
            .file_bytes("f")
            .unwrap(),
        b"Jello"
    );
    assert_ne!(image.describe(), dir.describe());
}

#[test]
fn created_file_needs_sync_dir() {
    let dir = SimDir::new();
    let file = create(&dir, "new");
    file.write_all_at(b"data", 0).unwrap();
    file.sync_data().unwrap();
    assert!(dir.exists("new").unwrap());
    assert_eq!(dir.durable_bytes("new").unwrap(), b"data");

    let lost = dir.crash_image(CrashMode::DropUnsynced, 0);
    assert!(!lost.exists("new").unwrap());
    assert_eq!(lost.file_bytes("new"), None);
    assert!(lost.open_file("new", false).is_err());
    assert_eq!(
        lost.open_file("new", false).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    let kept = dir.crash_image(CrashMode::KeepUnsynced, 0);
    assert_eq!(kept.file_bytes("new").unwrap(), b"data");

    // Under the random modes the name survives for some seeds only.
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let image = dir.crash_image(CrashMode::RandomSubset, seed);
        outcomes.insert(image.file_bytes("new"));
    }
    assert_eq!(
        outcomes,
        BTreeSet::from([None, Some(b"data".to_vec())]),
        "the synced data survives whenever the name does"
    );

    dir.sync_dir().unwrap();
    for mode in [CrashMode::DropUnsynced, CrashMode::RandomSubset] {
        for seed in 0..16 {
            let image = dir.crash_image(mode, seed);
            assert_eq!(image.file_bytes("new").unwrap(), b"data");
        }
    }
    // A file created after the directory sync is pending again.
    create(&dir, "later");
    let image = dir.crash_image(CrashMode::DropUnsynced, 0);
    assert!(image.exists("new").unwrap());
    assert!(!image.exists("later").unwrap());
}

#[test]
fn random_subset_is_deterministic_and_varied() {
    let (dir, file) = synced_file("f", &[0u8; 4096]);
    for i in 0..6u8 {
        file.write_all_at(&[i + 1; 100], u64::from(i) * 600)
            .unwrap();
    }
    file.set_len(5000).unwrap();
    let mut kept = [0usize; 6];
    let mut dropped = [0usize; 6];
    let mut lengths = BTreeSet::new();
    let mut images = BTreeSet::new();
    for seed in 0..200 {
        let a = dir
            .crash_image(CrashMode::RandomSubset, seed)
            .file_bytes("f")
            .unwrap();
        let b = dir
            .crash_image(CrashMode::RandomSubset, seed)
            .file_bytes("f")
            .unwrap();
        assert_eq!(a, b, "seed {seed} is deterministic");
        for i in 0..6u8 {
            let start = usize::from(i) * 600;
            let region = &a[start..start + 100];
            if region.iter().all(|&x| x == i + 1) {
                kept[usize::from(i)] += 1;
            } else {
                assert!(region.iter().all(|&x| x == 0), "write {i} all or nothing");
                dropped[usize::from(i)] += 1;
            }
        }
        lengths.insert(a.len());
        images.insert(a);
    }
    for i in 0..6 {
        assert!(
            kept[i] > 20 && dropped[i] > 20,
            "write {i}: {kept:?} {dropped:?}"
        );
    }
    assert_eq!(lengths, BTreeSet::from([4096, 5000]));
    assert!(images.len() > 50, "only {} distinct images", images.len());
}

#[test]
fn random_subset_replays_kept_writes_in_order() {
    let (dir, file) = synced_file("f", &[0u8; 20]);
    file.write_all_at(&[1u8; 10], 0).unwrap();
    file.write_all_at(&[2u8; 10], 5).unwrap();
    let none = vec![0u8; 20];
    let mut first = none.clone();
    first[0..10].fill(1);
    let mut second = none.clone();
    second[5..15].fill(2);
    let mut both = first.clone();
    both[5..15].fill(2);
    let mut seen = BTreeSet::new();
    for seed in 0..100 {
        let image = dir
            .crash_image(CrashMode::RandomSubset, seed)
            .file_bytes("f")
            .unwrap();
        assert!([&none, &first, &second, &both].contains(&&image));
        seen.insert(image);
    }
    assert_eq!(seen.len(), 4);
}

/// How one sector of a write's range looks in a crash image: all new
/// bytes, all old ones (zeros or nothing beyond the old end), or neither.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SectorState {
    New,
    Old,
    Other,
}

#[test]
fn torn_writes_alter_only_their_own_range_in_sector_prefixes() {
    const OLD: u8 = 0xAA;
    const NEW: u8 = 0x55;
    let old_len = 4096u64;
    let (dir, file) = synced_file("f", &vec![OLD; old_len as usize]);
    // Non-overlapping, unaligned, one extending the file past a gap.
    let writes: [(u64, u64); 5] = [
        (100, 700),
        (1500, 1100),
        (3000, 1096),
        (4296, 1000),
        (2700, 10),
    ];
    for &(offset, len) in &writes {
        file.write_all_at(&vec![NEW; len as usize], offset).unwrap();
    }
    let in_write = |pos: u64| writes.iter().any(|&(o, l)| pos >= o && pos < o + l);
    let mut torn_seen = 0;
    let mut garbage_seen = 0;
    let mut zero_seen = 0;
    let mut lengths = BTreeSet::new();
    for seed in 0..500 {
        let image = dir
            .crash_image(CrashMode::Torn, seed)
            .file_bytes("f")
            .unwrap();
        let len = image.len() as u64;
        lengths.insert(len);
        assert!(len == old_len || (len > 4296 && len <= 5296), "len {len}");
        assert!(len == old_len || len == 5296 || len.is_multiple_of(SECTOR_SIZE));
        // Nothing outside the writes' ranges changes.
        for (pos, &byte) in image.iter().enumerate() {
            let pos = pos as u64;
            if !in_write(pos) {
                let old = if pos < old_len { OLD } else { 0 };
                assert_eq!(byte, old, "seed {seed}: byte {pos} outside every write");
            }
        }
        // Within each write: new sectors, then at most one torn sector,
        // then old ones.
        for &(offset, wlen) in &writes {
            let end = offset + wlen;
            let mut states = Vec::new();
            let mut sector = offset / SECTOR_SIZE;
            while sector * SECTOR_SIZE < end {
                let lo = offset.max(sector * SECTOR_SIZE);
                let hi = end.min((sector + 1) * SECTOR_SIZE);
                let bytes: Vec<Option<u8>> =
                    (lo..hi).map(|p| image.get(p as usize).copied()).collect();
                let old_at = |p: u64| if p < old_len { Some(OLD) } else { None };
                let state = if bytes.iter().all(|&b| b == Some(NEW)) {
                    SectorState::New
                } else if (lo..hi)
                    .zip(&bytes)
                    .all(|(p, &b)| b == old_at(p) || (p >= old_len && b == Some(0)))
                {
                    SectorState::Old
                } else {
                    if bytes.iter().all(|&b| b == Some(0)) {
                        zero_seen += 1;
                    } else {
                        garbage_seen += 1;
                    }
                    SectorState::Other
                };
                states.push(state);
                sector += 1;
            }
            let k = states
                .iter()
                .position(|&s| s != SectorState::New)
                .unwrap_or(states.len());
            assert!(
                states.iter().skip(k + 1).all(|&s| s == SectorState::Old),
                "seed {seed}: write at {offset}: {states:?}"
            );
            if k > 0 && k < states.len() {
                torn_seen += 1;
            }
        }
    }
    assert!(torn_seen > 50, "{torn_seen} torn writes");
    assert!(
        garbage_seen > 20 && zero_seen > 20,
        "{garbage_seen} {zero_seen}"
    );
    assert!(lengths.len() > 3, "{lengths:?}");
    // Same seed, same image.
    assert_eq!(
        dir.crash_image(CrashMode::Torn, 3).file_bytes("f"),
        dir.crash_image(CrashMode::Torn, 3).file_bytes("f")
    );
}

#[test]
fn fail_op_fails_once_with_the_right_error_and_changes_nothing() {
    let (dir, file) = synced_file("f", b"abcdef");
    file.write_all_at(b"X", 0).unwrap();
    let before = dir.file_bytes("f").unwrap();
    let events_before = dir.events().len();

    let n = dir.op_count();
    dir.fail_op(n, FaultKind::Eio);
    dir.fail_op(n + 2, FaultKind::Enospc);
    let err = file.write_all_at(b"YYYYYYYYYY", 2).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(dir.op_count(), n + 1, "failed operations take an index");
    assert_eq!(
        dir.file_bytes("f").unwrap(),
        before,
        "failed write changed nothing"
    );
    assert_eq!(dir.pending_ops("f"), Some(1));
    assert_eq!(dir.events().len(), events_before);
    // Once only: the next operation succeeds.
    assert_eq!(file.len().unwrap(), 6);
    let err = file.write_all_at(b"Z", 10).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    assert_eq!(dir.file_bytes("f").unwrap(), before);
    file.write_all_at(b"Z", 1).unwrap();
    assert_eq!(dir.file_bytes("f").unwrap(), b"XZcdef");

    // A failed sync leaves the pending writes pending.
    dir.fail_op(dir.op_count(), FaultKind::Eio);
    let err = file.sync_data().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(dir.pending_ops("f"), Some(2));
    assert_eq!(dir.durable_bytes("f").unwrap(), b"abcdef");
    assert_eq!(
        dir.crash_image(CrashMode::DropUnsynced, 0)
            .file_bytes("f")
            .unwrap(),
        b"abcdef"
    );
    file.sync_data().unwrap();
    assert_eq!(dir.durable_bytes("f").unwrap(), b"XZcdef");

    // Reads, directory operations and past indices.
    dir.fail_op(0, FaultKind::Eio);
    dir.fail_op(dir.op_count(), FaultKind::Enospc);
    let mut buf = [0u8; 2];
    assert_eq!(
        file.read_exact_at(&mut buf, 0).unwrap_err().raw_os_error(),
        Some(libc::ENOSPC)
    );
    dir.fail_op(dir.op_count() + 1, FaultKind::Eio);
    dir.exists("f").unwrap();
    assert_eq!(dir.sync_dir().unwrap_err().raw_os_error(), Some(libc::EIO));
    dir.fail_op(dir.op_count(), FaultKind::Eio);
    assert!(dir.open_file("g", true).is_err());
    assert!(!dir.exists("g").unwrap(), "failed creation created nothing");
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"XZ");
}

#[test]
fn persistent_eio_fails_every_later_operation() {
    let (dir, file) = synced_file("f", b"abc");
    let n = dir.op_count() + 2;
    dir.fail_op(n, FaultKind::EioPersistent);
    file.len().unwrap();
    file.write_all_at(b"d", 3).unwrap();
    for _ in 0..5 {
        assert_eq!(file.len().unwrap_err().raw_os_error(), Some(libc::EIO));
        assert_eq!(
            file.write_all_at(b"e", 4).unwrap_err().raw_os_error(),
            Some(libc::EIO)
        );
        assert_eq!(
            file.sync_data().unwrap_err().raw_os_error(),
            Some(libc::EIO)
        );
        assert_eq!(dir.sync_dir().unwrap_err().raw_os_error(), Some(libc::EIO));
    }
    assert_eq!(dir.file_bytes("f").unwrap(), b"abcd");
    assert_eq!(dir.durable_bytes("f").unwrap(), b"abc");
    dir.clear_faults();
    file.sync_data().unwrap();
    assert_eq!(dir.durable_bytes("f").unwrap(), b"abcd");
}

/// One operation of a scripted workload.
#[derive(Clone, Debug)]
enum Step {
    Open(&'static str),
    Write(&'static str, u64, Vec<u8>),
    SetLen(&'static str, u64),
    Sync(&'static str),
    SyncDir,
    Read(&'static str, u64, usize),
}

fn script() -> Vec<Step> {
    use Step::*;
    vec![
        Open("a"),
        Write("a", 0, vec![1; 700]),
        Open("b"),
        Write("b", 100, vec![2; 50]),
        SyncDir,
        Sync("a"),
        Read("a", 10, 20),
        Write("a", 600, vec![3; 600]),
        SetLen("b", 120),
        Sync("b"),
        Open("c"),
        Write("c", 0, vec![4; 10]),
        Sync("c"),
        Write("a", 0, vec![5; 10]),
        Sync("a"),
        SyncDir,
        Write("b", 0, vec![6; 1000]),
    ]
}

/// Runs the steps in order, continuing after failures; returns each step's
/// error, if any. A step on a file whose opening failed reopens it first
/// (which fails again after a crash).
fn run(dir: &SimDir, steps: &[Step]) -> Vec<Option<io::Error>> {
    let mut files: BTreeMap<&str, Arc<dyn StoreFile>> = BTreeMap::new();
    let mut errors = Vec::new();
    for step in steps {
        let handle = |name: &'static str| -> io::Result<Arc<dyn StoreFile>> {
            match files.get(name) {
                Some(file) => Ok(Arc::clone(file)),
                None => dir.open_file(name, false),
            }
        };
        let result = match step {
            Step::Open(name) => dir.open_file(name, true).map(|f| {
                files.insert(name, f);
            }),
            Step::SyncDir => dir.sync_dir(),
            Step::Write(name, offset, bytes) => {
                handle(name).and_then(|f| f.write_all_at(bytes, *offset))
            }
            Step::SetLen(name, len) => handle(name).and_then(|f| f.set_len(*len)),
            Step::Sync(name) => handle(name).and_then(|f| f.sync_data()),
            Step::Read(name, offset, len) => handle(name).and_then(|f| {
                let mut buf = vec![0u8; *len];
                f.read_exact_at(&mut buf, *offset)
            }),
        };
        errors.push(result.err());
    }
    errors
}

fn snapshot(dir: &SimDir) -> Vec<(String, Vec<u8>)> {
    dir.file_names()
        .into_iter()
        .map(|name| {
            let bytes = dir.file_bytes(&name).unwrap();
            (name, bytes)
        })
        .collect()
}

#[test]
fn crash_at_stops_exactly_at_the_nth_operation() {
    let steps = script();
    let full = SimDir::new();
    assert!(run(&full, &steps).iter().all(Option::is_none));
    assert_eq!(full.op_count(), steps.len() as u64);

    for n in 0..=steps.len() {
        let dir = SimDir::new();
        dir.set_crash_at(Some(n as u64));
        let errors = run(&dir, &steps);
        for (i, error) in errors.iter().enumerate() {
            if i < n {
                assert!(error.is_none(), "crash at {n}: step {i} failed");
            } else {
                let error = error.as_ref().expect("steps at or after the crash fail");
                assert_eq!(error.kind(), io::ErrorKind::Other);
                assert_eq!(error.to_string(), "simulated crash");
            }
        }
        assert_eq!(dir.crashed(), n < steps.len());
        assert!(dir.events().iter().all(|e| e.index < n as u64));

        // The crashed directory holds exactly what the first n steps made.
        let reference = SimDir::new();
        assert!(run(&reference, &steps[..n]).iter().all(Option::is_none));
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::KeepUnsynced,
            CrashMode::RandomSubset,
            CrashMode::Torn,
        ] {
            for seed in 0..4 {
                assert_eq!(
                    snapshot(&dir.crash_image(mode, seed)),
                    snapshot(&reference.crash_image(mode, seed)),
                    "crash at {n}, {mode:?}, seed {seed}"
                );
            }
        }
        // Lifting the crash point lets operations through again.
        dir.set_crash_at(None);
        assert!(!dir.crashed());
        dir.sync_dir().unwrap();
    }
}

#[test]
fn event_log_records_effective_operations() {
    let dir = SimDir::new();
    let f = create(&dir, "f");
    f.write_all_at(b"abc", 5).unwrap();
    f.len().unwrap();
    let mut buf = [0u8; 1];
    f.read_exact_at(&mut buf, 0).unwrap();
    f.set_len(4).unwrap();
    dir.exists("f").unwrap();
    f.sync_data().unwrap();
    dir.sync_dir().unwrap();
    let _ = dir.open_file("f", true).unwrap(); // Already exists: no event.
    let file = Some("f".to_string());
    assert_eq!(
        dir.events(),
        vec![
            SimEvent {
                index: 0,
                file: file.clone(),
                kind: SimEventKind::Create
            },
            SimEvent {
                index: 1,
                file: file.clone(),
                kind: SimEventKind::Write { offset: 5, len: 3 }
            },
            SimEvent {
                index: 4,
                file: file.clone(),
                kind: SimEventKind::SetLen { len: 4 }
            },
            SimEvent {
                index: 6,
                file,
                kind: SimEventKind::Sync
            },
            SimEvent {
                index: 7,
                file: None,
                kind: SimEventKind::SyncDir
            },
        ]
    );
    assert_eq!(dir.op_count(), 9);
}

#[test]
fn reads_writes_and_lengths() {
    let dir = SimDir::new();
    assert_eq!(
        dir.open_file("missing", false).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    let f = create(&dir, "f");
    assert!(f.is_empty().unwrap());
    assert_eq!(f.read_backend(), ReadBackendKind::Sequential);
    f.write_all_at(b"xy", 4).unwrap();
    assert_eq!(read_all(&*f), b"\0\0\0\0xy");
    let mut buf = [0u8; 3];
    let err = f.read_exact_at(&mut buf, 4).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(
        f.read_exact_at(&mut buf, u64::MAX).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    f.read_exact_at(&mut buf, 3).unwrap();
    assert_eq!(&buf, b"\0xy");
    f.read_exact_at(&mut [], 100).unwrap();
    f.write_all_at(&[], 100).unwrap();
    assert_eq!(f.len().unwrap(), 6);
    f.set_len(5).unwrap();
    f.set_len(8).unwrap();
    assert_eq!(read_all(&*f), b"\0\0\0\0x\0\0\0");
    assert_eq!(
        f.write_all_at(b"z", MAX_FILE_LEN)
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EFBIG)
    );
    assert_eq!(
        f.set_len(MAX_FILE_LEN + 1).unwrap_err().raw_os_error(),
        Some(libc::EFBIG)
    );
    // Another handle on the same file sees the same bytes.
    let g = dir.open_file("f", false).unwrap();
    assert_eq!(read_all(&*g), read_all(&*f));
    // Batched reads go one by one, one operation each.
    let before = dir.op_count();
    let results = g.read_batch(&[
        ReadRequest { offset: 4, len: 1 },
        ReadRequest { offset: 7, len: 2 },
        ReadRequest { offset: 0, len: 2 },
    ]);
    assert_eq!(dir.op_count(), before + 3);
    assert_eq!(results[0].as_ref().unwrap(), b"x");
    assert_eq!(
        results[1].as_ref().unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    assert_eq!(results[2].as_ref().unwrap(), b"\0\0");
    assert!(dir.describe().starts_with("sim:"));
    assert!(format!("{f:?}").contains("/f"));
    assert_eq!(dir.file_names(), vec!["f".to_string()]);
}

#[test]
fn flip_bit_flips_exactly_one_bit() {
    let original: Vec<u8> = (0..=255).collect();
    let (dir, file) = synced_file("f", &original);
    dir.flip_bit("f", 10, 3).unwrap();
    let differing = |a: &[u8], b: &[u8]| -> u32 {
        assert_eq!(a.len(), b.len());
        a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
    };
    let live = dir.file_bytes("f").unwrap();
    assert_eq!(differing(&live, &original), 1);
    assert_eq!(live[10], original[10] ^ 8);
    assert_eq!(dir.durable_bytes("f").unwrap(), live);
    assert_eq!(read_all(&*file), live);

    // Under a pending write the flip survives a sync.
    file.write_all_at(&[0u8; 20], 100).unwrap();
    let before = dir.file_bytes("f").unwrap();
    dir.flip_bit("f", 105, 0).unwrap();
    let after = dir.file_bytes("f").unwrap();
    assert_eq!(differing(&before, &after), 1);
    assert_eq!(after[105], 1);
    assert_eq!(
        differing(&dir.durable_bytes("f").unwrap(), &live),
        1,
        "the durable image flips too"
    );
    file.sync_data().unwrap();
    assert_eq!(dir.durable_bytes("f").unwrap(), after);

    assert_eq!(
        dir.flip_bit("f", 10, 8).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        dir.flip_bit("f", 256, 0).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        dir.flip_bit("g", 0, 0).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
}

#[test]
fn write_raw_reaches_both_images() {
    let dir = SimDir::new();
    dir.write_raw("planted", 2, b"ab").unwrap();
    assert_eq!(dir.file_bytes("planted").unwrap(), b"\0\0ab");
    assert_eq!(dir.op_count(), 0, "helpers are not operations");
    assert_eq!(
        dir.crash_image(CrashMode::DropUnsynced, 0)
            .file_bytes("planted")
            .unwrap(),
        b"\0\0ab"
    );
    let f = dir.open_file("planted", false).unwrap();
    f.write_all_at(b"XYZ", 1).unwrap();
    dir.write_raw("planted", 3, b"q").unwrap();
    assert_eq!(dir.file_bytes("planted").unwrap(), b"\0XYq");
    assert_eq!(dir.durable_bytes("planted").unwrap(), b"\0\0aq");
    f.sync_data().unwrap();
    assert_eq!(dir.durable_bytes("planted").unwrap(), b"\0XYq");
}

#[test]
fn lock_is_exclusive_until_dropped() {
    let dir = SimDir::new();
    let clone = dir.clone();
    let guard = dir.lock_exclusive().unwrap();
    assert!(format!("{guard:?}").starts_with("SimLock"));
    assert_eq!(
        dir.lock_exclusive().unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    assert_eq!(
        clone.lock_exclusive().unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    // Another directory (a crash image) has its own lock.
    let image = dir.crash_image(CrashMode::KeepUnsynced, 0);
    let _other = image.lock_exclusive().unwrap();
    drop(guard);
    let _again = clone.lock_exclusive().unwrap();
    assert_eq!(dir.op_count(), 0, "locking is not an operation");
}

/// A plain model of one file: durable bytes plus the pending operations.
#[derive(Clone, Default)]
struct Model {
    durable: Vec<u8>,
    pending: Vec<PendingOp>,
}

impl Model {
    fn live(&self) -> Vec<u8> {
        let mut live = self.durable.clone();
        for op in &self.pending {
            op.apply(&mut live);
        }
        live
    }
}

#[test]
fn random_workloads_match_a_plain_model() {
    let mut rng = SplitMix64(42);
    for round in 0..50 {
        let dir = SimDir::new();
        let names = ["x", "y"];
        let files: Vec<_> = names.iter().map(|n| create(&dir, n)).collect();
        dir.sync_dir().unwrap();
        let mut models = vec![Model::default(), Model::default()];
        for _ in 0..200 {
            let i = rng.below(2) as usize;
            let (file, model) = (&files[i], &mut models[i]);
            match rng.below(10) {
                0..=5 => {
                    let offset = rng.below(6000);
                    let max_len = if rng.coin() { 40 } else { 3000 };
                    let len = rng.below(max_len) as usize;
                    let byte = rng.next_u64() as u8;
                    file.write_all_at(&vec![byte; len], offset).unwrap();
                    if len > 0 {
                        model.pending.push(PendingOp::Write {
                            offset,
                            data: vec![byte; len],
                        });
                    }
                }
                6 => {
                    let len = rng.below(7000);
                    file.set_len(len).unwrap();
                    model.pending.push(PendingOp::SetLen(len));
                }
                7 => {
                    file.sync_data().unwrap();
                    model.durable = model.live();
                    model.pending.clear();
                }
                _ => {
                    let live = model.live();
                    if !live.is_empty() {
                        let offset = rng.below(live.len() as u64) as usize;
                        let len = rng.below((live.len() - offset) as u64 + 1) as usize;
                        let mut buf = vec![0u8; len];
                        file.read_exact_at(&mut buf, offset as u64).unwrap();
                        assert_eq!(buf, live[offset..offset + len]);
                    }
                }
            }
            assert_eq!(file.len().unwrap(), model.live().len() as u64);
        }
        let keep = dir.crash_image(CrashMode::KeepUnsynced, round);
        let drop = dir.crash_image(CrashMode::DropUnsynced, round);
        for (name, model) in names.iter().zip(&models) {
            assert_eq!(dir.file_bytes(name).unwrap(), model.live());
            assert_eq!(dir.durable_bytes(name).unwrap(), model.durable);
            assert_eq!(dir.pending_ops(name), Some(model.pending.len()));
            assert_eq!(keep.file_bytes(name).unwrap(), model.live());
            assert_eq!(drop.file_bytes(name).unwrap(), model.durable);
        }
    }
}

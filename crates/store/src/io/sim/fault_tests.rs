//! Tests of the newer fault models of the simulated disk: tears at any
//! byte, reordered unsynced writes, and a full disk.

use std::collections::BTreeSet;

use super::*;

/// A directory with `name` created, its name synced, holding `bytes`
/// durably.
fn synced_file(name: &str, bytes: &[u8]) -> (SimDir, Arc<dyn StoreFile>) {
    let dir = SimDir::new();
    let file = dir.open_file(name, true).expect("create simulated file");
    file.write_all_at(bytes, 0).unwrap();
    file.sync_data().unwrap();
    dir.sync_dir().unwrap();
    (dir, file)
}

#[test]
fn torn_any_byte_lands_a_prefix_and_alters_only_the_write() {
    const OLD: u8 = 0xAA;
    const NEW: u8 = 0x55;
    let old_len = 1000usize;
    let (dir, file) = synced_file("f", &vec![OLD; old_len]);
    // One write inside the file, one extending it.
    let writes: [(usize, usize); 2] = [(100, 300), (900, 400)];
    for &(offset, len) in &writes {
        file.write_all_at(&vec![NEW; len], offset as u64).unwrap();
    }
    let mut tear_points = BTreeSet::new();
    let mut tails = [0usize; 3];
    for seed in 0..600 {
        let image = dir
            .crash_image(CrashMode::TornAnyByte, seed)
            .file_bytes("f")
            .unwrap();
        assert!(image.len() >= old_len && image.len() <= 1300, "seed {seed}");
        // Outside the first write, before the second: untouched.
        assert!(image[..100].iter().all(|&b| b == OLD), "seed {seed}");
        assert!(image[400..900].iter().all(|&b| b == OLD), "seed {seed}");
        let (offset, len) = writes[0];
        let region = &image[offset..offset + len];
        // A prefix of new bytes, then a tail all old, all zero or other.
        let landed = region.iter().take_while(|&&b| b == NEW).count();
        if landed < len {
            tear_points.insert(landed);
            let tail = &region[landed..];
            if tail.iter().all(|&b| b == OLD) {
                tails[0] += 1;
            } else if tail.iter().all(|&b| b == 0) {
                tails[1] += 1;
            } else {
                tails[2] += 1;
            }
        }
    }
    // Tears land at many byte offsets, not only at sector boundaries.
    assert!(
        tear_points.iter().filter(|&&t| t % 512 != 0).count() > 20,
        "{tear_points:?}"
    );
    assert!(tails.iter().all(|&n| n > 10), "{tails:?}");
    assert_eq!(
        dir.crash_image(CrashMode::TornAnyByte, 7).file_bytes("f"),
        dir.crash_image(CrashMode::TornAnyByte, 7).file_bytes("f")
    );
}

#[test]
fn reordered_writes_may_land_out_of_order_but_not_across_set_len() {
    let (dir, file) = synced_file("f", &[0u8; 20]);
    file.write_all_at(&[1u8; 10], 0).unwrap();
    file.write_all_at(&[2u8; 10], 5).unwrap();
    let mut older_wins = 0;
    let mut seen = BTreeSet::new();
    for seed in 0..200 {
        let image = dir
            .crash_image(CrashMode::Reordered, seed)
            .file_bytes("f")
            .unwrap();
        if image[5..10].iter().all(|&b| b == 1) && image[10..15].iter().all(|&b| b == 2) {
            older_wins += 1;
        }
        seen.insert(image);
    }
    // None, first, second, both in order, both reordered.
    assert_eq!(seen.len(), 5);
    assert!(older_wins > 10);

    // A truncation stays a barrier: a write before it never survives it.
    let (dir, file) = synced_file("g", &[0u8; 20]);
    file.write_all_at(&[7u8; 20], 0).unwrap();
    file.set_len(4).unwrap();
    for seed in 0..100 {
        let image = dir
            .crash_image(CrashMode::Reordered, seed)
            .file_bytes("g")
            .unwrap();
        assert!(
            image == vec![0u8; 20] || image == vec![7u8; 20] || image.len() == 4,
            "seed {seed}: {image:?}"
        );
    }
}

#[test]
fn a_full_disk_refuses_allocation_until_space_is_freed() {
    let (dir, file) = synced_file("f", b"abcdef");
    dir.fail_op(dir.op_count() + 1, FaultKind::DiskFull);
    file.write_all_at(b"X", 0).unwrap();
    for _ in 0..3 {
        let err = file.write_all_at(b"Y", 1).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        let err = file.set_len(100).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    }
    // Reads, syncs and shrinking still work.
    let mut buf = [0u8; 6];
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"Xbcdef");
    file.sync_data().unwrap();
    file.set_len(3).unwrap();
    assert_eq!(dir.file_bytes("f").unwrap(), b"Xbc");
    dir.clear_faults();
    file.write_all_at(b"Y", 1).unwrap();
    assert_eq!(dir.file_bytes("f").unwrap(), b"XYc");
}

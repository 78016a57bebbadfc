//! What opening a directory does: a missing database is `NotFound` without
//! leaving anything behind; a directory holding other files is refused
//! (`NotADatabase`) rather than written into; a second writer is `Locked`;
//! a group depth other than the stored one is `GroupDepthMismatch`; the
//! upper trie's pages are read a bounded batch at a time.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::temp_path;
use ubt_store::{Options, Store, StoreError};

fn listing(path: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn missing_database_leaves_nothing_behind() {
    let path = temp_path("missing");
    std::fs::create_dir_all(&path).expect("mkdir");
    let options = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert!(matches!(
        Store::open_path(&path, options.clone()),
        Err(StoreError::NotFound(_))
    ));
    assert!(listing(&path).is_empty(), "left {:?}", listing(&path));
    let absent = path.join("absent");
    assert!(matches!(
        Store::open_path(&absent, options),
        Err(StoreError::NotFound(_))
    ));
    assert!(!absent.exists());
    std::fs::remove_dir_all(&path).expect("cleanup");
}

#[test]
fn foreign_directories_are_not_written_into() {
    let path = temp_path("foreign");
    std::fs::create_dir_all(&path).expect("mkdir");
    std::fs::write(path.join("notes.txt"), b"not a database").expect("write");
    let result = Store::open_path(&path, Options::default());
    assert!(
        matches!(result, Err(StoreError::NotADatabase(_))),
        "{result:?}"
    );
    assert_eq!(listing(&path), vec!["notes.txt".to_string()]);
    std::fs::remove_dir_all(&path).expect("cleanup");
}

#[test]
fn one_writer_and_a_fixed_group_depth() {
    let path = temp_path("rules");
    let options = Options {
        group_depth: Some(4),
        ..Options::default()
    };
    let mut store = Store::open_path(&path, options.clone()).expect("create");
    store
        .apply(&[(B256::repeat_byte(1), B256::repeat_byte(2))])
        .expect("apply");
    store.commit().expect("commit");
    assert!(matches!(
        Store::open_path(&path, options.clone()),
        Err(StoreError::Locked(_))
    ));
    drop(store);
    let mismatch = Store::open_path(
        &path,
        Options {
            group_depth: Some(5),
            ..Options::default()
        },
    );
    assert!(matches!(
        mismatch,
        Err(StoreError::GroupDepthMismatch {
            stored: 4,
            requested: 5
        })
    ));
    let store = Store::open_path(&path, Options::default()).expect("stored depth accepted");
    assert_eq!(store.group_depth(), 4);
    assert_eq!(
        store.get(&B256::repeat_byte(1)).expect("get"),
        Some(B256::repeat_byte(2))
    );
    drop(store);
    std::fs::remove_dir_all(&path).expect("cleanup");
}

/// Regression: open read every page of a level in one batch, holding all
/// their bytes at once (0.36 GB of transient memory at 200M entries). With
/// group depth 1 every internal node roots a page, so ~600k random entries
/// put more than 4,096 pages in one level.
#[test]
fn open_reads_the_trie_pages_a_bounded_batch_at_a_time() {
    let (sim, dir) = common::sim_dir();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut entries: Vec<(B256, B256)> = (0..600_000)
        .map(|_| {
            let mut key = [0u8; 32];
            for chunk in key.chunks_mut(8) {
                chunk.copy_from_slice(&next().to_le_bytes());
            }
            (B256::from(key), B256::repeat_byte(7))
        })
        .collect();
    entries.sort_unstable();
    entries.dedup_by_key(|(k, _)| *k);
    let options = common::options(1, 64 << 20);
    let (store, _) = Store::build(std::sync::Arc::clone(&dir), options.clone(), entries).unwrap();
    let root = store.root();
    let pages = store.stats().page_count;
    drop(store);
    assert!(
        pages > 3 * 4096,
        "{pages} pages: too few to need several batches"
    );
    let reopened = common::open(&dir, &options);
    assert_eq!(reopened.root(), root);
    assert!(
        sim.largest_read_batch() <= 4096,
        "open read {} pages in one batch",
        sim.largest_read_batch()
    );
}

/// The bucket capacity is chosen at creation and kept: a reopen without
/// one takes the stored one, a different one is `BucketBytesMismatch`, and
/// one that is not a power of two from 4 KiB to 64 KiB is refused before
/// anything is created.
#[test]
fn a_fixed_bucket_capacity() {
    let path = temp_path("capacity");
    for bad in [0, 2048, 5000, 12_288, 128 << 10] {
        let refused = Store::open_path(
            &path,
            Options {
                bucket_bytes: Some(bad),
                ..Options::default()
            },
        );
        assert!(
            matches!(refused, Err(StoreError::InvalidOptions(_))),
            "{bad}: {refused:?}"
        );
        assert!(!path.join("ubt.meta").exists(), "{bad}: nothing created");
    }
    let options = Options {
        bucket_bytes: Some(16 << 10),
        ..Options::default()
    };
    let mut store = Store::open_path(&path, options.clone()).expect("create");
    assert_eq!(store.stats().bucket_bytes, 16 << 10);
    store
        .apply(&[(B256::repeat_byte(1), B256::repeat_byte(2))])
        .expect("apply");
    store.commit().expect("commit");
    drop(store);
    let mismatch = Store::open_path(
        &path,
        Options {
            bucket_bytes: Some(4096),
            ..Options::default()
        },
    );
    assert!(matches!(
        mismatch,
        Err(StoreError::BucketBytesMismatch {
            stored: 16_384,
            requested: 4096
        })
    ));
    let store = Store::open_path(&path, Options::default()).expect("stored capacity accepted");
    assert_eq!(store.stats().bucket_bytes, 16 << 10);
    drop(store);
    let store = Store::open_path(&path, options).expect("the same capacity accepted");
    assert_eq!(
        store.get(&B256::repeat_byte(1)).expect("get"),
        Some(B256::repeat_byte(2))
    );
    drop(store);
    std::fs::remove_dir_all(&path).expect("cleanup");
}

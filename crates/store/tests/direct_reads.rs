//! Direct reads (`Options::direct_reads`, `O_DIRECT` on Linux): the same
//! bytes as buffered reads on both batched-read backends, at any offset
//! and length, including writes not yet synced; a store reading its data
//! file that way agrees with the reference tree through blocks,
//! checkpoints and reopens under a small cache; and damaged bytes read
//! that way are reported as corruption, never returned as values.
//!
//! Where the temporary directory's file system refuses `O_DIRECT`
//! (tmpfs), the tests say so on standard error and check only that reads
//! stay buffered and correct.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::io;

use alloy_primitives::B256;
use common::*;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::os::OsDir;
use ubt_store::io::{ReadBackendChoice, ReadRequest, StoreDir};
use ubt_store::{Options, Store, DATA_FILE};

const BACKENDS: [ReadBackendChoice; 2] = [ReadBackendChoice::ThreadPool, ReadBackendChoice::Auto];

/// Removes a directory when dropped.
struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn skip_note(what: &str) {
    eprintln!("{what}: the temporary directory refuses O_DIRECT; checked buffered reads only");
}

/// `len` bytes at `offset` of `content`.
fn slice(content: &[u8], request: ReadRequest) -> &[u8] {
    &content[request.offset as usize..request.offset as usize + request.len]
}

#[test]
fn direct_reads_return_what_buffered_reads_return() {
    const LEN: usize = 3 << 20;
    for choice in BACKENDS {
        let path = temp_path("direct-io");
        let _cleanup = Cleanup(path.clone());
        let dir = OsDir::open(&path, true, choice).unwrap();
        let file = dir.open_file("data", true).unwrap();
        // A length that is not a multiple of the block: the last block is
        // partial.
        let mut content = vec![0u8; LEN - 123];
        SplitMix64(0xd1ec7).fill(&mut content);
        file.write_all_at(&content, 0).unwrap();
        file.sync_data().unwrap();
        assert!(!file.reads_direct());
        let direct = file.enable_direct_reads().unwrap();
        assert_eq!(file.reads_direct(), direct);
        if !direct {
            skip_note("direct_reads_return_what_buffered_reads_return");
        }

        let mut rng = SplitMix64(9);
        let mut requests: Vec<ReadRequest> = (0..2_000)
            .map(|_| {
                let len = 1 + rng.below(20_000) as usize;
                let offset = rng.below((content.len() - len + 1) as u64);
                ReadRequest { offset, len }
            })
            .collect();
        // Aligned, ending exactly at the end, and the partial last block.
        requests.push(ReadRequest {
            offset: 4096,
            len: 4096,
        });
        requests.push(ReadRequest {
            offset: content.len() as u64 - 1,
            len: 1,
        });
        requests.push(ReadRequest {
            offset: (content.len() as u64 / 4096) * 4096,
            len: content.len() % 4096,
        });
        for (request, result) in requests.iter().zip(file.read_batch(&requests)) {
            assert_eq!(result.unwrap(), slice(&content, *request), "{request:?}");
        }
        let mut buf = vec![0u8; 5000];
        file.read_exact_at(&mut buf, 777).unwrap();
        assert_eq!(buf, &content[777..5777]);

        // Past the end: an error for that request only, by every path.
        let end = content.len() as u64;
        let past = [
            ReadRequest {
                offset: end - 10,
                len: 11,
            },
            ReadRequest {
                offset: end,
                len: 1,
            },
            ReadRequest {
                offset: end + 8192,
                len: 4096,
            },
        ];
        let mixed = [past[0], requests[0], past[1], requests[1], past[2]];
        for (i, result) in file.read_batch(&mixed).into_iter().enumerate() {
            if i % 2 == 0 {
                assert_eq!(result.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
            } else {
                assert_eq!(result.unwrap(), slice(&content, mixed[i]));
            }
        }
        for request in past {
            let one = file.read_batch(&[request]);
            assert_eq!(
                one[0].as_ref().unwrap_err().kind(),
                io::ErrorKind::UnexpectedEof
            );
        }

        // Writes not yet synced, and the file grown past its old end, are
        // seen by the next read.
        let patch = [0xabu8; 300];
        file.write_all_at(&patch, 10_000).unwrap();
        content[10_000..10_300].copy_from_slice(&patch);
        let tail = vec![0x5au8; 6000];
        file.write_all_at(&tail, end).unwrap();
        content.extend_from_slice(&tail);
        let after = [
            ReadRequest {
                offset: 9_990,
                len: 400,
            },
            ReadRequest {
                offset: end - 50,
                len: 6050,
            },
        ];
        for (request, result) in after.iter().zip(file.read_batch(&after)) {
            assert_eq!(result.unwrap(), slice(&content, *request), "{request:?}");
        }
    }
}

/// Options for a store that reads directly, with a cache far below the
/// state (most reads go to the file).
fn direct_options(group_depth: u8) -> Options {
    Options {
        direct_reads: true,
        ..options(group_depth, 256 << 10)
    }
}

fn open_path(path: &std::path::Path, options: &Options) -> Store {
    Store::open_path(path, options.clone()).unwrap_or_else(|e| panic!("open failed: {e}"))
}

/// A test's store reading directly, in a fresh directory removed at the
/// end: its generator (seeded from `UBT_SEED` or `seed`), directory,
/// options and the open store.
struct Case {
    rng: SplitMix64,
    path: std::path::PathBuf,
    _cleanup: Cleanup,
    opts: Options,
    store: Store,
}

fn new_case(name: &str, seed: u64, group_depth: u8) -> Case {
    let seed = seed_from_env(seed);
    eprintln!("{name}: seed {seed}");
    let path = temp_path(name);
    let opts = direct_options(group_depth);
    let store = open_path(&path, &opts);
    if !store.stats().direct_reads {
        skip_note(name);
    }
    Case {
        rng: SplitMix64(seed),
        _cleanup: Cleanup(path.clone()),
        path,
        opts,
        store,
    }
}

#[test]
fn a_store_reading_directly_agrees_with_the_reference() {
    let Case {
        mut rng,
        path,
        _cleanup,
        opts,
        mut store,
    } = new_case("direct-store", 0xd12ec7, 4);
    let direct = store.stats().direct_reads;
    let mut reference = ReferenceTree::new();
    let mut known = Vec::new();
    for block in 0..40 {
        let size = 1 + rng.below(400) as usize;
        let writes = writes_over_mixed_keys(&mut rng, &mut known, size);
        let root = store.apply(&writes).unwrap();
        reference.insert_batch(&writes);
        assert_eq!(root, reference.compute_root(), "block {block}");
        store.commit().unwrap();
        if block % 7 == 6 {
            store.checkpoint().unwrap();
        }
        if block % 13 == 12 {
            drop(store);
            store = open_path(&path, &opts);
            assert_eq!(store.stats().direct_reads, direct);
            assert_eq!(store.root(), reference.compute_root(), "reopen {block}");
        }
        let probes: Vec<B256> = known.iter().step_by(3).copied().collect();
        assert_eq!(
            check_reads(&store, &reference, &probes),
            Ok(0),
            "block {block}"
        );
    }
    store.checkpoint().unwrap();
    drop(store);
    let store = open_path(&path, &opts);
    assert_eq!(check_reads(&store, &reference, &known), Ok(0));
    verify_counts(&store, reference.len()).unwrap();
    assert!(store.bucket_reads() > 0);
}

#[test]
fn damaged_bytes_read_directly_are_corruption_never_values() {
    let Case {
        mut rng,
        path,
        _cleanup,
        opts,
        mut store,
    } = new_case("direct-flips", 0xf11b, 6);
    let mut reference = ReferenceTree::new();
    let mut known = Vec::new();
    for _ in 0..4 {
        let writes = writes_over_mixed_keys(&mut rng, &mut known, 3_000);
        store.apply(&writes).unwrap();
        reference.insert_batch(&writes);
        store.commit().unwrap();
    }
    store.checkpoint().unwrap();
    drop(store);

    let data = path.join(DATA_FILE);
    let len = std::fs::metadata(&data).unwrap().len();
    let (mut opened, mut corrupted) = (0usize, 0usize);
    for _ in 0..24 {
        let offset = rng.below(len);
        let bit = rng.below(8) as u8;
        let original = std::fs::read(&data).unwrap();
        let mut damaged = original.clone();
        damaged[offset as usize] ^= 1 << bit;
        std::fs::write(&data, &damaged).unwrap();
        match Store::open_path(&path, opts.clone()) {
            Ok(store) => {
                opened += 1;
                match check_reads(&store, &reference, &known) {
                    Ok(n) => corrupted += n,
                    Err(wrong) => panic!("flip at {offset} bit {bit}: {wrong}"),
                }
            }
            Err(error) => assert!(
                error.is_corruption(),
                "flip at {offset} bit {bit}: open failed with {error}"
            ),
        }
        std::fs::write(&data, &original).unwrap();
    }
    eprintln!("{opened} opens after a flip, {corrupted} reads reported corruption");
    // The flips that hit a bucket (most of the file) were reported.
    assert!(corrupted > 0, "no flip was seen by a read");
}

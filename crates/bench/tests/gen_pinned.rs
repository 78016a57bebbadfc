//! `ubt bench gen` promises the same bytes for a seed: the generated
//! files of a small chain-like and raw workload, digested and pinned to
//! the values the generator produced when they were first recorded. A
//! change here changes every state generated from a seed.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use common::TempDir;
use std::path::Path;

use alloy_primitives::keccak256;
use ubt_bench::gen::{gen_chain, gen_raw, ChainParams, RawBlocks};

/// Keccak-256 of each file's name, length and bytes, in the order given.
fn digest(dir: &Path, files: &[&str]) -> String {
    let mut all = Vec::new();
    for name in files {
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        all.extend_from_slice(name.as_bytes());
        all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        all.extend_from_slice(&bytes);
    }
    format!("{}", keccak256(&all))
}

#[test]
fn chain_workload_bytes_for_a_seed_are_pinned() {
    let tmp = TempDir::new("chain");
    let dir = tmp.0.join("chain");
    let mut params = ChainParams::new(3_000, 0xdead_beef, 50);
    params.sequential_slots = 200;
    gen_chain(&dir, &params, &mut |_| {}).expect("chain workload");
    let got = digest(&dir, &["workload.json", "state.jsonl", "blocks.jsonl"]);
    assert_eq!(
        got,
        "0x4facb13735deda806a9716c235aeb69185978d227a335f8a9c764d7572c79916"
    );
}

#[test]
fn raw_workload_bytes_for_a_seed_are_pinned() {
    let tmp = TempDir::new("raw");
    let blocks = RawBlocks {
        read_blocks: 3,
        reads_per_block: 40,
        write_blocks: 2,
        writes_per_block: 25,
    };
    gen_raw(&tmp.0, 1_000, 7, blocks, &mut |_| {}).expect("raw workload");
    let got = digest(
        &tmp.0,
        &[
            "raw_reads/workload.json",
            "raw_reads/state.jsonl",
            "raw_reads/blocks.jsonl",
            "raw_writes/workload.json",
            "raw_writes/state.jsonl",
            "raw_writes/blocks.jsonl",
        ],
    );
    assert_eq!(
        got,
        "0x2eb0e221af1344208c72a02a9c08268928a1bfd448002e2db0748deb5411ea8c"
    );
}

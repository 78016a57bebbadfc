//! The in-memory reference for `ubt bench store`'s warm blocks: the spec
//! crate's `FastTree` built from the same pairs, every block the store
//! applied applied again in the same order, each warm block timed as
//! `insert_batch` plus the root (rayon over shards, all in memory: no
//! decoding, no I/O, no durability). The reference's root must equal the
//! store's after every block, or the run fails.
//!
//! It holds every entry in memory (the tree, and the pairs while it is
//! built), so the bench builds it only up to [`REFERENCE_ENTRIES_MAX`]
//! entries, after the store is closed and its memory figures are taken.

use std::time::Instant;

use alloy_primitives::B256;
use serde::Serialize;
use ubt_spec::{FastTree, StateTree};

use crate::gen::RandomPairs;
use crate::BenchError;

/// Largest state the reference is built for (about 3 GB of memory at
/// 10 M entries).
pub const REFERENCE_ENTRIES_MAX: u64 = 20_000_000;

/// A block as the store applied it.
#[derive(Clone, Debug)]
pub(crate) struct AppliedBlock {
    /// A warm block (timed on the reference), or a cold one (applied
    /// only, to keep the states equal).
    pub warm: bool,
    /// Its writes, in the order the store took them.
    pub writes: Vec<(B256, B256)>,
    /// The store's root after it.
    pub root: B256,
}

/// What the reference measured.
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceFigures {
    /// Seconds to build the tree from the pairs (generation included).
    pub build_s: f64,
    /// The tree's heap bytes.
    pub heap_bytes: u64,
    /// Milliseconds of each warm block: `insert_batch` and the root.
    pub warm_ms: Vec<f64>,
    /// Their median.
    pub warm_median_ms: f64,
    /// SHA-256 compressions of each warm block, when the build counts
    /// them (else empty).
    pub warm_compressions: Vec<u64>,
    /// Writes of each warm block.
    pub warm_writes: Vec<u64>,
}

/// Builds the reference over `entries`, applies `blocks` in order, times
/// the warm ones and checks every root against the store's.
pub(crate) fn measure_reference(
    entries: &RandomPairs,
    blocks: &[AppliedBlock],
) -> Result<ReferenceFigures, BenchError> {
    let started = Instant::now();
    let mut tree = FastTree::from_entries(entries.sorted().collect());
    let build_s = started.elapsed().as_secs_f64();
    let heap_bytes = tree.heap_bytes() as u64;
    let mut warm_ms = Vec::new();
    let mut warm_compressions = Vec::new();
    let mut warm_writes = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let compressions_before = ubt_spec::hash::compressions();
        let started = Instant::now();
        tree.insert_batch(&block.writes);
        let root = B256::from(tree.root());
        if block.warm {
            warm_ms.push(started.elapsed().as_secs_f64() * 1e3);
            warm_writes.push(block.writes.len() as u64);
            if let (Some(before), Some(after)) =
                (compressions_before, ubt_spec::hash::compressions())
            {
                warm_compressions.push(after - before);
            }
        }
        if root != block.root {
            return Err(BenchError::Engine {
                what: "checking the store against the in-memory reference".into(),
                message: format!(
                    "after block {} the store's root is {} and FastTree's {root}",
                    index + 1,
                    block.root
                ),
            });
        }
    }
    let warm_median_ms = super::store::median(warm_ms.iter().copied());
    Ok(ReferenceFigures {
        build_s,
        heap_bytes,
        warm_ms,
        warm_median_ms,
        warm_compressions,
        warm_writes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(pairs: &RandomPairs, wrong_root_at: Option<usize>) -> Vec<AppliedBlock> {
        let mut tree = FastTree::from_entries(pairs.sorted().collect());
        (0..3u8)
            .map(|index| {
                let writes: Vec<(B256, B256)> = (0..50u64)
                    .map(|i| {
                        (
                            pairs.entry(i * 7 + u64::from(index)).0,
                            B256::repeat_byte(index + 1),
                        )
                    })
                    .collect();
                tree.insert_batch(&writes);
                let mut root = B256::from(tree.root());
                if wrong_root_at == Some(usize::from(index)) {
                    root.0[0] ^= 1;
                }
                AppliedBlock {
                    warm: index > 0,
                    writes,
                    root,
                }
            })
            .collect()
    }

    #[test]
    fn the_reference_times_warm_blocks_and_refuses_a_different_root() {
        let pairs = RandomPairs::new(2_000, 9);
        let figures = measure_reference(&pairs, &blocks(&pairs, None)).unwrap();
        assert_eq!(figures.warm_ms.len(), 2);
        assert_eq!(figures.warm_writes, [50, 50]);
        // Each warm block rehashed at least its 50 changed leaves.
        assert_eq!(figures.warm_compressions.len(), 2);
        assert!(figures.warm_compressions.iter().all(|&c| c >= 50));
        assert!(figures.heap_bytes > 0);
        let error = measure_reference(&pairs, &blocks(&pairs, Some(1))).unwrap_err();
        assert!(error.to_string().contains("after block 2"), "{error}");
    }
}

//! Readahead of one account's leaves. A bulk build writes an account's
//! leaves back to back, so the leaves beside a missed one are usually the
//! same account's and one larger read brings them at little extra cost
//! (on this project's reference device a 4 KiB read takes ~26 us, 16 KiB
//! ~38 us, 64 KiB ~83 us). Whether that pays depends on the account: a
//! contract read once for one slot wastes the extra bytes, a hot token
//! read for thousands of holders per block saves thousands of reads. So
//! the window grows with the account's misses, as an operating system's
//! readahead grows with a sequential stream: its first miss reads one
//! leaf, the next ones 2, 4, 8 and then [`READAHEAD_LEAVES_MAX`] leaves,
//! aligned, never past a leaf of another account or a leaf that is not
//! the next block on disk (a leaf rewritten by a checkpoint moved).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use alloy_primitives::Address;

use super::directory::Fence;
use crate::format::BLOCK_BYTES;

/// The most leaves one readahead reads (64 KiB).
pub const READAHEAD_LEAVES_MAX: usize = 16;
/// Accounts whose misses are remembered; the memory is cleared when more
/// are seen (a hot account regains its window in four misses).
const ACCOUNTS_MAX: usize = 4096;

/// Misses per account (see the module documentation).
#[derive(Debug, Default)]
pub struct Readahead {
    misses: Mutex<HashMap<Address, u32>>,
}

impl Readahead {
    /// Counts a miss of `owner`'s leaves; returns how many leaves to read.
    pub fn window(&self, owner: &Address) -> usize {
        let mut misses = self.misses.lock().unwrap_or_else(|e| e.into_inner());
        if misses.len() >= ACCOUNTS_MAX && !misses.contains_key(owner) {
            misses.clear();
        }
        let count = misses.entry(*owner).or_insert(0);
        *count = count.saturating_add(1);
        (1usize << (*count - 1).min(4)).min(READAHEAD_LEAVES_MAX)
    }
}

/// The leaves to read with the missed leaf at `position`: within the
/// aligned group of `window` leaves holding it, the run around it of
/// leaves whose first key is `owner`'s and that lie block after block on
/// disk.
pub fn run(leaves: &[Fence], position: usize, owner: &Address, window: usize) -> Range<usize> {
    debug_assert!(position < leaves.len());
    let window = window.max(1);
    let start = position / window * window;
    let end = (start + window).min(leaves.len());
    let mine = |q: usize| leaves[q].key.owner() == *owner;
    let adjacent = |a: usize, b: usize| {
        leaves[a].extent.offset + BLOCK_BYTES as u64 == leaves[b].extent.offset
    };
    let mut low = position;
    while low > start && mine(low - 1) && adjacent(low - 1, low) {
        low -= 1;
    }
    let mut high = position + 1;
    while high < end && mine(high) && adjacent(high - 1, high) {
        high += 1;
    }
    low..high
}

//! Readahead of one account's leaves. A bulk build writes an account's
//! leaves back to back, so the leaves beside a missed one are usually the
//! same account's and one larger read brings them at little extra cost
//! (on this project's reference device a 4 KiB read takes ~26 us, 16 KiB
//! ~38 us, 64 KiB ~83 us). Whether that pays depends on how densely the
//! account is being read: a token whose holders a block reads by the
//! thousand will have most of its leaves read anyway, a contract of a
//! million slots read at a few hundred of them will not. So the window
//! follows the account's recent misses per leaf it has: `misses * 64 /
//! leaves`, rounded down to a power of two, between 1 and
//! [`READAHEAD_LEAVES_MAX`] (a token of 3,000 leaves reaches 16 after 750
//! misses, a small contract at its second miss; a contract of 9,000
//! leaves missed 400 times reads 2). Misses fade: every account's count
//! halves each [`DECAY_MISSES`] misses of the whole index, so a contract
//! hot long ago loses its window. The window is aligned and never runs
//! past a leaf of another account or a leaf that is not the next block on
//! disk (a leaf rewritten by a checkpoint moved).

use alloy_primitives::map::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use alloy_primitives::Address;

use super::directory::Fence;
use crate::format::BLOCK_BYTES;

/// The most leaves one readahead reads (64 KiB: one request).
pub const READAHEAD_LEAVES_MAX: usize = crate::io::coalesce::RUN_BLOCKS_MAX;
/// Every account's miss count halves after this many misses of the index.
pub const DECAY_MISSES: u64 = 8192;
/// Misses per leaf that earn a window of one more leaf, times 64.
const DENSITY: u64 = 64;
/// Accounts whose misses are remembered; the memory is cleared when more
/// are seen.
const ACCOUNTS_MAX: usize = 4096;

#[derive(Debug, Default)]
struct Misses {
    /// Misses of the whole index.
    total: u64,
    /// Per account: recent misses, and the decay epoch they are counted in.
    accounts: HashMap<Address, (u64, u64)>,
}

/// Misses per account (see the module documentation).
#[derive(Debug, Default)]
pub struct Readahead {
    misses: Mutex<Misses>,
}

impl Readahead {
    /// Counts a miss of `owner`'s leaves (`leaves` of them); returns how
    /// many leaves to read.
    pub fn window(&self, owner: &Address, leaves: usize) -> usize {
        let mut misses = self.misses.lock().unwrap_or_else(|e| e.into_inner());
        misses.total += 1;
        let epoch = misses.total / DECAY_MISSES;
        if misses.accounts.len() >= ACCOUNTS_MAX && !misses.accounts.contains_key(owner) {
            misses.accounts.clear();
        }
        let (count, counted_in) = misses.accounts.entry(*owner).or_insert((0, epoch));
        let faded = epoch.saturating_sub(*counted_in).min(63);
        *count = (*count >> faded) + 1;
        *counted_in = epoch;
        let earned = *count * DENSITY / (leaves.max(1) as u64);
        let window = usize::try_from(earned.clamp(1, READAHEAD_LEAVES_MAX as u64)).unwrap_or(1);
        // A power of two, so windows stay aligned.
        1 << window.ilog2()
    }
}

/// The leaves whose first key is `owner`'s: their positions.
pub fn owner_leaves(leaves: &[Fence], owner: &Address) -> Range<usize> {
    let start = leaves.partition_point(|f| f.key.owner() < *owner);
    let end = leaves.partition_point(|f| f.key.owner() <= *owner);
    start..end
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

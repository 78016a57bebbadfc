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
//! hot long ago loses its window. When the window covers the account's
//! whole span (its own leaves and the leaf before them, which holds its
//! first records) the miss reads that span, so a small account comes in
//! one request; otherwise the window is aligned and never runs past a
//! leaf of another account. Either way a run stops at a leaf that is not
//! the next block on disk (a leaf rewritten by a checkpoint moved).

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

/// The leaves that may hold `owner`'s records, given the leaves whose
/// first key is the owner's (`own`) and the missed leaf at `position`:
/// those and the leaf before them (leaves are packed across accounts, so
/// an account's first records usually share the previous account's last
/// leaf); only the missed leaf when no leaf starts in the account.
pub fn owner_span(own: Range<usize>, position: usize) -> Range<usize> {
    if own.is_empty() {
        position..position + 1
    } else {
        own.start.saturating_sub(1)..own.end
    }
}

/// The leaves to read with the missed leaf at `position` of `owner`,
/// whose own leaves (first key the owner's) are `own`: all of the
/// owner's span ([`owner_span`]) when it holds the missed leaf and fits
/// in `window`, so one request brings a small account whole wherever its
/// leaves fall; otherwise, within the aligned group of `window` leaves
/// holding the missed one, the run around it of the owner's own leaves.
/// Either way only leaves that lie block after block on disk.
pub fn run(
    leaves: &[Fence],
    position: usize,
    owner: &Address,
    own: Range<usize>,
    window: usize,
) -> Range<usize> {
    debug_assert!(position < leaves.len());
    let window = window.max(1);
    let span = owner_span(own, position);
    let whole = span.contains(&position) && span.len() <= window;
    let (start, end) = if whole {
        (span.start, span.end.min(leaves.len()))
    } else {
        let start = position / window * window;
        (start, (start + window).min(leaves.len()))
    };
    let keep = |q: usize| whole || leaves[q].key.owner() == *owner;
    let adjacent = |a: usize, b: usize| {
        leaves[a].extent.offset + BLOCK_BYTES as u64 == leaves[b].extent.offset
    };
    let mut low = position;
    while low > start && keep(low - 1) && adjacent(low - 1, low) {
        low -= 1;
    }
    let mut high = position + 1;
    while high < end && keep(high) && adjacent(high - 1, high) {
        high += 1;
    }
    low..high
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::key::FlatKey;
    use crate::format::Extent;
    use alloy_primitives::B256;

    /// Leaves at consecutive blocks, each first key's owner given.
    fn leaves(owners: &[u8]) -> Vec<Fence> {
        owners
            .iter()
            .enumerate()
            .map(|(at, &owner)| Fence {
                key: FlatKey::new(
                    &Address::repeat_byte(owner),
                    &B256::with_last_byte(u8::try_from(at).unwrap()),
                ),
                extent: Extent::at_block(at as u64, BLOCK_BYTES, 0),
                fresh: false,
            })
            .collect()
    }

    #[test]
    fn a_small_account_is_read_whole_with_the_leaf_before_it() {
        // Owner 5 starts leaves 6..9; its first records are in leaf 5.
        let fences = leaves(&[1, 1, 2, 3, 3, 4, 5, 5, 5, 6, 7, 8]);
        let owner = Address::repeat_byte(5);
        // Aligned groups of 8 would cut it at 8; the span is 5..9.
        assert_eq!(run(&fences, 7, &owner, 6..9, 8), 5..9);
        assert_eq!(run(&fences, 5, &owner, 6..9, 4), 5..9);
        // A window smaller than the span: the aligned group, own leaves.
        assert_eq!(run(&fences, 7, &owner, 6..9, 2), 6..8);
        assert_eq!(run(&fences, 8, &owner, 6..9, 2), 8..9);
        // No leaf starts in the account: the missed leaf alone.
        let none = Address::repeat_byte(9);
        assert_eq!(run(&fences, 10, &none, 11..11, 16), 10..11);
    }

    #[test]
    fn a_run_stops_where_the_disk_is_not_contiguous() {
        let mut fences = leaves(&[1, 5, 5, 5, 5, 6]);
        // Leaf 3 was rewritten elsewhere by a checkpoint.
        fences[3].extent = Extent::at_block(100, BLOCK_BYTES, 0);
        let owner = Address::repeat_byte(5);
        assert_eq!(run(&fences, 1, &owner, 1..5, 16), 0..3);
        assert_eq!(run(&fences, 4, &owner, 1..5, 16), 4..5);
        assert_eq!(run(&fences, 3, &owner, 1..5, 16), 3..4);
    }
}

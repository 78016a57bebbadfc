//! The search of the resident fences, on two dense word arrays.
//!
//! A binary search of the fences themselves (72 bytes each, ~13 MB at
//! 10 M records) touches a new cache line, often a new page, at each of
//! its last ~8 steps, and a binary search of a dense array of words still
//! misses the cache at its last ~8 steps once the array outgrows it: at
//! 10 M records either cost ~2 us per read, about a tenth of a warm
//! account read's CPU (docs/benchmarks.md, "Read locality"). So the
//! search runs on one big-endian word per leaf of each of two parts of
//! the key: the first eight bytes of the owner (`owner_words`) and of the
//! tree key (`tree_words`), and it interpolates rather than bisects.
//! Addresses and tree keys are hash outputs, spread evenly, so a position
//! guessed from the values at a range's ends lands within a few places of
//! the answer (interpolation search: about log log n probes, each a
//! cache miss, against log n); after [`INTERPOLATIONS`] guesses a range
//! still wide is bisected, so skewed words cost a binary search, never
//! more.
//!
//! An owner with many leaves (a contract of 10^5 slots or more) is a run
//! of equal owner words that interpolation cannot see into; runs of
//! [`LONG_RUN_LEAVES`] or more are kept in a small map from the word to
//! the run (a few entries per thousand leaves), so their range is one
//! probe of it. Within one owner's leaves the tree words decide; full
//! keys only within what is left (a leaf or two; a stem that fills leaves
//! by itself shares its tree word over them).
//!
//! Correctness rests on the order alone: the fences are sorted by key and
//! a key's first bytes are the owner's, so leaves outside the owner-word
//! range are wholly below or above the key, and within one owner's leaves
//! the order is the tree key's.

use std::ops::Range;

use alloy_primitives::map::HashMap;
use alloy_primitives::Address;

use super::directory::Fence;
use super::key::FlatKey;

/// Runs of equal owner words at least this long are kept in the map.
pub const LONG_RUN_LEAVES: usize = 32;
/// Interpolated guesses before a search falls back to bisection.
pub const INTERPOLATIONS: usize = 6;
/// A range this short is searched word by word (one cache line).
const SCAN_WORDS: usize = 8;

/// The words of every fence (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct FenceWords {
    owner_words: Vec<u64>,
    tree_words: Vec<u64>,
    /// Every run of [`LONG_RUN_LEAVES`] or more equal owner words: the
    /// word to the run's positions.
    long_runs: HashMap<u64, (u32, u32)>,
}

/// The big-endian word of `bytes[at..at + 8]`.
#[inline]
fn word(bytes: &[u8], at: usize) -> u64 {
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(out)
}

/// The owner word of a key.
#[inline]
fn owner_word(key: &FlatKey) -> u64 {
    word(key.as_bytes(), 0)
}

/// The tree-key word of a key.
#[inline]
fn tree_word(key: &FlatKey) -> u64 {
    word(key.as_bytes(), 20)
}

/// How many of `words` (sorted) are below `target`, by interpolation
/// (see the module documentation).
fn count_below(words: &[u64], target: u64) -> usize {
    let (mut low, mut high) = (0usize, words.len());
    let mut guesses = 0;
    // The answer lies in low..=high: words before `low` are below the
    // target, words from `high` on are not.
    while high - low > SCAN_WORDS {
        let (first, last) = (words[low], words[high - 1]);
        if first >= target {
            return low;
        }
        if last < target {
            return high;
        }
        // first < target <= last, so the span is not zero.
        let probe = if guesses < INTERPOLATIONS {
            guesses += 1;
            let span = u128::from(last - first);
            let offset = u128::from(target - first) * (high - 1 - low) as u128 / span;
            // offset < high - low, so it fits.
            low + usize::try_from(offset).unwrap_or(0)
        } else {
            low + (high - low) / 2
        };
        debug_assert!((low..high).contains(&probe));
        if words[probe] < target {
            low = probe + 1;
        } else {
            high = probe;
        }
    }
    low + words[low..high].partition_point(|&w| w < target)
}

/// The end of the run of words equal to `target` that starts at `start`
/// (a short run: long owner runs are in the map, tree-word runs are a
/// dense stem's few leaves).
#[inline]
fn run_end(words: &[u64], start: usize, target: u64) -> usize {
    let mut end = start;
    while end < words.len() && words[end] == target {
        end += 1;
    }
    end
}

/// The positions in `words` (sorted) equal to `target`.
#[inline]
fn equal_range(words: &[u64], target: u64) -> Range<usize> {
    let start = count_below(words, target);
    start..run_end(words, start, target)
}

/// The runs of [`LONG_RUN_LEAVES`] or more equal words.
fn long_runs(words: &[u64]) -> HashMap<u64, (u32, u32)> {
    let mut out = HashMap::default();
    let mut start = 0usize;
    for run in words.chunk_by(|a, b| a == b) {
        if run.len() >= LONG_RUN_LEAVES {
            // Leaf positions stay far below 2^32 (16 TiB of leaves).
            #[allow(clippy::cast_possible_truncation)]
            out.insert(run[0], (start as u32, (start + run.len()) as u32));
        }
        start += run.len();
    }
    out
}

impl FenceWords {
    /// The words of `leaves` (sorted fences).
    pub fn new(leaves: &[Fence]) -> FenceWords {
        let owner_words: Vec<u64> = leaves.iter().map(|f| owner_word(&f.key)).collect();
        FenceWords {
            long_runs: long_runs(&owner_words),
            owner_words,
            tree_words: leaves.iter().map(|f| tree_word(&f.key)).collect(),
        }
    }

    /// Resident bytes.
    pub fn memory_bytes(&self) -> usize {
        (self.owner_words.capacity() + self.tree_words.capacity()) * std::mem::size_of::<u64>()
            + self.long_runs.capacity() * std::mem::size_of::<(u64, (u32, u32))>()
    }

    /// The leaves whose owner word is `owner_word`: every leaf before is
    /// below any key of the owner, every leaf after above.
    fn owner_word_range(&self, owner_word: u64) -> Range<usize> {
        match self.long_runs.get(&owner_word) {
            Some(&(start, end)) => start as usize..end as usize,
            None => equal_range(&self.owner_words, owner_word),
        }
    }

    /// How many of `leaves` (the fences these words were made from) have
    /// a first key not above `key`.
    pub fn count_not_above(&self, leaves: &[Fence], key: &FlatKey) -> usize {
        debug_assert_eq!(
            leaves.len(),
            self.owner_words.len(),
            "words of other fences"
        );
        let mut range = self.owner_word_range(owner_word(key));
        if range.len() > 1 && one_owner(leaves, &range, key.as_bytes()) {
            let within = equal_range(&self.tree_words[range.clone()], tree_word(key));
            range = range.start + within.start..range.start + within.end;
        }
        let count = range.start + leaves[range].partition_point(|f| f.key <= *key);
        debug_assert_eq!(count, leaves.partition_point(|f| f.key <= *key));
        count
    }

    /// The positions of the leaves whose first key is `owner`'s.
    pub fn owner_leaves(&self, leaves: &[Fence], owner: &Address) -> Range<usize> {
        debug_assert_eq!(
            leaves.len(),
            self.owner_words.len(),
            "words of other fences"
        );
        let range = self.owner_word_range(word(owner.as_slice(), 0));
        let mine = |f: &Fence| f.key.as_bytes()[..20] == owner[..];
        let out =
            if range.is_empty() || (mine(&leaves[range.start]) && mine(&leaves[range.end - 1])) {
                range
            } else {
                let within = &leaves[range.clone()];
                let start = range.start + within.partition_point(|f| f.key.owner() < *owner);
                let end = range.start + within.partition_point(|f| f.key.owner() <= *owner);
                start..end
            };
        debug_assert_eq!(
            out,
            leaves.partition_point(|f| f.key.owner() < *owner)
                ..leaves.partition_point(|f| f.key.owner() <= *owner)
        );
        out
    }
}

/// Whether every leaf of `range` (non-empty) has the owner of `key_bytes`:
/// the owners are sorted, so checking the ends is enough.
#[inline]
fn one_owner(leaves: &[Fence], range: &Range<usize>, key_bytes: &[u8]) -> bool {
    let owner = &key_bytes[..20];
    leaves[range.start].key.as_bytes()[..20] == *owner
        && leaves[range.end - 1].key.as_bytes()[..20] == *owner
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Extent;
    use alloy_primitives::B256;
    use ubt_spec::rng::SplitMix64;

    fn key(owner: [u8; 20], tree: [u8; 32]) -> FlatKey {
        FlatKey::new(&Address::from(owner), &B256::from(tree))
    }

    fn fence(key: FlatKey) -> Fence {
        Fence {
            key,
            extent: Extent::at_block(0, 16, 0),
            fresh: false,
        }
    }

    /// Owners and tree keys drawn from a few byte values, so owners share
    /// their first eight bytes and leaves share tree words (the cases the
    /// narrowing must get right), with every probe checked against a
    /// plain binary search of the fences.
    #[test]
    fn narrowed_searches_agree_with_a_plain_search() {
        let mut rng = SplitMix64::new(0x5eed);
        let mut next = || rng.next_u64();
        let random_key = |next: &mut dyn FnMut() -> u64| {
            let mut owner = [0u8; 20];
            // Bytes 0..8 from two values, the rest from three: owners
            // that agree in their word but not in their address.
            owner[..8].fill(u8::from(next().is_multiple_of(2)));
            owner[8..].fill(u8::try_from(next() % 3).unwrap());
            let mut tree = [0u8; 32];
            tree[..8].fill(u8::try_from(next() % 3).unwrap());
            tree[8..].fill(u8::try_from(next() % 4).unwrap());
            tree[31] = next().to_le_bytes()[0];
            key(owner, tree)
        };
        for size in [0usize, 1, 2, 5, 40, 300, 3000] {
            let mut keys: Vec<FlatKey> = (0..size).map(|_| random_key(&mut next)).collect();
            keys.sort();
            keys.dedup();
            let leaves: Vec<Fence> = keys.iter().copied().map(fence).collect();
            let words = FenceWords::new(&leaves);
            if size >= 300 {
                assert!(
                    !words.long_runs.is_empty(),
                    "owners share words in long runs"
                );
            }
            for _ in 0..500 {
                let probe = random_key(&mut next);
                assert_eq!(
                    words.count_not_above(&leaves, &probe),
                    leaves.partition_point(|f| f.key <= probe)
                );
                let owner = probe.owner();
                assert_eq!(
                    words.owner_leaves(&leaves, &owner),
                    leaves.partition_point(|f| f.key.owner() < owner)
                        ..leaves.partition_point(|f| f.key.owner() <= owner)
                );
            }
            for leaf in &leaves {
                let at = words.count_not_above(&leaves, &leaf.key);
                assert_eq!(leaves[at - 1].key, leaf.key, "a fence's own key finds it");
            }
        }
    }

    /// Interpolation lands anywhere a bisection would, on words spread
    /// evenly, skewed to one end, bunched in equal runs, and at the ends.
    #[test]
    fn interpolated_counts_agree_with_bisection() {
        let mut rng = SplitMix64::new(0x1234_5678);
        let mut next = || rng.next_u64();
        let shapes: [fn(u64) -> u64; 4] = [
            |r| r,
            |r| (r >> 32).pow(2),
            |r| r % 7 * (u64::MAX / 7),
            |r| if r.is_multiple_of(2) { 0 } else { u64::MAX },
        ];
        for shape in shapes {
            for size in [0usize, 1, 9, 100, 5000] {
                let mut words: Vec<u64> = (0..size).map(|_| shape(next())).collect();
                words.sort_unstable();
                let mut probes: Vec<u64> = (0..300).map(|_| shape(next())).collect();
                probes.extend([0, 1, u64::MAX, u64::MAX - 1]);
                probes.extend(
                    words
                        .iter()
                        .step_by(97)
                        .flat_map(|&w| [w, w.wrapping_add(1)]),
                );
                for target in probes {
                    let want = words.partition_point(|&w| w < target);
                    assert_eq!(count_below(&words, target), want, "{size} words, {target}");
                    let range = equal_range(&words, target);
                    assert_eq!(range.start, want);
                    assert_eq!(range.end, words.partition_point(|&w| w <= target));
                }
            }
        }
    }
}

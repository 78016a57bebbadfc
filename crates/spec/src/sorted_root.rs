//! The root of key/value pairs given in ascending key order, computed in
//! one pass without building a tree: memory beyond the input is the trie's
//! depth (a stack of at most 248 pending left siblings) plus one small batch
//! of stems.
//!
//! Consecutive keys with the same 31-byte prefix form a stem; a batch of
//! stems is hashed at once with [`stem_hashes`] (the stem-hashing code the
//! other trees use), and each stem hash is folded into the binary trie with
//! the rules of EIP-7864 as [`ReferenceTree`](crate::ReferenceTree)
//! implements them: an empty subtree hashes to zero, a subtree holding one
//! stem hashes to that stem's hash wherever it floats up to, and an internal
//! node is `sha256(left || right)` (also on a chain of internal nodes with
//! one empty side above the point where two stems part).
//!
//! Equal keys may appear, next to each other: the last of them wins, as a
//! later write overwrites an earlier one. [`root_of_entries`] sorts a slice
//! stably first, which gives exactly that for input in write order.
//!
//! The fold over the stems works like this: when the next stem first
//! differs from the previous one at bit `b`, every pending left sibling
//! whose branch bit is deeper than `b` is complete, so it is joined with the
//! open subtree on its right; then the open subtree, lifted up to depth
//! `b + 1`, becomes the left sibling of the branch at `b`. [`root_of_sorted`]
//! runs one fold per first key byte on rayon's threads (each from depth 8)
//! and joins the 256 results over the top eight levels.

use alloy_primitives::B256;
use rayon::prelude::*;

use crate::hash::{hash_pair, Hash, ZERO_HASH};
use crate::key::{sub_index, Stem};
use crate::stem::stem_hashes;

/// Stems hashed together in one call of [`stem_hashes`].
const STEM_BATCH: usize = 256;

/// Depth from which each of [`root_of_sorted`]'s parallel folds starts: one
/// fold per value of the first key byte.
const SPLIT_DEPTH: usize = 8;

/// A key smaller than the key before it, found by [`SortedRoot::push`] or
/// [`root_of_sorted`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("keys out of order: {key} comes after {previous}")]
pub struct OutOfOrder {
    /// The key before.
    pub previous: B256,
    /// The smaller key that followed it.
    pub key: B256,
}

/// The root of `entries` in any order, where a later entry for a key
/// overwrites an earlier one (as [`StateTree::insert_batch`] does).
///
/// Sorts `entries` by key in place, stably (rayon's parallel merge sort,
/// which allocates a buffer as long as the slice while it runs), then
/// computes the root as [`root_of_sorted`] does.
///
/// [`StateTree::insert_batch`]: crate::StateTree::insert_batch
pub fn root_of_entries(entries: &mut [(B256, B256)]) -> Hash {
    entries.par_sort_by(|a, b| a.0.cmp(&b.0));
    root_of_checked(entries, &|entry: &(B256, B256)| *entry)
}

/// The root of `entries`, whose keys (`entry(item).0`) must be ascending;
/// equal keys may follow each other and the last of them wins.
///
/// Works in parallel: one fold per first key byte, on rayon's threads.
/// Memory beyond `entries` is a stack of at most 248 hashes and one batch of
/// stems per thread.
///
/// # Errors
///
/// [`OutOfOrder`] naming the first key that is smaller than the key before
/// it (checked before any hashing).
pub fn root_of_sorted<T, F>(entries: &[T], entry: F) -> Result<Hash, OutOfOrder>
where
    T: Sync,
    F: Fn(&T) -> (B256, B256) + Sync,
{
    let misplaced = entries
        .par_windows(2)
        .position_first(|pair| entry(&pair[1]).0 < entry(&pair[0]).0);
    if let Some(index) = misplaced {
        return Err(OutOfOrder {
            previous: entry(&entries[index]).0,
            key: entry(&entries[index + 1]).0,
        });
    }
    Ok(root_of_checked(entries, &entry))
}

/// [`root_of_sorted`] on entries known to be sorted.
fn root_of_checked<T, F>(entries: &[T], entry: &F) -> Hash
where
    T: Sync,
    F: Fn(&T) -> (B256, B256) + Sync,
{
    let shards = 1usize << SPLIT_DEPTH;
    let mut bounds = vec![0usize; shards + 1];
    for (first_byte, bound) in bounds.iter_mut().enumerate().skip(1) {
        *bound = entries.partition_point(|item| usize::from(entry(item).0[0]) < first_byte);
    }
    bounds[shards] = entries.len();
    let mut level: Vec<Subtree> = (0..shards)
        .into_par_iter()
        .map(|shard| {
            let mut fold = StemFold::new(SPLIT_DEPTH);
            for item in &entries[bounds[shard]..bounds[shard + 1]] {
                let (key, value) = entry(item);
                fold.push_unchecked(key, value);
            }
            fold.finish()
        })
        .collect();
    // Join the 256 subtrees at depth 8 over the top eight levels.
    while level.len() > 1 {
        level = level
            .chunks_exact(2)
            .map(|pair| Subtree::join(pair[0], pair[1]))
            .collect();
    }
    level.first().map_or(ZERO_HASH, Subtree::hash)
}

/// The root of key/value pairs pushed in ascending key order, one at a time.
///
/// ```
/// use alloy_primitives::B256;
/// use ubt_spec::sorted_root::SortedRoot;
/// use ubt_spec::{ReferenceTree, StateTree};
///
/// let entries = [(B256::repeat_byte(1), B256::repeat_byte(7)), (B256::repeat_byte(2), B256::ZERO)];
/// let mut streamed = SortedRoot::new();
/// for (key, value) in entries {
///     streamed.push(key, value).unwrap();
/// }
/// let mut oracle = ReferenceTree::new();
/// oracle.insert_batch(&entries);
/// assert_eq!(streamed.finish(), oracle.root());
/// ```
#[derive(Debug)]
pub struct SortedRoot {
    fold: StemFold,
    last: Option<B256>,
}

impl Default for SortedRoot {
    fn default() -> Self {
        SortedRoot::new()
    }
}

impl SortedRoot {
    /// No entries yet (the root of nothing is zero).
    pub fn new() -> Self {
        SortedRoot {
            fold: StemFold::new(0),
            last: None,
        }
    }

    /// Adds `key = value`. A key equal to the previous one replaces its
    /// value.
    ///
    /// # Errors
    ///
    /// [`OutOfOrder`] if `key` is smaller than the previous key; the entry
    /// is then not added.
    pub fn push(&mut self, key: B256, value: B256) -> Result<(), OutOfOrder> {
        if let Some(previous) = self.last {
            if key < previous {
                return Err(OutOfOrder { previous, key });
            }
        }
        self.last = Some(key);
        self.fold.push_unchecked(key, value);
        Ok(())
    }

    /// The root of everything pushed.
    pub fn finish(self) -> Hash {
        self.fold.finish().hash()
    }
}

/// What a subtree hashes to, and whether it may float up.
#[derive(Clone, Copy, Debug)]
enum Subtree {
    /// No stems: hashes to zero.
    Empty,
    /// One stem: its stem hash, at whatever depth it ends up.
    Single(Hash),
    /// Two stems or more: the hash of the internal node at the subtree's
    /// root depth.
    Many(Hash),
}

impl Subtree {
    fn hash(&self) -> Hash {
        match self {
            Subtree::Empty => ZERO_HASH,
            Subtree::Single(hash) | Subtree::Many(hash) => *hash,
        }
    }

    /// The subtree one level up whose children are `left` and `right`.
    fn join(left: Subtree, right: Subtree) -> Subtree {
        match (left, right) {
            (Subtree::Empty, Subtree::Empty) => Subtree::Empty,
            (single @ Subtree::Single(_), Subtree::Empty)
            | (Subtree::Empty, single @ Subtree::Single(_)) => single,
            (left, right) => Subtree::Many(hash_pair(&left.hash(), &right.hash())),
        }
    }
}

/// A completed left child waiting for its right sibling.
#[derive(Clone, Copy, Debug)]
struct Left {
    /// The bit at which the branch splits (the branch node's depth).
    branch: usize,
    /// The left child's hash as a child of the branch (lifted to depth
    /// `branch + 1`).
    hash: Hash,
}

/// The subtree holding the most recent stem, still open on its right.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// Its hash: a stem hash if `single`, else the internal node at `depth`.
    hash: Hash,
    /// Depth of its root node (meaningless when `single`).
    depth: usize,
    /// Whether it holds a single stem.
    single: bool,
    /// One of its stems (they all share their first `depth` bits).
    stem: Stem,
}

impl Open {
    /// Its hash as a node at `depth` (at most its own depth): a single stem
    /// floats up unchanged; an internal node gains one parent per level
    /// with an empty sibling on the other side.
    fn lifted_to(&self, depth: usize) -> Hash {
        if self.single {
            return self.hash;
        }
        let mut hash = self.hash;
        for level in (depth..self.depth).rev() {
            hash = if self.stem.bit(level) == 0 {
                hash_pair(&hash, &ZERO_HASH)
            } else {
                hash_pair(&ZERO_HASH, &hash)
            };
        }
        hash
    }
}

/// The fold of sorted entries into the root of the subtree at depth
/// `start` that holds them all (they share their first `start` bits).
#[derive(Debug)]
struct StemFold {
    start: usize,
    /// The batch of stems not yet hashed: each with the end of its values
    /// in `values`.
    stems: Vec<(Stem, usize)>,
    /// Their present values, `(sub_index, value)` ascending per stem.
    values: Vec<(u8, B256)>,
    /// The last key pushed.
    last: Option<B256>,
    /// Pending left siblings, branch bits strictly ascending.
    lefts: Vec<Left>,
    /// The subtree of the last hashed stem.
    open: Option<Open>,
    /// Scratch for the batch's stem hashes.
    hashes: Vec<Hash>,
}

impl StemFold {
    fn new(start: usize) -> Self {
        StemFold {
            start,
            stems: Vec::with_capacity(STEM_BATCH + 1),
            values: Vec::new(),
            last: None,
            lefts: Vec::new(),
            open: None,
            hashes: Vec::with_capacity(STEM_BATCH),
        }
    }

    /// Adds an entry; its key must not be smaller than the previous one
    /// (the callers check).
    fn push_unchecked(&mut self, key: B256, value: B256) {
        if self.last == Some(key) {
            if let Some(slot) = self.values.last_mut() {
                slot.1 = value;
            }
            return;
        }
        self.last = Some(key);
        let stem = Stem::of_key(&key);
        if self.stems.last().map(|(s, _)| *s) != Some(stem) {
            if self.stems.len() >= STEM_BATCH {
                self.flush();
            }
            self.stems.push((stem, self.values.len()));
        }
        self.values.push((sub_index(&key), value));
        if let Some(last) = self.stems.last_mut() {
            last.1 = self.values.len();
        }
    }

    /// Hashes the batch of stems and folds the hashes in.
    fn flush(&mut self) {
        let mut begin = 0;
        let batch: Vec<(&Stem, &[(u8, B256)])> = self
            .stems
            .iter()
            .map(|(stem, end)| {
                let leaves = &self.values[begin..*end];
                begin = *end;
                (stem, leaves)
            })
            .collect();
        self.hashes.clear();
        self.hashes.resize(batch.len(), ZERO_HASH);
        stem_hashes(&batch, &mut self.hashes);
        for (index, (stem, _)) in self.stems.iter().enumerate() {
            fold_stem(&mut self.lefts, &mut self.open, *stem, self.hashes[index]);
        }
        self.stems.clear();
        self.values.clear();
    }

    /// The subtree of everything pushed.
    fn finish(mut self) -> Subtree {
        self.flush();
        let Some(mut open) = self.open else {
            return Subtree::Empty;
        };
        while let Some(left) = self.lefts.pop() {
            open = join_left(left, &open);
        }
        if open.single {
            Subtree::Single(open.hash)
        } else {
            Subtree::Many(open.lifted_to(self.start))
        }
    }
}

/// Folds the next stem (greater than every stem before it) and its hash.
fn fold_stem(lefts: &mut Vec<Left>, open: &mut Option<Open>, stem: Stem, hash: Hash) {
    let next = Open {
        hash,
        depth: 0,
        single: true,
        stem,
    };
    let Some(mut current) = open.replace(next) else {
        return;
    };
    // Equal stems do not reach here (their values are grouped); for
    // unsorted input the result is wrong but well defined.
    let branch = current.stem.first_difference(&stem).unwrap_or(0);
    while let Some(left) = lefts.last().copied() {
        if left.branch <= branch {
            break;
        }
        lefts.pop();
        current = join_left(left, &current);
    }
    lefts.push(Left {
        branch,
        hash: current.lifted_to(branch + 1),
    });
}

/// The branch node of `left` and the open subtree `right` on its right.
fn join_left(left: Left, right: &Open) -> Open {
    Open {
        hash: hash_pair(&left.hash, &right.lifted_to(left.branch + 1)),
        depth: left.branch,
        single: false,
        stem: right.stem,
    }
}

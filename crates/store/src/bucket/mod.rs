//! Buckets: the flat stem store's unit of storage and of I/O.
//!
//! A bucket holds every stem under one bit prefix (so a point read costs one
//! bucket read, about one 4 KiB I/O), sorted by stem, each stem with its
//! present values. Because a bucket is aligned to a prefix, the whole trie
//! below its prefix lies inside it: the bucket's [`Summary`] is computed
//! from its own contents, and the upper trie above it only needs that
//! summary.
//!
//! To keep rehashing cheap when one stem changes, the bucket stores the
//! summaries of its [`SUB_COUNT`] sub-buckets (the next [`SUB_BITS`] prefix
//! bits): a change recomputes only the stems of one sub-bucket, about a
//! sixteenth of the bucket, and the fifteen combining hashes above the
//! sub-buckets. Stems with [`STEM_HASH_CACHE_MIN`] or more values also
//! store their own hash, so a big stem is never rehashed because a
//! neighbour changed.
//!
//! A bucket that grows past the database's bucket capacity (encoded bytes,
//! [`BUCKET_BYTES_DEFAULT`] unless chosen at creation, see
//! [`bucket_bytes_valid`]) is split on its next prefix bit
//! ([`Bucket::split_to_fit`]); a bucket with a single stem, or with a
//! prefix of [`BUCKET_PREFIX_MAX`] bits, is never split and may be longer.

pub mod codec;
mod stems;

use alloy_primitives::B256;
use ubt_spec::hash::{hash64_many, Hash};
use ubt_spec::key::{sub_index, Stem};
use ubt_spec::stem::{stem_hash, stem_hashes, subtree_root, StemLeaves};

use crate::prefix::Prefix;
use crate::summary::{combine, combine_unhashed, subtrie_summary, Occupancy, Summary};
pub use stems::StemEntry;

/// Prefix bits below a bucket's prefix that select a sub-bucket.
pub const SUB_BITS: usize = 4;
/// Number of sub-buckets.
pub const SUB_COUNT: usize = 1 << SUB_BITS;
/// Encoded size above which a bucket is split, unless the database was
/// created with another capacity: one 4 KiB block.
pub const BUCKET_BYTES_DEFAULT: usize = 4096;
/// The largest bucket capacity a database can be created with.
pub const BUCKET_BYTES_LARGEST: usize = 64 << 10;
/// Longest bucket prefix: sub-bucket bits must still lie inside the stem.
pub const BUCKET_PREFIX_MAX: usize = crate::prefix::STEM_BITS - SUB_BITS;
/// Stems with at least this many values keep their hash in the record.
pub const STEM_HASH_CACHE_MIN: usize = 4;

/// Whether `bytes` can be a database's bucket capacity: a power of two
/// from [`BUCKET_BYTES_DEFAULT`] (one block) to [`BUCKET_BYTES_LARGEST`].
/// Larger buckets mean fewer of them (the resident upper trie and bucket
/// table shrink in proportion) at the price of more bytes read, decoded
/// and rewritten per changed bucket (ARCHITECTURE.md, "Bucket capacity").
pub fn bucket_bytes_valid(bytes: usize) -> bool {
    bytes.is_power_of_two() && (BUCKET_BYTES_DEFAULT..=BUCKET_BYTES_LARGEST).contains(&bytes)
}

/// A bucket in memory. See the module documentation.
#[derive(Clone, Debug)]
pub struct Bucket {
    prefix: Prefix,
    stems: Vec<StemEntry>,
    values: Vec<B256>,
    /// The sub-bucket summaries, boxed: buckets are moved by value on
    /// the apply's path (out of the table, through the pool, back into
    /// the table), and sixteen summaries inline made each move ~0.5 KiB
    /// longer (the 10,000-account overlay root ~10 % slower).
    sub: Box<[Summary; SUB_COUNT]>,
    sub_fresh: [bool; SUB_COUNT],
    /// Stems per sub-bucket (the header stores a hash per non-empty one).
    sub_stems: [u32; SUB_COUNT],
    encoded_len: usize,
}

impl Bucket {
    /// An empty bucket covering `prefix`.
    pub fn new(prefix: Prefix) -> Bucket {
        debug_assert!(prefix.len() <= BUCKET_PREFIX_MAX);
        Bucket {
            prefix,
            stems: Vec::new(),
            values: Vec::new(),
            sub: Box::new([Summary::EMPTY; SUB_COUNT]),
            sub_fresh: [true; SUB_COUNT],
            sub_stems: [0; SUB_COUNT],
            encoded_len: codec::header_bytes(prefix.len(), 0),
        }
    }

    /// The prefix this bucket covers.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// Number of stems.
    pub fn stem_count(&self) -> usize {
        self.stems.len()
    }

    /// Number of present values.
    pub fn leaf_count(&self) -> usize {
        self.values.len()
    }

    /// Whether the bucket holds no stem.
    pub fn is_empty(&self) -> bool {
        self.stems.is_empty()
    }

    /// Bytes of the encoded form.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len
    }

    /// Approximate heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Bucket>()
            + std::mem::size_of::<[Summary; SUB_COUNT]>()
            + self.stems.capacity() * std::mem::size_of::<StemEntry>()
            + self.values.capacity() * 32
    }

    /// The stems, ascending.
    pub fn stems(&self) -> &[StemEntry] {
        &self.stems
    }

    /// The present values of `entry` (one of [`Bucket::stems`]), ascending
    /// by sub-index.
    pub fn values_of(&self, entry: &StemEntry) -> &[B256] {
        &self.values[entry.value_range()]
    }

    /// `(sub_index, value)` pairs of `entry`, ascending.
    pub fn pairs_of<'a>(&'a self, entry: &'a StemEntry) -> impl Iterator<Item = (u8, &'a B256)> {
        entry.sub_indices().zip(self.values_of(entry))
    }

    fn find(&self, stem: &Stem) -> Result<usize, usize> {
        self.stems.binary_search_by(|entry| entry.stem.cmp(stem))
    }

    /// The sub-bucket of a stem inside this bucket.
    fn sub_of(&self, stem: &Stem) -> usize {
        sub_bucket_of(self.prefix.len(), stem)
    }

    /// The value at `(stem, sub_index)`, if present.
    pub fn get(&self, stem: &Stem, sub_index: u8) -> Option<B256> {
        let at = self.find(stem).ok()?;
        let entry = &self.stems[at];
        let rank = entry.rank(sub_index)?;
        Some(self.values[entry.first() + rank])
    }

    /// Sets `(stem, sub_index)` to `value`; returns the previous value.
    pub fn set(&mut self, stem: &Stem, sub_index: u8, value: B256) -> Option<B256> {
        debug_assert!(self.prefix.contains(stem), "stem outside the bucket");
        let sub = self.sub_of(stem);
        self.sub_fresh[sub] = false;
        match self.find(stem) {
            Ok(at) => {
                let entry = &mut self.stems[at];
                entry.invalidate_hash();
                if let Some(rank) = entry.rank(sub_index) {
                    let slot = &mut self.values[entry.first() + rank];
                    return Some(std::mem::replace(slot, value));
                }
                let before = codec::record_bytes(self.prefix.len(), entry.count());
                let position = entry.first() + entry.insert_rank(sub_index);
                entry.add(sub_index);
                let after = codec::record_bytes(self.prefix.len(), entry.count());
                self.encoded_len = self.encoded_len + after - before;
                self.values.insert(position, value);
                for later in &mut self.stems[at + 1..] {
                    later.shift_first(1);
                }
                None
            }
            Err(at) => {
                let first = self
                    .stems
                    .get(at)
                    .map_or(self.values.len(), StemEntry::first);
                self.stems
                    .insert(at, StemEntry::new(*stem, sub_index, first));
                self.values.insert(first, value);
                for later in &mut self.stems[at + 1..] {
                    later.shift_first(1);
                }
                self.encoded_len += codec::record_bytes(self.prefix.len(), 1);
                self.count_stem(sub, 1);
                None
            }
        }
    }

    /// Applies many sets (`Some`) and deletes (`None`) in one linear pass
    /// (instead of one insertion each): `writes` sorted by key with
    /// distinct keys. Returns each key's previous value, for undo.
    pub fn merge_sorted(&mut self, writes: &[(B256, Option<B256>)]) -> Vec<(B256, Option<B256>)> {
        debug_assert!(
            writes.windows(2).all(|w| w[0].0 < w[1].0),
            "writes not sorted and distinct"
        );
        let mut undo = Vec::with_capacity(writes.len());
        let mut stems: Vec<StemEntry> = Vec::with_capacity(self.stems.len() + writes.len());
        let mut values: Vec<B256> = Vec::with_capacity(self.values.len() + writes.len());
        let mut existing = self.stems.iter().peekable();
        let mut incoming = writes.iter().peekable();
        let mut merged: Vec<(u8, B256)> = Vec::new();
        loop {
            let next_existing = existing.peek().map(|e| e.stem);
            let next_incoming = incoming.peek().map(|(key, _)| Stem::of_key(key));
            let stem = match (next_existing, next_incoming) {
                (None, None) => break,
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (Some(a), Some(b)) => a.min(b),
            };
            let old = if next_existing == Some(stem) {
                existing.next()
            } else {
                None
            };
            if next_incoming != Some(stem) {
                // Untouched stem: copied with its hash.
                if let Some(entry) = old {
                    let mut moved = entry.clone();
                    moved.set_first(values.len());
                    values.extend_from_slice(&self.values[entry.value_range()]);
                    stems.push(moved);
                }
                continue;
            }
            self.sub_fresh[sub_bucket_of(self.prefix.len(), &stem)] = false;
            merged.clear();
            if let Some(entry) = old {
                merged.extend(
                    entry
                        .sub_indices()
                        .zip(self.values[entry.value_range()].iter().copied()),
                );
            }
            while let Some((key, value)) = incoming.next_if(|(key, _)| Stem::of_key(key) == stem) {
                let sub = sub_index(key);
                match (merged.binary_search_by_key(&sub, |(s, _)| *s), value) {
                    (Ok(at), Some(value)) => {
                        undo.push((*key, Some(std::mem::replace(&mut merged[at].1, *value))))
                    }
                    (Ok(at), None) => undo.push((*key, Some(merged.remove(at).1))),
                    (Err(at), Some(value)) => {
                        undo.push((*key, None));
                        merged.insert(at, (sub, *value));
                    }
                    (Err(_), None) => undo.push((*key, None)),
                }
            }
            if merged.is_empty() {
                continue;
            }
            let mut bitmap = [0u64; 4];
            for (sub, _) in &merged {
                bitmap[usize::from(*sub) / 64] |= 1u64 << (sub % 64);
            }
            stems.push(StemEntry::from_bitmap(stem, bitmap, values.len()));
            values.extend(merged.iter().map(|(_, v)| *v));
        }
        self.stems = stems;
        self.values = values;
        self.refresh_header_len();
        undo
    }

    /// Removes `(stem, sub_index)` if present, and the stem when it empties.
    /// Used only to undo writes of a commit that failed.
    pub fn remove(&mut self, stem: &Stem, sub_index: u8) {
        let Ok(at) = self.find(stem) else { return };
        let sub = self.sub_of(stem);
        let entry = &mut self.stems[at];
        let Some(rank) = entry.rank(sub_index) else {
            return;
        };
        self.sub_fresh[sub] = false;
        let position = entry.first() + rank;
        let before = codec::record_bytes(self.prefix.len(), entry.count());
        entry.invalidate_hash();
        entry.remove(sub_index);
        let after = if entry.count() == 0 {
            0
        } else {
            codec::record_bytes(self.prefix.len(), entry.count())
        };
        self.values.remove(position);
        if self.stems[at].count() == 0 {
            self.stems.remove(at);
            self.count_stem(sub, -1);
        }
        for later in &mut self.stems[at..] {
            if later.first() > position {
                later.shift_first(-1);
            }
        }
        self.encoded_len = self.encoded_len + after - before;
    }

    /// Adds `delta` stems to sub-bucket `sub`, keeping the encoded length
    /// in step with the header (one hash per non-empty sub-bucket).
    fn count_stem(&mut self, sub: usize, delta: i32) {
        let before = self.sub_stems[sub];
        let after = before.wrapping_add_signed(delta);
        self.sub_stems[sub] = after;
        match (before, after) {
            (0, 1) => self.encoded_len += 32,
            (1, 0) => self.encoded_len -= 32,
            _ => {}
        }
    }

    /// Recomputes the header's share of the encoded length (it depends on
    /// how many sub-buckets are non-empty).
    fn refresh_header_len(&mut self) {
        let records: usize = self
            .stems
            .iter()
            .map(|e| codec::record_bytes(self.prefix.len(), e.count()))
            .sum();
        let mut sub_stems = [0u32; SUB_COUNT];
        for entry in &self.stems {
            sub_stems[self.sub_of(&entry.stem)] += 1;
        }
        self.sub_stems = sub_stems;
        let occupied = sub_stems.iter().filter(|n| **n > 0).count();
        self.encoded_len = codec::header_bytes(self.prefix.len(), occupied) + records;
    }

    /// Range of stem positions in sub-bucket `sub`.
    fn sub_range(&self, sub: usize) -> std::ops::Range<usize> {
        let start = self.stems.partition_point(|e| self.sub_of(&e.stem) < sub);
        let end = self.stems.partition_point(|e| self.sub_of(&e.stem) <= sub);
        start..end
    }

    /// Computes the hash of every stem that lacks one, in one batched call.
    pub(crate) fn hash_all_stems(&mut self) {
        self.hash_stems(std::iter::once(0..self.stems.len()));
    }

    /// Computes the hash of every stem of the sub-buckets holding `stems`
    /// that lacks one, in one batched call (what proving keys of those
    /// stems needs below the sub-bucket summaries).
    pub(crate) fn hash_stems_near(&mut self, stems: impl IntoIterator<Item = Stem>) {
        let mut wanted = [false; SUB_COUNT];
        for stem in stems {
            wanted[self.sub_of(&stem)] = true;
        }
        let ranges: Vec<std::ops::Range<usize>> = (0..SUB_COUNT)
            .filter(|&sub| wanted[sub])
            .map(|sub| self.sub_range(sub))
            .collect();
        self.hash_stems(ranges);
    }

    /// Computes the hash of every stem in `ranges` that lacks one, all in
    /// one batched call (several stems hashed side by side).
    fn hash_stems(&mut self, ranges: impl IntoIterator<Item = std::ops::Range<usize>>) {
        let missing: Vec<(usize, usize)> = ranges
            .into_iter()
            .flatten()
            .filter(|&at| self.stems[at].hash().is_none())
            .map(|at| (0, at))
            .collect();
        hash_missing_stems(&mut [self], missing);
    }

    /// The bucket's summary: recomputes stale sub-buckets (and the hashes
    /// of their stems), then combines the sub-bucket summaries.
    pub fn summary(&mut self) -> Summary {
        let stale = self.stale_ranges();
        if !stale.is_empty() {
            self.hash_stems(stale.iter().map(|(_, range)| range.clone()));
        }
        self.finish_summary(stale)
    }

    /// The stale sub-buckets and the ranges of their stems.
    fn stale_ranges(&self) -> Vec<(usize, std::ops::Range<usize>)> {
        (0..SUB_COUNT)
            .filter(|&sub| !self.sub_fresh[sub])
            .map(|sub| (sub, self.sub_range(sub)))
            .collect()
    }

    /// Recomputes the `stale` sub-buckets' summaries from their stems'
    /// hashes (all present) and combines them all.
    fn finish_summary(&mut self, stale: Vec<(usize, std::ops::Range<usize>)>) -> Summary {
        self.refresh_subs(stale);
        self.summary_of_subs()
    }

    /// Recomputes the `stale` sub-buckets' summaries from their stems'
    /// hashes (all present).
    fn refresh_subs(&mut self, stale: Vec<(usize, std::ops::Range<usize>)>) {
        let depth = self.prefix.len() + SUB_BITS;
        for (sub, range) in stale {
            debug_assert!(self.stems[range.clone()].iter().all(|e| e.hash().is_some()));
            self.sub[sub] = subtrie_summary(&self.stems[range], depth);
            self.sub_fresh[sub] = true;
        }
    }

    /// Combines the (fresh) sub-bucket summaries.
    fn summary_of_subs(&self) -> Summary {
        debug_assert!(self.sub_fresh.iter().all(|f| *f));
        combine_subs(&self.sub[..])
    }

    /// The sub-bucket summaries (call [`Bucket::summary`] first).
    pub fn sub_summaries(&self) -> &[Summary; SUB_COUNT] {
        debug_assert!(self.sub_fresh.iter().all(|f| *f), "stale sub-buckets");
        &self.sub
    }

    /// Whether the bucket is over `capacity` encoded bytes and can be
    /// split.
    pub fn needs_split(&self, capacity: usize) -> bool {
        self.encoded_len > capacity
            && self.stems.len() >= 2
            && self.prefix.len() < BUCKET_PREFIX_MAX
    }

    /// Splits the bucket on its next prefix bit, repeatedly, until every
    /// piece fits in `capacity` encoded bytes or cannot be split. Returns
    /// the pieces in prefix order, together with each piece's depth below
    /// this bucket's prefix, so the caller can rebuild the trie shape: the
    /// pieces are the leaves, in order, of a binary subtree rooted at this
    /// bucket's prefix.
    pub fn split_to_fit(mut self, capacity: usize) -> Vec<Bucket> {
        if !self.needs_split(capacity) {
            return vec![self];
        }
        self.hash_stems(std::iter::once(0..self.stems.len()));
        let mut done = Vec::new();
        // Explicit stack, right child pushed first so pieces come out in order.
        let mut stack = vec![self];
        while let Some(bucket) = stack.pop() {
            if !bucket.needs_split(capacity) {
                done.push(bucket);
                continue;
            }
            let (left, right) = bucket.halve();
            stack.push(right);
            stack.push(left);
        }
        done
    }

    /// Splits into the two halves of the next prefix bit.
    fn halve(self) -> (Bucket, Bucket) {
        let depth = self.prefix.len();
        let (Some(p0), Some(p1)) = (self.prefix.child(0), self.prefix.child(1)) else {
            unreachable!("needs_split guarantees a short prefix");
        };
        let split = self.stems.partition_point(|e| e.stem.bit(depth) == 0);
        let mut left = Bucket::new(p0);
        let mut right = Bucket::new(p1);
        for (at, entry) in self.stems.iter().enumerate() {
            let target = if at < split { &mut left } else { &mut right };
            target.push_stem(entry, &self.values[entry.value_range()]);
        }
        left.finish_bulk();
        right.finish_bulk();
        (left, right)
    }

    /// Appends a stem greater than every stem present (bulk construction);
    /// call [`Bucket::finish_bulk`] afterwards.
    pub(crate) fn push_stem(&mut self, entry: &StemEntry, values: &[B256]) {
        debug_assert!(self.stems.last().is_none_or(|last| last.stem < entry.stem));
        debug_assert!(self.prefix.contains(&entry.stem));
        let mut moved = entry.clone();
        moved.set_first(self.values.len());
        self.values.extend_from_slice(values);
        self.stems.push(moved);
    }

    /// Recomputes lengths and marks every sub-bucket stale after
    /// [`Bucket::push_stem`] calls.
    pub(crate) fn finish_bulk(&mut self) {
        self.sub_fresh = [false; SUB_COUNT];
        self.refresh_header_len();
    }

    /// Rebuilds a bucket from decoded parts (see [`codec`]).
    pub(crate) fn from_parts(
        prefix: Prefix,
        stems: Vec<StemEntry>,
        values: Vec<B256>,
        sub: [Summary; SUB_COUNT],
    ) -> Bucket {
        let mut bucket = Bucket {
            prefix,
            stems,
            values,
            sub: Box::new(sub),
            sub_fresh: [true; SUB_COUNT],
            sub_stems: [0; SUB_COUNT],
            encoded_len: 0,
        };
        bucket.refresh_header_len();
        bucket
    }
}

/// The sub-bucket (0..SUB_COUNT) of `stem` in a bucket of prefix length
/// `prefix_len`: the [`SUB_BITS`] stem bits after the prefix.
pub(crate) fn sub_bucket_of(prefix_len: usize, stem: &Stem) -> usize {
    debug_assert!(prefix_len <= BUCKET_PREFIX_MAX);
    // The two bytes holding the bits (the second is past the stem only
    // when the bits lie in its last byte).
    let byte = prefix_len / 8;
    let pair = u16::from_be_bytes([stem.0[byte], stem.0.get(byte + 1).copied().unwrap_or(0)]);
    usize::from(pair >> (16 - SUB_BITS - prefix_len % 8)) & (SUB_COUNT - 1)
}

/// The summary of the subtree over `subs`, adjacent sub-bucket summaries
/// (a power of two of them, aligned to their common prefix): combined
/// pairwise, level by level.
pub(crate) fn combine_subs(subs: &[Summary]) -> Summary {
    debug_assert!(subs.len().is_power_of_two() && subs.len() <= SUB_COUNT);
    let mut level = [Summary::EMPTY; SUB_COUNT];
    level[..subs.len()].copy_from_slice(subs);
    let mut width = subs.len();
    while width > 1 {
        width /= 2;
        for at in 0..width {
            level[at] = combine(&level[2 * at], &level[2 * at + 1]);
        }
    }
    level[0]
}

/// The summary of each bucket, as [`Bucket::summary`] would return it,
/// with the stems every bucket needs hashed in one batched call across
/// all of them: a bucket with one changed stem leaves most of the
/// interleaved hasher's lanes idle, many buckets together fill them.
pub fn summaries(buckets: &mut [&mut Bucket]) -> Vec<Summary> {
    let stale: Vec<Vec<(usize, std::ops::Range<usize>)>> =
        buckets.iter().map(|bucket| bucket.stale_ranges()).collect();
    let mut missing: Vec<(usize, usize)> = Vec::new();
    for (index, (bucket, subs)) in buckets.iter().zip(&stale).enumerate() {
        for (_, range) in subs {
            missing.extend(
                range
                    .clone()
                    .filter(|&at| bucket.stems[at].hash().is_none())
                    .map(|at| (index, at)),
            );
        }
    }
    hash_missing_stems(buckets, missing);
    for (bucket, subs) in buckets.iter_mut().zip(stale) {
        bucket.refresh_subs(subs);
    }
    combine_subs_of_all(buckets)
}

/// Each bucket's summary from its (fresh) sub-bucket summaries, as
/// [`combine_subs`] gives it, combined level by level with the hashes of
/// a level, across all the buckets, in one batched call: a bucket's
/// fifteen combining hashes are a chain of four dependent levels, which
/// hashed one by one keep the SHA-256 unit waiting on each result.
fn combine_subs_of_all(buckets: &[&mut Bucket]) -> Vec<Summary> {
    let mut levels: Vec<[Summary; SUB_COUNT]> = buckets
        .iter()
        .map(|bucket| {
            debug_assert!(bucket.sub_fresh.iter().all(|f| *f));
            *bucket.sub
        })
        .collect();
    let mut messages: Vec<[u8; 64]> = Vec::new();
    let mut targets: Vec<(usize, usize)> = Vec::new();
    let mut hashes: Vec<Hash> = Vec::new();
    let mut width = SUB_COUNT;
    while width > 1 {
        width /= 2;
        messages.clear();
        targets.clear();
        for (index, level) in levels.iter_mut().enumerate() {
            // Slot `at` takes the pair at `2 * at` and `2 * at + 1`: every
            // later pair lies past it, so the level updates in place.
            for at in 0..width {
                let (left, right) = (level[2 * at], level[2 * at + 1]);
                match combine_unhashed(&left, &right) {
                    Some(summary) => level[at] = summary,
                    None => {
                        let mut message = [0u8; 64];
                        message[..32].copy_from_slice(&left.hash);
                        message[32..].copy_from_slice(&right.hash);
                        messages.push(message);
                        targets.push((index, at));
                    }
                }
            }
        }
        hashes.clear();
        hashes.resize(messages.len(), [0u8; 32]);
        hash64_many(&messages, &mut hashes);
        for (&(index, at), hash) in targets.iter().zip(&hashes) {
            levels[index][at] = Summary {
                occupancy: Occupancy::Many,
                hash: *hash,
            };
        }
    }
    levels.iter().map(|level| level[0]).collect()
}

/// Hashes the stems at `missing` (index into `buckets`, stem position)
/// in one batched call and stores each hash in its entry.
fn hash_missing_stems(buckets: &mut [&mut Bucket], missing: Vec<(usize, usize)>) {
    if missing.is_empty() {
        return;
    }
    let views: Vec<EntryLeaves<'_>> = missing
        .iter()
        .map(|&(index, at)| {
            let bucket = &buckets[index];
            EntryLeaves {
                entry: &bucket.stems[at],
                values: &bucket.values[bucket.stems[at].value_range()],
            }
        })
        .collect();
    let mut hashes = vec![[0u8; 32]; views.len()];
    stem_hashes(&views, &mut hashes);
    drop(views);
    for ((index, at), hash) in missing.into_iter().zip(hashes) {
        buckets[index].stems[at].set_hash(hash);
    }
}

/// A stem entry and its values, as the batched stem hasher sees them.
struct EntryLeaves<'a> {
    entry: &'a StemEntry,
    values: &'a [B256],
}

impl StemLeaves for EntryLeaves<'_> {
    fn stem(&self) -> &Stem {
        &self.entry.stem
    }

    fn leaves(&self) -> impl Iterator<Item = (u8, &B256)> + '_ {
        self.entry.sub_indices().zip(self.values)
    }
}

/// A stem's hash from its values (for verification and bulk builds).
pub fn compute_stem_hash(entry: &StemEntry, values: &[B256]) -> Hash {
    stem_hash(&entry.stem, &subtree_root(entry.sub_indices().zip(values)))
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests;

//! One stem inside a bucket: the stem, a presence bitmap of its 256 slots,
//! where its values start in the bucket's value array, and its hash when
//! known.

use std::ops::Range;

use ubt_spec::hash::Hash;
use ubt_spec::key::Stem;

/// `index` into a bucket's values as stored. A bucket holds far fewer than
/// 2^32 values: one over the bucket capacity (at most 64 KiB) is split,
/// and a block writes at most LAYER_OPS_MAX (~16.7 M).
fn value_index(index: usize) -> u32 {
    debug_assert!(u32::try_from(index).is_ok(), "value index {index}");
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// A stem of a [`super::Bucket`]. See the module documentation.
#[derive(Clone, Debug)]
pub struct StemEntry {
    /// The stem.
    pub stem: Stem,
    /// Bit `i % 64` of word `i / 64` is set iff sub-index `i` is present.
    bitmap: [u64; 4],
    /// Index of the first value in the bucket's value array.
    first: u32,
    /// Number of present values (1..=256).
    count: u16,
    hash: Hash,
    hash_known: bool,
}

impl StemEntry {
    /// A stem holding one value at `sub_index`, whose value sits at `first`.
    pub(crate) fn new(stem: Stem, sub_index: u8, first: usize) -> StemEntry {
        let mut bitmap = [0u64; 4];
        bitmap[usize::from(sub_index) / 64] |= 1u64 << (sub_index % 64);
        StemEntry {
            stem,
            bitmap,
            first: value_index(first),
            count: 1,
            hash: [0; 32],
            hash_known: false,
        }
    }

    /// A stem from its presence bitmap (decoding).
    pub(crate) fn from_bitmap(stem: Stem, bitmap: [u64; 4], first: usize) -> StemEntry {
        #[allow(clippy::cast_possible_truncation)] // at most 256 bits are set
        let count = bitmap.iter().map(|w| w.count_ones()).sum::<u32>() as u16;
        StemEntry {
            stem,
            bitmap,
            first: value_index(first),
            count,
            hash: [0; 32],
            hash_known: false,
        }
    }

    /// Number of present values.
    pub fn count(&self) -> usize {
        usize::from(self.count)
    }

    /// Index of the first value in the bucket's value array.
    pub fn first(&self) -> usize {
        self.first as usize
    }

    /// Range of this stem's values in the bucket's value array.
    pub fn value_range(&self) -> Range<usize> {
        self.first()..self.first() + self.count()
    }

    pub(crate) fn set_first(&mut self, first: usize) {
        self.first = value_index(first);
    }

    pub(crate) fn shift_first(&mut self, by: i32) {
        self.first = self.first.wrapping_add_signed(by);
    }

    /// Whether `sub_index` is present.
    pub fn contains(&self, sub_index: u8) -> bool {
        self.bitmap[usize::from(sub_index) / 64] & (1u64 << (sub_index % 64)) != 0
    }

    /// Number of present sub-indices below `sub_index`.
    pub(crate) fn insert_rank(&self, sub_index: u8) -> usize {
        let word = usize::from(sub_index) / 64;
        let below = self.bitmap[word] & ((1u64 << (sub_index % 64)) - 1);
        self.bitmap[..word]
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            + below.count_ones() as usize
    }

    /// Position of `sub_index` among the present values, if present.
    pub fn rank(&self, sub_index: u8) -> Option<usize> {
        self.contains(sub_index)
            .then(|| self.insert_rank(sub_index))
    }

    pub(crate) fn add(&mut self, sub_index: u8) {
        debug_assert!(!self.contains(sub_index));
        self.bitmap[usize::from(sub_index) / 64] |= 1u64 << (sub_index % 64);
        self.count += 1;
    }

    pub(crate) fn remove(&mut self, sub_index: u8) {
        debug_assert!(self.contains(sub_index));
        self.bitmap[usize::from(sub_index) / 64] &= !(1u64 << (sub_index % 64));
        self.count -= 1;
    }

    /// Present sub-indices, ascending.
    pub fn sub_indices(&self) -> impl Iterator<Item = u8> + '_ {
        (0..4usize).flat_map(move |word| {
            let mut bits = self.bitmap[word];
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    #[allow(clippy::cast_possible_truncation)] // word < 4, bit < 64
                    let sub_index = (word * 64 + bit) as u8;
                    sub_index
                })
            })
        })
    }

    /// The stem's hash, if known.
    pub fn hash(&self) -> Option<Hash> {
        self.hash_known.then_some(self.hash)
    }

    pub(crate) fn set_hash(&mut self, hash: Hash) {
        self.hash = hash;
        self.hash_known = true;
    }

    pub(crate) fn invalidate_hash(&mut self) {
        self.hash_known = false;
    }
}

impl crate::summary::StemHashed for StemEntry {
    fn stem(&self) -> &Stem {
        &self.stem
    }

    fn stem_hash(&self) -> &Hash {
        debug_assert!(self.hash_known, "stem hash used before it was computed");
        &self.hash
    }
}

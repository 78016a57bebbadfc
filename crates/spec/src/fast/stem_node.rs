//! A stem node of the fast tree: the stem, a presence bitmap of its 256
//! slots, its values (ascending sub-index) in a [`ValueSlab`] block, and its
//! cached hash.

use alloy_primitives::B256;

use super::values::{Block, ValueSlab};
use crate::hash::Hash;
use crate::key::Stem;
use crate::stem::{stem_hash, subtree_root};

/// See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct StemNode {
    pub stem: Stem,
    /// Bit `i % 64` of word `i / 64` is set iff sub-index `i` is present.
    pub bitmap: [u64; 4],
    pub block: Block,
    pub count: u16,
    pub dirty: bool,
    pub hash: Hash,
}

impl StemNode {
    /// A stem holding `values` (ascending, distinct sub-indices, at least one).
    pub fn with_values(stem: Stem, values: &[(u8, B256)], slab: &mut ValueSlab) -> Self {
        debug_assert!(!values.is_empty() && values.windows(2).all(|w| w[0].0 < w[1].0));
        let block = slab.alloc(ValueSlab::class_for(values.len()));
        let mut bitmap = [0u64; 4];
        let slots = slab.get_mut(block);
        for (slot, (sub_index, value)) in slots.iter_mut().zip(values) {
            bitmap[usize::from(*sub_index) / 64] |= 1u64 << (sub_index % 64);
            *slot = *value;
        }
        #[allow(clippy::cast_possible_truncation)] // a stem holds at most 256 values
        let count = values.len() as u16;
        StemNode {
            stem,
            bitmap,
            block,
            count,
            dirty: true,
            hash: [0; 32],
        }
    }

    /// Whether `sub_index` is present.
    pub fn contains(&self, sub_index: u8) -> bool {
        self.bitmap[usize::from(sub_index) / 64] & (1u64 << (sub_index % 64)) != 0
    }

    /// Position of `sub_index` among the present values.
    fn rank(&self, sub_index: u8) -> usize {
        let word = usize::from(sub_index) / 64;
        let below_in_word = self.bitmap[word] & ((1u64 << (sub_index % 64)) - 1);
        self.bitmap[..word]
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            + below_in_word.count_ones() as usize
    }

    /// The value at `sub_index`, if present.
    pub fn get(&self, sub_index: u8, slab: &ValueSlab) -> Option<B256> {
        if !self.contains(sub_index) {
            return None;
        }
        Some(slab.get(self.block, usize::from(self.count))[self.rank(sub_index)])
    }

    /// Sets `sub_index` to `value`; returns whether the slot was new.
    pub fn set(&mut self, sub_index: u8, value: B256, slab: &mut ValueSlab) -> bool {
        self.dirty = true;
        let rank = self.rank(sub_index);
        if self.contains(sub_index) {
            slab.get_mut(self.block)[rank] = value;
            return false;
        }
        let count = usize::from(self.count);
        if count == self.block.capacity() {
            let grown = slab.alloc(self.block.class + 1);
            slab.copy(self.block, grown, count);
            slab.release(self.block);
            self.block = grown;
        }
        let slots = slab.get_mut(self.block);
        slots.copy_within(rank..count, rank + 1);
        slots[rank] = value;
        self.count += 1;
        self.bitmap[usize::from(sub_index) / 64] |= 1u64 << (sub_index % 64);
        true
    }

    /// Present `(sub_index, value)` pairs in ascending order.
    pub fn values<'a>(&'a self, slab: &'a ValueSlab) -> impl Iterator<Item = (u8, &'a B256)> {
        let present = (0..4usize).flat_map(move |word| {
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
        });
        present.zip(slab.get(self.block, usize::from(self.count)))
    }

    /// Recomputes the hash if dirty; returns it.
    pub fn rehash(&mut self, slab: &ValueSlab) -> Hash {
        if self.dirty {
            self.hash = stem_hash(&self.stem, &subtree_root(self.values(slab)));
            self.dirty = false;
        }
        self.hash
    }
}

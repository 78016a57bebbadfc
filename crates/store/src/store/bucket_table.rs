//! The bucket table: one packed slot per bucket, resident for the store's
//! life (one slot per ~40 stems), so its bytes count per entry of the
//! state at scale.
//!
//! A slot is 32 bytes:
//!
//! * the prefix's first 64 bits and its length. Every bucket of a state of
//!   hashed keys is that short (64 equal leading bits of SHA-256 outputs
//!   take ~2^32 work per pair, and buckets split at ~22 bits for 200M
//!   entries); a longer prefix (crafted raw keys) is kept whole in the
//!   table's side map, by bucket id.
//! * the extent, without `Option`'s tag: a written bucket is never zero
//!   bytes long, so a zero length means "not written". Its length shares
//!   a word with the prefix length: a bucket is at most a few tens of KiB
//!   (one over its capacity, at most
//!   [`crate::bucket::BUCKET_BYTES_LARGEST`], holds at most four stems),
//!   far below the 24 bits kept; an open refuses a longer one.
//! * the changed contents, when changed since the last checkpoint.
//!
//! A slot does not name its leaf in the upper trie: the prefix leads there
//! ([`crate::upper::UpperTrie::leaf_of`]), and the few places that need it
//! walk.

use alloy_primitives::map::HashMap;

use crate::bucket::Bucket;
use crate::format::Extent;
use crate::prefix::Prefix;
use crate::upper::{id_of, BucketId};
use ubt_spec::key::{Stem, STEM_BYTES};

/// Longest prefix kept in the slot itself.
const INLINE_PREFIX_BITS: usize = 64;

/// Extent lengths a slot holds: below 2^24 bytes.
pub(crate) const SLOT_EXTENT_LEN_LIMIT: u32 = 1 << 24;

/// One bucket of the bucket table.
#[derive(Debug)]
pub(crate) struct BucketSlot {
    /// The prefix's first (up to) 64 bits, most significant first, zero
    /// past its length.
    prefix_head: u64,
    /// Where the bucket was last written (meaningless when not written).
    offset: u64,
    /// The written bytes' CRC-32C.
    crc: u32,
    /// Bits 0-23: the written length (0 when not written or empty);
    /// bits 24-31: the prefix length.
    lens: u32,
    /// Its contents, when changed since the last checkpoint.
    pub dirty: Option<Box<Bucket>>,
}

impl BucketSlot {
    fn new(prefix: &Prefix, extent: Option<Extent>) -> BucketSlot {
        let mut slot = BucketSlot {
            prefix_head: 0,
            offset: 0,
            crc: 0,
            lens: 0,
            dirty: None,
        };
        slot.set_prefix_head(prefix);
        slot.set_extent(extent);
        slot
    }

    fn prefix_len(&self) -> usize {
        (self.lens >> 24) as usize
    }

    fn set_prefix_head(&mut self, prefix: &Prefix) {
        let mut head = [0u8; 8];
        head.copy_from_slice(&prefix.bytes()[..8]);
        self.prefix_head = u64::from_be_bytes(head);
        self.lens = (self.lens & 0x00ff_ffff) | (u32::from(prefix.len_byte()) << 24);
    }

    /// The prefix, when short enough to be held here.
    fn inline_prefix(&self) -> Option<Prefix> {
        let len = self.prefix_len();
        (len <= INLINE_PREFIX_BITS).then(|| {
            let mut bytes = [0u8; STEM_BYTES];
            bytes[..8].copy_from_slice(&self.prefix_head.to_be_bytes());
            // The bits past `len` were zero when packed.
            Prefix::of_stem(&Stem(bytes), len)
        })
    }

    /// Where it was last written (none if never written or empty).
    pub fn extent(&self) -> Option<Extent> {
        let len = self.lens & 0x00ff_ffff;
        (len != 0).then_some(Extent {
            offset: self.offset,
            len,
            crc: self.crc,
        })
    }

    /// Records where it is written now; returns the extent it replaces.
    pub fn set_extent(&mut self, extent: Option<Extent>) -> Option<Extent> {
        debug_assert!(
            extent.is_none_or(|e| e.len != 0 && e.len < SLOT_EXTENT_LEN_LIMIT),
            "a written bucket has bytes, fewer than a slot's limit"
        );
        let old = self.extent();
        let Extent { offset, len, crc } = extent.unwrap_or(UNWRITTEN);
        self.offset = offset;
        self.crc = crc;
        self.lens = (self.lens & 0xff00_0000) | (len & 0x00ff_ffff);
        old
    }
}

/// The extent of a bucket not written.
const UNWRITTEN: Extent = Extent {
    offset: 0,
    len: 0,
    crc: 0,
};

/// The bucket table, indexed by [`BucketId`] (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct BucketTable {
    slots: Vec<BucketSlot>,
    /// The prefixes longer than a slot holds, by bucket.
    long_prefixes: HashMap<BucketId, Prefix>,
}

impl BucketTable {
    /// An empty table with room for `capacity` buckets.
    pub fn with_capacity(capacity: usize) -> BucketTable {
        BucketTable {
            slots: Vec::with_capacity(capacity),
            long_prefixes: HashMap::default(),
        }
    }

    /// Adds a clean bucket covering `prefix`, written at `extent`; returns
    /// its id.
    pub fn push(&mut self, prefix: &Prefix, extent: Option<Extent>) -> BucketId {
        let id = id_of(self.slots.len());
        self.slots.push(BucketSlot::new(prefix, extent));
        if prefix.len() > INLINE_PREFIX_BITS {
            self.long_prefixes.insert(id, *prefix);
        }
        id
    }

    /// The prefix bucket `id` covers.
    pub fn prefix(&self, id: BucketId) -> Prefix {
        let slot = &self.slots[id as usize];
        slot.inline_prefix().unwrap_or_else(|| {
            self.long_prefixes
                .get(&id)
                .copied()
                .unwrap_or_else(|| unreachable!("bucket {id}'s long prefix is kept"))
        })
    }

    /// Moves bucket `id` to `prefix` (a split keeps the slot for one piece).
    pub fn set_prefix(&mut self, id: BucketId, prefix: &Prefix) {
        self.slots[id as usize].set_prefix_head(prefix);
        if prefix.len() > INLINE_PREFIX_BITS {
            self.long_prefixes.insert(id, *prefix);
        } else {
            self.long_prefixes.remove(&id);
        }
    }

    /// Number of buckets.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slots, in id order.
    pub fn iter(&self) -> std::slice::Iter<'_, BucketSlot> {
        self.slots.iter()
    }

    /// Drops spare capacity (the table lives as long as the store).
    pub fn shrink_to_fit(&mut self) {
        self.slots.shrink_to_fit();
        self.long_prefixes.shrink_to_fit();
    }

    /// Heap bytes held (the side map's entries counted at key, value and
    /// one control byte each).
    pub fn memory_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<BucketSlot>()
            + self.long_prefixes.capacity() * (std::mem::size_of::<(BucketId, Prefix)>() + 1)
    }
}

impl std::ops::Index<usize> for BucketTable {
    type Output = BucketSlot;

    fn index(&self, index: usize) -> &BucketSlot {
        &self.slots[index]
    }
}

impl std::ops::IndexMut<usize> for BucketTable {
    fn index_mut(&mut self, index: usize) -> &mut BucketSlot {
        &mut self.slots[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stem with set bits throughout (so a truncation shows).
    fn stem(seed: usize) -> Stem {
        Stem(std::array::from_fn(|i| {
            let mixed = u32::try_from(seed * 64 + i)
                .unwrap_or(0)
                .wrapping_mul(0x9e37_79b1);
            mixed.to_be_bytes()[0] | 1
        }))
    }

    /// Every prefix length comes back equal, short or long, through a
    /// push and through moving a slot between lengths either side of 64
    /// bits (a long prefix's side entry goes when the slot turns short);
    /// the extent is untouched by either.
    #[test]
    fn prefixes_of_every_length_come_back_equal() {
        let at = Extent {
            offset: 4096 * 77,
            len: SLOT_EXTENT_LEN_LIMIT - 1,
            crc: 0x1234_5678,
        };
        let mut table = BucketTable::default();
        for len in 0..=crate::bucket::BUCKET_PREFIX_MAX {
            let prefix = Prefix::of_stem(&stem(len), len);
            let id = table.push(&prefix, Some(at));
            assert_eq!(table.prefix(id), prefix, "length {len}");
            let other = Prefix::of_stem(&stem(200), crate::bucket::BUCKET_PREFIX_MAX - len);
            table.set_prefix(id, &other);
            assert_eq!(table.prefix(id), other, "length {}", other.len());
            assert_eq!(table[id as usize].extent(), Some(at));
        }
        let long = table.long_prefixes.len();
        let expected = (0..=crate::bucket::BUCKET_PREFIX_MAX)
            .filter(|len| crate::bucket::BUCKET_PREFIX_MAX - len > INLINE_PREFIX_BITS)
            .count();
        assert_eq!(long, expected);
    }

    #[test]
    fn an_extent_round_trips_and_none_is_distinct() {
        let at = Extent {
            offset: u64::MAX - 4096,
            len: 3000,
            crc: 0xdead_beef,
        };
        let prefix = Prefix::of_stem(&stem(9), 40);
        let mut slot = BucketSlot::new(&prefix, Some(at));
        assert_eq!(slot.extent(), Some(at));
        assert_eq!(slot.set_extent(None), Some(at));
        assert_eq!(slot.extent(), None);
        assert_eq!(slot.set_extent(Some(at)), None);
        assert_eq!(slot.inline_prefix(), Some(prefix));
        assert_eq!(BucketSlot::new(&Prefix::ROOT, None).extent(), None);
    }

    /// The table holds one slot per ~40 stems for the store's life.
    #[test]
    fn a_slot_is_32_bytes() {
        assert_eq!(std::mem::size_of::<BucketSlot>(), 32);
    }
}

//! One entry of the bucket table, packed: the table is resident for the
//! store's life (one entry per ~40 stems), so its bytes count per entry of
//! the state at scale.
//!
//! The prefix is kept as 64 bits and a length when it is at most 64 bits
//! long (every bucket of a state of hashed keys: 64 equal leading bits of
//! SHA-256 outputs take ~2^32 work per pair, and buckets split at ~22 bits
//! for 200M entries); a longer prefix (crafted raw keys) is boxed. The
//! extent is kept without `Option`'s tag: a written bucket is never zero
//! bytes long, so a zero length means "not written".

use crate::bucket::Bucket;
use crate::format::Extent;
use crate::prefix::Prefix;
use crate::upper::NodeId;
use ubt_spec::key::{Stem, STEM_BYTES};

/// Longest prefix kept inline.
const INLINE_PREFIX_BITS: usize = 64;

/// A bucket's prefix, inline when short.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PackedPrefix {
    /// The first `len` (<= 64) bits, most significant first.
    Inline { bits: u64, len: u8 },
    /// A longer prefix.
    Boxed(Box<Prefix>),
}

impl PackedPrefix {
    fn pack(prefix: &Prefix) -> PackedPrefix {
        if prefix.len() <= INLINE_PREFIX_BITS {
            let mut head = [0u8; 8];
            head.copy_from_slice(&prefix.bytes()[..8]);
            PackedPrefix::Inline {
                bits: u64::from_be_bytes(head),
                len: prefix.len_byte(),
            }
        } else {
            PackedPrefix::Boxed(Box::new(*prefix))
        }
    }

    fn unpack(&self) -> Prefix {
        match self {
            PackedPrefix::Inline { bits, len } => {
                let mut bytes = [0u8; STEM_BYTES];
                bytes[..8].copy_from_slice(&bits.to_be_bytes());
                // The bits past `len` were zero when packed.
                Prefix::of_stem(&Stem(bytes), usize::from(*len))
            }
            PackedPrefix::Boxed(prefix) => **prefix,
        }
    }
}

/// One bucket of the bucket table.
#[derive(Debug)]
pub(crate) struct BucketSlot {
    prefix: PackedPrefix,
    /// Where it was last written; `len == 0` when never written or empty.
    extent: Extent,
    /// Its leaf in the upper trie.
    pub leaf: NodeId,
    /// Its contents, when changed since the last checkpoint.
    pub dirty: Option<Box<Bucket>>,
}

impl BucketSlot {
    /// A clean bucket covering `prefix` at leaf `leaf`, written at `extent`.
    pub fn new(prefix: &Prefix, leaf: NodeId, extent: Option<Extent>) -> BucketSlot {
        let mut slot = BucketSlot {
            prefix: PackedPrefix::pack(prefix),
            extent: UNWRITTEN,
            leaf,
            dirty: None,
        };
        slot.set_extent(extent);
        slot
    }

    /// The prefix the bucket covers.
    pub fn prefix(&self) -> Prefix {
        self.prefix.unpack()
    }

    /// Moves the bucket to `prefix` (a split keeps the slot for one piece).
    pub fn set_prefix(&mut self, prefix: &Prefix) {
        self.prefix = PackedPrefix::pack(prefix);
    }

    /// Where it was last written (none if never written or empty).
    pub fn extent(&self) -> Option<Extent> {
        (self.extent.len != 0).then_some(self.extent)
    }

    /// Records where it is written now; returns the extent it replaces.
    pub fn set_extent(&mut self, extent: Option<Extent>) -> Option<Extent> {
        debug_assert!(
            extent.is_none_or(|e| e.len != 0),
            "a written bucket has bytes"
        );
        let old = self.extent();
        self.extent = extent.unwrap_or(UNWRITTEN);
        old
    }
}

/// The extent of a bucket not written.
const UNWRITTEN: Extent = Extent {
    offset: 0,
    len: 0,
    crc: 0,
};

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

    #[test]
    fn prefixes_of_every_length_come_back_equal() {
        for len in 0..=crate::bucket::BUCKET_PREFIX_MAX {
            let prefix = Prefix::of_stem(&stem(len), len);
            let mut slot = BucketSlot::new(&prefix, 7, None);
            assert_eq!(slot.prefix(), prefix, "length {len}");
            let other = Prefix::of_stem(&stem(200), len / 2);
            slot.set_prefix(&other);
            assert_eq!(slot.prefix(), other, "length {}", len / 2);
        }
    }

    #[test]
    fn an_extent_round_trips_and_none_is_distinct() {
        let at = Extent {
            offset: 4096 * 9,
            len: 3000,
            crc: 0xdead_beef,
        };
        let mut slot = BucketSlot::new(&Prefix::ROOT, 0, Some(at));
        assert_eq!(slot.extent(), Some(at));
        assert_eq!(slot.set_extent(None), Some(at));
        assert_eq!(slot.extent(), None);
        assert_eq!(slot.set_extent(Some(at)), None);
        assert_eq!(BucketSlot::new(&Prefix::ROOT, 0, None).extent(), None);
    }

    /// The table holds one slot per ~40 stems for the store's life.
    #[test]
    fn a_slot_is_48_bytes() {
        assert_eq!(std::mem::size_of::<BucketSlot>(), 48);
    }
}

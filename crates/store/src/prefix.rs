//! Bit prefixes of stems: the address of a bucket or of an upper-trie node.
//!
//! A prefix of length `len` covers every stem whose first `len` bits equal
//! its bits; bits past `len` are kept zero so equal prefixes compare equal.

use ubt_spec::key::{Stem, STEM_BYTES};

/// Bits in a stem.
pub const STEM_BITS: usize = STEM_BYTES * 8;

/// A prefix of 0..=248 stem bits. See the module documentation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Prefix {
    bits: [u8; STEM_BYTES],
    len: u8,
}

impl Prefix {
    /// The empty prefix (the root; covers every stem).
    pub const ROOT: Prefix = Prefix {
        bits: [0; STEM_BYTES],
        len: 0,
    };

    /// The first `len` bits of `stem`.
    pub fn of_stem(stem: &Stem, len: usize) -> Prefix {
        debug_assert!(len <= STEM_BITS);
        let mut bits = [0u8; STEM_BYTES];
        let full = len / 8;
        bits[..full].copy_from_slice(&stem.0[..full]);
        if !len.is_multiple_of(8) {
            bits[full] = stem.0[full] & !(0xffu8 >> (len % 8));
        }
        #[allow(clippy::cast_possible_truncation)] // at most STEM_BITS (248), asserted above
        let len = len as u8;
        Prefix { bits, len }
    }

    /// Builds a prefix from raw bytes, rejecting set bits past `len`.
    pub fn from_parts(bits: [u8; STEM_BYTES], len: usize) -> Option<Prefix> {
        if len > STEM_BITS {
            return None;
        }
        let prefix = Prefix {
            bits,
            len: u8::try_from(len).ok()?,
        };
        (Prefix::of_stem(&Stem(bits), len) == prefix).then_some(prefix)
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Number of bits, as the one byte an encoding stores.
    pub fn len_byte(&self) -> u8 {
        self.len
    }

    /// Whether this is the root prefix (the pair of the public `len`).
    #[cfg(feature = "testing")]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw bytes (bits past `len` are zero).
    pub fn bytes(&self) -> &[u8; STEM_BYTES] {
        &self.bits
    }

    /// Bit `index` (< len), MSB-first.
    #[inline]
    pub fn bit(&self, index: usize) -> u8 {
        debug_assert!(index < self.len());
        (self.bits[index / 8] >> (7 - index % 8)) & 1
    }

    /// Whether `stem` starts with this prefix.
    pub fn contains(&self, stem: &Stem) -> bool {
        // The prefix's bits past its length are zero: compare its whole
        // bytes, then its last partial byte under a mask (no copy of the
        // stem, which decoding did for every record).
        let len = self.len();
        let full = len / 8;
        if stem.0[..full] != self.bits[..full] {
            return false;
        }
        len.is_multiple_of(8) || (stem.0[full] ^ self.bits[full]) & !(0xffu8 >> (len % 8)) == 0
    }

    /// This prefix extended by `bit`; `None` past 248 bits.
    pub fn child(&self, bit: u8) -> Option<Prefix> {
        let len = self.len();
        if len >= STEM_BITS {
            return None;
        }
        let mut next = *self;
        if bit != 0 {
            next.bits[len / 8] |= 0x80 >> (len % 8);
        }
        next.len += 1;
        Some(next)
    }

    /// The prefix shortened to `len` bits (`len <= self.len()`).
    pub fn truncate(&self, len: usize) -> Prefix {
        debug_assert!(len <= self.len());
        Prefix::of_stem(&Stem(self.bits), len)
    }
}

impl std::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prefix(")?;
        for i in 0..self.len() {
            write!(f, "{}", self.bit(i))?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::cast_possible_truncation)] // test data, reduced below the casts' ranges
    fn containment_agrees_with_truncating_the_stem() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2_000 {
            let mut stem = Stem([0u8; STEM_BYTES]);
            for byte in &mut stem.0 {
                *byte = next() as u8;
            }
            let len = (next() % (STEM_BITS as u64 + 1)) as usize;
            let mut other = stem;
            // Differ at a random bit (or not at all).
            let flip = (next() % (STEM_BITS as u64 + 8)) as usize;
            if flip < STEM_BITS {
                other.0[flip / 8] ^= 0x80 >> (flip % 8);
            }
            let prefix = Prefix::of_stem(&stem, len);
            assert_eq!(
                prefix.contains(&other),
                Prefix::of_stem(&other, len) == prefix,
                "len {len}, flipped bit {flip}"
            );
            assert!(prefix.contains(&stem));
        }
    }

    #[test]
    fn children_and_containment() {
        let mut stem = Stem([0u8; 31]);
        stem.0[0] = 0b1010_0000;
        let p = Prefix::ROOT
            .child(1)
            .unwrap()
            .child(0)
            .unwrap()
            .child(1)
            .unwrap();
        assert_eq!(p.len(), 3);
        assert!(p.contains(&stem));
        assert_eq!(p, Prefix::of_stem(&stem, 3));
        assert!(!Prefix::of_stem(&stem, 3).child(1).unwrap().contains(&stem));
        assert_eq!(p.truncate(1), Prefix::ROOT.child(1).unwrap());
        assert!(Prefix::from_parts([0xff; 31], 4).is_none());
        assert!(Prefix::from_parts(*Prefix::of_stem(&Stem([0xff; 31]), 4).bytes(), 4).is_some());
        let full = Prefix::of_stem(&stem, STEM_BITS);
        assert!(full.child(0).is_none());
    }
}

//! What the external sort orders: a fixed-size record with its order, its
//! rule for duplicates and its canonical encoding in a spill run.
//!
//! Two kinds are sorted. [`Entry`]: a tree write by tree key, for the
//! database build; two entries with one key are a duplicate, reported with
//! both origins. [`FlatRecord`]: the same write filed under its account,
//! by `(account, tree key)`, for the flat index; it has no duplicate rule
//! of its own, since equal `(account, key)` pairs have equal keys, which
//! the tree sort refuses before the flat index is built.

use std::cmp::Ordering;

use crate::entries::{Entry, FlatRecord};
use crate::sort::buffer::Duplicate;

/// A record the external sort orders and spills.
pub(crate) trait Record: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// The first 8 bytes of a spill run of these records.
    const MAGIC: [u8; 8];
    /// Bytes of the smallest encoding.
    const ENCODED_BYTES_MIN: usize;
    /// Bytes of the largest encoding.
    const ENCODED_BYTES_MAX: usize;

    /// The order of sort keys: a run never decreases in it.
    fn key_order(&self, other: &Self) -> Ordering;

    /// The sort's total order: the key order, then a tie-break that makes
    /// equal keys come out in input order.
    fn order(&self, other: &Self) -> Ordering;

    /// The duplicate that `self` and `next`, adjacent in order, make, if
    /// they make one.
    fn duplicate(&self, next: &Self) -> Option<Duplicate>;

    /// Appends the canonical encoding.
    fn encode(&self, out: &mut Vec<u8>);

    /// Decodes one record from the front of `bytes`, advancing it; `None`
    /// if the bytes are not a canonical encoding.
    fn decode(bytes: &mut &[u8]) -> Option<Self>;
}

/// The order of 32-byte keys: as byte strings, compared a word at a time
/// (keys are hashes, so the first word nearly always decides; a byte-wise
/// compare costs a call into `memcmp` per comparison).
#[inline]
pub(crate) fn key_order(a: &[u8; 32], b: &[u8; 32]) -> Ordering {
    for i in 0..4 {
        let word = |key: &[u8; 32]| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&key[i * 8..i * 8 + 8]);
            u64::from_be_bytes(bytes)
        };
        match word(a).cmp(&word(b)) {
            Ordering::Equal => continue,
            unequal => return unequal,
        }
    }
    Ordering::Equal
}

/// The order of 20-byte addresses, as byte strings, a word at a time.
#[inline]
fn address_order(a: &[u8; 20], b: &[u8; 20]) -> Ordering {
    let words = |address: &[u8; 20]| {
        let mut high = [0u8; 8];
        let mut middle = [0u8; 8];
        let mut low = [0u8; 4];
        high.copy_from_slice(&address[..8]);
        middle.copy_from_slice(&address[8..16]);
        low.copy_from_slice(&address[16..]);
        (
            u64::from_be_bytes(high),
            u64::from_be_bytes(middle),
            u32::from_be_bytes(low),
        )
    };
    words(a).cmp(&words(b))
}

/// Appends a 32-byte value without its leading zero bytes: a length byte
/// (0..=32), then the rest (its first byte not zero).
fn encode_value(value: &[u8; 32], out: &mut Vec<u8>) {
    let zeros = value.iter().take_while(|b| **b == 0).count();
    // At most 32 leading zeros: the length fits a byte.
    #[allow(clippy::cast_possible_truncation)]
    out.push((32 - zeros) as u8);
    out.extend_from_slice(&value[zeros..]);
}

/// Decodes what [`encode_value`] writes from the front of `bytes`.
fn decode_value(bytes: &mut &[u8]) -> Option<[u8; 32]> {
    let (&value_len, rest) = bytes.split_first()?;
    let value_len = usize::from(value_len);
    if value_len > 32 || rest.len() < value_len {
        return None;
    }
    let (value_bytes, rest) = rest.split_at(value_len);
    if value_bytes.first() == Some(&0) {
        return None;
    }
    let mut value = [0u8; 32];
    value[32 - value_len..].copy_from_slice(value_bytes);
    *bytes = rest;
    Some(value)
}

/// Appends `number` as LEB128 (7 bits a byte, low first).
fn encode_leb128(mut number: u64, out: &mut Vec<u8>) {
    loop {
        let low = (number & 0x7f) as u8;
        number >>= 7;
        if number == 0 {
            out.push(low);
            break;
        }
        out.push(low | 0x80);
    }
}

/// Decodes a canonical LEB128 number (no redundant final zero byte, at
/// most 64 bits) from the front of `bytes`.
fn decode_leb128(bytes: &mut &[u8]) -> Option<u64> {
    let mut rest = *bytes;
    let mut number = 0u64;
    let mut shift = 0u32;
    loop {
        let (&byte, after) = rest.split_first()?;
        rest = after;
        let low = u64::from(byte & 0x7f);
        if shift == 63 && low > 1 {
            return None;
        }
        number |= low << shift;
        if byte & 0x80 == 0 {
            // Canonical: a final byte of 0 only as the sole byte.
            if byte == 0 && shift > 0 {
                return None;
            }
            break;
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
    *bytes = rest;
    Some(number)
}

impl Record for Entry {
    const MAGIC: [u8; 8] = *b"UBTSORT1";
    // Key, length byte (value 0), 1-byte origin.
    const ENCODED_BYTES_MIN: usize = 32 + 1 + 1;
    // Key, length byte, value, 10-byte origin.
    const ENCODED_BYTES_MAX: usize = 32 + 1 + 32 + 10;

    #[inline]
    fn key_order(&self, other: &Self) -> Ordering {
        key_order(&self.key, &other.key)
    }

    #[inline]
    fn order(&self, other: &Self) -> Ordering {
        key_order(&self.key, &other.key).then(self.origin.cmp(&other.origin))
    }

    fn duplicate(&self, next: &Self) -> Option<Duplicate> {
        (self.key == next.key).then_some(Duplicate {
            key: self.key,
            first_origin: self.origin,
            second_origin: next.origin,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key);
        encode_value(&self.value, out);
        encode_leb128(self.origin, out);
    }

    fn decode(bytes: &mut &[u8]) -> Option<Self> {
        let mut rest = *bytes;
        let (key, after) = rest.split_first_chunk::<32>()?;
        rest = after;
        let value = decode_value(&mut rest)?;
        let origin = decode_leb128(&mut rest)?;
        *bytes = rest;
        Some(Entry {
            key: *key,
            value,
            origin,
        })
    }
}

impl Record for FlatRecord {
    const MAGIC: [u8; 8] = *b"UBTSORTA";
    // Account, key, length byte (value 0).
    const ENCODED_BYTES_MIN: usize = 20 + 32 + 1;
    // Account, key, length byte, value.
    const ENCODED_BYTES_MAX: usize = 20 + 32 + 1 + 32;

    #[inline]
    fn key_order(&self, other: &Self) -> Ordering {
        address_order(&self.owner, &other.owner).then_with(|| key_order(&self.key, &other.key))
    }

    #[inline]
    fn order(&self, other: &Self) -> Ordering {
        self.key_order(other)
    }

    fn duplicate(&self, _next: &Self) -> Option<Duplicate> {
        None
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.owner);
        out.extend_from_slice(&self.key);
        encode_value(&self.value, out);
    }

    fn decode(bytes: &mut &[u8]) -> Option<Self> {
        let mut rest = *bytes;
        let (owner, after) = rest.split_first_chunk::<20>()?;
        let (key, after) = after.split_first_chunk::<32>()?;
        rest = after;
        let value = decode_value(&mut rest)?;
        *bytes = rest;
        Some(FlatRecord {
            owner: *owner,
            key: *key,
            value,
        })
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;

    #[test]
    fn key_order_is_the_byte_order() {
        let mut keys: Vec<[u8; 32]> = (0..500u32)
            .map(|i| {
                let mut key = [0u8; 32];
                key[(i % 32) as usize] = (i / 32) as u8;
                key[31 - (i % 7) as usize] ^= i as u8;
                key
            })
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(key_order(a, b), a.cmp(b));
            }
        }
        keys.sort_by(key_order);
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn flat_order_is_account_then_key_as_bytes() {
        let records: Vec<FlatRecord> = (0..400u32)
            .map(|i| {
                let mut owner = [0u8; 20];
                owner[(i % 20) as usize] = (i / 40) as u8;
                let mut key = [0u8; 32];
                key[(i % 32) as usize] = (i % 3) as u8;
                FlatRecord {
                    owner,
                    key,
                    value: [0; 32],
                }
            })
            .collect();
        for a in &records {
            for b in &records {
                let bytes = |r: &FlatRecord| [r.owner.as_slice(), r.key.as_slice()].concat();
                assert_eq!(a.key_order(b), bytes(a).cmp(&bytes(b)));
            }
        }
    }

    #[test]
    fn encodings_round_trip_and_stay_in_their_bounds() {
        let mut out = Vec::new();
        for (i, zeros) in (0..=32usize).enumerate() {
            let mut value = [0xa5u8; 32];
            value[..zeros].fill(0);
            let entry = Entry {
                key: [i as u8; 32],
                value,
                origin: u64::MAX >> (i * 2).min(63),
            };
            let flat = FlatRecord {
                owner: [i as u8; 20],
                key: [7; 32],
                value,
            };
            for encoded in [
                {
                    out.clear();
                    entry.encode(&mut out);
                    let mut bytes = out.as_slice();
                    assert_eq!(Entry::decode(&mut bytes), Some(entry));
                    assert!(bytes.is_empty());
                    (
                        out.len(),
                        Entry::ENCODED_BYTES_MIN,
                        Entry::ENCODED_BYTES_MAX,
                    )
                },
                {
                    out.clear();
                    flat.encode(&mut out);
                    let mut bytes = out.as_slice();
                    assert_eq!(FlatRecord::decode(&mut bytes), Some(flat));
                    assert!(bytes.is_empty());
                    (
                        out.len(),
                        FlatRecord::ENCODED_BYTES_MIN,
                        FlatRecord::ENCODED_BYTES_MAX,
                    )
                },
            ] {
                let (len, min, max) = encoded;
                assert!((min..=max).contains(&len), "{len} outside {min}..={max}");
            }
        }
    }

    #[test]
    fn non_canonical_encodings_are_refused() {
        // A value with a leading zero byte kept.
        let mut bytes: Vec<u8> = [[1u8; 20].as_slice(), &[2u8; 32], &[2, 0, 5]].concat();
        assert_eq!(FlatRecord::decode(&mut bytes.as_slice()), None);
        bytes.truncate(52);
        bytes.extend_from_slice(&[33]);
        assert_eq!(FlatRecord::decode(&mut bytes.as_slice()), None);
        // An origin with a redundant final zero byte.
        let entry: Vec<u8> = [[3u8; 32].as_slice(), &[1, 9], &[0x81, 0x00]].concat();
        assert_eq!(Entry::decode(&mut entry.as_slice()), None);
    }
}

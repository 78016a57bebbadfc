//! Bit paths from the root and geth's path keys: root = empty; depth d >= 1
//! = `ceil(d/8)` bytes of bits MSB-first (unused trailing bits zero)
//! followed by one byte `d`. The database key is `"vA" || path key`.

use super::BlobError;

/// Deepest path: a stem can sit at depth 248.
pub const PATH_BITS_MAX: usize = 248;

/// The key prefix of binary-trie nodes in geth's path database.
pub const DB_KEY_PREFIX: &[u8; 2] = b"vA";

/// A path of up to 248 bits from the root.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BitPath {
    bits: [u8; 31],
    len: u8,
}

impl BitPath {
    /// The root's (empty) path.
    pub fn root() -> Self {
        Self::default()
    }

    /// Number of bits (the node's depth).
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether this is the root path.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `index` (MSB-first).
    pub fn bit(&self, index: usize) -> u8 {
        debug_assert!(index < self.len());
        (self.bits[index / 8] >> (7 - index % 8)) & 1
    }

    /// This path extended by one bit; `None` past 248 bits.
    pub fn child(&self, bit: u8) -> Option<Self> {
        let len = self.len();
        if len >= PATH_BITS_MAX {
            return None;
        }
        let mut next = *self;
        if bit != 0 {
            next.bits[len / 8] |= 0x80 >> (len % 8);
        }
        next.len += 1;
        Some(next)
    }

    /// Parses a string of '0'/'1' characters.
    pub fn from_bit_str(text: &str) -> Result<Self, BlobError> {
        if text.len() > PATH_BITS_MAX {
            return Err(BlobError::Path("more than 248 bits"));
        }
        text.bytes().try_fold(Self::root(), |path, c| match c {
            b'0' | b'1' => path
                .child(c - b'0')
                .ok_or(BlobError::Path("more than 248 bits")),
            _ => Err(BlobError::Path("bit strings hold only 0 and 1")),
        })
    }

    /// The path as a string of '0'/'1' characters.
    pub fn to_bit_string(&self) -> String {
        (0..self.len())
            .map(|i| if self.bit(i) == 0 { '0' } else { '1' })
            .collect()
    }

    /// geth's path key.
    pub fn key_bytes(&self) -> Vec<u8> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut key = self.bits[..self.len().div_ceil(8)].to_vec();
        key.push(self.len);
        key
    }

    /// Parses a geth path key, rejecting non-canonical ones.
    pub fn from_key_bytes(key: &[u8]) -> Result<Self, BlobError> {
        let Some((&len, packed)) = key.split_last() else {
            return Ok(Self::root());
        };
        let bit_count = usize::from(len);
        if bit_count == 0 || bit_count > PATH_BITS_MAX {
            return Err(BlobError::Path("length byte outside 1..=248"));
        }
        if packed.len() != bit_count.div_ceil(8) {
            return Err(BlobError::Path("byte count does not match the length byte"));
        }
        let mut path = Self::root();
        path.bits[..packed.len()].copy_from_slice(packed);
        path.len = len;
        if bit_count % 8 != 0 {
            let unused_mask = 0xffu8 >> (bit_count % 8);
            if packed.last().is_some_and(|b| b & unused_mask != 0) {
                return Err(BlobError::Path("unused trailing bits are not zero"));
            }
        }
        Ok(path)
    }

    /// The key under which geth's path database stores this node.
    pub fn db_key(&self) -> Vec<u8> {
        let mut key = DB_KEY_PREFIX.to_vec();
        key.extend(self.key_bytes());
        key
    }
}

impl std::fmt::Debug for BitPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BitPath({:?})", self.to_bit_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        assert_eq!(
            BitPath::from_bit_str("1").unwrap().key_bytes(),
            vec![0x80, 0x01]
        );
        assert_eq!(
            BitPath::from_bit_str("01000").unwrap().key_bytes(),
            vec![0x40, 0x05]
        );
        assert_eq!(BitPath::root().db_key(), b"vA".to_vec());
        let p = BitPath::from_bit_str("0110100101").unwrap();
        assert_eq!(BitPath::from_key_bytes(&p.key_bytes()).unwrap(), p);
        assert!(BitPath::from_key_bytes(&[0x41, 0x01]).is_err());
    }
}

//! The `reads` and `writes` strings of a block in the workload format
//! (docs/workload-format.md): printing, parsing, and applying a write to a
//! tree with geth's account semantics.

use std::fmt;
use std::str::FromStr;

use alloy_primitives::{Address, B256, U256};
use ubt_spec::{AccountWrites, StateTree};

/// One entry of a block's `reads`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadRecord {
    /// `a:0x<40>`: an account (BasicData and code hash).
    Account(Address),
    /// `s:0x<40>:0x<64>`: a storage slot.
    Slot(Address, U256),
    /// `r:0x<64>`: a raw key.
    Raw(B256),
}

/// One entry of a block's `writes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteRecord {
    /// `a:0x<40>=<nonce>,<balance>,0x<codehash>,<codesize>`.
    Account {
        /// The account.
        address: Address,
        /// New nonce.
        nonce: u64,
        /// New balance (full width; trees keep 128 bits as geth does).
        balance: U256,
        /// New code hash.
        code_hash: B256,
        /// New code size in bytes.
        code_size: u32,
    },
    /// `s:0x<40>:0x<64>=0x<64>`: a slot's new value (zero is a write of zero).
    Slot {
        /// The account.
        address: Address,
        /// The slot.
        slot: U256,
        /// New value.
        value: B256,
    },
    /// `r:0x<64>=0x<64>`: a raw key's new value.
    Raw {
        /// The key.
        key: B256,
        /// New value.
        value: B256,
    },
}

impl WriteRecord {
    /// Applies the write with geth's semantics (`UpdateAccount`,
    /// `UpdateStorage`, or a plain insert for raw keys).
    pub fn apply<T: StateTree + ?Sized>(&self, tree: &mut T) {
        match self {
            WriteRecord::Account {
                address,
                nonce,
                balance,
                code_hash,
                code_size,
            } => tree.update_account(address, *nonce, balance, code_hash, *code_size),
            WriteRecord::Slot {
                address,
                slot,
                value,
            } => tree.update_storage(address, slot, value.as_slice()),
            WriteRecord::Raw { key, value } => tree.insert(*key, *value),
        }
    }
}

/// A record string that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("bad record {record:?}: {reason}")]
pub struct RecordError {
    /// The string.
    pub record: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

fn bad(record: &str, reason: &'static str) -> RecordError {
    RecordError {
        record: record.to_owned(),
        reason,
    }
}

impl fmt::Display for ReadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadRecord::Account(address) => write!(f, "a:{}", hex_address(address)),
            ReadRecord::Slot(address, slot) => {
                write!(
                    f,
                    "s:{}:{}",
                    hex_address(address),
                    hex_word(&B256::from(*slot))
                )
            }
            ReadRecord::Raw(key) => write!(f, "r:{}", hex_word(key)),
        }
    }
}

impl fmt::Display for WriteRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteRecord::Account {
                address,
                nonce,
                balance,
                code_hash,
                code_size,
            } => write!(
                f,
                "a:{}={nonce},{balance},{},{code_size}",
                hex_address(address),
                hex_word(code_hash)
            ),
            WriteRecord::Slot {
                address,
                slot,
                value,
            } => write!(
                f,
                "s:{}:{}={}",
                hex_address(address),
                hex_word(&B256::from(*slot)),
                hex_word(value)
            ),
            WriteRecord::Raw { key, value } => write!(f, "r:{}={}", hex_word(key), hex_word(value)),
        }
    }
}

impl FromStr for ReadRecord {
    type Err = RecordError;

    fn from_str(s: &str) -> Result<Self, RecordError> {
        let (kind, rest) = s.split_once(':').ok_or_else(|| bad(s, "no kind prefix"))?;
        match kind {
            "a" => Ok(ReadRecord::Account(parse_address(s, rest)?)),
            "s" => {
                let (address, slot) = rest.split_once(':').ok_or_else(|| bad(s, "no slot"))?;
                Ok(ReadRecord::Slot(
                    parse_address(s, address)?,
                    parse_word(s, slot)?.into(),
                ))
            }
            "r" => Ok(ReadRecord::Raw(parse_word(s, rest)?)),
            _ => Err(bad(s, "kind must be a, s or r")),
        }
    }
}

impl FromStr for WriteRecord {
    type Err = RecordError;

    fn from_str(s: &str) -> Result<Self, RecordError> {
        let (target, value) = s.split_once('=').ok_or_else(|| bad(s, "no '='"))?;
        match ReadRecord::from_str(target)? {
            ReadRecord::Account(address) => {
                let mut fields = value.split(',');
                let mut next = || {
                    fields
                        .next()
                        .ok_or_else(|| bad(s, "account needs 4 fields"))
                };
                let nonce = next()?.parse().map_err(|_| bad(s, "bad nonce"))?;
                let balance =
                    U256::from_str_radix(next()?, 10).map_err(|_| bad(s, "bad balance"))?;
                let code_hash = parse_word(s, next()?)?;
                let code_size = next()?.parse().map_err(|_| bad(s, "bad code size"))?;
                if fields.next().is_some() {
                    return Err(bad(s, "account needs 4 fields"));
                }
                Ok(WriteRecord::Account {
                    address,
                    nonce,
                    balance,
                    code_hash,
                    code_size,
                })
            }
            ReadRecord::Slot(address, slot) => Ok(WriteRecord::Slot {
                address,
                slot,
                value: parse_word(s, value)?,
            }),
            ReadRecord::Raw(key) => Ok(WriteRecord::Raw {
                key,
                value: parse_word(s, value)?,
            }),
        }
    }
}

fn hex_address(address: &Address) -> String {
    format!("0x{}", hex_lower(address.as_slice()))
}

fn hex_word(word: &B256) -> String {
    format!("0x{}", hex_lower(word.as_slice()))
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex<const N: usize>(record: &str, text: &str) -> Result<[u8; N], RecordError> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| bad(record, "hex needs a 0x prefix"))?;
    if digits.len() != 2 * N {
        return Err(bad(record, "hex of the wrong length"));
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        let pair = &digits[2 * i..2 * i + 2];
        if pair.bytes().any(|c| c.is_ascii_uppercase()) {
            return Err(bad(record, "hex must be lowercase"));
        }
        *byte = u8::from_str_radix(pair, 16).map_err(|_| bad(record, "not hex"))?;
    }
    Ok(out)
}

fn parse_address(record: &str, text: &str) -> Result<Address, RecordError> {
    parse_hex::<20>(record, text).map(Address::from)
}

fn parse_word(record: &str, text: &str) -> Result<B256, RecordError> {
    parse_hex::<32>(record, text).map(B256::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let address = Address::repeat_byte(0xab);
        let reads = [
            ReadRecord::Account(address),
            ReadRecord::Slot(address, U256::from(7u8)),
            ReadRecord::Raw(B256::repeat_byte(3)),
        ];
        for read in reads {
            assert_eq!(read.to_string().parse::<ReadRecord>(), Ok(read));
        }
        let write = WriteRecord::Account {
            address,
            nonce: 3,
            balance: U256::MAX,
            code_hash: B256::repeat_byte(9),
            code_size: 190,
        };
        assert_eq!(write.to_string().parse::<WriteRecord>(), Ok(write));
        assert!("a:0xAB".parse::<ReadRecord>().is_err());
        assert!("s:0x00:0x01".parse::<ReadRecord>().is_err());
    }
}

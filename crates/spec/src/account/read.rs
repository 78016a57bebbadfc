//! Account-level reads over any source of tree values.
//!
//! A source is a batch lookup, `FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>`,
//! answering the values at the keys in order: an in-memory tree (see
//! [`AccountWrites`](super::AccountWrites)) or a database, whose batch reads
//! are in flight at once. Each read asks for what it needs in as few batches
//! as the data allows: an account is one batch of two keys, code one batch
//! for the header and one for all its chunks (up to
//! [`CODE_READ_BATCH_CHUNKS`]).

use alloy_primitives::{keccak256, Address, Bytes, Keccak256, B256, KECCAK256_EMPTY, U256};

use super::Account;
use crate::basic_data::BasicData;
use crate::chunk::CHUNK_CODE_BYTES;
use crate::key::{
    basic_data_key, code_chunk_index, code_hash_key, get_tree_key, storage_slot_key, STEM_BYTES,
};

/// The most code chunks [`read_code`] asks for in one batch (about 500 KB
/// of code, twenty times EIP-170's limit of 24,576 bytes). Longer code is
/// read in successive batches, each checked before the next, so a code size
/// in BasicData that no chunks back costs one batch, not gigabytes.
pub const CODE_READ_BATCH_CHUNKS: u64 = 16_384;

/// A chunk that the code size in BasicData says exists is absent: the
/// account's header and code were written inconsistently (geth never does;
/// a caller of [`AccountOp::SetAccount`](super::AccountOp::SetAccount)
/// can).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the code of {address} is {code_size} bytes by its BasicData, but code chunk {chunk_id} is absent")]
pub struct MissingCodeChunk {
    /// The account.
    pub address: Address,
    /// The code size in its BasicData.
    pub code_size: u32,
    /// The first absent chunk.
    pub chunk_id: u64,
}

/// Why [`read_code`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodeReadError<E> {
    /// The source of values failed.
    #[error(transparent)]
    Source(E),
    /// A chunk within the code size is absent.
    #[error(transparent)]
    MissingChunk(#[from] MissingCodeChunk),
}

/// The value at position `index` of a source's answer (absent if the source
/// answered fewer values than asked for).
fn value_at(values: &[Option<B256>], index: usize) -> Option<B256> {
    debug_assert!(index < values.len(), "the source answered too few values");
    values.get(index).copied().flatten()
}

/// The account from its two header leaves, as geth's `GetAccount` reads it.
fn account_from_header(basic_data: Option<B256>, code_hash: Option<B256>) -> Option<Account> {
    if basic_data.is_none() && code_hash.is_none() {
        return None;
    }
    if basic_data == Some(B256::ZERO) && code_hash == Some(B256::ZERO) {
        return None; // deleted
    }
    // One leaf without the other: geth cannot read such an account; the
    // absent one reads as zeros here.
    let fields = BasicData::unpack(&basic_data.unwrap_or_default());
    Some(Account {
        nonce: fields.nonce,
        balance: U256::from(fields.balance),
        code_size: fields.code_size,
        code_hash: code_hash.unwrap_or_default(),
    })
}

/// geth's `GetAccount` over `get_many`, with the code size added: one batch
/// of the BasicData and CodeHash keys.
///
/// The account is absent (`None`) when both leaves are absent, or both are
/// 32 zero bytes (deleted by [`AccountOp::DeleteAccount`](super::AccountOp::DeleteAccount)).
/// An account with one leaf present and the other absent (which geth's
/// writes never leave) reads the absent one as zeros. The balance is the
/// stored 128 bits; the version byte and the reserved bytes of BasicData are
/// ignored, as geth ignores them.
pub fn read_account<E, F>(address: &Address, mut get_many: F) -> Result<Option<Account>, E>
where
    F: FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>,
{
    let values = get_many(&[basic_data_key(address), code_hash_key(address)])?;
    Ok(account_from_header(
        value_at(&values, 0),
        value_at(&values, 1),
    ))
}

/// geth's `GetStorage` over `get_many`: the slot's leaf if present. A slot
/// deleted by [`AccountOp::DeleteStorage`](super::AccountOp::DeleteStorage)
/// is present with 32 zero bytes. Slots are read whatever the account's
/// state: a deleted account's slots stay.
pub fn read_storage<E, F>(
    address: &Address,
    slot: &U256,
    mut get_many: F,
) -> Result<Option<B256>, E>
where
    F: FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>,
{
    let values = get_many(&[storage_slot_key(address, slot)])?;
    Ok(value_at(&values, 0))
}

/// The account's code, reassembled from its chunks over `get_many`.
///
/// `None` when the account is absent ([`read_account`]'s rule: a deleted
/// account has no code, though its chunks stay). Otherwise the code size
/// comes from BasicData: `ceil(size / 31)` chunks, fetched in one batch
/// (longer code: batches of [`CODE_READ_BATCH_CHUNKS`]), each contributing
/// its 31 bytes after the leading push-data count, the whole cut to the
/// size. Empty for size 0, even when chunks are present (geth writes
/// size 0 for contracts whose code it had not loaded). Chunks past the size
/// (left by a shorter [`AccountOp::SetCode`](super::AccountOp::SetCode))
/// are not read. A chunk within the size that is absent is
/// [`CodeReadError::MissingChunk`].
pub fn read_code<E, F>(
    address: &Address,
    mut get_many: F,
) -> Result<Option<Bytes>, CodeReadError<E>>
where
    F: FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>,
{
    let Some(account) = read_account(address, &mut get_many).map_err(CodeReadError::Source)? else {
        return Ok(None);
    };
    code_by_size(address, &account, &mut get_many).map(Some)
}

/// The code of `account` (at `address`) by the code size in its BasicData
/// ([`read_code`] once the account is read).
fn code_by_size<E, F>(
    address: &Address,
    account: &Account,
    get_many: &mut F,
) -> Result<Bytes, CodeReadError<E>>
where
    F: FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>,
{
    let code_size = account.code_size;
    let code_bytes = code_size as usize;
    let chunk_count = u64::from(code_size).div_ceil(CHUNK_CODE_BYTES as u64);
    // 16,384 chunks: fits any usize.
    #[allow(clippy::cast_possible_truncation)]
    let first_batch_bytes = CODE_READ_BATCH_CHUNKS as usize * CHUNK_CODE_BYTES;
    let mut code = Vec::with_capacity(code_bytes.min(first_batch_bytes));
    let mut keys = ChunkKeys::new(address);
    let mut batch_start = 0u64;
    while batch_start < chunk_count {
        let batch_end = chunk_count.min(batch_start + CODE_READ_BATCH_CHUNKS);
        let batch_keys: Vec<B256> = (batch_start..batch_end).map(|id| keys.key(id)).collect();
        let values = get_many(&batch_keys).map_err(CodeReadError::Source)?;
        for (index, chunk_id) in (batch_start..batch_end).enumerate() {
            let chunk = value_at(&values, index).ok_or(MissingCodeChunk {
                address: *address,
                code_size,
                chunk_id,
            })?;
            code.extend_from_slice(&chunk[1..]);
        }
        batch_start = batch_end;
    }
    code.truncate(code_bytes);
    Ok(Bytes::from(code))
}

/// The most code chunks [`read_code_matching_hash`] reads to recover code
/// (two batches of [`CODE_READ_BATCH_CHUNKS`]: about 1 MB of code).
pub const CODE_RECOVER_MAX_CHUNKS: u64 = 2 * CODE_READ_BATCH_CHUNKS;

/// The account's code as its code hash names it: [`read_code`]'s code when
/// it hashes to the account's code hash (the usual case, one hash more);
/// otherwise the code recovered from the chunks alone, the shortest prefix
/// of the chunks' code bytes (chunk 0 up to the first absent chunk, at most
/// [`CODE_RECOVER_MAX_CHUNKS`]) whose keccak-256 is the code hash.
///
/// go-ethereum v1.17.10's `StateDB` writes code size 0 for a contract it
/// updates without having loaded its code (`updateStateObject` passes the
/// loaded code's length), keeping the code hash and the chunks: on such a
/// state [`read_code`] gives empty code, this gives the contract's code.
/// Chunks past the end of the code (left by an older, longer code) are
/// not part of any matching prefix. The recovery hashes each prefix once
/// (incrementally: one Keccak-f permutation per byte of code).
///
/// When neither gives code with the account's hash, [`read_code`]'s
/// result is returned (code of another hash, or its error), for the caller
/// to reject.
pub fn read_code_matching_hash<E, F>(
    address: &Address,
    mut get_many: F,
) -> Result<Option<Bytes>, CodeReadError<E>>
where
    F: FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>,
{
    let Some(account) = read_account(address, &mut get_many).map_err(CodeReadError::Source)? else {
        return Ok(None);
    };
    let by_size = code_by_size(address, &account, &mut get_many);
    let no_code = account.code_hash.is_zero() || account.code_hash == KECCAK256_EMPTY;
    match &by_size {
        Ok(code) if no_code || keccak256(code) == account.code_hash => {
            return Ok(Some(code.clone()));
        }
        _ => {}
    }
    let chunk_bytes = leading_chunks(address, &mut get_many).map_err(CodeReadError::Source)?;
    match shortest_prefix_with_hash(&chunk_bytes, &account.code_hash) {
        Some(length) => Ok(Some(Bytes::copy_from_slice(&chunk_bytes[..length]))),
        None => by_size.map(Some),
    }
}

/// The code bytes (31 per chunk) of the account's chunks from chunk 0 up
/// to the first absent one, at most [`CODE_RECOVER_MAX_CHUNKS`], read in
/// batches of 128, 256, ... up to [`CODE_READ_BATCH_CHUNKS`] chunks.
fn leading_chunks<E, F>(address: &Address, get_many: &mut F) -> Result<Vec<u8>, E>
where
    F: FnMut(&[B256]) -> Result<Vec<Option<B256>>, E>,
{
    let mut keys = ChunkKeys::new(address);
    let mut bytes = Vec::new();
    let mut batch_start = 0u64;
    // Batches that double from the header stem's 128 chunks, so short code
    // costs a few small batches.
    let mut batch_len = 128u64;
    while batch_start < CODE_RECOVER_MAX_CHUNKS {
        let batch_end = (batch_start + batch_len).min(CODE_RECOVER_MAX_CHUNKS);
        batch_len = (batch_len * 2).min(CODE_READ_BATCH_CHUNKS);
        let batch_keys: Vec<B256> = (batch_start..batch_end).map(|id| keys.key(id)).collect();
        let values = get_many(&batch_keys)?;
        for index in 0..batch_keys.len() {
            let Some(chunk) = value_at(&values, index) else {
                return Ok(bytes);
            };
            bytes.extend_from_slice(&chunk[1..]);
        }
        batch_start = batch_end;
    }
    Ok(bytes)
}

/// The length of the shortest non-empty prefix of `bytes` whose keccak-256
/// is `hash`.
fn shortest_prefix_with_hash(bytes: &[u8], hash: &B256) -> Option<usize> {
    let mut hasher = Keccak256::new();
    for (index, byte) in bytes.iter().enumerate() {
        hasher.update([*byte]);
        if hasher.clone().finalize() == *hash {
            return Some(index + 1);
        }
    }
    None
}

/// The code-chunk keys of one account, hashing each stem once (256 chunk
/// keys share a stem; the first 128 live in the account's header stem).
struct ChunkKeys<'a> {
    address: &'a Address,
    /// The tree index and a key of the stem hashed last.
    last_stem: Option<(U256, B256)>,
}

impl<'a> ChunkKeys<'a> {
    fn new(address: &'a Address) -> Self {
        ChunkKeys {
            address,
            last_stem: None,
        }
    }

    /// The key of chunk `chunk_id`
    /// ([`code_chunk_key`](crate::key::code_chunk_key)).
    fn key(&mut self, chunk_id: u64) -> B256 {
        let (tree_index, sub_index) = code_chunk_index(chunk_id);
        let mut key = match self.last_stem {
            Some((index, key)) if index == tree_index => key,
            _ => {
                let key = get_tree_key(self.address, &tree_index, sub_index);
                self.last_stem = Some((tree_index, key));
                key
            }
        };
        key[STEM_BYTES] = sub_index;
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::code_chunk_key;

    #[test]
    fn chunk_keys_equal_the_key_derivation() {
        let address = Address::repeat_byte(0x42);
        let mut keys = ChunkKeys::new(&address);
        for chunk_id in (0..700).chain([127, 128, 383, 384, 1 << 20, u64::MAX - 200]) {
            assert_eq!(keys.key(chunk_id), code_chunk_key(&address, chunk_id));
        }
    }

    #[test]
    fn half_written_headers_read_the_absent_leaf_as_zeros() {
        let hash = B256::repeat_byte(9);
        let account = account_from_header(None, Some(hash)).expect("present");
        assert_eq!((account.nonce, account.code_size), (0, 0));
        assert_eq!(account.code_hash, hash);
        assert_eq!(account_from_header(None, None), None);
        assert_eq!(
            account_from_header(Some(B256::ZERO), Some(B256::ZERO)),
            None
        );
        let only_zero_basic = account_from_header(Some(B256::ZERO), None);
        assert_eq!(only_zero_basic, Some(Account::default()));
    }
}

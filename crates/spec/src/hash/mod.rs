//! SHA-256 entry points used for merkleization.
//!
//! Every node hash in the trie is SHA-256 of exactly 32 or 64 bytes, so the
//! padding block is known in advance. Calling the compression function
//! directly (SHA-NI through `sha2` where the CPU has it) skips the streaming
//! buffer of the `Digest` API; [`hash64`] costs two compressions, [`hash32`]
//! one. Key derivation, which is not on the hot path, uses [`sha256`].
//!
//! [`hash64_many`] and [`hash32_many`] hash many independent messages at
//! once; on x86-64 CPUs with the SHA extensions an own kernel compresses
//! several messages side by side (overlapping their dependency chains) with
//! a precomputed schedule for the fixed padding block, elsewhere they loop
//! over the single-message functions.

use sha2::{Digest, Sha256};

#[cfg(target_arch = "x86_64")]
mod constants;
mod count;
mod lone;
mod many;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use count::{compressions, compressions_on_this_thread};
pub(crate) use lone::{lone_leaf_stems, LoneLeaf};
pub(crate) use many::interleaved;
pub use many::{force_portable, hash32_many, hash64_many, is_forced_portable};

/// A 32-byte node hash.
pub type Hash = [u8; 32];

/// The hash of an empty node, and the root of the empty tree.
pub const ZERO_HASH: Hash = [0u8; 32];

const INITIAL_STATE: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// Padding block for a 64-byte message: 0x80, zeros, bit length 512.
const PAD_AFTER_64_BYTES: [u8; 64] = {
    let mut block = [0u8; 64];
    block[0] = 0x80;
    block[62] = 0x02;
    block
};

fn state_to_bytes(state: &[u32; 8]) -> Hash {
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// SHA-256 of a 64-byte message: through the SHA-NI kernel (one lane,
/// precomputed padding schedule) where the CPU has it, else `sha2`.
#[inline]
pub fn hash64(message: &[u8; 64]) -> Hash {
    count::add(2);
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = many::accelerated() {
        let mut out = [ZERO_HASH];
        kernel.hash64_many(std::slice::from_ref(message), &mut out);
        return out[0];
    }
    hash64_portable(message)
}

/// [`hash64`] through `sha2` only.
#[inline]
pub(crate) fn hash64_portable(message: &[u8; 64]) -> Hash {
    let mut state = INITIAL_STATE;
    let blocks = [*message, PAD_AFTER_64_BYTES];
    sha2::block_api::compress256(&mut state, &blocks);
    state_to_bytes(&state)
}

/// SHA-256 of the concatenation of two 32-byte values (an internal node or a
/// stem-subtree pair).
#[inline]
pub fn hash_pair(left: &Hash, right: &Hash) -> Hash {
    let mut message = [0u8; 64];
    message[..32].copy_from_slice(left);
    message[32..].copy_from_slice(right);
    hash64(&message)
}

/// SHA-256 of a 32-byte message (a leaf value): through the SHA-NI kernel
/// where the CPU has it, else `sha2`.
#[inline]
pub fn hash32(message: &[u8; 32]) -> Hash {
    count::add(1);
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = many::accelerated() {
        let mut out = [ZERO_HASH];
        kernel.hash32_many(std::slice::from_ref(message), &mut out);
        return out[0];
    }
    hash32_portable(message)
}

/// [`hash32`] through `sha2` only.
#[inline]
pub(crate) fn hash32_portable(message: &[u8; 32]) -> Hash {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(message);
    block[32] = 0x80;
    block[62] = 0x01; // bit length 256
    let mut state = INITIAL_STATE;
    sha2::block_api::compress256(&mut state, &[block]);
    state_to_bytes(&state)
}

/// SHA-256 of an arbitrary byte string.
pub fn sha256(message: &[u8]) -> Hash {
    count::add(count::blocks_for(message.len()));
    Sha256::digest(message).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_size_entry_points_match_streaming_sha256() {
        for seed in 0u8..=255 {
            let mut m64 = [0u8; 64];
            for (i, b) in m64.iter_mut().enumerate() {
                *b = seed.wrapping_mul(31).wrapping_add(u8::try_from(i).unwrap());
            }
            assert_eq!(hash64(&m64), sha256(&m64));
            let m32: [u8; 32] = m64[..32].try_into().expect("32 bytes");
            assert_eq!(hash32(&m32), sha256(&m32));
            let (l, r) = m64.split_at(32);
            let (l, r): (Hash, Hash) = (l.try_into().expect("32"), r.try_into().expect("32"));
            assert_eq!(hash_pair(&l, &r), sha256(&m64));
        }
    }

    #[test]
    fn hash_of_zero_leaf_is_the_spec_constant() {
        // Section 6: a present zero value hashes to 0x66687aad...2925.
        let h = hash32(&[0u8; 32]);
        assert_eq!(h[..4], [0x66, 0x68, 0x7a, 0xad]);
        assert_eq!(h[30..], [0x29, 0x25]);
    }
}

//! The whole hash chain of a stem with one value, kept in registers: the leaf
//! hash, eight levels where the running hash is paired with zero on the side
//! its sub-index bit says, and the stem hash, for `N` stems side by side.
//! Each digest feeds the next block straight from the state registers (the
//! digest words are the next block's first or last eight schedule words),
//! so nothing goes through memory between the 19 compressions.

use core::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_andnot_si128, _mm_or_si128, _mm_set1_epi32, _mm_testz_si128,
};

use super::super::lone::LoneLeaf;
use super::super::Hash;
use super::rounds::{
    block32, compress_lanes, compress_pad64, digest_words, initial_state, load_be, store_digest,
    State,
};

/// Stems hashed side by side (as for 64-byte messages, four is fastest).
const LANES: usize = 4;

/// Hashes every item into the matching `out` slot. Returns false if some
/// chain met a zero hash below the root, where the spec's zero rule applies
/// and these outputs are wrong; the caller then recomputes.
// SAFETY: callers must run on a CPU with sha, ssse3 and sse4.1 (guaranteed by
// holding a `ShaNi`); the body touches memory only through the two slices.
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn lone_leaf_slice(items: &[LoneLeaf], out: &mut [Hash]) -> bool {
    let mut clean = true;
    let (groups, rest) = items.as_chunks::<LANES>();
    let (out_groups, out_rest) = out.as_chunks_mut::<LANES>();
    for (group, hashes) in groups.iter().zip(out_groups) {
        clean &= lone_leaf_lanes(group, hashes);
    }
    match (rest, out_rest) {
        ([a, b, c], [x, y, z]) => {
            let mut hashes = [[0u8; 32]; 3];
            clean &= lone_leaf_lanes(&[*a, *b, *c], &mut hashes);
            [*x, *y, *z] = hashes;
        }
        ([a, b], [x, y]) => {
            let mut hashes = [[0u8; 32]; 2];
            clean &= lone_leaf_lanes(&[*a, *b], &mut hashes);
            [*x, *y] = hashes;
        }
        (rest, out_rest) => {
            for (item, hash) in rest.iter().zip(out_rest) {
                clean &=
                    lone_leaf_lanes::<1>(core::array::from_ref(item), core::array::from_mut(hash));
            }
        }
    }
    clean
}

/// `N` chains side by side; false if a zero hash appeared below the root.
// SAFETY: uses SHA, SSSE3, SSE4.1 and SSE2 instructions, all enabled here;
// reached only from `lone_leaf_slice`.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn lone_leaf_lanes<const N: usize>(items: &[LoneLeaf; N], out: &mut [Hash; N]) -> bool {
    let mut clean = true;
    let mut states = [initial_state(); N];
    compress_lanes(
        &mut states,
        core::array::from_fn(|lane| block32(&items[lane].value)),
    );
    for level in 0..8 {
        let blocks = core::array::from_fn(|lane| {
            let [abcd, efgh] = digest_words(states[lane]);
            clean &= !is_zero(abcd, efgh);
            // All ones if this node is a right child: the running hash goes
            // into the block's second half, zero into the first.
            let right = _mm_set1_epi32(-i32::from((items[lane].sub_index >> level) & 1));
            [
                _mm_andnot_si128(right, abcd),
                _mm_andnot_si128(right, efgh),
                _mm_and_si128(right, abcd),
                _mm_and_si128(right, efgh),
            ]
        });
        hash_blocks64(&mut states, blocks);
    }
    // The root being zero needs no care: the zero rule gives zero there too.
    let blocks = core::array::from_fn(|lane| {
        let [abcd, efgh] = digest_words(states[lane]);
        let (prefix, _) = items[lane].prefix.as_chunks::<16>();
        [load_be(&prefix[0]), load_be(&prefix[1]), abcd, efgh]
    });
    hash_blocks64(&mut states, blocks);
    for (state, hash) in states.into_iter().zip(out) {
        store_digest(state, hash);
    }
    clean
}

/// Replaces each state by the SHA-256 of a 64-byte message given as its
/// schedule words.
// SAFETY: SHA and SSE instructions, enabled by `lone_leaf_lanes`, which
// inlines this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn hash_blocks64<const N: usize>(states: &mut [State; N], blocks: [[__m128i; 4]; N]) {
    *states = [initial_state(); N];
    compress_lanes(states, blocks);
    compress_pad64(states);
}

/// Whether both digest halves are all zero.
// SAFETY: SSE2/SSE4.1 instructions, enabled by `lone_leaf_lanes`, which
// inlines this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn is_zero(abcd: __m128i, efgh: __m128i) -> bool {
    let any = _mm_or_si128(abcd, efgh);
    _mm_testz_si128(any, any) == 1
}

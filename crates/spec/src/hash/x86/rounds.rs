//! The SHA-NI building blocks: packed state, message loads, four-round
//! steps, schedule expansion, and whole compressions of `N` lanes at once
//! (the lanes' instructions interleaved round group by round group).
//!
//! Every function enables the kernel's target features and is `#[inline]`,
//! and is only called from functions with the same features, so the small
//! ones always end up in the caller's body. (The compiler may keep a
//! whole-compression function out of line where it is called from several
//! places; forcing it inline measured no faster.)

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_loadu_si128, _mm_set_epi32,
    _mm_set_epi64x, _mm_sha256msg1_epu32, _mm_sha256msg2_epu32, _mm_sha256rnds2_epu32,
    _mm_shuffle_epi32, _mm_shuffle_epi8, _mm_storeu_si128,
};

use super::super::constants::{K, PAD64_WK};
use super::super::{Hash, INITIAL_STATE};

/// Packed SHA-256 state: `abef` = (A, B, E, F), `cdgh` = (C, D, G, H), each
/// with its first-named word in the highest lane.
#[derive(Clone, Copy)]
pub(super) struct State {
    abef: __m128i,
    cdgh: __m128i,
}

// SAFETY: needs the SSE2 baseline only; called from the kernel functions,
// which enable the same features.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn initial_state() -> State {
    let s = INITIAL_STATE.map(|w| w as i32);
    State {
        abef: _mm_set_epi32(s[0], s[1], s[4], s[5]),
        cdgh: _mm_set_epi32(s[2], s[3], s[6], s[7]),
    }
}

/// Four consecutive words of a `u32` table as a register, lowest word first.
// SAFETY: SSE2 only; called from the kernel functions, which enable the same
// features.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn words(table: &[u32; 64], group: usize) -> __m128i {
    let w = &table[4 * group..4 * group + 4];
    _mm_set_epi32(w[3] as i32, w[2] as i32, w[1] as i32, w[0] as i32)
}

/// Byte shuffle that swaps the byte order within each 32-bit lane.
// SAFETY: SSE2 only; called from the kernel functions, which enable the same
// features.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn byte_swap_mask() -> __m128i {
    _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203)
}

/// Sixteen bytes as four big-endian words, lowest word first.
// SAFETY: the unaligned load reads exactly the 16 bytes of `bytes`; SSSE3 for
// the shuffle is enabled by the kernel functions that inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn load_be(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is 16 readable bytes; `loadu` has no alignment need.
    let raw = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
    _mm_shuffle_epi8(raw, byte_swap_mask())
}

/// A packed state as digest words: (H0, H1, H2, H3) and (H4, H5, H6, H7),
/// lowest first. These are also the first eight schedule words of a block
/// that starts with the digest.
// SAFETY: SSE2/SSE4.1 shuffles, enabled by the kernel functions that inline
// this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn digest_words(state: State) -> [__m128i; 2] {
    let abef = _mm_shuffle_epi32::<0x1b>(state.abef); // F E B A -> A B E F (low first)
    let ghcd = _mm_shuffle_epi32::<0xb1>(state.cdgh); // H G D C -> G H C D
    [
        _mm_blend_epi16::<0xf0>(abef, ghcd),
        _mm_alignr_epi8::<8>(ghcd, abef),
    ]
}

/// Writes a packed state as the 32-byte big-endian digest.
// SAFETY: the unaligned stores write exactly the 32 bytes of `out`; the
// shuffles need SSSE3/SSE4.1, enabled by the kernel functions that inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn store_digest(state: State, out: &mut Hash) {
    let [abcd, efgh] = digest_words(state);
    let mask = byte_swap_mask();
    let (low, high) = out.split_at_mut(16);
    // SAFETY: `low` and `high` are 16 writable bytes each; `storeu` has no
    // alignment need.
    unsafe {
        _mm_storeu_si128(low.as_mut_ptr().cast(), _mm_shuffle_epi8(abcd, mask));
        _mm_storeu_si128(high.as_mut_ptr().cast(), _mm_shuffle_epi8(efgh, mask));
    }
}

/// Four rounds with `wk` = the next four `W[t] + K[t]`, lowest first.
// SAFETY: uses SHA and SSE2 instructions, enabled by the kernel functions that
// inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn four_rounds(state: &mut State, wk: __m128i) {
    // Each `sha256rnds2` does two rounds with the low two words of `wk` and
    // returns the new (A, B, E, F); the old one becomes (C, D, G, H).
    state.cdgh = _mm_sha256rnds2_epu32(state.cdgh, state.abef, wk);
    state.abef = _mm_sha256rnds2_epu32(state.abef, state.cdgh, _mm_shuffle_epi32::<0x0e>(wk));
}

/// The next four schedule words from the previous sixteen, `w[0]` oldest:
/// `W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]`, four at a time.
// SAFETY: uses SHA and SSSE3 instructions, enabled by the kernel functions
// that inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn expand(w0: __m128i, w1: __m128i, w2: __m128i, w3: __m128i) -> __m128i {
    let partial = _mm_sha256msg1_epu32(w0, w1); // W[t-16] + σ0(W[t-15])
    let partial = _mm_add_epi32(partial, _mm_alignr_epi8::<4>(w3, w2)); // + W[t-7]
    _mm_sha256msg2_epu32(partial, w3) // + σ1(W[t-2])
}

/// Compresses one block (its 16 words as four registers) into each of `N`
/// states, interleaving the lanes round group by round group.
// SAFETY: uses SHA, SSSE3 and SSE2 instructions, enabled here and in the
// kernel functions that inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn compress_lanes<const N: usize>(states: &mut [State; N], blocks: [[__m128i; 4]; N]) {
    let start = *states;
    let mut w = blocks;
    // Four round groups over the schedule registers in rotation; the
    // register indices are literals so every lane's schedule stays in
    // registers. `$expand` is false for the first sixteen words.
    macro_rules! groups {
        ($first:expr, $expand:expr) => {
            groups!(@one $first, $expand, 0, 1, 2, 3);
            groups!(@one $first + 1, $expand, 1, 2, 3, 0);
            groups!(@one $first + 2, $expand, 2, 3, 0, 1);
            groups!(@one $first + 3, $expand, 3, 0, 1, 2);
        };
        (@one $group:expr, $expand:expr, $a:literal, $b:literal, $c:literal, $d:literal) => {
            let k = words(&K, $group);
            for (state, w) in states.iter_mut().zip(w.iter_mut()) {
                if $expand {
                    w[$a] = expand(w[$a], w[$b], w[$c], w[$d]);
                }
                four_rounds(state, _mm_add_epi32(w[$a], k));
            }
        };
    }
    groups!(0, false);
    groups!(4, true);
    groups!(8, true);
    groups!(12, true);
    for (state, start) in states.iter_mut().zip(start) {
        state.abef = _mm_add_epi32(state.abef, start.abef);
        state.cdgh = _mm_add_epi32(state.cdgh, start.cdgh);
    }
}

/// Compresses the fixed padding block of a 64-byte message into each state;
/// its schedule is the precomputed [`PAD64_WK`].
// SAFETY: uses SHA and SSE2 instructions, enabled by the kernel functions that
// inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn compress_pad64<const N: usize>(states: &mut [State; N]) {
    let start = *states;
    macro_rules! group {
        ($($group:literal)*) => {$(
            let wk = words(&PAD64_WK, $group);
            for state in states.iter_mut() {
                four_rounds(state, wk);
            }
        )*};
    }
    group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    for (state, start) in states.iter_mut().zip(start) {
        state.abef = _mm_add_epi32(state.abef, start.abef);
        state.cdgh = _mm_add_epi32(state.cdgh, start.cdgh);
    }
}

/// SHA-256 of `N` 64-byte messages side by side.
// SAFETY: uses SHA, SSSE3, SSE4.1 and SSE2 instructions, all enabled here;
// reached only from the slice kernels.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn hash64_lanes<const N: usize>(messages: &[[u8; 64]; N], out: &mut [Hash; N]) {
    let blocks = messages.map(|m| {
        let (q, _) = m.as_chunks::<16>();
        [
            load_be(&q[0]),
            load_be(&q[1]),
            load_be(&q[2]),
            load_be(&q[3]),
        ]
    });
    let mut states = [initial_state(); N];
    compress_lanes(&mut states, blocks);
    compress_pad64(&mut states);
    for (state, hash) in states.into_iter().zip(out) {
        store_digest(state, hash);
    }
}

/// The single block of a 32-byte message: the message, 0x80, zeros, bit
/// length 256.
// SAFETY: SSE2/SSSE3 loads and shuffles, enabled by the kernel functions that
// inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn block32(message: &[u8; 32]) -> [__m128i; 4] {
    let (q, _) = message.as_chunks::<16>();
    [
        load_be(&q[0]),
        load_be(&q[1]),
        _mm_set_epi32(0, 0, 0, 0x8000_0000_u32 as i32),
        _mm_set_epi32(256, 0, 0, 0),
    ]
}

/// SHA-256 of `N` 32-byte messages side by side (one block each: the
/// message, 0x80, zeros, bit length 256).
// SAFETY: uses SHA, SSSE3, SSE4.1 and SSE2 instructions, all enabled here;
// reached only from the slice kernels.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
pub(super) fn hash32_lanes<const N: usize>(messages: &[[u8; 32]; N], out: &mut [Hash; N]) {
    let mut states = [initial_state(); N];
    compress_lanes(&mut states, messages.map(|m| block32(&m)));
    for (state, hash) in states.into_iter().zip(out) {
        store_digest(state, hash);
    }
}

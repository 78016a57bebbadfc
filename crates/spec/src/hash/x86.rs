//! Interleaved SHA-256 on x86-64 SHA extensions.
//!
//! One SHA-256 compression is a chain of 32 dependent `sha256rnds2`
//! instructions, and the instruction's latency is several times its issue
//! interval, so a single message leaves the SHA unit mostly idle. The kernel
//! here runs several independent messages side by side, round group by round
//! group, so their chains overlap.
//!
//! State is kept in the instruction set's packed form: one register holds
//! words (A, B, E, F) and the other (C, D, G, H), highest lane first. Every
//! hash in this crate starts from the standard initial state, so the packed
//! initial state is a constant, and the second block of a 64-byte message is
//! the fixed padding block whose schedule is precomputed.

#![allow(unsafe_code)]

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_loadu_si128, _mm_set_epi32,
    _mm_set_epi64x, _mm_sha256msg1_epu32, _mm_sha256msg2_epu32, _mm_sha256rnds2_epu32,
    _mm_shuffle_epi32, _mm_shuffle_epi8, _mm_storeu_si128,
};
use std::sync::atomic::{AtomicU8, Ordering};

use super::constants::{K, PAD64_WK};
use super::{Hash, INITIAL_STATE};

/// 64-byte messages compressed side by side. Measured on a Zen 5 core: 1, 2,
/// 3 and 4 lanes give 50, 46, 42 and 41 ns per message.
const LANES64: usize = 4;

/// 32-byte messages compressed side by side (one block each, so the schedule
/// registers of four lanes no longer fit and three is as fast): 1, 2, 3 and 4
/// lanes give 25.5, 22.7, 22.1 and 23.2 ns per message.
const LANES32: usize = 3;

/// Proof that the running CPU has the SHA extensions and SSSE3/SSE4.1; the
/// only way to reach the kernel.
#[derive(Clone, Copy, Debug)]
pub(super) struct ShaNi(());

impl ShaNi {
    /// The token if the CPU supports the kernel (detected once, then cached).
    #[inline]
    pub(super) fn detect() -> Option<Self> {
        // 0: not probed yet, 1: unsupported, 2: supported.
        static PROBED: AtomicU8 = AtomicU8::new(0);
        let mut probed = PROBED.load(Ordering::Relaxed);
        if probed == 0 {
            let supported = std::is_x86_feature_detected!("sha")
                && std::is_x86_feature_detected!("ssse3")
                && std::is_x86_feature_detected!("sse4.1");
            probed = if supported { 2 } else { 1 };
            PROBED.store(probed, Ordering::Relaxed);
        }
        (probed == 2).then_some(ShaNi(()))
    }

    /// SHA-256 of each 64-byte message into the matching `out` slot.
    pub(super) fn hash64_many(self, messages: &[[u8; 64]], out: &mut [Hash]) {
        assert_eq!(messages.len(), out.len(), "one output per message");
        // SAFETY: a `ShaNi` exists only after `detect` saw every feature the
        // kernel enables.
        unsafe { hash64_slice(messages, out) }
    }

    /// SHA-256 of each 32-byte message into the matching `out` slot.
    pub(super) fn hash32_many(self, messages: &[[u8; 32]], out: &mut [Hash]) {
        assert_eq!(messages.len(), out.len(), "one output per message");
        // SAFETY: a `ShaNi` exists only after `detect` saw every feature the
        // kernel enables.
        unsafe { hash32_slice(messages, out) }
    }
}

// SAFETY: callers must run on a CPU with sha, ssse3 and sse4.1 (guaranteed by
// holding a `ShaNi`); the body touches memory only through the two slices.
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn hash64_slice(messages: &[[u8; 64]], out: &mut [Hash]) {
    let (groups, rest) = messages.as_chunks::<LANES64>();
    let (out_groups, out_rest) = out.as_chunks_mut::<LANES64>();
    for (group, hashes) in groups.iter().zip(out_groups) {
        hash64_lanes(group, hashes);
    }
    match (rest, out_rest) {
        ([a, b, c], [x, y, z]) => {
            let mut hashes = [[0u8; 32]; 3];
            hash64_lanes(&[*a, *b, *c], &mut hashes);
            [*x, *y, *z] = hashes;
        }
        ([a, b], [x, y]) => {
            let mut hashes = [[0u8; 32]; 2];
            hash64_lanes(&[*a, *b], &mut hashes);
            [*x, *y] = hashes;
        }
        (rest, out_rest) => {
            for (message, hash) in rest.iter().zip(out_rest) {
                hash64_lanes::<1>(core::array::from_ref(message), core::array::from_mut(hash));
            }
        }
    }
}

// SAFETY: callers must run on a CPU with sha, ssse3 and sse4.1 (guaranteed by
// holding a `ShaNi`); the body touches memory only through the two slices.
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn hash32_slice(messages: &[[u8; 32]], out: &mut [Hash]) {
    let (groups, rest) = messages.as_chunks::<LANES32>();
    let (out_groups, out_rest) = out.as_chunks_mut::<LANES32>();
    for (group, hashes) in groups.iter().zip(out_groups) {
        hash32_lanes(group, hashes);
    }
    match (rest, out_rest) {
        ([a, b], [x, y]) => {
            let mut hashes = [[0u8; 32]; 2];
            hash32_lanes(&[*a, *b], &mut hashes);
            [*x, *y] = hashes;
        }
        (rest, out_rest) => {
            for (message, hash) in rest.iter().zip(out_rest) {
                hash32_lanes::<1>(core::array::from_ref(message), core::array::from_mut(hash));
            }
        }
    }
}

/// Packed SHA-256 state: `abef` = (A, B, E, F), `cdgh` = (C, D, G, H), each
/// with its first-named word in the highest lane.
#[derive(Clone, Copy)]
struct State {
    abef: __m128i,
    cdgh: __m128i,
}

// SAFETY: needs the SSE2 baseline only; called from the kernel functions,
// which enable the same features.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn initial_state() -> State {
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
fn words(table: &[u32; 64], group: usize) -> __m128i {
    let w = &table[4 * group..4 * group + 4];
    _mm_set_epi32(w[3] as i32, w[2] as i32, w[1] as i32, w[0] as i32)
}

/// Byte shuffle that swaps the byte order within each 32-bit lane.
// SAFETY: SSE2 only; called from the kernel functions, which enable the same
// features.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn byte_swap_mask() -> __m128i {
    _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203)
}

/// Sixteen bytes as four big-endian words, lowest word first.
// SAFETY: the unaligned load reads exactly the 16 bytes of `bytes`; SSSE3 for
// the shuffle is enabled by the kernel functions that inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn load_be(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is 16 readable bytes; `loadu` has no alignment need.
    let raw = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
    _mm_shuffle_epi8(raw, byte_swap_mask())
}

/// Writes a packed state as the 32-byte big-endian digest.
// SAFETY: the unaligned stores write exactly the 32 bytes of `out`; the
// shuffles need SSSE3/SSE4.1, enabled by the kernel functions that inline this.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn store_digest(state: State, out: &mut Hash) {
    let abef = _mm_shuffle_epi32::<0x1b>(state.abef); // F E B A -> A B E F (low first)
    let ghcd = _mm_shuffle_epi32::<0xb1>(state.cdgh); // H G D C -> G H C D
    let abcd = _mm_blend_epi16::<0xf0>(abef, ghcd);
    let efgh = _mm_alignr_epi8::<8>(ghcd, abef);
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
fn four_rounds(state: &mut State, wk: __m128i) {
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
fn expand(w0: __m128i, w1: __m128i, w2: __m128i, w3: __m128i) -> __m128i {
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
fn compress_lanes<const N: usize>(states: &mut [State; N], blocks: [[__m128i; 4]; N]) {
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
fn compress_pad64<const N: usize>(states: &mut [State; N]) {
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
// reached only from the slice kernels above.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn hash64_lanes<const N: usize>(messages: &[[u8; 64]; N], out: &mut [Hash; N]) {
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

/// SHA-256 of `N` 32-byte messages side by side (one block each: the
/// message, 0x80, zeros, bit length 256).
// SAFETY: uses SHA, SSSE3, SSE4.1 and SSE2 instructions, all enabled here;
// reached only from the slice kernels above.
#[inline]
#[target_feature(enable = "sha,ssse3,sse4.1")]
fn hash32_lanes<const N: usize>(messages: &[[u8; 32]; N], out: &mut [Hash; N]) {
    let pad_low = _mm_set_epi32(0, 0, 0, 0x8000_0000_u32 as i32);
    let pad_high = _mm_set_epi32(256, 0, 0, 0);
    let blocks = messages.map(|m| {
        let (q, _) = m.as_chunks::<16>();
        [load_be(&q[0]), load_be(&q[1]), pad_low, pad_high]
    });
    let mut states = [initial_state(); N];
    compress_lanes(&mut states, blocks);
    for (state, hash) in states.into_iter().zip(out) {
        store_digest(state, hash);
    }
}

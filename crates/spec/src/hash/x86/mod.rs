//! Interleaved SHA-256 on x86-64 SHA extensions.
//!
//! One SHA-256 compression is a chain of 32 dependent `sha256rnds2`
//! instructions; where the instruction's latency exceeds its issue interval
//! a single message leaves the SHA unit partly idle. The kernel here runs
//! several independent messages side by side, round group by round group,
//! so their chains overlap. (On the Zen 5 core measured, four lanes are
//! about 1.2x faster than one: that core's latency is close to its issue
//! interval. Most of the gain over `sha2`'s single-message compression comes
//! from the rest: no per-call setup, and no schedule for the padding block.)
//!
//! The kernel is in three parts: this module (feature detection and the
//! slice entry points), `rounds` (the SHA-NI building blocks and whole
//! compressions of `N` lanes) and `lone` (the register-resident hash chain
//! of a single-value stem).
//!
//! State is kept in the instruction set's packed form: one register holds
//! words (A, B, E, F) and the other (C, D, G, H), highest lane first. Every
//! hash in this crate starts from the standard initial state, so the packed
//! initial state is a constant, and the second block of a 64-byte message is
//! the fixed padding block whose schedule is precomputed.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU8, Ordering};

use super::lone::LoneLeaf;
use super::Hash;
use rounds::{hash32_lanes, hash64_lanes};

mod lone;
mod rounds;

/// 64-byte messages compressed side by side. Measured on a Zen 5 core
/// (medians, one run): 1, 2, 3 and 4 lanes give 50, 46, 42 and 41 ns per
/// message.
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

    /// The stem hash of each single-value stem into the matching `out`
    /// slot; false if a chain met a zero hash (then `out` must be recomputed
    /// with the zero rule).
    pub(super) fn lone_leaf_stems(self, items: &[LoneLeaf], out: &mut [Hash]) -> bool {
        assert_eq!(items.len(), out.len(), "one output per stem");
        // SAFETY: a `ShaNi` exists only after `detect` saw every feature the
        // kernel enables.
        unsafe { lone::lone_leaf_slice(items, out) }
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

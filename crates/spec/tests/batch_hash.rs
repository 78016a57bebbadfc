//! The batch hash entry points agree with the single-message ones: random
//! messages at every batch length 0..300, on the accelerated path (where the
//! CPU has one) and on the forced portable path.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use ubt_spec::hash::{force_portable, hash32, hash32_many, hash64, hash64_many, sha256, Hash};
use ubt_spec::rng::SplitMix64;

fn check_lengths(portable: bool) {
    force_portable(portable);
    let mut bytes = SplitMix64::new(u64::from(portable));
    for len in 0..300 {
        let mut m64 = vec![[0u8; 64]; len];
        let mut m32 = vec![[0u8; 32]; len];
        for m in &mut m64 {
            bytes.fill(m);
        }
        for m in &mut m32 {
            bytes.fill(m);
        }
        let mut out = vec![[0xffu8; 32]; len];
        hash64_many(&m64, &mut out);
        let expected: Vec<Hash> = m64.iter().map(|m| sha256(m)).collect();
        assert!(
            m64.iter().zip(&expected).all(|(m, h)| hash64(m) == *h),
            "hash64, {len}"
        );
        assert_eq!(out, expected, "hash64_many, {len} messages");
        hash32_many(&m32, &mut out);
        let expected: Vec<Hash> = m32.iter().map(|m| sha256(m)).collect();
        assert!(
            m32.iter().zip(&expected).all(|(m, h)| hash32(m) == *h),
            "hash32, {len}"
        );
        assert_eq!(out, expected, "hash32_many, {len} messages");
    }
    force_portable(false);
}

#[test]
fn many_matches_single_on_the_default_path() {
    check_lengths(false);
}

#[test]
fn many_matches_single_on_the_portable_path() {
    check_lengths(true);
}

#[test]
fn many_matches_streaming_sha256_on_edge_messages() {
    let messages64 = [[0u8; 64], [0xff; 64], [0x80; 64], {
        let mut m = [0u8; 64];
        m[63] = 1;
        m
    }];
    let mut out = [[0u8; 32]; 4];
    hash64_many(&messages64, &mut out);
    for (m, h) in messages64.iter().zip(&out) {
        assert_eq!(*h, sha256(m));
    }
    let messages32 = [[0u8; 32], [0xff; 32], [0x80; 32]];
    let mut out = [[0u8; 32]; 3];
    hash32_many(&messages32, &mut out);
    for (m, h) in messages32.iter().zip(&out) {
        assert_eq!(*h, sha256(m));
    }
}

#[test]
#[should_panic(expected = "one output per message")]
fn many_rejects_mismatched_output() {
    let mut out = [[0u8; 32]; 1];
    hash64_many(&[[0u8; 64]; 2], &mut out);
}

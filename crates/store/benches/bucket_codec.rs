//! The per-bucket CPU of a warm block, by piece: decoding a bucket read
//! from the cache or the page cache, and decoding it, writing one value
//! and rehashing it (one sub-bucket's stems and the bucket's summary).
//!
//! The bucket has the shape of a 10 M-entry database of random keys: an
//! 18-bit prefix and single-value stems up to the 4 KiB capacity.
//!
//! * `bucket/decode_verified`: the decode of cached bytes (checksum
//!   already verified, every other check run).
//! * `bucket/write_one_and_rehash`: decode, one write to an existing key,
//!   the bucket's summary.

// Bench code: a failed unwrap is a failed bench, and casts narrow test data.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::hint::black_box;

use alloy_primitives::B256;
use criterion::{criterion_group, criterion_main, Criterion};
use ubt_spec::key::Stem;
use ubt_store::bucket::codec::{self, Checksum};
use ubt_store::bucket::{Bucket, BUCKET_BYTES_DEFAULT};
use ubt_store::prefix::Prefix;

const PREFIX_BITS: usize = 18;

fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn random_bytes<const N: usize>(state: &mut u64) -> [u8; N] {
    std::array::from_fn(|_| next(state) as u8)
}

/// A full bucket of single-value stems under an 18-bit prefix, encoded,
/// with its checksum and the keys it holds.
fn full_bucket() -> (Prefix, Vec<u8>, u32, Vec<(Stem, u8)>) {
    let mut state = 0x853c_49e6_748f_ea9bu64;
    let prefix = Prefix::of_stem(&Stem(random_bytes(&mut state)), PREFIX_BITS);
    let mut bucket = Bucket::new(prefix);
    let mut keys = Vec::new();
    let (byte, mask) = (PREFIX_BITS / 8, 0xffu8 >> (PREFIX_BITS % 8));
    loop {
        let mut stem = Stem(random_bytes(&mut state));
        stem.0[..byte].copy_from_slice(&prefix.bytes()[..byte]);
        stem.0[byte] = prefix.bytes()[byte] | (stem.0[byte] & mask);
        let sub_index = next(&mut state) as u8;
        bucket.set(&stem, sub_index, B256::from(random_bytes::<32>(&mut state)));
        if bucket.encoded_len() > BUCKET_BYTES_DEFAULT - 64 {
            break;
        }
        keys.push((stem, sub_index));
    }
    bucket.summary();
    let bytes = codec::encode(&bucket);
    let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    (prefix, bytes, crc, keys)
}

fn bucket_codec(c: &mut Criterion) {
    let (prefix, bytes, crc, keys) = full_bucket();
    let decode = |bytes: &[u8]| {
        codec::decode_with(bytes, &prefix, crc, &"bench", Checksum::Verified).unwrap()
    };
    let mut group = c.benchmark_group("bucket");
    group.bench_function("decode_verified", |b| {
        b.iter(|| decode(black_box(&bytes)));
    });
    let mut at = 0usize;
    group.bench_function("write_one_and_rehash", |b| {
        b.iter(|| {
            let mut bucket = decode(black_box(&bytes));
            let (stem, sub_index) = keys[at % keys.len()];
            at += 1;
            bucket.set(&stem, sub_index, B256::repeat_byte(at as u8));
            bucket.summary()
        });
    });
    group.finish();
}

criterion_group!(benches, bucket_codec);
criterion_main!(benches);

//! Buckets against the reference tree: values, summaries (a bucket at the
//! root prefix has the tree's root as its hash), encoding round trips,
//! splits that keep the hash, undo, and corrupted bytes.

use alloy_primitives::B256;
use proptest::prelude::*;
use ubt_spec::key::{sub_index, Stem};
use ubt_spec::{ReferenceTree, StateTree};

use super::codec::{decode, encode, lookup};
use super::*;
use crate::summary::combine;

/// Keys drawn from a small space of stems so stems collect several values,
/// with some stems sharing long prefixes.
fn key_strategy() -> impl Strategy<Value = B256> {
    (0u8..40, any::<u8>(), prop::bool::ANY).prop_map(|(stem_seed, sub, shared)| {
        let mut key = ubt_spec::hash::sha256(&[stem_seed]);
        if shared {
            key[..6].copy_from_slice(&[0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a]);
        }
        key[31] = sub;
        B256::from(key)
    })
}

fn apply(bucket: &mut Bucket, writes: &[(B256, B256)]) {
    for (key, value) in writes {
        bucket.set(&Stem::of_key(key), sub_index(key), *value);
    }
}

/// The summary of pieces that are the leaves, in order, of a subtree at `prefix`.
fn summary_of_pieces(pieces: &mut [Bucket], prefix: Prefix) -> Summary {
    if let [only] = pieces {
        if *only.prefix() == prefix {
            return only.summary();
        }
    }
    let left_prefix = prefix.child(0).expect("short prefix");
    let split = pieces.partition_point(|b| b.prefix().truncate(prefix.len() + 1) == left_prefix);
    let (left, right) = pieces.split_at_mut(split);
    let l = summary_of_pieces(left, left_prefix);
    let r = summary_of_pieces(right, prefix.child(1).expect("short prefix"));
    combine(&l, &r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn root_bucket_matches_the_reference_tree(
        writes in prop::collection::vec((key_strategy(), any::<[u8; 32]>().prop_map(B256::from)), 0..400)
    ) {
        let mut bucket = Bucket::new(Prefix::ROOT);
        let mut reference = ReferenceTree::new();
        apply(&mut bucket, &writes);
        reference.insert_batch(&writes);
        prop_assert_eq!(bucket.summary().hash, reference.compute_root());
        for (key, value) in reference.entries() {
            prop_assert_eq!(bucket.get(&Stem::of_key(key), sub_index(key)), Some(*value));
        }
        prop_assert_eq!(bucket.leaf_count(), reference.len());

        // Encoding round trip: same values, same summary without rehashing.
        let bytes = encode(&bucket);
        prop_assert_eq!(bytes.len(), bucket.encoded_len());
        let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        let mut padded = bytes.clone();
        padded.resize(bytes.len().div_ceil(4096) * 4096, 0);
        let mut decoded = decode(&padded, &Prefix::ROOT, crc, &"test").unwrap();
        // Its arrays are allocated once, at their exact sizes.
        prop_assert_eq!(decoded.values.capacity(), decoded.values.len());
        prop_assert_eq!(decoded.stems.capacity(), decoded.stems.len());
        prop_assert_eq!(decoded.summary(), bucket.summary());
        prop_assert_eq!(encode(&decoded), bytes.clone());
        for (key, value) in reference.entries() {
            let found = lookup(&padded, &Prefix::ROOT, crc, &"test", &Stem::of_key(key), sub_index(key)).unwrap();
            prop_assert_eq!(found, Some(*value));
        }

        // Splitting keeps the hash and every piece fits unless it cannot
        // split, at every capacity a database can have.
        let capacity = BUCKET_BYTES_DEFAULT << (writes.len() % 3);
        prop_assert!(bucket_bytes_valid(capacity));
        let expected = bucket.summary();
        let mut pieces = bucket.split_to_fit(capacity);
        for piece in &pieces {
            prop_assert!(piece.encoded_len() <= capacity || piece.stem_count() <= 1
                || piece.prefix().len() == BUCKET_PREFIX_MAX);
        }
        prop_assert_eq!(summary_of_pieces(&mut pieces, Prefix::ROOT), expected);
        let total: usize = pieces.iter().map(Bucket::leaf_count).sum();
        prop_assert_eq!(total, reference.len());

        // The walk over verified bytes answers as the checked one, in
        // every piece (prefixes of every length): each present key, the
        // next sub-index of its stem, and a neighbouring stem.
        for piece in &pieces {
            let bytes = encode(piece);
            let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
            prop_assert!(codec::checksum_matches(&bytes, crc));
            for (key, value) in reference.entries() {
                let stem = Stem::of_key(key);
                if !piece.prefix().contains(&stem) {
                    continue;
                }
                let mut near = stem;
                near.0[30] ^= 1;
                let probes = [(stem, sub_index(key)), (stem, sub_index(key).wrapping_add(1)), (near, 7)];
                for (probe_stem, probe_sub) in probes {
                    if !piece.prefix().contains(&probe_stem) {
                        continue;
                    }
                    let checked = lookup(&bytes, piece.prefix(), crc, &"p", &probe_stem, probe_sub).unwrap();
                    let at = (&probe_stem, probe_sub);
                    let verified = codec::lookup_with(&bytes, piece.prefix(), crc, &"p", at, codec::Checksum::Verified).unwrap();
                    prop_assert_eq!(verified, checked);
                }
                let at = (&stem, sub_index(key));
                let found = codec::lookup_with(&bytes, piece.prefix(), crc, &"p", at, codec::Checksum::Verified).unwrap();
                prop_assert_eq!(found, Some(*value));
            }
        }
    }

    #[test]
    fn summaries_together_equal_each_buckets_own(
        batches in prop::collection::vec(
            (
                prop::collection::vec((key_strategy(), any::<[u8; 32]>().prop_map(B256::from)), 0..120),
                prop::collection::vec((key_strategy(), any::<[u8; 32]>().prop_map(B256::from)), 0..8),
            ),
            0..12,
        ),
    ) {
        // Each bucket is hashed once (its stems carry hashes), then
        // changed a little, so some stems need hashing and some do not.
        let mut alone = Vec::new();
        for (before, after) in &batches {
            let mut bucket = Bucket::new(Prefix::ROOT);
            apply(&mut bucket, before);
            bucket.summary();
            apply(&mut bucket, after);
            alone.push(bucket);
        }
        let mut together = alone.clone();
        let expected: Vec<Summary> = alone.iter_mut().map(Bucket::summary).collect();
        let mut refs: Vec<&mut Bucket> = together.iter_mut().collect();
        let summaries = summaries(&mut refs);
        prop_assert_eq!(summaries, expected);
        for (bucket, hashed_alone) in together.iter_mut().zip(&alone) {
            // Both fresh afterwards, with the same stem hashes: they
            // encode alike.
            prop_assert_eq!(encode(bucket), encode(hashed_alone));
        }
    }

    #[test]
    fn undo_restores_the_previous_bucket(
        before in prop::collection::vec((key_strategy(), any::<[u8; 32]>().prop_map(B256::from)), 0..100),
        after in prop::collection::vec((key_strategy(), any::<[u8; 32]>().prop_map(B256::from)), 1..60),
    ) {
        let mut bucket = Bucket::new(Prefix::ROOT);
        apply(&mut bucket, &before);
        let summary = bucket.summary();
        let bytes = encode(&bucket);
        let mut undo = Vec::new();
        for (key, value) in &after {
            let old = bucket.set(&Stem::of_key(key), sub_index(key), *value);
            undo.push((*key, old));
        }
        for (key, old) in undo.iter().rev() {
            match old {
                Some(value) => { bucket.set(&Stem::of_key(key), sub_index(key), *value); }
                None => bucket.remove(&Stem::of_key(key), sub_index(key)),
            }
        }
        prop_assert_eq!(bucket.summary(), summary);
        prop_assert_eq!(encode(&bucket), bytes);
    }
}

#[test]
fn buckets_below_the_root_hash_like_the_subtree() {
    // Stems under prefix 1011: the bucket's summary at that prefix, floated
    // up through empty siblings, is the root of a tree holding only them.
    let mut reference = ReferenceTree::new();
    let prefix = Prefix::of_stem(&Stem([0b1011_0000; 31]), 4);
    let mut bucket = Bucket::new(prefix);
    for i in 0u64..300 {
        let mut key = ubt_spec::hash::sha256(&i.to_be_bytes());
        key[0] = 0b1011_0000 | (key[0] & 0x0f);
        let key = B256::from(key);
        let value = B256::repeat_byte(i as u8);
        reference.insert(key, value);
        bucket.set(&Stem::of_key(&key), sub_index(&key), value);
    }
    let mut summary = bucket.summary();
    for level in (0..4).rev() {
        let empty = Summary::EMPTY;
        summary = if prefix.bit(level) == 0 {
            combine(&summary, &empty)
        } else {
            combine(&empty, &summary)
        };
    }
    assert_eq!(summary.hash, reference.compute_root());
}

/// Key `i` of [`forty_stem_bucket`] (its own stem; value = key).
fn forty_key(i: u64) -> B256 {
    B256::from(ubt_spec::hash::sha256(&i.to_be_bytes()))
}

/// A root bucket of 40 one-value stems (key `i` at sub-index `i % 7`),
/// encoded, with its checksum.
fn forty_stem_bucket() -> (Vec<u8>, u32) {
    let mut bucket = Bucket::new(Prefix::ROOT);
    for i in 0u64..40 {
        let key = forty_key(i);
        bucket.set(&Stem::of_key(&key), (i % 7) as u8, key);
    }
    bucket.summary();
    let bytes = encode(&bucket);
    let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    (bytes, crc)
}

#[test]
fn every_flipped_byte_is_detected() {
    let (bytes, crc) = forty_stem_bucket();
    for at in 0..bytes.len() {
        for bit in [0u8, 3, 7] {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << bit;
            let err = decode(&bad, &Prefix::ROOT, crc, &"flip").expect_err("flip detected");
            assert!(err.is_corruption(), "byte {at}: {err}");
        }
    }
    // Right bytes at the wrong place: another prefix or another checksum.
    assert!(decode(&bytes, &Prefix::ROOT.child(0).unwrap(), crc, &"x").is_err());
    assert!(decode(&bytes, &Prefix::ROOT, crc ^ 1, &"x").is_err());
    // Truncation at every length.
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len], &Prefix::ROOT, crc, &"cut").is_err());
    }
}

/// The check the store makes once before caching a bucket: it holds for
/// the bytes as written (padded or not) and fails for every flipped bit,
/// a wrong expected checksum and every truncation; and bytes that pass it
/// look up and decode the same with the checksum skipped.
#[test]
fn the_checksum_check_before_caching_catches_every_flip() {
    let (bytes, crc) = forty_stem_bucket();
    let mut padded = bytes.clone();
    padded.resize(4096, 0);
    assert!(codec::checksum_matches(&bytes, crc));
    assert!(codec::checksum_matches(&padded, crc));
    assert!(!codec::checksum_matches(&bytes, crc ^ 1));
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << bit;
            assert!(!codec::checksum_matches(&bad, crc), "byte {at} bit {bit}");
        }
    }
    for len in 0..bytes.len() {
        assert!(!codec::checksum_matches(&bytes[..len], crc), "cut at {len}");
    }
    let verified = codec::decode_with(&padded, &Prefix::ROOT, crc, &"v", codec::Checksum::Verified);
    assert_eq!(encode(&verified.unwrap()), bytes);
    for i in 0u64..40 {
        let key = forty_key(i);
        let at = (&Stem::of_key(&key), (i % 7) as u8);
        let found = codec::lookup_with(
            &padded,
            &Prefix::ROOT,
            crc,
            &"v",
            at,
            codec::Checksum::Verified,
        );
        assert_eq!(found.unwrap(), Some(key));
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..2000 {
        let len = (next() % 600) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if bytes.len() > codec::FIXED_HEADER_BYTES {
            // A plausible header (root prefix, the current version, the
            // encoded length) so the decoder gets past the first checks.
            bytes[4] = crate::format::TAG_BUCKET;
            bytes[5] = crate::format::FORMAT_VERSION_BYTE;
            bytes[6] = 0;
            let encoded = (bytes.len() as u32).to_le_bytes();
            let at = codec::FIXED_HEADER_BYTES - 4;
            bytes[at..at + 4].copy_from_slice(&encoded);
            let crc = crate::format::checksum(&bytes[4..]);
            bytes[..4].copy_from_slice(&crc.to_le_bytes());
            let _ = decode(&bytes, &Prefix::ROOT, crc, &"fuzz");
            let _ = lookup(&bytes, &Prefix::ROOT, crc, &"fuzz", &Stem([0; 31]), 0);
        }
    }
}

/// The walk over verified bytes agrees with the checked one for every
/// sub-index of stems stored as an index list (1, 4 and 32 values) and as
/// a bitmap (33 and 200 values), under prefixes of several lengths.
#[test]
fn the_verified_walk_reads_index_lists_and_bitmaps_alike() {
    for prefix_bits in [0usize, 3, 8, 13] {
        let mut prefix = Prefix::ROOT;
        for _ in 0..prefix_bits {
            prefix = prefix.child(1).unwrap();
        }
        let mut bucket = Bucket::new(prefix);
        let mut stems = Vec::new();
        for (n, count) in [1usize, 4, 32, 33, 200].into_iter().enumerate() {
            let mut stem = Stem([0xff; 31]);
            stem.0[30] = n as u8;
            stem.0[20] = 0x10 * n as u8;
            assert!(prefix.contains(&stem));
            for i in 0..count {
                let sub = ((i * 37 + n) % 256) as u8;
                bucket.set(&stem, sub, B256::repeat_byte(sub ^ n as u8));
            }
            stems.push(stem);
        }
        bucket.summary();
        let bytes = encode(&bucket);
        let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        let mut absent = stems[2];
        absent.0[25] = 0;
        stems.push(absent);
        for stem in &stems {
            for sub in 0..=255u8 {
                let checked = lookup(&bytes, &prefix, crc, &"c", stem, sub).unwrap();
                let verified = codec::lookup_with(
                    &bytes,
                    &prefix,
                    crc,
                    &"v",
                    (stem, sub),
                    codec::Checksum::Verified,
                )
                .unwrap();
                assert_eq!(verified, checked, "prefix {prefix_bits}, sub {sub}");
                assert_eq!(checked, bucket.get(stem, sub));
            }
        }
    }
}

#[test]
fn sub_buckets_are_the_bits_after_the_prefix() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..500 {
        let mut stem = Stem([0u8; 31]);
        for byte in &mut stem.0 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = state as u8;
        }
        for prefix_len in 0..=BUCKET_PREFIX_MAX {
            let by_bits =
                (0..SUB_BITS).fold(0, |acc, i| acc << 1 | usize::from(stem.bit(prefix_len + i)));
            assert_eq!(sub_bucket_of(prefix_len, &stem), by_bits, "{prefix_len}");
        }
    }
}

/// Every sub-bucket's occupancy code is read and checked, the last of the
/// sixteen as much as the first: each code replaced by any other value,
/// under a recomputed checksum, makes the decode fail.
#[test]
fn every_sub_buckets_occupancy_code_is_checked() {
    let (bytes, crc) = forty_stem_bucket();
    assert!(decode(&bytes, &Prefix::ROOT, crc, &"intact").is_ok());
    // After the checksum (4 bytes), the tag, the version and the prefix
    // length (1 byte each).
    let codes_at = 7;
    let mut word = [0u8; 4];
    word[..codec::OCCUPANCY_BYTES]
        .copy_from_slice(&bytes[codes_at..codes_at + codec::OCCUPANCY_BYTES]);
    let codes = u32::from_le_bytes(word);
    for sub in 0..SUB_COUNT {
        let own = (codes >> (2 * sub)) & 3;
        for other in (0..4u32).filter(|c| *c != own) {
            let altered = codes & !(3 << (2 * sub)) | other << (2 * sub);
            let mut damaged = bytes.clone();
            damaged[codes_at..codes_at + codec::OCCUPANCY_BYTES]
                .copy_from_slice(&altered.to_le_bytes()[..codec::OCCUPANCY_BYTES]);
            let crc = crate::format::checksum(&damaged[4..]);
            damaged[..4].copy_from_slice(&crc.to_le_bytes());
            assert!(
                decode(&damaged, &Prefix::ROOT, crc, &"codes").is_err(),
                "sub-bucket {sub}: code {own} -> {other} accepted"
            );
        }
    }
}

//! The stream of [`SplitMix64`] for a seed never changes: `ubt bench gen`
//! promises the same bytes for a seed. These values were computed from the
//! implementations the workspace had before they were merged into
//! `ubt_spec::rng` (and agree with the published SplitMix64 definition).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use ubt_spec::rng::SplitMix64;

fn first(seed: u64) -> [u64; 4] {
    let mut rng = SplitMix64::new(seed);
    std::array::from_fn(|_| rng.next_u64())
}

#[test]
fn first_values_of_seed_zero_are_pinned() {
    assert_eq!(
        first(0),
        [
            0xe220_a839_7b1d_cdaf,
            0x6e78_9e6a_a1b9_65f4,
            0x06c4_5d18_8009_454f,
            0xf88b_b8a8_724c_81ec,
        ]
    );
}

#[test]
fn first_values_of_seed_one_are_pinned() {
    assert_eq!(
        first(1),
        [
            0x910a_2dec_8902_5cc1,
            0xbeeb_8da1_658e_ec67,
            0xf893_a2ee_fb32_555e,
            0x71c1_8690_ee42_c90b,
        ]
    );
}

#[test]
fn first_values_of_seed_deadbeef_are_pinned() {
    assert_eq!(
        first(0xdead_beef),
        [
            0x4adf_b90f_68c9_eb9b,
            0xde58_6a31_41a1_0922,
            0x021f_bc2f_8e1c_fc1d,
            0x7466_ce73_7be1_6790,
        ]
    );
}

#[test]
fn the_state_is_the_seed_advanced_by_gamma_per_draw() {
    let mut rng = SplitMix64(5);
    rng.next_u64();
    rng.next_u64();
    assert_eq!(
        rng.0,
        5u64.wrapping_add(SplitMix64::GAMMA)
            .wrapping_add(SplitMix64::GAMMA)
    );
    assert_eq!(
        SplitMix64(rng.0).next_u64(),
        SplitMix64::mix(rng.0.wrapping_add(SplitMix64::GAMMA))
    );
}

#[test]
fn below_takes_the_high_half_of_the_product() {
    // The bootstrap's resampling indices of these seeds.
    let mut zero = SplitMix64::new(0);
    let mut dead = SplitMix64::new(0xdead_beef);
    assert_eq!([0; 4].map(|_| zero.below(1000)), [883, 431, 26, 970]);
    assert_eq!([0; 4].map(|_| dead.below(1000)), [292, 868, 8, 454]);
    let mut zero = SplitMix64::new(0);
    assert_eq!([0; 4].map(|_| zero.index(1000)), [883, 431, 26, 970]);
}

#[test]
fn bytes_are_little_endian_draws() {
    let mut rng = SplitMix64::new(0);
    let bytes = rng.bytes32();
    assert_eq!(bytes[..8], 0xe220_a839_7b1d_cdafu64.to_le_bytes());
    assert_eq!(bytes[24..], 0xf88b_b8a8_724c_81ecu64.to_le_bytes());
    let mut short = [0u8; 3];
    SplitMix64::new(0).fill(&mut short);
    assert_eq!(short, [0xaf, 0xcd, 0x1d]);
}

#[test]
fn a_coin_is_the_top_bit_of_a_draw() {
    let mut rng = SplitMix64::new(0);
    // 0xe220..., 0x6e78..., 0x06c4..., 0xf88b...
    assert_eq!([0; 4].map(|_| rng.coin()), [true, false, false, true]);
}

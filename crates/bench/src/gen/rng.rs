//! The generator's random numbers: independent, seekable streams of
//! [`SplitMix64`], and the draws the generator needs (bytes, uniform
//! integers, Pareto counts).

use ubt_spec::rng::SplitMix64;

/// A deterministic random stream.
///
/// Streams are named by `(seed, tag, index)`: the same triple gives the
/// same sequence on every platform, and different triples give unrelated
/// sequences (their SplitMix64 states are mixed apart). The generator uses
/// one tag per part of a workload and the index to reach a record directly
/// (raw key `i`) without drawing the ones before it.
#[derive(Clone, Debug)]
pub struct GenRng(SplitMix64);

impl GenRng {
    /// The stream `(seed, tag, index)`.
    pub fn stream(seed: u64, tag: u64, index: u64) -> Self {
        let mix = SplitMix64::mix;
        let state = mix(seed ^ mix(tag.wrapping_add(mix(index ^ 0x5851_f42d_4c95_7f2d))));
        GenRng(SplitMix64::new(state))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Fills `out` with random bytes (little-endian words).
    pub fn fill(&mut self, out: &mut [u8]) {
        self.0.fill(out)
    }

    /// 32 random bytes.
    pub fn bytes32(&mut self) -> [u8; 32] {
        self.0.bytes32()
    }

    /// 32 random bytes, not all zero (a storage value that is present).
    pub fn nonzero_bytes32(&mut self) -> [u8; 32] {
        loop {
            let out = self.bytes32();
            if out != [0u8; 32] {
                return out;
            }
        }
    }

    /// 20 random bytes (an address).
    pub fn bytes20(&mut self) -> [u8; 20] {
        let mut out = [0u8; 20];
        self.fill(&mut out);
        out
    }

    /// A uniform integer in `0..n` (`n > 0`), by the high half of a 128-bit
    /// product (bias below `n / 2^64`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// A uniform integer in `0..n` (`n > 0`) for bounds past 64 bits,
    /// exactly uniform: draws under the next power of two, rejecting draws
    /// of `n` and above.
    pub fn below_u128(&mut self, n: u128) -> u128 {
        debug_assert!(n > 0, "empty range");
        let bits = 128 - (n - 1).leading_zeros();
        let mask = if bits == 128 {
            u128::MAX
        } else {
            (1u128 << bits) - 1
        };
        loop {
            let draw = ((u128::from(self.next_u64()) << 64) | u128::from(self.next_u64())) & mask;
            if draw < n {
                return draw;
            }
        }
    }

    /// A uniform real in `(0, 1]`, on a grid of `2^-53`.
    pub fn unit_open_below(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// An integer draw of a Pareto distribution: `floor(x_min / u^(1/alpha))`
    /// for `u` uniform in `(0, 1]`, capped at `cap`. Always in
    /// `x_min..=cap` (for `x_min <= cap`).
    pub fn pareto(&mut self, alpha: f64, x_min: u64, cap: u64) -> u64 {
        let x = x_min as f64 / self.unit_open_below().powf(1.0 / alpha);
        // `as` saturates, and x >= x_min exactly (u <= 1).
        #[allow(clippy::cast_possible_truncation)]
        let draw = x.floor() as u64;
        draw.clamp(x_min, cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| GenRng::stream(7, 1, 0).next_u64()).collect();
        assert!(a.iter().all(|x| *x == a[0]));
        let mut seen = std::collections::HashSet::new();
        for (seed, tag, index) in [(7, 1, 0), (8, 1, 0), (7, 2, 0), (7, 1, 1), (0, 0, 0)] {
            assert!(seen.insert(GenRng::stream(seed, tag, index).next_u64()));
        }
    }

    #[test]
    fn wide_bounds_stay_in_range() {
        let mut rng = GenRng::stream(1, 2, 3);
        let bound = 1_000u128 * 10u128.pow(18);
        let mut high = false;
        for _ in 0..10_000 {
            let x = rng.below_u128(bound);
            assert!(x < bound);
            high |= x > bound / 2;
        }
        assert!(high, "the upper half is reached");
        for _ in 0..1_000 {
            assert!(rng.below(1_000) < 1_000);
        }
    }

    #[test]
    fn pareto_counts_respect_min_and_cap_and_the_expected_shape() {
        let (alpha, m) = (1.5, 40u64);
        let cap = 10 * m;
        let mut rng = GenRng::stream(99, 0, 0);
        let n = 200_000;
        let (mut sum, mut at_min, mut at_cap) = (0u64, 0u64, 0u64);
        for _ in 0..n {
            let x = rng.pareto(alpha, m, cap);
            assert!((m..=cap).contains(&x), "{x} outside {m}..={cap}");
            sum += x;
            at_min += u64::from(x == m);
            at_cap += u64::from(x == cap);
        }
        // P(X >= cap) = (m / cap)^alpha = 10^-1.5 = 3.16%.
        let cap_share = at_cap as f64 / n as f64;
        assert!((cap_share - 0.0316).abs() < 0.003, "cap share {cap_share}");
        // P(floor(X) = m) = 1 - (m / (m + 1))^alpha = 3.66% for m = 40.
        let min_share = at_min as f64 / n as f64;
        assert!((min_share - 0.0366).abs() < 0.003, "min share {min_share}");
        // Continuous capped mean m * (1 + 2 * (1 - 10^-0.5)), less ~0.5 for
        // the floor.
        let mean = sum as f64 / n as f64;
        let expected = m as f64 * (1.0 + 2.0 * (1.0 - 10f64.powf(-0.5))) - 0.5;
        assert!(
            (mean - expected).abs() / expected < 0.01,
            "mean {mean} vs {expected}"
        );
    }
}

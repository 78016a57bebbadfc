//! The workspace's one seeded pseudo-random generator, SplitMix64.
//!
//! `ubt bench gen` promises the same bytes for a seed, and the fuzz
//! bodies and benchmarks replay a seed, so the stream of a seed is fixed
//! forever: `tests/rng.rs` pins its first values. Not for cryptography.

/// Steele, Lea and Flood's SplitMix64: a 64-bit state advanced by a
/// constant ([`SplitMix64::GAMMA`]) and mixed by two multiply-xorshift
/// rounds ([`SplitMix64::mix`]). Fast, seedable with any value, and the
/// same sequence on every platform. The field is the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The increment of the state per draw (the golden ratio in 64 bits).
    pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The output function: a bijective 64-bit mixer.
    pub fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(Self::GAMMA);
        Self::mix(self.0)
    }

    /// A fair coin: the top bit of one draw.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// A uniform integer in `0..n` (`n > 0`), by the high half of a 128-bit
    /// product of one draw and `n` (bias below `n / 2^64`).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0, "empty range");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform index into `len > 0` elements: [`below`](Self::below) of
    /// `len`.
    pub fn index(&mut self, len: usize) -> usize {
        #[allow(clippy::cast_possible_truncation)] // below `len`, a usize
        let index = self.below(len as u64) as usize;
        index
    }

    /// Fills `out` with random bytes: one draw per 8 bytes, little-endian,
    /// the last draw cut to what is left.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// 32 random bytes ([`fill`](Self::fill): four draws, little-endian).
    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        self.fill(&mut out);
        out
    }
}

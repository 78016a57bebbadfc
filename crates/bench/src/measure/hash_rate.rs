//! The raw SHA-256 rate of this machine's cores, the bound a block's
//! hashing is compared with: every thread of the rayon pool (the one the
//! store hashes on) compresses batches of 64-byte messages through
//! [`ubt_spec::hash::hash64_many`], the fastest kernel the CPU has, for a
//! fixed time.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use ubt_spec::hash::{hash64_many, Hash, ZERO_HASH};

/// Messages per batch: enough to keep the interleaved kernel's lanes full.
const BATCH_MESSAGES: usize = 256;

/// The measured rate.
#[derive(Clone, Debug, Serialize)]
pub struct HashRate {
    /// Threads that hashed at once (the rayon pool's).
    pub threads: usize,
    /// SHA-256 compressions per second over all of them.
    pub compressions_per_s: f64,
}

/// Hashes on every thread of the rayon pool for about `duration` and
/// returns the compressions per second of all of them together.
pub fn measure(duration: Duration) -> HashRate {
    let compressions = AtomicU64::new(0);
    let started = Instant::now();
    rayon::broadcast(|context| {
        let mut messages = vec![[0u8; 64]; BATCH_MESSAGES];
        for (i, message) in messages.iter_mut().enumerate() {
            message[..8].copy_from_slice(&(i as u64).to_le_bytes());
            message[8..16].copy_from_slice(&(context.index() as u64).to_le_bytes());
        }
        let mut out: Vec<Hash> = vec![ZERO_HASH; BATCH_MESSAGES];
        let mut batches = 0u64;
        loop {
            hash64_many(black_box(&messages), &mut out);
            // Chain the outputs into the next inputs so no batch repeats.
            for (message, hash) in messages.iter_mut().zip(&out) {
                message[32..].copy_from_slice(hash);
            }
            batches += 1;
            if started.elapsed() >= duration {
                break;
            }
        }
        black_box(&out);
        compressions.fetch_add(2 * BATCH_MESSAGES as u64 * batches, Ordering::Relaxed);
    });
    let elapsed_s = started.elapsed().as_secs_f64();
    HashRate {
        threads: rayon::current_num_threads(),
        compressions_per_s: compressions.load(Ordering::Relaxed) as f64 / elapsed_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_counts_the_pools_compressions() {
        let before = ubt_spec::hash::compressions().expect("the bench counts hashes");
        let rate = measure(Duration::from_millis(20));
        let counted = ubt_spec::hash::compressions().expect("the bench counts hashes") - before;
        assert_eq!(rate.threads, rayon::current_num_threads());
        assert!(rate.compressions_per_s > 0.0);
        // At least one batch per thread, each counted by the spec crate
        // (other tests may hash meanwhile, so not an equality).
        assert!(counted >= (2 * BATCH_MESSAGES * rate.threads) as u64);
    }
}

//! Counting SHA-256 compressions, for measuring how much of a block's time
//! is hashing (`ubt bench store`'s hashing share).
//!
//! With the `hash-count` feature every entry point of [`super`] adds the
//! compressions it performs (two per 64-byte message, one per 32-byte
//! message, nineteen per single-value stem chain, the padded block count
//! for [`super::sha256`]) to a counter owned by the calling thread. A
//! thread writes only its own counter (a plain load and store, no locked
//! instruction on the hot path); [`compressions`] sums every thread's,
//! including threads that have exited. Without the feature nothing is
//! counted and both functions return `None`.

#[cfg(feature = "hash-count")]
mod enabled {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, PoisonError};

    /// Counters of live threads, and the sum of exited threads' counts.
    struct Registry {
        live: Vec<Arc<AtomicU64>>,
        retired: u64,
    }

    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        live: Vec::new(),
        retired: 0,
    });

    fn registry() -> std::sync::MutexGuard<'static, Registry> {
        REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This thread's counter; on exit its count moves to `retired`.
    struct Local(Arc<AtomicU64>);

    impl Local {
        fn register() -> Self {
            let counter = Arc::new(AtomicU64::new(0));
            registry().live.push(Arc::clone(&counter));
            Local(counter)
        }
    }

    impl Drop for Local {
        fn drop(&mut self) {
            let mut registry = registry();
            registry.live.retain(|c| !Arc::ptr_eq(c, &self.0));
            registry.retired += self.0.load(Ordering::Relaxed);
        }
    }

    thread_local! {
        static LOCAL: Local = Local::register();
    }

    pub(crate) fn add(compressions: u64) {
        // During the thread's teardown the counter may be gone: those
        // compressions are not counted.
        let _ = LOCAL.try_with(|local| {
            let counter = &local.0;
            counter.store(
                counter.load(Ordering::Relaxed) + compressions,
                Ordering::Relaxed,
            );
        });
    }

    pub(crate) fn total() -> u64 {
        let registry = registry();
        registry.retired
            + registry
                .live
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .sum::<u64>()
    }

    pub(crate) fn this_thread() -> u64 {
        LOCAL
            .try_with(|local| local.0.load(Ordering::Relaxed))
            .unwrap_or(0)
    }
}

/// Adds `count` compressions to the calling thread's counter (nothing
/// without the `hash-count` feature).
#[inline]
pub(crate) fn add(count: u64) {
    #[cfg(feature = "hash-count")]
    enabled::add(count);
    #[cfg(not(feature = "hash-count"))]
    let _ = count;
}

/// SHA-256 compressions performed so far by every thread of the process,
/// or `None` without the `hash-count` feature. The difference of two
/// readings is the hashing done in between (by any thread).
pub fn compressions() -> Option<u64> {
    #[cfg(feature = "hash-count")]
    return Some(enabled::total());
    #[cfg(not(feature = "hash-count"))]
    None
}

/// SHA-256 compressions performed so far by the calling thread, or `None`
/// without the `hash-count` feature.
pub fn compressions_on_this_thread() -> Option<u64> {
    #[cfg(feature = "hash-count")]
    return Some(enabled::this_thread());
    #[cfg(not(feature = "hash-count"))]
    None
}

/// Compressions of SHA-256 over a message of `bytes` bytes (the message,
/// the 0x80 byte and the 8-byte length, in 64-byte blocks).
pub(crate) fn blocks_for(bytes: usize) -> u64 {
    (bytes as u64 + 9).div_ceil(64)
}

#[cfg(all(test, feature = "hash-count"))]
mod tests {
    use super::super::{hash32, hash32_many, hash64, hash64_many, sha256, Hash, ZERO_HASH};
    use super::*;

    /// Compressions this thread performs in `work`.
    fn counted(work: impl FnOnce()) -> u64 {
        let before = compressions_on_this_thread().unwrap_or(0);
        work();
        compressions_on_this_thread().unwrap_or(0) - before
    }

    #[test]
    fn every_entry_point_counts_its_compressions() {
        let messages64 = [[7u8; 64]; 9];
        let messages32 = [[5u8; 32]; 7];
        let mut out: [Hash; 9] = [ZERO_HASH; 9];
        assert_eq!(
            counted(|| {
                let _ = hash64(&messages64[0]);
            }),
            2
        );
        assert_eq!(
            counted(|| {
                let _ = hash32(&messages32[0]);
            }),
            1
        );
        assert_eq!(counted(|| hash64_many(&messages64, &mut out)), 18);
        assert_eq!(counted(|| hash32_many(&messages32, &mut out[..7])), 7);
        assert_eq!(
            counted(|| {
                let _ = sha256(&[0u8; 55]);
            }),
            1
        );
        assert_eq!(
            counted(|| {
                let _ = sha256(&[0u8; 56]);
            }),
            2
        );
        assert_eq!(
            counted(|| {
                let _ = sha256(&[0u8; 200]);
            }),
            4
        );
    }

    #[test]
    fn the_portable_path_counts_the_same() {
        super::super::force_portable(true);
        let messages64 = [[3u8; 64]; 5];
        let mut out = [ZERO_HASH; 5];
        let n = counted(|| hash64_many(&messages64, &mut out));
        let single = counted(|| {
            let _ = hash32(&[1u8; 32]);
        });
        super::super::force_portable(false);
        assert_eq!((n, single), (10, 1));
    }

    #[test]
    fn a_single_value_stem_chain_counts_nineteen_on_both_paths() {
        use super::super::{lone_leaf_stems, LoneLeaf};
        let items = [LoneLeaf {
            prefix: [9u8; 32],
            value: [4u8; 32],
            sub_index: 77,
        }; 5];
        let mut kernel = [ZERO_HASH; 5];
        let mut portable = [ZERO_HASH; 5];
        let by_kernel = counted(|| lone_leaf_stems(&items, &mut kernel));
        super::super::force_portable(true);
        let by_portable = counted(|| lone_leaf_stems(&items, &mut portable));
        super::super::force_portable(false);
        assert_eq!(kernel, portable);
        assert_eq!((by_kernel, by_portable), (95, 95));
    }

    #[test]
    fn exited_threads_stay_counted() {
        let before = compressions().expect("feature on");
        std::thread::spawn(|| {
            let messages = [[1u8; 64]; 50];
            let mut out = [ZERO_HASH; 50];
            hash64_many(&messages, &mut out);
        })
        .join()
        .expect("hashing thread");
        // Other tests may hash meanwhile: at least the exited thread's.
        assert!(compressions().expect("feature on") - before >= 100);
    }
}

//! Per-thread read buffers. A single read lands in its thread's buffer and
//! is copied out once, into the shared buffer the cache keeps, instead of
//! going through a fresh zeroed allocation that is copied and freed: on a
//! cold point read that allocation, its zeroing, the copy and the free
//! took ~0.7 us (docs/benchmarks.md, "Allocation on the read and decode
//! paths").

use std::cell::RefCell;

/// Buffers up to this size stay with their thread between reads; a larger
/// read uses a buffer of its own (a bucket or a flat readahead run is at
/// most 64 KiB, so only unusual reads take that path).
pub(crate) const KEPT_BYTES_MAX: usize = 256 * 1024;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with a buffer of exactly `len` bytes (its contents are
/// whatever the thread's previous read left: `f` must overwrite what it
/// reads). Reentrant calls on one thread get a buffer of their own.
pub(crate) fn with_buffer<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    if len > KEPT_BYTES_MAX {
        return f(&mut vec![0u8; len]);
    }
    BUFFER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffer) => {
            if buffer.len() < len {
                buffer.resize(len, 0);
            }
            f(&mut buffer[..len])
        }
        Err(_) => f(&mut vec![0u8; len]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_have_the_asked_length_and_nest() {
        with_buffer(100, |outer| {
            assert_eq!(outer.len(), 100);
            outer.fill(7);
            with_buffer(10, |inner| {
                assert_eq!(inner.len(), 10);
                inner.fill(1);
            });
            assert!(
                outer.iter().all(|&b| b == 7),
                "a nested call used the outer buffer"
            );
        });
        with_buffer(KEPT_BYTES_MAX + 1, |big| {
            assert_eq!(big.len(), KEPT_BYTES_MAX + 1)
        });
        with_buffer(3, |small| assert_eq!(small.len(), 3));
    }
}

//! Batch entry points: many independent messages per call, dispatched to the
//! interleaved SHA-NI kernel when the CPU has it and to the single-message
//! functions otherwise.

use std::cell::Cell;

use super::{hash32_portable, hash64_portable, Hash};

thread_local! {
    /// Set by [`force_portable`]: this thread skips the accelerated kernel.
    static PORTABLE_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Makes the batch functions on the calling thread use the portable path
/// (one `sha2` compression call per message) even where the interleaved
/// kernel is available, so tests can cover both. Affects only this thread.
#[doc(hidden)]
pub fn force_portable(portable: bool) {
    PORTABLE_ONLY.set(portable);
}

/// Whether [`force_portable`] is on for this thread.
#[doc(hidden)]
pub fn is_forced_portable() -> bool {
    PORTABLE_ONLY.get()
}

/// The accelerated kernel, unless this thread forces the portable path or
/// the CPU lacks the features.
#[cfg(target_arch = "x86_64")]
pub(super) fn accelerated() -> Option<super::x86::ShaNi> {
    if PORTABLE_ONLY.get() {
        None
    } else {
        super::x86::ShaNi::detect()
    }
}

/// Whether the batch functions on this thread use the interleaved kernel
/// (the CPU has it and [`force_portable`] is off). Without it, batching
/// gains nothing, and callers with their own bookkeeping may skip it.
pub(crate) fn interleaved() -> bool {
    #[cfg(target_arch = "x86_64")]
    if accelerated().is_some() {
        return true;
    }
    false
}

/// SHA-256 of each 64-byte message: `out[i] = hash64(&messages[i])`.
///
/// Any number of messages; they are compressed in interleaved groups where
/// the CPU allows, which raises throughput well above a loop over
/// [`hash64`](super::hash64).
///
/// # Panics
///
/// If `out` and `messages` differ in length.
pub fn hash64_many(messages: &[[u8; 64]], out: &mut [Hash]) {
    assert_eq!(messages.len(), out.len(), "one output per message");
    super::count::add(2 * messages.len() as u64);
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = accelerated() {
        return kernel.hash64_many(messages, out);
    }
    for (message, hash) in messages.iter().zip(out) {
        *hash = hash64_portable(message);
    }
}

/// SHA-256 of each 32-byte message: `out[i] = hash32(&messages[i])`.
///
/// Any number of messages, compressed in interleaved groups where the CPU
/// allows.
///
/// # Panics
///
/// If `out` and `messages` differ in length.
pub fn hash32_many(messages: &[[u8; 32]], out: &mut [Hash]) {
    assert_eq!(messages.len(), out.len(), "one output per message");
    super::count::add(messages.len() as u64);
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = accelerated() {
        return kernel.hash32_many(messages, out);
    }
    for (message, hash) in messages.iter().zip(out) {
        *hash = hash32_portable(message);
    }
}

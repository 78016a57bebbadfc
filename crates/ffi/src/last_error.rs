//! The thread-local message of the last call: set by every call that
//! returns a status (the error's message, or empty on success), read with
//! `ubt_last_error_message`.

use std::cell::RefCell;
use std::ffi::c_char;

use crate::error::FfiError;
use crate::guard;
use crate::ptr::{Out, OutArray};
use crate::status::UBT_OK;

thread_local! {
    /// The message of this thread's last call (empty after a success).
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Stores the outcome of a call as this thread's last error and returns
/// its status code.
pub(crate) fn record(outcome: Result<(), FfiError>) -> i32 {
    let (code, message) = match outcome {
        Ok(()) => (UBT_OK, String::new()),
        Err(error) => (error.status().code(), error.message().to_owned()),
    };
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    code
}

/// This thread's last error message.
pub(crate) fn message() -> String {
    LAST_ERROR.with(|last| last.borrow().clone())
}

/// The longest prefix of `message` of at most `max` bytes that ends on a
/// character boundary, NUL bytes replaced by `?` (C strings end at NUL).
fn c_prefix(message: &str, max: usize) -> Vec<c_char> {
    let mut end = message.len().min(max);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.as_bytes()[..end]
        .iter()
        .map(|&byte| {
            let byte = if byte == 0 { b'?' } else { byte };
            c_char::from_ne_bytes([byte])
        })
        .collect()
}

/// Copies the message of this thread's last call into `buf`.
///
/// Every function that returns a status sets the calling thread's message:
/// the error's text when it fails, the empty string when it succeeds. This
/// function does not change it, so it can be called repeatedly.
///
/// Writes at most `capacity - 1` bytes of the message (cut at a UTF-8
/// character boundary) and a terminating NUL into `buf`; with `capacity`
/// 0 nothing is written and `buf` may be null. `*len_out`, if `len_out` is
/// not null, receives the full message length in bytes without the NUL: a
/// value of `capacity` or more means the copy was cut, and a buffer of
/// `*len_out + 1` bytes holds it whole.
///
/// Threads: the message is per OS thread. From Go, read it in the same
/// cgo call as the failed function (a C helper in the preamble) or with the
/// goroutine locked to its thread (`runtime.LockOSThread`).
///
/// Returns `UBT_OK`, or `UBT_ERR_NULL_POINTER` when `buf` is null and
/// `capacity` is not 0 (the message is kept).
///
/// # Safety
///
/// `buf` is null or valid for writes of `capacity` bytes; `len_out` is
/// null or valid for writing one `size_t`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_last_error_message(
    buf: *mut c_char,
    capacity: usize,
    len_out: *mut usize,
) -> i32 {
    let outcome = guard::catch(|| {
        let message = message();
        // SAFETY: this function's contract: `buf` is null or holds
        // `capacity` bytes; `len_out` is null or holds one size_t.
        let (buf, len_out) = unsafe {
            (
                OutArray::new(buf, capacity, "buf")?,
                Out::new_optional(len_out, "len_out")?,
            )
        };
        if let Some(len_out) = len_out {
            len_out.write(message.len());
        }
        if capacity > 0 {
            let mut text = c_prefix(&message, capacity - 1);
            text.push(0);
            buf.fill(text);
        }
        Ok(())
    });
    // Not `last_error::record`: reading the message must not change it.
    match outcome {
        Ok(()) => UBT_OK,
        Err(error) => error.status().code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn prefixes_end_on_character_boundaries_without_nul() {
        let to_bytes = |text: Vec<c_char>| -> Vec<u8> {
            text.into_iter().map(|c| c.to_ne_bytes()[0]).collect()
        };
        assert_eq!(to_bytes(c_prefix("abc", 10)), b"abc");
        assert_eq!(to_bytes(c_prefix("abc", 2)), b"ab");
        // "é" is two bytes: a cut inside it drops it whole.
        assert_eq!(to_bytes(c_prefix("aé", 2)), b"a");
        assert_eq!(to_bytes(c_prefix("a\0b", 3)), b"a?b");
    }

    #[test]
    fn record_sets_and_clears_the_message() {
        let code = record(Err(FfiError::invalid("bad length")));
        assert_eq!(code, Status::InvalidArgument.code());
        assert_eq!(message(), "bad length");
        assert_eq!(record(Ok(())), UBT_OK);
        assert_eq!(message(), "");
    }
}

//! Byte buffers the library hands out ([`UbtBytes`]: code, proofs) and
//! `ubt_bytes_free`. Every live buffer is kept in a table by address, so
//! freeing one twice, or a pointer the library never handed out, is an
//! error code rather than a corrupted heap.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::error::FfiError;
use crate::guard;
use crate::ptr::{read, Out};
use crate::types::UbtBytes;

/// The buffers handed out and not yet freed, by the address of their
/// first byte. The vectors are never touched while handed out.
static LIVE: Mutex<BTreeMap<usize, Vec<u8>>> = Mutex::new(BTreeMap::new());

/// The table of live buffers (no code panics while holding it).
fn live() -> std::sync::MutexGuard<'static, BTreeMap<usize, Vec<u8>>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands `bytes` to the caller: the buffer stays allocated until
/// `ubt_bytes_free`. Empty: [`UbtBytes::EMPTY`], nothing kept.
pub(crate) fn hand_out(bytes: Vec<u8>) -> UbtBytes {
    if bytes.is_empty() {
        return UbtBytes::EMPTY;
    }
    let buffer = UbtBytes {
        data: bytes.as_ptr(),
        len: bytes.len(),
    };
    // Moving the vector into the table moves its header, not its heap
    // bytes: `data` stays valid while the entry lives.
    live().insert(buffer.data.addr(), bytes);
    buffer
}

/// Frees a buffer the library handed out (from `ubt_db_code`,
/// `ubt_db_prove` and their reader versions) and sets `*bytes` to the
/// empty buffer (`data` NULL, `len` 0).
///
/// Freeing the empty buffer is a no-op that returns `UBT_OK`, so freeing
/// the same `UbtBytes` twice is safe. A `data` pointer the library did not
/// hand out, or has already freed through another copy of the struct, or
/// a `len` that differs from the one handed out, is
/// `UBT_ERR_INVALID_ARGUMENT` and nothing is freed.
///
/// # Safety
///
/// `bytes` is null or points to a readable and writable `UbtBytes`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_bytes_free(bytes: *mut UbtBytes) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract: `bytes` is null or a readable
        // and writable UbtBytes.
        let (buffer, out) = unsafe { (read(bytes, "bytes")?, Out::new(bytes, "bytes")?) };
        if buffer.data.is_null() {
            out.write(UbtBytes::EMPTY);
            return Ok(());
        }
        let mut live = live();
        let address = buffer.data.addr();
        match live.get(&address) {
            None => {
                return Err(FfiError::invalid(
                    "bytes.data is not a buffer handed out by ubt, or was already freed",
                ))
            }
            Some(kept) if kept.len() != buffer.len => {
                return Err(FfiError::invalid(format!(
                    "bytes.len is {}, but the buffer handed out holds {} bytes",
                    buffer.len,
                    kept.len()
                )))
            }
            Some(_) => {}
        }
        drop(live.remove(&address));
        drop(live);
        out.write(UbtBytes::EMPTY);
        Ok(())
    })
}

//! The caller's raw pointers, checked: inputs are copied into owned values
//! at once ([`read`], [`read_array`], [`read_path`]), outputs become
//! write-once slots ([`Out`], [`OutArray`]) written only when the call has
//! succeeded. This is the one module that dereferences the caller's
//! pointers; each function that does is `unsafe`, its contract the one the
//! exported function documents for its arguments.
//!
//! Every pointer is checked for null (a `UBT_ERR_NULL_POINTER` naming the
//! argument) and alignment, and every length for overflow, before it is
//! used. Inputs are copied before any output is written, so an output
//! buffer that overlaps an input cannot break Rust's aliasing rules; only
//! raw-pointer writes reach outputs.
#![allow(unsafe_code)]

use std::ffi::{c_char, CStr};
use std::mem::size_of;
use std::path::PathBuf;
use std::ptr::NonNull;

use crate::error::FfiError;

/// `ptr` as non-null and aligned for `T`, or the error naming `name`.
fn check<T>(ptr: *const T, name: &str) -> Result<NonNull<T>, FfiError> {
    let Some(ptr) = NonNull::new(ptr.cast_mut()) else {
        return Err(FfiError::null(name));
    };
    if !ptr.is_aligned() {
        return Err(FfiError::invalid(format!(
            "{name} is not aligned to {} bytes",
            std::mem::align_of::<T>()
        )));
    }
    Ok(ptr)
}

/// Checks that `len` items of `T` fit in one allocation (at most
/// `isize::MAX` bytes, as Rust slices require).
fn check_len<T>(len: usize, name: &str) -> Result<(), FfiError> {
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX.unsigned_abs() => Ok(()),
        _ => Err(FfiError::invalid(format!(
            "the length of {name} ({len} items of {} bytes) is too large",
            size_of::<T>()
        ))),
    }
}

/// A copy of the `T` at `ptr`.
///
/// # Safety
///
/// `ptr` is null or valid for reading one initialised `T`.
pub(crate) unsafe fn read<T: Copy>(ptr: *const T, name: &str) -> Result<T, FfiError> {
    let ptr = check(ptr, name)?;
    // SAFETY: non-null and aligned (checked); readable and initialised by
    // this function's contract.
    Ok(unsafe { ptr.read() })
}

/// A copy of the `len` items of `T` at `ptr` (`ptr` may be null when
/// `len` is 0).
///
/// # Safety
///
/// `ptr` is null or valid for reading `len` initialised items of `T`.
pub(crate) unsafe fn read_array<T: Copy>(
    ptr: *const T,
    len: usize,
    name: &str,
) -> Result<Vec<T>, FfiError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let ptr = check(ptr, name)?;
    check_len::<T>(len, name)?;
    // SAFETY: non-null, aligned, `len` items within isize::MAX bytes
    // (checked); readable and initialised by this function's contract. The
    // slice lives only until it is copied.
    Ok(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) }.to_vec())
}

/// The file-system path in the NUL-terminated string at `ptr` (bytes as
/// they are on Unix; UTF-8 elsewhere).
///
/// # Safety
///
/// `ptr` is null or points to a NUL-terminated string.
pub(crate) unsafe fn read_path(ptr: *const c_char, name: &str) -> Result<PathBuf, FfiError> {
    let ptr = check(ptr, name)?;
    // SAFETY: non-null (checked); NUL-terminated by this function's
    // contract. The borrowed string is copied before returning.
    let text = unsafe { CStr::from_ptr(ptr.as_ptr()) };
    if text.is_empty() {
        return Err(FfiError::invalid(format!("{name} is an empty path")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(text.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        text.to_str()
            .map(PathBuf::from)
            .map_err(|_| FfiError::invalid(format!("{name} is not UTF-8")))
    }
}

/// A checked output slot for one `T`, written at most once.
#[derive(Debug)]
pub(crate) struct Out<T> {
    ptr: NonNull<T>,
}

impl<T> Out<T> {
    /// The slot at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is null or valid for writing one `T` until the current call
    /// returns; the slot must not outlive it.
    pub(crate) unsafe fn new(ptr: *mut T, name: &str) -> Result<Out<T>, FfiError> {
        Ok(Out {
            ptr: check(ptr, name)?,
        })
    }

    /// The slot at `ptr`, or `None` when `ptr` is null (an optional output).
    ///
    /// # Safety
    ///
    /// As [`Out::new`].
    pub(crate) unsafe fn new_optional(ptr: *mut T, name: &str) -> Result<Option<Out<T>>, FfiError> {
        if ptr.is_null() {
            return Ok(None);
        }
        // SAFETY: forwarded contract.
        unsafe { Out::new(ptr, name) }.map(Some)
    }

    /// Writes `value` (without reading or dropping what was there).
    pub(crate) fn write(self, value: T) {
        // SAFETY: non-null and aligned (checked in `new`), writable for
        // the current call by `new`'s contract.
        unsafe { self.ptr.as_ptr().write(value) }
    }
}

/// A checked output array of `len` items of `T`.
#[derive(Debug)]
pub(crate) struct OutArray<T> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T> OutArray<T> {
    /// The array of `len` items at `ptr` (`ptr` may be null when `len` is
    /// 0).
    ///
    /// # Safety
    ///
    /// `ptr` is null or valid for writing `len` items of `T` until the
    /// current call returns; the array must not outlive it.
    pub(crate) unsafe fn new(ptr: *mut T, len: usize, name: &str) -> Result<OutArray<T>, FfiError> {
        if len == 0 {
            return Ok(OutArray {
                ptr: NonNull::dangling(),
                len: 0,
            });
        }
        let ptr = check(ptr, name)?;
        check_len::<T>(len, name)?;
        Ok(OutArray { ptr, len })
    }

    /// Writes the first items of the array from `values` (at most `len`;
    /// the rest of `values` is ignored).
    pub(crate) fn fill(self, values: impl IntoIterator<Item = T>) {
        for (index, value) in values.into_iter().take(self.len).enumerate() {
            // SAFETY: `index < len`; the array is non-null, aligned and
            // within isize::MAX bytes (checked in `new`), writable for the
            // current call by `new`'s contract.
            unsafe { self.ptr.as_ptr().add(index).write(value) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn null_and_misaligned_pointers_are_refused() {
        // SAFETY: null and misaligned pointers are refused before any read.
        let (null, misaligned) = unsafe {
            (
                read::<u64>(std::ptr::null(), "x"),
                read::<u64>(std::ptr::dangling::<u8>().wrapping_add(1).cast(), "y"),
            )
        };
        assert_eq!(null.unwrap_err().status(), Status::NullPointer);
        assert_eq!(misaligned.unwrap_err().status(), Status::InvalidArgument);
    }

    #[test]
    fn oversized_lengths_are_refused_before_any_read() {
        let item = 0u64;
        // SAFETY: the length check fails before the slice is made.
        let error = unsafe { read_array(&item, usize::MAX / 4, "keys") }.unwrap_err();
        assert_eq!(error.status(), Status::InvalidArgument);
        assert!(error.message().contains("too large"), "{error}");
    }

    #[test]
    fn empty_arrays_accept_null() {
        // SAFETY: nothing is read or written for length 0.
        let (input, output) = unsafe {
            (
                read_array::<u8>(std::ptr::null(), 0, "a"),
                OutArray::<u8>::new(std::ptr::null_mut(), 0, "b"),
            )
        };
        assert!(input.unwrap().is_empty());
        assert!(output.is_ok());
    }

    #[test]
    fn outputs_write_at_most_their_length() {
        let mut buf = [0u8; 3];
        // SAFETY: `buf` holds 3 bytes for the whole test.
        let out = unsafe { OutArray::new(buf.as_mut_ptr(), 2, "buf") }.unwrap();
        out.fill([7, 8, 9]);
        assert_eq!(buf, [7, 8, 0]);
    }
}

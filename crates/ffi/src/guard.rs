//! No panic crosses the C boundary: every entry point runs its body in
//! [`catch`] (through [`call`] for the functions that return a status), and
//! a panic becomes [`Status::Panic`] with the panic's message. Handle
//! operations catch a second time, inside the handle's lock, to poison the
//! handle (see `handle.rs`).
//!
//! Unwinding needs the `unwind` panic strategy (the default); a build with
//! `panic = "abort"` aborts the process instead.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::FfiError;
use crate::last_error;
use crate::status::Status;

/// Where a test can make the next call panic (see [`inject`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Point {
    /// At the start of a call's body, before any handle is looked up.
    Call,
    /// Inside a handle's lock, just before the operation on it.
    Handle,
}

/// Runs `body`, turning a panic into a [`Status::Panic`] error.
pub(crate) fn catch<T>(body: impl FnOnce() -> Result<T, FfiError>) -> Result<T, FfiError> {
    // AssertUnwindSafe: after a panic nothing the body touched is used
    // again, except handles, which `handle.rs` poisons.
    catch_unwind(AssertUnwindSafe(|| {
        inject::hit(Point::Call);
        body()
    }))
    .unwrap_or_else(|payload| Err(panicked(payload.as_ref())))
}

/// Runs the body of an entry point that returns a status: the status code,
/// with this thread's last error message set.
pub(crate) fn call(body: impl FnOnce() -> Result<(), FfiError>) -> i32 {
    last_error::record(catch(body))
}

/// Runs the body of an entry point that cannot fail (and returns no
/// status): `fallback` if it panics anyway.
pub(crate) fn infallible<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The [`Status::Panic`] error of a panic with `payload`.
pub(crate) fn panicked(payload: &(dyn Any + Send)) -> FfiError {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    FfiError::new(Status::Panic, format!("panic inside ubt: {what}"))
}

/// Panics injected by unit tests (the only way to reach the panic paths,
/// which no correct call takes). Outside `cfg(test)` this is a no-op.
pub(crate) mod inject {
    use super::Point;

    #[cfg(test)]
    thread_local! {
        /// Where this thread's next call panics, if armed.
        static ARMED: std::cell::Cell<Option<Point>> = const { std::cell::Cell::new(None) };
    }

    /// Makes this thread's next pass through `point` panic (once).
    #[cfg(test)]
    pub(crate) fn arm(point: Point) {
        ARMED.with(|armed| armed.set(Some(point)));
    }

    /// Panics if this thread armed `point`.
    #[cfg(test)]
    pub(crate) fn hit(point: Point) {
        if ARMED.with(|armed| armed.get()) == Some(point) {
            ARMED.with(|armed| armed.set(None));
            panic!("injected panic at {point:?}");
        }
    }

    /// Panics if this thread armed `point` (never, outside tests).
    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn hit(point: Point) {
        let _ = point;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_panic_status_with_its_message() {
        let error = catch(|| -> Result<(), FfiError> { panic!("boom {}", 7) }).unwrap_err();
        assert_eq!(error.status(), Status::Panic);
        assert_eq!(error.message(), "panic inside ubt: boom 7");
        let error = catch(|| -> Result<(), FfiError> { std::panic::panic_any(42u8) }).unwrap_err();
        assert_eq!(
            error.message(),
            "panic inside ubt: a panic without a message"
        );
    }

    #[test]
    fn call_records_the_outcome() {
        assert_eq!(call(|| Ok(())), crate::status::UBT_OK);
        assert_eq!(last_error::message(), "");
        inject::arm(Point::Call);
        assert_eq!(call(|| Ok(())), Status::Panic.code());
        assert!(last_error::message().contains("injected panic at Call"));
        // The injection fires once.
        assert_eq!(call(|| Ok(())), crate::status::UBT_OK);
    }

    #[test]
    fn infallible_returns_the_fallback_on_panic() {
        assert_eq!(infallible(1, || 2), 2);
        assert_eq!(infallible(1, || panic!("no")), 1);
    }
}

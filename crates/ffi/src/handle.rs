//! Opaque `uint64_t` handles: a registry per kind of object (databases,
//! readers) maps handles to the objects, so a handle the caller keeps
//! after closing it, or makes up, is an error and never a dangling
//! pointer.
//!
//! Handles come from one process-wide counter starting at 1: 0 is never a
//! handle, no handle is ever issued twice (a closed handle stays invalid
//! for the life of the process), and a handle of one kind is never valid
//! for the other.
//!
//! Each object sits in a [`Slot`]: a read-write lock (calls that only read
//! share it; writes and close take it alone) and a poisoned flag. A panic
//! in an operation on the object is caught inside the lock and sets the
//! flag; every later call on the handle then fails with
//! `UBT_ERR_POISONED`, and only closing it works.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::error::FfiError;
use crate::guard::{self, inject, Point};
use crate::status::Status;

/// The next handle to issue, shared by every registry.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// One registered object and its state.
#[derive(Debug)]
struct Slot<T> {
    /// The object; `None` once closed.
    value: RwLock<Option<T>>,
    /// Set when an operation on the object panicked.
    poisoned: AtomicBool,
}

/// The objects of one kind, by handle.
#[derive(Debug)]
pub(crate) struct Registry<T> {
    /// What the objects are ("database", "reader"), for messages.
    kind: &'static str,
    slots: Mutex<BTreeMap<u64, Arc<Slot<T>>>>,
}

/// The object a handle named, closed: the value, and whether the handle
/// was poisoned.
#[derive(Debug)]
pub(crate) struct Closed<T> {
    /// The object.
    pub(crate) value: T,
    /// Whether an operation on it had panicked.
    pub(crate) poisoned: bool,
}

impl<T> Registry<T> {
    /// An empty registry of objects called `kind`.
    pub(crate) const fn new(kind: &'static str) -> Registry<T> {
        Registry {
            kind,
            slots: Mutex::new(BTreeMap::new()),
        }
    }

    /// The slot map. No code panics while holding it, so a poisoned lock
    /// (impossible in practice) still holds a consistent map.
    fn slots(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Slot<T>>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `value` and returns its new handle.
    pub(crate) fn insert(&self, value: T) -> u64 {
        let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            value: RwLock::new(Some(value)),
            poisoned: AtomicBool::new(false),
        });
        self.slots().insert(handle, slot);
        handle
    }

    /// Why `handle` names no open object of this registry.
    fn missing(&self, handle: u64) -> FfiError {
        let message = if handle == 0 {
            format!("handle 0 is not a {} handle (0 is never issued)", self.kind)
        } else if handle >= NEXT_HANDLE.load(Ordering::Relaxed) {
            format!("handle {handle} was never issued")
        } else {
            format!(
                "handle {handle} is not an open {} handle (it was closed, or is another kind of handle)",
                self.kind
            )
        };
        FfiError::new(Status::BadHandle, message)
    }

    /// The slot of `handle`.
    fn slot(&self, handle: u64) -> Result<Arc<Slot<T>>, FfiError> {
        self.slots()
            .get(&handle)
            .cloned()
            .ok_or_else(|| self.missing(handle))
    }

    /// Fails if the slot is poisoned.
    fn check_poisoned(&self, handle: u64, slot: &Slot<T>) -> Result<(), FfiError> {
        if slot.poisoned.load(Ordering::Acquire) {
            return Err(FfiError::new(
                Status::Poisoned,
                format!(
                    "{} handle {handle} is poisoned: an earlier call on it panicked; close it",
                    self.kind
                ),
            ));
        }
        Ok(())
    }

    /// Runs `operation` with the object, poisoning the slot if it panics.
    fn run<V, R>(
        slot: &Slot<T>,
        value: V,
        operation: impl FnOnce(V) -> Result<R, FfiError>,
    ) -> Result<R, FfiError> {
        guard::catch(|| {
            inject::hit(Point::Handle);
            operation(value)
        })
        .inspect_err(|error| {
            if error.status() == Status::Panic {
                slot.poisoned.store(true, Ordering::Release);
            }
        })
    }

    /// Runs `operation` on the object of `handle`, sharing it with other
    /// readers.
    pub(crate) fn read<R>(
        &self,
        handle: u64,
        operation: impl FnOnce(&T) -> Result<R, FfiError>,
    ) -> Result<R, FfiError> {
        let slot = self.slot(handle)?;
        self.check_poisoned(handle, &slot)?;
        // Operations panic only inside `run`, which catches the panic
        // before it reaches the guard: the lock is not poisoned in practice.
        let guard = slot.value.read().unwrap_or_else(PoisonError::into_inner);
        let value = guard.as_ref().ok_or_else(|| self.missing(handle))?;
        Self::run(&slot, value, operation)
    }

    /// Runs `operation` on the object of `handle` alone.
    pub(crate) fn write<R>(
        &self,
        handle: u64,
        operation: impl FnOnce(&mut T) -> Result<R, FfiError>,
    ) -> Result<R, FfiError> {
        let slot = self.slot(handle)?;
        self.check_poisoned(handle, &slot)?;
        let mut guard = slot.value.write().unwrap_or_else(PoisonError::into_inner);
        let value = guard.as_mut().ok_or_else(|| self.missing(handle))?;
        Self::run(&slot, value, operation)
    }

    /// Unregisters `handle` and returns its object once every call in
    /// flight on it has finished. Works on a poisoned handle.
    pub(crate) fn remove(&self, handle: u64) -> Result<Closed<T>, FfiError> {
        let slot = self
            .slots()
            .remove(&handle)
            .ok_or_else(|| self.missing(handle))?;
        let value = slot
            .value
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| self.missing(handle))?;
        Ok(Closed {
            value,
            poisoned: slot.poisoned.load(Ordering::Acquire),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_unique_and_die_with_close() {
        let registry: Registry<u32> = Registry::new("number");
        let a = registry.insert(1);
        let b = registry.insert(2);
        assert_ne!(a, b);
        assert_ne!(a, 0);
        assert_eq!(registry.read(a, |v| Ok(*v)).unwrap(), 1);
        registry
            .write(b, |v| {
                *v += 40;
                Ok(())
            })
            .unwrap();
        assert_eq!(registry.remove(b).unwrap().value, 42);
        let stale = registry.read(b, |v| Ok(*v)).unwrap_err();
        assert_eq!(stale.status(), Status::BadHandle);
        assert!(stale.message().contains("closed"), "{stale}");
        assert_eq!(registry.remove(b).unwrap_err().status(), Status::BadHandle);
        let never = registry.read(u64::MAX, |v| Ok(*v)).unwrap_err();
        assert!(never.message().contains("never issued"), "{never}");
        let zero = registry.read(0, |v| Ok(*v)).unwrap_err();
        assert_eq!(zero.status(), Status::BadHandle);
    }

    #[test]
    fn a_panic_poisons_only_its_handle() {
        let registry: Registry<u32> = Registry::new("number");
        let (a, b) = (registry.insert(1), registry.insert(2));
        let error = registry
            .read(a, |_| -> Result<(), FfiError> {
                panic!("in the operation")
            })
            .unwrap_err();
        assert_eq!(error.status(), Status::Panic);
        let error = registry.read(a, |v| Ok(*v)).unwrap_err();
        assert_eq!(error.status(), Status::Poisoned);
        assert_eq!(
            registry.write(a, |v| Ok(*v)).unwrap_err().status(),
            Status::Poisoned
        );
        assert_eq!(registry.read(b, |v| Ok(*v)).unwrap(), 2);
        let closed = registry.remove(a).unwrap();
        assert!(closed.poisoned);
        assert!(!registry.remove(b).unwrap().poisoned);
    }
}

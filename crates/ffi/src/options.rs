//! [`UbtOptions`], the C view of the engine's `Options`, and
//! `ubt_options_default`.

use ubt_engine::{Options, ReadBackendChoice, SyncMode};

use crate::error::FfiError;
use crate::guard;
use crate::ptr::Out;

/// `sync_mode`: every commit syncs its WAL record before returning (an
/// acknowledged commit survives power loss). The default.
pub const UBT_SYNC_ALWAYS: u8 = 0;
/// `sync_mode`: commits write their WAL record without syncing (a process
/// crash loses nothing; a power loss may lose the latest commits, and the
/// database reopens at an earlier consistent commit). Checkpoints sync.
pub const UBT_SYNC_NEVER: u8 = 1;

/// `read_backend`: io_uring when the kernel allows it, else a thread pool
/// of `pread`s. The default.
pub const UBT_READ_BACKEND_AUTO: u8 = 0;
/// `read_backend`: always the thread pool of `pread`s.
pub const UBT_READ_BACKEND_THREAD_POOL: u8 = 1;

/// How to open a database. Fill it with `ubt_options_default`, then change
/// the fields that matter; flags are 0 or 1 (other values are
/// `UBT_ERR_INVALID_ARGUMENT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UbtOptions {
    /// Memory for caches and unflushed changes, in bytes (default 1 GiB).
    /// The upper trie (about 2.5 bytes per stored value) is resident on
    /// top of it.
    pub memory_budget_bytes: u64,
    /// WAL size that triggers a checkpoint, in bytes (default 256 MiB;
    /// 1 byte to 1 GiB).
    pub wal_bytes_max: u64,
    /// How many of the latest persisted blocks can be reverted (default
    /// 128).
    pub revert_depth: u64,
    /// Group depth (1 to 8) of the upper-trie pages, fixed when the
    /// database is created; 0 accepts the stored one (6 when creating).
    /// A non-zero value must equal the stored one.
    pub group_depth: u8,
    /// 1: create an empty database if the directory holds none (default);
    /// 0: fail with `UBT_ERR_NOT_FOUND`. Ignored by read-only opens.
    pub create_if_missing: u8,
    /// 1: when creating, keep a flat index of account values (reads of an
    /// account's values share leaves; every write must then name its
    /// account: `ubt_db_apply_accounts`). Ignored when the database
    /// exists. Default 0.
    pub flat_index: u8,
    /// `UBT_SYNC_ALWAYS` (default) or `UBT_SYNC_NEVER`.
    pub sync_mode: u8,
    /// `UBT_READ_BACKEND_AUTO` (default) or `UBT_READ_BACKEND_THREAD_POOL`.
    pub read_backend: u8,
    /// 1: read the data file around the page cache (`O_DIRECT`) where the
    /// file system allows it, so a bucket missing from the engine's cache
    /// costs one device read and is not cached twice; give the engine the
    /// memory the page cache would have used. Default 0.
    pub direct_reads: u8,
    /// Bucket capacity in bytes, fixed when the database is created: a
    /// power of two from 4096 to 65536; 0 accepts the stored one (4096
    /// when creating). A non-zero value must equal the stored one. Larger
    /// buckets shrink the resident upper trie in proportion and cost more
    /// bytes read and rewritten per changed bucket.
    pub bucket_bytes: u64,
}

/// A 0/1 flag field as a `bool`.
fn flag(value: u8, name: &str) -> Result<bool, FfiError> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(FfiError::invalid(format!(
            "options.{name} must be 0 or 1, not {other}"
        ))),
    }
}

/// A `u64` field as a `usize`.
fn size(value: u64, name: &str) -> Result<usize, FfiError> {
    usize::try_from(value).map_err(|_| {
        FfiError::invalid(format!(
            "options.{name} ({value}) does not fit this platform's size_t"
        ))
    })
}

impl UbtOptions {
    /// The engine's defaults.
    pub fn defaults() -> UbtOptions {
        let options = Options::default();
        UbtOptions {
            memory_budget_bytes: u64::try_from(options.memory_budget_bytes).unwrap_or(u64::MAX),
            wal_bytes_max: options.wal_bytes_max,
            revert_depth: u64::try_from(options.revert_depth).unwrap_or(u64::MAX),
            group_depth: options.group_depth.unwrap_or(0),
            create_if_missing: u8::from(options.create_if_missing),
            flat_index: u8::from(options.flat_index),
            sync_mode: match options.sync {
                SyncMode::Always => UBT_SYNC_ALWAYS,
                SyncMode::Never => UBT_SYNC_NEVER,
            },
            read_backend: match options.read_backend {
                ReadBackendChoice::Auto => UBT_READ_BACKEND_AUTO,
                ReadBackendChoice::ThreadPool => UBT_READ_BACKEND_THREAD_POOL,
            },
            direct_reads: u8::from(options.direct_reads),
            bucket_bytes: options
                .bucket_bytes
                .map_or(0, |b| u64::try_from(b).unwrap_or(u64::MAX)),
        }
    }

    /// The engine's options; ranges the engine checks (group depth, WAL
    /// size) are left to it.
    pub(crate) fn to_engine(self) -> Result<Options, FfiError> {
        let options = self;
        let sync = match options.sync_mode {
            UBT_SYNC_ALWAYS => SyncMode::Always,
            UBT_SYNC_NEVER => SyncMode::Never,
            other => {
                return Err(FfiError::invalid(format!(
                    "options.sync_mode must be UBT_SYNC_ALWAYS or UBT_SYNC_NEVER, not {other}"
                )))
            }
        };
        let read_backend = match options.read_backend {
            UBT_READ_BACKEND_AUTO => ReadBackendChoice::Auto,
            UBT_READ_BACKEND_THREAD_POOL => ReadBackendChoice::ThreadPool,
            other => {
                return Err(FfiError::invalid(format!(
                    "options.read_backend must be UBT_READ_BACKEND_AUTO or \
                     UBT_READ_BACKEND_THREAD_POOL, not {other}"
                )))
            }
        };
        Ok(Options {
            group_depth: (options.group_depth != 0).then_some(options.group_depth),
            memory_budget_bytes: size(options.memory_budget_bytes, "memory_budget_bytes")?,
            sync,
            create_if_missing: flag(options.create_if_missing, "create_if_missing")?,
            read_backend,
            wal_bytes_max: options.wal_bytes_max,
            revert_depth: size(options.revert_depth, "revert_depth")?,
            read_only: false,
            flat_index: flag(options.flat_index, "flat_index")?,
            direct_reads: flag(options.direct_reads, "direct_reads")?,
            bucket_bytes: match options.bucket_bytes {
                0 => None,
                bytes => Some(size(bytes, "bucket_bytes")?),
            },
        })
    }
}

/// Fills `*options_out` with the engine's default options.
///
/// # Safety
///
/// `options_out` is null or valid for writing one `UbtOptions`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_options_default(options_out: *mut UbtOptions) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract: null or one writable UbtOptions.
        let out = unsafe { Out::new(options_out, "options_out") }?;
        out.write(UbtOptions::defaults());
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn defaults_convert_to_the_engine_defaults() {
        let options = UbtOptions::defaults().to_engine().unwrap();
        let engine = Options::default();
        assert_eq!(options.group_depth, engine.group_depth);
        assert_eq!(options.memory_budget_bytes, engine.memory_budget_bytes);
        assert_eq!(options.sync, engine.sync);
        assert_eq!(options.create_if_missing, engine.create_if_missing);
        assert_eq!(options.read_backend, engine.read_backend);
        assert_eq!(options.wal_bytes_max, engine.wal_bytes_max);
        assert_eq!(options.revert_depth, engine.revert_depth);
        assert_eq!(options.flat_index, engine.flat_index);
        assert_eq!(options.direct_reads, engine.direct_reads);
        assert_eq!(options.bucket_bytes, engine.bucket_bytes);
    }

    #[test]
    fn fields_convert() {
        let options = UbtOptions {
            group_depth: 4,
            sync_mode: UBT_SYNC_NEVER,
            read_backend: UBT_READ_BACKEND_THREAD_POOL,
            flat_index: 1,
            create_if_missing: 0,
            revert_depth: 9,
            direct_reads: 1,
            bucket_bytes: 8192,
            ..UbtOptions::defaults()
        }
        .to_engine()
        .unwrap();
        assert_eq!(options.group_depth, Some(4));
        assert_eq!(options.sync, SyncMode::Never);
        assert_eq!(options.read_backend, ReadBackendChoice::ThreadPool);
        assert!(options.flat_index);
        assert!(!options.create_if_missing);
        assert_eq!(options.revert_depth, 9);
        assert!(options.direct_reads);
        assert_eq!(options.bucket_bytes, Some(8192));
    }

    #[test]
    fn out_of_range_fields_are_invalid_arguments() {
        let bad = [
            UbtOptions {
                create_if_missing: 2,
                ..UbtOptions::defaults()
            },
            UbtOptions {
                flat_index: 255,
                ..UbtOptions::defaults()
            },
            UbtOptions {
                direct_reads: 2,
                ..UbtOptions::defaults()
            },
            UbtOptions {
                sync_mode: 2,
                ..UbtOptions::defaults()
            },
            UbtOptions {
                read_backend: 9,
                ..UbtOptions::defaults()
            },
        ];
        for options in bad {
            let error = options.to_engine().unwrap_err();
            assert_eq!(error.status(), Status::InvalidArgument, "{error}");
        }
    }
}

//! Blocks on a database handle: apply (tree-key or account-level writes),
//! persist, commit, revert, checkpoint, and the roots they move.

use alloy_primitives::B256;

use crate::db::DATABASES;
use crate::guard;
use crate::ops::{account_batch, UbtAccountOp};
use crate::ptr::{read, read_array, Out};
use crate::types::{UbtBytes32, UbtWrite};

/// Applies a block of `n_writes` tree-key writes (in order; a later write
/// to a key wins) as a new layer in memory and writes its root to
/// `*root_out`. Nothing reaches the disk until `ubt_db_persist` or
/// `ubt_db_commit`. `writes` may be NULL when `n_writes` is 0.
///
/// Fails with `UBT_ERR_OWNERS_REQUIRED` on a database with a flat index
/// (use `ubt_db_apply_accounts`), `UBT_ERR_BLOCK_TOO_LARGE` past the most
/// one block may hold (about 16.7 million writes), `UBT_ERR_READ_ONLY` on
/// a read-only handle.
///
/// # Safety
///
/// `writes` is null or valid for reading `n_writes` `UbtWrite`s;
/// `root_out` is null or valid for writing one `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_apply(
    db: u64,
    writes: *const UbtWrite,
    n_writes: usize,
    root_out: *mut UbtBytes32,
) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let (writes, root_out) = unsafe {
            (
                read_array(writes, n_writes, "writes")?,
                Out::new(root_out, "root_out")?,
            )
        };
        let writes: Vec<(B256, B256)> = writes.into_iter().map(Into::into).collect();
        let root = DATABASES.write(db, |db| Ok(db.apply(&writes)?))?;
        root_out.write(root.into());
        Ok(())
    })
}

/// Applies a block of `n_ops` account-level writes (in order, with
/// go-ethereum's semantics: see the `UBT_OP_*` kinds) as one new layer,
/// like `ubt_db_apply` with their tree-key writes, and writes its root to
/// `*root_out`. Works with and without a flat index.
///
/// The code of every `UBT_OP_SET_CODE` operation is its range
/// `[code_offset, code_offset + code_len)` of the `code_buffer_len` bytes
/// at `code_buffer` (operations may share ranges). An invalid operation
/// (unknown kind, a range beyond the buffer) fails the whole block before
/// anything is applied. `ops` may be NULL when `n_ops` is 0,
/// `code_buffer` when `code_buffer_len` is 0.
///
/// # Safety
///
/// `ops` is null or valid for reading `n_ops` `UbtAccountOp`s;
/// `code_buffer` is null or valid for reading `code_buffer_len` bytes;
/// `root_out` is null or valid for writing one `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_apply_accounts(
    db: u64,
    ops: *const UbtAccountOp,
    n_ops: usize,
    code_buffer: *const u8,
    code_buffer_len: usize,
    root_out: *mut UbtBytes32,
) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let (ops, code, root_out) = unsafe {
            (
                read_array(ops, n_ops, "ops")?,
                read_array(code_buffer, code_buffer_len, "code_buffer")?,
                Out::new(root_out, "root_out")?,
            )
        };
        let batch = account_batch(&ops, &code)?;
        let root = DATABASES.write(db, |db| Ok(db.apply_accounts(&batch)?))?;
        root_out.write(root.into());
        Ok(())
    })
}

/// Makes the layers up to the one with root `*root` durable, as one WAL
/// record (synced with `UBT_SYNC_ALWAYS`). `UBT_ERR_UNKNOWN_ROOT` when no
/// layer in memory has that root.
///
/// # Safety
///
/// `root` is null or points to a readable `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_persist(db: u64, root: *const UbtBytes32) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let root = B256::from(unsafe { read(root, "root") }?);
        DATABASES.write(db, |db| Ok(db.persist(&root)?))
    })
}

/// Makes every layer durable and writes the root to `*root_out`.
///
/// # Safety
///
/// `root_out` is null or valid for writing one `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_commit(db: u64, root_out: *mut UbtBytes32) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let root_out = unsafe { Out::new(root_out, "root_out") }?;
        let root = DATABASES.write(db, |db| Ok(db.commit()?))?;
        root_out.write(root.into());
        Ok(())
    })
}

/// Reverts to the block with root `*root`: a layer in memory, or one of
/// the last `revert_depth` persisted blocks (durable on return when
/// persisted blocks are undone). Readers at reverted roots then fail with
/// `UBT_ERR_SNAPSHOT_REVERTED`. `UBT_ERR_UNKNOWN_ROOT` when no block
/// within reach has that root (older than the revert window included);
/// nothing changes then.
///
/// # Safety
///
/// `root` is null or points to a readable `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_revert(db: u64, root: *const UbtBytes32) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let root = B256::from(unsafe { read(root, "root") }?);
        DATABASES.write(db, |db| Ok(db.revert(&root)?))
    })
}

/// Persists every layer and writes changed buckets and pages to the data
/// file now (a checkpoint; also done by `ubt_db_close` and when the WAL
/// reaches `wal_bytes_max`).
#[allow(unsafe_code)] // `no_mangle`: the symbol is the ABI.
#[no_mangle]
pub extern "C" fn ubt_db_checkpoint(db: u64) -> i32 {
    guard::call(|| DATABASES.write(db, |db| Ok(db.checkpoint()?)))
}

/// Writes the root of everything applied (the tip) to `*root_out`.
///
/// # Safety
///
/// `root_out` is null or valid for writing one `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_root(db: u64, root_out: *mut UbtBytes32) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let root_out = unsafe { Out::new(root_out, "root_out") }?;
        let root = DATABASES.read(db, |db| Ok(db.root()))?;
        root_out.write(root.into());
        Ok(())
    })
}

/// Writes the root of the last persisted layer to `*root_out`.
///
/// # Safety
///
/// `root_out` is null or valid for writing one `UbtBytes32`.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointer.
#[no_mangle]
pub unsafe extern "C" fn ubt_db_committed_root(db: u64, root_out: *mut UbtBytes32) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let root_out = unsafe { Out::new(root_out, "root_out") }?;
        let root = DATABASES.read(db, |db| Ok(db.committed_root()))?;
        root_out.write(root.into());
        Ok(())
    })
}

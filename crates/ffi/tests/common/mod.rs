//! What the ABI's integration tests share: temporary directories,
//! deterministic test data, and safe wrappers over the C functions (one
//! unsafe block each, the pointers all borrowed from live Rust values)
//! that return the status and the last error message on failure.
#![allow(dead_code, unsafe_code)]

use std::ffi::{c_char, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_engine::{Account, AccountOp};
use ubt_ffi::*;

/// A fresh empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory whose name holds `label`.
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("ubt-ffi-{label}-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// The directory as a C string.
    pub fn c_path(&self) -> CString {
        CString::new(self.0.to_str().unwrap()).unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A failed call: its status and the thread's last error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

/// The outcome of a call.
pub type Outcome<T> = Result<T, Failure>;

/// `value` if `status` is `UBT_OK`, else the failure.
pub fn outcome<T>(status: i32, value: T) -> Outcome<T> {
    if status == UBT_OK {
        assert_eq!(last_error(), "", "a success clears the message");
        Ok(value)
    } else {
        Err(Failure {
            code: status,
            message: last_error(),
        })
    }
}

/// The status of a failed outcome (fails the test on success).
pub fn status_of<T: std::fmt::Debug>(result: Outcome<T>) -> i32 {
    result.unwrap_err().code
}

/// This thread's last error message.
pub fn last_error() -> String {
    let mut len = 0usize;
    // SAFETY: capacity 0 with a null buffer; a live length slot.
    let status = unsafe { ubt_last_error_message(std::ptr::null_mut(), 0, &mut len) };
    assert_eq!(status, UBT_OK);
    let mut buf = vec![0 as c_char; len + 1];
    // SAFETY: `buf` holds `len + 1` bytes.
    let status = unsafe { ubt_last_error_message(buf.as_mut_ptr(), buf.len(), &mut len) };
    assert_eq!(status, UBT_OK);
    let bytes: Vec<u8> = buf[..len].iter().map(|c| c.to_ne_bytes()[0]).collect();
    String::from_utf8(bytes).unwrap()
}

/// Deterministic 32-byte words: `word(seed, i)`.
pub fn word(seed: u64, i: u64) -> B256 {
    let mut bytes = [0u8; 32];
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i;
    for chunk in bytes.chunks_mut(8) {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_be_bytes());
    }
    B256::from(bytes)
}

/// Options for small test databases.
pub fn small_options() -> UbtOptions {
    let mut options = UbtOptions::defaults();
    options.memory_budget_bytes = 8 << 20;
    options.sync_mode = UBT_SYNC_NEVER;
    options
}

/// Opens `dir` for writing.
pub fn open(dir: &TempDir, options: Option<&UbtOptions>) -> Outcome<u64> {
    let (path, mut db) = (dir.c_path(), 0);
    let options = options.map_or(std::ptr::null(), |o| o as *const UbtOptions);
    // SAFETY: a NUL-terminated path, null or live options, a live slot.
    let status = unsafe { ubt_db_open(path.as_ptr(), options, &mut db) };
    outcome(status, db)
}

/// Opens `dir` read-only.
pub fn open_read_only(dir: &TempDir, options: Option<&UbtOptions>) -> Outcome<u64> {
    let (path, mut db) = (dir.c_path(), 0);
    let options = options.map_or(std::ptr::null(), |o| o as *const UbtOptions);
    // SAFETY: a NUL-terminated path, null or live options, a live slot.
    let status = unsafe { ubt_db_open_read_only(path.as_ptr(), options, &mut db) };
    outcome(status, db)
}

/// Closes a database handle.
pub fn close(db: u64) -> Outcome<()> {
    outcome(ubt_db_close(db), ())
}

/// Applies tree-key writes.
pub fn apply(db: u64, writes: &[(B256, B256)]) -> Outcome<B256> {
    let writes: Vec<UbtWrite> = writes
        .iter()
        .map(|(key, value)| UbtWrite {
            key: (*key).into(),
            value: (*value).into(),
        })
        .collect();
    let mut root = UbtBytes32::default();
    // SAFETY: `writes` and `root` are live for the call.
    let status = unsafe { ubt_db_apply(db, writes.as_ptr(), writes.len(), &mut root) };
    outcome(status, root.into())
}

/// Applies account-level operations.
pub fn apply_accounts(db: u64, ops: &[Op]) -> Outcome<B256> {
    let (ops, code) = ffi_ops(ops);
    let mut root = UbtBytes32::default();
    // SAFETY: `ops`, `code` and `root` are live for the call.
    let status = unsafe {
        ubt_db_apply_accounts(
            db,
            ops.as_ptr(),
            ops.len(),
            code.as_ptr(),
            code.len(),
            &mut root,
        )
    };
    outcome(status, root.into())
}

/// Persists up to `root`.
pub fn persist(db: u64, root: &B256) -> Outcome<()> {
    let root = UbtBytes32::from(*root);
    // SAFETY: a live root.
    outcome(unsafe { ubt_db_persist(db, &root) }, ())
}

/// Commits every layer.
pub fn commit(db: u64) -> Outcome<B256> {
    let mut root = UbtBytes32::default();
    // SAFETY: a live slot.
    let status = unsafe { ubt_db_commit(db, &mut root) };
    outcome(status, root.into())
}

/// Reverts to `root`.
pub fn revert(db: u64, root: &B256) -> Outcome<()> {
    let root = UbtBytes32::from(*root);
    // SAFETY: a live root.
    outcome(unsafe { ubt_db_revert(db, &root) }, ())
}

/// The tip's root.
pub fn tip_root(db: u64) -> Outcome<B256> {
    let mut root = UbtBytes32::default();
    // SAFETY: a live slot.
    let status = unsafe { ubt_db_root(db, &mut root) };
    outcome(status, root.into())
}

/// The last persisted root.
pub fn committed_root(db: u64) -> Outcome<B256> {
    let mut root = UbtBytes32::default();
    // SAFETY: a live slot.
    let status = unsafe { ubt_db_committed_root(db, &mut root) };
    outcome(status, root.into())
}

/// The database's statistics.
pub fn stats(db: u64) -> Outcome<UbtStats> {
    let mut stats = UbtStats::default();
    // SAFETY: a live slot.
    let status = unsafe { ubt_db_stats(db, &mut stats) };
    outcome(status, stats)
}

/// Opens a reader at `root`.
pub fn reader(db: u64, root: &B256) -> Outcome<u64> {
    let (root, mut reader) = (UbtBytes32::from(*root), 0);
    // SAFETY: a live root and slot.
    let status = unsafe { ubt_db_reader(db, &root, &mut reader) };
    outcome(status, reader)
}

/// Closes a reader.
pub fn reader_close(reader: u64) -> Outcome<()> {
    outcome(ubt_reader_close(reader), ())
}

/// A reader's root.
pub fn reader_root(reader: u64) -> Outcome<B256> {
    let mut root = UbtBytes32::default();
    // SAFETY: a live slot.
    let status = unsafe { ubt_reader_root(reader, &mut root) };
    outcome(status, root.into())
}

/// What a read is made against: a database at its tip, or a reader.
#[derive(Clone, Copy, Debug)]
pub enum At {
    Tip(u64),
    Reader(u64),
}

/// The value at `key`.
pub fn get(at: At, key: &B256) -> Outcome<Option<B256>> {
    let (key, mut value, mut found) = (UbtBytes32::from(*key), UbtBytes32::default(), 9u8);
    // SAFETY: live key and slots.
    let status = unsafe {
        match at {
            At::Tip(db) => ubt_db_get(db, &key, &mut value, &mut found),
            At::Reader(reader) => ubt_reader_get(reader, &key, &mut value, &mut found),
        }
    };
    outcome(status, ()).map(|()| found_value(found, value))
}

/// `Some(value)` for found 1, `None` (and a zero value) for found 0.
fn found_value(found: u8, value: UbtBytes32) -> Option<B256> {
    match found {
        1 => Some(value.into()),
        0 => {
            assert_eq!(value, UbtBytes32::default(), "absent values are zeros");
            None
        }
        other => panic!("found flag {other}"),
    }
}

/// The values at `keys`.
pub fn get_many(at: At, keys: &[B256]) -> Outcome<Vec<Option<B256>>> {
    let keys: Vec<UbtBytes32> = keys.iter().map(|k| (*k).into()).collect();
    let mut values = vec![UbtBytes32 { bytes: [0xee; 32] }; keys.len()];
    let mut found = vec![9u8; keys.len()];
    let (k, n, v, f) = (
        keys.as_ptr(),
        keys.len(),
        values.as_mut_ptr(),
        found.as_mut_ptr(),
    );
    // SAFETY: three live arrays of `n` items.
    let status = unsafe {
        match at {
            At::Tip(db) => ubt_db_get_many(db, k, n, v, f),
            At::Reader(reader) => ubt_reader_get_many(reader, k, n, v, f),
        }
    };
    outcome(status, ()).map(|()| {
        found
            .into_iter()
            .zip(values)
            .map(|(found, value)| found_value(found, value))
            .collect()
    })
}

/// The account at `address`.
pub fn account(at: At, address: &Address) -> Outcome<Option<Account>> {
    let address = UbtAddress::from(*address);
    let (mut account, mut found) = (UbtAccount::default(), 9u8);
    // SAFETY: a live address and slots.
    let status = unsafe {
        match at {
            At::Tip(db) => ubt_db_account(db, &address, &mut account, &mut found),
            At::Reader(r) => ubt_reader_account(r, &address, &mut account, &mut found),
        }
    };
    outcome(status, ()).map(|()| match found {
        1 => Some(account.into()),
        0 => {
            assert_eq!(account, UbtAccount::default(), "absent accounts are zeros");
            None
        }
        other => panic!("found flag {other}"),
    })
}

/// Storage slot `slot` of `address`.
pub fn storage(at: At, address: &Address, slot: &U256) -> Outcome<Option<B256>> {
    let (address, slot) = (UbtAddress::from(*address), UbtBytes32::from(*slot));
    let (mut value, mut found) = (UbtBytes32::default(), 9u8);
    // SAFETY: live inputs and slots.
    let status = unsafe {
        match at {
            At::Tip(db) => ubt_db_storage(db, &address, &slot, &mut value, &mut found),
            At::Reader(r) => ubt_reader_storage(r, &address, &slot, &mut value, &mut found),
        }
    };
    outcome(status, ()).map(|()| found_value(found, value))
}

/// Copies a library buffer and frees it.
pub fn take_bytes(mut bytes: UbtBytes) -> Vec<u8> {
    let copy = if bytes.len == 0 {
        assert!(bytes.data.is_null(), "an empty buffer has data NULL");
        Vec::new()
    } else {
        // SAFETY: a buffer handed out by the library: `len` readable bytes.
        unsafe { std::slice::from_raw_parts(bytes.data, bytes.len) }.to_vec()
    };
    // SAFETY: a live UbtBytes.
    assert_eq!(unsafe { ubt_bytes_free(&mut bytes) }, UBT_OK);
    assert_eq!(bytes, UbtBytes::EMPTY, "free empties the struct");
    copy
}

/// The code of `address`.
pub fn code(at: At, address: &Address) -> Outcome<Option<Vec<u8>>> {
    let address = UbtAddress::from(*address);
    let (mut bytes, mut found) = (UbtBytes::EMPTY, 9u8);
    // SAFETY: a live address and slots.
    let status = unsafe {
        match at {
            At::Tip(db) => ubt_db_code(db, &address, &mut bytes, &mut found),
            At::Reader(r) => ubt_reader_code(r, &address, &mut bytes, &mut found),
        }
    };
    outcome(status, ()).map(|()| {
        let code = take_bytes(bytes);
        (found == 1).then_some(code)
    })
}

/// The canonical bytes of a multiproof of `keys`.
pub fn prove(at: At, keys: &[B256]) -> Outcome<Vec<u8>> {
    let keys: Vec<UbtBytes32> = keys.iter().map(|k| (*k).into()).collect();
    let mut proof = UbtBytes::EMPTY;
    // SAFETY: a live key array and slot.
    let status = unsafe {
        match at {
            At::Tip(db) => ubt_db_prove(db, keys.as_ptr(), keys.len(), &mut proof),
            At::Reader(r) => ubt_reader_prove(r, keys.as_ptr(), keys.len(), &mut proof),
        }
    };
    outcome(status, ()).map(|()| take_bytes(proof))
}

/// Verifies `proof` against `root`, reading `keys`.
pub fn verify(proof: &[u8], root: &B256, keys: &[B256]) -> Outcome<Vec<Option<B256>>> {
    let root = UbtBytes32::from(*root);
    let keys: Vec<UbtBytes32> = keys.iter().map(|k| (*k).into()).collect();
    let mut values = vec![UbtBytes32::default(); keys.len()];
    let mut found = vec![9u8; keys.len()];
    // SAFETY: live arrays of the lengths given.
    let status = unsafe {
        ubt_verify_proof(
            proof.as_ptr(),
            proof.len(),
            &root,
            keys.as_ptr(),
            keys.len(),
            values.as_mut_ptr(),
            found.as_mut_ptr(),
        )
    };
    outcome(status, ()).map(|()| {
        found
            .into_iter()
            .zip(values)
            .map(|(found, value)| found_value(found, value))
            .collect()
    })
}

/// An account-level operation, convertible both to the C struct and to
/// the engine's `AccountOp`.
#[derive(Clone, Debug)]
pub enum Op {
    SetAccount(Address, Account),
    SetStorage(Address, U256, B256),
    DeleteStorage(Address, U256),
    SetCode(Address, Vec<u8>),
    DeleteAccount(Address),
}

/// The C structs of `ops` and their code buffer (every `SetCode`'s code,
/// one after the other).
pub fn ffi_ops(ops: &[Op]) -> (Vec<UbtAccountOp>, Vec<u8>) {
    let mut code_buffer = Vec::new();
    let structs = ops
        .iter()
        .map(|op| {
            let mut out = UbtAccountOp::default();
            match op {
                Op::SetAccount(address, account) => {
                    out.kind = UBT_OP_SET_ACCOUNT;
                    out.address = (*address).into();
                    out.account = (*account).into();
                }
                Op::SetStorage(address, slot, value) => {
                    out.kind = UBT_OP_SET_STORAGE;
                    out.address = (*address).into();
                    out.slot = (*slot).into();
                    out.value = (*value).into();
                }
                Op::DeleteStorage(address, slot) => {
                    out.kind = UBT_OP_DELETE_STORAGE;
                    out.address = (*address).into();
                    out.slot = (*slot).into();
                }
                Op::SetCode(address, code) => {
                    out.kind = UBT_OP_SET_CODE;
                    out.address = (*address).into();
                    out.code_offset = code_buffer.len();
                    out.code_len = code.len();
                    code_buffer.extend_from_slice(code);
                }
                Op::DeleteAccount(address) => {
                    out.kind = UBT_OP_DELETE_ACCOUNT;
                    out.address = (*address).into();
                }
            }
            out
        })
        .collect();
    (structs, code_buffer)
}

impl Op {
    /// The engine's operation.
    pub fn to_engine(&self) -> AccountOp {
        match self.clone() {
            Op::SetAccount(address, account) => AccountOp::SetAccount { address, account },
            Op::SetStorage(address, slot, value) => AccountOp::SetStorage {
                address,
                slot,
                value,
            },
            Op::DeleteStorage(address, slot) => AccountOp::DeleteStorage { address, slot },
            Op::SetCode(address, code) => AccountOp::SetCode {
                address,
                code: Bytes::from(code),
            },
            Op::DeleteAccount(address) => AccountOp::DeleteAccount { address },
        }
    }
}

/// A contract-like account: nonce, balance, code size and code hash from
/// `seed`.
pub fn account_of(seed: u64, code_size: u32) -> Account {
    Account {
        nonce: seed,
        balance: U256::from(seed) * U256::from(1_000_000_007u64),
        code_size,
        code_hash: word(seed, 0xc0de),
    }
}

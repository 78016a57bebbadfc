//! [`UbtAccountOp`], the C view of the engine's `AccountOp` (one
//! account-level write, with go-ethereum's semantics), and its conversion
//! into an `AccountBatch`.

use alloy_primitives::{Address, Bytes};
use ubt_engine::{AccountBatch, AccountOp};

use crate::error::FfiError;
use crate::types::{UbtAccount, UbtAddress, UbtBytes32};

/// `UbtAccountOp::kind`: go-ethereum's `UpdateAccount`: writes the
/// BasicData leaf (version 0, code size, nonce, balance) and the CodeHash
/// leaf from `account`.
pub const UBT_OP_SET_ACCOUNT: u32 = 1;
/// `UbtAccountOp::kind`: go-ethereum's `UpdateStorage`: writes `value` at
/// storage slot `slot`.
pub const UBT_OP_SET_STORAGE: u32 = 2;
/// `UbtAccountOp::kind`: go-ethereum's `DeleteStorage`: writes 32 zero
/// bytes at storage slot `slot` (a present zero, which hashes differently
/// from an absent slot).
pub const UBT_OP_DELETE_STORAGE: u32 = 3;
/// `UbtAccountOp::kind`: go-ethereum's `UpdateContractCode`: writes the
/// 31-byte chunks of `code`; nothing else (BasicData and CodeHash are
/// `UBT_OP_SET_ACCOUNT`'s; chunks past a shorter new code keep their old
/// values). Empty code writes nothing.
pub const UBT_OP_SET_CODE: u32 = 4;
/// `UbtAccountOp::kind`: go-ethereum's `DeleteAccount`: writes 32 zero
/// bytes to the BasicData and CodeHash leaves only; storage slots and
/// code chunks stay.
pub const UBT_OP_DELETE_ACCOUNT: u32 = 5;

/// One account-level write. `kind` (a `UBT_OP_*` value) says which fields
/// are used; the others are ignored. 0 and unknown kinds are
/// `UBT_ERR_INVALID_ARGUMENT`. The struct holds no pointer: the code of
/// `UBT_OP_SET_CODE` is a range of the code buffer passed beside the
/// operations to `ubt_db_apply_accounts` (so cgo can pass a Go slice of
/// operations as it is).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UbtAccountOp {
    /// One of the `UBT_OP_*` values.
    pub kind: u32,
    /// The account written to (every kind).
    pub address: UbtAddress,
    /// The account header (`UBT_OP_SET_ACCOUNT`).
    pub account: UbtAccount,
    /// The storage slot number, big-endian (`UBT_OP_SET_STORAGE`,
    /// `UBT_OP_DELETE_STORAGE`).
    pub slot: UbtBytes32,
    /// The 32-byte storage value (`UBT_OP_SET_STORAGE`).
    pub value: UbtBytes32,
    /// Where the code starts in the code buffer (`UBT_OP_SET_CODE`).
    pub code_offset: usize,
    /// The code's length in bytes (`UBT_OP_SET_CODE`); the range
    /// `[code_offset, code_offset + code_len)` must lie within the code
    /// buffer.
    pub code_len: usize,
}

/// The engine's operation for `op`, the `index`-th of the block, its code
/// (if any) taken from `code`.
fn account_op(op: &UbtAccountOp, index: usize, code: &[u8]) -> Result<AccountOp, FfiError> {
    let address = Address::from(op.address);
    Ok(match op.kind {
        UBT_OP_SET_ACCOUNT => AccountOp::SetAccount {
            address,
            account: op.account.into(),
        },
        UBT_OP_SET_STORAGE => AccountOp::SetStorage {
            address,
            slot: op.slot.into(),
            value: op.value.into(),
        },
        UBT_OP_DELETE_STORAGE => AccountOp::DeleteStorage {
            address,
            slot: op.slot.into(),
        },
        UBT_OP_SET_CODE => {
            let range = op
                .code_offset
                .checked_add(op.code_len)
                .and_then(|end| code.get(op.code_offset..end))
                .ok_or_else(|| {
                    FfiError::invalid(format!(
                        "ops[{index}] takes code bytes {}..{}+{}, beyond the {} bytes of code",
                        op.code_offset,
                        op.code_offset,
                        op.code_len,
                        code.len()
                    ))
                })?;
            AccountOp::SetCode {
                address,
                code: Bytes::copy_from_slice(range),
            }
        }
        UBT_OP_DELETE_ACCOUNT => AccountOp::DeleteAccount { address },
        other => {
            return Err(FfiError::invalid(format!(
                "ops[{index}].kind is {other}, not one of the UBT_OP_* values"
            )))
        }
    })
}

/// The block of `ops`, in order, their code taken from `code`.
pub(crate) fn account_batch(ops: &[UbtAccountOp], code: &[u8]) -> Result<AccountBatch, FfiError> {
    ops.iter()
        .enumerate()
        .map(|(index, op)| account_op(op, index, code))
        .collect()
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{B256, U256};

    use super::*;
    use crate::status::Status;

    fn op(kind: u32) -> UbtAccountOp {
        UbtAccountOp {
            kind,
            address: UbtAddress { bytes: [7; 20] },
            slot: U256::from(5u8).into(),
            value: B256::repeat_byte(9).into(),
            ..UbtAccountOp::default()
        }
    }

    #[test]
    fn every_kind_converts() {
        let code = [0xfe, 0x60u8, 0x00, 0x5b];
        let set_code = UbtAccountOp {
            code_offset: 1,
            code_len: 3,
            ..op(UBT_OP_SET_CODE)
        };
        let ops = [
            op(UBT_OP_SET_ACCOUNT),
            op(UBT_OP_SET_STORAGE),
            op(UBT_OP_DELETE_STORAGE),
            set_code,
            op(UBT_OP_SET_CODE),
            op(UBT_OP_DELETE_ACCOUNT),
        ];
        let address = Address::repeat_byte(7);
        let mut expected = AccountBatch::new();
        expected
            .set_account(address, ubt_engine::Account::default())
            .set_storage(address, U256::from(5u8), B256::repeat_byte(9))
            .delete_storage(address, U256::from(5u8))
            .set_code(address, code[1..].to_vec())
            .set_code(address, Vec::new())
            .delete_account(address);
        assert_eq!(account_batch(&ops, &code).unwrap(), expected);
    }

    #[test]
    fn unknown_kinds_and_code_beyond_the_buffer_are_refused() {
        for kind in [0, 6, u32::MAX] {
            let error = account_batch(&[op(UBT_OP_SET_ACCOUNT), op(kind)], &[]).unwrap_err();
            assert_eq!(error.status(), Status::InvalidArgument);
            assert!(error.message().starts_with("ops[1].kind"), "{error}");
        }
        for (offset, len) in [(0, 5), (4, 1), (usize::MAX, 2), (1, usize::MAX)] {
            let set_code = UbtAccountOp {
                code_offset: offset,
                code_len: len,
                ..op(UBT_OP_SET_CODE)
            };
            let error = account_batch(&[set_code], &[1, 2, 3, 4]).unwrap_err();
            assert_eq!(error.status(), Status::InvalidArgument);
            assert!(
                error.message().contains("beyond the 4 bytes of code"),
                "{error}"
            );
        }
    }
}

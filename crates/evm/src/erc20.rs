//! The ERC20 token, hand-assembled, with the storage layout of the
//! benchmark studies and gas per call calibrated to their measurements.
//!
//! # Storage layout
//!
//! | slot | content |
//! |---|---|
//! | 0 | `totalSupply` |
//! | 1 | `nextStorageSlot` (unused by the code; part of the studied layout) |
//! | 2 | `balanceOf` mapping: `balanceOf[a]` at `keccak256(pad32(a) ‖ pad32(2))` |
//! | 3 | `allowance` mapping: `allowance[o][s]` at `keccak256(pad32(s) ‖ keccak256(pad32(o) ‖ pad32(3)))` |
//!
//! # Functions
//!
//! * `balanceOf(address) -> uint256` (`0x70a08231`): one SLOAD.
//! * `approve(address spender, uint256 amount) -> bool` (`0x095ea7b3`): one
//!   SSTORE of `allowance[msg.sender][spender] = amount`; no SLOAD, no
//!   event, no checks beyond ABI decoding (as in the studies).
//! * `transfer(address to, uint256 amount) -> bool` (`0xa9059cbb`): two
//!   SLOADs and two SSTOREs; reverts when the sender's balance is short
//!   or the recipient's would overflow.
//! * `allowance(address, address) -> uint256` (`0xdd62ed3e`) and
//!   `totalSupply() -> uint256` (`0x18160ddd`): one SLOAD each.
//!
//! The code is shaped like a compiler's output: free-memory pointer,
//! non-payable check, calldata-length check, selector dispatch in ascending
//! selector order, per-argument calldata-length and address-cleanliness
//! checks, return data written at the free-memory pointer.
//!
//! # Where the gas goes (Osaka, EIP-2929 schedule)
//!
//! One iteration of the [`crate::attack`] loop calling `balanceOf` costs
//! [`BALANCEOF_CALL_GAS`] = 2,722 gas:
//!
//! | part | gas |
//! |---|---|
//! | caller: argument setup, `i += 1`, loop test, its JUMPDEST | 69 |
//! | caller: CALL to a warm address, no value, no memory growth | 100 |
//! | token: prologue (free-memory pointer with 3 words of memory, callvalue, calldata length, selector) | 74 |
//! | token: dispatch to the third selector | 67 |
//! | token: argument length and address checks | 58 |
//! | token: `keccak256` of 64 bytes with its two MSTOREs | 61 |
//! | token: cold SLOAD | 2,100 |
//! | token: return (2 more words of memory, MSTORE, RETURN) | 27 |
//! | calibration pad ([`BALANCEOF_PAD_GAS`]) | 166 |
//!
//! One iteration calling `approve` costs [`APPROVE_CALL_GAS`] = 22,897 gas:
//!
//! | part | gas |
//! |---|---|
//! | caller: as above plus storing `amount = i` | 81 |
//! | caller: CALL | 100 |
//! | token: prologue | 74 |
//! | token: dispatch to the first selector | 23 |
//! | token: argument length and address checks, amount | 64 |
//! | token: two nested `keccak256` with their MSTOREs and stack moves | 124 |
//! | token: SSTORE of a cold, fresh slot (2,100 cold access + 20,000 zero to non-zero) | 22,100 |
//! | token: return `true` | 30 |
//! | calibration pad ([`APPROVE_PAD_GAS`]) | 301 |
//!
//! Without the pads (2,556 and 22,596) the path is what a careful hand
//! would write. The pads stand for what the compiled token the studies
//! measured does beyond it (checked arithmetic, internal calls and their
//! jumps, ABI helpers, zero-address checks); each is an exact burn
//! ([`Asm::burn`]), so the per-call figures equal the published 2,722 and
//! 22,897. `transfer` has no published figure and gets no pad.

use alloy_primitives::{keccak256, Address, Bytes, U256};

use crate::asm::{op, Asm};

/// `balanceOf(address)`.
pub const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
/// `approve(address,uint256)`.
pub const APPROVE: [u8; 4] = [0x09, 0x5e, 0xa7, 0xb3];
/// `transfer(address,uint256)`.
pub const TRANSFER: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];
/// `allowance(address,address)`.
pub const ALLOWANCE: [u8; 4] = [0xdd, 0x62, 0xed, 0x3e];
/// `totalSupply()`.
pub const TOTAL_SUPPLY: [u8; 4] = [0x18, 0x16, 0x0d, 0xdd];

/// Slot of `totalSupply`.
pub const TOTAL_SUPPLY_SLOT: u8 = 0;
/// Slot of `nextStorageSlot`.
pub const NEXT_STORAGE_SLOT: u8 = 1;
/// Slot of the `balanceOf` mapping.
pub const BALANCES_SLOT: u8 = 2;
/// Slot of the `allowance` mapping.
pub const ALLOWANCES_SLOT: u8 = 3;

/// Gas of one `balanceOf` call from the attack loop (published: 2,722).
pub const BALANCEOF_CALL_GAS: u64 = 2_722;
/// Gas of one `approve` call from the attack loop to a fresh slot
/// (published: 22,897).
pub const APPROVE_CALL_GAS: u64 = 22_897;
/// Calibration burn inside `balanceOf`.
pub const BALANCEOF_PAD_GAS: u64 = 166;
/// Calibration burn inside `approve`.
pub const APPROVE_PAD_GAS: u64 = 301;

/// `keccak256(pad32(key) ‖ pad32(slot))`: where a Solidity mapping at
/// `slot` keeps `key`.
pub fn mapping_slot(key: &U256, slot: &U256) -> U256 {
    let mut preimage = [0u8; 64];
    preimage[..32].copy_from_slice(&key.to_be_bytes::<32>());
    preimage[32..].copy_from_slice(&slot.to_be_bytes::<32>());
    U256::from_be_bytes(keccak256(preimage).0)
}

/// The storage slot of `balanceOf[owner]`.
pub fn balance_slot(owner: &Address) -> U256 {
    mapping_slot(&address_word(owner), &U256::from(BALANCES_SLOT))
}

/// The storage slot of `allowance[owner][spender]`.
pub fn allowance_slot(owner: &Address, spender: &Address) -> U256 {
    let inner = mapping_slot(&address_word(owner), &U256::from(ALLOWANCES_SLOT));
    mapping_slot(&address_word(spender), &inner)
}

/// `address(i)`: the low 160 bits of `i`, as the attack loop passes its
/// counter.
pub fn address_of(i: u64) -> Address {
    Address::from_word(U256::from(i).to_be_bytes::<32>().into())
}

fn address_word(address: &Address) -> U256 {
    U256::from_be_slice(address.as_slice())
}

/// Calldata of `balanceOf(owner)`.
pub fn balance_of_calldata(owner: &Address) -> Bytes {
    let mut data = BALANCE_OF.to_vec();
    data.extend_from_slice(&address_word(owner).to_be_bytes::<32>());
    data.into()
}

/// Calldata of `approve(spender, amount)`.
pub fn approve_calldata(spender: &Address, amount: &U256) -> Bytes {
    two_word_calldata(APPROVE, spender, amount)
}

/// Calldata of `transfer(to, amount)`.
pub fn transfer_calldata(to: &Address, amount: &U256) -> Bytes {
    two_word_calldata(TRANSFER, to, amount)
}

/// Calldata of `allowance(owner, spender)`.
pub fn allowance_calldata(owner: &Address, spender: &Address) -> Bytes {
    two_word_calldata(ALLOWANCE, owner, &address_word(spender))
}

fn two_word_calldata(selector: [u8; 4], address: &Address, word: &U256) -> Bytes {
    let mut data = selector.to_vec();
    data.extend_from_slice(&address_word(address).to_be_bytes::<32>());
    data.extend_from_slice(&word.to_be_bytes::<32>());
    data.into()
}

/// The token's runtime bytecode.
pub fn token_code() -> Bytes {
    let mut a = Asm::new();
    // ---- prologue ------------------------------------------------------- stack
    a.push1(0x80).push1(0x40).op(op::MSTORE); //  free-memory pointer = 0x80  []
    a.op(op::CALLVALUE).op(op::DUP1).op(op::ISZERO); //                [v, v==0]
    a.push_label("nonpayable_ok").op(op::JUMPI); //                    [v]
    a.op(op::PUSH0).op(op::DUP1).op(op::REVERT); //   value sent: revert
    a.label("nonpayable_ok").op(op::POP); //                           []
    a.push1(4).op(op::CALLDATASIZE).op(op::LT); //                     [size<4]
    a.push_label("revert").op(op::JUMPI); //   no selector: revert     []
    a.op(op::PUSH0).op(op::CALLDATALOAD).push1(0xe0).op(op::SHR); //   [sel]
                                                                  // ---- dispatch, ascending selectors -------------------------------------
    for (selector, label) in [
        (APPROVE, "approve"),
        (TOTAL_SUPPLY, "total_supply"),
        (BALANCE_OF, "balance_of"),
        (TRANSFER, "transfer"),
        (ALLOWANCE, "allowance"),
    ] {
        a.op(op::DUP1).push(&selector).op(op::EQ); //                  [sel, match]
        a.push_label(label).op(op::JUMPI); //                          [sel]
    }
    a.label("revert").op(op::PUSH0).op(op::DUP1).op(op::REVERT);

    // ---- balanceOf(address owner) -----------------------------------------
    a.label("balance_of"); //                                          [sel]
    require_calldata(&mut a, 1);
    load_address_arg(&mut a, 0); //                                    [sel, owner]
    a.burn(BALANCEOF_PAD_GAS);
    a.op(op::PUSH0).op(op::MSTORE); //          MEM[0..32] = owner     [sel]
    a.push1(BALANCES_SLOT).push1(0x20).op(op::MSTORE); // MEM[32..64] = 2
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256); //                  [sel, key]
    a.op(op::SLOAD); //                                                [sel, balance]
    return_word(&mut a);

    // ---- approve(address spender, uint256 amount) -------------------------
    a.label("approve"); //                                             [sel]
    require_calldata(&mut a, 2);
    load_address_arg(&mut a, 0); //                                    [sel, spender]
    a.push1(0x24).op(op::CALLDATALOAD); //                             [sel, spender, amount]
    a.burn(APPROVE_PAD_GAS);
    a.op(op::CALLER).op(op::PUSH0).op(op::MSTORE); // MEM[0..32] = owner
    a.push1(ALLOWANCES_SLOT).push1(0x20).op(op::MSTORE); // MEM[32..64] = 3
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256); //                  [sel, spender, amount, inner]
    a.push1(0x20).op(op::MSTORE); //            MEM[32..64] = inner    [sel, spender, amount]
    a.op(op::SWAP1).op(op::PUSH0).op(op::MSTORE); // MEM[0..32] = spender [sel, amount]
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256); //                  [sel, amount, key]
    a.op(op::SSTORE); //                        allowance = amount     [sel]
    a.push1(1);
    return_word(&mut a); //                     returns true

    // ---- transfer(address to, uint256 amount) -----------------------------
    a.label("transfer"); //                                            [sel]
    require_calldata(&mut a, 2);
    load_address_arg(&mut a, 0); //                                    [sel, to]
    a.push1(0x24).op(op::CALLDATALOAD); //                             [sel, to, amount]
    a.op(op::CALLER).op(op::PUSH0).op(op::MSTORE); // MEM[0..32] = sender
    a.push1(BALANCES_SLOT).push1(0x20).op(op::MSTORE); // MEM[32..64] = 2
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256); //                  [sel, to, amount, from_key]
    a.op(op::DUP1).op(op::SLOAD); //                                   [.., amount, from_key, from_bal]
    a.op(op::DUP1).op(op::DUP4).op(op::GT); //     amount > from_bal   [.., from_key, from_bal, short]
    a.push_label("revert").op(op::JUMPI); //                           [.., amount, from_key, from_bal]
    a.op(op::DUP3).op(op::SWAP1).op(op::SUB); //   from_bal - amount   [.., amount, from_key, new_from]
    a.op(op::SWAP1).op(op::SSTORE); //                                 [sel, to, amount]
    a.op(op::SWAP1).op(op::PUSH0).op(op::MSTORE); // MEM[0..32] = to   [sel, amount]
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256); //                  [sel, amount, to_key]
    a.op(op::DUP1).op(op::SLOAD); //                                   [sel, amount, to_key, to_bal]
    a.op(op::DUP3).op(op::ADD); //                                     [sel, amount, to_key, new_to]
    a.op(op::DUP1).op(op::DUP4).op(op::GT); //     amount > new_to: overflow
    a.push_label("revert").op(op::JUMPI); //                           [sel, amount, to_key, new_to]
    a.op(op::SWAP1).op(op::SSTORE); //                                 [sel, amount]
    a.op(op::POP).push1(1); //                                         [sel, 1]
    return_word(&mut a); //                     returns true

    // ---- allowance(address owner, address spender) ------------------------
    a.label("allowance"); //                                           [sel]
    require_calldata(&mut a, 2);
    load_address_arg(&mut a, 0); //                                    [sel, owner]
    load_address_arg(&mut a, 1); //                                    [sel, owner, spender]
    a.op(op::SWAP1).op(op::PUSH0).op(op::MSTORE); // MEM[0..32] = owner [sel, spender]
    a.push1(ALLOWANCES_SLOT).push1(0x20).op(op::MSTORE); // MEM[32..64] = 3
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256); //                  [sel, spender, inner]
    a.push1(0x20).op(op::MSTORE); //            MEM[32..64] = inner    [sel, spender]
    a.op(op::PUSH0).op(op::MSTORE); //          MEM[0..32] = spender   [sel]
    a.push1(0x40).op(op::PUSH0).op(op::KECCAK256).op(op::SLOAD); //    [sel, allowance]
    return_word(&mut a);

    // ---- totalSupply() -----------------------------------------------------
    a.label("total_supply"); //                                        [sel]
    a.push1(TOTAL_SUPPLY_SLOT).op(op::SLOAD); //                       [sel, supply]
    return_word(&mut a);

    a.finish().into()
}

/// Reverts unless the calldata holds a selector and `words` argument words.
/// 21 gas.
fn require_calldata(a: &mut Asm, words: u8) {
    a.push1(4 + 32 * words).op(op::CALLDATASIZE).op(op::LT); //        [.., short]
    a.push_label("revert").op(op::JUMPI); //                           [..]
}

/// Pushes argument `index` and reverts unless it is a clean address (its
/// top 96 bits zero). 37 gas.
fn load_address_arg(a: &mut Asm, index: u8) {
    a.push1(4 + 32 * index).op(op::CALLDATALOAD); //                   [.., w]
    a.op(op::DUP1).push(&[0xff; 20]).op(op::AND); //                   [.., w, w & mask]
    a.op(op::DUP2).op(op::EQ).op(op::ISZERO); //                       [.., w, dirty]
    a.push_label("revert").op(op::JUMPI); //                           [.., w]
}

/// Returns the word on top of the stack, written at the free-memory
/// pointer. 33 gas including 2 words of memory growth.
fn return_word(a: &mut Asm) {
    a.push1(0x40).op(op::MLOAD); //                                    [.., v, p]
    a.op(op::SWAP1).op(op::DUP2).op(op::MSTORE); // MEM[p..p+32] = v   [.., p]
    a.push1(0x20).op(op::SWAP1).op(op::RETURN); //  RETURN(p, 32)
}

//! Hand-assembled contracts of the tests.

use alloy_primitives::{Address, Bytes, U256};

/// Runtime of the store contract: writes the second calldata word to the
/// slot named by the first and returns the slot's old value. After its
/// `RETURN`, unreachable `PUSH32` data spreads it over four code chunks
/// (push data crossing chunk boundaries).
pub fn store() -> Bytes {
    store_filled(&[0x5b, 0x60, 0x7f])
}

/// The store contract with other unreachable data (other code, other
/// hash): what the scenario deploys, so its code can only come from its
/// own chunks.
pub fn store_variant() -> Bytes {
    store_filled(&[0x7f, 0x00, 0x61, 0x5b])
}

fn store_filled(fills: &[u8]) -> Bytes {
    let mut code = vec![
        0x60, 0x00, 0x35, // PUSH1 0 CALLDATALOAD: slot
        0x80, 0x54, // DUP1 SLOAD: old value
        0x60, 0x00, 0x52, // PUSH1 0 MSTORE
        0x60, 0x20, 0x35, // PUSH1 32 CALLDATALOAD: new value
        0x90, 0x55, // SWAP1 SSTORE
        0x60, 0x20, 0x60, 0x00, 0xf3, // RETURN(0, 32)
        0x00, // STOP
    ];
    for &fill in fills {
        code.push(0x7f); // PUSH32
        code.extend_from_slice(&[fill; 32]);
    }
    code.into()
}

/// Calldata of the store contract: `slot`, `value`.
pub fn store_call(slot: U256, value: U256) -> Bytes {
    let mut data = slot.to_be_bytes::<32>().to_vec();
    data.extend_from_slice(&value.to_be_bytes::<32>());
    data.into()
}

/// Runtime that returns the code of the account named by its calldata
/// (`EXTCODESIZE`, `EXTCODECOPY`).
pub fn inspect() -> Bytes {
    Bytes::from_static(&[
        0x60, 0x00, 0x35, // PUSH1 0 CALLDATALOAD: address
        0x80, 0x3b, // DUP1 EXTCODESIZE
        0x80, 0x60, 0x00, 0x60, 0x00, 0x84, // DUP1 PUSH1 0 PUSH1 0 DUP5
        0x3c, // EXTCODECOPY(address, 0, 0, size)
        0x60, 0x00, 0xf3, // RETURN(0, size)
    ])
}

/// Calldata naming `address` as one word.
pub fn address_word(address: Address) -> Bytes {
    Bytes::from(address.into_word().0)
}

/// Runtime that returns `BLOCKHASH` of the number in its calldata.
pub fn hasher() -> Bytes {
    Bytes::from_static(&[
        0x60, 0x00, 0x35, 0x40, // PUSH1 0 CALLDATALOAD BLOCKHASH
        0x60, 0x00, 0x52, // PUSH1 0 MSTORE
        0x60, 0x20, 0x60, 0x00, 0xf3, // RETURN(0, 32)
    ])
}

/// Code that self-destructs in favour of `beneficiary` (as runtime, or
/// as init code: then the new account is destroyed in the transaction
/// that creates it).
pub fn self_destruct(beneficiary: Address) -> Bytes {
    let mut code = vec![0x73]; // PUSH20
    code.extend_from_slice(beneficiary.as_slice());
    code.push(0xff); // SELFDESTRUCT
    code.into()
}

/// Runtime that calls (`STATICCALL`, no data) the address in its calldata.
pub fn static_caller() -> Bytes {
    Bytes::from_static(&[
        0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, // out and in: (0, 0)
        0x60, 0x00, 0x35, // PUSH1 0 CALLDATALOAD: address
        0x5a, 0xfa, // GAS STATICCALL
        0x00, // STOP
    ])
}

/// Init code that sets slot 1 to 0x2a and deploys `runtime` (at most 255
/// bytes).
pub fn deploy(runtime: &[u8]) -> Bytes {
    let len = u8::try_from(runtime.len()).expect("runtime under 256 bytes");
    let prefix = [0x60, 0x2a, 0x60, 0x01, 0x55]; // SSTORE(1, 0x2a)
    let offset = u8::try_from(prefix.len() + 12).unwrap();
    let mut code = prefix.to_vec();
    code.extend_from_slice(&[0x60, len, 0x60, offset, 0x60, 0x00, 0x39]); // CODECOPY(0, offset, len)
    code.extend_from_slice(&[0x60, len, 0x60, 0x00, 0xf3]); // RETURN(0, len)
    code.extend_from_slice(runtime);
    code.into()
}

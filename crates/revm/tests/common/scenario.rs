//! The blocks the differential and root tests run: transfers, contract
//! creation, storage writes and clears, an account emptied by a touch,
//! code and block-hash reads, and self-destructs (Osaka: only a contract
//! created in the same transaction is destroyed).

use alloy_primitives::{Address, Bytes, U256};
use revm::context::TxEnv;

use super::code::{
    address_word, deploy, hasher, inspect, self_destruct, store, store_call, store_variant,
};
use super::{tx, Seed};

pub const SENDER: Address = Address::repeat_byte(0x5e);
pub const SENDER2: Address = Address::repeat_byte(0x52);
pub const COINBASE: Address = Address::repeat_byte(0xc0);
pub const RECIPIENT: Address = Address::repeat_byte(0x7e);
pub const NEW_EOA: Address = Address::repeat_byte(0x4e);
pub const NOWHERE: Address = Address::repeat_byte(0x0d);
pub const EMPTY: Address = Address::repeat_byte(0xee);
pub const STORE: Address = Address::repeat_byte(0x57);
pub const INSPECT: Address = Address::repeat_byte(0x1c);
pub const HASHER: Address = Address::repeat_byte(0x4a);
pub const DESTRUCT: Address = Address::repeat_byte(0xde);

/// One ether.
pub fn ether(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

/// The accounts before the first block.
pub fn world() -> Vec<Seed> {
    let mut destruct = Seed::contract(DESTRUCT, self_destruct(RECIPIENT), Vec::new());
    destruct.balance = U256::from(5u64);
    vec![
        Seed::eoa(SENDER, ether(100)),
        Seed::eoa(SENDER2, ether(3)),
        Seed::eoa(COINBASE, U256::from(1u64)),
        Seed::eoa(RECIPIENT, ether(1)),
        Seed::eoa(EMPTY, U256::ZERO),
        Seed::contract(
            STORE,
            store(),
            vec![
                (U256::from(1u64), U256::from(7u64)),
                (U256::from(2u64), U256::from(9u64)),
                (U256::MAX, U256::from(1u64)),
            ],
        ),
        Seed::contract(INSPECT, inspect(), Vec::new()),
        Seed::contract(HASHER, hasher(), Vec::new()),
        destruct,
    ]
}

/// The contract the first block creates (`SENDER`'s fifth transaction).
pub fn created() -> Address {
    SENDER.create(4)
}

/// The contract the third block creates and destroys at once.
pub fn created_and_destroyed() -> Address {
    SENDER.create(12)
}

/// Every account the blocks involve.
pub fn addresses() -> Vec<Address> {
    let mut addresses: Vec<Address> = world().iter().map(|seed| seed.address).collect();
    addresses.extend([NEW_EOA, NOWHERE, created(), created_and_destroyed()]);
    addresses
}

/// The slots the views compare.
pub fn slots() -> Vec<U256> {
    let mut slots: Vec<U256> = (0u64..6).map(U256::from).collect();
    slots.push(U256::MAX);
    slots
}

fn call(from: Address, nonce: u64, to: Address, data: Bytes) -> TxEnv {
    tx(from, nonce, Some(to), U256::ZERO, data)
}

fn set(nonce: u64, contract: Address, slot: u64, value: u64) -> TxEnv {
    let data = store_call(U256::from(slot), U256::from(value));
    call(SENDER, nonce, contract, data)
}

/// The blocks, in order; `SENDER`'s nonces run on across them.
pub fn blocks() -> Vec<Vec<TxEnv>> {
    let block1 = vec![
        tx(SENDER, 0, Some(RECIPIENT), ether(1), Bytes::new()),
        tx(SENDER, 1, Some(NEW_EOA), U256::from(2u64), Bytes::new()),
        set(2, STORE, 3, 0x1234),
        call(
            SENDER2,
            0,
            STORE,
            store_call(U256::from(1u64), U256::from(8u64)),
        ),
        set(3, STORE, 2, 9), // the value it has: no write
        tx(SENDER, 4, None, U256::ZERO, deploy(&store_variant())),
    ];
    let block2 = vec![
        set(5, STORE, 1, 0),
        set(6, STORE, 3, 0),
        tx(SENDER, 7, Some(EMPTY), U256::ZERO, Bytes::new()),
        tx(SENDER, 8, Some(NOWHERE), U256::ZERO, Bytes::new()),
        call(SENDER, 9, INSPECT, address_word(created())),
        call(SENDER, 10, INSPECT, address_word(STORE)),
        call(
            SENDER,
            11,
            HASHER,
            Bytes::from(U256::from(99u64).to_be_bytes::<32>()),
        ),
    ];
    let block3 = vec![
        tx(SENDER, 12, None, U256::from(3u64), self_destruct(RECIPIENT)),
        call(SENDER, 13, DESTRUCT, Bytes::new()),
        set(14, STORE, 4, 1),
        call(SENDER2, 1, STORE, store_call(U256::from(4u64), U256::ZERO)),
        set(15, created(), 1, 0x2b),
        set(16, STORE, u64::MAX, 0),
        call(SENDER, 17, STORE, store_call(U256::MAX, U256::ZERO)),
        call(
            SENDER,
            18,
            HASHER,
            Bytes::from(U256::from(50u64).to_be_bytes::<32>()),
        ),
    ];
    vec![block1, block2, block3]
}

//! Shared setup: a sender, the attack contract and the token, with
//! balances for `address(i)`.

#![allow(dead_code)]

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_evm::erc20::{address_of, balance_slot};
use ubt_evm::workloads::Erc20Actors;
use ubt_evm::{attack, erc20, CodeStore, Executor, MemorySource};
use ubt_spec::StateTree;

/// The accounts every test uses.
pub fn actors() -> Erc20Actors {
    Erc20Actors {
        sender: Address::repeat_byte(0x5e),
        attack: Address::repeat_byte(0xa7),
        token: Address::repeat_byte(0x70),
    }
}

/// The balance `address(i)` holds: `1000 + i`.
pub fn balance_of(i: u64) -> U256 {
    U256::from(1000 + i)
}

/// `tree` with the three accounts and balances for `address(i)`,
/// `i` in `holders`.
pub fn seed<T: StateTree>(tree: T, holders: std::ops::Range<u64>) -> (MemorySource<T>, CodeStore) {
    let actors = actors();
    let mut codes = CodeStore::new();
    let mut source = MemorySource::new(tree);
    let ether = U256::from(10u64).pow(U256::from(18u8));
    source.put_account(&mut codes, &actors.sender, 7, &ether, &Bytes::new());
    source.put_account(
        &mut codes,
        &actors.attack,
        1,
        &U256::ZERO,
        &attack::attack_code(),
    );
    source.put_account(
        &mut codes,
        &actors.token,
        1,
        &U256::ZERO,
        &erc20::token_code(),
    );
    for i in holders {
        let value = B256::from(balance_of(i));
        source.put_slot(&actors.token, &balance_slot(&address_of(i)), &value);
    }
    (source, codes)
}

/// An executor over [`seed`].
pub fn executor<T: StateTree>(tree: T, holders: std::ops::Range<u64>) -> Executor<MemorySource<T>> {
    let (source, codes) = seed(tree, holders);
    Executor::new(source, codes)
}

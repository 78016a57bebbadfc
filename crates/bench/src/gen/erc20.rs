//! The ERC20 token of the studies, as state records: the token with
//! `holders` balances and as many pre-filled allowances, the attack
//! contract, the funded sender, and the bloater wallet that owns the
//! allowances.
//!
//! | account | code | nonce | balance |
//! |---|---|---|---|
//! | token | `ubt_evm::erc20::token_code()` | 1 | 0 |
//! | attack | `ubt_evm::attack::attack_code()` | 1 | 0 |
//! | sender | none | 0 | 1,000,000 ETH |
//! | bloater | none | 1 | 1 ETH |
//!
//! The token's storage: `totalSupply` (slot 0) = `holders * (holders + 1) / 2`,
//! `balanceOf[address(i)] = i` and `allowance[bloater][address(i)] = i` for
//! `i` in `1..=holders` (`address(i)` is `ubt_evm::erc20::address_of`, the
//! counter the attack loop passes). A `balanceOf` block from `start` reads
//! existing balances while `start + calls - 1 <= holders`; an `approve`
//! block from the attack contract writes `allowance[attack][address(i)]`,
//! fresh slots, since the pre-filled allowances belong to the bloater.
//! With no holders the token has no storage at all.
//!
//! The four addresses are random, from the stream `(seed, ERC20, 0)`.

use alloy_primitives::{Address, U256};
use ubt_evm::attack::attack_code;
use ubt_evm::erc20::{address_of, allowance_slot, balance_slot, token_code};
use ubt_spec::chunk::CHUNK_CODE_BYTES;

use super::meta::Erc20Meta;
use super::rng::GenRng;
use super::sink::StateSink;
use super::{tag, Progress, Stage, PROGRESS_EVERY};
use crate::BenchError;

/// One ether in wei.
pub(crate) const ETHER: u128 = 1_000_000_000_000_000_000;

/// The token's accounts for `seed` with `holders` holders.
pub fn erc20_meta(seed: u64, holders: u64) -> Erc20Meta {
    let mut rng = GenRng::stream(seed, tag::ERC20, 0);
    let mut next = || Address::from(rng.bytes20());
    Erc20Meta {
        token: next(),
        attack: next(),
        sender: next(),
        bloater: next(),
        holders,
    }
}

/// Tree entries of the token's state: each account's two header leaves,
/// the two contracts' code chunks, and with holders `totalSupply` plus two
/// slots per holder.
pub fn erc20_entries(holders: u64) -> u64 {
    let chunks = |len: usize| len.div_ceil(CHUNK_CODE_BYTES) as u64;
    let accounts = 4 * 2 + chunks(token_code().len()) + chunks(attack_code().len());
    let slots = if holders > 0 { 1 + 2 * holders } else { 0 };
    accounts + slots
}

/// Writes the token's records; returns the tree entries written.
pub(crate) fn write_erc20(
    out: &mut dyn StateSink,
    meta: &Erc20Meta,
    progress: &mut dyn FnMut(Progress),
    total: u64,
) -> Result<u64, BenchError> {
    let token = meta.token.0 .0;
    out.account(&meta.sender.0 .0, 0, 1_000_000 * ETHER, &[])?;
    out.account(&meta.bloater.0 .0, 1, ETHER, &[])?;
    out.account(&meta.attack.0 .0, 1, 0, &attack_code())?;
    out.account(&token, 1, 0, &token_code())?;
    let holders = meta.holders;
    let mut entries = erc20_entries(0);
    if holders == 0 {
        return Ok(entries);
    }
    let supply = U256::from(holders) * U256::from(holders + 1) / U256::from(2u8);
    out.slot(&token, &[0u8; 32], &supply.to_be_bytes::<32>())?;
    entries += 1;
    for i in 1..=holders {
        let value = U256::from(i).to_be_bytes::<32>();
        let holder = address_of(i);
        out.slot(&token, &balance_slot(&holder).to_be_bytes::<32>(), &value)?;
        let allowance = allowance_slot(&meta.bloater, &holder);
        out.slot(&token, &allowance.to_be_bytes::<32>(), &value)?;
        entries += 2;
        if i % (PROGRESS_EVERY / 2) == 0 {
            progress(Progress::new(Stage::State, entries, total));
        }
    }
    debug_assert_eq!(entries, erc20_entries(holders));
    Ok(entries)
}

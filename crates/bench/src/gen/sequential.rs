//! The sequential-slot contract of the synthetic SLOAD/SSTORE workloads
//! (`ubt_evm::sequential`), as state records: the contract with slots
//! `1..=slots` preset to `slot + 1`. In EIP-7864 the 256 slots
//! `256k..256k+255` share one stem, so these blocks read and write the
//! tree with the best locality it has. Its address is random, from the
//! stream `(seed, SEQUENTIAL, 0)`.

use alloy_primitives::{Address, U256};
use ubt_evm::sequential::{preset_value, sequential_code};
use ubt_spec::chunk::CHUNK_CODE_BYTES;

use super::meta::SequentialMeta;
use super::rng::GenRng;
use super::sink::StateSink;
use super::{tag, Progress, Stage, PROGRESS_EVERY};
use crate::BenchError;

/// The contract's address for `seed`, with `slots` preset slots.
pub fn sequential_meta(seed: u64, slots: u64) -> SequentialMeta {
    let mut rng = GenRng::stream(seed, tag::SEQUENTIAL, 0);
    SequentialMeta {
        contract: Address::from(rng.bytes20()),
        slots,
    }
}

/// Tree entries of the contract: two header leaves, its code chunks and
/// its preset slots.
pub fn sequential_entries(slots: u64) -> u64 {
    2 + sequential_code().len().div_ceil(CHUNK_CODE_BYTES) as u64 + slots
}

/// Writes the contract's records after `before` entries; returns the
/// entries written.
pub(crate) fn write_sequential(
    out: &mut dyn StateSink,
    meta: &SequentialMeta,
    progress: &mut dyn FnMut(Progress),
    before: u64,
    total: u64,
) -> Result<u64, BenchError> {
    let contract = meta.contract.0 .0;
    out.account(&contract, 1, 0, &sequential_code())?;
    for slot in 1..=meta.slots {
        let key = U256::from(slot).to_be_bytes::<32>();
        out.slot(&contract, &key, &preset_value(slot).0)?;
        if slot % PROGRESS_EVERY == 0 {
            progress(Progress::new(Stage::State, before + slot, total));
        }
    }
    Ok(sequential_entries(meta.slots))
}

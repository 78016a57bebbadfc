//! A block's final revm state as an [`AccountBatch`] with go-ethereum's
//! semantics, compared with the values before the block that a
//! [`UbtState`] served. The rules are listed in the crate documentation
//! ("From revm's state to a block"); each function below cites the one it
//! implements.

use alloy_primitives::{Address, U256};
use revm::precompile::{PrecompileSpecId, Precompiles};
use revm::primitives::hardfork::SpecId;
use revm::state::{Account as RevmAccount, Bytecode, EvmState};
use ubt_engine::{Account, AccountBatch};

use crate::state::{effective_code_hash, UbtState};
use crate::Error;

/// What go-ethereum's account deletions depend on that revm's state does
/// not record: geth writes a deletion for an empty account that did not
/// exist before the block when it created it in memory, which it does for
/// the block's beneficiary (paid a fee, even zero) and for precompiles
/// (called), but not for other accounts that a zero-value call reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockContext {
    /// The block's fee recipient (`coinbase`).
    pub beneficiary: Address,
    /// The hardfork the block ran under (its precompiles).
    pub spec: SpecId,
}

impl BlockContext {
    /// The context of a block paying `beneficiary` under `spec`.
    pub fn new(beneficiary: Address, spec: SpecId) -> BlockContext {
        BlockContext { beneficiary, spec }
    }
}

/// The block's changes: every account revm touched or self-destructed, in
/// address order, each with its header, code and slot writes.
pub(crate) fn collect(
    before: &UbtState,
    state: &EvmState,
    block: &BlockContext,
) -> Result<AccountBatch, Error> {
    let precompiles = Precompiles::new(PrecompileSpecId::from_spec_id(block.spec));
    let mut accounts: Vec<(&Address, &RevmAccount)> = state
        .iter()
        .filter(|(_, account)| account.is_touched() || account.is_selfdestructed())
        .collect();
    accounts.sort_unstable_by_key(|(address, _)| *address);
    let mut batch = AccountBatch::new();
    for (address, account) in accounts {
        let prior = before.account(address)?;
        if is_deleted(account) {
            let geth_holds_it = prior.is_some()
                || account.is_selfdestructed()
                || *address == block.beneficiary
                || precompiles.contains(address);
            if geth_holds_it {
                batch.delete_account(*address);
            }
            continue;
        }
        write_account(before, &mut batch, address, account, prior.as_ref())?;
    }
    Ok(batch)
}

/// Rule "deleted": destroyed by `SELFDESTRUCT` (and not created again
/// since), or left empty (EIP-161) after a touch or a destruction earlier
/// in the block.
fn is_deleted(account: &RevmAccount) -> bool {
    account.is_selfdestructed_locally()
        || (account.is_empty() && (account.is_touched() || account.is_selfdestructed()))
}

/// Rules "header", "code" and "slots" for an account that is not deleted.
fn write_account(
    before: &UbtState,
    batch: &mut AccountBatch,
    address: &Address,
    account: &RevmAccount,
    prior: Option<&Account>,
) -> Result<(), Error> {
    // Destroyed earlier in the block and created again: geth takes its
    // slots as zero before the block.
    let recreated = account.is_selfdestructed();
    let mut slots = Vec::new();
    for (slot, value) in &account.storage {
        let prior_value = if recreated {
            U256::ZERO
        } else {
            before.slot(address, slot)?
        };
        if value.present_value != prior_value {
            slots.push((*slot, value.present_value));
        }
    }
    slots.sort_unstable();

    let info = &account.info;
    let header_changed = prior.is_none_or(|prior| {
        prior.nonce != info.nonce
            || prior.balance != info.balance
            || effective_code_hash(prior) != info.code_hash
    });
    if recreated || header_changed || !slots.is_empty() {
        let code = match &info.code {
            Some(code) => code.clone(),
            None => before
                .known_code(&info.code_hash)
                .ok_or(Error::UnknownCodeHash(info.code_hash))?,
        };
        batch.set_account(
            *address,
            Account {
                nonce: info.nonce,
                balance: info.balance,
                code_size: code_size(address, &code)?,
                code_hash: info.code_hash,
            },
        );
        let new_code = prior.is_none_or(|prior| effective_code_hash(prior) != info.code_hash);
        if new_code && !code.is_empty() {
            batch.set_code(*address, code.original_bytes());
        }
    }
    for (slot, value) in slots {
        if value.is_zero() {
            batch.delete_storage(*address, slot);
        } else {
            batch.set_storage(*address, slot, value.into());
        }
    }
    Ok(())
}

/// The code size BasicData records: the code's length.
fn code_size(address: &Address, code: &Bytecode) -> Result<u32, Error> {
    u32::try_from(code.len()).map_err(|_| Error::CodeTooLarge {
        address: *address,
        len: code.len(),
    })
}

//! A block's final state changes: from revm's accumulated state to
//! logical writes (`a:`, `s:`) and to tree-key writes with geth's
//! semantics.
//!
//! What counts as changed, compared with the state before the block (the
//! values the block read):
//!
//! * a slot whose final value differs from its pre-block value: one `s:`
//!   write (a slot set to zero is a write of zero, EIP-7864 keeps the leaf);
//! * an account whose nonce, balance or code hash differs, that is new, or
//!   whose storage changed (geth rewrites the header of every account
//!   whose storage changed): one `a:` write, geth's `UpdateAccount`
//!   (BasicData and CodeHash leaves), plus its code chunks when its code
//!   is new;
//! * an account that self-destructed, or that existed and was left empty
//!   and touched (EIP-161): geth's `DeleteAccount`, which writes zero
//!   BasicData and CodeHash leaves; as a logical write, an `a:` record of
//!   zeros, which has the same effect through `UpdateAccount`.
//!
//! Not mirrored: geth also rewrites the header of an account whose storage
//! changed and changed back within the block, and writes zero headers for
//! a touched empty account that never existed (an empty coinbase). The
//! logical writes cannot carry new code, so engines replaying `writes`
//! alone miss the code chunks of contracts created in the block.

use alloy_primitives::{Address, Bytes, B256, U256};
use revm::primitives::KECCAK_EMPTY;
use revm::state::{Account, EvmState};
use ubt_spec::{AccountWrites, Hash, StateTree};

use crate::db::PreAccount;
use crate::record::WriteRecord;
use crate::state::CodeStore;

/// A block's changes in both forms.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Logical writes, sorted by account, its `a:` before its `s:`.
    pub writes: Vec<WriteRecord>,
    /// Tree-key writes in the same order.
    pub tree_writes: Vec<(B256, B256)>,
    /// The account each tree-key write belongs to, parallel to them.
    pub tree_owners: Vec<Address>,
    /// Accounts with an `a:` write.
    pub accounts_written: usize,
    /// `s:` writes.
    pub slots_written: usize,
}

/// Records the tree writes of the account API for one account: a
/// [`StateTree`] that only keeps the inserts in order, with their owner.
struct WriteLog<'a> {
    changes: &'a mut Changes,
    owner: Address,
}

impl StateTree for WriteLog<'_> {
    fn insert(&mut self, key: B256, value: B256) {
        self.changes.tree_writes.push((key, value));
        self.changes.tree_owners.push(self.owner);
    }

    fn get(&self, _key: &B256) -> Option<B256> {
        None
    }

    fn root(&mut self) -> Hash {
        unreachable!("a write log has no root")
    }
}

/// Collects the changes of `state` (revm's finalized block state) against
/// the pre-block accounts and slots; adds created code to `codes`.
pub(crate) fn collect(
    state: &EvmState,
    pre_account: impl Fn(&Address) -> Option<PreAccount>,
    pre_slot: impl Fn(&Address, &U256) -> U256,
    codes: &mut CodeStore,
) -> Changes {
    let mut changes = Changes::default();
    let mut addresses: Vec<&Address> = state.keys().collect();
    addresses.sort();
    for address in addresses {
        let account = &state[address];
        let pre = pre_account(address);
        let mut slots: Vec<(U256, B256)> = account
            .storage
            .iter()
            .filter(|(slot, value)| value.present_value != pre_slot(address, slot))
            .map(|(slot, value)| (*slot, B256::from(value.present_value)))
            .collect();
        slots.sort();

        if let Some(record) = account_write(address, account, pre.as_ref(), !slots.is_empty()) {
            changes.writes.push(record);
            changes.accounts_written += 1;
            let mut log = WriteLog {
                changes: &mut changes,
                owner: *address,
            };
            record.apply(&mut log);
            if let Some(code) = new_code(account, pre.as_ref()) {
                log.update_code(address, &code);
                codes.insert(code);
            }
        }
        for (slot, value) in slots {
            let record = WriteRecord::Slot {
                address: *address,
                slot,
                value,
            };
            changes.writes.push(record);
            changes.slots_written += 1;
            record.apply(&mut WriteLog {
                changes: &mut changes,
                owner: *address,
            });
        }
    }
    changes
}

/// The account's `a:` write, if it has one.
fn account_write(
    address: &Address,
    account: &Account,
    pre: Option<&PreAccount>,
    storage_changed: bool,
) -> Option<WriteRecord> {
    let deleted = account.is_selfdestructed() || (account.is_touched() && account.is_empty());
    if deleted {
        return pre.is_some().then_some(WriteRecord::Account {
            address: *address,
            nonce: 0,
            balance: U256::ZERO,
            code_hash: B256::ZERO,
            code_size: 0,
        });
    }
    let info = &account.info;
    let changed = match pre {
        None => account.is_touched() || storage_changed,
        Some(pre) => {
            storage_changed
                || info.nonce != pre.nonce
                || info.balance != pre.balance
                || info.code_hash != pre.code_hash
        }
    };
    if !changed {
        return None;
    }
    let code_size = match (&info.code, pre) {
        (Some(code), _) => code.original_byte_slice().len(),
        (None, Some(pre)) if pre.code_hash == info.code_hash => pre.code_size as usize,
        _ => 0,
    };
    // Code revm ran is far below 4 GiB (EIP-170 caps it at 24 KiB).
    #[allow(clippy::expect_used)]
    let code_size = u32::try_from(code_size).expect("code under 4 GiB");
    Some(WriteRecord::Account {
        address: *address,
        nonce: info.nonce,
        balance: info.balance,
        code_hash: info.code_hash,
        code_size,
    })
}

/// The account's code when the block gave it new code.
fn new_code(account: &Account, pre: Option<&PreAccount>) -> Option<Bytes> {
    let info = &account.info;
    if info.code_hash == KECCAK_EMPTY || pre.is_some_and(|pre| pre.code_hash == info.code_hash) {
        return None;
    }
    let code = info.code.as_ref()?.original_bytes();
    (!code.is_empty()).then_some(code)
}

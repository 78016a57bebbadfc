//! # ubt-revm
//!
//! revm's database traits over a ubt database, for clients built on revm:
//! execute transactions over a snapshot of the state at a root, then apply
//! revm's resulting state as one block with go-ethereum's account
//! semantics and get the new root.
//!
//! * [`UbtState`]: revm's `DatabaseRef` (and `Database`) over a
//!   [`ubt_engine::Reader`], a snapshot at one root.
//! * [`UbtState::changes`] turns revm's final state of a block
//!   (`EvmState`) into an [`AccountBatch`](ubt_engine::AccountBatch);
//!   [`UbtState::apply_changes`] applies it with
//!   [`Db::apply_accounts`](ubt_engine::Db::apply_accounts) and returns
//!   the root. [`BlockContext`] gives the two facts of the block the rules
//!   need that revm's state does not hold.
//! * [`Error`]: every failure, typed; revm reports it as
//!   `EVMError::Database`.
//!
//! ```
//! use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
//! use revm::context::TxEnv;
//! use revm::database_interface::WrapDatabaseRef;
//! use revm::primitives::hardfork::SpecId;
//! use revm::primitives::{TxKind, KECCAK_EMPTY};
//! use revm::{Context, ExecuteEvm, MainBuilder, MainContext};
//! use ubt_engine::{Account, AccountBatch, Db, Options};
//! use ubt_revm::{BlockContext, UbtState};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("ubt-revm-doc-{}", std::process::id()));
//! let mut db = Db::open(&dir, Options::default())?;
//!
//! // A contract that stores the first word of its calldata in slot 0:
//! // PUSH1 0 CALLDATALOAD PUSH1 0 SSTORE STOP.
//! let code = Bytes::from_static(&[0x60, 0x00, 0x35, 0x60, 0x00, 0x55, 0x00]);
//! let sender = Address::repeat_byte(0xaa);
//! let contract = Address::repeat_byte(0xcc);
//! let coinbase = Address::repeat_byte(0xfe);
//! let mut seed = AccountBatch::new();
//! seed.set_account(sender, Account {
//!     nonce: 0,
//!     balance: U256::from(10u64).pow(U256::from(18u64)),
//!     code_size: 0,
//!     code_hash: KECCAK_EMPTY,
//! });
//! seed.set_account(contract, Account {
//!     nonce: 1,
//!     balance: U256::ZERO,
//!     code_size: u32::try_from(code.len())?,
//!     code_hash: keccak256(&code),
//! });
//! seed.set_code(contract, code);
//! let parent = db.apply_accounts(&seed)?;
//!
//! // Execute a transaction over the snapshot at the parent root.
//! let state = UbtState::new(db.reader(&parent)?);
//! let mut evm = Context::mainnet()
//!     .with_db(WrapDatabaseRef(&state))
//!     .modify_cfg_chained(|cfg| cfg.spec = SpecId::OSAKA)
//!     .modify_block_chained(|block| block.beneficiary = coinbase)
//!     .build_mainnet();
//! let tx = TxEnv::builder()
//!     .caller(sender)
//!     .kind(TxKind::Call(contract))
//!     .data(Bytes::from(U256::from(42u64).to_be_bytes::<32>()))
//!     .gas_limit(100_000)
//!     .build_fill();
//! let outcome = evm.transact(tx)?;
//! assert!(outcome.result.is_success());
//!
//! // Apply its changes as one block on top of the parent.
//! let block = BlockContext::new(coinbase, SpecId::OSAKA);
//! let root = state.apply_changes(&mut db, &outcome.state, &block)?;
//! assert_eq!(db.root(), root);
//! assert_ne!(root, parent);
//!
//! // Read the result back.
//! assert_eq!(db.storage(&contract, &U256::ZERO)?, Some(B256::with_last_byte(42)));
//! assert_eq!(db.account(&sender)?.map(|account| account.nonce), Some(1));
//! drop(evm);
//! drop(state);
//! db.commit()?;
//! db.close()?;
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Reads
//!
//! Accounts are read as geth's `GetAccount` reads them: absent when both
//! header leaves are absent or both are zero (deleted). ubt keeps code as
//! chunks of each account, not by hash: an account's code is reassembled
//! from its chunks with the code size in its BasicData and must hash to
//! its code hash; when it does not (geth writes a code size of 0 for a
//! contract it updates without loading its code), the code is recovered
//! from the chunks by its hash (`Reader::code_matching_hash`), and
//! [`Error::CodeHashMismatch`] reports code no prefix of the chunks gives. Code is then
//! served by hash from what was read ([`Error::UnknownCodeHash`] for any
//! other hash). ubt stores no block hashes: the caller provides them
//! ([`UbtState::with_block_hashes`]; [`Error::UnknownBlockHash`]
//! otherwise). Once its root is reverted away, a state fails every read
//! of a value it has not served yet with [`Error::Db`] holding
//! [`ubt_engine::Error::SnapshotReverted`] (values it served stay
//! remembered: they are the state at its root).
//!
//! ## From revm's state to a block
//!
//! [`UbtState::changes`] compares revm's final state with the values
//! before the block (those the [`UbtState`] served, or read from its
//! snapshot) and writes what go-ethereum v1.17.10's state layer writes to
//! its binary trie. Accounts revm only loaded are skipped; the others, in
//! address order:
//!
//! * **deleted**: an account destroyed by `SELFDESTRUCT` (since Cancun,
//!   only one created in the same transaction), or left empty (no nonce,
//!   balance or code) after a touch, EIP-161: `DeleteAccount`, which zeros
//!   its two header leaves and nothing else (slots and code chunks stay).
//!   geth writes it for every self-destructed account and every empty
//!   account it held in memory, including ones that did not exist before
//!   the block: the beneficiary (paid a fee, even zero) and precompiles
//!   (called with any value). For other empty accounts that did not exist
//!   it writes nothing: geth does not create them for a zero-value call,
//!   while revm marks them touched. [`BlockContext`] names the
//!   beneficiary and the hardfork (its precompiles). An empty account
//!   that did not exist and that geth would create otherwise (the
//!   beneficiary of a `SELFDESTRUCT` of a zero balance, the target of a
//!   `STATICCALL`) cannot be told from a zero-value call's and gets no
//!   write here, where geth writes zero header leaves.
//! * **header**: an account that is new, whose nonce, balance or code hash
//!   changed, or whose storage changed (geth rewrites the header of every
//!   account whose storage it writes): `SetAccount` with its code size,
//!   the length of the code revm holds for it. geth writes the length of
//!   the code it loaded, 0 for a contract whose code it never loaded in
//!   the block (a contract beneficiary, say); this crate always writes the
//!   true size.
//! * **code**: when the account's code hash differs from the one before
//!   the block and the code is not empty: `SetCode`, its chunks. Code that
//!   shrinks leaves its old chunks past the new end, as in geth.
//! * **slots**: every slot whose final value differs from its value before
//!   the block (absent reads as zero): `SetStorage` for a non-zero value,
//!   `DeleteStorage` (a present zero leaf) for zero. An account destroyed
//!   and created again in the block compares with zero, as geth does.
//!
//! The state may hold one transaction's changes (`transact`) or a whole
//! block's (`transact_one` for each transaction, then `finalize`): the
//! comparison is with the values before the block, not revm's per
//! transaction originals. EIP-161 is assumed (every chain with a binary
//! trie has it); the rules of forks after Osaka (EIP-8246's
//! self-destruct) are not modelled.

mod changes;
mod error;
mod state;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

pub use changes::BlockContext;
pub use error::Error;
pub use state::UbtState;

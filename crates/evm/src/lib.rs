//! # ubt-evm
//!
//! The EVM runner of the benchmarks: revm (Osaka rules) executing blocks
//! over EIP-7864 state read through a [`StateSource`], with
//!
//! * [`erc20`], [`attack`]: the hand-assembled ERC20 token and the attack
//!   contract that loops `balanceOf` / `approve` calls over it, calibrated
//!   to the published gas per call (2,722 and 22,897);
//! * [`state`]: the [`StateSource`] trait (tree-key reads), the
//!   [`CodeStore`] and an in-memory source over any `ubt_spec` tree;
//! * [`executor`]: the [`Executor`], which times every state read and turns
//!   a block's final state changes into tree-key writes with geth's
//!   semantics and into the `reads`/`writes` records of the workload format
//!   (docs/workload-format.md, [`record`]);
//! * [`sequential`]: the contract of the synthetic sequential SLOAD and
//!   SSTORE blocks;
//! * [`workloads`]: transaction builders for the studies' block shapes.
//!
//! ```
//! use alloy_primitives::{Address, Bytes, U256};
//! use ubt_evm::workloads::{balanceof_tx, Erc20Actors};
//! use ubt_evm::{attack, erc20, CodeStore, Executor, MemorySource};
//! use ubt_spec::FastTree;
//!
//! let actors = Erc20Actors {
//!     sender: Address::repeat_byte(0xaa),
//!     attack: Address::repeat_byte(0xbb),
//!     token: Address::repeat_byte(0xcc),
//! };
//! let mut codes = CodeStore::new();
//! let mut source = MemorySource::new(FastTree::new());
//! source.put_account(&mut codes, &actors.sender, 0, &U256::ZERO, &Bytes::new());
//! source.put_account(&mut codes, &actors.attack, 1, &U256::ZERO, &attack::attack_code());
//! source.put_account(&mut codes, &actors.token, 1, &U256::ZERO, &erc20::token_code());
//!
//! let mut executor = Executor::new(source, codes);
//! let block = executor.execute_block(&[balanceof_tx(&actors, 1, 10, 1_000_000)]).unwrap();
//! assert_eq!(block.slots_read, 10);
//! executor.source_mut().apply(&block.tree_writes);
//! ```

pub mod asm;
pub mod attack;
mod changes;
mod db;
pub mod erc20;
pub mod executor;
pub mod record;
pub mod sequential;
pub mod state;
pub mod workloads;

pub use db::ReadError;
pub use executor::{BlockOutcome, ExecError, Executor, TxOutcome, TxSpec};
pub use record::{ReadRecord, RecordError, WriteRecord};
pub use state::{CodeStore, MemorySource, StateSource};

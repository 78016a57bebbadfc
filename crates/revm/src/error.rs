//! The error of every fallible call of the crate, as revm sees it.

use alloy_primitives::{Address, B256};
use revm::bytecode::BytecodeDecodeError;
use revm::database_interface::DBErrorMarker;
use ubt_engine::{MissingCodeChunk, Root};

/// Why a read through [`UbtState`](crate::UbtState) or the application of
/// a block's changes failed. Inside revm it arrives as
/// `EVMError::Database`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database failed, or the snapshot's root is gone
    /// ([`ubt_engine::Error::SnapshotReverted`]).
    #[error(transparent)]
    Db(#[from] ubt_engine::Error),
    /// An account's BasicData gives a code size that its code chunks do
    /// not back.
    #[error(transparent)]
    MissingCodeChunk(#[from] MissingCodeChunk),
    /// The code reassembled from an account's chunks does not hash to the
    /// account's code hash (for example a code size of 0 written for a
    /// contract: the code cannot be read back from the tree).
    #[error("the code of {address} hashes to {computed}, its account says {code_hash}")]
    CodeHashMismatch {
        /// The account.
        address: Address,
        /// The code hash in the account's CodeHash leaf.
        code_hash: B256,
        /// keccak256 of the code its chunks hold.
        computed: B256,
    },
    /// An account's code starts with the EIP-7702 marker but is not a
    /// valid delegation.
    #[error("the code of {address} is not valid bytecode: {source}")]
    InvalidBytecode {
        /// The account.
        address: Address,
        /// What revm rejected.
        source: BytecodeDecodeError,
    },
    /// revm asked for code by a hash this state has not served through an
    /// account read: ubt stores code per account, not by hash.
    #[error("no code with hash {0} was read through this state")]
    UnknownCodeHash(B256),
    /// revm asked for the hash of a block the caller did not provide
    /// (ubt stores no block hashes).
    #[error("no hash was provided for block {0}")]
    UnknownBlockHash(u64),
    /// A block's changes were to be applied on a database whose tip is not
    /// the root the block was executed at.
    #[error("the block was executed at root {executed_at} but the database's tip is {tip}")]
    NotAtTip {
        /// The root of the snapshot the block was executed over.
        executed_at: Root,
        /// The database's tip.
        tip: Root,
    },
    /// A changed account's code is longer than BasicData's 32-bit code
    /// size can record.
    #[error("the code of {address} is {len} bytes, more than a code size can record")]
    CodeTooLarge {
        /// The account.
        address: Address,
        /// The code length.
        len: usize,
    },
}

impl DBErrorMarker for Error {}

//! # ubt-spec
//!
//! The pure core of ubt: EIP-7864 unified binary trie as go-ethereum
//! v1.17.10 implements it, bit for bit. No I/O.
//!
//! * [`key`]: tree keys (`get_tree_key`, account header, storage and code-chunk keys).
//! * [`basic_data`], [`chunk`]: the account header leaf and code chunking.
//! * [`hash`], [`stem`]: SHA-256 merkleization of internal and stem nodes.
//! * [`reference`](mod@reference): the obviously-correct oracle tree.
//! * [`fast`]: the arena-based, dirty-tracking, parallel in-memory tree.
//! * [`sorted_root`]: the root of key-sorted entries in one streaming pass,
//!   without building a tree (memory: the trie's depth).
//! * [`rng`]: SplitMix64, the one seeded pseudo-random generator (its
//!   stream for a seed is pinned: generated workloads depend on it).
//! * [`account`]: geth's account-level operations as an ordered
//!   [`AccountBatch`] and the account, storage and code reads, over any
//!   [`StateTree`] or batch lookup of tree values.
//! * [`view`]: read-only structural access used by [`geth`], the node-blob
//!   codec (group depth 1..8) and witness walker.
//! * [`proof`]: canonical multiproofs (presence and absence of a key set)
//!   over any [`view::TrieView`]; [`stateless`]: the post-state root from a
//!   pre-state proof and writes.
//!
//! ```
//! use alloy_primitives::{address, B256, U256};
//! use ubt_spec::{AccountWrites, FastTree, ReferenceTree, StateTree};
//!
//! let who = address!("00000000000000000000000000000000deadbeef");
//! let mut fast = FastTree::new();
//! fast.update_account(&who, 1, &U256::from(10u64), &B256::ZERO, 0);
//! fast.update_storage(&who, &U256::from(3u8), &[0x2a]);
//!
//! // The reference tree is the oracle: same writes, same root.
//! let mut oracle = ReferenceTree::new();
//! oracle.update_account(&who, 1, &U256::from(10u64), &B256::ZERO, 0);
//! oracle.update_storage(&who, &U256::from(3u8), &[0x2a]);
//! assert_eq!(fast.root(), oracle.root());
//! assert_eq!(fast.account(&who).map(|a| a.nonce), Some(1));
//! ```

pub mod account;
pub mod basic_data;
pub mod chunk;
pub mod fast;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod geth;
pub mod hash;
pub mod key;
pub mod proof;
pub mod reference;
pub mod rng;
pub mod sorted_root;
pub mod stateless;
pub mod stem;
pub mod tree;
pub mod view;

pub use account::{Account, AccountBatch, AccountOp, AccountWrites};
pub use fast::FastTree;
pub use hash::{Hash, ZERO_HASH};
pub use key::Stem;
pub use reference::ReferenceTree;
pub use tree::StateTree;

/// Sub-index of the BasicData leaf in the account stem.
pub const BASIC_DATA_LEAF_KEY: u8 = 0;
/// Sub-index of the CodeHash leaf in the account stem.
pub const CODE_HASH_LEAF_KEY: u8 = 1;
/// Sub-index of storage slot 0 in the account stem.
pub const HEADER_STORAGE_OFFSET: u8 = 64;
/// Sub-index of code chunk 0 in the account stem.
pub const CODE_OFFSET: u8 = 128;
/// Deepest level at which an internal node can exist (a stem sits at most at 248).
pub const STEM_DEPTH_MAX: usize = 248;

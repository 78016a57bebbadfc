//! The flat index: every value an account owns, keyed by
//! `(owner address, tree key)` and sorted by that key, so one account's
//! header, code chunks and storage lie together in a few leaves
//! (ARCHITECTURE.md, "Read locality"; docs/file-format.md, "Flat index").
//!
//! The tree's buckets are ordered by stem, which EIP-7864 derives by
//! hashing: a contract's storage slots are spread over the whole key
//! space, one per bucket read. The flat index answers account-level reads
//! (accounts, storage, code) from leaves of ~100 records of the same
//! account instead, so the reads of one hot contract share blocks and
//! cache. The tree stays the source of roots and proofs; the index holds
//! the same values (verify checks it with [`digest`]).
//!
//! * [`key`]: [`FlatKey`](key::FlatKey), `owner || tree key`.
//! * [`leaf`]: a leaf's encoding, lookup and packing.
//! * [`node`], [`directory`]: the resident directory of leaf fences and
//!   the content-defined levels of nodes that persist it copy-on-write;
//!   [`search`]: the fences' search, narrowed by a word per leaf.
//! * [`index`]: [`FlatIndex`](index::FlatIndex), the index at the tip with
//!   the changes since the last checkpoint.
//! * [`readahead`]: how many of an account's adjacent leaves a miss reads.
//! * [`route`]: which reads the tree's buckets serve better (an account's
//!   stems that fill a leaf by themselves).

pub mod digest;
pub mod directory;
pub mod index;
pub mod key;
pub mod leaf;
pub mod node;
pub mod readahead;
pub mod route;
pub mod search;

#[cfg(test)]
mod tests;

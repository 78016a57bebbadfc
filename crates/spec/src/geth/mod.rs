//! go-ethereum's on-disk node format for the binary trie (spec section 7):
//! bit paths and their database keys, stem blobs, group blobs for group
//! depth 1..8, export of a whole tree as geth's node set, and the set of
//! blobs geth reads to look keys up (its witness).
//!
//! Every decoder validates exactly what geth's `decodeNode` validates and
//! returns a typed [`BlobError`]; none panics on any input.

mod error;
pub mod export;
pub mod group_blob;
pub mod path;
pub mod stem_blob;
pub mod witness;

pub use error::BlobError;
pub use export::{diff_node_sets, export_nodes, GethNode, NodeKind, NodeSetDiff};
pub use group_blob::{GroupBlob, GroupEntry};
pub use path::BitPath;
pub use witness::{witness_nodes, witness_paths};

/// Smallest group depth geth accepts.
pub const GROUP_DEPTH_MIN: u8 = 1;
/// Largest group depth geth accepts.
pub const GROUP_DEPTH_MAX: u8 = 8;

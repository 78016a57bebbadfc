//! Typed decode errors for geth node blobs and paths.

/// Why a blob or path key is not in geth's canonical format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// The first byte is neither 1 (stem) nor 2 (group).
    #[error("unknown node type byte {0:#04x}")]
    UnknownType(u8),
    /// The blob is shorter or longer than its header implies.
    #[error("{kind} blob is {actual} bytes, expected {expected}")]
    Length {
        /// "stem" or "group".
        kind: &'static str,
        /// Bytes the header implies (minimum, for truncated headers).
        expected: usize,
        /// Bytes present.
        actual: usize,
    },
    /// The group depth byte is outside 1..=8.
    #[error("group depth {0} outside 1..=8")]
    GroupDepth(u8),
    /// Padding bits that must be zero are set.
    #[error("non-zero padding bits in the {0}")]
    Padding(&'static str),
    /// An entry's relative depth exceeds the group depth.
    #[error("entry depth {depth} exceeds group depth {group_depth}")]
    EntryDepth {
        /// The entry's relative depth.
        depth: u8,
        /// The blob's group depth.
        group_depth: u8,
    },
    /// An entry's position is not aligned to its depth.
    #[error("entry at position {position} with depth {depth} is misaligned")]
    Misaligned {
        /// Bitmap position.
        position: usize,
        /// Relative depth.
        depth: u8,
    },
    /// An entry lies inside another entry's subtree.
    #[error("entry at position {position} lies inside the subtree of an earlier entry")]
    Overlap {
        /// Bitmap position of the inner entry.
        position: usize,
    },
    /// A path key is malformed.
    #[error("bad path key: {0}")]
    Path(&'static str),
}

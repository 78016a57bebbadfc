//! Where a walk down the upper trie to a stem's bucket starts.
//!
//! A walk from the root takes one dependent load per level: ~18 at 10 M
//! entries, ~23 at 200 M, and below the top levels each is a cache (and
//! TLB) miss in an arena of tens of MiB. [`Shortcuts`] indexes the trie by
//! the first `bits` bits of a stem: entry `p` is a node on the path of
//! every stem starting with `p`, as deep as possible but no deeper than
//! `bits`, so a walk starts one load from the bottom levels instead of at
//! the root.
//!
//! The trie only grows (a leaf becomes an internal node when its bucket
//! splits; no node is removed or reused), so an entry, once an ancestor of
//! its stems, stays one: a split can only make it less deep than it could
//! be. [`Shortcuts::note_node`] moves entries down to new nodes at depth
//! `<= bits`, and [`Shortcuts::outgrown`] says when the trie has grown
//! enough that a larger index would pay (rebuilt then).
//!
//! Cost: 4 bytes per entry, at most half an entry per bucket (about 0.05
//! bytes per stored value).

use ubt_spec::key::{Stem, STEM_BYTES};

use super::{Link, NodeId, UpperNode, ROOT};
use crate::prefix::Prefix;

/// Largest index: 2^22 entries (16 MiB), enough for ~8 M buckets.
const BITS_MAX: u32 = 22;

/// Walk starts by stem prefix. See the module documentation.
#[derive(Clone, Debug)]
pub(super) struct Shortcuts {
    /// Prefix bits indexed (0: one entry, the root).
    bits: u32,
    /// Entry `p`: where walks of stems starting with `p` start.
    start: Vec<NodeId>,
    /// Arena length past which a rebuild would index more bits.
    outgrown_at: usize,
}

impl Shortcuts {
    /// The index for `nodes` (whose first node is the root): as many bits
    /// as keep the table at most half the number of leaves.
    pub(super) fn build(nodes: &[UpperNode]) -> Shortcuts {
        // A binary trie with L leaves has 2L - 1 nodes.
        let leaves = nodes.len().div_ceil(2).max(1);
        let bits = leaves.ilog2().saturating_sub(1).min(BITS_MAX);
        let mut shortcuts = Shortcuts {
            bits,
            start: vec![ROOT; 1 << bits],
            // Twice as many leaves: one more bit.
            outgrown_at: nodes.len().saturating_mul(2).max(64),
        };
        if nodes.is_empty() {
            return shortcuts;
        }
        // Depth-first: (node, its prefix's bits as an integer, its depth).
        let mut work: Vec<(NodeId, usize, u32)> = vec![(ROOT, 0, 0)];
        while let Some((id, path, depth)) = work.pop() {
            let node = &nodes[id as usize];
            match node.link() {
                Link::Internal(children) if depth < bits => {
                    work.push((children[0], path << 1, depth + 1));
                    work.push((children[1], (path << 1) | 1, depth + 1));
                }
                _ => shortcuts.fill(path, depth, id),
            }
        }
        shortcuts
    }

    /// Points the entries under the `depth`-bit prefix `path` at `id`.
    fn fill(&mut self, path: usize, depth: u32, id: NodeId) {
        debug_assert!(depth <= self.bits);
        let span = 1usize << (self.bits - depth);
        let first = path << (self.bits - depth);
        self.start[first..first + span].fill(id);
    }

    /// Where the walk for `stem` starts: an ancestor of its leaf (or the
    /// leaf itself).
    pub(super) fn start(&self, stem: &Stem) -> NodeId {
        self.start[top_bits(&stem.0, self.bits)]
    }

    /// Records a node created at `prefix`: if it is no deeper than the
    /// index, the walks of its stems start there from now on.
    pub(super) fn note_node(&mut self, id: NodeId, prefix: &Prefix) {
        #[allow(clippy::cast_possible_truncation)] // a prefix has at most 248 bits
        let depth = prefix.len() as u32;
        if depth > self.bits {
            return;
        }
        self.fill(top_bits(prefix.bytes(), depth), depth, id);
    }

    /// Whether the trie, now `node_count` nodes, has grown enough that a
    /// rebuild would index more bits.
    pub(super) fn outgrown(&self, node_count: usize) -> bool {
        node_count >= self.outgrown_at && self.bits < BITS_MAX
    }

    /// Prefix bits indexed.
    #[cfg(test)]
    pub(super) fn bits(&self) -> u32 {
        self.bits
    }

    /// Heap bytes held.
    pub(super) fn memory_bytes(&self) -> usize {
        self.start.capacity() * std::mem::size_of::<NodeId>()
    }
}

/// The first `bits` (at most 32) bits of `bytes`, as an integer.
fn top_bits(bytes: &[u8; STEM_BYTES], bits: u32) -> usize {
    debug_assert!(bits <= 32);
    let top = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let value = if bits == 0 { 0 } else { top >> (32 - bits) };
    value as usize
}

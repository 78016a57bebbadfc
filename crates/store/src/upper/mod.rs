//! The upper trie: the binary trie of bucket prefixes, from the root down to
//! the buckets, always resident in memory.
//!
//! Its leaves are the buckets (they partition the stem space; a leaf may be
//! an empty bucket), its internal nodes are the prefixes that were split.
//! Every node carries the [`Summary`] of the stems below it, so the root
//! summary is the state root. Finding a stem's bucket is a walk down this
//! trie, with no I/O: a point read costs one bucket read.
//!
//! On disk the upper trie is stored in pages of G levels (the group depth,
//! 1..8): the page rooted at an internal node at depth `a * G` holds the
//! nodes at relative depths 1..=G below it ([`page`]). A page references the
//! buckets of its leaves and the pages below its bottom row, with their
//! checksums, so the pages form a copy-on-write tree whose root reference
//! sits in the meta record.

pub mod page;
mod shortcuts;

use alloy_primitives::map::HashMap;

use ubt_spec::key::Stem;

use crate::format::Extent;
use crate::prefix::Prefix;
use crate::summary::{combine, combine_unhashed, Occupancy, Summary};
use shortcuts::Shortcuts;
use ubt_spec::hash::Hash;

/// Index of a node in the upper trie's arena.
pub type NodeId = u32;
/// Index of a bucket in the store's bucket table.
pub type BucketId = u32;

/// The root node's id.
pub const ROOT: NodeId = 0;

/// Paths [`UpperTrie::mark_paths`] walks side by side.
const MARK_LANES: usize = 8;

/// Capacity of the list of marked nodes kept between rehashes (256 KiB).
const MARKED_KEPT: usize = 1 << 16;

/// The id of entry `index` of the node arena or the bucket table. Both are
/// resident, and 2^32 entries (over 200 GiB of them) cannot be held, so
/// every index fits a `u32` id.
pub fn id_of(index: usize) -> u32 {
    debug_assert!(u32::try_from(index).is_ok(), "index {index} past u32 ids");
    #[allow(clippy::cast_possible_truncation)] // bounded by memory, see above
    let id = index as u32;
    id
}

/// A node depth as stored: at most a bucket prefix, 244 bits.
pub(crate) fn depth_byte(depth: usize) -> u8 {
    debug_assert!(depth <= crate::bucket::BUCKET_PREFIX_MAX);
    u8::try_from(depth).unwrap_or(u8::MAX)
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// An internal node with its two children.
    Internal([NodeId; 2]),
    /// A bucket.
    Leaf(BucketId),
}

/// The on-disk page rooted at an internal node whose depth is a multiple
/// of the group depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageState {
    /// Where the page was last written (none before its first checkpoint).
    pub extent: Option<Extent>,
    /// Whether a node in the page changed since it was written.
    pub dirty: bool,
}

/// Where the pages are: page state by the internal node rooting the page.
/// Kept beside the nodes, not in them: page roots are one internal node in
/// 2^G-ish, and a per-node field would cost every node 32 bytes.
pub type PageTable = HashMap<NodeId, PageState>;

/// A node of the upper trie, packed into 40 bytes: the arena (two nodes
/// per bucket) is most of the store's resident memory outside the budget,
/// so nothing rarely used lives here.
///
/// An internal node's children are always created together, side by side
/// in the arena, so it keeps only the first child's id (the second is the
/// next); a leaf keeps its bucket in the same word. The depth, occupancy
/// and the leaf and stale flags share the second word.
#[derive(Clone, Debug)]
pub struct UpperNode {
    /// The subtree's hash (stale while the stale flag is set).
    hash: Hash,
    /// First child (internal) or bucket (leaf).
    target: u32,
    /// Depth in bits 0-7, occupancy code in bits 8-9, leaf flag bit 10,
    /// stale flag bit 11.
    bits: u32,
}

const NODE_OCCUPANCY_SHIFT: u32 = 8;
const NODE_LEAF: u32 = 1 << 10;
const NODE_STALE: u32 = 1 << 11;

impl UpperNode {
    /// A node at `depth`. An internal link's children must be side by
    /// side (`[c, c + 1]`), or both [`NodeId::MAX`] until they exist.
    pub fn new(summary: Summary, link: Link, depth: usize, stale: bool) -> UpperNode {
        let mut node = UpperNode {
            hash: summary.hash,
            target: 0,
            bits: u32::from(depth_byte(depth)),
        };
        node.set_occupancy(summary.occupancy);
        node.set_link(link);
        node.set_stale(stale);
        node
    }

    /// The subtree's summary (stale while [`UpperNode::is_stale`]).
    #[inline]
    pub fn summary(&self) -> Summary {
        let code = (self.bits >> NODE_OCCUPANCY_SHIFT) & 3;
        #[allow(clippy::cast_possible_truncation)] // two bits
        let occupancy = Occupancy::from_code(code as u8).unwrap_or(Occupancy::Many);
        Summary {
            occupancy,
            hash: self.hash,
        }
    }

    /// Children or bucket.
    #[inline]
    pub fn link(&self) -> Link {
        if self.bits & NODE_LEAF != 0 {
            Link::Leaf(self.target)
        } else if self.target == NodeId::MAX {
            Link::Internal([NodeId::MAX; 2])
        } else {
            Link::Internal([self.target, self.target + 1])
        }
    }

    /// Depth (prefix length) of the node.
    #[inline]
    pub fn depth(&self) -> usize {
        (self.bits & 0xff) as usize
    }

    /// Whether the summary must be recomputed.
    #[inline]
    pub fn is_stale(&self) -> bool {
        self.bits & NODE_STALE != 0
    }

    /// Sets the summary.
    #[inline]
    pub fn set_summary(&mut self, summary: Summary) {
        self.hash = summary.hash;
        self.set_occupancy(summary.occupancy);
    }

    fn set_occupancy(&mut self, occupancy: Occupancy) {
        self.bits = (self.bits & !(3 << NODE_OCCUPANCY_SHIFT))
            | (u32::from(occupancy.code()) << NODE_OCCUPANCY_SHIFT);
    }

    /// Sets or clears the stale flag; returns whether it was set before.
    #[inline]
    pub fn set_stale(&mut self, stale: bool) -> bool {
        let was = self.is_stale();
        if stale {
            self.bits |= NODE_STALE;
        } else {
            self.bits &= !NODE_STALE;
        }
        was
    }

    /// Sets the link. Internal children must be side by side, or both
    /// [`NodeId::MAX`] (not created yet).
    pub fn set_link(&mut self, link: Link) {
        match link {
            Link::Leaf(bucket) => {
                self.target = bucket;
                self.bits |= NODE_LEAF;
            }
            Link::Internal([left, right]) => {
                debug_assert!(
                    (left == NodeId::MAX && right == NodeId::MAX)
                        || left.checked_add(1) == Some(right),
                    "children {left} and {right} are not side by side"
                );
                self.target = left;
                self.bits &= !NODE_LEAF;
            }
        }
    }
}

/// The upper trie. See the module documentation.
#[derive(Clone, Debug)]
pub struct UpperTrie {
    nodes: Vec<UpperNode>,
    /// The page of every internal node at a depth that is a multiple of the
    /// group depth.
    pages: PageTable,
    group_depth: u8,
    /// Where walks to a stem's bucket start ([`UpperTrie::locate`]).
    shortcuts: Shortcuts,
    /// Internal nodes that turned stale since the last rehash, in the
    /// order they did; every stale internal node is here once
    /// `marked_complete` is set.
    marked: Vec<NodeId>,
    /// Whether `marked` holds every stale internal node: not for a trie
    /// built stale (a bulk build) until its first rehash, which then
    /// walks the stale nodes from the root instead.
    marked_complete: bool,
}

impl UpperTrie {
    /// Builds a trie from nodes decoded from pages (see [`page`]) or built
    /// in bulk, and their pages. The arena is trimmed to its length: it
    /// is resident for the store's life.
    pub(crate) fn from_nodes(
        mut nodes: Vec<UpperNode>,
        mut pages: PageTable,
        group_depth: u8,
    ) -> UpperTrie {
        nodes.shrink_to_fit();
        pages.shrink_to_fit();
        let shortcuts = Shortcuts::build(&nodes);
        UpperTrie {
            nodes,
            pages,
            group_depth,
            shortcuts,
            marked: Vec::new(),
            marked_complete: false,
        }
    }

    /// The group depth G.
    pub fn group_depth(&self) -> u8 {
        self.group_depth
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Approximate heap bytes held (the page table's entries counted at
    /// key, value and one control byte each).
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<UpperNode>()
            + self.shortcuts.memory_bytes()
            + self.pages.capacity() * (std::mem::size_of::<(NodeId, PageState)>() + 1)
            + self.marked.capacity() * std::mem::size_of::<NodeId>()
    }

    /// The page rooted at `id`, if `id` roots one.
    pub fn page(&self, id: NodeId) -> Option<PageState> {
        self.pages.get(&id).copied()
    }

    /// A node.
    pub fn node(&self, id: NodeId) -> &UpperNode {
        &self.nodes[id as usize]
    }

    /// The root's summary (call [`UpperTrie::rehash`] first after changes).
    pub fn root_summary(&self) -> Summary {
        debug_assert!(
            !self.nodes[ROOT as usize].is_stale(),
            "root summary is stale"
        );
        self.nodes[ROOT as usize].summary()
    }

    /// Whether a node at `depth` roots a page when internal.
    pub fn is_page_root_depth(&self, depth: usize) -> bool {
        depth.is_multiple_of(usize::from(self.group_depth))
    }

    /// The leaf (and its bucket) whose prefix covers `stem`. The walk
    /// starts at the stem's shortcut, a few levels above the leaf.
    pub fn locate(&self, stem: &Stem) -> (NodeId, BucketId) {
        let found = self.locate_from(self.shortcuts.start(stem), stem);
        debug_assert_eq!(
            found,
            self.locate_from(ROOT, stem),
            "a shortcut started off the stem's path"
        );
        found
    }

    /// The leaf whose prefix is `prefix` (a bucket's), by the walk to any
    /// stem under it.
    pub fn leaf_of(&self, prefix: &Prefix) -> NodeId {
        let (leaf, _) = self.locate(&Stem(*prefix.bytes()));
        debug_assert_eq!(
            self.nodes[leaf as usize].depth(),
            prefix.len(),
            "{prefix:?} is not a bucket's prefix"
        );
        leaf
    }

    /// Walks down from `id`, an ancestor of `stem`'s leaf, to the leaf.
    fn locate_from(&self, mut id: NodeId, stem: &Stem) -> (NodeId, BucketId) {
        loop {
            let node = &self.nodes[id as usize];
            match node.link() {
                Link::Leaf(bucket) => return (id, bucket),
                Link::Internal(children) => {
                    id = children[usize::from(stem.bit(node.depth()))];
                }
            }
        }
    }

    /// Marks every node on the path to the leaf at `prefix` stale, and every
    /// page on it dirty. Returns the leaf.
    pub fn mark_path(&mut self, prefix: &Prefix) -> NodeId {
        self.mark_paths(std::slice::from_ref(prefix))[0]
    }

    /// [`UpperTrie::mark_path`] for each of `prefixes`, returning the
    /// leaves in order. The walks go side by side, [`MARK_LANES`] at a
    /// time and one level per step: a step's node loads are independent of
    /// each other, so the cache misses of different paths overlap instead
    /// of following one another (most levels of a large trie miss).
    pub fn mark_paths(&mut self, prefixes: &[Prefix]) -> Vec<NodeId> {
        let mut leaves = Vec::with_capacity(prefixes.len());
        for chunk in prefixes.chunks(MARK_LANES) {
            let mut ids = [ROOT; MARK_LANES];
            let mut leaf_of: [Option<NodeId>; MARK_LANES] = [None; MARK_LANES];
            let mut walking = chunk.len();
            while walking > 0 {
                for (lane, prefix) in chunk.iter().enumerate() {
                    if leaf_of[lane].is_some() {
                        continue;
                    }
                    let id = ids[lane];
                    let node = &mut self.nodes[id as usize];
                    let newly = !node.set_stale(true);
                    let (link, depth) = (node.link(), node.depth());
                    match link {
                        Link::Leaf(_) => {
                            leaf_of[lane] = Some(id);
                            walking -= 1;
                        }
                        Link::Internal(children) => {
                            if newly {
                                self.marked.push(id);
                            }
                            if self.is_page_root_depth(depth) {
                                if let Some(page) = self.pages.get_mut(&id) {
                                    page.dirty = true;
                                }
                            }
                            ids[lane] = children[usize::from(prefix.bit(depth))];
                        }
                    }
                }
            }
            leaves.extend(leaf_of[..chunk.len()].iter().flatten());
        }
        debug_assert_eq!(leaves.len(), prefixes.len());
        leaves
    }

    /// Sets a leaf's summary (after its bucket was rehashed).
    pub fn set_leaf_summary(&mut self, leaf: NodeId, summary: Summary) {
        let node = &mut self.nodes[leaf as usize];
        debug_assert!(matches!(node.link(), Link::Leaf(_)));
        node.set_summary(summary);
        node.set_stale(false);
    }

    /// Replaces leaf `leaf` (whose prefix is `prefix`) by the subtree whose
    /// leaves, in order, are `pieces` (prefix, bucket, summary): the pieces
    /// of a bucket split by [`crate::bucket::Bucket::split_to_fit`]. Returns
    /// the leaf node of each piece, in order.
    pub fn replace_leaf(
        &mut self,
        leaf: NodeId,
        prefix: &Prefix,
        pieces: &[(Prefix, BucketId, Summary)],
    ) -> Vec<NodeId> {
        debug_assert!(!pieces.is_empty());
        let mut leaves = Vec::with_capacity(pieces.len());
        // Explicit stack of (node to fill, its prefix, range of pieces).
        let mut work = vec![(leaf, *prefix, 0..pieces.len())];
        while let Some((id, at, range)) = work.pop() {
            let depth = at.len();
            if range.len() == 1 && pieces[range.start].0 == at {
                let (_, bucket, summary) = pieces[range.start];
                let node = &mut self.nodes[id as usize];
                node.set_link(Link::Leaf(bucket));
                node.set_summary(summary);
                node.set_stale(false);
                self.pages.remove(&id);
                leaves.push((range.start, id));
                continue;
            }
            let (Some(left), Some(right)) = (at.child(0), at.child(1)) else {
                unreachable!("split pieces lie below a short prefix");
            };
            let split = range.start
                + pieces[range.clone()].partition_point(|(p, _, _)| p.truncate(depth + 1) == left);
            let children = [
                self.push_leaf_placeholder(depth + 1),
                self.push_leaf_placeholder(depth + 1),
            ];
            self.shortcuts.note_node(children[0], &left);
            self.shortcuts.note_node(children[1], &right);
            let is_page_root = self.is_page_root_depth(depth);
            let node = &mut self.nodes[id as usize];
            node.set_link(Link::Internal(children));
            node.set_stale(true);
            // A leaf until now: not marked yet.
            self.marked.push(id);
            if is_page_root {
                self.pages.entry(id).or_default().dirty = true;
            }
            work.push((children[1], right, split..range.end));
            work.push((children[0], left, range.start..split));
        }
        if self.shortcuts.outgrown(self.nodes.len()) {
            self.shortcuts = Shortcuts::build(&self.nodes);
        }
        leaves.sort_unstable();
        leaves.into_iter().map(|(_, id)| id).collect()
    }

    fn push_leaf_placeholder(&mut self, depth: usize) -> NodeId {
        let id = id_of(self.nodes.len());
        self.nodes.push(UpperNode::new(
            Summary::EMPTY,
            Link::Leaf(BucketId::MAX),
            depth,
            true,
        ));
        id
    }

    /// Recomputes every stale summary and returns the root's.
    ///
    /// The stale internal nodes are gathered level by level, then hashed
    /// deepest level first: each level's pairs of child hashes go to the
    /// batched SHA-256 kernel together (several messages interleaved per
    /// core), split across the thread pool when a level is large. A path
    /// walk with one hash at a time left most of each core idle waiting on
    /// its previous hash.
    pub fn rehash(&mut self) -> Summary {
        let levels = if self.marked_complete {
            self.marked_levels()
        } else {
            self.stale_levels()
        };
        debug_assert!(
            !self.marked_complete || same_levels(&levels, &self.stale_levels()),
            "a stale internal node was not marked"
        );
        self.marked.clear();
        // A bulk apply can mark most of the trie: do not keep that much.
        self.marked.shrink_to(MARKED_KEPT);
        self.marked_complete = true;
        let mut messages: Vec<[u8; 64]> = Vec::new();
        let mut hashed: Vec<NodeId> = Vec::new();
        let mut hashes: Vec<[u8; 32]> = Vec::new();
        // Chunks bound the messages' memory when a whole trie is stale
        // (after a bulk build: millions of nodes on the widest level).
        for chunk in levels
            .iter()
            .rev()
            .flat_map(|level| level.chunks(REHASH_CHUNK))
        {
            messages.clear();
            hashed.clear();
            for &id in chunk {
                let Link::Internal([left, right]) = self.nodes[id as usize].link() else {
                    unreachable!("only internal nodes are gathered");
                };
                let left = &self.nodes[left as usize].summary();
                let right = &self.nodes[right as usize].summary();
                if let Some(summary) = combine_unhashed(left, right) {
                    let node = &mut self.nodes[id as usize];
                    node.set_summary(summary);
                    node.set_stale(false);
                } else {
                    let mut message = [0u8; 64];
                    message[..32].copy_from_slice(&left.hash);
                    message[32..].copy_from_slice(&right.hash);
                    messages.push(message);
                    hashed.push(id);
                }
            }
            hashes.clear();
            hashes.resize(messages.len(), [0u8; 32]);
            hash_level(&messages, &mut hashes);
            for (&id, hash) in hashed.iter().zip(&hashes) {
                let node = &mut self.nodes[id as usize];
                node.set_summary(Summary {
                    occupancy: Occupancy::Many,
                    hash: *hash,
                });
                node.set_stale(false);
            }
        }
        debug_assert!(!self.nodes[ROOT as usize].is_stale());
        self.nodes[ROOT as usize].summary()
    }

    /// The marked nodes (every stale internal node, when
    /// `marked_complete`), by depth: no walk over the trie.
    fn marked_levels(&self) -> Vec<Vec<NodeId>> {
        let mut levels: Vec<Vec<NodeId>> = Vec::new();
        for &id in &self.marked {
            let node = &self.nodes[id as usize];
            debug_assert!(node.is_stale() && matches!(node.link(), Link::Internal(_)));
            let depth = node.depth();
            if levels.len() <= depth {
                levels.resize_with(depth + 1, Vec::new);
            }
            levels[depth].push(id);
        }
        levels
    }

    /// The stale internal nodes, by depth (index `d` holds depth `d`).
    fn stale_levels(&self) -> Vec<Vec<NodeId>> {
        let mut levels: Vec<Vec<NodeId>> = Vec::new();
        let mut stack: Vec<NodeId> = vec![ROOT];
        while let Some(id) = stack.pop() {
            let node = &self.nodes[id as usize];
            if !node.is_stale() {
                continue;
            }
            match node.link() {
                Link::Leaf(_) => debug_assert!(false, "leaf {id} left stale"),
                Link::Internal([left, right]) => {
                    let depth = node.depth();
                    if levels.len() <= depth {
                        levels.resize_with(depth + 1, Vec::new);
                    }
                    levels[depth].push(id);
                    stack.push(right);
                    stack.push(left);
                }
            }
        }
        levels
    }

    /// Marks the page rooted at `id` dirty.
    pub fn mark_page_dirty(&mut self, id: NodeId) {
        if let Some(page) = self.pages.get_mut(&id) {
            page.dirty = true;
        }
    }

    /// Marks every page dirty (to rewrite them all, compacting page blocks).
    pub fn mark_all_pages_dirty(&mut self) {
        for page in self.pages.values_mut() {
            page.dirty = true;
        }
    }

    /// Summaries of another version of the trie whose leaves differ from
    /// this one only at `leaves` (leaf -> summary; `prefix_of` gives a
    /// leaf's prefix): the returned map holds those leaves and every
    /// ancestor whose summary differs as a result. Costs one hash per
    /// ancestor.
    pub fn summaries_with(
        &self,
        leaves: &HashMap<NodeId, Summary>,
        prefix_of: impl Fn(NodeId) -> Prefix,
    ) -> HashMap<NodeId, Summary> {
        let mut out = leaves.clone();
        let mut ancestors: Vec<NodeId> = Vec::new();
        for &leaf in leaves.keys() {
            let prefix = prefix_of(leaf);
            let mut id = ROOT;
            while let Link::Internal(children) = self.nodes[id as usize].link() {
                ancestors.push(id);
                id = children[usize::from(prefix.bit(self.nodes[id as usize].depth()))];
            }
            debug_assert_eq!(id, leaf, "prefix does not lead to the leaf");
        }
        ancestors
            .sort_unstable_by_key(|&id| (std::cmp::Reverse(self.nodes[id as usize].depth()), id));
        ancestors.dedup();
        for id in ancestors {
            if let Link::Internal([left, right]) = self.nodes[id as usize].link() {
                let summary_of = |child: NodeId| {
                    out.get(&child)
                        .copied()
                        .unwrap_or(self.nodes[child as usize].summary())
                };
                let summary = combine(&summary_of(left), &summary_of(right));
                out.insert(id, summary);
            }
        }
        out
    }

    /// Page roots whose page must be written, deepest first (children's
    /// references must be known before their parents are encoded).
    pub fn dirty_pages(&self) -> Vec<NodeId> {
        let mut out: Vec<NodeId> = self
            .pages
            .iter()
            .filter(|(_, page)| page.dirty)
            .map(|(&id, _)| id)
            .collect();
        out.sort_unstable_by_key(|&id| (std::cmp::Reverse(self.nodes[id as usize].depth()), id));
        out
    }

    /// Records that the page rooted at `id` was written at `extent`;
    /// returns the reference it replaces.
    pub fn set_page_written(&mut self, id: NodeId, extent: Extent) -> Option<Extent> {
        let page = self
            .pages
            .get_mut(&id)
            .unwrap_or_else(|| unreachable!("node {id} roots no page"));
        page.dirty = false;
        page.extent.replace(extent)
    }

    /// Every page reference (for free-space accounting).
    pub fn page_refs(&self) -> impl Iterator<Item = Extent> + '_ {
        self.pages.values().filter_map(|p| p.extent)
    }

    /// Number of pages (internal nodes at page-root depths).
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Deepest leaf depth and the sum of leaf depths, for statistics.
    pub fn leaf_depths(&self) -> (usize, u64, u64) {
        let mut deepest = 0;
        let mut total = 0u64;
        let mut leaves = 0u64;
        for node in &self.nodes {
            if let Link::Leaf(_) = node.link() {
                deepest = deepest.max(node.depth());
                total += u64::from(depth_byte(node.depth()));
                leaves += 1;
            }
        }
        (deepest, total, leaves)
    }

    /// Calls `visit(node, prefix)` for every node in depth-first order.
    pub fn walk(&self, mut visit: impl FnMut(NodeId, &Prefix)) {
        let mut stack = vec![(ROOT, Prefix::ROOT)];
        while let Some((id, prefix)) = stack.pop() {
            visit(id, &prefix);
            if let Link::Internal([left, right]) = self.nodes[id as usize].link() {
                if let (Some(l), Some(r)) = (prefix.child(0), prefix.child(1)) {
                    stack.push((right, r));
                    stack.push((left, l));
                }
            }
        }
    }
}

/// Stale nodes of one level handled at a time by [`UpperTrie::rehash`].
const REHASH_CHUNK: usize = 1 << 16;

/// Messages in a level below which it is hashed on the calling thread.
const PARALLEL_LEVEL_MIN: usize = 1024;

/// `out[i] = SHA-256(messages[i])`, on the thread pool for a large level.
fn hash_level(messages: &[[u8; 64]], out: &mut [[u8; 32]]) {
    use rayon::prelude::*;
    if messages.len() < PARALLEL_LEVEL_MIN {
        ubt_spec::hash::hash64_many(messages, out);
        return;
    }
    let chunk = messages.len().div_ceil(rayon::current_num_threads() * 2);
    messages
        .par_chunks(chunk)
        .zip(out.par_chunks_mut(chunk))
        .for_each(|(messages, out)| ubt_spec::hash::hash64_many(messages, out));
}

/// Whether two gatherings of stale nodes by depth hold the same nodes
/// at every depth (in any order).
fn same_levels(a: &[Vec<NodeId>], b: &[Vec<NodeId>]) -> bool {
    let sorted = |levels: &[Vec<NodeId>]| -> Vec<Vec<NodeId>> {
        let mut levels: Vec<Vec<NodeId>> = levels
            .iter()
            .map(|level| {
                let mut level = level.clone();
                level.sort_unstable();
                level
            })
            .collect();
        while levels.last().is_some_and(Vec::is_empty) {
            levels.pop();
        }
        levels
    };
    sorted(a) == sorted(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arena is the store's largest resident structure outside the
    /// budget (two nodes per bucket): a field added to every node shows
    /// up in bytes per entry at scale.
    #[test]
    fn an_arena_node_is_40_bytes() {
        assert_eq!(std::mem::size_of::<UpperNode>(), 40);
    }

    /// Every field of a packed node reads back as written, whatever the
    /// others hold: links (leaf buckets, side-by-side children, children
    /// not created yet), depths up to a bucket prefix, each occupancy and
    /// the stale flag.
    #[test]
    fn a_packed_node_keeps_each_field_apart() {
        let mut rng = ubt_spec::rng::SplitMix64(0x40de);
        let occupancies = [Occupancy::Empty, Occupancy::One, Occupancy::Many];
        for round in 0..2_000u32 {
            let depth = round as usize % (crate::bucket::BUCKET_PREFIX_MAX + 1);
            let first = u32::try_from(rng.below(u64::from(u32::MAX - 1))).unwrap();
            let links = [
                Link::Leaf(first),
                Link::Leaf(BucketId::MAX),
                Link::Internal([first, first + 1]),
                Link::Internal([NodeId::MAX; 2]),
            ];
            let link = links[round as usize % links.len()];
            let summary = Summary {
                occupancy: occupancies[round as usize % 3],
                hash: rng.bytes32(),
            };
            let stale = round % 7 < 3;
            let mut node = UpperNode::new(summary, link, depth, stale);
            assert_eq!(
                (node.summary(), node.link(), node.depth(), node.is_stale()),
                (summary, link, depth, stale)
            );
            let other = Summary {
                occupancy: occupancies[(round as usize + 1) % 3],
                hash: rng.bytes32(),
            };
            node.set_summary(other);
            assert_eq!(node.set_stale(!stale), stale);
            let relinked = links[(round as usize + 1) % links.len()];
            node.set_link(relinked);
            assert_eq!(
                (node.summary(), node.link(), node.depth(), node.is_stale()),
                (other, relinked, depth, !stale)
            );
        }
    }

    /// A trie of group depth `group_depth` whose root is bucket 0.
    fn one_bucket_trie(group_depth: u8) -> UpperTrie {
        let root = UpperNode::new(Summary::EMPTY, Link::Leaf(0), 0, false);
        UpperTrie::from_nodes(vec![root], PageTable::default(), group_depth)
    }

    /// Marking paths side by side (up to eight walks interleaved) marks
    /// what marking them one by one does (the same leaves, stale nodes and
    /// dirty pages), for any number of paths, repeated leaves included;
    /// the leaves are the ones the splits created.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // test sizes
    fn marking_paths_side_by_side_marks_as_one_by_one() {
        let mut rng = ubt_spec::rng::SplitMix64(0x3a7c);
        let mut trie = one_bucket_trie(3);
        let mut leaves: Vec<(Prefix, NodeId)> = vec![(Prefix::ROOT, ROOT)];
        for bucket in 1..600 {
            let at = rng.below(leaves.len() as u64) as usize;
            let (prefix, leaf) = leaves.swap_remove(at);
            let (left, right) = (prefix.child(0).unwrap(), prefix.child(1).unwrap());
            let pieces = [
                (left, bucket * 2, Summary::EMPTY),
                (right, bucket * 2 + 1, Summary::EMPTY),
            ];
            let ids = trie.replace_leaf(leaf, &prefix, &pieces);
            leaves.extend([(left, ids[0]), (right, ids[1])]);
        }
        // A clean trie with pages at some page-root nodes, as after a
        // checkpoint.
        trie.pages.clear();
        for (id, node) in trie.nodes.iter_mut().enumerate() {
            node.set_stale(false);
            if matches!(node.link(), Link::Internal(_))
                && node.depth().is_multiple_of(3)
                && id % 2 == 0
            {
                trie.pages.insert(id_of(id), PageState::default());
            }
        }
        for count in [0usize, 1, 7, 8, 9, 100, 1_000] {
            let picked: Vec<(Prefix, NodeId)> = (0..count)
                .map(|_| leaves[rng.below(leaves.len() as u64) as usize])
                .collect();
            let prefixes: Vec<Prefix> = picked.iter().map(|(p, _)| *p).collect();
            let mut one_by_one = trie.clone();
            let expected: Vec<NodeId> = prefixes.iter().map(|p| one_by_one.mark_path(p)).collect();
            let mut side_by_side = trie.clone();
            let found = side_by_side.mark_paths(&prefixes);
            assert_eq!(found, expected, "{count} paths");
            assert_eq!(found, picked.iter().map(|(_, id)| *id).collect::<Vec<_>>());
            let stale = |t: &UpperTrie| t.nodes.iter().map(|n| n.is_stale()).collect::<Vec<_>>();
            assert_eq!(stale(&side_by_side), stale(&one_by_one), "{count} paths");
            let mut dirty_a: Vec<_> = side_by_side
                .pages
                .iter()
                .map(|(k, v)| (*k, v.dirty))
                .collect();
            let mut dirty_b: Vec<_> = one_by_one
                .pages
                .iter()
                .map(|(k, v)| (*k, v.dirty))
                .collect();
            dirty_a.sort_unstable();
            dirty_b.sort_unstable();
            assert_eq!(dirty_a, dirty_b, "{count} paths");
            if count > 0 {
                assert!(dirty_a.iter().any(|(_, dirty)| *dirty));
            }
        }
    }

    /// A random stem under `prefix`.
    fn stem_under(prefix: &Prefix, rng: &mut ubt_spec::rng::SplitMix64) -> Stem {
        let mut stem = Stem(rng.bytes32()[..31].try_into().unwrap());
        for bit in 0..prefix.len() {
            let (byte, mask) = (bit / 8, 0x80u8 >> (bit % 8));
            stem.0[byte] = (stem.0[byte] & !mask) | (prefix.bytes()[byte] & mask);
        }
        debug_assert!(prefix.contains(&stem));
        stem
    }

    /// Splits random leaves (into two or three pieces, as bucket splits
    /// do) and checks after each round that every stem's walk starts on
    /// its path, as deep as the index allows, and ends at its bucket, and
    /// that a bucket's prefix leads to its leaf; the index is rebuilt as
    /// the trie outgrows it.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // test sizes
    fn shortcuts_start_walks_on_the_path_as_deep_as_they_index() {
        let mut rng = ubt_spec::rng::SplitMix64(0x5407);
        let mut trie = one_bucket_trie(4);
        let mut leaves: Vec<(Prefix, NodeId, BucketId)> = vec![(Prefix::ROOT, ROOT, 0)];
        let mut next_bucket: BucketId = 1;
        let mut rebuilt_bits = vec![trie.shortcuts.bits()];
        for round in 0..40 {
            for _ in 0..50 * (round + 1) {
                let at = rng.below(leaves.len() as u64) as usize;
                let (prefix, leaf, _) = leaves[at];
                if prefix.len() >= 60 {
                    continue;
                }
                let (left, right) = (prefix.child(0).unwrap(), prefix.child(1).unwrap());
                let parts: Vec<Prefix> = if rng.below(3) == 0 {
                    vec![left.child(0).unwrap(), left.child(1).unwrap(), right]
                } else {
                    vec![left, right]
                };
                let pieces: Vec<(Prefix, BucketId, Summary)> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (*p, next_bucket + i as BucketId, Summary::EMPTY))
                    .collect();
                let ids = trie.replace_leaf(leaf, &prefix, &pieces);
                leaves.swap_remove(at);
                for ((p, bucket, _), id) in pieces.iter().zip(ids) {
                    leaves.push((*p, id, *bucket));
                }
                next_bucket += parts.len() as BucketId;
            }
            if rebuilt_bits.last() != Some(&trie.shortcuts.bits()) {
                rebuilt_bits.push(trie.shortcuts.bits());
            }
            for _ in 0..300 {
                let (prefix, leaf, bucket) = leaves[rng.below(leaves.len() as u64) as usize];
                let stem = stem_under(&prefix, &mut rng);
                assert_eq!(trie.locate(&stem), (leaf, bucket), "round {round}");
                // The walk a checkpoint, a proof and verify take from a
                // bucket's prefix (the table keeps no leaf ids).
                assert_eq!(trie.leaf_of(&prefix), leaf, "round {round}");
                let start = trie.shortcuts.start(&stem);
                let start_depth = u32::from(depth_byte(trie.node(start).depth()));
                let bits = trie.shortcuts.bits();
                assert_eq!(
                    start_depth,
                    bits.min(prefix.len() as u32),
                    "round {round}: a walk to a leaf at depth {} starts at depth {start_depth} \
                     of an index of {bits} bits",
                    prefix.len()
                );
            }
        }
        // The index grew with the trie: at most half an entry per leaf,
        // at least a quarter.
        assert!(
            rebuilt_bits.windows(2).all(|w| w[1] > w[0]),
            "{rebuilt_bits:?}"
        );
        let entries = 1usize << trie.shortcuts.bits();
        assert!(
            entries * 2 <= leaves.len() && entries * 8 > leaves.len(),
            "{entries} entries for {} leaves",
            leaves.len()
        );
    }
}

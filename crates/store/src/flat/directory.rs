//! The flat directory: the first key and extent of every leaf, resident,
//! and the levels of nodes that persist it.
//!
//! Level 0 is the leaves' fences (what a lookup searches: one binary
//! search, then one leaf read). Each level above cuts the level below into
//! runs by content: a run ends after a child whose key's CRC-32C has its
//! low five bits zero, once the run holds at least [`RUN_MIN`] children,
//! or when it reaches [`NODE_FANOUT_MAX`]. So the shape depends only on
//! the leaves, and a change to a few leaves changes only the nodes on
//! their paths: a checkpoint rewrites those and keeps every other node
//! where it is (copy-on-write). The top level holds one node, the root,
//! unless the index is a single leaf (height 0) or empty.
//!
//! Invariants: every level is sorted by key; a fence's key is the first
//! key below it; `fresh` marks what the running checkpoint wrote (cleared
//! once it is durable); a node's `last` and `count` describe its run.

use super::key::FlatKey;
use super::node::{self, Child, LEVEL_MAX, NODE_FANOUT_MAX};
use super::search::FenceWords;
use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Extent};

/// The fewest children a run closes with at a content boundary.
const RUN_MIN: usize = 4;
/// A content boundary after a key whose CRC has these bits zero (runs of
/// ~32 children on average).
const BOUNDARY_MASK: u32 = 31;

/// Reads extents in one batch, checksums checked.
pub type ReadBatch<'a> = dyn FnMut(&[Extent]) -> Result<Vec<std::sync::Arc<[u8]>>> + 'a;

/// A leaf's or a node's first key and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The first key below it.
    pub key: FlatKey,
    /// Where it is written.
    pub extent: Extent,
    /// Written by the running checkpoint.
    pub fresh: bool,
}

/// A node of level 1 or above: its fence and the run it covers.
#[derive(Clone, Copy, Debug)]
struct Node {
    fence: Fence,
    /// The last child's first key.
    last: FlatKey,
    /// Children.
    count: usize,
}

/// Where the directory starts: what the meta record stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatRoot {
    /// Levels of nodes (0: the root is the only leaf).
    pub height: u8,
    /// The root node (or leaf).
    pub extent: Extent,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Directory {
    leaves: Vec<Fence>,
    /// The leaves' search words, made with them ([`Directory::new`]).
    words: FenceWords,
    /// `nodes[l - 1]` is level `l`.
    nodes: Vec<Vec<Node>>,
}

/// Whether a run may close after `key`, by content.
fn is_boundary(key: &FlatKey) -> bool {
    checksum(key.as_bytes()) & BOUNDARY_MASK == 0
}

/// Cuts `fences` into runs (see the module documentation).
fn runs(fences: &[Fence]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::with_capacity(fences.len() / 16 + 1);
    let mut start = 0;
    for (index, fence) in fences.iter().enumerate() {
        let len = index + 1 - start;
        if len >= NODE_FANOUT_MAX || (len >= RUN_MIN && is_boundary(&fence.key)) {
            out.push(start..index + 1);
            start = index + 1;
        }
    }
    if start < fences.len() {
        out.push(start..fences.len());
    }
    out
}

impl Directory {
    /// A directory of `leaves` (sorted) under the levels `nodes`.
    fn new(leaves: Vec<Fence>, nodes: Vec<Vec<Node>>) -> Directory {
        Directory {
            words: FenceWords::new(&leaves),
            leaves,
            nodes,
        }
    }

    /// The leaves' fences, sorted.
    pub fn leaves(&self) -> &[Fence] {
        &self.leaves
    }

    /// Levels of nodes.
    #[cfg(any(test, feature = "testing"))]
    pub fn height(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes at every level (what `stats` and open count).
    pub fn node_count(&self) -> usize {
        self.nodes.iter().map(Vec::len).sum()
    }

    /// Resident bytes: the fences and nodes held.
    pub fn memory_bytes(&self) -> usize {
        self.leaves.capacity() * std::mem::size_of::<Fence>()
            + self.words.memory_bytes()
            + self
                .nodes
                .iter()
                .map(|level| level.capacity() * std::mem::size_of::<Node>())
                .sum::<usize>()
    }

    /// Extents of every node (what open marks as used).
    pub fn node_extents(&self) -> impl Iterator<Item = Extent> + '_ {
        self.nodes.iter().flatten().map(|n| n.fence.extent)
    }

    /// The position of the leaf that holds `key` if anything does: the
    /// last whose first key is not above it, else the first.
    pub fn leaf_for(&self, key: &FlatKey) -> Option<usize> {
        if self.leaves.is_empty() {
            return None;
        }
        Some(
            self.words
                .count_not_above(&self.leaves, key)
                .saturating_sub(1),
        )
    }

    /// The positions of the leaves whose first key is `owner`'s.
    pub fn owner_leaves(&self, owner: &alloy_primitives::Address) -> std::ops::Range<usize> {
        self.words.owner_leaves(&self.leaves, owner)
    }

    /// A copy of this directory whose leaves at the listed positions
    /// (ascending) are replaced by the listed fences (each position's new
    /// fences, keys ascending and between the neighbours' keys, marked
    /// fresh; a position past the end appends), with the replaced
    /// extents. The levels above are those of this directory until
    /// [`Directory::rebuild`].
    pub fn with_leaves_replaced(
        &self,
        replaced: &[(usize, Vec<Fence>)],
    ) -> (Directory, Vec<Extent>) {
        let mut released = Vec::with_capacity(replaced.len());
        let mut out = Vec::with_capacity(self.leaves.len() + replaced.len());
        let mut next = 0;
        for (position, fences) in replaced {
            out.extend_from_slice(&self.leaves[next..*position]);
            if let Some(old) = self.leaves.get(*position) {
                released.push(old.extent);
            }
            out.extend_from_slice(fences);
            next = (*position + 1).min(self.leaves.len());
        }
        out.extend_from_slice(&self.leaves[next..]);
        debug_assert!(
            out.windows(2).all(|w| w[0].key < w[1].key),
            "leaves out of order"
        );
        let next = Directory::new(out, self.nodes.clone());
        (next, released)
    }

    /// Rebuilds the levels above the leaves after they changed: a
    /// run that holds nothing fresh and equals a node of the previous
    /// shape (same first and last key and count) keeps that node; every
    /// other run is encoded and written through `write` (which returns
    /// where). Returns the extents of the nodes no longer used. On an
    /// error the directory is half rebuilt: callers rebuild a copy
    /// ([`Directory::with_leaves_replaced`]) and keep the original.
    pub fn rebuild(
        &mut self,
        write: &mut dyn FnMut(&[u8]) -> Result<Extent>,
    ) -> Result<Vec<Extent>> {
        let mut released = Vec::new();
        let mut level = 0usize;
        loop {
            let below: Vec<Fence> = if level == 0 {
                self.leaves.clone()
            } else {
                self.nodes[level - 1].iter().map(|n| n.fence).collect()
            };
            if below.len() <= 1 {
                for dropped in self.nodes.drain(level..) {
                    released.extend(dropped.iter().map(|n| n.fence.extent));
                }
                break;
            }
            let old = self.nodes.get(level).map(Vec::as_slice).unwrap_or(&[]);
            let mut kept = vec![false; old.len()];
            let mut built = Vec::new();
            for run in runs(&below) {
                let children = &below[run];
                let first = children[0].key;
                let last = children[children.len() - 1].key;
                let reuse = (!children.iter().any(|f| f.fresh))
                    .then(|| old.binary_search_by(|n| n.fence.key.cmp(&first)).ok())
                    .flatten()
                    .filter(|&i| old[i].last == last && old[i].count == children.len());
                if let Some(i) = reuse {
                    kept[i] = true;
                    built.push(old[i]);
                    continue;
                }
                let child_list: Vec<Child> = children
                    .iter()
                    .map(|f| Child {
                        key: f.key,
                        extent: f.extent,
                    })
                    .collect();
                // Levels stay far below 255 (`LEVEL_MAX`).
                #[allow(clippy::cast_possible_truncation)]
                let bytes = node::encode((level + 1) as u8, &child_list);
                let extent = write(&bytes)?;
                built.push(Node {
                    fence: Fence {
                        key: first,
                        extent,
                        fresh: true,
                    },
                    last,
                    count: children.len(),
                });
            }
            released.extend(
                old.iter()
                    .zip(&kept)
                    .filter(|(_, k)| !**k)
                    .map(|(n, _)| n.fence.extent),
            );
            if level < self.nodes.len() {
                self.nodes[level] = built;
            } else {
                self.nodes.push(built);
            }
            level += 1;
        }
        debug_assert!(self.nodes.len() <= usize::from(LEVEL_MAX));
        Ok(released)
    }

    /// Clears the fresh marks once the checkpoint that wrote them is durable.
    pub fn settle(&mut self) {
        for fence in &mut self.leaves {
            fence.fresh = false;
        }
        for node in self.nodes.iter_mut().flatten() {
            node.fence.fresh = false;
        }
    }

    /// Where the directory starts, if anything is stored.
    pub fn root(&self) -> Option<FlatRoot> {
        match self.nodes.last() {
            // Levels stay far below 255.
            #[allow(clippy::cast_possible_truncation)]
            Some(top) => Some(FlatRoot {
                height: self.nodes.len() as u8,
                extent: top[0].fence.extent,
            }),
            None => self.leaves.first().map(|leaf| FlatRoot {
                height: 0,
                extent: leaf.extent,
            }),
        }
    }

    /// Loads the directory under `root`, one level per batch through
    /// `read` (which checks each extent's checksum). `first_leaf_key`
    /// gives the first key of the only leaf when the height is 0. Checks
    /// every node's level and order, and that every fence's key is the
    /// first key of the node it points to.
    pub fn load(
        root: FlatRoot,
        first_leaf_key: &mut dyn FnMut(&Extent) -> Result<FlatKey>,
        read: &mut ReadBatch<'_>,
    ) -> Result<Directory> {
        if root.height == 0 {
            let key = first_leaf_key(&root.extent)?;
            let leaf = Fence {
                key,
                extent: root.extent,
                fresh: false,
            };
            return Ok(Directory::new(vec![leaf], Vec::new()));
        }
        if root.height > LEVEL_MAX {
            return Err(StoreError::corrupted(
                Structure::Meta,
                "flat index root",
                format!("height {}", root.height),
            ));
        }
        // Top down: `pending` are the fences of the level being read.
        let mut pending: Vec<Fence> = Vec::new();
        let mut levels: Vec<Vec<Node>> = Vec::new();
        let mut expected: Vec<Option<FlatKey>> = vec![None];
        let mut extents = vec![root.extent];
        for level in (1..=root.height).rev() {
            let blobs = read(&extents)?;
            let mut nodes = Vec::with_capacity(blobs.len());
            pending.clear();
            for ((bytes, extent), want) in blobs.iter().zip(&extents).zip(&expected) {
                let location = format!("offset {}", extent.offset);
                let children = node::decode(bytes, level, &location)?;
                let first = children[0].key;
                if want.is_some_and(|want| want != first)
                    || pending.last().is_some_and(|p| p.key >= first)
                {
                    return Err(StoreError::corrupted(
                        Structure::FlatNode,
                        location,
                        "first key differs from its fence or out of order",
                    ));
                }
                nodes.push(Node {
                    fence: Fence {
                        key: first,
                        extent: *extent,
                        fresh: false,
                    },
                    last: children[children.len() - 1].key,
                    count: children.len(),
                });
                pending.extend(children.iter().map(|c| Fence {
                    key: c.key,
                    extent: c.extent,
                    fresh: false,
                }));
            }
            levels.push(nodes);
            expected = pending.iter().map(|f| Some(f.key)).collect();
            extents = pending.iter().map(|f| f.extent).collect();
        }
        levels.reverse();
        Ok(Directory::new(pending, levels))
    }
}

//! Free space of the data file, in blocks.
//!
//! Nothing about free space is stored: at open, every block referenced by
//! the last durable checkpoint is marked used and the rest is free, so a
//! crash can never leak or double-allocate a block. Blocks released by a
//! checkpoint become free only after that checkpoint's meta record is
//! durable (the caller's rule), so a checkpoint never overwrites a block
//! the previous durable checkpoint still needs.
//!
//! Allocation is next-fit from a cursor, so the blocks written by one
//! checkpoint tend to be consecutive and their writes coalesce.
//!
//! Buckets own whole blocks. Upper-trie pages are packed several to a block
//! ([`PageBlocks`] counts the live page bytes of each such block); a page
//! block is freed when its last live page is replaced.

use alloy_primitives::map::HashMap;
use std::ops::Range;

/// A bitmap of used blocks. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct BlockAllocator {
    used: Vec<u64>,
    end: u64,
    cursor: u64,
    used_count: u64,
}

impl BlockAllocator {
    /// An allocator with every block free and an empty file.
    pub fn new() -> Self {
        Self::default()
    }

    /// One past the last block that was ever allocated (the file's length
    /// in blocks as far as the store is concerned).
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Number of used blocks.
    pub fn used_blocks(&self) -> u64 {
        self.used_count
    }

    fn is_used(&self, block: u64) -> bool {
        self.used
            .get((block / 64) as usize)
            .is_some_and(|w| w & (1u64 << (block % 64)) != 0)
    }

    fn set(&mut self, block: u64, used: bool) {
        let word = (block / 64) as usize;
        if word >= self.used.len() {
            self.used.resize(word + 1, 0);
        }
        let mask = 1u64 << (block % 64);
        if used {
            debug_assert!(self.used[word] & mask == 0, "block {block} allocated twice");
            self.used[word] |= mask;
            self.used_count += 1;
        } else {
            debug_assert!(self.used[word] & mask != 0, "block {block} freed twice");
            self.used[word] &= !mask;
            self.used_count -= 1;
        }
    }

    /// Marks blocks used (at open). Returns `false`, changing nothing, if
    /// any of them is already used: two structures claim it.
    pub fn mark_used(&mut self, blocks: Range<u64>) -> bool {
        if blocks.clone().any(|b| self.is_used(b)) {
            return false;
        }
        self.end = self.end.max(blocks.end);
        for block in blocks {
            self.set(block, true);
        }
        true
    }

    /// Claims exactly `blocks` if they are all free.
    pub fn alloc_at(&mut self, blocks: Range<u64>) -> bool {
        self.mark_used(blocks)
    }

    /// Allocates `blocks` consecutive free blocks; returns the first.
    pub fn alloc(&mut self, blocks: u32) -> u64 {
        debug_assert!(blocks > 0);
        let need = u64::from(blocks);
        // Without a free block below the end (a file written block after
        // block, as a bulk build writes it) there is nothing to search:
        // scanning the whole bitmap on every allocation made such writes
        // quadratic in the file's size.
        let found = if self.used_count >= self.end {
            None
        } else {
            self.find_run(self.cursor, self.end, need)
                .or_else(|| self.find_run(0, self.cursor.min(self.end), need))
        };
        let start = found.unwrap_or(self.end);
        for block in start..start + need {
            self.set(block, true);
        }
        self.end = self.end.max(start + need);
        self.cursor = start + need;
        start
    }

    /// First run of `need` free blocks starting in `from..to` (and lying
    /// below `self.end`).
    fn find_run(&self, from: u64, to: u64, need: u64) -> Option<u64> {
        let mut block = from;
        while block < to {
            // Skip whole used words quickly.
            let word = (block / 64) as usize;
            if block.is_multiple_of(64) && self.used.get(word).is_some_and(|w| *w == u64::MAX) {
                block += 64;
                continue;
            }
            if self.is_used(block) {
                block += 1;
                continue;
            }
            let mut len = 1;
            while len < need && block + len < self.end && !self.is_used(block + len) {
                len += 1;
            }
            if len == need {
                return Some(block);
            }
            block += len.max(1);
        }
        None
    }

    /// Returns blocks to the free pool.
    pub fn free(&mut self, blocks: Range<u64>) {
        for block in blocks {
            self.set(block, false);
        }
    }
}

/// Live page bytes of each block holding pages.
#[derive(Clone, Debug, Default)]
pub struct PageBlocks {
    live: HashMap<u64, u32>,
    live_bytes: u64,
}

impl PageBlocks {
    /// Counts the bytes of a page at `offset..offset + len` as live.
    pub fn add(&mut self, offset: u64, len: u32) {
        for (block, bytes) in split_by_block(offset, len) {
            *self.live.entry(block).or_insert(0) += bytes;
        }
        self.live_bytes += u64::from(len);
    }

    /// Removes a page; returns the blocks left without live pages.
    pub fn remove(&mut self, offset: u64, len: u32) -> Vec<u64> {
        let mut emptied = Vec::new();
        for (block, bytes) in split_by_block(offset, len) {
            if let Some(live) = self.live.get_mut(&block) {
                debug_assert!(*live >= bytes, "page bytes counted twice");
                *live -= bytes.min(*live);
                if *live == 0 {
                    self.live.remove(&block);
                    emptied.push(block);
                }
            }
        }
        self.live_bytes -= u64::from(len).min(self.live_bytes);
        emptied
    }

    /// Whether `block` holds live pages.
    pub fn contains(&self, block: u64) -> bool {
        self.live.contains_key(&block)
    }

    /// Blocks holding live pages.
    pub fn block_count(&self) -> u64 {
        self.live.len() as u64
    }

    /// Bytes of live pages.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }
}

/// The `(block, bytes)` pieces of a byte range.
fn split_by_block(offset: u64, len: u32) -> impl Iterator<Item = (u64, u32)> {
    let block_bytes = crate::format::BLOCK_BYTES as u64;
    let end = offset + u64::from(len);
    let first = offset / block_bytes;
    let last = end.div_ceil(block_bytes);
    (first..last).map(move |block| {
        let start = offset.max(block * block_bytes);
        let stop = end.min((block + 1) * block_bytes);
        #[allow(clippy::cast_possible_truncation)] // at most one block
        let bytes = (stop - start) as u32;
        (block, bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(block: u64, blocks: u32) -> Range<u64> {
        block..block + u64::from(blocks)
    }

    #[test]
    fn allocations_never_overlap_and_reuse_freed_space() {
        let mut alloc = BlockAllocator::new();
        let mut live: Vec<Range<u64>> = Vec::new();
        let mut state = 7u64;
        for step in 0..5000u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if live.len() > 50 && state.is_multiple_of(3) {
                let victim = live.swap_remove((state >> 33) as usize % live.len());
                alloc.free(victim);
            } else {
                let blocks = 1 + (state >> 40) as u32 % if step % 10 == 0 { 4 } else { 1 };
                let start = alloc.alloc(blocks);
                live.push(extent(start, blocks));
            }
        }
        let mut seen: alloy_primitives::map::HashSet<_> = alloy_primitives::map::HashSet::default();
        for e in &live {
            for b in e.clone() {
                assert!(seen.insert(b), "block {b} handed out twice");
            }
        }
        assert_eq!(alloc.used_blocks(), seen.len() as u64);
        // Freed space was reused: the file is far smaller than all allocations.
        assert!(alloc.end() < 2 * seen.len() as u64 + 8);
    }

    #[test]
    fn mark_used_detects_overlaps() {
        let mut alloc = BlockAllocator::new();
        assert!(alloc.mark_used(extent(10, 3)));
        assert!(!alloc.mark_used(extent(12, 1)));
        assert!(alloc.mark_used(extent(13, 1)));
        assert_eq!(alloc.end(), 14);
        assert_eq!(alloc.used_blocks(), 4);
        let first = alloc.alloc(1);
        assert!(!(10..14).contains(&first));
    }

    #[test]
    fn page_blocks_free_a_block_with_its_last_page() {
        let mut pages = PageBlocks::default();
        pages.add(4096 * 5 + 100, 5000); // blocks 5 and 6
        pages.add(4096 * 6 + 2000, 100); // block 6
        assert_eq!(pages.block_count(), 2);
        assert_eq!(pages.remove(4096 * 5 + 100, 5000), vec![5]);
        assert_eq!(pages.remove(4096 * 6 + 2000, 100), vec![6]);
        assert_eq!(pages.live_bytes(), 0);
    }
}

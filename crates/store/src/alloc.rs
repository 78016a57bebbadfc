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

use crate::format::BlockRef;

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

    /// Marks an extent used (at open). Returns `false`, changing nothing,
    /// if any of its blocks is already used: two structures claim it.
    pub fn mark_used(&mut self, extent: &BlockRef) -> bool {
        let range = extent.block..extent.block + u64::from(extent.blocks);
        if range.clone().any(|b| self.is_used(b)) {
            return false;
        }
        for block in range {
            self.set(block, true);
        }
        self.end = self.end.max(extent.block + u64::from(extent.blocks));
        true
    }

    /// Allocates `blocks` consecutive free blocks; returns the first.
    pub fn alloc(&mut self, blocks: u32) -> u64 {
        debug_assert!(blocks > 0);
        let need = u64::from(blocks);
        let found = self
            .find_run(self.cursor, self.end, need)
            .or_else(|| self.find_run(0, self.cursor.min(self.end), need));
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

    /// Returns an extent's blocks to the free pool.
    pub fn free(&mut self, extent: &BlockRef) {
        for block in extent.block..extent.block + u64::from(extent.blocks) {
            self.set(block, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(block: u64, blocks: u32) -> BlockRef {
        BlockRef {
            block,
            blocks,
            crc: 0,
        }
    }

    #[test]
    fn allocations_never_overlap_and_reuse_freed_space() {
        let mut alloc = BlockAllocator::new();
        let mut live: Vec<BlockRef> = Vec::new();
        let mut state = 7u64;
        for step in 0..5000u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if live.len() > 50 && state.is_multiple_of(3) {
                let victim = live.swap_remove((state >> 33) as usize % live.len());
                alloc.free(&victim);
            } else {
                let blocks = 1 + (state >> 40) as u32 % if step % 10 == 0 { 4 } else { 1 };
                let start = alloc.alloc(blocks);
                live.push(extent(start, blocks));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for e in &live {
            for b in e.block..e.block + u64::from(e.blocks) {
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
        assert!(alloc.mark_used(&extent(10, 3)));
        assert!(!alloc.mark_used(&extent(12, 1)));
        assert!(alloc.mark_used(&extent(13, 1)));
        assert_eq!(alloc.end(), 14);
        assert_eq!(alloc.used_blocks(), 4);
        let first = alloc.alloc(1);
        assert!(!(10..14).contains(&first));
    }
}

//! A slab of stem values: each stem owns one block of `2^class` value slots
//! in a shared vector, so stems hold no heap allocation of their own. Blocks
//! that a growing stem leaves behind go to a per-class free list.

use alloy_primitives::B256;

/// Number of block size classes: capacities 1, 2, 4, ..., 256.
const CLASS_COUNT: usize = 9;

/// Where a stem's values live in the slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// Index of the first slot.
    pub offset: u32,
    /// Capacity is `1 << class`.
    pub class: u8,
}

impl Block {
    /// Number of value slots in the block.
    pub fn capacity(self) -> usize {
        1usize << self.class
    }
}

/// The value store of one shard.
#[derive(Clone, Debug, Default)]
pub(crate) struct ValueSlab {
    slots: Vec<B256>,
    free: [Vec<u32>; CLASS_COUNT],
}

impl ValueSlab {
    /// The smallest class holding `count` values (count 1..=256).
    pub fn class_for(count: usize) -> u8 {
        debug_assert!((1..=256).contains(&count));
        (count.next_power_of_two().trailing_zeros() & 0xff) as u8
    }

    /// A block of the given class (contents unspecified).
    pub fn alloc(&mut self, class: u8) -> Block {
        debug_assert!(usize::from(class) < CLASS_COUNT);
        if let Some(offset) = self.free[usize::from(class)].pop() {
            return Block { offset, class };
        }
        let offset = self.slots.len();
        assert!(
            offset + (1 << class) <= u32::MAX as usize,
            "value slab exceeds u32 offsets"
        );
        self.slots.resize(offset + (1 << class), B256::ZERO);
        #[allow(clippy::cast_possible_truncation)] // asserted above
        Block {
            offset: offset as u32,
            class,
        }
    }

    /// Returns a block to its free list.
    pub fn release(&mut self, block: Block) {
        self.free[usize::from(block.class)].push(block.offset);
    }

    /// The first `len` slots of `block`.
    pub fn get(&self, block: Block, len: usize) -> &[B256] {
        debug_assert!(len <= block.capacity());
        let start = block.offset as usize;
        &self.slots[start..start + len]
    }

    /// All slots of `block`, writable.
    pub fn get_mut(&mut self, block: Block) -> &mut [B256] {
        let start = block.offset as usize;
        &mut self.slots[start..start + block.capacity()]
    }

    /// Copies the first `len` slots of `from` into the start of `to`.
    pub fn copy(&mut self, from: Block, to: Block, len: usize) {
        debug_assert!(len <= from.capacity() && len <= to.capacity());
        let src = from.offset as usize;
        self.slots.copy_within(src..src + len, to.offset as usize);
    }

    /// Bytes held by the slab, including free blocks.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 32
    }
}

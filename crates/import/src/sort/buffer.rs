//! The in-memory sort buffer: records up to a fixed count, sorted in
//! parallel in their order (for tree entries: by key, then origin, so that
//! equal keys list their origins in input order), checked for duplicates,
//! and handed out in chunks that are freed as the build consumes them.

use rayon::slice::ParallelSliceMut;

use super::record::Record;

/// Two entries with the same tree key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Duplicate {
    /// The key.
    pub key: [u8; 32],
    /// The origin of the first (smaller origin).
    pub first_origin: u64,
    /// The origin of the second.
    pub second_origin: u64,
}

/// Records up to `capacity`, grown as they come.
#[derive(Debug)]
pub(crate) struct SortBuffer<T> {
    entries: Vec<T>,
    capacity: usize,
}

impl<T: Record> SortBuffer<T> {
    /// A buffer of at most `capacity` records (at least one).
    pub fn new(capacity: usize) -> SortBuffer<T> {
        SortBuffer {
            entries: Vec::new(),
            capacity: capacity.max(1),
        }
    }

    /// Whether the buffer holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the buffer is full.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// Moves as many of `entries` as fit; returns how many.
    pub fn fill_from(&mut self, entries: &[T]) -> usize {
        let room = self.capacity - self.entries.len().min(self.capacity);
        let taken = room.min(entries.len());
        let needed = self.entries.len() + taken;
        if needed > self.entries.capacity() {
            // Doubling, capped at the capacity: a large buffer is one
            // mapping that the allocator grows in place.
            let target = (self.entries.capacity() * 2)
                .max(needed)
                .max(4096)
                .min(self.capacity);
            self.entries.reserve_exact(target - self.entries.len());
        }
        self.entries.extend_from_slice(&entries[..taken]);
        taken
    }

    /// Sorts the records (parallel, in their order) and returns them,
    /// keeping the allocation for the next fill.
    pub fn sorted(&mut self) -> &[T] {
        sort_records(&mut self.entries);
        &self.entries
    }

    /// Empties the buffer, keeping its allocation.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entries, sorted, and the buffer's memory with them.
    pub fn into_sorted(mut self) -> Vec<T> {
        sort_records(&mut self.entries);
        self.entries
    }
}

/// Sorts in the record's order (parallel).
pub(crate) fn sort_records<T: Record>(records: &mut [T]) {
    records.par_sort_unstable_by(T::order);
}

/// The first duplicate in sorted `records`.
pub(crate) fn first_duplicate<T: Record>(records: &[T]) -> Option<Duplicate> {
    records
        .windows(2)
        .find_map(|pair| pair[0].duplicate(&pair[1]))
}

/// Cuts sorted `entries` into chunks of `chunk_entries` in order, from
/// the back, shrinking the original allocation as it goes: at no point is
/// more than one chunk held twice. The build then frees each chunk as it
/// finishes with it.
pub(crate) fn into_chunks<T>(mut entries: Vec<T>, chunk_entries: usize) -> Vec<Vec<T>> {
    let chunk_entries = chunk_entries.max(1);
    let mut reversed = Vec::new();
    while entries.len() > chunk_entries {
        let tail = entries.split_off(entries.len() - chunk_entries);
        entries.shrink_to_fit();
        reversed.push(tail);
    }
    reversed.push(entries);
    reversed.reverse();
    reversed
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;
    use crate::entries::Entry;

    fn entry(key: u8, origin: u64) -> Entry {
        Entry {
            key: [key; 32],
            value: [1; 32],
            origin,
        }
    }

    #[test]
    fn fills_up_to_capacity_and_sorts() {
        let mut buffer = SortBuffer::new(3);
        assert_eq!(buffer.fill_from(&[entry(3, 0), entry(1, 1)]), 2);
        assert_eq!(buffer.fill_from(&[entry(2, 2), entry(0, 3)]), 1);
        assert!(buffer.is_full());
        let keys: Vec<u8> = buffer.sorted().iter().map(|e| e.key[0]).collect();
        assert_eq!(keys, [1, 2, 3]);
    }

    #[test]
    fn duplicates_name_both_origins_in_order() {
        let mut entries = vec![entry(5, 9), entry(1, 0), entry(5, 2)];
        sort_records(&mut entries);
        assert_eq!(
            first_duplicate(&entries),
            Some(Duplicate {
                key: [5; 32],
                first_origin: 2,
                second_origin: 9
            })
        );
    }

    #[test]
    fn chunks_keep_the_order() {
        let entries: Vec<Entry> = (0..10).map(|i| entry(i, 0)).collect();
        let chunks = into_chunks(entries.clone(), 3);
        assert_eq!(
            chunks.iter().map(Vec::len).collect::<Vec<_>>(),
            [1, 3, 3, 3]
        );
        assert_eq!(chunks.concat(), entries);
        assert_eq!(
            into_chunks(Vec::<Entry>::new(), 3),
            vec![Vec::<Entry>::new()]
        );
    }
}

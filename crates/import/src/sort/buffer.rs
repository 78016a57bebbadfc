//! The in-memory sort buffer: entries up to a fixed count, sorted in
//! parallel by key (then origin, so that equal keys list their origins in
//! input order), checked for duplicate keys, and handed out in chunks that
//! are freed as the build consumes them.

use std::cmp::Ordering;

use rayon::slice::ParallelSliceMut;

use crate::entries::Entry;

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

/// Entries up to `capacity`, grown as they come.
#[derive(Debug)]
pub(crate) struct SortBuffer {
    entries: Vec<Entry>,
    capacity: usize,
}

impl SortBuffer {
    /// A buffer of at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> SortBuffer {
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
    pub fn fill_from(&mut self, entries: &[Entry]) -> usize {
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

    /// Sorts the entries (parallel, by key then origin) and returns them,
    /// keeping the allocation for the next fill.
    pub fn sorted(&mut self) -> &[Entry] {
        sort_entries(&mut self.entries);
        &self.entries
    }

    /// Empties the buffer, keeping its allocation.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entries, sorted, and the buffer's memory with them.
    pub fn into_sorted(mut self) -> Vec<Entry> {
        sort_entries(&mut self.entries);
        self.entries
    }
}

/// Sorts by key, then origin.
pub(crate) fn sort_entries(entries: &mut [Entry]) {
    entries.par_sort_unstable_by(entry_order);
}

/// The order of keys: as byte strings, compared a word at a time (keys are
/// hashes, so the first word nearly always decides; a byte-wise compare
/// costs a call into `memcmp` per comparison).
#[inline]
pub(crate) fn key_order(a: &[u8; 32], b: &[u8; 32]) -> Ordering {
    for i in 0..4 {
        let word = |key: &[u8; 32]| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&key[i * 8..i * 8 + 8]);
            u64::from_be_bytes(bytes)
        };
        match word(a).cmp(&word(b)) {
            Ordering::Equal => continue,
            unequal => return unequal,
        }
    }
    Ordering::Equal
}

/// The order of entries: key, then origin.
#[inline]
pub(crate) fn entry_order(a: &Entry, b: &Entry) -> Ordering {
    key_order(&a.key, &b.key).then(a.origin.cmp(&b.origin))
}

/// The first two entries of sorted `entries` with the same key.
pub(crate) fn first_duplicate(entries: &[Entry]) -> Option<Duplicate> {
    entries
        .windows(2)
        .find(|pair| pair[0].key == pair[1].key)
        .map(|pair| Duplicate {
            key: pair[0].key,
            first_origin: pair[0].origin,
            second_origin: pair[1].origin,
        })
}

/// Cuts sorted `entries` into chunks of `chunk_entries` in order, from
/// the back, shrinking the original allocation as it goes: at no point is
/// more than one chunk held twice. The build then frees each chunk as it
/// finishes with it.
pub(crate) fn into_chunks(mut entries: Vec<Entry>, chunk_entries: usize) -> Vec<Vec<Entry>> {
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
        sort_entries(&mut entries);
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
    fn key_order_is_the_byte_order() {
        let mut keys: Vec<[u8; 32]> = (0..500u32)
            .map(|i| {
                let mut key = [0u8; 32];
                key[(i % 32) as usize] = (i / 32) as u8;
                key[31 - (i % 7) as usize] ^= i as u8;
                key
            })
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(key_order(a, b), a.cmp(b));
            }
        }
        keys.sort_by(key_order);
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
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
        assert_eq!(into_chunks(Vec::new(), 3), vec![Vec::<Entry>::new()]);
    }
}

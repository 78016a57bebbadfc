//! What a simulated disk may hold after power loss: the [`CrashMode`]s and
//! the construction of one file's image under each.
//!
//! Every mode starts from the file's durable image (what the last sync of
//! the file made durable) and differs only in what becomes of the pending
//! operations: all lost, all kept, a random subset kept (in order, or in a
//! shuffled order), kept writes torn at a sector boundary or at any byte.
//! The choices come from a seeded [`SplitMix64`], so an image is a function
//! of the disk's state, the mode and the seed.

use ubt_spec::rng::SplitMix64;

use super::{apply_write, to_index, FileState, PendingOp, SECTOR_SIZE};

/// What survives in a [`super::SimDir::crash_image`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CrashMode {
    /// Only durable images, and only files whose names were made durable
    /// by a `sync_dir`: every unsynced operation is lost.
    DropUnsynced,
    /// The live images of every file, as if everything had been synced
    /// just before the power went.
    KeepUnsynced,
    /// Each pending operation (write or `set_len`) is independently kept
    /// or dropped with probability 1/2, kept ones replayed in their
    /// original order on the durable image. Each file whose name is not
    /// yet durable is likewise kept or dropped as a whole first.
    RandomSubset,
    /// Like [`CrashMode::RandomSubset`], but each kept write is torn with
    /// probability 1/2: only a prefix of the sectors it covers lands, the
    /// part of the write inside the sector at the tear point is filled with
    /// garbage or zeros, and the rest of the write does not land. If the
    /// write extended the file, the file grows either to the end of the
    /// write or to the end of the torn sector (bytes not landed in the
    /// grown part read as zeros). Nothing outside the write's range
    /// changes.
    Torn,
    /// Like [`CrashMode::Torn`], but with no sector granularity: a torn
    /// write lands up to a uniformly chosen byte, and each byte from there
    /// to the end of the write is left as it was (not landed), zeroed, or
    /// garbage (one choice per torn write). The file grows to the end of
    /// the write or to the tear point. Models a disk that does not even
    /// write a 512-byte sector atomically.
    TornAnyByte,
    /// Like [`CrashMode::RandomSubset`], but the kept writes between two
    /// `set_len` calls land in a random order, as a device reordering its
    /// write queue would leave them (a later write to the same bytes may be
    /// overwritten by an earlier one). `set_len` calls keep their place.
    Reordered,
}

/// The image of `file` after power loss under `mode`, or `None` if the
/// file itself is lost (its name was never made durable).
pub(super) fn file_image(
    file: &FileState,
    mode: CrashMode,
    rng: &mut SplitMix64,
) -> Option<Vec<u8>> {
    match mode {
        CrashMode::KeepUnsynced => return Some(file.live.clone()),
        CrashMode::DropUnsynced => return file.name_durable.then(|| file.durable.clone()),
        _ => {}
    }
    if !file.name_durable && !rng.coin() {
        return None;
    }
    let mut image = file.durable.clone();
    let mut kept: Vec<&PendingOp> = file.pending.iter().filter(|_| rng.coin()).collect();
    if mode == CrashMode::Reordered {
        shuffle_between_set_lens(&mut kept, rng);
    }
    for op in kept {
        match (op, mode) {
            (PendingOp::Write { offset, data }, CrashMode::Torn) => {
                apply_maybe_torn(&mut image, *offset, data, rng)
            }
            (PendingOp::Write { offset, data }, CrashMode::TornAnyByte) => {
                apply_maybe_torn_any_byte(&mut image, *offset, data, rng)
            }
            _ => op.apply(&mut image),
        }
    }
    Some(image)
}

/// Shuffles each run of writes between `set_len` calls (Fisher-Yates).
fn shuffle_between_set_lens(ops: &mut [&PendingOp], rng: &mut SplitMix64) {
    for run in ops.split_mut(|op| matches!(op, PendingOp::SetLen(_))) {
        for i in (1..run.len()).rev() {
            let j = rng.index(i + 1);
            run.swap(i, j);
        }
    }
}

/// Replays one kept write in [`CrashMode::Torn`]: whole, or torn at a
/// sector boundary.
fn apply_maybe_torn(image: &mut Vec<u8>, offset: u64, data: &[u8], rng: &mut SplitMix64) {
    if data.is_empty() {
        return;
    }
    if !rng.coin() {
        apply_write(image, offset, data);
        return;
    }
    let end = offset + data.len() as u64;
    let first_sector = offset / SECTOR_SIZE;
    let last_sector = (end - 1) / SECTOR_SIZE;
    let tear_sector = first_sector + rng.below(last_sector - first_sector + 1);
    let tear_start = offset.max(tear_sector * SECTOR_SIZE);
    let tear_end = end.min((tear_sector + 1) * SECTOR_SIZE);
    apply_write(image, offset, &data[..to_index(tear_start - offset)]);
    let grown_to = if rng.coin() { end } else { tear_end };
    if (image.len() as u64) < grown_to {
        image.resize(to_index(grown_to), 0);
    }
    let garbage = rng.coin();
    for byte in &mut image[to_index(tear_start)..to_index(tear_end)] {
        *byte = if garbage {
            (rng.next_u64() & 0xff) as u8
        } else {
            0
        };
    }
}

/// Replays one kept write in [`CrashMode::TornAnyByte`]: whole, or landed
/// up to a random byte with the rest old, zeroed or garbage.
fn apply_maybe_torn_any_byte(image: &mut Vec<u8>, offset: u64, data: &[u8], rng: &mut SplitMix64) {
    if data.is_empty() {
        return;
    }
    if !rng.coin() {
        apply_write(image, offset, data);
        return;
    }
    let tear = rng.index(data.len());
    apply_write(image, offset, &data[..tear]);
    let end = offset + data.len() as u64;
    let tear_at = offset + tear as u64;
    let grown_to = if rng.coin() { end } else { tear_at };
    if (image.len() as u64) < grown_to {
        image.resize(to_index(grown_to), 0);
    }
    let rest_end = to_index(end.min(image.len() as u64));
    let rest_start = to_index(tear_at).min(rest_end);
    match rng.below(3) {
        0 => {} // the rest never landed
        1 => image[rest_start..rest_end].fill(0),
        _ => {
            for byte in &mut image[rest_start..rest_end] {
                *byte = (rng.next_u64() & 0xff) as u8;
            }
        }
    }
}

//! Fuzz target bodies for every decoder of the store's on-disk structures
//! and a model-based target (random operation sequences, crashes and I/O
//! faults against the reference tree). Not part of the API.
//!
//! The cargo-fuzz targets in `fuzz/` call these bodies; the in-tree test
//! `tests/fuzz_bodies.rs` runs them over the seed inputs of [`seeds`] and
//! thousands of mutations of them on every `cargo test`, so each target
//! runs briefly in CI without a nightly toolchain.
//!
//! A body never panics by itself: it returns `Err` describing the broken
//! property (a decoded structure that re-encodes differently, a store that
//! disagrees with the model). A panic inside the store is a finding too.
//!
//! Inputs start with a control byte. For checksummed structures, its bit 0
//! asks the body to recompute the checksum before decoding, so that mutated
//! inputs reach the structural checks behind it instead of all failing the
//! checksum.
//!
//! * [`decoders`]: buckets, trie pages, meta slots and the choice between
//!   them, WAL records, WAL header marks and WAL replay, revert segments,
//!   flat index leaves and directory nodes, and whole database images
//!   opened and verified.
//! * [`model`]: the operation-sequence target.
//! * [`seeds`]: valid inputs for every target, taken from a real database.

pub mod decoders;
pub mod model;
pub mod seeds;

/// What a body reports when a property fails.
pub type Finding = String;

/// The control byte and the rest of an input.
fn split_control(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&control, rest)) => (control, rest),
        None => (0, &[]),
    }
}

/// A little-endian `u32` at `at`, if the bytes are there.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([field[0], field[1], field[2], field[3]]))
}

/// Recomputes the CRC-32C in bytes `[0, 4)` over `[4, len)`, where `len` is
/// the `u32` length field at `len_at` (clamped to the bytes present).
fn fix_crc(bytes: &mut [u8], len_at: usize) {
    let Some(len) = u32_at(bytes, len_at) else {
        return;
    };
    let len = (len as usize).clamp(4, bytes.len());
    let crc = crate::format::checksum(&bytes[4..len]);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
}

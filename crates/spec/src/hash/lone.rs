//! The hash chain of a stem holding a single value, as one call: on x86-64
//! with SHA extensions the whole chain stays in registers (see
//! `x86::lone`), elsewhere it is a loop over [`hash32`] and [`hash64`].

use super::{hash32, hash64, Hash, ZERO_HASH};

/// A stem with exactly one present value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoneLeaf {
    /// The first half of the stem node's message: the stem and a zero byte.
    pub(crate) prefix: [u8; 32],
    /// The value.
    pub(crate) value: [u8; 32],
    /// The value's slot in the stem.
    pub(crate) sub_index: u8,
}

/// For each item, `sha256(prefix || root)` where `root` is the stem's
/// subtree root: `hash32(value)` carried up eight levels, at level `l` as the
/// left child of `hash64(h || 0)` if bit `l` of `sub_index` is clear, else as
/// the right child of `hash64(0 || h)`; a zero hash stays zero (the spec's
/// zero rule).
///
/// # Panics
///
/// If `out` and `items` differ in length.
pub(crate) fn lone_leaf_stems(items: &[LoneLeaf], out: &mut [Hash]) {
    assert_eq!(items.len(), out.len(), "one output per stem");
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = super::many::accelerated() {
        // The leaf, eight levels of two compressions, the stem node's two.
        super::count::add(19 * items.len() as u64);
        if kernel.lone_leaf_stems(items, out) {
            return;
        }
    }
    for (item, hash) in items.iter().zip(out) {
        *hash = portable(item);
    }
}

/// One chain with the single-message functions.
fn portable(item: &LoneLeaf) -> Hash {
    let mut hash = hash32(&item.value);
    for level in 0..8 {
        if hash != ZERO_HASH {
            let side = 32 * usize::from((item.sub_index >> level) & 1);
            let mut message = [0u8; 64];
            message[side..side + 32].copy_from_slice(&hash);
            hash = hash64(&message);
        }
    }
    let mut message = [0u8; 64];
    message[..32].copy_from_slice(&item.prefix);
    message[32..].copy_from_slice(&hash);
    hash64(&message)
}

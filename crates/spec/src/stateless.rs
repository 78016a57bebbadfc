//! Stateless state-root computation: the post-state root of a block from a
//! pre-state [`Proof`] of the keys it touches and its writes, without the
//! full tree.

use alloy_primitives::B256;

use crate::hash::Hash;
use crate::proof::{PartialTree, Proof, ProofError};

/// Verifies `proof` against `pre_root`, applies `writes` (in order; later
/// writes to a key win) and returns the post-state root. Every written key
/// must be one of the proof's keys ([`ProofError::UnprovenWrite`]
/// otherwise).
pub fn apply(pre_root: &Hash, proof: &Proof, writes: &[(B256, B256)]) -> Result<Hash, ProofError> {
    let (mut tree, _) = PartialTree::build(proof)?;
    if tree.root() != *pre_root {
        return Err(ProofError::RootMismatch);
    }
    for (key, value) in writes {
        if proof.keys().binary_search(key).is_err() {
            return Err(ProofError::UnprovenWrite(*key));
        }
        tree.insert(key, *value)?;
    }
    Ok(tree.root())
}

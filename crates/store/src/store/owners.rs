//! [`Owners`]: the account owning each key a layer touched, on a database
//! with a flat index (ARCHITECTURE.md, "Read locality").
//!
//! A block applied here names its accounts write by write, so its owners
//! are kept as they came, one per op, in the ops' order: building a map
//! keyed by tree key for every block cost as much as a fifth of an apply.
//! A persisted layer drops its ops (replay rebuilds them from the WAL), so
//! its owners then become a list of `(key, owner)` pairs, as do those of
//! layers rebuilt from the WAL or the revert segment. The rare paths that
//! look owners up by key (a revert, the revert segment a checkpoint
//! writes) build a map from either form.

use alloy_primitives::map::B256Map;
use alloy_primitives::{Address, B256};

/// Each op's owner looked up in `by_key` (the zero address for a key it
/// lacks): what a WAL record or the revert segment carries, parallel to
/// `ops`.
pub fn each_owner(ops: &[(B256, Option<B256>)], by_key: &B256Map<Address>) -> Vec<Address> {
    ops.iter()
        .map(|(key, _)| by_key.get(key).copied().unwrap_or_default())
        .collect()
}

/// See the module documentation.
#[derive(Clone, Debug, Default)]
pub enum Owners {
    /// No flat index: no owners.
    #[default]
    None,
    /// One per op of the layer, in order (while the layer keeps its ops).
    ByOp(Vec<Address>),
    /// `(key, owner)` pairs, for layers that keep no ops.
    Listed(Vec<(B256, Address)>),
}

impl Owners {
    /// Each op's owner, parallel to `ops` (empty when none is held): what
    /// a WAL record carries.
    pub fn per_op(&self, ops: &[(B256, Option<B256>)]) -> Vec<Address> {
        match self {
            Owners::None => Vec::new(),
            Owners::ByOp(owners) => {
                debug_assert_eq!(owners.len(), ops.len(), "one owner per op");
                owners.clone()
            }
            Owners::Listed(_) => each_owner(ops, &self.by_key(ops)),
        }
    }

    /// `(key, owner)` of every key the layer touched (a key written more
    /// than once may come as often; all its ops name the same account).
    pub fn pairs<'a>(
        &'a self,
        ops: &'a [(B256, Option<B256>)],
    ) -> Box<dyn Iterator<Item = (B256, Address)> + 'a> {
        match self {
            Owners::None => Box::new(std::iter::empty()),
            Owners::ByOp(owners) => {
                debug_assert_eq!(owners.len(), ops.len(), "one owner per op");
                Box::new(ops.iter().map(|(key, _)| *key).zip(owners.iter().copied()))
            }
            Owners::Listed(pairs) => Box::new(pairs.iter().copied()),
        }
    }

    /// The owners by tree key.
    pub fn by_key(&self, ops: &[(B256, Option<B256>)]) -> B256Map<Address> {
        self.pairs(ops).collect()
    }

    /// The same owners for a layer about to drop `ops`: one owner per op
    /// becomes a list of pairs.
    pub fn detached(self, ops: &[(B256, Option<B256>)]) -> Owners {
        match self {
            Owners::ByOp(_) => Owners::Listed(self.pairs(ops).collect()),
            owners => owners,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_names_the_same_owners() {
        let ops: Vec<(B256, Option<B256>)> = (0..6u8)
            .map(|i| (B256::repeat_byte(i % 4), Some(B256::repeat_byte(i))))
            .collect();
        let owner = |key: &B256| Address::repeat_byte(key[0] + 10);
        let by_op = Owners::ByOp(ops.iter().map(|(key, _)| owner(key)).collect());
        let listed = by_op.clone().detached(&ops);
        assert!(matches!(listed, Owners::Listed(_)));
        for owners in [&by_op, &listed] {
            assert_eq!(
                owners.per_op(&ops),
                ops.iter().map(|(key, _)| owner(key)).collect::<Vec<_>>()
            );
            let map = owners.by_key(&ops);
            assert_eq!(map.len(), 4);
            assert!(map.iter().all(|(key, who)| *who == owner(key)));
            assert!(owners.pairs(&ops).all(|(key, who)| who == owner(&key)));
        }
        // Once detached, the owners no longer need the ops.
        assert_eq!(listed.by_key(&[]).len(), 4);
        assert!(Owners::None.per_op(&ops).is_empty());
        assert!(Owners::None.by_key(&ops).is_empty());
    }
}

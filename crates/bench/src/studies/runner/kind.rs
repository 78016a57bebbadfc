//! The workloads `ubt bench run` knows, by the names reports use.

use std::fmt;
use std::str::FromStr;

use ubt_evm::workloads::BlockShape;

/// The `sload`/`sstore` percentages of the studies' five mixed variants.
pub const MIXED_RATIOS: [(u32, u32); 5] = [(10, 90), (30, 70), (50, 50), (70, 30), (90, 10)];

/// A workload: blocks the EVM builds over a chain-like state, or blocks
/// replayed from a workload directory's `blocks.jsonl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// `balanceOf(address(i))` calls over the token's holders (read only).
    Erc20BalanceOf,
    /// `approve(address(i), i)` calls into fresh allowance slots.
    Erc20Approve,
    /// `balanceOf` then `approve` calls, the block's gas split
    /// `sload_pct`/`sstore_pct`.
    Erc20Mixed {
        /// Percent of the call gas spent on `balanceOf`.
        sload_pct: u32,
        /// Percent of the call gas spent on `approve`.
        sstore_pct: u32,
    },
    /// `SLOAD` of consecutive preset slots of one contract (256 per stem).
    SloadSeq,
    /// `SSTORE` of new values into consecutive preset slots.
    SstoreSeq,
    /// The blocks of the workload directory itself (`blocks.jsonl`), e.g.
    /// the generator's `raw_reads` and `raw_writes`.
    Replay,
    /// The blocks of a hot-contracts state (`ubt bench gen --mode
    /// hot-contracts`, [`crate::gen::hot`]), replayed from its
    /// `blocks.jsonl`: Zipf-distributed slot reads and writes over a few
    /// large contracts and a chain-like rest.
    HotContracts,
}

impl Workload {
    /// The workloads `ubt bench run` runs on a chain-like state when none
    /// are named: the studies' three ERC20 benchmarks (mixed as its
    /// median variant, 50-50) and the sequential pair.
    pub const DEFAULT_CHAIN: [Workload; 5] = [
        Workload::Erc20BalanceOf,
        Workload::Erc20Approve,
        Workload::Erc20Mixed {
            sload_pct: 50,
            sstore_pct: 50,
        },
        Workload::SloadSeq,
        Workload::SstoreSeq,
    ];

    /// True when the EVM executes the blocks (they are recorded into
    /// `blocks.jsonl` for engines that replay); false for the workloads
    /// replayed from the state directory's own `blocks.jsonl`.
    pub fn executes(self) -> bool {
        !matches!(self, Workload::Replay | Workload::HotContracts)
    }

    /// The name in metrics and reports, with the block shape when it is
    /// not the group-depth study's (`erc20_approve@mpt`).
    pub fn label(self, shape: BlockShape) -> String {
        match shape {
            BlockShape::Gd => self.to_string(),
            BlockShape::Mpt => format!("{self}@mpt"),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::Erc20BalanceOf => f.write_str("erc20_balanceof"),
            Workload::Erc20Approve => f.write_str("erc20_approve"),
            Workload::Erc20Mixed {
                sload_pct,
                sstore_pct,
            } => write!(f, "erc20_mixed_{sload_pct}_{sstore_pct}"),
            Workload::SloadSeq => f.write_str("sload_seq"),
            Workload::SstoreSeq => f.write_str("sstore_seq"),
            Workload::Replay => f.write_str("replay"),
            Workload::HotContracts => f.write_str("hot_contracts"),
        }
    }
}

/// A workload name that is not one of [`Workload`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown workload {0:?}: expected erc20_balanceof, erc20_approve, \
     erc20_mixed_<sload>_<sstore> (10_90, 30_70, 50_50, 70_30, 90_10), \
     sload_seq, sstore_seq, replay or hot_contracts"
)]
pub struct UnknownWorkload(pub String);

impl FromStr for Workload {
    type Err = UnknownWorkload;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownWorkload(text.to_owned());
        Ok(match text {
            "erc20_balanceof" => Workload::Erc20BalanceOf,
            "erc20_approve" => Workload::Erc20Approve,
            "sload_seq" => Workload::SloadSeq,
            "sstore_seq" => Workload::SstoreSeq,
            "replay" => Workload::Replay,
            "hot_contracts" => Workload::HotContracts,
            _ => {
                let ratio = text.strip_prefix("erc20_mixed_").ok_or_else(unknown)?;
                let (sload, sstore) = ratio.split_once('_').ok_or_else(unknown)?;
                let sload_pct: u32 = sload.parse().map_err(|_| unknown())?;
                let sstore_pct: u32 = sstore.parse().map_err(|_| unknown())?;
                if !MIXED_RATIOS.contains(&(sload_pct, sstore_pct)) {
                    return Err(unknown());
                }
                Workload::Erc20Mixed {
                    sload_pct,
                    sstore_pct,
                }
            }
        })
    }
}

/// Parses `gd` (16,777,216-gas blocks, the group-depth study) or `mpt`
/// (100,000,000-gas blocks, the MPT study).
pub fn parse_shape(text: &str) -> Result<BlockShape, String> {
    match text {
        "gd" => Ok(BlockShape::Gd),
        "mpt" => Ok(BlockShape::Mpt),
        _ => Err(format!(
            "unknown block shape {text:?}: expected gd (16.7M-gas blocks) or mpt (100M-gas blocks)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let mut all = Workload::DEFAULT_CHAIN.to_vec();
        all.push(Workload::Replay);
        all.push(Workload::HotContracts);
        for (sload_pct, sstore_pct) in MIXED_RATIOS {
            all.push(Workload::Erc20Mixed {
                sload_pct,
                sstore_pct,
            });
        }
        for workload in all {
            assert_eq!(workload.to_string().parse::<Workload>(), Ok(workload));
        }
    }

    #[test]
    fn bad_names_are_refused() {
        for bad in [
            "",
            "erc20",
            "erc20_mixed_50",
            "erc20_mixed_40_60",
            "erc20_mixed_a_b",
        ] {
            assert!(bad.parse::<Workload>().is_err(), "{bad}");
        }
        assert!(parse_shape("big").is_err());
    }
}

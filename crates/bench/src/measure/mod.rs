//! Measuring the machine under the benchmarks, beside the engines'
//! figures.
//!
//! * [`device`]: the device's own limits (QD1 latency, QD32 IOPS,
//!   sequential write bandwidth), measured in the same run as the store's
//!   figures.
//! * [`cold`]: the cold-cache protocol: drop files from the page cache and
//!   check with `mincore(2)` that they are gone.
//! * [`diskstats`]: bytes the block device wrote (`/proc/diskstats`).
//! * [`hash_rate`]: the cores' raw SHA-256 rate, the bound for hashing.
//! * [`machine`]: facts about the machine, recorded with the figures.
//! * [`memory`]: the process's resident set and its peak.

pub mod cold;
pub mod device;
pub mod diskstats;
pub mod hash_rate;
pub mod machine;
pub mod memory;

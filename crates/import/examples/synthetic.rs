//! Writes a deterministic synthetic state as a geth dump or a genesis
//! file, for measuring `ubt import`:
//!
//! ```sh
//! cargo run --release -p ubt-import --features testing --example synthetic -- \
//!     dump /tmp/state.jsonl 5000000 [seed] [big_slots]
//! /usr/bin/time -v target/release/ubt import geth-dump --db /tmp/state.ubt /tmp/state.jsonl
//! ```
//!
//! The second argument is the number of tree entries to reach (the file
//! ends with the account that reaches it); prints the accounts and
//! entries written.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::io::{BufWriter, Write};

use alloy_primitives::B256;
use ubt_import::testing::{write_dump_line, write_dump_root, write_genesis, Generator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: synthetic dump|genesis OUT ENTRIES [SEED] [BIG_SLOTS]";
    let (format, out, entries) = match args.as_slice() {
        [format, out, entries, ..] => (format.as_str(), out, entries.parse::<u64>()?),
        _ => return Err(usage.into()),
    };
    let seed = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(1);
    let big_slots = args
        .get(4)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(50_000);
    let mut generator = Generator::new(seed, big_slots);
    let mut file = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    let (mut written, mut accounts) = (0u64, 0u64);
    match format {
        "dump" => {
            write_dump_root(&mut file, &B256::repeat_byte(0x42))?;
            while written < entries {
                let account = generator.next_account();
                written += account.tree_entry_count();
                accounts += 1;
                write_dump_line(&mut file, &account)?;
            }
        }
        "genesis" => {
            let mut all = Vec::new();
            while written < entries {
                let account = generator.next_account();
                written += account.tree_entry_count();
                all.push(account);
            }
            accounts = all.len() as u64;
            write_genesis(&mut file, &all)?;
        }
        _ => return Err(usage.into()),
    }
    file.flush()?;
    println!("{accounts} accounts, {written} tree entries");
    Ok(())
}

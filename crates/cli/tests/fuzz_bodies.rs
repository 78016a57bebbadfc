//! The tool's input-parser fuzz target bodies (`ubt_cli::fuzzing`, run by
//! cargo-fuzz from `fuzz/`) over seed inputs and thousands of mutations:
//! no panic, accepted input means what it says, rejected input is a typed
//! error naming a real line. The short CI run of those targets.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use ubt_cli::fuzzing::{
    account_proof_json, binary_records, hex_args, json_lines, seed_account_proofs, seeds,
};
use ubt_spec::fuzzing::Mutator;

type Body = fn(&[u8]) -> Result<(), String>;

fn run(name: &str, body: Body, seeds: &[Vec<u8>], mutations: usize) {
    let mut mutator = Mutator::new(0xc11 ^ name.len() as u64);
    for seed in seeds {
        assert_eq!(body(seed), Ok(()), "{name}: seed {seed:?}");
    }
    for _ in 0..mutations {
        let seed = &seeds[mutator.below(seeds.len())];
        let other = &seeds[mutator.below(seeds.len())];
        let input = mutator.mutate(seed, other);
        assert_eq!(body(&input), Ok(()), "{name}: input {input:?}");
    }
    println!("{name}: {} seeds, {mutations} mutations", seeds.len());
}

#[test]
fn parser_bodies_hold_over_seeds_and_mutations() {
    let seeds = seeds();
    run("json_lines", json_lines, &seeds.json_lines, 20_000);
    run(
        "binary_records",
        binary_records,
        &seeds.binary_records,
        20_000,
    );
    run("hex_args", hex_args, &seeds.hex_args, 20_000);
}

#[test]
fn account_proof_body_holds_over_seeds_and_mutations() {
    run(
        "account_proof_json",
        account_proof_json,
        &seed_account_proofs().unwrap(),
        20_000,
    );
}

/// Inputs that once made a hex parser panic or accept what is not hex
/// (the `hex_args` fuzz target found the sign within seconds; the
/// straddling character was seen while writing the target).
#[test]
fn fuzz_findings_stay_fixed() {
    // A multi-byte character straddling a digit pair: slicing the text by
    // bytes panicked.
    let straddling = format!("0xa{}a", "é".repeat(31));
    assert_eq!(straddling.len(), 2 + 64);
    assert!(ubt_cli::hex_arg::fixed_hex::<32>(&straddling, "key").is_err());
    assert_eq!(hex_args(straddling.as_bytes()), Ok(()));
    let line = format!(
        "{{\"key\":\"{straddling}\",\"value\":\"0x{}\"}}",
        "0".repeat(64)
    );
    assert_eq!(json_lines(line.as_bytes()), Ok(()));
    // A sign inside a digit pair: `u8::from_str_radix` accepts "+f".
    let signed = format!("0x{}", "+f".repeat(32));
    assert!(ubt_cli::hex_arg::fixed_hex::<32>(&signed, "key").is_err());
    assert_eq!(hex_args(signed.as_bytes()), Ok(()));
}

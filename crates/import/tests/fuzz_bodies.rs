//! The import's fuzz target bodies (`ubt_import::fuzzing`) over seed
//! inputs and thousands of mutations: the spill-run decoder accepts only
//! what re-encodes to the same bytes and rejects the rest with a typed
//! error, and the genesis and dump parsers never panic and reject with
//! input errors. The short CI run of those targets.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use ubt_import::fuzzing::{dump_line, flat_spill_run, genesis_document, seeds, spill_run};
use ubt_spec::fuzzing::Mutator;

type Body = fn(&[u8]) -> Result<(), String>;

fn run(name: &str, body: Body, seeds: &[Vec<u8>], mutations: usize) {
    let mut mutator = Mutator::new(0x1a9 ^ name.len() as u64);
    for seed in seeds {
        assert_eq!(
            body(seed),
            Ok(()),
            "{name}: seed {:?}",
            String::from_utf8_lossy(seed)
        );
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
fn import_bodies_hold_over_seeds_and_mutations() {
    let seeds = seeds();
    run("spill_run", spill_run, &seeds.spill_runs, 20_000);
    run(
        "flat_spill_run",
        flat_spill_run,
        &seeds.flat_spill_runs,
        20_000,
    );
    run(
        "genesis_document",
        genesis_document,
        &seeds.genesis_documents,
        20_000,
    );
    run("dump_line", dump_line, &seeds.dump_lines, 20_000);
}

/// The seeds are accepted inputs, not rejected ones: the bodies exercise
/// the decoders past their first checks.
#[test]
fn seeds_are_accepted() {
    let seeds = seeds();
    for seed in &seeds.spill_runs {
        assert!(
            ubt_import::fuzzing::decodes(seed),
            "spill run seed rejected"
        );
    }
    for seed in &seeds.flat_spill_runs {
        assert!(
            ubt_import::fuzzing::flat_decodes(seed),
            "flat spill run seed rejected"
        );
    }
    for seed in &seeds.dump_lines {
        assert!(
            ubt_import::fuzzing::dump_line_accepted(seed),
            "{}",
            String::from_utf8_lossy(seed)
        );
    }
    for seed in &seeds.genesis_documents {
        assert!(
            ubt_import::fuzzing::genesis_accepted(seed),
            "{}",
            String::from_utf8_lossy(seed)
        );
    }
}

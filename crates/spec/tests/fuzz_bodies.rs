//! The spec crate's fuzz target bodies (`ubt_spec::fuzzing`, run by
//! cargo-fuzz from `fuzz/`) over every valid blob and path key of a small
//! tree exported at group depths 1..8 and thousands of mutations of them:
//! no panic, and every blob or key a decoder accepts re-encodes to the
//! same bytes. This is the short, stable-toolchain run of the fuzz targets
//! that `cargo test` does on every CI run.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use ubt_spec::fuzzing::{
    geth_group_blob, geth_path, geth_stem_blob, proof_decode, seed_geth_blobs, seed_proofs, Mutator,
};

/// Mutations per target: 20,000 on every CI run; `UBT_LONG=1` runs 100
/// times as many, and `UBT_FUZZ_MUTATIONS=N` exactly N (the long, recorded
/// runs of docs/reliability.md).
fn mutations() -> usize {
    if let Some(n) = std::env::var("UBT_FUZZ_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    if std::env::var_os("UBT_LONG").is_some() {
        2_000_000
    } else {
        20_000
    }
}

fn run(name: &str, body: fn(&[u8]) -> Result<(), String>, seeds: &[Vec<u8>]) {
    assert!(!seeds.is_empty(), "{name}: no seeds");
    let mut mutator = Mutator::new(0xf022 ^ name.len() as u64);
    for seed in seeds {
        if let Err(finding) = body(seed) {
            panic!("{name}: seed {}: {finding}", hex(seed));
        }
    }
    let mutations = mutations();
    for _ in 0..mutations {
        let seed = &seeds[mutator.below(seeds.len())];
        let other = &seeds[mutator.below(seeds.len())];
        let input = mutator.mutate(seed, other);
        if let Err(finding) = body(&input) {
            panic!("{name}: input {}: {finding}", hex(&input));
        }
    }
    println!("{name}: {} seeds, {mutations} mutations", seeds.len());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn blob_and_path_bodies_hold_over_seeds_and_mutations() {
    let (blobs, paths) = seed_geth_blobs();
    let stems: Vec<Vec<u8>> = blobs.iter().filter(|b| b[0] == 1).cloned().collect();
    let groups: Vec<Vec<u8>> = blobs.iter().filter(|b| b[0] == 2).cloned().collect();
    run("geth_stem_blob", geth_stem_blob, &stems);
    run("geth_group_blob", geth_group_blob, &groups);
    let mut path_inputs = paths;
    path_inputs.push(b"0110".to_vec());
    run("geth_path", geth_path, &path_inputs);
}

#[test]
fn proof_body_holds_over_seeds_and_mutations() {
    run("proof_decode", proof_decode, &seed_proofs());
}

#[test]
fn bodies_report_what_they_check() {
    // A stem blob with a value missing fails to decode rather than
    // re-encoding differently; a truncated one too.
    let (blobs, _) = seed_geth_blobs();
    let stem = blobs.iter().find(|b| b[0] == 1).expect("a stem blob");
    assert!(ubt_spec::geth::stem_blob::decode(&stem[..stem.len() - 1]).is_err());
    assert_eq!(geth_stem_blob(&stem[..stem.len() - 1]), Ok(()));
    // The mutator changes its input and is deterministic.
    let mut a = Mutator::new(1);
    let mut b = Mutator::new(1);
    let changed = (0..100)
        .filter(|_| {
            let x = a.mutate(stem, stem);
            assert_eq!(x, b.mutate(stem, stem));
            x != *stem
        })
        .count();
    assert!(changed > 90, "{changed}");
}

//! Writes the seed corpus of every fuzz target to `corpus/<target>/`
//! (valid encodings taken from a real database, the CLI's sample inputs,
//! pseudo-random programs for the model target):
//! `cargo run --example write_seeds` from `fuzz/`.

use std::path::Path;

fn write(target: &str, inputs: &[Vec<u8>]) -> std::io::Result<()> {
    let dir = Path::new("corpus").join(target);
    std::fs::create_dir_all(&dir)?;
    for (i, input) in inputs.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:03}")), input)?;
    }
    println!("{target}: {} seeds", inputs.len());
    Ok(())
}

fn main() -> std::io::Result<()> {
    let store = ubt_store::fuzzing::seeds::seeds();
    write("bucket", &store.bucket)?;
    write("trie_page", &store.trie_page)?;
    write("meta_slot", &store.meta_slot)?;
    write("meta_choice", &store.meta_choice)?;
    write("wal_record", &store.wal_record)?;
    write("wal_replay", &store.wal_replay)?;
    write("wal_mark", &store.wal_mark)?;
    write("revert_segment", &store.revert_segment)?;
    write("store_open", &store.store_open)?;
    write("flat_leaf", &store.flat_leaf)?;
    write("flat_node", &store.flat_node)?;
    write("model", &store.model)?;
    let (blobs, paths) = ubt_spec::fuzzing::seed_geth_blobs();
    let stems: Vec<Vec<u8>> = blobs.iter().filter(|b| b[0] == 1).cloned().collect();
    let groups: Vec<Vec<u8>> = blobs.iter().filter(|b| b[0] == 2).cloned().collect();
    write("geth_stem_blob", &stems)?;
    write("geth_group_blob", &groups)?;
    write("geth_path", &paths)?;
    write("proof_decode", &ubt_spec::fuzzing::seed_proofs())?;
    let cli = ubt_cli::fuzzing::seeds();
    write("json_lines", &cli.json_lines)?;
    write("binary_records", &cli.binary_records)?;
    write("hex_args", &cli.hex_args)?;
    let accounts = ubt_cli::fuzzing::seed_account_proofs().map_err(std::io::Error::other)?;
    write("account_proof_json", &accounts)?;
    Ok(())
}

//! cargo-fuzz target: `ubt_cli::fuzzing::account_proof_json` (see its documentation for
//! the input format and the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_cli::fuzzing::account_proof_json(data) {
        panic!("{finding}");
    }
});

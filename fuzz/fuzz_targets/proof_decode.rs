//! cargo-fuzz target: `ubt_spec::fuzzing::proof_decode` (see its documentation for the
//! properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_spec::fuzzing::proof_decode(data) {
        panic!("{finding}");
    }
});

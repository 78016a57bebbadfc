//! cargo-fuzz target: `ubt_cli::fuzzing::binary_records` (see its documentation for the input
//! format and the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_cli::fuzzing::binary_records(data) {
        panic!("{finding}");
    }
});

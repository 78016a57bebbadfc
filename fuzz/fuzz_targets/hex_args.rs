//! cargo-fuzz target: `ubt_cli::fuzzing::hex_args` (see its documentation for the input
//! format and the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_cli::fuzzing::hex_args(data) {
        panic!("{finding}");
    }
});

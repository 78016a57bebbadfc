//! cargo-fuzz target: `ubt_spec::fuzzing::geth_path` (see its documentation for the input
//! format and the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_spec::fuzzing::geth_path(data) {
        panic!("{finding}");
    }
});

//! cargo-fuzz target: `ubt_import::fuzzing::flat_spill_run` (see its documentation for the input
//! format and the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_import::fuzzing::flat_spill_run(data) {
        panic!("{finding}");
    }
});

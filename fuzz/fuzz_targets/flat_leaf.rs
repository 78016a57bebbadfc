//! cargo-fuzz target: `ubt_store::fuzzing::decoders::flat_leaf` (see its documentation for the input
//! format and the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = ubt_store::fuzzing::decoders::flat_leaf(data) {
        panic!("{finding}");
    }
});

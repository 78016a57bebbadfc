//! The parts of the `ubt` tool that parse input, as a library: JSON-lines
//! and binary key/value input, hex arguments, and the error type they
//! report with. The binary (`src/main.rs`) adds the commands; the fuzz
//! targets in `fuzz/` and the tests reach the parsers through here.

pub mod binary;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod hex_arg;
pub mod input;

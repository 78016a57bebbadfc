//! # ubt-ffi
//!
//! The ubt engine through a C ABI.

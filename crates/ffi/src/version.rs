//! The ABI's version, for callers that load the library at run time.

use crate::guard;

/// The version of the ABI this header describes. It changes only when a
/// declaration changes incompatibly (a function's signature, a struct's
/// layout, a code's meaning); additions keep it.
pub const UBT_ABI_VERSION: u32 = 1;

/// The ABI version of the loaded library: compare it with
/// `UBT_ABI_VERSION` of the header compiled against.
#[allow(unsafe_code)] // `no_mangle`: the symbol is the ABI.
#[no_mangle]
pub extern "C" fn ubt_abi_version() -> u32 {
    guard::infallible(UBT_ABI_VERSION, || UBT_ABI_VERSION)
}

//! `ubt_verify_proof`: checks a multiproof's canonical bytes against a
//! root, without a database.

use alloy_primitives::B256;
use ubt_engine::{verify_proof, Proof};

use crate::error::FfiError;
use crate::guard;
use crate::ptr::{read, read_array, OutArray};
use crate::status::Status;
use crate::types::UbtBytes32;

/// Verifies the multiproof in `proof[0..proof_len]` (the bytes
/// `ubt_db_prove` gives) against root `*root`, and reads the values it
/// proves for `n_keys` tree keys: `values_out[i]` and `found_out[i]` are
/// the value at `keys[i]` and 1, or zeros and 0 when the proof shows the
/// key absent.
///
/// `UBT_ERR_PROOF_REJECTED` when the bytes are not the canonical encoding
/// of a proof or do not hash to the root; `UBT_ERR_KEY_NOT_PROVEN` when a
/// key is not one the proof proves (a proof proves exactly the keys it was
/// made for). Outputs are written only on success. `keys`, `values_out`
/// and `found_out` may be NULL when `n_keys` is 0 (a check of the proof
/// alone).
///
/// # Safety
///
/// `proof` is null or valid for reading `proof_len` bytes; `root` is null
/// or points to a readable `UbtBytes32`; `keys` is null or valid for
/// reading `n_keys` `UbtBytes32`s; `values_out` and `found_out` are null or
/// valid for writing `n_keys` `UbtBytes32`s and `n_keys` `uint8_t`s.
#[allow(unsafe_code)] // `no_mangle`, and the caller's pointers.
#[no_mangle]
pub unsafe extern "C" fn ubt_verify_proof(
    proof: *const u8,
    proof_len: usize,
    root: *const UbtBytes32,
    keys: *const UbtBytes32,
    n_keys: usize,
    values_out: *mut UbtBytes32,
    found_out: *mut u8,
) -> i32 {
    guard::call(|| {
        // SAFETY: this function's contract.
        let (proof, root, keys, values_out, found_out) = unsafe {
            (
                read_array(proof, proof_len, "proof")?,
                B256::from(read(root, "root")?),
                read_array(keys, n_keys, "keys")?,
                OutArray::new(values_out, n_keys, "values_out")?,
                OutArray::new(found_out, n_keys, "found_out")?,
            )
        };
        let proof = Proof::decode(&proof)?;
        let proven = verify_proof(&root, &proof)?;
        let values = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                proven.get(&B256::from(*key)).copied().ok_or_else(|| {
                    FfiError::new(
                        Status::KeyNotProven,
                        format!(
                            "keys[{index}] (0x{}) is not a key the proof proves",
                            alloy_primitives::hex::encode(key.bytes)
                        ),
                    )
                })
            })
            .collect::<Result<Vec<Option<B256>>, FfiError>>()?;
        found_out.fill(values.iter().map(|value| u8::from(value.is_some())));
        values_out.fill(values.into_iter().map(|v| v.unwrap_or_default().into()));
        Ok(())
    })
}

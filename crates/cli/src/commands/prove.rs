//! `ubt prove` and `ubt verify-proof`: multiproofs of tree keys (the
//! binary encoding of `docs/proof-format.md`) and account proofs in the
//! shape of `eth_getProof` (JSON).
//!
//! A proof that fails to decode or to verify is not bad input (exit 2) but
//! a failed check: one error line with the reason, exit 1.

use std::fmt::Display;
use std::fmt::Write as _;
use std::path::Path;

use alloy_primitives::{Address, B256, U256};
use ubt_engine::{verify_proof, AccountProof, Proof, Root};

use crate::binary::read_error;
use crate::cli::{ProveArgs, VerifyProofArgs};
use crate::commands::account::address_arg;
use crate::commands::storage::slot_arg;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::hex_arg::fixed_hex;
use crate::output;

/// Runs `ubt prove`: an account proof with `--account`, else a multiproof
/// of the keys written to `--out`.
pub fn run(args: &ProveArgs) -> Result<(), CliError> {
    let root = args.root.as_deref().map(root_arg).transpose()?;
    if let Some(address) = &args.account {
        let address = address_arg(address)?;
        let slots = args
            .slot
            .iter()
            .map(|slot| slot_arg(slot))
            .collect::<Result<Vec<U256>, CliError>>()?;
        return prove_account(args, root, &address, &slots);
    }
    let keys = if let Some(path) = &args.keys_file {
        keys_from_file(path)?
    } else {
        keys_from_args(&args.keys)?
    };
    let Some(out) = args.out.as_deref() else {
        return Err(CliError::Argument(
            "--out FILE is required to prove keys".into(),
        ));
    };
    refuse_out_in_db(out, &args.db)?;
    let db = open_existing(&args.db)?;
    let (root, proof) = match root {
        Some(root) => (root, db.reader(&root)?.prove(&keys)?),
        None => (db.root(), db.prove(&keys)?),
    };
    let values = verify_proof(&root, &proof)
        .map_err(|error| CliError::Internal(format!("the proof made does not verify: {error}")))?;
    let present = values.values().filter(|value| value.is_some()).count();
    let bytes = proof.encode();
    write_file(out, &bytes)?;
    output::line(format_args!(
        "proved {} key{} ({present} present, {} absent) at root {}: {} bytes written to {}",
        values.len(),
        if values.len() == 1 { "" } else { "s" },
        values.len() - present,
        hex32(&root.0),
        bytes.len(),
        output::path(Path::new(out)),
    ))
}

/// `ubt prove --account`: prints the account proof as pretty JSON, and
/// writes it to `--out` if given.
fn prove_account(
    args: &ProveArgs,
    root: Option<Root>,
    address: &Address,
    slots: &[U256],
) -> Result<(), CliError> {
    if let Some(out) = &args.out {
        refuse_out_in_db(out, &args.db)?;
    }
    let db = open_existing(&args.db)?;
    let proof = match root {
        Some(root) => db.reader(&root)?.account_proof(address, slots)?,
        None => db.account_proof(address, slots)?,
    };
    let json =
        serde_json::to_string_pretty(&proof).map_err(|e| CliError::Internal(e.to_string()))?;
    if let Some(out) = &args.out {
        write_file(out, format!("{json}\n").as_bytes())?;
    }
    output::line(json)
}

/// Runs `ubt verify-proof`: prints what the proof proves, or fails with
/// the reason (exit 1).
pub fn verify(args: &VerifyProofArgs) -> Result<(), CliError> {
    let root = root_arg(&args.root)?;
    let bytes = std::fs::read(&args.file).map_err(|e| read_error(&args.file, &e))?;
    if args.account {
        return verify_account(&root, &args.file, &bytes);
    }
    let proof = Proof::decode(&bytes).unwrap_or_else(|e| reject(&args.file, "proof", e));
    let values = verify_proof(&root, &proof).unwrap_or_else(|e| reject(&args.file, "proof", e));
    let mut text = String::new();
    for (key, value) in &values {
        let shown = value.map_or_else(|| "absent".to_owned(), |v| hex32(&v.0));
        let _ = writeln!(text, "{} {shown}", hex32(&key.0));
    }
    print_lines(&text)
}

/// `ubt verify-proof --account`: the JSON's fields as the proofs prove
/// them.
fn verify_account(root: &Root, file: &str, bytes: &[u8]) -> Result<(), CliError> {
    let proof: AccountProof = serde_json::from_slice(bytes).unwrap_or_else(|e| {
        reject(
            file,
            "account proof",
            format_args!("not an account proof: {e}"),
        )
    });
    let verified = proof
        .verified(root)
        .unwrap_or_else(|e| reject(file, "account proof", e));
    let mut text = format!("address {}\n", hex_address(&verified.address));
    match &verified.account {
        None => text.push_str("account absent\n"),
        Some(account) => {
            let _ = write!(
                text,
                "account present\nnonce {:#x}\nbalance {:#x}\ncodeHash {}\ncodeSize {:#x}\n",
                account.nonce,
                account.balance,
                hex32(&account.code_hash.0),
                account.code_size
            );
        }
    }
    for (slot, value) in &verified.storage {
        let shown = value.map_or_else(|| "absent".to_owned(), |v| hex32(&v.0));
        let _ = writeln!(text, "slot {} {shown}", hex32(&slot.to_be_bytes::<32>()));
    }
    print_lines(&text)
}

/// Prints `text` (lines, each ending in a newline), if any.
fn print_lines(text: &str) -> Result<(), CliError> {
    match text.strip_suffix('\n') {
        Some(lines) => output::line(lines),
        None => Ok(()),
    }
}

/// Fails with one line naming the file and why its proof was rejected,
/// exit 1 (a failed check, not bad input).
fn reject(file: &str, what: &str, reason: impl Display) -> ! {
    crate::fail(
        &format!(
            "{}: {what} rejected: {reason}",
            output::path(Path::new(file))
        ),
        1,
    )
}

/// The `--root` argument: `0x` followed by 64 hex digits.
fn root_arg(text: &str) -> Result<Root, CliError> {
    let bytes = fixed_hex::<32>(text, "--root").map_err(CliError::Argument)?;
    Ok(Root::from(bytes))
}

/// The key arguments: `0x` followed by 64 hex digits each.
fn keys_from_args(texts: &[String]) -> Result<Vec<B256>, CliError> {
    texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            fixed_hex::<32>(text, &format!("key {}", index + 1))
                .map(B256::from)
                .map_err(CliError::Argument)
        })
        .collect()
}

/// The keys of a keys file: one `0x<64 hex>` per line; blank lines and
/// `#` comments (whole lines or after a key) are skipped. A file without
/// keys is refused.
fn keys_from_file(path: &str) -> Result<Vec<B256>, CliError> {
    let bytes = std::fs::read(path).map_err(|e| read_error(path, &e))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| CliError::Format {
        source_name: path.to_owned(),
        problem: format!("not UTF-8 text (at byte {})", e.valid_up_to() + 1),
    })?;
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let content = line.find('#').map_or(line, |at| &line[..at]).trim();
        if content.is_empty() {
            continue;
        }
        let key = fixed_hex::<32>(content, "the key").map_err(|problem| CliError::Input {
            source_name: path.to_owned(),
            line: index as u64 + 1,
            problem,
        })?;
        keys.push(B256::from(key));
    }
    if keys.is_empty() {
        return Err(CliError::Format {
            source_name: path.to_owned(),
            problem: "no keys in the file (one 0x<64 hex> key per line)".into(),
        });
    }
    Ok(keys)
}

/// Refuses an output file inside the database directory: a file there
/// that the database does not know makes it unreadable.
fn refuse_out_in_db(out: &str, db: &str) -> Result<(), CliError> {
    let Ok(db_dir) = std::fs::canonicalize(db) else {
        return Ok(()); // No such directory: opening the database fails.
    };
    let parent = Path::new(out)
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if std::fs::canonicalize(parent).is_ok_and(|dir| dir == db_dir) {
        return Err(CliError::Argument(format!(
            "--out {} is inside the database directory {}: write the proof elsewhere",
            output::path(Path::new(out)),
            output::path(Path::new(db))
        )));
    }
    Ok(())
}

/// Writes `bytes` to the file at `path` (created or truncated).
fn write_file(path: &str, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError::Write {
        target: path.to_owned(),
        reason: e.to_string(),
    })
}

/// `0x` and the 40 hex digits of `address`.
fn hex_address(address: &Address) -> String {
    format!("0x{}", alloy_primitives::hex::encode(address))
}

//! One line of `geth dump --iterative` output, as go-ethereum v1.17.10's
//! `core/state/dump.go` writes it: the first line `{"root":"0x..."}`, then
//! one object per account with `balance` (a decimal string), `nonce`,
//! `root` (the account's storage root in the node's own trie),
//! `codeHash`, `code` (absent when empty), `storage` (slot preimage to the
//! value's hex with leading zero bytes trimmed; absent when empty),
//! `address` (absent when the node lacks the preimage) and `key` (the
//! address hash). Unknown fields are ignored.
//!
//! The checks: the code's keccak256 is `codeHash`; a `codeHash` of
//! non-empty code comes with the code (a dump made with `--nocode` is
//! refused); a non-empty storage root comes with storage (a dump made with
//! `--nostorage` is refused); `key` is the keccak256 of `address` when
//! both are present.
//!
//! Storage comes before `address` in a line, so the slots are held (in a
//! [`SlotSink`]) until the line ends and the account is known.

use std::fmt;

use alloy_primitives::{b256, keccak256, Address, B256, KECCAK256_EMPTY, U256};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::error::{shorten, ImportError, Location, Problem};
use crate::text;

/// The root of an empty Merkle-Patricia trie (an account without storage).
const EMPTY_TRIE_ROOT: B256 =
    b256!("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421");

/// Where a line's storage slots wait for the line's end.
pub(crate) trait SlotSink {
    /// Adds a slot and its value.
    fn push(&mut self, slot: [u8; 32], value: [u8; 32]) -> Result<(), ImportError>;
    /// Slots added.
    fn count(&self) -> u64;
}

impl SlotSink for Vec<([u8; 32], [u8; 32])> {
    fn push(&mut self, slot: [u8; 32], value: [u8; 32]) -> Result<(), ImportError> {
        Vec::push(self, (slot, value));
        Ok(())
    }

    fn count(&self) -> u64 {
        self.len() as u64
    }
}

/// What a line turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The dump's root line.
    Root(B256),
    /// An account to import (its code and slots are the parser's).
    Account {
        /// The account.
        address: Address,
        /// Nonce.
        nonce: u64,
        /// Balance.
        balance: U256,
        /// keccak256 of the code (checked).
        code_hash: B256,
    },
    /// An account without an address, skipped as asked.
    Skipped,
}

/// The fields of a line, as far as read.
#[derive(Debug, Default)]
struct Fields {
    balance: Option<U256>,
    nonce: Option<u64>,
    root: Option<B256>,
    code_hash: Option<B256>,
    code: bool,
    storage: bool,
    address: Option<Address>,
    key: Option<B256>,
}

/// Why the visitor stopped, beyond serde's error.
enum Failure {
    Problem(Problem),
    Import(ImportError),
}

/// The visitor's state.
struct LineCtx<'s, S> {
    failure: Option<Failure>,
    path: Vec<String>,
    fields: Fields,
    code: &'s mut Vec<u8>,
    slots: &'s mut S,
}

impl<S> LineCtx<'_, S> {
    fn fail<E: de::Error>(&mut self, problem: Problem) -> E {
        if self.failure.is_none() {
            self.failure = Some(Failure::Problem(problem));
        }
        E::custom("import stopped")
    }
}

/// Parses one line from `deserializer` (everything up to the line's end),
/// its code into `code` and its slots into `slots`, and decides what it
/// is.
pub(crate) fn parse_line<'de, R: serde_json::de::Read<'de>, S: SlotSink>(
    deserializer: &mut serde_json::Deserializer<R>,
    number: u64,
    skip_missing_preimages: bool,
    code: &mut Vec<u8>,
    slots: &mut S,
) -> Result<Decision, ImportError> {
    code.clear();
    let mut ctx = LineCtx {
        failure: None,
        path: Vec::new(),
        fields: Fields::default(),
        code,
        slots,
    };
    let parsed = LineSeed(&mut ctx)
        .deserialize(&mut *deserializer)
        .and_then(|()| deserializer.end());
    if let Err(error) = parsed {
        let path = {
            let segments: Vec<&str> = ctx.path.iter().rev().map(String::as_str).collect();
            segments.join(".")
        };
        return Err(match ctx.failure.take() {
            Some(Failure::Problem(problem)) => {
                ImportError::input(Location::line(number, path), problem)
            }
            Some(Failure::Import(error)) => error,
            None if error.is_io() => ImportError::Read(error.into()),
            None => ImportError::input(Location::line(number, path), json_problem(&error)),
        });
    }
    let slot_count = ctx.slots.count();
    decide(
        ctx.fields,
        ctx.code,
        slot_count,
        number,
        skip_missing_preimages,
    )
    .map_err(|problem| ImportError::input(Location::line(number, ""), problem))
}

/// serde's message with the position inside the line (its line number
/// is always 1) as a column.
fn json_problem(error: &serde_json::Error) -> Problem {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&suffix) {
        Some(bare) if error.line() <= 1 => {
            Problem::Json(format!("{bare} at column {}", error.column()))
        }
        _ => Problem::Json(message),
    }
}

/// Checks a parsed line and says what it is.
fn decide(
    fields: Fields,
    code: &[u8],
    slot_count: u64,
    number: u64,
    skip_missing_preimages: bool,
) -> Result<Decision, Problem> {
    let only_root = fields.balance.is_none()
        && fields.nonce.is_none()
        && fields.code_hash.is_none()
        && !fields.code
        && !fields.storage
        && fields.address.is_none()
        && fields.key.is_none();
    if let (Some(root), true) = (fields.root, only_root) {
        return if number == 1 {
            Ok(Decision::Root(root))
        } else {
            Err(Problem::MisplacedRootLine)
        };
    }
    let balance = fields.balance.ok_or(Problem::MissingField("balance"))?;
    let nonce = fields.nonce.ok_or(Problem::MissingField("nonce"))?;
    let code_hash = fields.code_hash.ok_or(Problem::MissingField("codeHash"))?;
    let Some(address) = fields.address else {
        return if skip_missing_preimages {
            Ok(Decision::Skipped)
        } else {
            Err(Problem::MissingAddress)
        };
    };
    if let Some(key) = fields.key {
        let computed = keccak256(address);
        if computed != key {
            return Err(Problem::AddressHashMismatch { key, computed });
        }
    }
    if code.is_empty() {
        if code_hash != KECCAK256_EMPTY {
            return Err(Problem::CodeMissing(code_hash));
        }
    } else {
        let computed = keccak256(code);
        if computed != code_hash {
            return Err(Problem::CodeHashMismatch {
                code_hash,
                computed,
            });
        }
        if u32::try_from(code.len()).is_err() {
            return Err(Problem::CodeTooLarge(code.len()));
        }
    }
    if let Some(root) = fields.root {
        if slot_count == 0 && root != EMPTY_TRIE_ROOT && root != B256::ZERO {
            return Err(Problem::StorageMissing(root));
        }
    }
    Ok(Decision::Account {
        address,
        nonce,
        balance,
        code_hash,
    })
}

/// The fields of a dump line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Balance,
    Nonce,
    Root,
    CodeHash,
    Code,
    Storage,
    Address,
    Key,
    Other,
}

impl Field {
    const NAMED: [Field; 8] = [
        Field::Balance,
        Field::Nonce,
        Field::Root,
        Field::CodeHash,
        Field::Code,
        Field::Storage,
        Field::Address,
        Field::Key,
    ];

    fn name(self) -> &'static str {
        match self {
            Field::Balance => "balance",
            Field::Nonce => "nonce",
            Field::Root => "root",
            Field::CodeHash => "codeHash",
            Field::Code => "code",
            Field::Storage => "storage",
            Field::Address => "address",
            Field::Key => "key",
            Field::Other => "",
        }
    }
}

struct FieldSeed;

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Field;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Field, D::Error> {
        deserializer.deserialize_str(FieldSeed)
    }
}

impl Visitor<'_> for FieldSeed {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        Ok(Field::NAMED
            .into_iter()
            .find(|field| field.name() == name)
            .unwrap_or(Field::Other))
    }
}

/// A JSON string handed to a parser; the parser's verdict is the value, so
/// that the caller adds the path.
struct TextSeed<F>(F);

impl<'de, T, F: FnOnce(&str) -> Result<T, Problem>> DeserializeSeed<'de> for TextSeed<F> {
    type Value = Result<T, Problem>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<T, F: FnOnce(&str) -> Result<T, Problem>> Visitor<'_> for TextSeed<F> {
    type Value = Result<T, Problem>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok((self.0)(value))
    }
}

struct LineSeed<'c, 's, S>(&'c mut LineCtx<'s, S>);

impl<'de, S: SlotSink> DeserializeSeed<'de> for LineSeed<'_, '_, S> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, S: SlotSink> Visitor<'de> for LineSeed<'_, '_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an account object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let ctx = self.0;
        let mut seen = [false; 8];
        while let Some(field) = map.next_key_seed(FieldSeed)? {
            if let Some(index) = Field::NAMED.iter().position(|f| *f == field) {
                if seen[index] {
                    return Err(ctx.fail(Problem::DuplicateField(field.name().to_string())));
                }
                seen[index] = true;
            }
            let at = |ctx: &mut LineCtx<'_, S>| ctx.path.push(field.name().to_string());
            let verdict: Result<(), Problem> = match field {
                Field::Balance => map
                    .next_value_seed(TextSeed(text::balance))
                    .inspect_err(|_| {
                        at(ctx);
                    })?
                    .map(|b| ctx.fields.balance = Some(b)),
                Field::Nonce => {
                    let nonce: u64 = map.next_value().inspect_err(|_| {
                        at(ctx);
                    })?;
                    ctx.fields.nonce = Some(nonce);
                    Ok(())
                }
                Field::Root | Field::CodeHash | Field::Key => {
                    let what = field.name();
                    let hash = map
                        .next_value_seed(TextSeed(|t: &str| text::hash32(t, what)))
                        .inspect_err(|_| {
                            at(ctx);
                        })?;
                    hash.map(|h| {
                        let h = Some(B256::from(h));
                        match field {
                            Field::Root => ctx.fields.root = h,
                            Field::CodeHash => ctx.fields.code_hash = h,
                            _ => ctx.fields.key = h,
                        }
                    })
                }
                Field::Code => {
                    ctx.fields.code = true;
                    let code = &mut *ctx.code;
                    map.next_value_seed(TextSeed(|t: &str| text::hex_bytes(t, false, "code", code)))
                        .inspect_err(|_| {
                            at(ctx);
                        })?
                }
                Field::Storage => {
                    ctx.fields.storage = true;
                    map.next_value_seed(StorageSeed(&mut *ctx))
                        .inspect_err(|_| {
                            at(ctx);
                        })?;
                    Ok(())
                }
                Field::Address => map
                    .next_value_seed(TextSeed(|t: &str| text::address(t, "address")))
                    .inspect_err(|_| {
                        at(ctx);
                    })?
                    .map(|a| ctx.fields.address = Some(a)),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                    Ok(())
                }
            };
            if let Err(problem) = verdict {
                at(ctx);
                return Err(ctx.fail(problem));
            }
        }
        Ok(())
    }
}

struct StorageSeed<'c, 's, S>(&'c mut LineCtx<'s, S>);

impl<'de, S: SlotSink> DeserializeSeed<'de> for StorageSeed<'_, '_, S> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, S: SlotSink> Visitor<'de> for StorageSeed<'_, '_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a storage map")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let ctx = self.0;
        let mut key_text = String::new();
        while let Some(slot) = map.next_key_seed(TextSeed(|t: &str| {
            let slot = text::hash32(t, "storage key");
            if slot.is_err() {
                key_text = shorten(t);
            }
            slot
        }))? {
            let slot = match slot {
                Ok(slot) => slot,
                Err(problem) => {
                    ctx.path.push(std::mem::take(&mut key_text));
                    return Err(ctx.fail(problem));
                }
            };
            let value = map
                .next_value_seed(TextSeed(text::dump_storage_value))
                .inspect_err(|_| {
                    ctx.path
                        .push(format!("0x{}", alloy_primitives::hex::encode(slot)));
                })?;
            let value = match value {
                Ok(value) => value,
                Err(problem) => {
                    ctx.path
                        .push(format!("0x{}", alloy_primitives::hex::encode(slot)));
                    return Err(ctx.fail(problem));
                }
            };
            if let Err(error) = ctx.slots.push(slot, value) {
                ctx.failure.get_or_insert(Failure::Import(error));
                return Err(de::Error::custom("import stopped"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str, number: u64, skip: bool) -> Result<(Decision, usize), String> {
        let mut code = Vec::new();
        let mut slots: Vec<([u8; 32], [u8; 32])> = Vec::new();
        let mut de = serde_json::Deserializer::from_slice(line.as_bytes());
        parse_line(&mut de, number, skip, &mut code, &mut slots)
            .map(|d| (d, slots.len()))
            .map_err(|e| e.to_string())
    }

    const ADDRESS: &str = "0x000000000000000000000000000000000000abcd";

    fn account_line(extra: &str) -> String {
        format!(
            "{{\"balance\":\"10\",\"nonce\":1,\"root\":\"0x{}\",\"codeHash\":\"{KECCAK256_EMPTY}\",{extra}\"address\":\"{ADDRESS}\",\"key\":\"{}\"}}",
            hex(EMPTY_TRIE_ROOT.as_slice()),
            keccak256(ADDRESS.parse::<Address>().unwrap_or_default())
        )
    }

    fn hex(bytes: &[u8]) -> String {
        alloy_primitives::hex::encode(bytes)
    }

    #[test]
    fn accounts_and_the_root_line() {
        let root = format!("{{\"root\":\"0x{}\"}}", "11".repeat(32));
        assert!(matches!(parse(&root, 1, false), Ok((Decision::Root(_), 0))));
        assert_eq!(
            parse(&root, 2, false),
            Err("line 2: a root line is only allowed as the first line".into())
        );
        let plain = account_line("");
        let (decision, _) = parse(&plain, 3, false).unwrap_or((Decision::Skipped, 0));
        assert!(matches!(decision, Decision::Account { nonce: 1, .. }));
        let storage = account_line(&format!(
            "\"storage\":{{\"0x{}\":\"01\",\"0x{}\":\"\"}},",
            "00".repeat(32),
            "01".repeat(32)
        ));
        assert_eq!(parse(&storage, 3, false).map(|(_, n)| n), Ok(2));
    }

    #[test]
    fn problems_name_the_line_and_the_field() {
        let bad_value = account_line(&format!(
            "\"storage\":{{\"0x{}\":\"0x1\"}},",
            "00".repeat(32)
        ));
        let error = parse(&bad_value, 4, false).err().unwrap_or_default();
        assert!(
            error.starts_with(&format!(
                "line 4: storage.0x{}: invalid hex",
                "00".repeat(32)
            )),
            "{error}"
        );
        let missing = account_line("").replace(&format!(",\"address\":\"{ADDRESS}\""), "");
        assert_eq!(
            parse(&missing, 5, false).err().unwrap_or_default(),
            "line 5: account without \"address\" (missing preimage; --skip-missing-preimages skips such accounts)"
        );
        assert!(matches!(
            parse(&missing, 5, true),
            Ok((Decision::Skipped, 0))
        ));
        let nocode = account_line("").replace(
            &KECCAK256_EMPTY.to_string(),
            &format!("0x{}", "22".repeat(32)),
        );
        assert!(parse(&nocode, 6, false)
            .err()
            .unwrap_or_default()
            .contains("--nocode"));
        let nostorage =
            account_line("").replace(&hex(EMPTY_TRIE_ROOT.as_slice()), &"33".repeat(32));
        assert!(parse(&nostorage, 7, false)
            .err()
            .unwrap_or_default()
            .contains("--nostorage"));
        let bad_key = account_line("").replace("\"key\":\"0x", "\"key\":\"0x00");
        assert!(parse(&bad_key, 8, false)
            .err()
            .unwrap_or_default()
            .starts_with("line 8: key: 66 hex digits"));
        let twice = account_line("\"nonce\":2,");
        assert_eq!(
            parse(&twice, 9, false).err().unwrap_or_default(),
            "line 9: field \"nonce\" appears twice"
        );
        let broken = "{\"balance\":\"1\",";
        assert!(parse(broken, 10, false)
            .err()
            .unwrap_or_default()
            .starts_with("line 10: malformed JSON: EOF while parsing"));
    }
}

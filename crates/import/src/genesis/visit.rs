//! The streaming genesis decoder: serde visitors that walk the document
//! once, without building a value of it, and hand accounts and storage
//! slots to the pipeline in batches as they go.
//!
//! What it accepts is what go-ethereum's `Genesis`/`types.Account`
//! decoders accept (field names matched without regard to ASCII case,
//! unknown fields ignored, `balance` required, balance and nonce as
//! numbers or strings, code as a `0x` string, storage keys and values as
//! `storageJSON`), with two differences: a field or account that appears
//! twice is refused (Go keeps the last), and an object whose first key
//! looks like an address is read as a bare alloc map.
//!
//! Errors carry the JSON path: each visitor adds its segment while the
//! error unwinds, so the happy path builds no strings.

use std::fmt;

use alloy_primitives::{Address, U256};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::addresses::AddressLog;
use crate::entries::{RawBatch, SlotItem};
use crate::error::{shorten, ImportError, Problem};
use crate::sort::tmp::TempSpace;
use crate::text;

/// Items (accounts, slots, code chunks) per batch handed on.
const BATCH_ITEMS: usize = 8192;

/// Why the decoder stopped, beyond what serde's error says.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The input is wrong.
    Problem(Problem),
    /// Something else failed (the address log's file).
    Import(ImportError),
    /// The consumer went away (it failed first).
    Cancelled,
}

/// The decoder's state, shared by all visitors.
pub(crate) struct Ctx<'a> {
    /// The first failure.
    pub failure: Option<Failure>,
    /// JSON path segments of the failure, innermost first.
    pub path: Vec<String>,
    /// The batch being filled.
    batch: RawBatch,
    /// Hands a full batch on; `false` when the consumer is gone.
    sink: &'a mut dyn FnMut(RawBatch) -> bool,
    temp: &'a TempSpace,
    /// Address by alloc position.
    pub addresses: AddressLog,
    /// Accounts seen (the next account's position).
    pub accounts: u64,
    /// Whether the document is a bare alloc map.
    pub bare: bool,
    code: Vec<u8>,
}

impl<'a> Ctx<'a> {
    /// A decoder handing batches to `sink`.
    pub fn new(sink: &'a mut dyn FnMut(RawBatch) -> bool, temp: &'a TempSpace) -> Ctx<'a> {
        Ctx {
            failure: None,
            path: Vec::new(),
            batch: RawBatch::default(),
            sink,
            temp,
            addresses: AddressLog::new(),
            accounts: 0,
            bare: false,
            code: Vec::new(),
        }
    }

    /// Records `problem` (unless an earlier failure is recorded) and
    /// returns the error that unwinds serde.
    fn fail<E: de::Error>(&mut self, problem: Problem) -> E {
        if self.failure.is_none() {
            self.failure = Some(Failure::Problem(problem));
        }
        E::custom("import stopped")
    }

    /// The failure's path, outermost first, `.`-separated.
    pub fn path_text(&self) -> String {
        let segments: Vec<&str> = self.path.iter().rev().map(String::as_str).collect();
        segments.join(".")
    }

    /// Hands the batch on if it is full.
    fn flush_if_full<E: de::Error>(&mut self) -> Result<(), E> {
        if self.batch.item_count() >= BATCH_ITEMS {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the batch on.
    pub fn flush<E: de::Error>(&mut self) -> Result<(), E> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        if (self.sink)(batch) {
            Ok(())
        } else {
            self.failure.get_or_insert(Failure::Cancelled);
            Err(E::custom("import stopped"))
        }
    }
}

/// The whole document: a genesis object or a bare alloc map.
pub(crate) struct DocumentSeed<'c, 'a>(pub &'c mut Ctx<'a>);

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(DocumentVisitor(self.0))
    }
}

struct DocumentVisitor<'c, 'a>(&'c mut Ctx<'a>);

impl<'de> Visitor<'de> for DocumentVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a genesis object or an alloc map")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let ctx = self.0;
        let mut first = true;
        let mut alloc_seen = false;
        while let Some(key) = map.next_key::<String>()? {
            if first {
                ctx.bare = text::looks_like_address(&key);
                first = false;
            }
            if ctx.bare {
                account(ctx, &key, &mut map)?;
            } else if key.eq_ignore_ascii_case("alloc") {
                if alloc_seen {
                    return Err(ctx.fail(Problem::DuplicateField(key)));
                }
                alloc_seen = true;
                map.next_value_seed(AllocSeed(&mut *ctx)).inspect_err(|_| {
                    ctx.path.push(key.clone());
                })?;
            } else {
                map.next_value::<IgnoredAny>().inspect_err(|_| {
                    ctx.path.push(shorten(&key));
                })?;
            }
        }
        if !first && !ctx.bare && !alloc_seen {
            return Err(ctx.fail(Problem::MissingAlloc));
        }
        ctx.flush()
    }
}

/// The alloc map.
struct AllocSeed<'c, 'a>(&'c mut Ctx<'a>);

impl<'de> DeserializeSeed<'de> for AllocSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(AllocVisitor(self.0))
    }
}

struct AllocVisitor<'c, 'a>(&'c mut Ctx<'a>);

impl<'de> Visitor<'de> for AllocVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of addresses to accounts")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let ctx = self.0;
        while let Some(key) = map.next_key::<String>()? {
            account(ctx, &key, &mut map)?;
        }
        Ok(())
    }
}

/// One alloc entry: `key` and the account that is the map's next value.
fn account<'de, M: MapAccess<'de>>(
    ctx: &mut Ctx<'_>,
    key: &str,
    map: &mut M,
) -> Result<(), M::Error> {
    let address = match text::address(key, "address") {
        Ok(address) => address,
        Err(problem) => {
            ctx.path.push(shorten(key));
            return Err(ctx.fail(problem));
        }
    };
    let origin = ctx.accounts;
    ctx.accounts += 1;
    if let Err(error) = ctx.addresses.push(address, ctx.temp) {
        ctx.failure.get_or_insert(Failure::Import(error));
        return Err(de::Error::custom("import stopped"));
    }
    map.next_value_seed(AccountSeed {
        ctx: &mut *ctx,
        address,
        origin,
    })
    .inspect_err(|_| {
        ctx.path.push(shorten(key));
    })
}

/// The fields of an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Balance,
    Nonce,
    Code,
    Storage,
    Other,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Balance => "balance",
            Field::Nonce => "nonce",
            Field::Code => "code",
            Field::Storage => "storage",
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
        // encoding/json matches field names without regard to case.
        Ok(
            match [Field::Balance, Field::Nonce, Field::Code, Field::Storage]
                .into_iter()
                .find(|field| name.eq_ignore_ascii_case(field.name()))
            {
                Some(field) => field,
                None => Field::Other,
            },
        )
    }
}

struct AccountSeed<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    address: Address,
    origin: u64,
}

impl<'de> DeserializeSeed<'de> for AccountSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

/// The map's next value as raw JSON; on failure, `field` joins the path.
fn next_raw<'de, M: MapAccess<'de>>(
    map: &mut M,
    ctx: &mut Ctx<'_>,
    field: Field,
) -> Result<Box<RawValue>, M::Error> {
    map.next_value().inspect_err(|_| {
        ctx.path.push(field.name().to_string());
    })
}

/// The raw text of a JSON value, JSON whitespace trimmed.
fn raw_text(raw: &RawValue) -> &str {
    raw.get().trim_matches([' ', '\t', '\n', '\r'])
}

impl<'de> Visitor<'de> for AccountSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an account object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let AccountSeed {
            ctx,
            address,
            origin,
        } = self;
        let mut seen = [false; 4];
        let mut balance: Option<U256> = None;
        let mut nonce = 0u64;
        let mut code = std::mem::take(&mut ctx.code);
        code.clear();
        while let Some(field) = map.next_key_seed(FieldSeed)? {
            if field != Field::Other {
                let index = field as usize;
                if seen[index] {
                    return Err(ctx.fail(Problem::DuplicateField(field.name().to_string())));
                }
                seen[index] = true;
            }
            let result = match field {
                Field::Balance => {
                    let raw = next_raw(&mut map, ctx, field)?;
                    match raw_text(&raw) {
                        "null" => Ok(()),
                        raw => text::balance(text::unquote_raw(raw)).map(|b| balance = Some(b)),
                    }
                }
                Field::Nonce => {
                    let raw = next_raw(&mut map, ctx, field)?;
                    match raw_text(&raw) {
                        "null" => Ok(()),
                        raw => text::nonce(text::unquote_raw(raw)).map(|n| nonce = n),
                    }
                }
                Field::Code => {
                    let raw = next_raw(&mut map, ctx, field)?;
                    match raw_text(&raw) {
                        "null" => Ok(()),
                        raw if raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') => {
                            text::hex_bytes(&raw[1..raw.len() - 1], true, "code", &mut code)
                        }
                        raw => Err(Problem::InvalidHex {
                            what: "code",
                            text: shorten(raw),
                        }),
                    }
                }
                Field::Storage => {
                    map.next_value_seed(StorageSeed {
                        ctx: &mut *ctx,
                        address,
                        origin,
                    })
                    .inspect_err(|_| {
                        ctx.path.push("storage".to_string());
                    })?;
                    Ok(())
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                    Ok(())
                }
            };
            if let Err(problem) = result {
                ctx.path.push(field.name().to_string());
                return Err(ctx.fail(problem));
            }
        }
        let Some(balance) = balance else {
            return Err(ctx.fail(Problem::MissingField("balance")));
        };
        if u32::try_from(code.len()).is_err() {
            ctx.path.push("code".to_string());
            return Err(ctx.fail(Problem::CodeTooLarge(code.len())));
        }
        ctx.batch
            .push_account(address, origin, nonce, balance, None, &code);
        ctx.code = code;
        ctx.flush_if_full()
    }
}

struct StorageSeed<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    address: Address,
    origin: u64,
}

impl<'de> DeserializeSeed<'de> for StorageSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for StorageSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a storage map or null")
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
        let StorageSeed {
            ctx,
            address,
            origin,
        } = self;
        while let Some(slot) = map.next_key_seed(WordSeed {
            ctx: &mut *ctx,
            what: "storage key",
            nullable: false,
        })? {
            let value = map
                .next_value_seed(WordSeed {
                    ctx: &mut *ctx,
                    what: "storage value",
                    nullable: true,
                })
                .inspect_err(|_| {
                    ctx.path
                        .push(format!("0x{}", alloy_primitives::hex::encode(slot)));
                })?;
            ctx.batch.slots.push(SlotItem {
                address,
                origin,
                slot,
                value,
            });
            ctx.flush_if_full()?;
        }
        Ok(())
    }
}

/// A storage key or value (`storageJSON`); a `null` value is zero, as Go
/// leaves the zero value in place for `null`.
struct WordSeed<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    what: &'static str,
    nullable: bool,
}

impl<'de> DeserializeSeed<'de> for WordSeed<'_, '_> {
    type Value = [u8; 32];

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<[u8; 32], D::Error> {
        if self.nullable {
            deserializer.deserialize_option(self)
        } else {
            deserializer.deserialize_str(self)
        }
    }
}

impl<'de> Visitor<'de> for WordSeed<'_, '_> {
    type Value = [u8; 32];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a hex {}", self.what)
    }

    fn visit_none<E: de::Error>(self) -> Result<[u8; 32], E> {
        Ok([0u8; 32])
    }

    fn visit_unit<E: de::Error>(self) -> Result<[u8; 32], E> {
        Ok([0u8; 32])
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<[u8; 32], D::Error> {
        deserializer.deserialize_str(self)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<[u8; 32], E> {
        text::storage_word(value, self.what).map_err(|problem| {
            if !self.nullable {
                // A key names itself in the path; a value's key is added
                // by the storage map.
                self.ctx.path.push(shorten(value));
            }
            self.ctx.fail(problem)
        })
    }
}

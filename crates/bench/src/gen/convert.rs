//! From `state.jsonl` to EIP-7864 tree entries: records parsed, mapped to
//! tree keys and values with geth's account semantics (as
//! `ubt_spec::AccountWrites` writes them), sorted by key with the last
//! write of each key kept: the sorted stream `ubt_engine::Db::build`
//! takes.
//!
//! An account record gives its BasicData leaf (version 0, code size =
//! code length, nonce, balance truncated to 128 bits as geth truncates it),
//! its code-hash leaf (`keccak256(code)`) and, for code, its chunks
//! (`ubt_spec::chunk::chunkify_code`); a slot record its storage leaf; a
//! raw record its key as the tree key.
//!
//! Lines are parsed in parallel batches, in file order. Memory: 96 bytes
//! per tree entry (key, value, owner, sequence number), about 960 MB for
//! 10 million entries, plus one batch of lines; [`TreeEntries::flat_records`]
//! makes a second, owner-sorted copy (84 bytes per entry) for the flat
//! index.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use rayon::prelude::*;
use serde::Deserialize;
use ubt_evm::CodeStore;
use ubt_import::StateItem;
use ubt_spec::basic_data::{geth_balance, BasicData};
use ubt_spec::chunk::chunkify_code;
use ubt_spec::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};
use ubt_spec::{FastTree, Hash};

use super::{Progress, Stage};
use crate::BenchError;

/// Lines parsed per parallel batch.
const BATCH_LINES: usize = 1 << 15;

/// One line of `state.jsonl`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateRecord {
    /// An account and its code.
    Account {
        /// The address.
        address: Address,
        /// Its nonce.
        nonce: u64,
        /// Its balance (full width; trees keep 128 bits as geth does).
        balance: U256,
        /// Its runtime code (empty for none).
        code: Bytes,
    },
    /// A storage slot.
    Slot {
        /// The account.
        address: Address,
        /// The slot.
        key: U256,
        /// Its value.
        value: B256,
    },
    /// A raw key and value (raw mode).
    Raw {
        /// The key, which is the tree key.
        key: B256,
        /// The value.
        value: B256,
    },
}

/// The fields a line may have; which are present decides the record.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    #[serde(borrow, default)]
    account: Option<&'a str>,
    #[serde(default)]
    nonce: Option<u64>,
    #[serde(borrow, default)]
    balance: Option<&'a str>,
    #[serde(borrow, default)]
    code: Option<&'a str>,
    #[serde(borrow, default)]
    slot: Option<&'a str>,
    #[serde(borrow, default)]
    key: Option<&'a str>,
    #[serde(borrow, default)]
    value: Option<&'a str>,
    #[serde(borrow, default)]
    raw: Option<&'a str>,
}

fn field<'a>(value: Option<&'a str>, name: &str) -> Result<&'a str, String> {
    value.ok_or_else(|| format!("missing \"{name}\""))
}

fn word(text: &str, name: &str) -> Result<B256, String> {
    if text.len() != 66 || !text.starts_with("0x") {
        return Err(format!("\"{name}\" is not 0x and 64 hex digits"));
    }
    B256::from_str(text).map_err(|e| format!("\"{name}\": {e}"))
}

fn address(text: &str, name: &str) -> Result<Address, String> {
    if text.len() != 42 || !text.starts_with("0x") {
        return Err(format!("\"{name}\" is not 0x and 40 hex digits"));
    }
    Address::from_str(text).map_err(|e| format!("\"{name}\": {e}"))
}

impl StateRecord {
    /// Parses one line of `state.jsonl`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let line: Line<'_> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match (line.account, line.slot, line.raw) {
            (Some(who), None, None) => {
                let balance = field(line.balance, "balance")?;
                let code = field(line.code, "code")?;
                let code = code
                    .strip_prefix("0x")
                    .ok_or("\"code\" has no 0x prefix")
                    .and_then(|hex| {
                        alloy_primitives::hex::decode(hex).map_err(|_| "\"code\" is not hex")
                    })?;
                if u32::try_from(code.len()).is_err() {
                    return Err("\"code\" is 4 GiB or longer".to_owned());
                }
                Ok(StateRecord::Account {
                    address: address(who, "account")?,
                    nonce: line.nonce.ok_or("missing \"nonce\"")?,
                    balance: U256::from_str_radix(balance, 10)
                        .map_err(|e| format!("\"balance\": {e}"))?,
                    code: code.into(),
                })
            }
            (None, Some(who), None) => Ok(StateRecord::Slot {
                address: address(who, "slot")?,
                key: U256::from_be_bytes(word(field(line.key, "key")?, "key")?.0),
                value: word(field(line.value, "value")?, "value")?,
            }),
            (None, None, Some(key)) => Ok(StateRecord::Raw {
                key: word(key, "raw")?,
                value: word(field(line.value, "value")?, "value")?,
            }),
            _ => Err("a record has exactly one of \"account\", \"slot\", \"raw\"".to_owned()),
        }
    }

    /// The account the record's entries belong to (none for a raw record).
    pub fn owner(&self) -> Option<Address> {
        match self {
            StateRecord::Account { address, .. } | StateRecord::Slot { address, .. } => {
                Some(*address)
            }
            StateRecord::Raw { .. } => None,
        }
    }

    /// The tree entries the record writes, appended to `out` in the order
    /// geth writes them.
    pub fn push_tree_entries(&self, out: &mut Vec<(B256, B256)>) {
        match self {
            StateRecord::Account {
                address,
                nonce,
                balance,
                code,
            } => {
                let basic = BasicData {
                    version: 0,
                    // Parsing refuses longer code; geth's field is a u32.
                    code_size: u32::try_from(code.len()).unwrap_or(u32::MAX),
                    nonce: *nonce,
                    balance: geth_balance(balance),
                };
                out.push((basic_data_key(address), basic.pack()));
                out.push((code_hash_key(address), keccak256(code)));
                for (chunk_id, chunk) in chunkify_code(code).into_iter().enumerate() {
                    out.push((code_chunk_key(address, chunk_id as u64), B256::from(chunk)));
                }
            }
            StateRecord::Slot {
                address,
                key,
                value,
            } => out.push((storage_slot_key(address, key), *value)),
            StateRecord::Raw { key, value } => out.push((*key, *value)),
        }
    }
}

/// A state file read in batches of lines, each batch parsed in parallel,
/// in file order.
struct LineBatches {
    reader: BufReader<File>,
    path: PathBuf,
    /// The number of the next line (1-based).
    next_line: u64,
    /// Bytes read so far.
    read_bytes: u64,
}

impl LineBatches {
    /// Opens `path`; returns it and the file's length.
    fn open(path: &Path) -> Result<(LineBatches, u64), BenchError> {
        let file = File::open(path).map_err(|e| BenchError::io_at("open", path, e))?;
        let total = file.metadata().map(|m| m.len()).unwrap_or(0);
        let batches = LineBatches {
            reader: BufReader::with_capacity(1 << 20, file),
            path: path.to_owned(),
            next_line: 1,
            read_bytes: 0,
        };
        Ok((batches, total))
    }

    /// The next batch's records mapped by `map` (blank lines skipped; an
    /// `Err` from `map` is the line's error); `None` at the end of the
    /// file.
    fn next_batch<T: Send>(
        &mut self,
        map: &(impl Fn(StateRecord) -> Result<T, String> + Sync),
    ) -> Result<Option<Vec<T>>, BenchError> {
        let mut lines = Vec::with_capacity(BATCH_LINES);
        while lines.len() < BATCH_LINES {
            let mut line = String::new();
            let n = self
                .reader
                .read_line(&mut line)
                .map_err(|e| BenchError::io_at("read", &self.path, e))?;
            if n == 0 {
                break;
            }
            self.read_bytes += n as u64;
            lines.push(line);
        }
        if lines.is_empty() {
            return Ok(None);
        }
        let first_line = self.next_line;
        self.next_line += lines.len() as u64;
        let path = &self.path;
        let parsed: Result<Vec<Option<T>>, BenchError> = lines
            .par_iter()
            .enumerate()
            .map(|(i, line)| {
                let text = line.trim_end();
                if text.is_empty() {
                    return Ok(None);
                }
                StateRecord::parse(text)
                    .and_then(map)
                    .map(Some)
                    .map_err(|message| BenchError::Workload {
                        path: path.display().to_string(),
                        line: first_line + i as u64,
                        message,
                    })
            })
            .collect();
        Ok(Some(parsed?.into_iter().flatten().collect()))
    }
}

/// Reads `path` in batches of lines, parses each batch in parallel and
/// hands the records to `sink` in file order.
fn for_each_batch<T: Send>(
    path: &Path,
    progress: &mut dyn FnMut(Progress),
    map: impl Fn(StateRecord) -> T + Sync,
    mut sink: impl FnMut(Vec<T>),
) -> Result<(), BenchError> {
    let (mut batches, total) = LineBatches::open(path)?;
    while let Some(batch) = batches.next_batch(&|record| Ok(map(record)))? {
        sink(batch);
        progress(Progress::new(Stage::Read, batches.read_bytes, total));
    }
    Ok(())
}

/// The records of an accounts-mode state file as `ubt_import` items, for
/// `ubt_import::import_items`: read and parsed a batch at a time (memory
/// does not grow with the file). A line that does not parse, a raw record
/// (raw states are not accounts) or a read failure ends the iteration
/// with an `Err`, and the [`BenchError`] saying where is kept for
/// [`StateItemsProbe::failure`].
#[derive(Debug)]
pub struct StateItems {
    batches: Option<LineBatches>,
    batch: std::vec::IntoIter<StateItem>,
    read_bytes: Arc<AtomicU64>,
    failure: Arc<Mutex<Option<BenchError>>>,
}

impl std::fmt::Debug for LineBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineBatches")
            .field("path", &self.path)
            .field("next_line", &self.next_line)
            .finish_non_exhaustive()
    }
}

/// Where a [`StateItems`] is: bytes read, and why it stopped early.
#[derive(Clone, Debug)]
pub struct StateItemsProbe {
    read_bytes: Arc<AtomicU64>,
    failure: Arc<Mutex<Option<BenchError>>>,
}

impl StateItemsProbe {
    /// Bytes of the file read so far.
    pub fn read_bytes(&self) -> u64 {
        self.read_bytes.load(Ordering::Relaxed)
    }

    /// Why the iteration stopped early, if it did (taken once).
    pub fn failure(&self) -> Option<BenchError> {
        self.failure.lock().ok().and_then(|mut f| f.take())
    }
}

impl StateItems {
    /// The items of the state file at `path`; also returns a probe of the
    /// iteration (it runs on the importer's thread) and the file's length.
    pub fn open(path: &Path) -> Result<(StateItems, StateItemsProbe, u64), BenchError> {
        let (batches, total) = LineBatches::open(path)?;
        let probe = StateItemsProbe {
            read_bytes: Arc::new(AtomicU64::new(0)),
            failure: Arc::new(Mutex::new(None)),
        };
        let items = StateItems {
            batches: Some(batches),
            batch: Vec::new().into_iter(),
            read_bytes: Arc::clone(&probe.read_bytes),
            failure: Arc::clone(&probe.failure),
        };
        Ok((items, probe, total))
    }

    /// Stops the iteration with `error`, kept for the probe.
    fn fail(&mut self, error: BenchError) -> std::io::Error {
        let message = error.to_string();
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert(error);
        }
        self.batches = None;
        self.batch = Vec::new().into_iter();
        std::io::Error::other(message)
    }
}

/// The `ubt_import` item of a record; raw records have none.
fn state_item(record: StateRecord) -> Result<StateItem, String> {
    match record {
        StateRecord::Account {
            address,
            nonce,
            balance,
            code,
        } => Ok(StateItem::Account {
            address,
            nonce,
            balance,
            code: code.to_vec(),
        }),
        StateRecord::Slot {
            address,
            key,
            value,
        } => Ok(StateItem::Slot {
            address,
            slot: key,
            value,
        }),
        StateRecord::Raw { .. } => {
            Err("a raw record in a state of accounts (raw states load in memory)".to_owned())
        }
    }
}

impl Iterator for StateItems {
    type Item = std::io::Result<StateItem>;

    fn next(&mut self) -> Option<std::io::Result<StateItem>> {
        loop {
            if let Some(item) = self.batch.next() {
                return Some(Ok(item));
            }
            let batches = self.batches.as_mut()?;
            match batches.next_batch(&state_item) {
                Ok(Some(batch)) => {
                    self.read_bytes.store(batches.read_bytes, Ordering::Relaxed);
                    self.batch = batch.into_iter();
                }
                Ok(None) => {
                    self.batches = None;
                    return None;
                }
                Err(error) => return Some(Err(self.fail(error))),
            }
        }
    }
}

/// One record's account and tree entries.
type RecordEntries = (Option<Address>, Vec<(B256, B256)>);

/// One tree entry with its account and the position of the write that
/// made it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: B256,
    value: B256,
    owner: Option<Address>,
    seq: u64,
}

/// The tree entries of a state file, sorted by key, one per key (the last
/// write of each). Iterate it (or pass it to `ubt_engine::Db::build`) for
/// `(key, value)` pairs in ascending key order.
#[derive(Debug, Default)]
pub struct TreeEntries {
    entries: Vec<Entry>,
}

impl TreeEntries {
    /// Distinct tree keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the state has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in ascending key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (B256, B256)> + '_ {
        self.entries.iter().map(|e| (e.key, e.value))
    }

    /// The entries as a vector, in ascending key order.
    pub fn into_vec(self) -> Vec<(B256, B256)> {
        self.into_iter().collect()
    }

    /// The entries as records of the flat index, `(account, key, value)`
    /// sorted by account then key, when every entry has an account (a
    /// state of accounts; `None` for one with raw records).
    pub fn flat_records(&self) -> Option<Vec<(Address, B256, B256)>> {
        let mut records: Vec<(Address, B256, B256)> = self
            .entries
            .iter()
            .map(|e| e.owner.map(|owner| (owner, e.key, e.value)))
            .collect::<Option<_>>()?;
        records.par_sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        Some(records)
    }
}

impl IntoIterator for TreeEntries {
    type Item = (B256, B256);
    type IntoIter = IntoEntries;

    fn into_iter(self) -> IntoEntries {
        IntoEntries(self.entries.into_iter())
    }
}

/// The owning iterator of [`TreeEntries`]: `(key, value)` in ascending key
/// order.
#[derive(Debug)]
pub struct IntoEntries(std::vec::IntoIter<Entry>);

impl Iterator for IntoEntries {
    type Item = (B256, B256);

    fn next(&mut self) -> Option<(B256, B256)> {
        self.0.next().map(|e| (e.key, e.value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for IntoEntries {}

/// The EIP-7864 tree entries of the state file at `state_path`, sorted by
/// key, a later write of a key replacing an earlier one (so a later record
/// for an account or slot replaces the earlier one, leaf by leaf, as
/// applying the records in order through geth's `BinaryTrie` does).
/// `progress` sees [`Stage::Read`] (bytes of the file) and
/// [`Stage::Sort`].
pub fn tree_entries(
    state_path: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<TreeEntries, BenchError> {
    let mut batches: Vec<Vec<RecordEntries>> = Vec::new();
    for_each_batch(
        state_path,
        progress,
        |record| {
            let mut out = Vec::with_capacity(2);
            record.push_tree_entries(&mut out);
            (record.owner(), out)
        },
        |batch| batches.push(batch),
    )?;
    let total: usize = batches.iter().flatten().map(|(_, e)| e.len()).sum();
    progress(Progress::new(Stage::Sort, 0, total as u64));
    let mut entries = Vec::with_capacity(total);
    for (owner, batch) in batches.into_iter().flatten() {
        for (key, value) in batch {
            let seq = entries.len() as u64;
            entries.push(Entry {
                key,
                value,
                owner,
                seq,
            });
        }
    }
    entries.par_sort_unstable_by(|a, b| a.key.cmp(&b.key).then(a.seq.cmp(&b.seq)));
    // `dedup_by` passes (later, kept): keep the first position, last value.
    entries.dedup_by(|later, kept| {
        let same = later.key == kept.key;
        if same {
            kept.value = later.value;
        }
        same
    });
    progress(Progress::new(Stage::Sort, total as u64, total as u64));
    Ok(TreeEntries { entries })
}

/// The state root of the state file at `state_path`, computed in memory
/// with `ubt_spec::FastTree` (for tests and small states).
pub fn logical_root(state_path: &Path) -> Result<Hash, BenchError> {
    let entries = tree_entries(state_path, &mut |_| {})?;
    Ok(FastTree::from_entries(entries.into_vec()).root_hash())
}

/// The code of the account records in the state file, for
/// `ubt_evm::Executor`: of every account, or only of the accounts in
/// `only` (the contracts a workload calls: memory then does not grow with
/// the state's other contracts).
pub fn read_codes(
    state_path: &Path,
    only: Option<&HashSet<Address>>,
    progress: &mut dyn FnMut(Progress),
) -> Result<CodeStore, BenchError> {
    let mut codes = CodeStore::new();
    for_each_batch(
        state_path,
        progress,
        |record| match record {
            StateRecord::Account { address, code, .. }
                if !code.is_empty() && only.is_none_or(|only| only.contains(&address)) =>
            {
                Some(code)
            }
            _ => None,
        },
        |batch| {
            for code in batch.into_iter().flatten() {
                codes.insert(code);
            }
        },
    )?;
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_bad_ones_are_refused() {
        let account = r#"{"account":"0x00000000000000000000000000000000000000aa","nonce":3,"balance":"340282366920938463463374607431768211461","code":"0x6001"}"#;
        let StateRecord::Account {
            nonce,
            balance,
            code,
            ..
        } = StateRecord::parse(account).unwrap()
        else {
            panic!("an account")
        };
        assert_eq!((nonce, code.to_vec()), (3, vec![0x60, 0x01]));
        assert_eq!(balance, (U256::from(1u8) << 128usize) + U256::from(5u8));
        let mut out = Vec::new();
        StateRecord::parse(account)
            .unwrap()
            .push_tree_entries(&mut out);
        assert_eq!(out.len(), 3, "header leaves and one chunk");
        // 2^128 + 5 has a 17-byte minimal encoding; geth keeps its bytes 16..
        assert_eq!(BasicData::unpack(&out[0].1).balance, 5, "geth's truncation");
        assert_eq!(BasicData::unpack(&out[0].1).code_size, 2);

        for bad in [
            r#"{"account":"0xaa","nonce":1,"balance":"0","code":"0x"}"#,
            r#"{"account":"0x00000000000000000000000000000000000000aa","balance":"0","code":"0x"}"#,
            r#"{"raw":"0x00","value":"0x00"}"#,
            r#"{"slot":"0x00000000000000000000000000000000000000aa","raw":"0x1"}"#,
            r#"{"other":1}"#,
            "not json",
        ] {
            assert!(StateRecord::parse(bad).is_err(), "{bad}");
        }
    }
}

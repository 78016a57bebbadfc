//! Blocks on ubt: executed by the EVM over the database (optionally with a
//! speculative pass that prefetches every slot the block will touch), or
//! replayed from recorded accesses; then applied, hashed and committed,
//! each phase timed as the studies time it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use alloy_primitives::{hex, Address, B256};
use ubt_engine::{Db, IoCounters};
use ubt_evm::{CodeStore, Executor, ReadRecord, TxSpec, WriteRecord};
use ubt_spec::basic_data::{geth_balance, BasicData};
use ubt_spec::key::{basic_data_key, code_hash_key, storage_slot_key};

use super::blocks::{BlockLine, ReplayBlock};
use super::source::{DbSource, HintSource};
use crate::formats::metrics::BlockMetrics;
use crate::BenchError;

/// Which run of which configuration on which workload.
#[derive(Clone, Debug)]
pub struct RunLabel {
    /// Configuration label (`gd6`, `gd6-prefetch`).
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Run number (1 is the warm-up).
    pub run: u32,
}

/// The engine name ubt's metrics carry.
pub const ENGINE: &str = "ubt";

/// An engine failure during `what`.
pub(super) fn engine_error(what: &str, error: impl std::fmt::Display) -> BenchError {
    BenchError::Engine {
        what: what.to_owned(),
        message: error.to_string(),
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

fn root_hex(root: &[u8; 32]) -> String {
    format!("0x{}", hex::encode(root))
}

/// Applies a block's writes (each with its account, when known: a
/// database with a flat index needs them) and commits it:
/// `(state_hash_ms, commit_ms, root)`.
fn hash_and_commit(
    db: &mut Db,
    writes: &[(B256, B256)],
    owners: Option<&[Address]>,
) -> Result<(f64, f64, String), BenchError> {
    let start = Instant::now();
    match owners {
        Some(owners) if db.has_flat_index() => {
            let owned: Vec<(Address, B256, B256)> = owners
                .iter()
                .zip(writes)
                .map(|(owner, (key, value))| (*owner, *key, *value))
                .collect();
            db.apply_owned(&owned)
        }
        _ => db.apply(writes),
    }
    .map_err(|e| engine_error("applying the block", e))?;
    let state_hash_ms = ms(start);
    let start = Instant::now();
    let root = db
        .commit()
        .map_err(|e| engine_error("committing the block", e))?;
    Ok((state_hash_ms, ms(start), root_hex(&root)))
}

/// Bytes and misses of a block: counters after minus before.
fn io_delta(before: IoCounters, after: IoCounters) -> (u64, u64, u64) {
    (
        after.bucket_reads - before.bucket_reads,
        after.bytes_read - before.bytes_read,
        after.bytes_written - before.bytes_written,
    )
}

/// Runs `blocks` (one list of transactions per block) with the EVM over
/// `db`, applying and committing each. With `prefetch`, a speculative pass
/// runs each block on a helper thread beside the real execution with
/// [`HintSource`] (code from `hint_codes`), handing the slots it meets to
/// the prefetcher ahead of the execution; the helper's CPU time competes
/// with the execution's, and the execution's state-read time includes
/// every wait for a prefetch still in flight. With `record`, each block's line for `blocks.jsonl` is
/// pushed there. `on_block` is called after every block.
#[allow(clippy::too_many_arguments)]
pub fn run_evm(
    db: Db,
    codes: CodeStore,
    hint_codes: &CodeStore,
    blocks: &[Vec<TxSpec>],
    label: &RunLabel,
    prefetch: bool,
    mut record: Option<&mut Vec<BlockLine>>,
    on_block: &mut dyn FnMut(),
) -> Result<(Vec<BlockMetrics>, Db), BenchError> {
    let mut executor = Executor::new(DbSource { db }, codes);
    let mut out = Vec::with_capacity(blocks.len());
    for (index, txs) in blocks.iter().enumerate() {
        let before = executor.source().db.diagnostics().io;
        let outcome = if prefetch {
            let db = &executor.source().db;
            let reader = db
                .reader(&db.root())
                .map_err(|e| engine_error("opening the speculative pass's snapshot", e))?;
            let stop = AtomicBool::new(false);
            std::thread::scope(|scope| {
                let pass = scope.spawn(|| {
                    let mut pass =
                        Executor::new(HintSource::new(reader, &stop), hint_codes.clone());
                    // A pass that stops early or fails only prefetches less.
                    let _ = pass.execute_block(txs);
                    let (mut hints, _) = pass.into_parts();
                    hints.flush();
                });
                let outcome = executor.execute_block(txs);
                stop.store(true, Ordering::Relaxed);
                let _ = pass.join();
                outcome
            })
        } else {
            executor.execute_block(txs)
        }
        .map_err(|e| engine_error("executing the block", e))?;
        if let Some(failed) = outcome.txs.iter().position(|tx| !tx.success) {
            return Err(engine_error(
                "executing the block",
                format!(
                    "block {}: transaction {failed} failed (the state lacks the workload's \
                     contracts or holders)",
                    index + 1
                ),
            ));
        }
        let (state_hash_ms, commit_ms, root) = hash_and_commit(
            &mut executor.source_mut().db,
            &outcome.tree_writes,
            Some(&outcome.tree_owners),
        )?;
        // The sum of the phases, as the peer reports it: the harness's own
        // bookkeeping (formatting the block's access records) is left out.
        let execution_ms = outcome.execution_us as f64 / 1e3;
        let state_read_ms = outcome.state_read_us as f64 / 1e3;
        let total_ms = execution_ms + state_read_ms + state_hash_ms + commit_ms;
        let (misses, bytes_read, bytes_written) =
            io_delta(before, executor.source().db.diagnostics().io);
        let number = index as u64 + 1;
        if let Some(lines) = record.as_deref_mut() {
            lines.push(BlockLine {
                block: number,
                gas_used: outcome.gas_used,
                txs: outcome.txs.len() as u64,
                reads: outcome.reads.clone(),
                writes: outcome.writes.clone(),
            });
        }
        out.push(BlockMetrics {
            engine: ENGINE.into(),
            variant: label.variant.clone(),
            workload: label.workload.clone(),
            run: label.run,
            block: number,
            gas_used: outcome.gas_used,
            txs: outcome.txs.len() as u64,
            accounts_read: outcome.accounts_read as u64,
            slots_read: outcome.slots_read as u64,
            slots_written: outcome.slots_written as u64,
            accounts_written: outcome.accounts_written as u64,
            cache_misses: misses,
            execution_ms,
            state_read_ms,
            state_hash_ms,
            commit_ms,
            total_ms,
            mgas_per_s: mgas_per_s(outcome.gas_used, total_ms),
            bytes_read: Some(bytes_read),
            bytes_written: Some(bytes_written),
            root,
        });
        on_block();
    }
    let (source, _) = executor.into_parts();
    Ok((out, source.db))
}

fn mgas_per_s(gas: u64, total_ms: f64) -> f64 {
    if total_ms > 0.0 {
        gas as f64 / total_ms / 1e3
    } else {
        0.0
    }
}

/// The tree keys a read record reads, each with its account (none for a
/// raw key).
pub fn read_keys(record: &ReadRecord, out: &mut Vec<(Option<Address>, B256)>) {
    match record {
        ReadRecord::Account(address) => {
            out.push((Some(*address), basic_data_key(address)));
            out.push((Some(*address), code_hash_key(address)));
        }
        ReadRecord::Slot(address, slot) => {
            out.push((Some(*address), storage_slot_key(address, slot)));
        }
        ReadRecord::Raw(key) => out.push((None, *key)),
    }
}

/// Reads `keys` at the tip: through the accounts when every key has one
/// (the flat index, on a database that keeps one), else by tree key.
fn read_block_keys(db: &Db, keys: &[(Option<Address>, B256)]) -> ubt_engine::Result<usize> {
    let owned: Option<Vec<(Address, B256)>> =
        keys.iter().map(|(o, k)| o.map(|o| (o, *k))).collect();
    match owned {
        Some(owned) => db.get_owned(&owned).map(|values| values.len()),
        None => {
            let plain: Vec<B256> = keys.iter().map(|(_, k)| *k).collect();
            db.get_many(&plain).map(|values| values.len())
        }
    }
}

/// The accounts of a block's write records, parallel to their
/// [`tree_writes`]; none when a raw record has no account.
fn write_owners(records: &[WriteRecord]) -> Option<Vec<Address>> {
    let mut out = Vec::with_capacity(records.len() * 2);
    for record in records {
        match record {
            WriteRecord::Account { address, .. } => out.extend([*address, *address]),
            WriteRecord::Slot { address, .. } => out.push(*address),
            WriteRecord::Raw { .. } => return None,
        }
    }
    Some(out)
}

/// The tree writes of a write record, with geth's account semantics (as
/// `WriteRecord::apply` makes them).
pub fn tree_writes(records: &[WriteRecord]) -> Vec<(B256, B256)> {
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        match record {
            WriteRecord::Account {
                address,
                nonce,
                balance,
                code_hash,
                code_size,
            } => {
                let basic = BasicData {
                    version: 0,
                    code_size: *code_size,
                    nonce: *nonce,
                    balance: geth_balance(balance),
                };
                out.push((basic_data_key(address), basic.pack()));
                out.push((code_hash_key(address), *code_hash));
            }
            WriteRecord::Slot {
                address,
                slot,
                value,
            } => out.push((storage_slot_key(address, slot), *value)),
            WriteRecord::Raw { key, value } => out.push((*key, *value)),
        }
    }
    out
}

/// Replays recorded blocks on `db`: every read (one at a time, or, with
/// `batched`, all of a block's reads issued at once as one deep-queue
/// batch), then the writes, hash and commit.
pub fn run_replay(
    mut db: Db,
    blocks: &[ReplayBlock],
    label: &RunLabel,
    batched: bool,
    on_block: &mut dyn FnMut(),
) -> Result<(Vec<BlockMetrics>, Db), BenchError> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        let before = db.diagnostics().io;
        let start = Instant::now();
        let mut keys = Vec::with_capacity(block.reads.len() + 1);
        for record in &block.reads {
            read_keys(record, &mut keys);
        }
        if batched {
            read_block_keys(&db, &keys)
                .map_err(|e| engine_error("reading the block's state", e))?;
        } else {
            for key in &keys {
                read_block_keys(&db, std::slice::from_ref(key))
                    .map_err(|e| engine_error("reading the block's state", e))?;
            }
        }
        let state_read_ms = ms(start);
        let writes = tree_writes(&block.writes);
        let owners = write_owners(&block.writes);
        let (state_hash_ms, commit_ms, root) =
            hash_and_commit(&mut db, &writes, owners.as_deref())?;
        let total_ms = ms(start);
        let (misses, bytes_read, bytes_written) = io_delta(before, db.diagnostics().io);
        let count = |read: fn(&ReadRecord) -> bool| block.reads.iter().filter(|r| read(r)).count();
        let written = |write: fn(&WriteRecord) -> bool| {
            block.writes.iter().filter(|w| write(w)).count() as u64
        };
        out.push(BlockMetrics {
            engine: ENGINE.into(),
            variant: label.variant.clone(),
            workload: label.workload.clone(),
            run: label.run,
            block: block.block,
            gas_used: block.gas_used,
            txs: block.txs,
            accounts_read: count(|r| matches!(r, ReadRecord::Account(_))) as u64,
            slots_read: count(|r| !matches!(r, ReadRecord::Account(_))) as u64,
            slots_written: written(|w| !matches!(w, WriteRecord::Account { .. })),
            accounts_written: written(|w| matches!(w, WriteRecord::Account { .. })),
            cache_misses: misses,
            execution_ms: 0.0,
            state_read_ms,
            state_hash_ms,
            commit_ms,
            total_ms,
            mgas_per_s: mgas_per_s(block.gas_used, total_ms),
            bytes_read: Some(bytes_read),
            bytes_written: Some(bytes_written),
            root,
        });
        on_block();
    }
    Ok((out, db))
}

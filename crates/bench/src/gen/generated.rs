//! A generated state: a chain-like state that exists on disk only as its
//! recipe in `workload.json` ([`StateStorage::Generated`](super::StateStorage::Generated)) and is
//! generated again, record for record, whenever it is read. At a few
//! hundred million tree entries `state.jsonl` would take ~150 bytes per
//! entry (30 GB at 200 M), more than the database beside it; a generated
//! state takes none, and generating it (~10 M records/s on one core) is
//! faster than parsing the file.
//!
//! * [`GeneratedItems`]: the state as the import's item stream, generated
//!   on a thread of its own a batch ahead (memory: a few batches).
//! * [`generated_codes`]: the code of the contracts a workload calls.
//!
//! The records and their order are those `gen_chain` writes to
//! `state.jsonl` for the same parameters (a test holds them equal).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use ubt_evm::CodeStore;
use ubt_import::StateItem;

use super::chain::{write_chain_state, write_studies_contracts, ChainParams};
use super::sink::StateSink;
use crate::BenchError;

/// Items per batch handed from the generating thread.
const BATCH_ITEMS: usize = 1 << 14;
/// Batches generated ahead of the consumer.
const BATCHES_AHEAD: usize = 4;

/// Counts the records a [`GeneratedItems`] has generated so far.
#[derive(Clone, Debug)]
pub struct GeneratedProbe {
    records: Arc<AtomicU64>,
}

impl GeneratedProbe {
    /// Records generated so far.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }
}

/// What the generating thread hands over.
#[derive(Debug)]
enum Handed {
    /// The next items.
    Items(Vec<StateItem>),
    /// The state is complete: nothing follows.
    End,
}

/// The items of a generated chain-like state, in `state.jsonl` order.
/// If the generating thread stops before the state's end (it panicked),
/// the iteration ends with an error, never as a shorter state.
#[derive(Debug)]
pub struct GeneratedItems {
    batches: Receiver<Handed>,
    batch: std::vec::IntoIter<StateItem>,
    done: bool,
}

impl GeneratedItems {
    /// Starts generating the state of `params` on a thread of its own; the
    /// thread stops when the state ends or the items are dropped.
    pub fn start(params: &ChainParams) -> (GeneratedItems, GeneratedProbe) {
        let (sender, batches) = sync_channel(BATCHES_AHEAD);
        let probe = GeneratedProbe {
            records: Arc::new(AtomicU64::new(0)),
        };
        let mut sink = BatchSink {
            batch: Vec::with_capacity(BATCH_ITEMS),
            sender,
            records: Arc::clone(&probe.records),
        };
        let params = params.clone();
        std::thread::spawn(move || {
            // An error means the consumer hung up: nothing to report to.
            if write_chain_state(&mut sink, &params, &mut |_| {}).is_ok() && sink.flush().is_ok() {
                let _ = sink.sender.send(Handed::End);
            }
        });
        let items = GeneratedItems {
            batches,
            batch: Vec::new().into_iter(),
            done: false,
        };
        (items, probe)
    }
}

impl Iterator for GeneratedItems {
    type Item = std::io::Result<StateItem>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.batch.next() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.batches.recv() {
                Ok(Handed::Items(batch)) => self.batch = batch.into_iter(),
                Ok(Handed::End) => self.done = true,
                Err(_) => {
                    self.done = true;
                    return Some(Err(std::io::Error::other(
                        "the state generator stopped before the end of the state",
                    )));
                }
            }
        }
    }
}

/// Batches items for the consumer.
struct BatchSink {
    batch: Vec<StateItem>,
    sender: SyncSender<Handed>,
    records: Arc<AtomicU64>,
}

impl BatchSink {
    fn push(&mut self, item: StateItem) -> Result<(), BenchError> {
        self.batch.push(item);
        if self.batch.len() == BATCH_ITEMS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BenchError> {
        let count = self.batch.len() as u64;
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_ITEMS));
        self.sender
            .send(Handed::Items(full))
            .map_err(|_| BenchError::Engine {
                what: "generating the state".into(),
                message: "the reader stopped".into(),
            })?;
        self.records.fetch_add(count, Ordering::Relaxed);
        Ok(())
    }
}

impl StateSink for BatchSink {
    fn account(
        &mut self,
        address: &[u8; 20],
        nonce: u64,
        balance: u128,
        code: &[u8],
    ) -> Result<(), BenchError> {
        self.push(StateItem::Account {
            address: Address::from(*address),
            nonce,
            balance: U256::from(balance),
            code: code.to_vec(),
        })
    }

    fn slot(
        &mut self,
        address: &[u8; 20],
        key: &[u8; 32],
        value: &[u8; 32],
    ) -> Result<(), BenchError> {
        self.push(StateItem::Slot {
            address: Address::from(*address),
            slot: U256::from_be_bytes(*key),
            value: B256::from(*value),
        })
    }
}

/// The code of the contracts in `only` (the studies' contracts a workload
/// calls: the token, its attack contract, the sequential-slot contract).
/// Those come first in a chain-like state, so only they are generated.
pub fn generated_codes(params: &ChainParams, only: &HashSet<Address>) -> CodeStore {
    struct Codes<'a> {
        only: &'a HashSet<Address>,
        codes: CodeStore,
    }
    impl StateSink for Codes<'_> {
        fn account(
            &mut self,
            a: &[u8; 20],
            _: u64,
            _: u128,
            code: &[u8],
        ) -> Result<(), BenchError> {
            if !code.is_empty() && self.only.contains(&Address::from(*a)) {
                self.codes.insert(code.to_vec().into());
            }
            Ok(())
        }

        fn slot(&mut self, _: &[u8; 20], _: &[u8; 32], _: &[u8; 32]) -> Result<(), BenchError> {
            Ok(())
        }
    }
    let mut sink = Codes {
        only,
        codes: CodeStore::new(),
    };
    // The sink never fails.
    let _ = write_studies_contracts(&mut sink, params, params.target_entries, &mut |_| {});
    sink.codes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: u8) -> StateItem {
        StateItem::Slot {
            address: Address::repeat_byte(n),
            slot: U256::from(n),
            value: B256::repeat_byte(n),
        }
    }

    fn items(handed: Vec<Handed>) -> Vec<std::io::Result<StateItem>> {
        let (sender, batches) = sync_channel(handed.len() + 1);
        for message in handed {
            sender.send(message).unwrap();
        }
        drop(sender);
        let items = GeneratedItems {
            batches,
            batch: Vec::new().into_iter(),
            done: false,
        };
        items.collect()
    }

    #[test]
    fn a_generator_that_stops_early_is_an_error_not_a_shorter_state() {
        let complete = items(vec![Handed::Items(vec![item(1), item(2)]), Handed::End]);
        assert_eq!(complete.len(), 2);
        assert!(complete.iter().all(Result::is_ok));
        let cut = items(vec![Handed::Items(vec![item(1), item(2)])]);
        assert_eq!(cut.len(), 3);
        assert!(cut[..2].iter().all(Result::is_ok));
        assert!(cut[2]
            .as_ref()
            .is_err_and(|e| e.to_string().contains("stopped before")));
    }
}

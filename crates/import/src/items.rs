//! Account-level items handed over by the caller (an iterator) as an
//! import's input: for states that are not a genesis file or a dump
//! (generated states, another client's state, a test's), in bounded
//! memory whatever their size.
//!
//! The iterator runs on a thread of its own, cut into batches of
//! [`BATCH_ITEMS`] items (or [`BATCH_CODE_BYTES`] of code), while the
//! importing thread derives their tree keys (in parallel) and sorts them,
//! as for the other inputs. An item's origin is its position in the
//! iteration (0-based); two items writing the same tree key (the same
//! account twice, the same slot twice) are refused, naming both.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;

use alloy_primitives::{Address, B256, U256};

use crate::collect::{consume, Collector, Origins};
use crate::entries::{RawBatch, SlotItem};
use crate::error::{ImportError, Location, Problem};
use crate::sort::buffer::Duplicate;
use crate::sort::SortError;

/// Items per batch handed to the importing thread.
const BATCH_ITEMS: usize = 1 << 14;
/// Code bytes that end a batch early.
const BATCH_CODE_BYTES: usize = 4 << 20;
/// Batches in flight between the iterating thread and the importing one.
const BATCHES_IN_FLIGHT: usize = 8;
/// Bytes an account item counts for in the read phase's progress, besides
/// its code: address, nonce, balance.
const ACCOUNT_ITEM_BYTES: u64 = 20 + 8 + 32;
/// Bytes a slot item counts for: address, slot, value.
const SLOT_ITEM_BYTES: u64 = 20 + 32 + 32;

/// One item of a state to import ([`crate::import_items`]), with the
/// genesis semantics of the [crate documentation](crate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateItem {
    /// An account: its header leaves and code chunks.
    Account {
        /// The address.
        address: Address,
        /// The nonce.
        nonce: u64,
        /// The balance (stored truncated to 128 bits, as geth stores it).
        balance: U256,
        /// The runtime code (empty for none; shorter than 4 GiB).
        code: Vec<u8>,
    },
    /// A storage slot of an account (the account is an item of its own,
    /// before or after). A zero value writes nothing.
    Slot {
        /// The account.
        address: Address,
        /// The slot.
        slot: U256,
        /// The value.
        value: B256,
    },
}

/// Names the items behind a duplicate tree key by their positions.
pub(crate) struct ItemOrigins;

impl Origins for ItemOrigins {
    fn duplicate(&mut self, duplicate: &Duplicate) -> ImportError {
        ImportError::input(
            Location::path(format!(
                "items {} and {}",
                duplicate.first_origin + 1,
                duplicate.second_origin + 1
            )),
            Problem::DuplicateTreeKey {
                tree_key: duplicate.key.into(),
            },
        )
    }
}

/// Reads `items` into `collector`; an error from the iterator stops the
/// import as [`ImportError::Read`].
pub(crate) fn read<I>(items: I, collector: &mut Collector<'_, '_>) -> Result<(), SortError>
where
    I: Iterator<Item = std::io::Result<StateItem>> + Send,
{
    let bytes_read = AtomicU64::new(0);
    let (sender, receiver) = sync_channel::<RawBatch>(BATCHES_IN_FLIGHT);
    let counter = &bytes_read;
    std::thread::scope(|scope| {
        // The sender moves into the iterating thread: its end closes the
        // channel, and a closed channel (the importer stopped) stops it.
        let iterating = scope
            .spawn(move || batch_items(items, counter, &mut |batch| sender.send(batch).is_ok()));
        let consumed = consume(receiver, collector, &bytes_read);
        let iterated = iterating.join();
        collector.read_to(bytes_read.load(Ordering::Relaxed));
        match (consumed, iterated) {
            (Err(error), _) => Err(error),
            (Ok(()), Ok(result)) => result.map_err(SortError::Failed),
            (Ok(()), Err(_)) => Err(SortError::Failed(ImportError::Internal(
                "the thread iterating the items panicked".into(),
            ))),
        }
    })
}

/// Cuts `items` into batches handed to `sink` (which returns false to
/// stop), counting their bytes in `counter`.
fn batch_items<I>(
    items: I,
    counter: &AtomicU64,
    sink: &mut dyn FnMut(RawBatch) -> bool,
) -> Result<(), ImportError>
where
    I: Iterator<Item = std::io::Result<StateItem>>,
{
    let mut batch = RawBatch::default();
    let mut in_batch = 0usize;
    for (origin, item) in (0u64..).zip(items) {
        let item = item.map_err(ImportError::Read)?;
        let bytes = match item {
            StateItem::Account {
                address,
                nonce,
                balance,
                code,
            } => {
                if u32::try_from(code.len()).is_err() {
                    return Err(ImportError::input(
                        Location::path(format!("item {}", origin + 1)),
                        Problem::CodeTooLarge(code.len()),
                    ));
                }
                batch.push_account(address, origin, nonce, balance, None, &code);
                ACCOUNT_ITEM_BYTES + code.len() as u64
            }
            StateItem::Slot {
                address,
                slot,
                value,
            } => {
                batch.slots.push(SlotItem {
                    address,
                    origin,
                    slot: slot.to_be_bytes::<32>(),
                    value: value.0,
                });
                SLOT_ITEM_BYTES
            }
        };
        counter.fetch_add(bytes, Ordering::Relaxed);
        in_batch += 1;
        if in_batch >= BATCH_ITEMS || batch.code_bytes.len() >= BATCH_CODE_BYTES {
            if !sink(std::mem::take(&mut batch)) {
                // The importer stopped; it reports why.
                return Ok(());
            }
            in_batch = 0;
        }
    }
    if !batch.is_empty() {
        sink(batch);
    }
    Ok(())
}

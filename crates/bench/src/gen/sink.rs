//! Where a generated state goes: [`StateSink`] takes the records of a
//! state of accounts in the generator's order. `state.jsonl` is one sink
//! ([`super::write::LineWriter`]); the import's item stream is another
//! ([`super::generated`]), so a state can reach a database without ever
//! being written to disk.

use crate::BenchError;

/// Takes a state of accounts, record by record, in generation order.
pub(crate) trait StateSink {
    /// An account record (`code` empty for none).
    fn account(
        &mut self,
        address: &[u8; 20],
        nonce: u64,
        balance: u128,
        code: &[u8],
    ) -> Result<(), BenchError>;

    /// A storage slot record of `address`.
    fn slot(
        &mut self,
        address: &[u8; 20],
        key: &[u8; 32],
        value: &[u8; 32],
    ) -> Result<(), BenchError>;
}

/// Counts records and drops them (the record count `workload.json`
/// states for a generated state).
#[derive(Debug, Default)]
pub(crate) struct CountingSink {
    /// Records taken.
    pub records: u64,
}

impl StateSink for CountingSink {
    fn account(&mut self, _: &[u8; 20], _: u64, _: u128, _: &[u8]) -> Result<(), BenchError> {
        self.records += 1;
        Ok(())
    }

    fn slot(&mut self, _: &[u8; 20], _: &[u8; 32], _: &[u8; 32]) -> Result<(), BenchError> {
        self.records += 1;
        Ok(())
    }
}

//! The address of every alloc entry by position, so that a duplicate found
//! by the sort (which knows only the entries' origins, the positions) can
//! name its account. The first million addresses stay in memory (20 MB);
//! beyond that they go to a file in the temporary directory, 20 bytes each.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use alloy_primitives::Address;

use crate::error::ImportError;
use crate::sort::tmp::TempSpace;

/// Addresses kept in memory before the log moves to a file.
const MEMORY_ADDRESSES_MAX: usize = 1 << 20;

/// Addresses by alloc position.
pub(crate) enum AddressLog {
    /// All in memory.
    Memory(Vec<Address>),
    /// In a temporary file.
    File {
        /// The file's path.
        path: PathBuf,
        /// The file, buffered.
        writer: BufWriter<File>,
        /// Addresses written.
        count: u64,
    },
}

impl AddressLog {
    /// An empty log.
    pub fn new() -> AddressLog {
        AddressLog::Memory(Vec::new())
    }

    /// Appends the address of the next position.
    pub fn push(&mut self, address: Address, temp: &TempSpace) -> Result<(), ImportError> {
        match self {
            AddressLog::Memory(addresses) if addresses.len() < MEMORY_ADDRESSES_MAX => {
                addresses.push(address);
                Ok(())
            }
            AddressLog::Memory(addresses) => {
                let (path, file) = temp.create("addresses")?;
                let mut writer = BufWriter::new(file);
                for known in addresses.iter().chain([&address]) {
                    writer
                        .write_all(known.as_slice())
                        .map_err(ImportError::io(&path, "writing the address log"))?;
                }
                let count = addresses.len() as u64 + 1;
                *self = AddressLog::File {
                    path,
                    writer,
                    count,
                };
                Ok(())
            }
            AddressLog::File {
                path,
                writer,
                count,
            } => {
                writer
                    .write_all(address.as_slice())
                    .map_err(ImportError::io(path.as_path(), "writing the address log"))?;
                *count += 1;
                Ok(())
            }
        }
    }

    /// The address at `position`, if the log has it (and can read it).
    pub fn get(&mut self, position: u64) -> Option<Address> {
        match self {
            AddressLog::Memory(addresses) => usize::try_from(position)
                .ok()
                .and_then(|i| addresses.get(i))
                .copied(),
            AddressLog::File { writer, count, .. } => {
                if position >= *count {
                    return None;
                }
                writer.flush().ok()?;
                let file = writer.get_mut();
                let mut bytes = [0u8; 20];
                file.seek(SeekFrom::Start(position * 20)).ok()?;
                file.read_exact(&mut bytes).ok()?;
                file.seek(SeekFrom::End(0)).ok()?;
                Some(Address::from(bytes))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_to_a_file_and_still_answers() {
        let base =
            std::env::temp_dir().join(format!("ubt-import-addresses-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&base);
        let temp = TempSpace::new(base.clone());
        let mut log = AddressLog::new();
        let total = MEMORY_ADDRESSES_MAX as u64 + 10;
        let address_of = |i: u64| {
            let mut bytes = [0u8; 20];
            bytes[12..].copy_from_slice(&i.to_be_bytes());
            Address::from(bytes)
        };
        for i in 0..total {
            assert!(log.push(address_of(i), &temp).is_ok());
        }
        assert!(matches!(log, AddressLog::File { .. }));
        for i in [0, 5, MEMORY_ADDRESSES_MAX as u64, total - 1] {
            assert_eq!(log.get(i), Some(address_of(i)));
        }
        assert_eq!(log.get(total), None);
        drop(log);
        drop(temp);
        let _ = std::fs::remove_dir_all(base);
    }
}

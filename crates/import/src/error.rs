//! The errors of an import: what is wrong with the input ([`Problem`], at a
//! [`Location`]), and everything else (reading, temporary files, the
//! database).

use std::fmt;
use std::path::PathBuf;

use alloy_primitives::B256;

use crate::sort::run::RunError;

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The input is malformed or inconsistent: the caller's data is wrong.
    #[error("{0}")]
    Input(Box<InputError>),
    /// Reading the input failed.
    #[error("cannot read the input: {0}")]
    Read(#[source] std::io::Error),
    /// The target directory cannot take a new database.
    #[error("{}: {problem}", .path.display())]
    Target {
        /// The database directory.
        path: PathBuf,
        /// Why it cannot.
        problem: TargetProblem,
    },
    /// A file or directory could not be created, written, read or
    /// removed: the temporary files (spill runs, spooled storage, the
    /// address log) or the database directory.
    #[error("{}: {action}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A temporary spill run read back differently from how it was written
    /// (a damaged disk or a file changed under the import).
    #[error("temporary file {}: {error}", .path.display())]
    Run {
        /// The run file.
        path: PathBuf,
        /// What its bytes got wrong.
        error: RunError,
    },
    /// The options are out of range.
    #[error("invalid import options: {0}")]
    Options(String),
    /// The database reported an error.
    #[error(transparent)]
    Store(#[from] ubt_engine::Error),
    /// A thread of the import stopped unexpectedly (a bug).
    #[error("internal error: {0}")]
    Internal(String),
}

impl ImportError {
    /// Whether the caller is to blame: malformed input, an unreadable
    /// input, options out of range, or a target directory that already
    /// holds something. Everything else is an I/O or internal failure.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ImportError::Input(_)
            | ImportError::Read(_)
            | ImportError::Options(_)
            | ImportError::Target { .. } => true,
            ImportError::Store(error) => matches!(
                error,
                ubt_engine::Error::GroupDepthMismatch { .. } | ubt_engine::Error::InvalidOptions(_)
            ),
            ImportError::Io { .. } | ImportError::Run { .. } | ImportError::Internal(_) => false,
        }
    }

    /// A malformed-input error.
    pub(crate) fn input(location: Location, problem: Problem) -> ImportError {
        ImportError::Input(Box::new(InputError { location, problem }))
    }

    /// An I/O error on `path` while doing `action`.
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
    ) -> impl FnOnce(std::io::Error) -> ImportError {
        let path = path.into();
        move |source| ImportError::Io {
            path,
            action,
            source,
        }
    }
}

/// What is wrong with the input, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {problem}")]
pub struct InputError {
    /// Where in the input.
    pub location: Location,
    /// What is wrong.
    pub problem: Problem,
}

/// Why a directory cannot take the imported database.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetProblem {
    /// It already holds a database with data: an import makes a new state.
    #[error("already holds a database; an import makes a new database (choose a new directory)")]
    HoldsDatabase,
    /// It holds files that are not a database's.
    #[error("holds files that are not a ubt database's; import into a new or empty directory")]
    NotEmpty,
    /// It exists and is not a directory.
    #[error("exists and is not a directory")]
    NotADirectory,
}

/// Where in the input a problem is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// 1-based line number (geth dumps).
    pub line: Option<u64>,
    /// A second line involved (a duplicate's other occurrence).
    pub other_line: Option<u64>,
    /// JSON path inside the document or line, `.`-separated (empty for the
    /// whole line or document).
    pub path: String,
}

impl Location {
    /// A JSON path of a document (genesis).
    pub fn path(path: impl Into<String>) -> Location {
        Location {
            path: path.into(),
            ..Location::default()
        }
    }

    /// A JSON path inside line `line` (geth dump).
    pub fn line(line: u64, path: impl Into<String>) -> Location {
        Location {
            line: Some(line),
            path: path.into(),
            ..Location::default()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match (self.line, self.other_line) {
            (Some(a), Some(b)) => parts.push(format!("lines {a} and {b}")),
            (Some(a), None) => parts.push(format!("line {a}")),
            _ => {}
        }
        if !self.path.is_empty() {
            parts.push(self.path.clone());
        }
        if parts.is_empty() {
            parts.push("input".to_string());
        }
        f.write_str(&parts.join(": "))
    }
}

/// What is wrong with the input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Not well-formed JSON, or a value of the wrong JSON type (the JSON
    /// parser's message, with its position).
    #[error("malformed JSON: {0}")]
    Json(String),
    /// A hex string with characters that are not hex digits, a missing
    /// `0x` where one is required, or an odd number of digits. (The
    /// location's path names the value.)
    #[error("invalid hex {text:?}")]
    InvalidHex {
        /// Which value.
        what: &'static str,
        /// The text (shortened when long).
        text: String,
    },
    /// A hex value of the wrong length.
    #[error("{actual} hex digits, expected {expected}")]
    WrongLength {
        /// Which value.
        what: &'static str,
        /// Digits expected (the most allowed, for values that may be shorter).
        expected: usize,
        /// Digits found.
        actual: usize,
    },
    /// A number that is neither decimal nor `0x` hex.
    #[error("invalid number {text:?}")]
    InvalidNumber {
        /// Which value.
        what: &'static str,
        /// The text (shortened when long).
        text: String,
    },
    /// A negative balance.
    #[error("balance is negative")]
    NegativeBalance,
    /// A balance of more than 256 bits.
    #[error("balance does not fit 256 bits")]
    BalanceTooLarge,
    /// A nonce above 2^64 - 1.
    #[error("nonce does not fit 64 bits")]
    NonceTooLarge,
    /// Code longer than the 32-bit code size geth stores.
    #[error("code of {0} bytes is longer than the 4 GiB a code size can hold")]
    CodeTooLarge(usize),
    /// A required field is absent.
    #[error("missing field {0:?}")]
    MissingField(&'static str),
    /// A field appears twice in one object (go-ethereum keeps the last; an
    /// import refuses).
    #[error("field {0:?} appears twice")]
    DuplicateField(String),
    /// A genesis object without `alloc`.
    #[error("missing field \"alloc\" (neither a genesis with an alloc nor a bare alloc map)")]
    MissingAlloc,
    /// The same account twice (go-ethereum's genesis decoder keeps the last
    /// silently; an import refuses).
    #[error("duplicate account{}", describe_address(.address))]
    DuplicateAccount {
        /// The account, when known.
        address: Option<alloy_primitives::Address>,
    },
    /// The same storage slot twice in one account.
    #[error("duplicate storage key (tree key {tree_key})")]
    DuplicateStorageKey {
        /// The slot's tree key.
        tree_key: B256,
    },
    /// Two items write the same tree key: the same account, or the same
    /// storage slot, given twice ([`crate::import_items`]).
    #[error("duplicate tree key {tree_key} (the same account or storage slot given twice)")]
    DuplicateTreeKey {
        /// The tree key both write.
        tree_key: B256,
    },
    /// `codeHash` is not keccak256 of `code`.
    #[error("codeHash {code_hash} is not the hash of the code ({computed})")]
    CodeHashMismatch {
        /// The hash in the input.
        code_hash: B256,
        /// keccak256 of the code in the input.
        computed: B256,
    },
    /// A code hash of non-empty code but no code: the dump was made without
    /// code (`--nocode`).
    #[error("codeHash {0} names code but the line has none (a dump made with --nocode cannot be imported)")]
    CodeMissing(B256),
    /// A storage root of non-empty storage but no storage: the dump was
    /// made without storage (`--nostorage`) or the slots' preimages are
    /// missing.
    #[error("storage root {0} is not empty but the line has no storage (a dump made with --nostorage, or storage preimages missing)")]
    StorageMissing(B256),
    /// `key` is not keccak256 of `address`.
    #[error("key {key} is not the hash of the address ({computed})")]
    AddressHashMismatch {
        /// The hash in the input.
        key: B256,
        /// keccak256 of the address in the input.
        computed: B256,
    },
    /// An account line without an address (the node lacked the preimage).
    #[error("account without \"address\" (missing preimage; --skip-missing-preimages skips such accounts)")]
    MissingAddress,
    /// The dump's `{"root":...}` line somewhere other than the first line.
    #[error("a root line is only allowed as the first line")]
    MisplacedRootLine,
}

/// `" 0x…"` for a known address.
fn describe_address(address: &Option<alloy_primitives::Address>) -> String {
    match address {
        Some(address) => format!(" {address:#x}"),
        None => String::new(),
    }
}

/// `text` for a message: at most 80 characters (with `...` when cut).
pub(crate) fn shorten(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    if text.chars().count() <= MAX_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_CHARS).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_print_lines_then_paths() {
        assert_eq!(Location::line(3, "").to_string(), "line 3");
        assert_eq!(
            Location::line(3, "storage.0x01").to_string(),
            "line 3: storage.0x01"
        );
        let both = Location {
            line: Some(3),
            other_line: Some(9),
            path: String::new(),
        };
        assert_eq!(both.to_string(), "lines 3 and 9");
        assert_eq!(
            Location::path("alloc.0xab.balance").to_string(),
            "alloc.0xab.balance"
        );
        let error = ImportError::input(
            Location::path("alloc.0xab.balance"),
            Problem::NegativeBalance,
        );
        assert_eq!(error.to_string(), "alloc.0xab.balance: balance is negative");
        assert!(error.is_bad_input());
    }

    #[test]
    fn long_texts_are_shortened() {
        assert_eq!(shorten("abc"), "abc");
        let long = "x".repeat(200);
        assert_eq!(shorten(&long).len(), 83);
    }
}

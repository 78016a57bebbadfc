//! # ubt-import
//!
//! Real chain state into a new ubt database: a geth genesis file
//! ([`import_genesis`]), the output of `geth dump --iterative`
//! ([`import_geth_dump`]), or accounts and slots from any source as an
//! iterator of [`StateItem`]s ([`import_items`]: generated states, another
//! client's state), with the root go-ethereum v1.17.10 computes for the
//! same state in its unified binary trie.
//!
//! ```no_run
//! use ubt_import::{import_genesis, ImportOptions, NoProgress};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = std::fs::File::open("genesis.json")?;
//! let report = import_genesis(file, "state.ubt", &ImportOptions::default(), &NoProgress)?;
//! println!("{} accounts, root {}", report.counts.accounts, report.root);
//! # Ok(())
//! # }
//! ```
//!
//! ## Semantics
//!
//! Every account is imported as go-ethereum's genesis code (`hashAlloc`)
//! writes it into a fresh state: `AddBalance`, `SetCode`, `SetNonce`,
//! `SetState` per storage slot, then a commit that keeps empty accounts.
//! In the tree, per account: the BasicData leaf (version 0, the code's
//! length, the nonce, the balance truncated to its low 128 bits as geth's
//! `UpdateAccount` truncates it), the CodeHash leaf (keccak256 of the
//! code, of nothing for none), every 31-byte code chunk, and a leaf per
//! storage slot whose value is not zero (a zero value on a fresh account
//! is a no-op). A dump's accounts get the same treatment.
//!
//! ## Decisions
//!
//! * **An import makes a new database.** The directory must be absent,
//!   empty, or hold an empty database (left by a failed or killed build);
//!   a database with data is refused. A failed import removes what it
//!   made. A killed one leaves, depending on when it died, nothing, an
//!   empty or half-created database (a rerun completes it), or the
//!   complete import (a rerun is refused: the database holds data); and
//!   its temporary directory, `.ubt-import-<pid>-<n>`, in the database
//!   directory's parent (or in `tmp_dir`), which may be deleted.
//! * **Duplicates are refused** where go-ethereum's JSON decoding keeps the
//!   last silently: the same account twice (in any spelling of its
//!   address), the same storage slot twice, a field twice. They are found
//!   by the sort, which knows each entry's origin (a dump's line, an
//!   alloc's position), so the error names both lines or the account.
//! * **What a genesis may hold** follows go-ethereum's decoders: the whole
//!   genesis object (only `alloc` is read; other fields are skipped, not
//!   validated) or a bare alloc map (an object whose first key looks like
//!   an address); addresses with or without `0x`; `balance` required, a
//!   decimal or `0x` hex number as a string or a JSON number of any width,
//!   over 256 bits refused; `nonce` the same within 64 bits;
//!   `code` a `0x` hex string; storage keys and values hex with an
//!   optional lowercase `0x`, at most 32 bytes, left-padded; field names
//!   matched without regard to ASCII case; unknown fields ignored.
//! * **A negative balance is refused.** go-ethereum's decoder reads `-x`
//!   and its genesis code stores it as 2^256 - x (then truncated to 128
//!   bits); a negative balance is a mistake in the file, so an import
//!   names it instead of importing a balance nobody meant.
//! * **A dump is checked**: keccak256 of `code` must be `codeHash`; a
//!   `codeHash` of non-empty code without `code` (a dump made with
//!   `--nocode`) and a non-empty storage `root` without `storage` (made
//!   with `--nostorage`, or storage preimages missing) are refused, since
//!   the import would be wrong; `key` must be keccak256 of `address`. An
//!   account without `address` (a missing preimage) is an error unless
//!   [`ImportOptions::skip_missing_preimages`], which counts it.
//! * **The flat index of account values is built too** (unless
//!   [`ImportOptions::flat_index`] is off): every tree write is also
//!   filed under its account, sorted a second time by `(account, tree
//!   key)` in the same external sort (its own spill runs, within the same
//!   memory bound), and merged into `Db::build_flat_index` after the tree
//!   is built, so that account-level reads of the imported state read an
//!   account's values together (ARCHITECTURE.md, "Read locality"). A
//!   process killed while the index is built leaves a complete database
//!   without it (the build makes none until the index is whole); such a
//!   database reads correctly, and a rerun of the import, which refuses a
//!   database with data, needs the directory removed first.
//! * **Memory is bounded by [`ImportOptions::memory_bytes`]** (72 bytes
//!   per buffered entry, 156 with its flat record), not by the input:
//!   the genesis is parsed as a stream; a dump is cut into lines, and a line longer than a sixteenth
//!   of the memory is parsed as a stream with its storage spooled to disk
//!   (its `address` comes last). Only one account's code is held whole.
//!   A full buffer is sorted and spilled; the runs are merged with a
//!   bounded fan-in, in several passes if needed, and the last merge
//!   streams into the build. Without spilling, the sorted buffer is handed
//!   to the build in chunks freed as it goes.
//! * **Throughput**: the parsing of a dump's lines and the key derivation
//!   (one SHA-256 per stem, batched through the interleaved kernel) run in
//!   parallel; reading and cutting lines, and parsing a genesis, run on a
//!   thread of their own beside it.
//! * **Spill runs are decoded defensively** (lengths checked, a CRC-32C
//!   per block, only canonical bytes accepted); the format is described
//!   in `src/sort/run.rs`. Errors in them are [`RunError`]s.
//!
//! ## Errors
//!
//! [`ImportError::Input`] ([`InputError`]) names where the input is wrong: a JSON path in a
//! genesis (`alloc.0x….balance: balance is negative`), a line and a path
//! in a dump (`line 12: storage.0x…: invalid hex "0x1"`).
//! [`ImportError::is_bad_input`] tells the caller's mistakes from I/O
//! failures.

mod collect;
mod dump;
mod entries;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod genesis;
mod import;
mod items;
mod options;
mod progress;
mod report;
mod sort;
mod target;
#[cfg(feature = "testing")]
pub mod testing;
mod text;

pub use error::{ImportError, InputError, Location, Problem, TargetProblem};
pub use import::{import_genesis, import_geth_dump, import_items};
pub use items::StateItem;
pub use options::{ImportOptions, DEFAULT_MEMORY_BYTES, MIN_MEMORY_BYTES};
pub use progress::{NoProgress, Phase, Progress, Status};
pub use report::{Counts, ImportReport, PhaseTimings};
pub use sort::run::RunError;
pub use ubt_engine::BuildReport;

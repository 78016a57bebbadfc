//! The error type of the benchmark crate.

use std::io;
use std::path::Path;

/// Everything that can stop a benchmark, a device probe or the cold-cache
/// protocol. More variants may be added; match with a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// The operation and the file it was applied to, e.g.
        /// `"fsync /work/x/device-probe.bin"`.
        what: String,
        /// The error the operating system returned.
        #[source]
        source: io::Error,
    },
    /// The database engine failed or returned a wrong value.
    #[error("{what}: {message}")]
    Engine {
        /// The benchmark step.
        what: String,
        /// What the engine reported.
        message: String,
    },
    /// A line of block metrics (JSON lines) could not be read.
    #[error("{source_name} line {line}: {message}")]
    Metrics {
        /// Where the lines came from: a file name, or a label such as
        /// `"stdin"`.
        source_name: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with the line.
        message: String,
    },
    /// A workload file (docs/workload-format.md) could not be read.
    #[error("{path} line {line}: {message}")]
    Workload {
        /// The file.
        path: String,
        /// The 1-based line number (0 when not known).
        line: u64,
        /// What is wrong with the line.
        message: String,
    },
    /// The caller asked for something that cannot be measured, e.g. a
    /// probe file smaller than one block.
    #[error("invalid benchmark options: {what}")]
    InvalidOptions {
        /// What is wrong with the options.
        what: String,
    },
}

impl BenchError {
    /// An [`BenchError::Io`] for `operation` on `path`: the message reads
    /// `"<operation> <path>: <os error>"`.
    pub fn io_at(operation: &str, path: &Path, source: io::Error) -> Self {
        BenchError::Io {
            what: format!("{operation} {}", path.display()),
            source,
        }
    }

    /// An [`BenchError::Io`] whose description is `what`.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
}

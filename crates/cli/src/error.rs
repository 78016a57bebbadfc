//! The CLI's error type: every failure is one line for the user, and each
//! kind of failure has its exit code ([`CliError::exit_code`]).

use ubt_engine::Error as StoreError;

/// What went wrong, phrased for the user.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A line of an input file is malformed.
    #[error("{source_name}:{line}: {problem}")]
    Input {
        /// File name, or `<stdin>`.
        source_name: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// A binary input file is malformed as a whole.
    #[error("{source_name}: {problem}")]
    Format {
        /// File name, or `<stdin>`.
        source_name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An input file cannot be read.
    #[error("cannot read {source_name}: {reason}")]
    Read {
        /// File name, or `<stdin>`.
        source_name: String,
        /// The operating system's reason.
        reason: String,
    },
    /// An output file cannot be written.
    #[error("cannot write {target}: {reason}")]
    Write {
        /// File name.
        target: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A command-line argument is malformed.
    #[error("{0}")]
    Argument(String),
    /// The database reported an error.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A benchmark failed.
    #[error("benchmark: {0}")]
    Bench(#[from] ubt_bench::BenchError),
    /// `ubt verify` found problems (already printed).
    #[error("{db}: verification found {count} problem{}", if *.count == 1 { "" } else { "s" })]
    VerifyFailed {
        /// Database directory.
        db: String,
        /// Number of problems.
        count: usize,
    },
}

impl CliError {
    /// The process exit code: 2 for bad input or usage (the caller's
    /// mistake), 1 for everything else (missing database, corruption, I/O).
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Input { .. }
            | CliError::Format { .. }
            | CliError::Read { .. }
            | CliError::Argument(_) => 2,
            CliError::Store(
                StoreError::GroupDepthMismatch { .. } | StoreError::InvalidOptions(_),
            ) => 2,
            CliError::Bench(
                ubt_bench::BenchError::InvalidOptions { .. }
                | ubt_bench::BenchError::Metrics { .. }
                | ubt_bench::BenchError::Workload { .. },
            ) => 2,
            CliError::Store(_)
            | CliError::Write { .. }
            | CliError::VerifyFailed { .. }
            | CliError::Bench(_) => 1,
        }
    }
}

//! The CLI's error type: every failure is one line for the user.

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
    /// An input file cannot be read.
    #[error("cannot read {source_name}: {reason}")]
    Read {
        /// File name, or `<stdin>`.
        source_name: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A command-line argument is malformed.
    #[error("{0}")]
    Argument(String),
}

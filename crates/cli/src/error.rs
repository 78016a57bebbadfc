//! The CLI's error type: every failure is one line for the user, and each
//! kind of failure has its exit code ([`CliError::exit_code`]).
//!
//! File names and problem texts may hold what the user typed or what an
//! input file contains; the messages print them through [`escape_controls`],
//! so a newline in a path cannot split the one line.

use std::borrow::Cow;

use ubt_engine::Error as StoreError;

/// What went wrong, phrased for the user.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A line of an input file is malformed.
    #[error("{}:{line}: {}", escape_controls(.source_name), escape_controls(.problem))]
    Input {
        /// File name, or `<stdin>`.
        source_name: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// A binary input file is malformed as a whole.
    #[error("{}: {}", escape_controls(.source_name), escape_controls(.problem))]
    Format {
        /// File name, or `<stdin>`.
        source_name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An input file cannot be read.
    #[error("cannot read {}: {}", escape_controls(.source_name), escape_controls(.reason))]
    Read {
        /// File name, or `<stdin>`.
        source_name: String,
        /// The operating system's reason.
        reason: String,
    },
    /// An output file cannot be written.
    #[error("cannot write {}: {}", escape_controls(.target), escape_controls(.reason))]
    Write {
        /// File name.
        target: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A command-line argument is malformed.
    #[error("{}", escape_controls(.0))]
    Argument(String),
    /// The database reported an error.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A benchmark failed.
    #[error("benchmark: {0}")]
    Bench(#[from] ubt_bench::BenchError),
    /// `ubt verify` found problems (already printed).
    #[error("{}: verification found {count} problem{}", escape_controls(.db), if *.count == 1 { "" } else { "s" })]
    VerifyFailed {
        /// Database directory.
        db: String,
        /// Number of problems.
        count: usize,
    },
    /// An import failed for a reason other than its input (temporary
    /// files, a damaged spill run, a thread that stopped).
    #[error("import: {}", escape_controls(.0))]
    Import(String),
    /// A broken internal invariant (a bug, reported rather than a panic).
    #[error("internal error: {}", escape_controls(.0))]
    Internal(String),
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
                StoreError::GroupDepthMismatch { .. }
                | StoreError::BucketBytesMismatch { .. }
                | StoreError::InvalidOptions(_),
            ) => 2,
            CliError::Bench(
                ubt_bench::BenchError::InvalidOptions { .. }
                | ubt_bench::BenchError::Metrics { .. }
                | ubt_bench::BenchError::Workload { .. },
            ) => 2,
            CliError::Store(_)
            | CliError::Write { .. }
            | CliError::VerifyFailed { .. }
            | CliError::Internal(_)
            | CliError::Import(_)
            | CliError::Bench(_) => 1,
        }
    }
}

/// Whether `c` is escaped by [`escape_controls`]: a control character
/// (C0, DEL, C1) or a Unicode line or paragraph separator.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with control characters (and Unicode line separators) written as
/// escapes: `\n`, `\r`, `\t`, or `\u{1b}` for the others, so that it
/// prints on one line and shows what was there. Everything else, including
/// backslashes, is kept as it is, so ordinary paths print unchanged.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_controls("/tmp/a b\\c"), "/tmp/a b\\c");
        assert_eq!(
            escape_controls("a\nb\rc\td\u{1b}e\u{7f}f\u{85}g\u{2028}h"),
            "a\\nb\\rc\\td\\u{1b}e\\u{7f}f\\u{85}g\\u{2028}h"
        );
        let error = CliError::Read {
            source_name: "x\ny".into(),
            reason: "gone\n".into(),
        };
        assert_eq!(error.to_string(), "cannot read x\\ny: gone\\n");
    }
}

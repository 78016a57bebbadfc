//! Writing results to standard output without panicking when it is closed
//! (for example piped into `head`).

use std::fmt::Display;
use std::io::Write;

use crate::error::CliError;

/// Prints `text` and a newline on standard output.
pub fn line(text: impl Display) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Write {
            target: "<stdout>".into(),
            reason: e.to_string(),
        })
}

/// Prints `text` and a newline on standard error, ignoring failures (there
/// is nowhere left to report them).
pub fn note(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

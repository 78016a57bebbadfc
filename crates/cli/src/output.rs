//! Writing results to standard output without panicking when it is closed
//! (for example piped into `head`).

use std::fmt::Display;
use std::io::Write;
use std::path::Path;

use crate::error::{escape_controls, CliError};

/// `path` for a message: control characters escaped, so it stays on the
/// line it is printed on.
pub fn path(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

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

/// Writes `value` as pretty JSON to the file at `path`.
pub fn write_json(path: &str, value: &impl serde::Serialize) -> Result<(), CliError> {
    let failed = |reason: String| CliError::Write {
        target: path.to_owned(),
        reason,
    };
    let json = serde_json::to_string_pretty(value).map_err(|e| failed(e.to_string()))?;
    std::fs::write(path, json).map_err(|e| failed(e.to_string()))
}

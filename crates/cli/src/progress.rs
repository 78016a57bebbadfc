//! Progress bars on standard error, drawn only when it is a terminal (so
//! pipes, logs and tests see clean output).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar (or a spinner when `len` is unknown) counting bytes.
pub fn bytes(len: Option<u64>, message: &'static str) -> ProgressBar {
    make(
        len,
        message,
        "{msg:>9} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        "{msg:>9} {spinner} {bytes} ({bytes_per_sec})",
    )
}

/// A bar counting entries.
pub fn entries(len: u64, message: &'static str) -> ProgressBar {
    make(
        Some(len),
        message,
        "{msg:>9} [{bar:40}] {human_pos}/{human_len} entries ({per_sec}, {eta})",
        "{msg:>9} {spinner} {human_pos} entries",
    )
}

fn make(len: Option<u64>, message: &'static str, bar: &str, spinner: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let (progress, template) = match len {
        Some(len) => (ProgressBar::new(len), bar),
        None => (ProgressBar::new_spinner(), spinner),
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    progress.set_style(style);
    progress.set_message(message);
    progress
}

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

/// Shows the phases of a long benchmark: a bar per phase on a terminal, and
/// one line per finished phase (with its time) in any case, so logs show
/// progress too.
pub struct PhaseBars {
    bar: Option<(ProgressBar, String, std::time::Instant)>,
    started: std::time::Instant,
}

impl Default for PhaseBars {
    fn default() -> Self {
        PhaseBars {
            bar: None,
            started: std::time::Instant::now(),
        }
    }
}

impl PhaseBars {
    /// Starts a phase of `total` units (0: unknown, a spinner).
    pub fn phase(&mut self, label: &str, total: u64) {
        self.done();
        let bar = if !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else if total == 0 {
            let bar = ProgressBar::new_spinner();
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        } else {
            ProgressBar::new(total)
        };
        let template = if total == 0 {
            "{spinner} {msg} ({elapsed})"
        } else {
            "{msg} [{bar:30}] {human_pos}/{human_len} ({elapsed}, {eta})"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_owned());
        self.bar = Some((bar, label.to_owned(), std::time::Instant::now()));
    }

    /// `n` more units done.
    pub fn advance(&mut self, n: u64) {
        if let Some((bar, _, _)) = &self.bar {
            bar.inc(n);
        }
    }

    /// Ends the current phase with a line on standard error.
    pub fn done(&mut self) {
        if let Some((bar, label, since)) = self.bar.take() {
            bar.finish_and_clear();
            crate::output::note(format_args!(
                "[{:>7.1} s] {label}: {:.1} s",
                self.started.elapsed().as_secs_f64(),
                since.elapsed().as_secs_f64()
            ));
        }
    }

    /// Prints a note between bars.
    pub fn note(&mut self, text: &str) {
        match &self.bar {
            Some((bar, _, _)) => bar.suspend(|| crate::output::note(format_args!("note: {text}"))),
            None => crate::output::note(format_args!("note: {text}")),
        }
    }
}

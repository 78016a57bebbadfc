//! `ubt import genesis` and `ubt import geth-dump`: real chain state into a
//! new database through `ubt-import`, with progress bars and a summary on
//! standard error and the root as the last line of standard output.

use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use ubt_import::{ImportError, ImportOptions, ImportReport, Phase, Progress, Status};

use crate::cli::{ImportArgs, ImportCommand, ImportCommonArgs, Switch};
use crate::db::hex32;
use crate::error::CliError;
use crate::output;

/// Runs `ubt import`.
pub fn run(args: &ImportArgs) -> Result<(), CliError> {
    match &args.command {
        ImportCommand::Genesis(genesis) => import(&genesis.common, &genesis.input, false, false),
        ImportCommand::GethDump(dump) => {
            import(&dump.common, &dump.input, true, dump.skip_missing_preimages)
        }
    }
}

/// The input: a file or standard input.
struct Input {
    /// The bytes.
    reader: Box<dyn Read + Send>,
    /// File name, or `<stdin>`.
    name: String,
    /// Length in bytes, for regular files.
    len: Option<u64>,
}

/// Opens `path`, or standard input for `-`.
fn open_input(path: &str) -> Result<Input, CliError> {
    if path == "-" {
        return Ok(Input {
            reader: Box::new(io::stdin()),
            name: "<stdin>".to_string(),
            len: None,
        });
    }
    let read_error = |e: io::Error| CliError::Read {
        source_name: path.to_string(),
        reason: e.to_string(),
    };
    let file = File::open(path).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if metadata.is_dir() {
        return Err(CliError::Read {
            source_name: path.to_string(),
            reason: "is a directory".into(),
        });
    }
    Ok(Input {
        reader: Box::new(file),
        name: path.to_string(),
        len: metadata.is_file().then_some(metadata.len()),
    })
}

fn import(
    common: &ImportCommonArgs,
    input: &str,
    dump: bool,
    skip_missing_preimages: bool,
) -> Result<(), CliError> {
    let options = ImportOptions {
        memory_bytes: common.memory,
        tmp_dir: common.tmp_dir.as_ref().map(PathBuf::from),
        group_depth: common.group_depth,
        bucket_bytes: common.bucket_kib.map(|kib| kib << 10),
        skip_missing_preimages,
        flat_index: common.flat_index == Switch::On,
    };
    options
        .validate()
        .map_err(|e| CliError::Argument(e.to_string()))?;
    let input = open_input(input)?;
    let bars = Bars::new(input.len);
    let result = if dump {
        ubt_import::import_geth_dump(input.reader, &common.db, &options, &bars)
    } else {
        ubt_import::import_genesis(input.reader, &common.db, &options, &bars)
    };
    bars.clear();
    let report = result.map_err(|e| cli_error(e, &input.name))?;
    summarize(&report, &common.db);
    output::line(hex32(&report.root.0))
}

/// The CLI's error for an import's: input problems name the file and
/// line (exit 2), I/O and internal failures exit 1.
fn cli_error(error: ImportError, source_name: &str) -> CliError {
    match error {
        ImportError::Input(input) => match (input.location.line, input.location.other_line) {
            (Some(line), None) => CliError::Input {
                source_name: source_name.to_string(),
                line,
                problem: if input.location.path.is_empty() {
                    input.problem.to_string()
                } else {
                    format!("{}: {}", input.location.path, input.problem)
                },
            },
            _ => CliError::Format {
                source_name: source_name.to_string(),
                problem: input.to_string(),
            },
        },
        ImportError::Read(e) => CliError::Read {
            source_name: source_name.to_string(),
            reason: e.to_string(),
        },
        ImportError::Store(e) => CliError::Store(e),
        error @ (ImportError::Target { .. } | ImportError::Options(_)) => {
            CliError::Argument(error.to_string())
        }
        error => CliError::Import(error.to_string()),
    }
}

/// `count` entries per second of `elapsed`, for the summary.
fn rate(count: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if seconds <= 0.0 {
        return "-".into();
    }
    let per_second = count as f64 / seconds;
    if per_second >= 1e6 {
        format!("{:.2}M entries/s", per_second / 1e6)
    } else {
        format!("{:.0}k entries/s", per_second / 1e3)
    }
}

/// The summary on standard error.
fn summarize(report: &ImportReport, db: &str) {
    let counts = &report.counts;
    let t = &report.timings;
    let skipped = if counts.skipped_accounts > 0 {
        format!(
            ", {} skipped for missing preimages",
            counts.skipped_accounts
        )
    } else {
        String::new()
    };
    output::note(format_args!(
        "ubt: imported {} accounts ({} storage slots, {} zero values, {} code bytes{skipped}) into {}: {} tree entries, {} stems",
        counts.accounts,
        counts.storage_slots,
        counts.zero_storage_values,
        counts.code_bytes,
        output::path(std::path::Path::new(db)),
        counts.tree_entries,
        report.build.stem_count,
    ));
    let entries = counts.tree_entries;
    output::note(format_args!(
        "ubt: read {} MB in {:.1} s ({}), sort {:.1} s, {} spill runs {:.1} s, {} merge passes {:.1} s, build {:.1} s ({}); total {:.1} s ({})",
        report.input_bytes / 1_000_000,
        t.parse.as_secs_f64(),
        rate(entries, t.parse),
        t.sort.as_secs_f64(),
        report.spill_runs,
        t.spill.as_secs_f64(),
        report.merge_passes,
        t.merge.as_secs_f64(),
        t.build.as_secs_f64(),
        rate(entries, t.build),
        t.total.as_secs_f64(),
        rate(entries, t.total),
    ));
    if let Some(flat) = &report.flat_index {
        output::note(format_args!(
            "ubt: flat index of account values: {} records in {} leaves, {:.1} s ({})",
            flat.records,
            flat.leaves,
            t.flat_index.as_secs_f64(),
            rate(flat.records, t.flat_index),
        ));
    }
}

/// Parses a size: bytes, or a number with a unit (KiB, MiB, GiB, TiB, or
/// K, M, G, T for the same; KB, MB, GB, TB for powers of ten), case
/// ignored; a fraction is allowed with a unit (`1.5GiB`).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "unknown size unit in {text:?} (use e.g. 512MiB, 1GiB or bytes)"
            ))
        }
    };
    let invalid = || format!("invalid size {text:?} (use e.g. 512MiB, 1GiB or bytes)");
    let bytes = if number.contains('.') {
        if multiplier == 1 {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(invalid());
        }
        // Finite and below u64::MAX (checked above): the cast keeps the
        // integer part, which is what a size of "1.5GiB" means.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole_bytes = bytes as u64;
        whole_bytes
    } else {
        let value: u64 = number.parse().map_err(|_| invalid())?;
        value.checked_mul(multiplier).ok_or_else(invalid)?
    };
    usize::try_from(bytes).map_err(|_| invalid())
}

/// The progress bars of an import: bytes while reading, entries while
/// merging and building; drawn only on a terminal.
struct Bars {
    input_len: Option<u64>,
    bar: Mutex<Option<ProgressBar>>,
    terminal: bool,
}

impl Bars {
    fn new(input_len: Option<u64>) -> Bars {
        Bars {
            input_len,
            bar: Mutex::new(None),
            terminal: io::stderr().is_terminal(),
        }
    }

    fn clear(&self) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }

    fn message(status: &Status) -> String {
        match status.phase {
            Phase::Read => format!(
                "reading: {} accounts, {} entries",
                status.accounts, status.entries
            ),
            phase => phase.name().to_string(),
        }
    }
}

impl Progress for Bars {
    fn phase_started(&self, status: &Status) {
        self.clear();
        if !self.terminal {
            return;
        }
        let (bar, template) = match (status.phase, self.input_len, status.total) {
            (Phase::Read, Some(len), _) => (
                ProgressBar::new(len),
                "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            ),
            (Phase::Read, None, _) => (
                ProgressBar::new_spinner(),
                "{msg} {spinner} {bytes} ({bytes_per_sec})",
            ),
            (_, _, Some(total)) => (
                ProgressBar::new(total),
                "{msg} [{bar:30}] {human_pos}/{human_len} entries ({per_sec}, {eta})",
            ),
            (_, _, None) => (
                ProgressBar::new_spinner(),
                "{msg} {spinner} {human_pos} entries ({per_sec})",
            ),
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(Bars::message(status));
        bar.enable_steady_tick(Duration::from_millis(200));
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
    }

    fn advanced(&self, status: &Status) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            bar.set_position(status.done);
            if status.phase == Phase::Read {
                bar.set_message(Bars::message(status));
            }
        }
    }

    fn phase_finished(&self, status: &Status, elapsed: Duration) {
        self.clear();
        if self.terminal {
            let done = match status.phase {
                Phase::Read => format!("{} accounts, {} entries", status.accounts, status.entries),
                _ => format!("{} entries", status.done),
            };
            output::note(format_args!(
                "ubt: {} done in {:.1} s: {done}",
                status.phase.name(),
                elapsed.as_secs_f64()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("512 mib"), Ok(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert!(parse_size("1.5").is_err());
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("1XB").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }
}

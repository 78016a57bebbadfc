//! `ubt bench report`: the report of existing metrics files.

use std::path::Path;

use ubt_bench::formats::metrics::read_metrics_file;
use ubt_bench::report::{write_report, ReportOptions};

use crate::cli::ReportArgs;
use crate::error::CliError;
use crate::output;

/// Runs `ubt bench report`.
pub fn run(args: &ReportArgs) -> Result<(), CliError> {
    let mut metrics = Vec::new();
    for file in &args.metrics {
        let path = Path::new(file);
        if !path.is_file() {
            return Err(CliError::Read {
                source_name: file.clone(),
                reason: "no such file".into(),
            });
        }
        metrics.extend(read_metrics_file(path)?);
    }
    if metrics.is_empty() {
        return Err(CliError::Argument(format!(
            "no block metrics in {}",
            args.metrics.join(", ")
        )));
    }
    let options = ReportOptions {
        title: args.title.clone(),
        ..ReportOptions::default()
    };
    let written = write_report(&metrics, Path::new(&args.out), &args.stem, &options)?;
    output::line(format_args!("report: {}", output::path(&written.markdown)))
}

//! A Markdown report of block metrics, with SVG charts beside it: per
//! workload a table of configurations, a box plot of `total_ms` and
//! stacked bars of the median phases; a verdict table (the best
//! configuration per workload against every other, with bootstrap
//! confidence intervals and Mann-Whitney p-values); and, when ubt and
//! other engines are both present, ubt's best configuration against each
//! of theirs. The text explains its own figures, so it reads without the
//! tools that made it. Same input, same bytes out.

use std::collections::HashSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::error::BenchError;
use crate::formats::metrics::{BlockMetrics, WARMUP_RUN};
use crate::report::summary::{summarize, Comparison, SummaryOptions, WorkloadSummary, UBT_ENGINE};
use crate::report::svg::{box_plot, stacked_bars};

/// What to put in a report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// The first heading.
    pub title: String,
    /// How comparisons are computed.
    pub summary: SummaryOptions,
    /// Markdown appended after the generated sections, each as given (for
    /// example the machine's description or notes on the runs).
    pub extra_sections: Vec<String>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            title: "Block benchmark".into(),
            summary: SummaryOptions::default(),
            extra_sections: Vec::new(),
        }
    }
}

/// An SVG chart of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct SvgFile {
    /// File name, relative to the Markdown file.
    pub name: String,
    /// The SVG document.
    pub content: String,
}

/// A rendered report.
#[derive(Clone, Debug)]
pub struct Report {
    /// The Markdown text; it links the charts by their file names.
    pub markdown: String,
    /// The charts, in the order the Markdown links them.
    pub svgs: Vec<SvgFile>,
    /// The figures the report shows.
    pub workloads: Vec<WorkloadSummary>,
}

/// The files [`write_report`] wrote.
#[derive(Clone, Debug)]
pub struct WrittenReport {
    /// `<dir>/<stem>.md`.
    pub markdown: PathBuf,
    /// The charts beside it.
    pub svgs: Vec<PathBuf>,
}

/// The phases stacked in the phase chart, bottom first.
const PHASES: [&str; 4] = ["state read", "state hash", "commit", "execution"];

/// Four significant digits (no exponent), "-" for NaN.
fn num(value: f64) -> String {
    if value.is_nan() {
        return "-".into();
    }
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    #[allow(clippy::cast_possible_truncation)] // a finite non-zero value's log10 is within +-324
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, 6) as usize;
    format!("{value:.decimals$}")
}

/// A p-value: four decimals, or two significant digits below 0.001.
fn p_value(p: f64) -> String {
    if p.is_nan() {
        "-".into()
    } else if p >= 0.001 {
        format!("{p:.4}")
    } else {
        format!("{p:.1e}")
    }
}

/// Ratio, interval, p and verdict cells of a comparison.
fn comparison_cells(c: &Comparison) -> String {
    format!(
        "{:.3} | [{:.3}, {:.3}] | {} | {}",
        c.ratio,
        c.ci.0,
        c.ci.1,
        p_value(c.test.p_two_sided),
        if c.significant { "yes" } else { "no" }
    )
}

/// Text for a table cell: pipes escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// A file-name-safe form of a workload name.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn method(md: &mut String, options: &SummaryOptions) {
    let _ = writeln!(
        md,
        "How to read this report. A configuration is an engine and a variant \
(e.g. `gd5`, group depth 5). Run {WARMUP_RUN} of every configuration is a warm-up and \
is left out; every other block of every run counts as one observation. \
Figures are medians over those blocks; \"first block ms\" is the median `total_ms` of each run's first block alone (the cold start: every run starts with the database out of the page cache) and \"later blocks ms\" that of the others (the steady state). CV% is the sample standard deviation of \
`total_ms` over its mean. Per-slot figures are medians of each block's own \
ratio: ms/slot read = `state_read_ms / slots_read`, ms/slot total = \
`total_ms / (slots_read + slots_written)`, ms/miss = `state_read_ms / cache_misses` \
(blocks with a zero denominator left out; \"-\" when none is left). A ratio is the \
median `total_ms` of the first configuration over that of the second (below 1: the \
first is faster), with its 95% percentile-bootstrap confidence interval ({} \
resamples of the blocks of each configuration, seed {}) and the two-sided \
Mann-Whitney U p-value of the two sets of block `total_ms` (normal approximation \
with tie and continuity corrections); \"significant\" means p < {}.\n",
        options.resamples, options.seed, options.alpha
    );
}

fn verdict(md: &mut String, workloads: &[WorkloadSummary], alpha: f64) {
    let _ = writeln!(md, "## Verdict\n");
    let _ = writeln!(
        md,
        "Per workload, the configuration with the lowest median `total_ms` against \
every other one, the runner-up first.\n"
    );
    let _ = writeln!(
        md,
        "| workload | best | median total ms | against | ratio best/other | 95% CI | p | significant at {alpha} |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for w in workloads {
        let best = w.best();
        let head = format!(
            "| {} | {} | {}",
            cell(&w.workload),
            cell(&best.configuration.to_string()),
            num(best.total_ms)
        );
        if w.verdict.is_empty() {
            let _ = writeln!(md, "{head} | (only configuration) | - | - | - | - |");
        }
        for (i, c) in w.verdict.iter().enumerate() {
            let other = w
                .configurations
                .iter()
                .find(|s| s.configuration == c.reference)
                .map_or(f64::NAN, |s| s.total_ms);
            let lead = if i == 0 { head.clone() } else { "| | |".into() };
            let _ = writeln!(
                md,
                "{lead} | {} ({} ms) | {} |",
                cell(&c.reference.to_string()),
                num(other),
                comparison_cells(c)
            );
        }
    }
    md.push('\n');
}

fn ubt_against_others(md: &mut String, workloads: &[WorkloadSummary], alpha: f64) {
    if workloads.iter().all(|w| w.ubt_vs_others.is_empty()) {
        return;
    }
    let _ = writeln!(md, "## {UBT_ENGINE} against the other engines\n");
    let _ = writeln!(
        md,
        "Per workload, {UBT_ENGINE}'s best configuration against every configuration of \
the other engines (ratio below 1: {UBT_ENGINE} is faster).\n"
    );
    let _ = writeln!(
        md,
        "| workload | {UBT_ENGINE} | against | ratio {UBT_ENGINE}/other | 95% CI | p | significant at {alpha} |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for w in workloads {
        for c in &w.ubt_vs_others {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                cell(&w.workload),
                cell(&c.subject.to_string()),
                cell(&c.reference.to_string()),
                comparison_cells(c)
            );
        }
    }
    md.push('\n');
}

fn workload_section(
    md: &mut String,
    w: &WorkloadSummary,
    total_svg: &str,
    phases_svg: &str,
    alpha: f64,
) {
    let _ = writeln!(md, "## Workload `{}`\n", w.workload);
    let _ = writeln!(
        md,
        "![total ms per block of each configuration: min, quartiles, median, max]({total_svg})\n"
    );
    let _ = writeln!(
        md,
        "![median ms of each phase of each configuration]({phases_svg})\n"
    );
    let _ = writeln!(
        md,
        "| configuration | blocks (runs) | slots read / written | state read ms | state hash ms | commit ms | execution ms | total ms | first block ms | later blocks ms | Mgas/s | ms/slot read | ms/slot total | ms/miss | KiB read | KiB written | CV% total |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (i, c) in w.configurations.iter().enumerate() {
        let name = cell(&c.configuration.to_string());
        let name = if i == w.best {
            format!("**{name}** (best)")
        } else {
            name
        };
        let _ = writeln!(
            md,
            "| {name} | {} ({}) | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            c.blocks,
            c.runs,
            whole(c.slots_read),
            whole(c.slots_written),
            num(c.state_read_ms),
            num(c.state_hash_ms),
            num(c.commit_ms),
            num(c.execution_ms),
            num(c.total_ms),
            num(c.first_block_total_ms),
            num(c.later_blocks_total_ms),
            num(c.mgas_per_s),
            num(c.ms_per_slot_read),
            num(c.ms_per_slot_total),
            num(c.ms_per_cache_miss),
            num(c.bytes_read / 1024.0),
            num(c.bytes_written / 1024.0),
            c.cv_total_percent
        );
    }
    md.push('\n');
    if !w.neighbours.is_empty() {
        let _ = writeln!(
            md,
            "Neighbouring variants of each engine, each against the previous one:\n"
        );
        let _ = writeln!(
            md,
            "| engine | variants | ratio later/earlier | 95% CI | p | significant at {alpha} |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|");
        for c in &w.neighbours {
            let _ = writeln!(
                md,
                "| {} | {} / {} | {} |",
                cell(&c.subject.engine),
                cell(&c.subject.variant),
                cell(&c.reference.variant),
                comparison_cells(c)
            );
        }
        md.push('\n');
    }
}

/// The charts of one workload: the box plot of `total_ms` and the stacked
/// median phases.
fn charts(w: &WorkloadSummary, total_name: String, phases_name: String) -> [SvgFile; 2] {
    let boxes: Vec<(String, _)> = w
        .configurations
        .iter()
        .map(|c| (c.configuration.to_string(), c.total_box))
        .collect();
    let bars: Vec<(String, Vec<f64>)> = w
        .configurations
        .iter()
        .map(|c| {
            (
                c.configuration.to_string(),
                vec![
                    c.state_read_ms,
                    c.state_hash_ms,
                    c.commit_ms,
                    c.execution_ms,
                ],
            )
        })
        .collect();
    [
        SvgFile {
            name: total_name,
            content: box_plot(
                &format!("{}: total ms per block", w.workload),
                ["configuration (engine variant)", "total ms per block"],
                &boxes,
            ),
        },
        SvgFile {
            name: phases_name,
            content: stacked_bars(
                &format!("{}: median ms per phase", w.workload),
                ["configuration (engine variant)", "median ms per block"],
                &PHASES,
                &bars,
            ),
        },
    ]
}

/// A count: no decimals, "-" when unknown.
fn whole(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.0}")
    } else {
        "-".into()
    }
}

/// Renders the report of `metrics`; chart files are named
/// `<stem>-<workload>-total.svg` and `<stem>-<workload>-phases.svg`
/// (workload names reduced to letters, digits, `-` and `_`; a number is
/// appended when two reduce to the same name).
pub fn render_report(metrics: &[BlockMetrics], stem: &str, options: &ReportOptions) -> Report {
    let workloads = summarize(metrics, &options.summary);
    let alpha = options.summary.alpha;
    let warmup = metrics.iter().filter(|m| m.run == WARMUP_RUN).count();
    let configurations: HashSet<_> = workloads
        .iter()
        .flat_map(|w| w.configurations.iter().map(|c| &c.configuration))
        .collect();
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", options.title);
    let _ = writeln!(
        md,
        "{} block rows: {warmup} of run {WARMUP_RUN} (warm-up) left out, {} measured; \
{} workloads, {} configurations.\n",
        metrics.len(),
        metrics.len() - warmup,
        workloads.len(),
        configurations.len()
    );
    method(&mut md, &options.summary);
    verdict(&mut md, &workloads, alpha);
    ubt_against_others(&mut md, &workloads, alpha);
    let mut svgs = Vec::new();
    let mut used = HashSet::new();
    for w in &workloads {
        let mut base = format!("{stem}-{}", slug(&w.workload));
        let mut n = 2;
        while !used.insert(base.clone()) {
            base = format!("{stem}-{}-{n}", slug(&w.workload));
            n += 1;
        }
        let [total, phases] = charts(w, format!("{base}-total.svg"), format!("{base}-phases.svg"));
        workload_section(&mut md, w, &total.name, &phases.name, alpha);
        svgs.push(total);
        svgs.push(phases);
    }
    for section in &options.extra_sections {
        md.push_str(section.trim_end());
        md.push_str("\n\n");
    }
    Report {
        markdown: md,
        svgs,
        workloads,
    }
}

/// Renders the report and writes `<dir>/<stem>.md` and its charts beside
/// it (creating `dir`).
pub fn write_report(
    metrics: &[BlockMetrics],
    dir: &Path,
    stem: &str,
    options: &ReportOptions,
) -> Result<WrittenReport, BenchError> {
    let report = render_report(metrics, stem, options);
    std::fs::create_dir_all(dir).map_err(|e| BenchError::io_at("creating", dir, e))?;
    let write = |name: &str, content: &str| -> Result<PathBuf, BenchError> {
        let path = dir.join(name);
        std::fs::write(&path, content).map_err(|e| BenchError::io_at("writing", &path, e))?;
        Ok(path)
    };
    let markdown = write(&format!("{stem}.md"), &report.markdown)?;
    let svgs = report
        .svgs
        .iter()
        .map(|svg| write(&svg.name, &svg.content))
        .collect::<Result<_, _>>()?;
    Ok(WrittenReport { markdown, svgs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_four_significant_digits() {
        assert_eq!(num(453.14), "453.1");
        assert_eq!(num(0.068472), "0.06847");
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(p_value(0.04567), "0.0457");
        assert_eq!(p_value(0.000182), "1.8e-4");
        assert_eq!(slug("erc20 balance/of"), "erc20_balance_of");
        assert_eq!(cell("a|b"), "a\\|b");
    }
}

//! Reports of block metrics: the figures, then their Markdown and SVG.
//!
//! * [`summary`]: per workload and configuration the medians of the
//!   block-level metrics (warm-up run excluded) and the comparisons of
//!   configurations (ratio of medians, bootstrap interval, Mann-Whitney).
//! * [`markdown`]: the Markdown report and its charts, written to disk
//!   ([`write_report`]).
//! * [`svg`]: the hand-written SVG box plots and stacked bars.

pub mod markdown;
pub mod summary;
pub mod svg;

pub use markdown::{render_report, write_report, Report, ReportOptions, SvgFile, WrittenReport};

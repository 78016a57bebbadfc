//! The block-metrics report end to end: synthetic metrics written as JSON
//! lines, read back, summarized and rendered to Markdown and SVG files.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use common::TempDir;
use std::io::Cursor;

use ubt_bench::formats::metrics::{read_metrics, read_metrics_file, BlockMetrics};
use ubt_bench::report::{render_report, write_report, ReportOptions};
use ubt_bench::BenchError;

const BLOCKS: u64 = 5;

/// Median `total_ms` of each (workload, engine, variant) in the synthetic
/// set: ubt gd2 is best on `erc20_balanceof`, ubt gd10 on `uniswap`.
const CONFIGURATIONS: [(&str, &str, &str, f64); 6] = [
    ("erc20_balanceof", "ubt", "gd10", 20.0),
    ("erc20_balanceof", "geth-bintrie", "gd4", 40.0),
    ("erc20_balanceof", "ubt", "gd2", 10.0),
    ("uniswap", "ubt", "gd2", 30.0),
    ("uniswap", "ubt", "gd10", 15.0),
    ("uniswap", "geth-bintrie", "gd4", 60.0),
];

/// Four runs of five blocks per configuration. Measured runs (2..=4) put
/// `total_ms` at `base + (block - 3) * 0.1 + (run - 3) * 0.01`, so their
/// median is `base`; run 1, the warm-up, is ten times slower and would
/// move every median if it were counted. Phases are fixed shares of the
/// total (read 60%, hash 20%, commit 10%, execution 10%).
fn synthetic() -> Vec<BlockMetrics> {
    let mut out = Vec::new();
    for (workload, engine, variant, base) in CONFIGURATIONS {
        for run in 1..=4u32 {
            for block in 1..=BLOCKS {
                let total = if run == 1 {
                    base * 10.0
                } else {
                    base + (block as f64 - 3.0) * 0.1 + (f64::from(run) - 3.0) * 0.01
                };
                out.push(BlockMetrics {
                    engine: engine.into(),
                    variant: variant.into(),
                    workload: workload.into(),
                    run,
                    block,
                    gas_used: 30_000_000,
                    txs: 10,
                    accounts_read: 4,
                    slots_read: 100,
                    slots_written: 20,
                    accounts_written: 2,
                    cache_misses: 50,
                    execution_ms: 0.1 * total,
                    state_read_ms: 0.6 * total,
                    state_hash_ms: 0.2 * total,
                    commit_ms: 0.1 * total,
                    total_ms: total,
                    mgas_per_s: 30_000_000.0 / total / 1000.0,
                    bytes_read: None,
                    bytes_written: Some(4096),
                    root: format!("0x{block:064x}"),
                });
            }
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Checks that every element is closed in order (a parse-free check of
/// well-formedness) and returns the number of elements.
fn check_balanced(svg: &str) -> usize {
    let mut open: Vec<&str> = Vec::new();
    let mut elements = 0;
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let end = start + rest[start..].find('>').expect("unclosed '<'");
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
        if tag.starts_with('?') {
            assert!(tag.ends_with('?'), "bad declaration {tag}");
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name.trim()), "mismatched </{name}>");
            continue;
        }
        elements += 1;
        let name = tag.split_whitespace().next().expect("empty tag");
        if !tag.ends_with('/') {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "left open: {open:?}");
    assert!(svg.trim_start().starts_with("<?xml"));
    assert!(svg.trim_end().ends_with("</svg>"));
    elements
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// Each run's block 1 (offset -0.2) apart from blocks 2..5 (offsets
/// -0.1..0.2, runs +-0.01: median +0.05).
fn check_first_and_later(first: f64, later: f64, base: f64) {
    assert!(close(first, base - 0.2), "first block {first}");
    assert!(close(later, base + 0.05), "later blocks {later}");
}

#[test]
fn the_report_drops_the_warmup_and_names_the_best() {
    let dir = TempDir::new("end-to-end");
    let metrics_path = dir.0.join("metrics.jsonl");
    let lines: Vec<String> = synthetic()
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    std::fs::write(&metrics_path, lines.join("\n") + "\n").unwrap();
    let metrics = read_metrics_file(&metrics_path).unwrap();
    assert_eq!(metrics.len(), CONFIGURATIONS.len() * 4 * BLOCKS as usize);

    let options = ReportOptions {
        title: "Synthetic blocks".into(),
        extra_sections: vec!["## Machine\n\nA test machine.".into()],
        ..ReportOptions::default()
    };
    let report = render_report(&metrics, "blocks", &options);

    // Summaries: run 1 dropped, medians the measured runs' centre.
    assert_eq!(report.workloads.len(), 2);
    for w in &report.workloads {
        let order: Vec<String> = w
            .configurations
            .iter()
            .map(|c| c.configuration.to_string())
            .collect();
        assert_eq!(order, ["geth-bintrie gd4", "ubt gd2", "ubt gd10"]);
        for c in &w.configurations {
            let (_, _, _, base) = CONFIGURATIONS
                .iter()
                .copied()
                .find(|(wl, e, v, _)| {
                    *wl == w.workload
                        && *e == c.configuration.engine
                        && *v == c.configuration.variant
                })
                .unwrap();
            assert_eq!(c.blocks, 15, "{}", c.configuration);
            assert_eq!(c.runs, 3);
            assert!(close(c.total_ms, base), "{} {}", c.total_ms, base);
            check_first_and_later(c.first_block_total_ms, c.later_blocks_total_ms, base);
            assert!(close(c.state_read_ms, 0.6 * base));
            assert!(close(c.commit_ms, 0.1 * base));
            assert!(close(c.ms_per_slot_read, 0.6 * base / 100.0));
            assert!(close(c.ms_per_slot_total, base / 120.0));
            assert!(close(c.ms_per_cache_miss, 0.6 * base / 50.0));
            assert!(c.total_box.max < base + 0.5, "warm-up in the box plot");
            assert!(c.cv_total_percent > 0.0 && c.cv_total_percent < 2.0);
        }
    }
    let erc20 = &report.workloads[0];
    assert_eq!(erc20.workload, "erc20_balanceof");
    assert_eq!(erc20.best().configuration.to_string(), "ubt gd2");
    let runner_up = &erc20.verdict[0];
    assert_eq!(runner_up.reference.to_string(), "ubt gd10");
    assert!(close(runner_up.ratio, 0.5));
    assert!(runner_up.ci.0 <= 0.5 && 0.5 <= runner_up.ci.1);
    assert!(runner_up.significant && runner_up.test.p_two_sided < 1e-4);
    let uniswap = &report.workloads[1];
    assert_eq!(uniswap.best().configuration.to_string(), "ubt gd10");
    assert_eq!(uniswap.ubt_vs_others.len(), 1);
    assert!(close(uniswap.ubt_vs_others[0].ratio, 0.25));
    assert_eq!(uniswap.neighbours.len(), 1, "gd10 against gd2 within ubt");
    assert!(close(uniswap.neighbours[0].ratio, 0.5));

    // The Markdown.
    let md = &report.markdown;
    assert!(md.starts_with("# Synthetic blocks\n"));
    assert!(md.contains("120 block rows: 30 of run 1 (warm-up) left out, 90 measured"));
    assert!(
        md.contains("| erc20_balanceof | ubt gd2 | 10.00 | ubt gd10 (20.00 ms) | 0.500 | [0.49")
    );
    assert!(md.contains("| uniswap | ubt gd10 | 15.00 | ubt gd2 (30.00 ms) | 0.500 |"));
    assert!(md.contains("| uniswap | ubt gd10 | geth-bintrie gd4 | 0.250 |"));
    assert!(md.contains(
        "| **ubt gd2** (best) | 15 (3) | 100 / 20 | 6.000 | 2.000 | 1.000 | 1.000 | 10.00 |"
    ));
    // Bytes read unknown: "-"; 4,096 bytes written: 4 KiB.
    assert!(md.contains(" | - | 4.000 | "));
    assert!(md.contains("](blocks-erc20_balanceof-total.svg)"));
    assert!(md.contains("](blocks-uniswap-phases.svg)"));
    assert!(md.trim_end().ends_with("A test machine."));
    assert!(!md.contains("NaN"), "unknown figures print as -");
    assert_eq!(
        render_report(&metrics, "blocks", &options).markdown,
        *md,
        "deterministic"
    );

    // The files.
    let written = write_report(&metrics, &dir.0.join("out"), "blocks", &options).unwrap();
    assert_eq!(std::fs::read_to_string(&written.markdown).unwrap(), *md);
    assert_eq!(written.svgs.len(), 4);
    for path in &written.svgs {
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(check_balanced(&svg) > 10);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(md.contains(&format!("]({name})")));
        if name.ends_with("-total.svg") {
            assert_eq!(count(&svg, r#"<rect class="box""#), 3, "{name}");
            assert!(svg.contains("total ms per block"));
        } else {
            assert_eq!(count(&svg, r#"<rect class="segment""#), 3 * 4, "{name}");
            assert!(svg.contains("state read") && svg.contains("commit"));
        }
    }
}

#[test]
fn one_engine_has_no_cross_engine_section() {
    let metrics: Vec<BlockMetrics> = synthetic()
        .into_iter()
        .filter(|m| m.engine == "ubt")
        .collect();
    let report = render_report(&metrics, "r", &ReportOptions::default());
    assert!(report.workloads.iter().all(|w| w.ubt_vs_others.is_empty()));
    assert!(!report.markdown.contains("against the other engines"));
}

#[test]
fn bad_input_names_its_line() {
    let good = serde_json::to_string(&synthetic()[0]).unwrap();
    let missing = good.replace(r#""total_ms":"#, r#""total":"#);
    let input = format!("{good}\n\n{missing}\n{good}\n");
    let error = read_metrics(Cursor::new(input), "runs.jsonl").unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, BenchError::Metrics { line: 3, .. }),
        "{text}"
    );
    assert!(
        text.starts_with("runs.jsonl line 3:") && text.contains("total_ms"),
        "{text}"
    );

    let error = read_metrics(Cursor::new(format!("{good}\n{{\"engine\":")), "x").unwrap_err();
    assert!(
        error.to_string().starts_with("x line 2: not JSON"),
        "{error}"
    );

    let wrong_type = good.replace(r#""run":1"#, r#""run":"one""#);
    let error = read_metrics(Cursor::new(wrong_type), "y").unwrap_err();
    assert!(
        error.to_string().starts_with("y line 1: not block metrics"),
        "{error}"
    );

    let missing_file = read_metrics_file(std::path::Path::new("/nonexistent/metrics.jsonl"));
    assert!(matches!(missing_file, Err(BenchError::Io { .. })));
}

//! The figures of a benchmark report, before any formatting: per workload
//! and configuration the medians of block-level metrics (warm-up run
//! excluded), and comparisons of configurations by the ratio of their
//! median `total_ms`, its bootstrap confidence interval and a Mann-Whitney
//! U test on the block-level `total_ms` values.

use crate::formats::metrics::{group_measured, BlockMetrics, Configuration};
use crate::formats::natural::natural_cmp;
use crate::statistics::{
    bootstrap_ratio_ci, cv_percent, five_numbers, mann_whitney_u, median, FiveNumbers, MannWhitney,
};

/// The engine whose best configuration is compared with every
/// configuration of the other engines.
pub const UBT_ENGINE: &str = "ubt";

/// How comparisons are computed.
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    /// Bootstrap resamples per confidence interval.
    pub resamples: usize,
    /// Seed of the bootstrap's generator (the same for every comparison).
    pub seed: u64,
    /// Significance level: a comparison is significant when its p-value is
    /// below it.
    pub alpha: f64,
}

impl Default for SummaryOptions {
    /// 10,000 resamples, seed 7864, alpha 0.05.
    fn default() -> Self {
        SummaryOptions {
            resamples: 10_000,
            seed: 7864,
            alpha: 0.05,
        }
    }
}

/// The figures of one configuration on one workload: medians over its
/// measured blocks (every run but the warm-up).
#[derive(Clone, Debug)]
pub struct ConfigurationSummary {
    /// Engine and variant.
    pub configuration: Configuration,
    /// Measured blocks (rows).
    pub blocks: usize,
    /// Distinct runs among them.
    pub runs: usize,
    /// Median `execution_ms`.
    pub execution_ms: f64,
    /// Median `state_read_ms`.
    pub state_read_ms: f64,
    /// Median `state_hash_ms`.
    pub state_hash_ms: f64,
    /// Median `commit_ms`.
    pub commit_ms: f64,
    /// Median `total_ms`.
    pub total_ms: f64,
    /// Median `mgas_per_s`.
    pub mgas_per_s: f64,
    /// Median of the blocks' `state_read_ms / slots_read` (blocks without
    /// slot reads left out; NaN when none is left).
    pub ms_per_slot_read: f64,
    /// Median of the blocks' `total_ms / (slots_read + slots_written)`.
    pub ms_per_slot_total: f64,
    /// Median of the blocks' `state_read_ms / cache_misses`.
    pub ms_per_cache_miss: f64,
    /// Median bytes written per block (blocks that report it), or NaN.
    pub bytes_written: f64,
    /// Median bytes read per block (blocks that report it), or NaN.
    pub bytes_read: f64,
    /// Median slots read and written per block.
    pub slots_read: f64,
    /// See `slots_read`.
    pub slots_written: f64,
    /// Median `total_ms` of each run's first block: the cold start (every
    /// run starts from a database whose files are out of the page cache).
    pub first_block_total_ms: f64,
    /// Median `total_ms` of the blocks after each run's first: the steady
    /// state (NaN when runs have one block).
    pub later_blocks_total_ms: f64,
    /// Coefficient of variation of `total_ms`, in percent.
    pub cv_total_percent: f64,
    /// Box-plot figures of `total_ms`.
    pub total_box: FiveNumbers,
    /// The blocks' `total_ms`, in input order.
    pub total_values: Vec<f64>,
}

impl ConfigurationSummary {
    /// Summarizes the measured blocks of one configuration (not empty).
    pub fn from_blocks(configuration: Configuration, blocks: &[BlockMetrics]) -> Self {
        let column = |f: fn(&BlockMetrics) -> f64| -> Vec<f64> { blocks.iter().map(f).collect() };
        let derived = |f: fn(&BlockMetrics) -> Option<f64>| -> f64 {
            median(&blocks.iter().filter_map(f).collect::<Vec<_>>())
        };
        let total_values = column(|m| m.total_ms);
        let mut runs: Vec<u32> = blocks.iter().map(|m| m.run).collect();
        runs.sort_unstable();
        runs.dedup();
        let (first_block_total_ms, later_blocks_total_ms) = first_and_later(blocks);
        ConfigurationSummary {
            configuration,
            blocks: blocks.len(),
            runs: runs.len(),
            execution_ms: median(&column(|m| m.execution_ms)),
            state_read_ms: median(&column(|m| m.state_read_ms)),
            state_hash_ms: median(&column(|m| m.state_hash_ms)),
            commit_ms: median(&column(|m| m.commit_ms)),
            total_ms: median(&total_values),
            mgas_per_s: median(&column(|m| m.mgas_per_s)),
            ms_per_slot_read: derived(BlockMetrics::ms_per_slot_read),
            ms_per_slot_total: derived(BlockMetrics::ms_per_slot_total),
            ms_per_cache_miss: derived(BlockMetrics::ms_per_cache_miss),
            bytes_written: median(
                &blocks
                    .iter()
                    .filter_map(|m| m.bytes_written.map(|b| b as f64))
                    .collect::<Vec<_>>(),
            ),
            bytes_read: median(
                &blocks
                    .iter()
                    .filter_map(|m| m.bytes_read.map(|b| b as f64))
                    .collect::<Vec<_>>(),
            ),
            slots_read: median(&column(|m| m.slots_read as f64)),
            slots_written: median(&column(|m| m.slots_written as f64)),
            first_block_total_ms,
            later_blocks_total_ms,
            cv_total_percent: cv_percent(&total_values),
            total_box: five_numbers(&total_values),
            total_values,
        }
    }
}

/// Medians of `total_ms` over each run's first block (the lowest block
/// number of the run) and over the other blocks.
fn first_and_later(blocks: &[BlockMetrics]) -> (f64, f64) {
    let mut first_of_run: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for m in blocks {
        let first = first_of_run.entry(m.run).or_insert(m.block);
        *first = (*first).min(m.block);
    }
    let (first, later): (Vec<&BlockMetrics>, Vec<&BlockMetrics>) = blocks
        .iter()
        .partition(|m| first_of_run.get(&m.run) == Some(&m.block));
    let totals =
        |set: &[&BlockMetrics]| median(&set.iter().map(|m| m.total_ms).collect::<Vec<_>>());
    (totals(&first), totals(&later))
}

/// One configuration against another on `total_ms`.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The configuration in the numerator.
    pub subject: Configuration,
    /// The configuration in the denominator.
    pub reference: Configuration,
    /// median(subject total_ms) / median(reference total_ms): below 1 when
    /// the subject is faster.
    pub ratio: f64,
    /// Bootstrap 95% confidence interval of the ratio.
    pub ci: (f64, f64),
    /// Two-sided Mann-Whitney U test of the two sets of block-level
    /// `total_ms` (`u` is the subject's).
    pub test: MannWhitney,
    /// Whether the test's p-value is below the significance level.
    pub significant: bool,
}

impl Comparison {
    /// Compares `subject` with `reference`.
    pub fn new(
        subject: &ConfigurationSummary,
        reference: &ConfigurationSummary,
        options: &SummaryOptions,
    ) -> Self {
        let test = mann_whitney_u(&subject.total_values, &reference.total_values);
        Comparison {
            subject: subject.configuration.clone(),
            reference: reference.configuration.clone(),
            ratio: subject.total_ms / reference.total_ms,
            ci: bootstrap_ratio_ci(
                &subject.total_values,
                &reference.total_values,
                options.resamples,
                options.seed,
            ),
            significant: test.p_two_sided < options.alpha,
            test,
        }
    }
}

/// Everything measured on one workload.
#[derive(Clone, Debug)]
pub struct WorkloadSummary {
    /// Workload name.
    pub workload: String,
    /// Configurations, by engine then variant in natural order.
    pub configurations: Vec<ConfigurationSummary>,
    /// Index in `configurations` of the best one: lowest median
    /// `total_ms` (the first in order among equals).
    pub best: usize,
    /// The best configuration against every other, the runner-up first
    /// (others by ascending median `total_ms`).
    pub verdict: Vec<Comparison>,
    /// Within each engine, each variant against the previous one in
    /// natural order (e.g. gd6 against gd5).
    pub neighbours: Vec<Comparison>,
    /// When ubt and other engines are both present: ubt's best
    /// configuration against every configuration of the other engines.
    pub ubt_vs_others: Vec<Comparison>,
}

impl WorkloadSummary {
    /// The best configuration.
    pub fn best(&self) -> &ConfigurationSummary {
        &self.configurations[self.best]
    }
}

/// Index of the lowest median `total_ms` among `candidates` (first among
/// equals; NaN medians never win over numbers).
fn fastest<'a>(candidates: impl Iterator<Item = (usize, &'a ConfigurationSummary)>) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in candidates {
        let better = match best {
            None => true,
            Some((_, t)) => c.total_ms < t || (t.is_nan() && !c.total_ms.is_nan()),
        };
        if better {
            best = Some((i, c.total_ms));
        }
    }
    best.map_or(0, |(i, _)| i)
}

/// Summarizes `configurations` (sorted, not empty) of one workload.
fn summarize_workload(
    workload: String,
    configurations: Vec<ConfigurationSummary>,
    options: &SummaryOptions,
) -> WorkloadSummary {
    let best = fastest(configurations.iter().enumerate());
    let mut others: Vec<&ConfigurationSummary> = configurations
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != best)
        .map(|(_, c)| c)
        .collect();
    others.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    let verdict = others
        .iter()
        .map(|other| Comparison::new(&configurations[best], other, options))
        .collect();
    let neighbours = configurations
        .windows(2)
        .filter(|pair| pair[0].configuration.engine == pair[1].configuration.engine)
        .map(|pair| Comparison::new(&pair[1], &pair[0], options))
        .collect();
    let is_ubt = |c: &ConfigurationSummary| c.configuration.engine == UBT_ENGINE;
    let has_others = configurations.iter().any(|c| !is_ubt(c));
    let ubt_vs_others = if configurations.iter().any(is_ubt) && has_others {
        let best_ubt = fastest(configurations.iter().enumerate().filter(|(_, c)| is_ubt(c)));
        configurations
            .iter()
            .filter(|c| !is_ubt(c))
            .map(|other| Comparison::new(&configurations[best_ubt], other, options))
            .collect()
    } else {
        Vec::new()
    };
    WorkloadSummary {
        workload,
        configurations,
        best,
        verdict,
        neighbours,
        ubt_vs_others,
    }
}

/// Summarizes block metrics: per workload (natural order), per
/// configuration, without the warm-up run. Workloads and configurations
/// with only warm-up blocks are absent.
pub fn summarize(metrics: &[BlockMetrics], options: &SummaryOptions) -> Vec<WorkloadSummary> {
    let mut workloads: Vec<(String, Vec<ConfigurationSummary>)> = Vec::new();
    for (key, blocks) in group_measured(metrics) {
        let summary = ConfigurationSummary::from_blocks(key.configuration, &blocks);
        match workloads.last_mut() {
            Some((name, list)) if *name == key.workload => list.push(summary),
            _ => workloads.push((key.workload, vec![summary])),
        }
    }
    debug_assert!(workloads
        .windows(2)
        .all(|w| natural_cmp(&w[0].0, &w[1].0).is_lt()));
    workloads
        .into_iter()
        .map(|(workload, configurations)| summarize_workload(workload, configurations, options))
        .collect()
}

//! Statistics for benchmark reports: descriptive figures (median, mean,
//! sample standard deviation, coefficient of variation, quantiles), the
//! Mann-Whitney U test and a bootstrap confidence interval of a ratio of
//! medians.
//!
//! Conventions: every function takes unsorted values; a figure that is not
//! defined for the input (the median of nothing, the standard deviation of
//! one value) is `f64::NAN`, so a report shows it as missing rather than as
//! a misleading zero.
//!
//! * [`mann_whitney_u`]: two-sided test, normal approximation with tie
//!   and continuity corrections; [`mann_whitney_u_exact`]: the exact null
//!   distribution for small samples without ties.
//! * [`bootstrap_ratio_ci`]: percentile bootstrap of median(a) / median(b)
//!   driven by [`SplitMix64`].
//! * [`normal_sf`]: the standard normal upper tail the test uses.

mod bootstrap;
mod mann_whitney;
mod normal;

pub use bootstrap::bootstrap_ratio_ci;
pub use mann_whitney::{mann_whitney_u, mann_whitney_u_exact, MannWhitney};
pub use normal::{erfc, normal_sf};
pub use ubt_spec::rng::SplitMix64;

/// Values sorted ascending (NaN last), as a new vector.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut out = values.to_vec();
    out.sort_by(f64::total_cmp);
    out
}

/// The median: the middle value, or the mean of the two middle values for
/// an even count; NaN for no values.
pub fn median(values: &[f64]) -> f64 {
    quantile_sorted(&sorted(values), 0.5, QuantileMethod::Linear)
}

/// The arithmetic mean; NaN for no values.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample standard deviation (divisor n - 1); NaN for fewer than two
/// values.
pub fn stdev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let m = mean(values);
    let squares: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (squares / (values.len() - 1) as f64).sqrt()
}

/// The coefficient of variation in percent: 100 x [`stdev`] / [`mean`];
/// NaN for fewer than two values or a zero mean.
pub fn cv_percent(values: &[f64]) -> f64 {
    let m = mean(values);
    if m == 0.0 {
        return f64::NAN;
    }
    100.0 * stdev(values) / m
}

/// How [`quantile_sorted`] turns order statistics into a quantile. The
/// two conventions differ (the median of `[1, 2]` is 1.5 by
/// [`Linear`](Self::Linear) and 1 by [`NearestRank`](Self::NearestRank)),
/// and each report keeps the one its figures were first published with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantileMethod {
    /// Linear interpolation between closest ranks (Hyndman and Fan's type
    /// 7, the default of R and numpy): position `q * (n - 1)`; NaN for no
    /// values. The block-metrics report ([`median`], [`five_numbers`], the
    /// bootstrap) and `ubt bench overlay`'s medians.
    Linear,
    /// Nearest rank: the value of rank `ceil(q * n)` (at least 1), always
    /// an observed value; 0 for no values (the figure files are JSON, which
    /// has no NaN). `ubt bench store`'s percentiles and medians, the device
    /// probe's latency percentiles and `ubt bench overlay`'s p99.
    NearestRank,
}

/// The `q`-quantile (0..=1) of ascending values by `method`.
pub fn quantile_sorted(sorted: &[f64], q: f64, method: QuantileMethod) -> f64 {
    debug_assert!(
        sorted.windows(2).all(|w| w[0].total_cmp(&w[1]).is_le()),
        "values not sorted"
    );
    match method {
        QuantileMethod::Linear => {
            if sorted.is_empty() {
                return f64::NAN;
            }
            let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
            // In 0..len: `position` is a clamped fraction of len - 1.
            #[allow(clippy::cast_possible_truncation)]
            let (below, above) = (position.floor() as usize, position.ceil() as usize);
            let fraction = position - below as f64;
            sorted[below] + (sorted[above] - sorted[below]) * fraction
        }
        QuantileMethod::NearestRank => {
            if sorted.is_empty() {
                return 0.0;
            }
            #[allow(clippy::cast_possible_truncation)] // saturating; clamped below
            let rank = (q * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        }
    }
}

/// The five figures of a box plot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FiveNumbers {
    /// Smallest value.
    pub min: f64,
    /// First quartile ([`quantile_sorted`] at 0.25, [`QuantileMethod::Linear`]).
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile (0.75).
    pub q3: f64,
    /// Largest value.
    pub max: f64,
}

/// Minimum, quartiles and maximum of `values`; all NaN for no values.
pub fn five_numbers(values: &[f64]) -> FiveNumbers {
    let s = sorted(values);
    FiveNumbers {
        min: quantile_sorted(&s, 0.0, QuantileMethod::Linear),
        q1: quantile_sorted(&s, 0.25, QuantileMethod::Linear),
        median: quantile_sorted(&s, 0.5, QuantileMethod::Linear),
        q3: quantile_sorted(&s, 0.75, QuantileMethod::Linear),
        max: quantile_sorted(&s, 1.0, QuantileMethod::Linear),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values for V = [3, 1, 4, 1, 5, 9, 2, 6] from numpy 2.4.6:
    // np.median(V) = 3.5, np.mean(V) = 3.875,
    // np.std(V, ddof=1) = 2.748376143938713,
    // 100 * np.std(V, ddof=1) / np.mean(V) = 70.92583597261194,
    // np.percentile(V, [0, 25, 50, 75, 100, 2.5, 97.5])
    //   = [1.0, 1.75, 3.5, 5.25, 9.0, 1.0, 8.475000000000001].
    const V: [f64; 8] = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn descriptive_figures_match_numpy() {
        assert_eq!(median(&V), 3.5);
        assert_eq!(mean(&V), 3.875);
        assert!(close(stdev(&V), 2.748376143938713));
        assert!(close(cv_percent(&V), 70.92583597261194));
    }

    #[test]
    fn quantiles_match_numpy_linear_method() {
        let s = sorted(&V);
        for (q, expected) in [
            (0.0, 1.0),
            (0.25, 1.75),
            (0.5, 3.5),
            (0.75, 5.25),
            (1.0, 9.0),
            (0.025, 1.0),
            (0.975, 8.475000000000001),
        ] {
            assert!(
                close(quantile_sorted(&s, q, QuantileMethod::Linear), expected),
                "q = {q}"
            );
        }
        let five = five_numbers(&V);
        assert_eq!(
            (five.min, five.q1, five.median, five.q3, five.max),
            (1.0, 1.75, 3.5, 5.25, 9.0)
        );
    }

    #[test]
    fn nearest_rank_quantiles() {
        // The ranks ceil(q * n) by hand: 1..=100 gives q * 100 itself.
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let nearest = |values: &[f64], q| quantile_sorted(values, q, QuantileMethod::NearestRank);
        assert_eq!(nearest(&values, 0.5), 50.0);
        assert_eq!(nearest(&values, 0.99), 99.0);
        assert_eq!(nearest(&values, 1.0), 100.0);
        assert_eq!(nearest(&values, 0.0), 1.0);
        assert_eq!(nearest(&[7.0], 0.5), 7.0);
        assert_eq!(nearest(&[3.0], 0.99), 3.0);
        assert_eq!(nearest(&[], 0.5), 0.0);
        // V sorted is [1, 1, 2, 3, 4, 5, 6, 9]: ranks 4, 2, 8, 1.
        let s = sorted(&V);
        assert_eq!(nearest(&s, 0.5), 3.0);
        assert_eq!(nearest(&s, 0.25), 1.0);
        assert_eq!(nearest(&s, 0.99), 9.0);
        assert_eq!(nearest(&s, 0.1), 1.0);
        // The two conventions differ on an even count.
        assert_eq!(nearest(&[1.0, 2.0], 0.5), 1.0);
        assert_eq!(
            quantile_sorted(&[1.0, 2.0], 0.5, QuantileMethod::Linear),
            1.5
        );
    }

    #[test]
    fn percent_arguments_once_divided_by_100_are_the_same_fractions() {
        // The nearest-rank callers once took percents (p / 100); the
        // fractions they pass now are the same doubles.
        assert_eq!(50.0f64 / 100.0, 0.5);
        assert_eq!(99.0f64 / 100.0, 0.99);
    }

    #[test]
    fn odd_counts_and_degenerate_inputs() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
        assert!(mean(&[]).is_nan());
        assert!(stdev(&[1.0]).is_nan());
        assert!(cv_percent(&[0.0, 0.0]).is_nan());
        assert_eq!(cv_percent(&[2.0, 2.0, 2.0]), 0.0);
    }
}

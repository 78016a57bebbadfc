//! Bootstrap confidence interval of a ratio of medians.

use super::{quantile_sorted, QuantileMethod};
use ubt_spec::rng::SplitMix64;

/// The 95% percentile-bootstrap confidence interval of median(a) /
/// median(b): `resamples` times, draw len(a) values from `a` and len(b)
/// values from `b` with replacement (independently: the samples are not
/// paired), and take the ratio of their medians; the interval is the 2.5th
/// and 97.5th percentiles of those ratios ([`quantile_sorted`], linear
/// interpolation). The draws come from [`SplitMix64`] seeded with `seed`,
/// so the interval is the same on every run and platform.
///
/// A resample whose median of b is 0 gives an infinite (or NaN) ratio,
/// which sorts last. Either sample empty or `resamples == 0`: (NaN, NaN).
pub fn bootstrap_ratio_ci(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> (f64, f64) {
    if a.is_empty() || b.is_empty() || resamples == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = SplitMix64::new(seed);
    let mut draw_a = vec![0.0; a.len()];
    let mut draw_b = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in draw_a.iter_mut() {
            *slot = a[rng.index(a.len())];
        }
        for slot in draw_b.iter_mut() {
            *slot = b[rng.index(b.len())];
        }
        draw_a.sort_unstable_by(f64::total_cmp);
        draw_b.sort_unstable_by(f64::total_cmp);
        ratios.push(
            quantile_sorted(&draw_a, 0.5, QuantileMethod::Linear)
                / quantile_sorted(&draw_b, 0.5, QuantileMethod::Linear),
        );
    }
    ratios.sort_by(f64::total_cmp);
    (
        quantile_sorted(&ratios, 0.025, QuantileMethod::Linear),
        quantile_sorted(&ratios, 0.975, QuantileMethod::Linear),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statistics::median;

    /// `n` values spread around `centre` (a deterministic pattern with
    /// relative spread of about +-20%).
    fn sample(centre: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| centre * (0.8 + 0.4 * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64))
            .collect()
    }

    #[test]
    fn interval_contains_the_point_ratio() {
        let a = sample(50.0, 40, 1);
        let b = sample(100.0, 40, 2);
        let point = median(&a) / median(&b);
        let (lo, hi) = bootstrap_ratio_ci(&a, &b, 10_000, 7);
        assert!(lo <= point && point <= hi, "{lo} <= {point} <= {hi}");
        assert!(hi < 1.0, "a is clearly faster: {hi}");
    }

    #[test]
    fn same_seed_same_interval_other_seed_close() {
        let a = sample(10.0, 25, 3);
        let b = sample(12.0, 30, 4);
        let first = bootstrap_ratio_ci(&a, &b, 2_000, 99);
        assert_eq!(first, bootstrap_ratio_ci(&a, &b, 2_000, 99));
        let other = bootstrap_ratio_ci(&a, &b, 2_000, 100);
        assert_ne!(first, other);
        assert!((first.0 - other.0).abs() < 0.05 && (first.1 - other.1).abs() < 0.05);
    }

    #[test]
    fn interval_narrows_with_more_data() {
        let width = |n: usize| {
            let (lo, hi) = bootstrap_ratio_ci(&sample(10.0, n, 5), &sample(20.0, n, 6), 10_000, 11);
            hi - lo
        };
        let (small, large) = (width(10), width(400));
        assert!(
            large < small / 2.0,
            "10 values: {small}, 400 values: {large}"
        );
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(bootstrap_ratio_ci(&[2.0; 5], &[4.0; 7], 100, 1), (0.5, 0.5));
        let (lo, hi) = bootstrap_ratio_ci(&[], &[1.0], 100, 1);
        assert!(lo.is_nan() && hi.is_nan());
        let (lo, hi) = bootstrap_ratio_ci(&[1.0], &[1.0], 0, 1);
        assert!(lo.is_nan() && hi.is_nan());
    }
}

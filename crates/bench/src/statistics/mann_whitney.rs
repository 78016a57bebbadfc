//! The Mann-Whitney U test (Wilcoxon rank-sum test) of two independent
//! samples.

use super::normal::normal_sf;

/// Most values (both samples together) [`mann_whitney_u_exact`] accepts.
const EXACT_MAX_VALUES: usize = 100;

/// The outcome of a two-sided Mann-Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (x from a, y from b) with
    /// x > y, ties counting one half; U of b is n_a * n_b - u. (The
    /// statistic `scipy.stats.mannwhitneyu(a, b)` returns.)
    pub u: f64,
    /// The normal score of `u` with tie and continuity corrections;
    /// positive when a tends to be larger than b, 0 when the spread is
    /// zero.
    pub z: f64,
    /// The two-sided p-value, at most 1.
    pub p_two_sided: f64,
}

/// Midranks of `a` and `b` pooled: the sum of a's ranks and the tie term
/// sum(t^3 - t) over groups of t equal values.
fn rank_sum_and_ties(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut ties = 0.0;
    let mut start = 0;
    while start < pooled.len() {
        let mut end = start + 1;
        while end < pooled.len() && pooled[end].0 == pooled[start].0 {
            end += 1;
        }
        // Ranks start + 1 ..= end share their mean.
        let midrank = (start + 1 + end) as f64 / 2.0;
        let in_a = pooled[start..end].iter().filter(|v| v.1).count();
        rank_sum_a += midrank * in_a as f64;
        let t = (end - start) as f64;
        ties += t * t * t - t;
        start = end;
    }
    (rank_sum_a, ties)
}

/// Two-sided Mann-Whitney U test by the normal approximation.
///
/// Values are ranked together (ties get their mean rank); U = R_a -
/// n_a(n_a + 1)/2; under the null hypothesis U has mean n_a n_b / 2 and
/// variance n_a n_b / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))) with t
/// the sizes of the groups of ties. z = (|U - mean| - 1/2) / sd (the 1/2 is
/// the continuity correction, and |U - mean| - 1/2 is taken as 0 when
/// negative), p = 2 P(Z > |z|). This is what
/// `scipy.stats.mannwhitneyu(a, b, alternative='two-sided',
/// method='asymptotic')` computes. When every value is equal the spread is
/// zero and p = 1. Either sample empty: all fields NaN.
///
/// The approximation is good from about 8 values per sample; below that
/// with no ties, [`mann_whitney_u_exact`] gives the exact p.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> MannWhitney {
    if a.is_empty() || b.is_empty() {
        return MannWhitney {
            u: f64::NAN,
            z: f64::NAN,
            p_two_sided: f64::NAN,
        };
    }
    let (n_a, n_b) = (a.len() as f64, b.len() as f64);
    let n = n_a + n_b;
    let (rank_sum_a, ties) = rank_sum_and_ties(a, b);
    let u = rank_sum_a - n_a * (n_a + 1.0) / 2.0;
    let mean = n_a * n_b / 2.0;
    let variance = n_a * n_b / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if variance <= 0.0 {
        return MannWhitney {
            u,
            z: 0.0,
            p_two_sided: 1.0,
        };
    }
    let sd = variance.sqrt();
    let distance = ((u - mean).abs() - 0.5).max(0.0);
    let z = (u - mean).signum() * distance / sd;
    MannWhitney {
        u,
        z: if distance == 0.0 { 0.0 } else { z },
        p_two_sided: (2.0 * normal_sf(distance / sd)).min(1.0),
    }
}

/// Two-sided Mann-Whitney U test with the exact null distribution of U,
/// for small samples without ties; `None` when two of the values (in
/// either sample) are equal, when a sample is empty, or when there are
/// more than 100 values in all.
///
/// The distribution counts, for every U, the ways of choosing a's ranks
/// among 1..=n; p = 2 min(P(U' <= U), P(U' >= U)), at most 1 (as
/// `scipy.stats.mannwhitneyu(a, b, alternative='two-sided',
/// method='exact')`). `u` and `z` are those of [`mann_whitney_u`].
pub fn mann_whitney_u_exact(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let n = a.len() + b.len();
    if a.is_empty() || b.is_empty() || n > EXACT_MAX_VALUES {
        return None;
    }
    let (_, ties) = rank_sum_and_ties(a, b);
    if ties != 0.0 {
        return None;
    }
    let approximate = mann_whitney_u(a, b);
    let (n_a, n_b) = (a.len(), b.len());
    // ways[k][u]: subsets of k of the ranks seen so far whose U (rank sum
    // minus k(k+1)/2) is u. Adding rank r to a subset of k - 1 ranks adds
    // r - k to U.
    let max_u = n_a * n_b;
    let mut ways = vec![vec![0.0f64; max_u + 1]; n_a + 1];
    ways[0][0] = 1.0;
    for rank in 1..=n {
        for k in (1..=n_a.min(rank)).rev() {
            let shift = rank - k;
            for u in (shift..=max_u).rev() {
                ways[k][u] += ways[k - 1][u - shift];
            }
        }
    }
    let counts = &ways[n_a];
    let total: f64 = counts.iter().sum();
    #[allow(clippy::cast_possible_truncation)] // U is an integer in 0..=n_a * n_b
    let u = approximate.u.round() as usize;
    let lower: f64 = counts[..=u].iter().sum();
    let upper: f64 = counts[u..].iter().sum();
    Some(MannWhitney {
        p_two_sided: (2.0 * lower.min(upper) / total).min(1.0),
        ..approximate
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(got: f64, expected: f64) {
        assert!(
            (got - expected).abs() <= 1e-10 * expected.abs().max(1e-300),
            "got {got}, expected {expected}"
        );
    }

    #[test]
    fn textbook_example_by_hand_and_scipy() {
        // By hand: pooled ranks 11b:1 12b:2 16a:3 17b:4 19a:5 20b:6 22a:7
        // 24a:8 29a:9, R_a = 32, U = 32 - 15 = 17, mean 10, sd =
        // sqrt(5*4*10/12) = 4.0825, z = (17 - 10 - 0.5)/4.0825 = 1.5922,
        // p = 2 P(Z > 1.5922) = 0.1113.
        // scipy 1.17.1 mannwhitneyu(a, b, alternative='two-sided',
        // method='asymptotic'): U = 17.0, p = 0.11134688653314041;
        // method='exact': p = 0.1111111111111111 (= 14 / C(9, 4)).
        let a = [19.0, 22.0, 16.0, 29.0, 24.0];
        let b = [20.0, 11.0, 17.0, 12.0];
        let test = mann_whitney_u(&a, &b);
        assert_eq!(test.u, 17.0);
        assert!((test.z - 1.5922).abs() < 1e-4);
        assert_close(test.p_two_sided, 0.11134688653314041);
        let exact = mann_whitney_u_exact(&a, &b).unwrap();
        assert_close(exact.p_two_sided, 0.1111111111111111);
        assert_eq!(exact.u, 17.0);
    }

    #[test]
    fn ties_and_unequal_sizes_match_scipy() {
        // scipy 1.17.1 mannwhitneyu([1,2,2,3,4,5], [2,3,3,6,7,8,9],
        // alternative='two-sided', method='asymptotic'):
        // U = 9.0, p = 0.09667054340670089.
        let a = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 3.0, 3.0, 6.0, 7.0, 8.0, 9.0];
        let test = mann_whitney_u(&a, &b);
        assert_eq!(test.u, 9.0);
        assert!(test.z < 0.0);
        assert_close(test.p_two_sided, 0.09667054340670089);
        assert_eq!(mann_whitney_u_exact(&a, &b), None, "ties: no exact p");
    }

    #[test]
    fn unequal_sizes_without_ties_match_scipy() {
        // scipy 1.17.1 mannwhitneyu([1.1,2.3,3.5,4.0],
        // [2.0,5.1,6.2,7.3,8.4,9.9], alternative='two-sided'):
        // method='asymptotic': U = 3.0, p = 0.0699543585800103;
        // method='exact': p = 0.06666666666666667.
        let a = [1.1, 2.3, 3.5, 4.0];
        let b = [2.0, 5.1, 6.2, 7.3, 8.4, 9.9];
        let test = mann_whitney_u(&a, &b);
        assert_eq!(test.u, 3.0);
        assert_close(test.p_two_sided, 0.0699543585800103);
        let exact = mann_whitney_u_exact(&a, &b).unwrap();
        assert_close(exact.p_two_sided, 0.06666666666666667);
        // Swapping the samples mirrors U and keeps p.
        let swapped = mann_whitney_u(&b, &a);
        assert_eq!(swapped.u, 21.0);
        assert_eq!(swapped.z, -test.z);
        assert_close(swapped.p_two_sided, test.p_two_sided);
    }

    #[test]
    fn identical_samples_give_p_one() {
        // scipy 1.17.1: mannwhitneyu([1,2,3,4,5], [1,2,3,4,5],
        // alternative='two-sided', method='asymptotic') -> U = 12.5, p = 1.0;
        // mannwhitneyu([5,5,5,5], [5,5,5], ...) -> U = 6.0, p = 1.0.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let test = mann_whitney_u(&a, &a);
        assert_eq!((test.u, test.z, test.p_two_sided), (12.5, 0.0, 1.0));
        let constant = mann_whitney_u(&[5.0; 4], &[5.0; 3]);
        assert_eq!(
            (constant.u, constant.z, constant.p_two_sided),
            (6.0, 0.0, 1.0)
        );
    }

    #[test]
    fn fully_separated_samples_match_scipy() {
        // scipy 1.17.1 mannwhitneyu(range(1, 11), range(11, 21),
        // alternative='two-sided'): method='asymptotic': U = 0.0,
        // p = 0.00018267179110955002; method='exact':
        // p = 1.082508822446903e-05 (= 2 / C(20, 10)).
        // mannwhitneyu([1,2,3], [4,5,6]): asymptotic p = 0.08085559837005224,
        // exact p = 0.1 (= 2 / C(6, 3)).
        let low: Vec<f64> = (1..=10).map(f64::from).collect();
        let high: Vec<f64> = (11..=20).map(f64::from).collect();
        let test = mann_whitney_u(&low, &high);
        assert_eq!(test.u, 0.0);
        assert_close(test.p_two_sided, 0.00018267179110955002);
        let exact = mann_whitney_u_exact(&low, &high).unwrap();
        assert_close(exact.p_two_sided, 1.082508822446903e-05);
        let small = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert_close(small.p_two_sided, 0.08085559837005224);
        let small_exact = mann_whitney_u_exact(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_close(small_exact.p_two_sided, 0.1);
    }

    #[test]
    fn empty_samples_give_nan() {
        let test = mann_whitney_u(&[], &[1.0]);
        assert!(test.u.is_nan() && test.z.is_nan() && test.p_two_sided.is_nan());
        assert_eq!(mann_whitney_u_exact(&[1.0], &[]), None);
    }
}

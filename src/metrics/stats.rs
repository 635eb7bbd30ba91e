//! Aggregates over workloads or seeds: geometric mean and a Student-t confidence interval
//! of the mean.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Geometric mean of positive values (0 if any is not positive or there are none).
pub fn gmean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return 0.0;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// A mean with a two-sided confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanCi {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
    pub level: f64,
}

/// Mean of `xs` with a Student-t interval at `level` (e.g. 0.95). One sample gives a
/// zero-width interval.
pub fn mean_ci(xs: &[f64], level: f64) -> MeanCi {
    let n = xs.len();
    let mean = if n == 0 {
        0.0
    } else {
        xs.iter().sum::<f64>() / n as f64
    };
    let half = if n < 2 {
        0.0
    } else {
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|d| d.inverse_cdf(0.5 + level / 2.0))
            .unwrap_or(0.0);
        t * (var / n as f64).sqrt()
    };
    MeanCi {
        mean,
        lo: mean - half,
        hi: mean + half,
        n,
        level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmean_of_reciprocals_is_one() {
        assert!((gmean(&[2.0, 0.5]) - 1.0).abs() < 1e-12);
        assert_eq!(gmean(&[]), 0.0);
        assert_eq!(gmean(&[1.0, 0.0]), 0.0);
    }

    #[test]
    fn ci_matches_t_table() {
        // n = 4, sd = 1: t(0.975, 3) = 3.182, half-width 3.182 / 2.
        let xs = [1.0, 2.0, 3.0, 4.0];
        let sd = (xs.iter().map(|x| (x - 2.5f64).powi(2)).sum::<f64>() / 3.0).sqrt();
        let c = mean_ci(&xs, 0.95);
        assert!((c.mean - 2.5).abs() < 1e-12);
        let half = 3.182446 * sd / 2.0;
        assert!((c.hi - c.mean - half).abs() < 1e-4, "{c:?}");
        assert_eq!(mean_ci(&[5.0], 0.95).lo, 5.0);
    }
}

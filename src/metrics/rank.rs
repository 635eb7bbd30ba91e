//! Agreement between a paper's ranking of sharing policies and ours: Kendall's τ-b over the
//! policies both evaluated (Reproduction II asks each study for it). The paper's ranking is
//! an order, best first; ours comes from the study's headline measure (higher is better),
//! equal values counting as ties.

use std::cmp::Ordering;

/// Kendall's τ between the paper's order and ours over the policies both have.
#[derive(Clone, Debug, PartialEq)]
pub struct RankAgreement {
    /// τ-b in [−1, 1]: 1 the same order, −1 reversed.
    pub tau: f64,
    /// Policies compared (those in both rankings).
    pub n: usize,
    /// The common policies in the paper's order.
    pub paper: Vec<String>,
    /// The common policies in our order (best first; ties keep the paper's order).
    pub ours: Vec<String>,
}

/// τ-b of `paper` (best first, no ties) against `ours` (policy, value; higher is better).
/// `None` when fewer than two policies are common or every value of ours is tied.
pub fn kendall_tau(paper: &[String], ours: &[(String, f64)]) -> Option<RankAgreement> {
    let common: Vec<(usize, f64, &String)> = paper
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            ours.iter()
                .find(|(q, v)| q == p && v.is_finite())
                .map(|(_, v)| (i, *v, p))
        })
        .collect();
    let n = common.len();
    if n < 2 {
        return None;
    }
    let (mut concordant, mut discordant, mut ties) = (0i64, 0i64, 0i64);
    for a in 0..n {
        for b in a + 1..n {
            // The paper ranks a above b (index order); ours agrees when a's value is higher.
            match common[a].1.partial_cmp(&common[b].1) {
                Some(Ordering::Greater) => concordant += 1,
                Some(Ordering::Less) => discordant += 1,
                _ => ties += 1,
            }
        }
    }
    let pairs = (n * (n - 1) / 2) as i64;
    let denom = ((pairs * (pairs - ties)) as f64).sqrt();
    if denom == 0.0 {
        return None;
    }
    let mut by_value: Vec<&(usize, f64, &String)> = common.iter().collect();
    by_value.sort_by(|x, y| {
        y.1.partial_cmp(&x.1)
            .unwrap_or(Ordering::Equal)
            .then(x.0.cmp(&y.0))
    });
    Some(RankAgreement {
        tau: (concordant - discordant) as f64 / denom,
        n,
        paper: common.iter().map(|c| c.2.clone()).collect(),
        ours: by_value.iter().map(|c| c.2.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    fn vals(xs: &[(&str, f64)]) -> Vec<(String, f64)> {
        xs.iter().map(|(s, v)| (s.to_string(), *v)).collect()
    }

    /// Brute force: τ-a over every pair, for orders without ties.
    fn tau_a(paper: &[String], ours: &[(String, f64)]) -> f64 {
        let idx: Vec<f64> = paper
            .iter()
            .map(|p| ours.iter().find(|(q, _)| q == p).unwrap().1)
            .collect();
        let n = idx.len();
        let mut s = 0.0;
        for a in 0..n {
            for b in a + 1..n {
                s += (idx[a] - idx[b]).signum();
            }
        }
        s / (n * (n - 1) / 2) as f64
    }

    #[test]
    fn same_order_is_one_reversed_is_minus_one() {
        let p = names(&["a", "b", "c", "d"]);
        let r = kendall_tau(&p, &vals(&[("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)])).unwrap();
        assert_eq!((r.tau, r.n), (1.0, 4));
        let r = kendall_tau(&p, &vals(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)])).unwrap();
        assert_eq!(r.tau, -1.0);
        assert_eq!(r.ours, names(&["d", "c", "b", "a"]));
    }

    #[test]
    fn only_common_policies_count() {
        let p = names(&["x", "a", "b", "c"]);
        let ours = vals(&[("c", 3.0), ("a", 2.0), ("b", 1.0), ("fcfs", 9.0)]);
        let r = kendall_tau(&p, &ours).unwrap();
        assert_eq!(r.n, 3);
        assert_eq!(r.paper, names(&["a", "b", "c"]));
        // pairs: (a,b) +, (a,c) −, (b,c) −  → (1 − 2) / 3
        assert!((r.tau + 1.0 / 3.0).abs() < 1e-12);
        assert!(kendall_tau(&p, &vals(&[("a", 1.0)])).is_none());
    }

    #[test]
    fn matches_brute_force_on_every_order_of_five() {
        let p = names(&["a", "b", "c", "d", "e"]);
        let mut perm: Vec<usize> = (0..5).collect();
        let mut count = 0;
        // Heap's algorithm over all 120 orders.
        fn heap(k: usize, v: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
            if k == 1 {
                f(v);
                return;
            }
            for i in 0..k {
                heap(k - 1, v, f);
                let j = if k.is_multiple_of(2) { i } else { 0 };
                v.swap(j, k - 1);
            }
        }
        heap(5, &mut perm, &mut |o| {
            let ours: Vec<(String, f64)> = p
                .iter()
                .zip(o)
                .map(|(n, &r)| (n.clone(), r as f64))
                .collect();
            let r = kendall_tau(&p, &ours).unwrap();
            assert!((r.tau - tau_a(&p, &ours)).abs() < 1e-12);
            count += 1;
        });
        assert_eq!(count, 120);
    }

    #[test]
    fn ties_use_tau_b() {
        let p = names(&["a", "b", "c"]);
        let r = kendall_tau(&p, &vals(&[("a", 2.0), ("b", 1.0), ("c", 1.0)])).unwrap();
        // concordant 2, discordant 0, ties 1: 2 / sqrt(3 · 2)
        assert!((r.tau - 2.0 / 6f64.sqrt()).abs() < 1e-12);
        assert!(kendall_tau(&p, &vals(&[("a", 1.0), ("b", 1.0), ("c", 1.0)])).is_none());
    }
}

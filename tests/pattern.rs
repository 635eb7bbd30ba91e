//! Punyala's class-pattern ILP (eq. 1–5) against brute-force enumeration of every grouping.

use gpumodel::policy::pattern::{brute_force, efficiency, solve, Interference};
use proptest::prelude::*;

fn matrix(vals: Vec<f64>, nc: usize) -> Interference {
    Interference {
        classes: (0..nc).map(|c| format!("c{c}")).collect(),
        s: vals.chunks(nc).map(|r| r.to_vec()).collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// Queues of up to 9 applications of 4 classes, pairs and triples (divisible or not):
    /// the ILP's objective equals the best of every integer grouping, and its groups use
    /// the queue exactly.
    #[test]
    fn ilp_equals_brute_force(
        counts in prop::collection::vec(0u32..4, 4),
        ng in 2usize..=3,
        vals in prop::collection::vec(1.0f64..2.5, 16),
    ) {
        prop_assume!(counts.iter().sum::<u32>() > 0);
        let m = matrix(vals, 4);
        let ilp = solve(&counts, ng, &m).unwrap();
        let bf = brute_force(&counts, ng, &m).unwrap();
        prop_assert!((ilp.objective - bf.objective).abs() < 1e-6, "ilp {:?} brute {:?}", ilp, bf);
        let mut used = vec![0u32; 4];
        for (p, n) in &ilp.groups {
            for c in 0..4 {
                used[c] += p[c] * n;
            }
        }
        prop_assert_eq!(used, counts);
    }
}

#[test]
fn pairs_complementary_classes() {
    // M hurts M badly (2.0), A barely notices anyone: the best pairing puts each M beside
    // an A rather than M+M and A+A.
    let m = matrix(vec![2.0, 1.1, 1.2, 1.05], 2);
    let g = solve(&[2, 2], 2, &m).unwrap();
    assert_eq!(g.groups, vec![(vec![1, 1], 2)]);
    assert!((g.objective - 2.0 * efficiency(&[1, 1], &m)).abs() < 1e-12);
}

#[test]
fn an_odd_queue_leaves_one_smaller_group() {
    let m = matrix(vec![2.0, 1.1, 1.2, 1.05], 2);
    let g = solve(&[2, 1], 2, &m).unwrap();
    let sizes: Vec<u32> = g
        .groups
        .iter()
        .flat_map(|(p, n)| std::iter::repeat_n(p.iter().sum::<u32>(), *n as usize))
        .collect();
    assert_eq!(sizes.iter().sum::<u32>(), 3);
    assert!(sizes.contains(&1) && sizes.contains(&2), "{g:?}");
}

#[test]
fn bad_inputs_are_clear_errors() {
    let m = matrix(vec![2.0, 1.1, 1.2, 1.05], 2);
    let e = solve(&[1, 1, 1], 2, &m).unwrap_err().to_string();
    assert!(e.contains("3 classes"), "{e}");
    let e = solve(&[0, 0], 2, &m).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    let bad = matrix(vec![2.0, -1.0, 1.2, 1.05], 2);
    let e = solve(&[1, 1], 2, &bad).unwrap_err().to_string();
    assert!(e.contains("S(c0→c1)"), "{e}");
}

/// A 36-application queue in groups of three over 4 classes solves fast (the issue's
/// "well under a second"; timed in the study benchmark, not asserted here).
#[test]
fn a_36_app_queue_in_triples_solves() {
    let m = matrix(
        vec![
            2.05, 1.5, 1.6, 1.2, 1.78, 1.4, 1.5, 1.1, 1.76, 1.3, 1.55, 1.15, 1.51, 1.2, 1.3, 1.06,
        ],
        4,
    );
    let g = solve(&[9, 9, 9, 9], 3, &m).unwrap();
    assert_eq!(g.groups.iter().map(|(_, n)| n).sum::<u32>(), 12);
}

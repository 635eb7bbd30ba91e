//! `study --ff-check N`: the error of the run just made. Of a study's co-run jobs that
//! fast-forward skipped cycles in, `N` are run again in detail — taken from every policy
//! in turn (a controller that acts at its epochs errs differently from a static split),
//! evenly spaced within each — and
//! each application's progress (IPC shared over IPC alone, the quantity STP and ANTT are
//! made of) is compared: the largest difference is the error a user can quote for this
//! run, not for a benchmark table.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::plan::{JobOutput, Plan};
use crate::error::Result;
use crate::metrics::{FfCheck, FfCheckRun, PolicyRun};

/// Re-runs up to `n` of the fast-forwarded co-run jobs among `outputs` (the plan's jobs,
/// in order) in detail and compares every application's progress.
pub fn ff_check(
    plan: &Plan,
    outputs: &[JobOutput],
    n: usize,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<FfCheck> {
    let eligible: Vec<(usize, &str)> = outputs
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            JobOutput::Run(r) if skipped(r) > 0.0 => Some((i, r.policy.as_str())),
            _ => None,
        })
        .collect();
    let pick = by_policy(&eligible, n);
    let done = AtomicUsize::new(0);
    progress("ff-check", 0, pick.len());
    let detailed: Vec<Result<JobOutput>> = pick
        .par_iter()
        .map(|&i| {
            let r = plan.run_job_ff(i, false);
            progress(
                "ff-check",
                done.fetch_add(1, Ordering::Relaxed) + 1,
                pick.len(),
            );
            r
        })
        .collect();
    let mut runs = Vec::new();
    for (&i, d) in pick.iter().zip(detailed) {
        let (JobOutput::Run(f), JobOutput::Run(d)) = (&outputs[i], d?) else {
            continue;
        };
        runs.extend(compare(i, f, &d));
    }
    let largest = runs.iter().map(|r| r.diff.abs()).fold(0.0, f64::max);
    Ok(FfCheck {
        eligible: eligible.len(),
        checked: pick.len(),
        largest,
        runs,
    })
}

/// Cycles fast-forward advanced analytically in the run.
fn skipped(r: &PolicyRun) -> f64 {
    r.measures.get("ff_cycles").copied().unwrap_or(0.0)
}

/// `n` of the jobs `all` (job, policy), in job order: the policies (in order of first
/// appearance) take one each in turn while they have jobs left, and each policy's share
/// is evenly spaced among its jobs.
fn by_policy(all: &[(usize, &str)], n: usize) -> Vec<usize> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for &(job, policy) in all {
        match groups.iter_mut().find(|g| g.0 == policy) {
            Some(g) => g.1.push(job),
            None => groups.push((policy, vec![job])),
        }
    }
    let mut take = vec![0usize; groups.len()];
    let mut left = n.min(all.len());
    while left > 0 {
        for (t, g) in take.iter_mut().zip(&groups) {
            if left > 0 && *t < g.1.len() {
                *t += 1;
                left -= 1;
            }
        }
    }
    let mut pick: Vec<usize> = groups
        .iter()
        .zip(take)
        .flat_map(|(g, t)| sample(&g.1, t))
        .collect();
    pick.sort_unstable();
    pick
}

/// `n` evenly spaced members of `all` (all of them when it has at most `n`).
fn sample(all: &[usize], n: usize) -> Vec<usize> {
    if all.len() <= n {
        return all.to_vec();
    }
    (0..n).map(|k| all[k * all.len() / n]).collect()
}

/// One row per application: its progress fast-forwarded and in detail.
fn compare(job: usize, f: &PolicyRun, d: &PolicyRun) -> Vec<FfCheckRun> {
    let workload = f
        .apps
        .iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join("+");
    f.apps
        .iter()
        .zip(&d.apps)
        .map(|(x, y)| FfCheckRun {
            job,
            workload: workload.clone(),
            policy: f.policy.clone(),
            app: x.name.clone(),
            fast_forward: x.progress,
            detailed: y.progress,
            diff: if y.progress > 0.0 {
                x.progress / y.progress - 1.0
            } else {
                0.0
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{by_policy, sample};

    #[test]
    fn samples_are_evenly_spaced_and_all_when_few() {
        assert_eq!(sample(&[3, 5, 9], 5), vec![3, 5, 9]);
        assert_eq!(sample(&(0..10).collect::<Vec<_>>(), 3), vec![0, 3, 6]);
        assert!(sample(&[1, 2], 0).is_empty());
    }

    #[test]
    fn every_policy_is_checked_before_any_twice() {
        // A study's jobs: ten of "bp", then ten of "ugpu" (the UGPU paper-scale subset).
        let jobs: Vec<(usize, &str)> = (0..20)
            .map(|i| (i, if i < 10 { "bp" } else { "ugpu" }))
            .collect();
        assert_eq!(by_policy(&jobs, 2), vec![0, 10]);
        assert_eq!(by_policy(&jobs, 4), vec![0, 5, 10, 15]);
        // A policy with fewer jobs than its share gives the rest to the others.
        let few = [(0, "a"), (1, "b"), (2, "b"), (3, "b"), (4, "b")];
        assert_eq!(by_policy(&few, 3), vec![0, 1, 3]);
        assert_eq!(by_policy(&few, 9), vec![0, 1, 2, 3, 4]);
        assert!(by_policy(&few, 0).is_empty());
    }
}

//! `study --ff-check N`: the error of the run just made. Of a study's co-run jobs that
//! fast-forward skipped cycles in, `N` are run again in detail — taken from every policy
//! in turn (a controller that acts at its epochs errs differently from a static split);
//! within each, first the job whose co-run jump was credited from the least steady span
//! (its `ff_spread` measure: an application's rate moved most between the span's halves),
//! then evenly spaced among the others — and
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
    let eligible: Vec<Job> = outputs
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            JobOutput::Run(r) if skipped(r) > 0.0 => Some(Job {
                index: i,
                policy: r.policy.as_str(),
                spread: r.measures.get("ff_spread").copied().unwrap_or(0.0),
            }),
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

/// A fast-forwarded co-run job a check may pick.
#[derive(Clone, Copy, Debug)]
struct Job<'a> {
    /// In the plan's job list.
    index: usize,
    policy: &'a str,
    /// Its `ff_spread` measure (0 without co-run jumps).
    spread: f64,
}

/// `n` of the jobs `all`, in job order: the policies (in order of first appearance) take
/// one each in turn while they have jobs left, and each policy's share is [`riskiest_first`]
/// among its jobs.
fn by_policy(all: &[Job], n: usize) -> Vec<usize> {
    let mut groups: Vec<(&str, Vec<(usize, f64)>)> = Vec::new();
    for j in all {
        match groups.iter_mut().find(|g| g.0 == j.policy) {
            Some(g) => g.1.push((j.index, j.spread)),
            None => groups.push((j.policy, vec![(j.index, j.spread)])),
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
        .flat_map(|(g, t)| riskiest_first(&g.1, t))
        .collect();
    pick.sort_unstable();
    pick
}

/// `n` of `jobs` (index, spread): the one with the largest spread (the earliest of equals),
/// when any has one, then `n - 1` evenly spaced among the rest; without spreads, `n`
/// evenly spaced. A sample that always holds the least steady jump's run makes the
/// largest difference it reports an estimate of the worst, not of the typical, run.
fn riskiest_first(jobs: &[(usize, f64)], n: usize) -> Vec<usize> {
    let mut all: Vec<usize> = jobs.iter().map(|j| j.0).collect();
    let worst = (0..jobs.len()).filter(|&k| jobs[k].1 > 0.0).reduce(|b, k| {
        if jobs[k].1 > jobs[b].1 {
            k
        } else {
            b
        }
    });
    match worst {
        Some(k) if n > 0 => {
            let first = all.remove(k);
            std::iter::once(first).chain(sample(&all, n - 1)).collect()
        }
        _ => sample(&all, n),
    }
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
    use super::{by_policy, riskiest_first, sample, Job};

    fn jobs<'a>(list: &[(usize, &'a str, f64)]) -> Vec<Job<'a>> {
        list.iter()
            .map(|&(index, policy, spread)| Job {
                index,
                policy,
                spread,
            })
            .collect()
    }

    #[test]
    fn samples_are_evenly_spaced_and_all_when_few() {
        assert_eq!(sample(&[3, 5, 9], 5), vec![3, 5, 9]);
        assert_eq!(sample(&(0..10).collect::<Vec<_>>(), 3), vec![0, 3, 6]);
        assert!(sample(&[1, 2], 0).is_empty());
    }

    #[test]
    fn every_policy_is_checked_before_any_twice() {
        // A study's jobs: ten of "bp", then ten of "ugpu" (the UGPU paper-scale subset),
        // no co-run spreads: evenly spaced.
        let list: Vec<(usize, &str, f64)> = (0..20)
            .map(|i| (i, if i < 10 { "bp" } else { "ugpu" }, 0.0))
            .collect();
        let all = jobs(&list);
        assert_eq!(by_policy(&all, 2), vec![0, 10]);
        assert_eq!(by_policy(&all, 4), vec![0, 5, 10, 15]);
        // A policy with fewer jobs than its share gives the rest to the others.
        let few = jobs(&[
            (0, "a", 0.0),
            (1, "b", 0.0),
            (2, "b", 0.0),
            (3, "b", 0.0),
            (4, "b", 0.0),
        ]);
        assert_eq!(by_policy(&few, 3), vec![0, 1, 3]);
        assert_eq!(by_policy(&few, 9), vec![0, 1, 2, 3, 4]);
        assert!(by_policy(&few, 0).is_empty());
    }

    #[test]
    fn the_least_steady_jump_of_each_policy_is_checked_first() {
        // bp's job 7 and ugpu's job 13 moved most across their measured spans (the ugpu
        // lbm + cp kind of run: 27.5% where the others moved 1-3%).
        let list: Vec<(usize, &str, f64)> = (0..20)
            .map(|i| {
                let spread = match i {
                    7 => 0.09,
                    13 => 0.275,
                    _ => 0.01 + i as f64 / 1000.0,
                };
                (i, if i < 10 { "bp" } else { "ugpu" }, spread)
            })
            .collect();
        let all = jobs(&list);
        assert_eq!(by_policy(&all, 2), vec![7, 13]);
        // The rest of a policy's share evenly spaced among its other jobs.
        assert_eq!(by_policy(&all, 4), vec![0, 7, 10, 13]);
        assert_eq!(riskiest_first(&[(4, 0.0), (5, 0.3), (6, 0.3)], 1), vec![5]);
        assert_eq!(riskiest_first(&[(4, 0.0), (5, 0.0)], 1), vec![4]);
        assert_eq!(riskiest_first(&[(4, 0.0), (5, 0.2)], 2), vec![5, 4]);
        assert!(riskiest_first(&[(4, 0.1)], 0).is_empty());
    }
}

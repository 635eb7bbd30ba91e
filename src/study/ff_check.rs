//! `study --ff-check N`: the error of the run just made. Of a study's co-run jobs that
//! fast-forward skipped cycles in, `N` evenly spaced ones are run again in detail, and
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
    let eligible: Vec<usize> = outputs
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, JobOutput::Run(r) if skipped(r) > 0.0))
        .map(|(i, _)| i)
        .collect();
    let pick = sample(&eligible, n);
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
    use super::sample;

    #[test]
    fn samples_are_evenly_spaced_and_all_when_few() {
        assert_eq!(sample(&[3, 5, 9], 5), vec![3, 5, 9]);
        assert_eq!(sample(&(0..10).collect::<Vec<_>>(), 3), vec![0, 3, 6]);
        assert!(sample(&[1, 2], 0).is_empty());
    }
}

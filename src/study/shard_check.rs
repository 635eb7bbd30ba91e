//! What `merge` checks in a shard beyond its header (issue 44): a damaged but
//! self-consistent shard is refused, naming the file and what is wrong. The outlines must
//! describe a plan (at least one point, each with workloads and policies, sweep points as
//! `key=value` overrides, workloads of benchmarks the point ran alone); every policy-run
//! job must be the run its outline names (policy, applications, alone references); every
//! number must be finite and in its range (cycles > 0 wherever instructions ran). The
//! derived metrics of a run (progress, slowdown, IPC, STP, ANTT, fairness, combined IPC)
//! are recomputed from its counts, never taken from the file.

use super::plan::{JobOutput, Outline};
use crate::error::Error;
use crate::metrics::{summarize, AloneResult, PolicyRun, Progress};
use crate::policy::PolicySpec;

/// Checks the outlines of a shard (`name` for messages): bad input when damaged.
pub(super) fn check_outlines(name: &str, outlines: &[Outline]) -> Result<(), Error> {
    outline_problem(name, outlines).map_err(Error::Usage)
}

fn outline_problem(name: &str, outlines: &[Outline]) -> Result<(), String> {
    let bad = |what: String| Err(format!("{name}: {what}: a damaged shard file"));
    if outlines.is_empty() {
        return bad("its plan has no study point (no outlines)".into());
    }
    for (k, o) in outlines.iter().enumerate() {
        let at = format!("study point {} [{}]", k + 1, o.point.join(", "));
        if outlines.len() > 1 && o.point.is_empty() {
            return bad(format!("{at} of a sweep has no overrides"));
        }
        if let Some(p) = o.point.iter().find(|p| {
            p.split_once('=')
                .is_none_or(|(k, v)| k.trim().is_empty() || v.trim().is_empty())
        }) {
            return bad(format!("{at}: `{p}` is not a `key=value` model override"));
        }
        if o.tasks.is_empty() {
            return bad(format!("{at} has no workload"));
        }
        for t in &o.tasks {
            if t.apps.is_empty() || t.policies.is_empty() {
                return bad(format!(
                    "{at}: workload `{}` has no {}",
                    t.name,
                    if t.apps.is_empty() {
                        "application"
                    } else {
                        "policy"
                    }
                ));
            }
            if let Some(a) = t.apps.iter().find(|a| alone(o, a).is_none()) {
                return bad(format!(
                    "{at}: workload `{}` runs `{a}`, which the point did not run alone",
                    t.name
                ));
            }
        }
        let f = &o.head.figures;
        let sets = PolicySpec::figure_set_names();
        if !(f.is_empty() || sets.contains(&f.as_str())) {
            return bad(format!(
                "{at}: figures = {f:?} is not a figure set (expected one of {})",
                sets.join(", ")
            ));
        }
        for a in &o.head.alone {
            check_alone(a).or_else(|w| bad(format!("{at}: alone run of `{}`: {w}", a.name)))?;
        }
        for c in &o.head.curves {
            if let Some(&(n, v)) = c.points.iter().find(|p| !(p.1.is_finite() && p.1 >= 0.0)) {
                return bad(format!(
                    "{at}: curve of `{}` at {n} CTAs is {}",
                    c.name,
                    crate::error::num(v)
                ));
            }
        }
    }
    Ok(())
}

fn alone<'a>(o: &'a Outline, name: &str) -> Option<&'a AloneResult> {
    o.head.alone.iter().find(|a| a.name == name)
}

/// A finite, non-negative number, or why not.
fn sane(what: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{what} is {}; expected a finite number >= 0",
            crate::error::num(v)
        ))
    }
}

fn check_alone(a: &AloneResult) -> Result<(), String> {
    if a.warp_insts > 0 && a.cycles == 0 {
        return Err(format!("{} instructions in 0 cycles", a.warp_insts));
    }
    for (what, v) in [
        ("ipc", a.ipc),
        ("l2_mpki", a.l2_mpki),
        ("isu", a.isu),
        ("fp32_util", a.fp32_util),
        ("mem_intensity", a.mem_intensity),
    ] {
        sane(what, v)?;
    }
    Ok(())
}

/// Checks job `j`'s output against its outline `o` (job `i` of that point) and
/// recomputes a policy run's derived metrics.
pub(super) fn check_job(
    name: &str,
    j: usize,
    o: &Outline,
    i: usize,
    out: &mut JobOutput,
) -> Result<(), Error> {
    job_problem(name, j, o, i, out).map_err(Error::Usage)
}

fn job_problem(
    name: &str,
    j: usize,
    o: &Outline,
    i: usize,
    out: &mut JobOutput,
) -> Result<(), String> {
    let bad = |what: String| Err(format!("{name}: job {j}: {what}: a damaged shard file"));
    match out {
        JobOutput::Run(r) => {
            // Job i of a point's runs: task-major, policy-minor.
            let mut k = i;
            let Some(t) = o.tasks.iter().find(|t| {
                let here = k < t.policies.len();
                if !here {
                    k -= t.policies.len();
                }
                here
            }) else {
                return bad("a policy run where the plan has another kind of job".into());
            };
            let at = format!("workload {} under {}", t.name, t.policies[k]);
            if r.policy != t.policies[k] {
                return bad(format!("{at}: the run is of policy `{}`", r.policy));
            }
            let apps: Vec<&str> = r.apps.iter().map(|a| a.name.as_str()).collect();
            if apps != t.apps {
                return bad(format!("{at}: the run is of [{}]", apps.join(", ")));
            }
            check_run(o, r).or_else(|w| bad(format!("{at}: {w}")))
        }
        JobOutput::Curve(v) => sane("the curve point's IPC", *v).or_else(&bad),
        JobOutput::Solo(s) => match s.value {
            Some(v) if !v.is_finite() => bad(format!(
                "solo run value is {}; expected a finite number",
                crate::error::num(v)
            )),
            _ => Ok(()),
        },
        JobOutput::Slice(s) => sane("slice IPC", s.ipc)
            .and_then(|_| sane("slice alone IPC", s.alone_ipc))
            .or_else(bad),
    }
}

/// One policy run: counts consistent, rates in range, derived metrics recomputed.
fn check_run(o: &Outline, r: &mut PolicyRun) -> Result<(), String> {
    if r.runs == 0 {
        return Err("0 runs".into());
    }
    let mut progress = Vec::with_capacity(r.apps.len());
    for a in &mut r.apps {
        let Some(ref_) = alone(o, &a.name) else {
            return Err(format!("`{}` was not run alone", a.name));
        };
        if (a.alone_warp_insts, a.alone_cycles) != (ref_.warp_insts, ref_.cycles) {
            return Err(format!(
                "`{}`'s alone reference ({} instructions in {} cycles) is not the point's \
                 ({} in {})",
                a.name, a.alone_warp_insts, a.alone_cycles, ref_.warp_insts, ref_.cycles
            ));
        }
        if a.warp_insts > 0 && a.cycles == 0 {
            return Err(format!(
                "`{}`: {} instructions in 0 cycles",
                a.name, a.warp_insts
            ));
        }
        if a.cycles > r.summary.cycles {
            return Err(format!(
                "`{}` ran {} cycles, longer than the run's {}",
                a.name, a.cycles, r.summary.cycles
            ));
        }
        for (what, v) in [
            ("l1_miss_rate", a.l1_miss_rate),
            ("l2_miss_rate", a.l2_miss_rate),
        ] {
            rate(&format!("`{}`'s {what}", a.name), v)?;
        }
        let p = Progress {
            warp_insts: a.warp_insts,
            cycles: a.cycles,
            alone_warp_insts: a.alone_warp_insts,
            alone_cycles: a.alone_cycles,
        };
        a.progress = p.normalised();
        a.slowdown = p.slowdown();
        a.ipc = p.ipc();
        progress.push(p);
    }
    rate("l1_miss_rate", r.l1_miss_rate)?;
    rate("l2_miss_rate", r.l2_miss_rate)?;
    for (k, v) in &r.measures {
        sane(&format!("measure `{k}`"), *v)?;
    }
    r.summary = summarize(&progress, r.summary.cycles);
    Ok(())
}

/// A rate in [0, 1].
fn rate(what: &str, v: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{what} is {}; expected a rate in [0, 1]",
            crate::error::num(v)
        ))
    }
}

//! Completion-mode studies of multi-tenancy systems (SiM, Slate): workloads in several
//! arrival orders, the policies' offline profiles computed once per benchmark (SiM's
//! time-vs-workers curves, Slate's L/M/H classes), benchmarks alone under a policy's
//! transformation or a parameter sweep, and the paper's own makespan measure.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::spec::{Arrival, StudySpec};
use super::{Loaded, Setup, Task};
use crate::arch::GpuSpec;
use crate::engine::{AppStats, RunMode};
use crate::error::{Error, Result};
use crate::metrics::{BenchCurve, SoloCounters, SoloRun, WorkloadResult};
use crate::policy::{execute, shape, sim, PolicySpec, Workload};

/// Issued warp instructions per scheduler-cycle (nvprof's issue-slot utilisation: a cycle
/// with an issue counts once per scheduler; here a dual-issued pair counts twice), ≤ 1.
pub fn isu(spec: &GpuSpec, a: &AppStats) -> f64 {
    isu_of(spec, a.counters.warp_insts, a.cycles)
}

/// [`isu`] from a run's warp instructions and cycles.
pub fn isu_of(spec: &GpuSpec, warp_insts: u64, cycles: u64) -> f64 {
    let slots = cycles.max(1) as f64 * spec.sm.count as f64 * spec.sm.schedulers.max(1) as f64;
    (warp_insts as f64 / slots).min(1.0)
}

/// The workload's category under `isu_split`: `low-isu` when an application's ISU alone is
/// below the split, else `high-isu`.
pub fn isu_category(split: f64, benches: &[&Loaded]) -> String {
    if benches.iter().any(|b| b.alone.isu < split) {
        "low-isu".into()
    } else {
        "high-isu".into()
    }
}

/// The tasks of one workload, one per arrival order of the study (orders other than
/// `together` apply to two-application workloads: the second arrives once the first has
/// run `arrival_fraction` of its alone time).
pub fn arrival_tasks(
    st: &StudySpec,
    apps: Vec<String>,
    category: String,
    policies: &[PolicySpec],
    benches: &[Loaded],
) -> Result<Vec<Task>> {
    let find = |n: &str| {
        benches
            .iter()
            .find(|b| b.name == n)
            .ok_or_else(|| Error::Usage(format!("unknown benchmark `{n}`")))
    };
    let orders = if st.arrivals.is_empty() {
        vec![Arrival::Together]
    } else {
        st.arrivals.clone()
    };
    let mut out = Vec::new();
    for o in orders {
        if apps.len() != 2 && o != Arrival::Together {
            // `StudySpec::check` refuses this up front; never drop the workload silently.
            return Err(Error::Usage(format!(
                "workload {}: arrival orders other than together apply to two-application \
                 workloads only",
                apps.join("+")
            )));
        }
        let after = |first: &str| -> Result<u64> {
            Ok((find(first)?.alone.cycles as f64 * st.arrival_fraction).round() as u64)
        };
        let arrivals = match o {
            Arrival::Together => Vec::new(),
            Arrival::AFirst => vec![0, after(&apps[0])?],
            Arrival::BFirst => vec![after(&apps[1])?, 0],
        };
        let name = if apps.len() == 2 {
            apps.join("+") + &o.suffix(&apps[0], &apps[1])
        } else {
            apps.join("+")
        };
        let mut t = Task::new(apps.clone(), category.clone(), policies.to_vec());
        t.arrivals = arrivals;
        t.name = name;
        out.push(t);
    }
    Ok(out)
}

/// Profile table (`APP#K` → cycles per worker count) and one curve per benchmark.
pub type SimProfiles = (BTreeMap<String, Vec<u64>>, Vec<BenchCurve>);

/// SiM's offline profiles of every benchmark (§3.5), with the study's SiM parameters:
/// the profile table for [`sim::SimParams::profiles`] and one Fig. 9 curve per benchmark
/// (cycles summed over its kernels; performance = fastest / cycles; pruned points listed).
pub fn sim_profiles(setup: &Setup, benches: &[Loaded], p: &sim::SimParams) -> Result<SimProfiles> {
    type Table = Vec<(String, Vec<u64>)>;
    let per: Vec<(Table, BenchCurve)> = benches
        .par_iter()
        .map(|b| {
            let (app, _) = sim::transformed(setup.spec, &b.app, p)?;
            let mut table = Vec::new();
            let mut total: Option<Vec<u64>> = None;
            for k in 0..app.kernels.len() {
                let c = sim::profile(setup.spec, &app, k, setup.max_cycles)?;
                total = Some(match total {
                    None => c.clone(),
                    Some(t) => t.iter().zip(&c).map(|(a, b)| a + b).collect(),
                });
                table.push((sim::profile_key(&b.name, k), c));
            }
            let total = total.unwrap_or_default();
            let kept: Vec<u32> = sim::prune(&total).iter().map(|x| x.0).collect();
            let best = total.iter().copied().min().unwrap_or(1).max(1) as f64;
            let curve = BenchCurve {
                name: b.name.clone(),
                class: b.class.clone(),
                max_ctas: total.len() as u32,
                points: total
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| (i as u32 + 1, best / t.max(1) as f64))
                    .collect(),
                pruned: (1..=total.len() as u32)
                    .filter(|c| !kept.contains(c))
                    .collect(),
                need: None,
            };
            Ok((table, curve))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut table = BTreeMap::new();
    let mut curves = Vec::new();
    for (t, c) in per {
        table.extend(t);
        curves.push(c);
    }
    Ok((table, curves))
}

/// A solo job: a variant name, the swept value (if any) and the policy.
pub type SoloJob = (String, Option<f64>, PolicySpec);

/// Benchmark `b` alone under `job` (its transformation, if any), in completion mode.
pub fn solo_run(setup: &Setup, b: &Loaded, job: &SoloJob) -> Result<SoloRun> {
    let (variant, value, spec) = job;
    let apps = [b.app.clone()];
    let w = Workload {
        spec: setup.spec,
        apps: &apps,
        mode: RunMode::Completion,
    };
    let ctx = |e: Error| e.context(format_args!("{} alone under {variant}", b.name));
    let out = execute(spec.build().as_ref(), &w, setup.max_cycles).map_err(ctx)?;
    let alone_regs = b
        .app
        .kernels
        .iter()
        .map(|k| k.info().nregs)
        .max()
        .unwrap_or(0);
    let alone_ctas = shape(setup.spec, &b.app)?.max_ctas;
    let (regs, ctas) = match out.persistent[0] {
        Some(p) => (p.footprint(alone_regs, 0).0, p.workers_per_sm),
        None => (alone_regs, alone_ctas),
    };
    Ok(SoloRun {
        bench: b.name.clone(),
        variant: variant.clone(),
        value: *value,
        cycles: out.stats.apps[0].cycles,
        alone_cycles: b.alone.cycles,
        regs,
        alone_regs,
        ctas_per_sm: ctas,
        alone_ctas_per_sm: alone_ctas,
        counters: Some(SoloCounters::of(&out.stats.apps[0].rates)),
        alone_counters: Some(SoloCounters::of(&b.rates)),
    })
}

/// SiM §4.4's throughput measure, `makespan_speedup` = the reference policy's makespan /
/// each run's (last finish − first start); nothing when the reference did not run.
pub fn makespan_speedup(w: &mut WorkloadResult, reference: &str) {
    let Some(r) = w
        .run(reference)
        .and_then(|r| r.measures.get("makespan").copied())
    else {
        return;
    };
    for run in &mut w.runs {
        if let Some(&m) = run.measures.get("makespan") {
            if m > 0.0 {
                run.measures.insert("makespan_speedup".into(), r / m);
            }
        }
    }
}

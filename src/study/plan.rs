//! A study file as a list of independent jobs. [`prepare`] does what every job needs (the
//! benchmarks' alone references, SiM's profiles, Slate's and UGPU's classes) and lists the
//! jobs of every sweep point; [`Plan::run_job`] runs one job; [`assemble`] builds the
//! results from the plan's [`Outline`]s and the jobs' outputs. A whole run, a shard
//! (`study --shard`) and a merge all go through these three steps, so a merged result is
//! the unsharded one, byte for byte.
//!
//! Job order (what shards split): sweep point by sweep point; within a point, every
//! (workload, policy) run in task-major order, then the occupancy-curve points, the solo
//! runs and the slice-grid runs.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::multitenancy::{self, SoloJob};
use super::{
    assemble_curves, assemble_workloads, curve_ipc, curve_jobs, curve_needs, gather, load,
    scaled_synth, slice_jobs, slice_run, task_run, Bench, Loaded, Mode, Setup, StudySpec, Task,
};
use crate::arch::GpuSpec;
use crate::engine::{AppSpec, FastForward};
use crate::error::{Error, Result};
use crate::metrics::{
    BenchCurve, PolicyRun, SliceRun, SoloRun, StudyResults, SweepPoint, SweepResults,
    SCHEMA_VERSION, SWEEP_KIND,
};
use crate::policy::{PolicySpec, Prep, Prepared};

/// A workload as [`assemble`] needs it: names only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskOutline {
    pub name: String,
    pub apps: Vec<String>,
    pub category: String,
    /// Policy names, in run order.
    pub policies: Vec<String>,
}

impl TaskOutline {
    pub fn of(t: &Task) -> TaskOutline {
        TaskOutline {
            name: t.name(),
            apps: t.apps.clone(),
            category: t.category.clone(),
            policies: t.policies.iter().map(|p| p.name().to_string()).collect(),
        }
    }
}

/// Everything [`assemble`] needs of one prepared sweep point — names, the alone
/// references and the job list, no kernels — serialisable, so that a shard file carries it
/// to `merge`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outline {
    /// The point's model overrides (`dram.channels=16`; empty without a sweep).
    pub point: Vec<String>,
    /// What is known before any job runs: study, config, alone references, model,
    /// roles, figure set, and SiM's profile curves in `curves`; no workloads yet.
    pub head: StudyResults,
    pub tasks: Vec<TaskOutline>,
    /// Occupancy-curve points: (benchmark, class, CTAs per SM).
    pub curve_points: Vec<(String, String, u32)>,
    /// What one CTA of each curve's benchmark takes of an SM (`policy::Need`).
    #[serde(default)]
    pub curve_needs: Vec<(String, [u64; 5])>,
    /// Solo and slice-grid jobs of the point.
    pub solo: usize,
    pub slices: usize,
    /// The policy `makespan_speedup` divides by.
    pub makespan_reference: Option<String>,
}

impl Outline {
    /// Jobs of the point: runs, curve points, solo runs, slice runs.
    pub fn jobs(&self) -> usize {
        self.runs() + self.curve_points.len() + self.solo + self.slices
    }

    fn runs(&self) -> usize {
        self.tasks.iter().map(|t| t.policies.len()).sum()
    }
}

/// One job's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOutput {
    Run(PolicyRun),
    Curve(f64),
    Solo(SoloRun),
    Slice(SliceRun),
}

/// One sweep point, ready to run its jobs.
struct Point {
    outline: Outline,
    spec: GpuSpec,
    mode: Mode,
    max_cycles: u64,
    fast_forward: Option<FastForward>,
    curve_window: u64,
    benches: Vec<Loaded>,
    tasks: Vec<Task>,
    task_jobs: Vec<(usize, usize)>,
    curve_jobs: Vec<(usize, u32)>,
    solo_jobs: Vec<(usize, usize)>,
    solo_specs: Vec<SoloJob>,
    slice_jobs: Vec<(usize, u32, u32)>,
}

/// A prepared study: its sweep points and their jobs.
pub struct Plan {
    /// The study as read (with the effective fast-forward choice).
    pub study: StudySpec,
    points: Vec<Point>,
}

impl Plan {
    /// All jobs, over every point.
    pub fn jobs(&self) -> usize {
        self.points.iter().map(|p| p.outline.jobs()).sum()
    }

    pub fn outlines(&self) -> Vec<Outline> {
        self.points.iter().map(|p| p.outline.clone()).collect()
    }

    /// Runs job `i` (of [`Plan::jobs`]).
    pub fn run_job(&self, job: usize) -> Result<JobOutput> {
        self.run_job_ff(job, true)
    }

    /// Runs job `i` with the study's fast-forward choice, or (`ff` false) in detail.
    pub fn run_job_ff(&self, job: usize, ff: bool) -> Result<JobOutput> {
        let mut i = job;
        for p in &self.points {
            if i < p.outline.jobs() {
                return p.run(i, ff);
            }
            i -= p.outline.jobs();
        }
        Err(Error::Usage(format!(
            "job {job} is past the study's {} jobs",
            self.jobs()
        )))
    }

    /// Runs the jobs `which` in parallel (a progress tick per finished job); the outputs
    /// in the order of `which`. Every job runs before cap hits are reported together.
    pub fn run_jobs(
        &self,
        which: &[usize],
        progress: &(dyn Fn(&str, usize, usize) + Sync),
    ) -> Result<Vec<JobOutput>> {
        let done = AtomicUsize::new(0);
        let total = which.len();
        progress("runs", 0, total);
        let out: Vec<Result<JobOutput>> = which
            .par_iter()
            .map(|&i| {
                let r = self.run_job(i);
                progress("runs", done.fetch_add(1, Ordering::Relaxed) + 1, total);
                r
            })
            .collect();
        gather(out)
    }
}

impl Point {
    fn setup<'a>(&'a self, none: &'a (dyn Fn(usize, usize) + Sync), ff: bool) -> Setup<'a> {
        Setup {
            spec: &self.spec,
            mode: self.mode,
            max_cycles: self.max_cycles,
            fast_forward: self.fast_forward.filter(|_| ff),
            progress: none,
        }
    }

    fn run(&self, mut i: usize, ff: bool) -> Result<JobOutput> {
        let none = |_: usize, _: usize| {};
        let setup = self.setup(&none, ff);
        if let Some(&(t, p)) = self.task_jobs.get(i) {
            return task_run(&setup, &self.benches, &self.tasks[t], p).map(JobOutput::Run);
        }
        i -= self.task_jobs.len();
        if let Some(&(b, c)) = self.curve_jobs.get(i) {
            let app = &self.benches[b].app;
            return curve_ipc(&self.spec, self.curve_window, self.max_cycles, app, c)
                .map(JobOutput::Curve);
        }
        i -= self.curve_jobs.len();
        if let Some(&(j, b)) = self.solo_jobs.get(i) {
            return multitenancy::solo_run(&setup, &self.benches[b], &self.solo_specs[j])
                .map(JobOutput::Solo);
        }
        i -= self.solo_jobs.len();
        match self.slice_jobs.get(i) {
            Some(&(b, s, c)) => slice_run(&setup, &self.benches[b], s, c).map(JobOutput::Slice),
            None => Err(Error::internal(format!("job {i} is past the point's jobs"))),
        }
    }
}

/// The results of a study file: one result set, or one per point of a model sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum StudyOutput {
    Study(Box<StudyResults>),
    Sweep(SweepResults),
}

/// Reads a study file and prepares every sweep point: loads the benchmarks, runs them
/// alone, computes the study-wide profiles and lists the jobs. `fast_forward`:
/// `Some(Some(_))` on, `Some(None)` off, `None` as the study file says.
pub fn prepare(
    path: &Path,
    fast_forward: Option<Option<FastForward>>,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<Plan> {
    let mut st = StudySpec::load(path)?;
    st.fast_forward = fast_forward.unwrap_or(st.fast_forward);
    let base = GpuSpec::resolve(&st.gpu)?;
    let points = st
        .sweep_points()
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    let inputs = open_benches(&st)?;
    let mut out = Vec::with_capacity(points.len());
    for (k, point) in points.into_iter().enumerate() {
        let spec = base.with_overrides(&point).map_err(|e| {
            Error::Usage(format!(
                "{}: sweep point {} ({}): {e}",
                path.display(),
                k + 1,
                point.join(", ")
            ))
        })?;
        out.push(prepare_point(&st, spec, point, inputs.clone(), progress)?);
    }
    Ok(Plan {
        study: st,
        points: out,
    })
}

/// The benchmarks the groups use, opened (scaled when the study says so).
fn open_benches(st: &StudySpec) -> Result<Vec<(String, String, AppSpec)>> {
    let opts = crate::trace::accel::ParseOptions::default();
    let mut used: Vec<&Bench> = Vec::new();
    for g in &st.groups {
        for n in g.a.iter().chain(&g.b) {
            if !used.iter().any(|b| &b.name == n) {
                if let Some(b) = st.benches.iter().find(|b| &b.name == n) {
                    used.push(b);
                }
            }
        }
    }
    let mut inputs = Vec::new();
    for b in &used {
        let kernels = if st.grid_scale == 1 {
            crate::trace::app::open_app(&b.path, &opts)?.kernels
        } else {
            vec![scaled_synth(&b.path, st.grid_scale)?]
        };
        inputs.push((
            b.name.clone(),
            b.class.clone(),
            AppSpec::new(b.name.clone(), kernels),
        ));
    }
    Ok(inputs)
}

fn prepare_point(
    st: &StudySpec,
    spec: GpuSpec,
    point: Vec<String>,
    inputs: Vec<(String, String, AppSpec)>,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<Point> {
    let none = |_: usize, _: usize| {};
    let setup = Setup {
        spec: &spec,
        mode: st.mode(),
        max_cycles: st.max_cycles,
        fast_forward: st.fast_forward,
        progress: &none,
    };
    progress("alone runs", 0, inputs.len());
    let mut benches = load(&setup, inputs)?;
    let (prepared, sim_curves) = prepare_declared(st, &setup, &mut benches, progress)?;
    if let Some(x) = st.isu_split {
        for b in &mut benches {
            b.alone.label = if b.alone.isu < x {
                "low-isu"
            } else {
                "high-isu"
            }
            .into();
        }
    }
    let tasks = tasks(st, &spec, &benches, &prepared)?;
    let mut solo_specs: Vec<SoloJob> = Vec::new();
    for p in &st.solo {
        solo_specs.push((p.clone(), None, st.policy(p)?));
    }
    if let Some(sw) = &st.solo_sweep {
        for &v in &sw.values {
            solo_specs.push((
                format!("{} {}={v}", sw.policy, sw.key),
                Some(v as f64),
                st.swept(v)?,
            ));
        }
    }
    for j in &mut solo_specs {
        j.2.take_prepared(&prepared);
    }
    let task_jobs: Vec<(usize, usize)> = tasks
        .iter()
        .enumerate()
        .flat_map(|(t, task)| (0..task.policies.len()).map(move |p| (t, p)))
        .collect();
    let curve_jobs = if st.curve_window > 0 {
        curve_jobs(&spec, &benches)?
    } else {
        Vec::new()
    };
    let solo_jobs: Vec<(usize, usize)> = (0..solo_specs.len())
        .flat_map(|j| (0..benches.len()).map(move |b| (j, b)))
        .collect();
    let slice_jobs = match &st.slice_grid {
        Some(g) => slice_jobs(&setup, &benches, g)?,
        None => Vec::new(),
    };
    let head = StudyResults {
        schema_version: SCHEMA_VERSION,
        study: st.name.clone(),
        config: serde_json::to_value(st)
            .map_err(|e| Error::internal(format!("cannot record the study file: {e}")))?,
        alone: benches.iter().map(|b| b.alone.clone()).collect(),
        curves: sim_curves,
        workloads: Vec::new(),
        model: spec.clone(),
        baseline: st.baseline.clone().unwrap_or_default(),
        proposed: st.proposed.clone(),
        solo: Vec::new(),
        figures: st.figures.clone().unwrap_or_default(),
        slices: Vec::new(),
        ff_check: None,
    };
    let outline = Outline {
        point,
        head,
        tasks: tasks.iter().map(TaskOutline::of).collect(),
        curve_points: curve_jobs
            .iter()
            .map(|&(b, c)| (benches[b].name.clone(), benches[b].class.clone(), c))
            .collect(),
        curve_needs: if curve_jobs.is_empty() {
            Vec::new()
        } else {
            curve_needs(&spec, &benches)?
        },
        solo: solo_jobs.len(),
        slices: slice_jobs.len(),
        makespan_reference: st.makespan_reference.clone(),
    };
    Ok(Point {
        outline,
        mode: st.mode(),
        max_cycles: st.max_cycles,
        fast_forward: st.fast_forward,
        curve_window: st.curve_window,
        spec,
        benches,
        tasks,
        task_jobs,
        curve_jobs,
        solo_jobs,
        solo_specs,
        slice_jobs,
    })
}

/// What the registry declares for the study ([`Prep`]): each policy the study runs gets
/// its preparation, in registry order, then the figure set the study draws gets its own.
/// Labels land in the benchmarks' alone results; SiM's profile curves are returned
/// beside what the policies take.
fn prepare_declared(
    st: &StudySpec,
    setup: &Setup,
    benches: &mut [Loaded],
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<(Prepared, Vec<BenchCurve>)> {
    let mut todo: Vec<(Prep, &str)> = PolicySpec::ENTRIES
        .iter()
        .filter(|e| e.prep != Prep::None && st.runs(e.name))
        .map(|e| (e.prep, e.name))
        .collect();
    if let Some(f) = st.figures.as_deref() {
        if let Some((_, prep)) = PolicySpec::figure_set(f).filter(|x| x.1 != Prep::None) {
            todo.push((prep, f));
        }
    }
    let mut done = (Prepared::default(), Vec::new());
    for (prep, name) in todo {
        run_prep(prep, &st.policy(name)?, setup, benches, &mut done, progress)?;
    }
    Ok(done)
}

/// One preparation `prep` declared by (or for the figure set of) policy `spec`; what it
/// gives lands in `prepared` and (SiM's profiles) `curves`.
fn run_prep(
    prep: Prep,
    spec: &PolicySpec,
    setup: &Setup,
    benches: &mut [Loaded],
    (prepared, curves): &mut (Prepared, Vec<BenchCurve>),
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<()> {
    match (prep, spec) {
        (Prep::None, _) => {}
        (Prep::SimProfiles, PolicySpec::Sim(p)) => {
            progress("SiM profiles", 0, benches.len());
            (prepared.profiles, *curves) = multitenancy::sim_profiles(setup, benches, p)?;
        }
        (Prep::SlateClasses, PolicySpec::Slate(p)) => {
            for b in benches.iter_mut() {
                let label = p
                    .classify((b.alone.fp32_util, b.alone.mem_intensity))
                    .label();
                b.alone.label = label.clone();
                prepared.classes.insert(b.name.clone(), label);
            }
        }
        (Prep::UgpuClasses, _) => {
            for b in benches.iter_mut() {
                b.alone.label =
                    crate::policy::ugpu::alone_class(setup.spec, &b.counters, b.alone.cycles);
            }
        }
        (prep, _) => {
            return Err(Error::internal(format!(
                "the registry declares {prep:?} for policy {}, whose parameters it cannot use",
                spec.name()
            )))
        }
    }
    Ok(())
}

/// Every group's workloads, in each arrival order, with the study's policies.
fn tasks(
    st: &StudySpec,
    spec: &GpuSpec,
    benches: &[Loaded],
    prepared: &Prepared,
) -> Result<Vec<Task>> {
    let find = |n: &str| -> Result<&Loaded> {
        benches
            .iter()
            .find(|b| b.name == n)
            .ok_or_else(|| Error::Usage(format!("unknown benchmark `{n}`")))
    };
    let mut tasks = Vec::new();
    for g in &st.groups {
        let mut policies = st.policies_of(g)?;
        for p in &mut policies {
            p.take_prepared(prepared);
        }
        let all = super::spec::is_all(g.policies.as_deref().unwrap_or(&st.policies));
        for apps in g.workloads() {
            let policies = if all {
                applicable(st, spec, &apps, benches, &policies)?
            } else {
                policies.clone()
            };
            let category = match st.isu_split {
                Some(x) => {
                    let bs = apps.iter().map(|n| find(n)).collect::<Result<Vec<_>>>()?;
                    multitenancy::isu_category(x, &bs)
                }
                None => g.name.clone(),
            };
            tasks.extend(multitenancy::arrival_tasks(
                st, apps, category, &policies, benches,
            )?);
        }
    }
    Ok(tasks)
}

/// The policies of a `policies = ["all"]` list that can run workload `apps` in the study's
/// mode ([`crate::policy::Policy::applies`]); each one skipped is said on stderr with the
/// reason, as `analyze --policies all` does.
fn applicable(
    st: &StudySpec,
    spec: &GpuSpec,
    apps: &[String],
    benches: &[Loaded],
    policies: &[PolicySpec],
) -> Result<Vec<PolicySpec>> {
    let specs = apps
        .iter()
        .map(|n| {
            benches
                .iter()
                .find(|b| &b.name == n)
                .map(|b| b.app.clone())
                .ok_or_else(|| Error::Usage(format!("unknown benchmark `{n}`")))
        })
        .collect::<Result<Vec<AppSpec>>>()?;
    let w = crate::policy::Workload {
        spec,
        apps: &specs,
        mode: match st.mode() {
            Mode::Completion => crate::engine::RunMode::Completion,
            Mode::Budget { .. } => crate::engine::RunMode::Budget(vec![1; specs.len()]),
            Mode::Window { window } => crate::engine::RunMode::Window(window),
        },
    };
    let mut kept = Vec::new();
    for p in policies {
        match p.build().applies(&w) {
            Ok(()) => kept.push(p.clone()),
            Err(why) => eprintln!(
                "policy {} skipped for workload {}: {why}",
                p.name(),
                apps.join("+")
            ),
        }
    }
    Ok(kept)
}

/// The results from the points' outlines and every job's output, in job order.
pub fn assemble(outlines: &[Outline], outputs: Vec<JobOutput>) -> Result<StudyOutput> {
    let want: usize = outlines.iter().map(Outline::jobs).sum();
    if outputs.len() != want {
        return Err(Error::Usage(format!(
            "{} job results for a study of {want} jobs",
            outputs.len()
        )));
    }
    if let [o] = outlines {
        if o.point.is_empty() {
            return Ok(StudyOutput::Study(Box::new(assemble_point(o, outputs)?)));
        }
    }
    let mut it = outputs.into_iter();
    let mut points = Vec::with_capacity(outlines.len());
    for o in outlines {
        let mine: Vec<JobOutput> = it.by_ref().take(o.jobs()).collect();
        points.push(SweepPoint {
            overrides: o.point.clone(),
            results: assemble_point(o, mine)?,
        });
    }
    Ok(StudyOutput::Sweep(SweepResults {
        kind: SWEEP_KIND.into(),
        schema_version: SCHEMA_VERSION,
        study: points
            .first()
            .map(|p| p.results.study.clone())
            .unwrap_or_default(),
        points,
    }))
}

fn assemble_point(o: &Outline, outputs: Vec<JobOutput>) -> Result<StudyResults> {
    let bad = |what: &str, i: usize| {
        Error::Usage(format!(
            "job {i} of study point [{}] is not a {what} result",
            o.point.join(", ")
        ))
    };
    let mut it = outputs.into_iter().enumerate();
    let mut runs = Vec::new();
    for (i, x) in it.by_ref().take(o.runs()) {
        match x {
            JobOutput::Run(r) => runs.push(r),
            _ => return Err(bad("policy-run", i)),
        }
    }
    let mut ipcs = Vec::new();
    for (i, x) in it.by_ref().take(o.curve_points.len()) {
        match x {
            JobOutput::Curve(v) => ipcs.push(v),
            _ => return Err(bad("curve", i)),
        }
    }
    let mut solo = Vec::new();
    for (i, x) in it.by_ref().take(o.solo) {
        match x {
            JobOutput::Solo(v) => solo.push(v),
            _ => return Err(bad("solo", i)),
        }
    }
    let mut slices = Vec::new();
    for (i, x) in it.by_ref().take(o.slices) {
        match x {
            JobOutput::Slice(v) => slices.push(v),
            _ => return Err(bad("slice-grid", i)),
        }
    }
    let mut r = o.head.clone();
    let mut workloads = assemble_workloads(&o.tasks, runs);
    if let Some(m) = &o.makespan_reference {
        for w in &mut workloads {
            multitenancy::makespan_speedup(w, m);
        }
    }
    r.workloads = workloads;
    let mut curves = assemble_curves(&o.curve_points, &ipcs, &o.curve_needs);
    curves.append(&mut r.curves);
    r.curves = curves;
    r.solo = solo;
    r.slices = slices;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every preparation the registry declares, for a policy or for its figure set, is one
    /// the study knows how to make with that policy's parameters.
    #[test]
    fn every_declared_preparation_runs_with_its_policy() {
        let spec = GpuSpec::builtin("fermi-ws").unwrap();
        let none = |_: usize, _: usize| {};
        let setup = Setup {
            spec: &spec,
            mode: Mode::Completion,
            max_cycles: 1_000_000,
            fast_forward: None,
            progress: &none,
        };
        let quiet = |_: &str, _: usize, _: usize| {};
        let mut declared = 0;
        for e in PolicySpec::ENTRIES {
            let p = PolicySpec::from_name(e.name).unwrap();
            for prep in [e.prep, e.figure_prep] {
                let mut done = (Prepared::default(), Vec::new());
                run_prep(prep, &p, &setup, &mut [], &mut done, &quiet)
                    .unwrap_or_else(|err| panic!("{}: {prep:?}: {err}", e.name));
                declared += usize::from(prep != Prep::None);
            }
        }
        assert!(declared >= 3, "{declared} preparations declared");
        // A preparation declared for a policy whose parameters it cannot use is a bug.
        let wrong = PolicySpec::from_name(crate::policy::names::Slate).unwrap();
        let mut done = (Prepared::default(), Vec::new());
        let err = run_prep(
            Prep::SimProfiles,
            &wrong,
            &setup,
            &mut [],
            &mut done,
            &quiet,
        );
        assert!(err.is_err());
    }
}

//! Studies: every policy on every workload of a study file (or of one `analyze` request),
//! against alone runs on the same model, in parallel (rayon) with a progress bar; the
//! result is a [`StudyResults`] saved as `metrics.json`, from which `report` draws the
//! figures.
//!
//! Run mode (Warped-Slicer §V): each benchmark first runs alone for a window of cycles;
//! the instructions it executes become its budget; in a shared run each application runs
//! until it reaches its budget and is then halted, its resources going to the others. The
//! reference for normalised progress is the alone window. With `Mode::Completion` every
//! application instead runs its kernels once and the reference is its alone completion.

pub mod ff_check;
pub mod file;
pub mod interference;
pub mod multitenancy;
pub mod plan;
pub mod queue;
pub mod queue_study;
pub mod shard;
pub mod shard_check;
pub mod spec;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::arch::GpuSpec;
use crate::engine::{
    self, AppPlacement, AppSpec, AppStats, FastForward, Placement, RunConfig, RunMode, RunStats,
};
use crate::error::{Error, Result};
use crate::metrics::{
    summarize, AloneResult, AppResult, BenchCurve, PolicyRun, Progress, SliceRun, Stalls,
    WorkloadResult,
};
use crate::policy::oracle;
use crate::policy::{execute_with, shape, PolicySpec, Workload};
pub use file::{run_study, run_study_file, run_study_file_checked, run_study_with};
pub use plan::StudyOutput;
pub use spec::{Bench, Group, GroupKind, StudySpec};

/// The output folder a study file names with `out`: relative to the study file's folder
/// `dir`, and inside it. An absolute `out`, one whose `..` climb out of that folder, or
/// one holding a NUL is refused (exit 2) naming the key and the file. (`--out` on the
/// command line is the user's explicit choice and is not checked here.)
pub fn study_out(file: &Path, dir: &Path, out: &Path) -> Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    use std::path::Component;
    let bad = |why: &str| {
        Error::input(
            file,
            None,
            format!(
                "`out = {:?}` {why}; expected a folder inside the study file's folder \
                 (or give --out on the command line)",
                out.display()
                    .to_string()
                    .chars()
                    .take(80)
                    .collect::<String>()
            ),
        )
    };
    if out.as_os_str().as_bytes().contains(&0) {
        return Err(bad("holds a NUL character"));
    }
    let mut depth = 0usize;
    for c in out.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => return Err(bad("is an absolute path")),
            Component::CurDir => {}
            Component::ParentDir => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| bad("leaves the study file's folder"))?
            }
            // NAME_MAX of Linux file systems.
            Component::Normal(n) if n.len() > 255 => {
                return Err(bad("names a folder longer than 255 bytes"))
            }
            Component::Normal(_) => depth += 1,
        }
    }
    Ok(dir.join(out))
}

/// How long applications run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Budget = instructions executed alone in `window` cycles.
    Budget { window: u64 },
    /// Each application runs its kernels once.
    Completion,
    /// Every run lasts `window` cycles, applications relaunched when they finish (UGPU
    /// §5); progress is IPC over the window against IPC alone over the same window.
    Window { window: u64 },
}

impl Mode {
    /// The window of cycles, if the mode has one (not in completion mode).
    pub fn window(self) -> Option<u64> {
        match self {
            Mode::Budget { window } | Mode::Window { window } => Some(window),
            Mode::Completion => None,
        }
    }

    /// The engine's run mode for a shared run of `benches`.
    pub fn run_mode(self, benches: &[&Loaded]) -> RunMode {
        match self {
            Mode::Budget { .. } => {
                RunMode::Budget(benches.iter().map(|b| b.alone.warp_insts).collect())
            }
            Mode::Completion => RunMode::Completion,
            Mode::Window { window } => RunMode::Window(window),
        }
    }
}

/// A benchmark ready to run, with its alone reference.
pub struct Loaded {
    pub name: String,
    pub class: String,
    pub app: AppSpec,
    pub alone: AloneResult,
    /// The alone run's counters.
    pub counters: crate::engine::Counters,
    /// The alone run's rates.
    pub rates: crate::engine::stats::Rates,
}

/// A workload to run under some policies.
pub struct Task {
    pub apps: Vec<String>,
    pub category: String,
    pub policies: Vec<PolicySpec>,
    /// Arrival cycle per application (empty: all at 0).
    pub arrivals: Vec<u64>,
    /// Workload name (empty: the applications joined by `+`).
    pub name: String,
}

impl Task {
    pub fn new(apps: Vec<String>, category: String, policies: Vec<PolicySpec>) -> Task {
        Task {
            apps,
            category,
            policies,
            arrivals: Vec::new(),
            name: String::new(),
        }
    }
    fn name(&self) -> String {
        if self.name.is_empty() {
            self.apps.join("+")
        } else {
            self.name.clone()
        }
    }
}

/// The engine setting shared by every run of a study.
pub struct Setup<'a> {
    pub spec: &'a GpuSpec,
    pub mode: Mode,
    pub max_cycles: u64,
    /// Steady-state fast-forward for the alone references and the workload runs
    /// (`None`: every cycle simulated).
    pub fast_forward: Option<FastForward>,
    /// Called after each finished (workload, policy) pair with (done, total).
    pub progress: &'a (dyn Fn(usize, usize) + Sync),
}

/// Runs `app` alone in `mode` under the constraints `place` (an SM subset, a CTA quota);
/// returns its statistics and its reference cycles: the window in budget mode, its own
/// completion time otherwise. Without a quota the kernel is spread evenly over its SMs.
fn run_alone(
    spec: &GpuSpec,
    mode: Mode,
    max_cycles: u64,
    app: &AppSpec,
    place: AppPlacement,
    fast_forward: Option<FastForward>,
) -> Result<(AppStats, u64)> {
    let mut placement = Placement::left_over(1);
    placement.spread_alone = place.cta_quota.is_none();
    placement.apps[0] = place;
    let cfg = RunConfig {
        mode: match mode {
            Mode::Budget { window } | Mode::Window { window } => RunMode::Window(window),
            Mode::Completion => RunMode::Completion,
        },
        placement,
        sample_every: 0,
        max_cycles,
        fast_forward,
    };
    let a = engine::run_static(spec, std::slice::from_ref(app), &cfg)?
        .apps
        .swap_remove(0);
    let cycles = mode.window().unwrap_or(a.cycles);
    Ok((a, cycles))
}

/// Warp instructions per reference cycle of [`run_alone`].
fn alone_ipc(
    spec: &GpuSpec,
    mode: Mode,
    max_cycles: u64,
    app: &AppSpec,
    place: AppPlacement,
    fast_forward: Option<FastForward>,
) -> Result<f64> {
    let (a, cycles) = run_alone(spec, mode, max_cycles, app, place, fast_forward)?;
    Ok(a.counters.warp_insts as f64 / cycles.max(1) as f64)
}

/// L2 sector accesses over one per slice and core cycle.
fn l2_util(spec: &GpuSpec, c: &crate::engine::Counters, cycles: u64) -> f64 {
    let slices = (spec.dram.channels * spec.l2.slices_per_channel).max(1) as f64;
    c.l2_accesses as f64 / (slices * cycles.max(1) as f64)
}

/// Runs each benchmark alone (in parallel) and records its reference.
pub fn load(setup: &Setup, benches: Vec<(String, String, AppSpec)>) -> Result<Vec<Loaded>> {
    benches
        .into_par_iter()
        .map(|(name, class, app)| {
            let (a, cycles) = run_alone(
                setup.spec,
                setup.mode,
                setup.max_cycles,
                &app,
                AppPlacement::default(),
                setup.fast_forward,
            )
            .map_err(|e| e.context(format_args!("alone run of {name}")))?;
            let (fp32_util, mem_intensity) = crate::policy::slate::intensities(setup.spec, &a);
            let alone = AloneResult {
                name: name.clone(),
                class: class.clone(),
                warp_insts: a.counters.warp_insts,
                cycles,
                ipc: a.counters.warp_insts as f64 / cycles.max(1) as f64,
                l2_mpki: a.rates.l2_mpki,
                stalls: a.counters.stalls.into(),
                isu: multitenancy::isu(setup.spec, &a),
                fp32_util,
                mem_intensity,
                label: String::new(),
                units: a.rates.unit_util.iter().cloned().collect(),
                dram_util: a.rates.dram_util,
                l2_util: l2_util(setup.spec, &a.counters, cycles),
                spatial: Some(crate::profile::spatial(setup.spec, &app)?),
            };
            if alone.warp_insts == 0 {
                return Err(Error::Usage(format!(
                    "benchmark {name} executed no instruction alone in {cycles} cycles"
                )));
            }
            Ok(Loaded {
                name,
                class,
                app,
                alone,
                counters: a.counters,
                rates: a.rates,
            })
        })
        .collect()
}

/// What one CTA of each benchmark takes of an SM (`policy::Need`), by name.
fn curve_needs(spec: &GpuSpec, benches: &[Loaded]) -> Result<Vec<(String, [u64; 5])>> {
    benches
        .iter()
        .map(|b| Ok((b.name.clone(), shape(spec, &b.app)?.need)))
        .collect()
}

/// The points of the Fig. 3a curves: every benchmark at 1..=N CTAs per SM (N its
/// occupancy limit), as (benchmark index, CTAs per SM).
fn curve_jobs(spec: &GpuSpec, benches: &[Loaded]) -> Result<Vec<(usize, u32)>> {
    Ok(benches
        .iter()
        .enumerate()
        .map(|(i, b)| Ok((i, shape(spec, &b.app)?.max_ctas)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flat_map(|(i, max)| (1..=max).map(move |c| (i, c)))
        .collect())
}

/// IPC alone over `window` cycles with every SM holding `ctas` CTAs.
fn curve_ipc(
    spec: &GpuSpec,
    window: u64,
    max_cycles: u64,
    app: &AppSpec,
    ctas: u32,
) -> Result<f64> {
    let quota = AppPlacement {
        cta_quota: Some(vec![ctas; spec.sm.count as usize]),
        ..AppPlacement::default()
    };
    alone_ipc(spec, Mode::Budget { window }, max_cycles, app, quota, None)
}

/// Fig. 3a curves from the IPC of each (benchmark, class, CTAs) point, in point order,
/// each curve normalised to its best point.
fn assemble_curves(
    points: &[(String, String, u32)],
    ipcs: &[f64],
    needs: &[(String, [u64; 5])],
) -> Vec<BenchCurve> {
    let mut out: Vec<BenchCurve> = Vec::new();
    for ((name, class, c), &ipc) in points.iter().zip(ipcs) {
        if out.last().is_none_or(|x| &x.name != name) {
            out.push(BenchCurve {
                name: name.clone(),
                class: class.clone(),
                max_ctas: 0,
                points: Vec::new(),
                pruned: Vec::new(),
                need: needs.iter().find(|(n, _)| n == name).map(|x| x.1),
            });
        }
        let Some(cur) = out.last_mut() else { continue };
        cur.max_ctas = *c;
        cur.points.push((*c, ipc));
    }
    for c in &mut out {
        let best = c.points.iter().map(|p| p.1).fold(0.0, f64::max);
        for p in &mut c.points {
            p.1 = if best > 0.0 { p.1 / best } else { 0.0 };
        }
    }
    out
}

/// One policy on one workload.
fn run_one(
    setup: &Setup,
    benches: &[&Loaded],
    arrivals: &[u64],
    policy: &dyn crate::policy::Policy,
) -> Result<PolicyRun> {
    let mut apps: Vec<AppSpec> = benches.iter().map(|b| b.app.clone()).collect();
    for (a, &t) in apps.iter_mut().zip(arrivals) {
        a.arrival = t;
    }
    let mode = setup.mode.run_mode(benches);
    let w = Workload {
        spec: setup.spec,
        apps: &apps,
        mode,
    };
    let out = execute_with(policy, &w, setup.max_cycles, 0, setup.fast_forward)?;
    Ok(policy_run(
        &out.stats,
        benches,
        out.policy,
        out.partition,
        out.ctas,
        out.runs,
        out.log,
    ))
}

fn policy_run(
    s: &RunStats,
    benches: &[&Loaded],
    policy: String,
    partition: String,
    ctas: Option<Vec<u32>>,
    runs: usize,
    log: Vec<String>,
) -> PolicyRun {
    let mut progress = Vec::new();
    let mut apps = Vec::new();
    for (a, b) in s.apps.iter().zip(benches) {
        let p = Progress {
            warp_insts: a.counters.warp_insts,
            cycles: a.end.saturating_sub(a.arrival),
            alone_warp_insts: b.alone.warp_insts,
            alone_cycles: b.alone.cycles,
        };
        progress.push(p);
        let np = p.normalised();
        apps.push(AppResult {
            name: b.name.clone(),
            warp_insts: p.warp_insts,
            cycles: p.cycles,
            alone_warp_insts: p.alone_warp_insts,
            alone_cycles: p.alone_cycles,
            progress: np,
            slowdown: p.slowdown(),
            ipc: p.ipc(),
            l1_miss_rate: 1.0 - a.rates.l1_hit_rate,
            l2_miss_rate: 1.0 - a.rates.l2_hit_rate,
            stalls: a.counters.stalls.into(),
        });
    }
    let cycles = s.apps.iter().map(|a| a.end).max().unwrap_or(s.cycles);
    let first = s.apps.iter().map(|a| a.start).min().unwrap_or(0);
    let makespan = cycles.saturating_sub(first).max(1);
    let m = &s.model;
    let l2_bytes = s.gpu.l2_accesses as f64 * m.l2.sector.0 as f64;
    let secs = makespan as f64 / m.clocks.core.hz() as f64;
    // Reallocation costs (UGPU Fig. 12a), only when something was reallocated: SM
    // context-switch time in whole-GPU cycles (SM-cycles / SMs), and the applications'
    // mean of migration pauses plus on-demand page-migration time.
    let nsm = s.model.sm.count.max(1) as f64;
    let switch: u64 = s.apps.iter().map(|a| a.counters.switch_sm_cycles).sum();
    let moving: u64 = s
        .apps
        .iter()
        .map(|a| a.counters.migration_pause_cycles + a.counters.migration_cycles)
        .sum();
    let realloc = (switch > 0 || moving > 0).then(|| {
        [
            ("sm_realloc_cycles".to_string(), switch as f64 / nsm),
            (
                "migration_cycles".to_string(),
                moving as f64 / s.apps.len().max(1) as f64,
            ),
        ]
    });
    // Time slicing: the mean context switch, when there was one.
    let switches: u64 = s.apps.iter().map(|a| a.counters.slice_switches).sum();
    let slice_switch = (switches > 0).then(|| {
        let c: u64 = s.apps.iter().map(|a| a.counters.slice_switch_cycles).sum();
        (
            "slice_switch_cycles".to_string(),
            c as f64 / switches as f64,
        )
    });
    let measures = [
        ("makespan".to_string(), makespan as f64),
        ("ipc".to_string(), s.gpu.warp_insts as f64 / makespan as f64),
        ("l2_gbs".to_string(), l2_bytes / secs / 1e9),
    ]
    .into_iter()
    .chain(realloc.into_iter().flatten())
    .chain(slice_switch)
    .chain(ff_measure(s))
    .collect();
    PolicyRun {
        policy,
        partition,
        ctas,
        summary: summarize(&progress, cycles),
        apps,
        stalls: Stalls::from(s.gpu.stalls),
        l1_miss_rate: 1.0 - s.gpu_rates.l1_hit_rate,
        l2_miss_rate: 1.0 - s.gpu_rates.l2_hit_rate,
        runs,
        log,
        measures,
    }
}

/// `ff_cycles`: cycles of the run advanced analytically by fast-forward, when there were any
/// (a run that never jumped is the detailed run, counter for counter); and, when some of
/// its jumps were co-run jumps, `ff_spread`: the largest of their `spread_bp` (how far an
/// application's rate moved between the halves of the span it was credited from) as a
/// fraction — the run `study --ff-check` looks at first.
fn ff_measure(s: &RunStats) -> Vec<(String, f64)> {
    let Some(f) = s.fast_forward.as_ref().filter(|f| f.cycles > 0) else {
        return Vec::new();
    };
    let mut m = vec![("ff_cycles".to_string(), f.cycles as f64)];
    if f.jumps.iter().any(|j| j.corun) {
        let bp = f
            .jumps
            .iter()
            .flat_map(|j| j.spread_bp.iter().copied())
            .max()
            .unwrap_or(0);
        m.push(("ff_spread".to_string(), bp as f64 / 10_000.0));
    }
    m
}

/// Policy `p` of `task`, its benchmarks found in `benches`; errors name the workload and
/// the policy.
fn task_run(setup: &Setup, benches: &[Loaded], task: &Task, p: usize) -> Result<PolicyRun> {
    let bs = task
        .apps
        .iter()
        .map(|n| {
            benches
                .iter()
                .find(|b| &b.name == n)
                .ok_or_else(|| Error::Usage(format!("unknown benchmark `{n}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    let built = oracle::build_in_task(&task.policies[p], &names(task));
    run_one(setup, &bs, &task.arrivals, built.as_ref()).map_err(|e| {
        e.context(format_args!(
            "workload {} under policy {}",
            task.name(),
            task.policies[p].name()
        ))
    })
}

/// The workloads from their outlines and every (task, policy) run in task-major order;
/// an oracle that needs it takes the best of its task's adopted runs.
fn assemble_workloads(tasks: &[plan::TaskOutline], runs: Vec<PolicyRun>) -> Vec<WorkloadResult> {
    let mut it = runs.into_iter();
    tasks
        .iter()
        .map(|task| {
            let mut runs: Vec<PolicyRun> =
                (0..task.policies.len()).map_while(|_| it.next()).collect();
            let names: Vec<&str> = task.policies.iter().map(String::as_str).collect();
            if oracle::merges(&names) {
                oracle::merge(&mut runs);
            }
            WorkloadResult {
                name: task.name.clone(),
                apps: task.apps.clone(),
                category: task.category.clone(),
                runs,
            }
        })
        .collect()
}

/// Runs every task's policies (all pairs in parallel), in a deterministic result order.
pub fn run_tasks(setup: &Setup, benches: &[Loaded], tasks: &[Task]) -> Result<Vec<WorkloadResult>> {
    let jobs: Vec<(usize, usize)> = tasks
        .iter()
        .enumerate()
        .flat_map(|(t, task)| (0..task.policies.len()).map(move |p| (t, p)))
        .collect();
    let total = jobs.len();
    let done = Arc::new(AtomicUsize::new(0));
    let results: Vec<Result<PolicyRun>> = jobs
        .par_iter()
        .map(|&(t, p)| {
            let r = task_run(setup, benches, &tasks[t], p);
            (setup.progress)(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            r
        })
        .collect();
    let runs = gather(results)?;
    let outlines: Vec<plan::TaskOutline> = tasks.iter().map(plan::TaskOutline::of).collect();
    Ok(assemble_workloads(&outlines, runs))
}

/// The jobs' results in order, or the first error. Cap hits are not a first error: every
/// job runs, then all of them are listed together (each names its workload, policy and
/// the applications still running), so one study run shows every case to fix.
pub fn gather<T>(results: Vec<Result<T>>) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(results.len());
    let mut caps = Vec::new();
    let mut first = None;
    for r in results {
        match r {
            Ok(x) => out.push(x),
            Err(Error::CapHit(m)) => caps.push(m),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first {
        return Err(e);
    }
    if !caps.is_empty() {
        return Err(Error::CapHit(format!(
            "{} run{} did not finish (if the workload is just long, raise the cycle cap: \
             `max_cycles` in a study file, `--max-cycles` on the command line):\n  {}",
            caps.len(),
            if caps.len() == 1 { "" } else { "s" },
            caps.join("\n  ")
        )));
    }
    Ok(out)
}

fn names(task: &Task) -> Vec<&'static str> {
    task.policies.iter().map(PolicySpec::name).collect()
}

impl crate::policy::oracle::Candidate for PolicyRun {
    fn policy(&self) -> &str {
        &self.policy
    }
    fn score(&self) -> f64 {
        self.summary.combined_ipc
    }
    fn runs(&self) -> usize {
        self.runs
    }
    fn adopt(&mut self, policy: &str, runs: usize) {
        self.policy = policy.into();
        self.runs = runs;
    }
}

/// The UGPU Fig. 4 jobs of `g`: each of its benchmarks alone on every slice of the grid,
/// as (benchmark index, SMs, channels); checks that every point is a slice of the model.
fn slice_jobs(
    setup: &Setup,
    benches: &[Loaded],
    g: &spec::SliceGrid,
) -> Result<Vec<(usize, u32, u32)>> {
    slice_window(setup.mode)?;
    let d = &setup.spec.dram;
    let stacks = d.stacks.max(1);
    let nsm = setup.spec.sm.count;
    let mut jobs = Vec::new();
    for name in &g.benches {
        let b = benches
            .iter()
            .position(|b| &b.name == name)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "slice_grid names `{name}`, not a benchmark the study runs"
                ))
            })?;
        for &s in &g.sms {
            for &c in &g.channels {
                if s == 0 || s > nsm || c == 0 || c > d.channels || c % stacks != 0 {
                    return Err(Error::Usage(format!(
                        "slice_grid: {s} SMs + {c} channels is not a slice of {nsm} SMs and {} channels in {stacks} stacks (channels come in multiples of {stacks})",
                        d.channels
                    )));
                }
                jobs.push((b, s, c));
            }
        }
    }
    Ok(jobs)
}

/// The window slice-grid runs last: the study's (a completion-mode study has none).
fn slice_window(mode: Mode) -> Result<u64> {
    mode.window().ok_or_else(|| {
        Error::Usage("slice_grid needs a window (it is not for completion-mode studies)".into())
    })
}

/// Benchmark `b` alone on the first `s` SMs and the first `c / stacks` channel indices of
/// every stack, over the study's window (UGPU Fig. 4).
fn slice_run(setup: &Setup, b: &Loaded, s: u32, c: u32) -> Result<SliceRun> {
    let window = slice_window(setup.mode)?;
    let d = &setup.spec.dram;
    let stacks = d.stacks.max(1);
    let per = d.channels / stacks;
    let nsm = setup.spec.sm.count;
    let idx = c / stacks;
    let place = AppPlacement {
        sms: Some((0..nsm).map(|x| x < s).collect()),
        channels: Some(
            (0..stacks)
                .flat_map(|st| (0..idx).map(move |i| st * per + i))
                .collect(),
        ),
        ..AppPlacement::default()
    };
    let ipc = alone_ipc(
        setup.spec,
        Mode::Window { window },
        setup.max_cycles,
        &b.app,
        place,
        setup.fast_forward,
    )
    .map_err(|e| e.context(format_args!("{} alone on {s} SMs + {c} channels", b.name)))?;
    Ok(SliceRun {
        bench: b.name.clone(),
        sms: s,
        channels: c,
        ipc,
        alone_ipc: b.alone.ipc,
    })
}

/// A synthetic kernel spec with its first grid dimension multiplied by `scale`.
fn scaled_synth(path: &Path, scale: u32) -> Result<Arc<dyn crate::trace::KernelSource>> {
    use crate::trace::synth::{parse_spec, SynthKernel};
    let text = crate::infile::read_to_string(path)?;
    let mut spec = parse_spec(&text, path).map_err(|e| {
        Error::Usage(format!(
            "grid_scale applies to synthetic kernel specs only: {e}"
        ))
    })?;
    let g = &mut spec.kernel.grid.0[0];
    *g = g.checked_mul(scale).ok_or_else(|| {
        Error::Usage(format!(
            "{}: grid_scale {scale} overflows the grid",
            path.display()
        ))
    })?;
    Ok(Arc::new(SynthKernel::from_spec(spec, path)?))
}

//! Isolated-run profiling of one application: performance vs CTAs per SM (Warped-Slicer
//! Fig. 3a), vs SM count and vs memory-channel count (UGPU Fig. 2–3, Slate Fig. 1), the
//! full-GPU alone run's rates (ISU, IPC, cache hit rates, L2 MPKI, DRAM utilisation, unit
//! utilisation) and the class labels of four papers' schemes.
//!
//! Entry point: [`profile`]. Runs are independent and executed in parallel (rayon); their
//! results are assembled in a fixed order, so the [`Profile`] (and its JSON) is identical
//! for any thread count.
//!
//! Files: `points` (what is sampled), `sweep` (running the jobs), `metrics` (classifier
//! inputs), `class` (the labels), `table` (the text report), `figures` (charts as plain
//! data for `crate::report`).

pub mod class;
pub mod figures;
pub mod metrics;
pub mod points;
pub mod sweep;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::arch::{occupancy, GpuSpec, Launch, Occupancy};
use crate::engine::{AppPlacement, AppSpec, Rates, RunStats, StallStack};
use crate::error::{Error, Result};
use crate::metrics::Spatial;

pub use class::{Labels, Thresholds};
pub use metrics::{Metrics, Mix};
pub use sweep::Axis;

/// Version of the profile JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// What to sample and how to label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileOptions {
    /// Points of the SM-count and channel-count sweeps (see [`points::fractions`]).
    pub points: usize,
    /// Safety stop of each run, core cycles.
    pub max_cycles: u64,
    pub thresholds: Thresholds,
    /// Steady-state fast-forward for every run of the sweep (`None`: every cycle
    /// simulated, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<crate::engine::FastForward>,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            points: points::DEFAULT_POINTS,
            max_cycles: crate::engine::MAX_CYCLES,
            thresholds: Thresholds::default(),
            fast_forward: None,
        }
    }
}

/// One sampled run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// CTAs per SM, SMs or channels.
    pub x: u32,
    pub cycles: u64,
    pub warp_insts: u64,
    /// Warp instructions per cycle over the run.
    pub ipc: f64,
    /// IPC relative to the curve's best point.
    pub norm: f64,
    pub isu: f64,
    pub l1_hit_rate: f64,
    pub l2_hit_rate: f64,
    pub l2_mpki: f64,
    pub dram_util: f64,
}

/// Performance along one resource axis, points in increasing `x`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    pub axis: Axis,
    pub points: Vec<Point>,
}

impl Curve {
    pub fn xs(&self) -> Vec<u32> {
        self.points.iter().map(|p| p.x).collect()
    }
}

/// The full-GPU alone run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alone {
    pub cycles: u64,
    pub warp_insts: u64,
    pub rates: Rates,
    pub stalls: StallStack,
    /// The run's full statistics (counters), for callers that derive more from it (not
    /// part of the profile JSON).
    #[serde(skip)]
    pub stats: Option<crate::engine::AppStats>,
}

/// Everything `gpumodel profile` reports for one application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub schema_version: u32,
    pub app: String,
    /// The kernel whose occupancy bounds the CTA sweep (the one with the most warp
    /// instructions, the first on ties), its CTAs-per-SM limit and what limits it.
    pub kernel: String,
    pub max_ctas_per_sm: u32,
    pub limiter: String,
    pub options: ProfileOptions,
    pub alone: Alone,
    pub curves: Vec<Curve>,
    pub metrics: Metrics,
    pub labels: Labels,
    /// The effective GPU model.
    pub model: GpuSpec,
    /// Cycles fast-forward skipped over all the runs (absent when it was off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_forward_cycles: Option<u64>,
}

impl Profile {
    pub fn curve(&self, axis: Axis) -> Option<&Curve> {
        self.curves.iter().find(|c| c.axis == axis)
    }
    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map(|s| s + "\n")
            .map_err(|e| Error::Usage(format!("cannot serialise the profile: {e}")))
    }
}

/// The application's kernel with the most warp instructions (the first of equals) and
/// its occupancy on `spec`.
fn heaviest(spec: &GpuSpec, app: &AppSpec) -> Result<(String, Occupancy)> {
    let k = app
        .kernels
        .iter()
        .enumerate()
        .max_by_key(|(i, k)| (k.total_warp_insts(), std::cmp::Reverse(*i)))
        .map(|(_, k)| k)
        .ok_or_else(|| Error::Usage(format!("{}: the application has no kernels", app.name)))?;
    let info = k.info();
    let occ = occupancy(
        spec,
        &Launch::new(info.threads_per_cta(), info.nregs, info.shmem),
    )?;
    Ok((info.name.clone(), occ))
}

/// SiM Fig. 2's spatial utilisation of the application's heaviest kernel: the share of an
/// SM's registers, shared memory, threads and CTA slots its resident CTAs hold.
pub fn spatial(spec: &GpuSpec, app: &AppSpec) -> Result<Spatial> {
    let (_, o) = heaviest(spec, app)?;
    let share = |used: u64, total: u64| used as f64 / total.max(1) as f64;
    Ok(Spatial {
        registers: share(o.regs_per_sm.into(), spec.sm.registers.per_sm.into()),
        shared_memory: share(o.smem_per_sm.into(), spec.sm.shared.per_sm.0),
        threads: share(o.threads_per_sm.into(), spec.sm.max_threads.into()),
        cta_slots: share(o.ctas_per_sm.into(), spec.sm.max_ctas.into()),
    })
}

/// The kernel that bounds the CTA sweep and its occupancy on `spec`.
pub fn reference_kernel(spec: &GpuSpec, app: &AppSpec) -> Result<(String, u32, String)> {
    let (name, occ) = heaviest(spec, app)?;
    Ok((name, occ.ctas_per_sm, occ.limiter.as_str().to_string()))
}

/// The jobs of a profile, in their fixed order: the alone run, then each axis's points.
pub fn jobs(spec: &GpuSpec, max_ctas: u32, points: usize) -> Vec<sweep::Job> {
    jobs_on(spec, max_ctas, points, &Axis::ALL)
}

/// [`jobs`] restricted to the sweeps of `axes` (the alone run is always first).
pub fn jobs_on(spec: &GpuSpec, max_ctas: u32, points: usize, axes: &[Axis]) -> Vec<sweep::Job> {
    let mut v = vec![sweep::Job::alone()];
    let on = |a: Axis| axes.contains(&a);
    let ctas = if on(Axis::CtasPerSm) {
        points::cta_counts(max_ctas)
    } else {
        Vec::new()
    };
    let sms = if on(Axis::Sms) {
        points::sm_counts(spec, points)
    } else {
        Vec::new()
    };
    let chans = if on(Axis::Channels) {
        points::channel_counts(spec, points)
    } else {
        Vec::new()
    };
    for q in ctas {
        v.push(sweep::Job {
            axis: Some(Axis::CtasPerSm),
            x: q,
            placement: AppPlacement {
                cta_quota: Some(vec![q; spec.sm.count as usize]),
                ..AppPlacement::default()
            },
            spread_alone: false,
        });
    }
    for n in sms {
        // No even spreading: the engine's spread rule divides the grid by every SM of the
        // GPU, not by the SMs of the mask, and would leave masked-in SMs under-filled.
        v.push(sweep::Job {
            axis: Some(Axis::Sms),
            x: n,
            placement: AppPlacement {
                sms: Some(points::sm_mask(spec, n)),
                ..AppPlacement::default()
            },
            spread_alone: false,
        });
    }
    for n in chans {
        v.push(sweep::Job {
            axis: Some(Axis::Channels),
            x: n,
            placement: AppPlacement {
                channels: Some(points::channel_set(spec, n)),
                ..AppPlacement::default()
            },
            spread_alone: true,
        });
    }
    v
}

fn point(x: u32, s: &RunStats) -> Point {
    let a = &s.apps[0];
    Point {
        x,
        cycles: a.cycles,
        warp_insts: a.counters.warp_insts,
        ipc: a.rates.ipc,
        norm: 0.0,
        isu: a.rates.isu,
        l1_hit_rate: a.rates.l1_hit_rate,
        l2_hit_rate: a.rates.l2_hit_rate,
        l2_mpki: a.rates.l2_mpki,
        dram_util: a.rates.dram_util,
    }
}

/// Number of engine runs [`profile`] makes for `app` (for progress bars).
pub fn run_count(spec: &GpuSpec, app: &AppSpec, opts: &ProfileOptions) -> Result<usize> {
    run_count_on(spec, app, opts, &Axis::ALL)
}

/// Number of engine runs [`profile_on`] makes for `app` with the sweeps of `axes`.
pub fn run_count_on(
    spec: &GpuSpec,
    app: &AppSpec,
    opts: &ProfileOptions,
    axes: &[Axis],
) -> Result<usize> {
    let (_, max, _) = reference_kernel(spec, app)?;
    Ok(jobs_on(spec, max, opts.points, axes).len())
}

/// Profiles `app` on `spec`. `done` is called after every engine run.
pub fn profile(
    spec: &GpuSpec,
    app: &AppSpec,
    opts: &ProfileOptions,
    done: &(dyn Fn() + Sync),
) -> Result<Profile> {
    profile_on(spec, app, opts, &Axis::ALL, done)
}

/// [`profile`] with only the sweeps of `axes` run (the others' curves are empty; the
/// Warped-Slicer label reads the CTAs-per-SM curve and is meaningful only when it is run).
pub fn profile_on(
    spec: &GpuSpec,
    app: &AppSpec,
    opts: &ProfileOptions,
    axes: &[Axis],
    done: &(dyn Fn() + Sync),
) -> Result<Profile> {
    let (kernel, max, limiter) = reference_kernel(spec, app)?;
    let jobs = jobs_on(spec, max, opts.points, axes);
    let runs = sweep::run_jobs(spec, app, &jobs, opts, done)?;
    let fast_forward_cycles = opts.fast_forward.map(|_| {
        runs.iter()
            .map(|r| r.fast_forward.as_ref().map_or(0, |f| f.cycles))
            .sum()
    });
    let alone_stats = &runs[0];
    let a = &alone_stats.apps[0];
    let alone = Alone {
        cycles: a.cycles,
        warp_insts: a.counters.warp_insts,
        rates: a.rates.clone(),
        stalls: a.counters.stalls,
        stats: Some(a.clone()),
    };
    let mut curves: Vec<Curve> = Axis::ALL
        .iter()
        .map(|&axis| Curve {
            axis,
            points: jobs
                .iter()
                .zip(&runs)
                .filter(|(j, _)| j.axis == Some(axis))
                .map(|(j, s)| point(j.x, s))
                .collect(),
        })
        .collect();
    for c in &mut curves {
        let best = c.points.iter().map(|p| p.ipc).fold(0.0, f64::max);
        for p in &mut c.points {
            p.norm = if best > 0.0 { p.ipc / best } else { 0.0 };
        }
    }
    let metrics = Metrics::new(spec, alone_stats, Mix::of(app)?);
    let labels = class::classify(spec, &metrics, &curves[0], &opts.thresholds);
    Ok(Profile {
        schema_version: SCHEMA_VERSION,
        app: app.name.clone(),
        kernel,
        max_ctas_per_sm: max,
        limiter,
        options: opts.clone(),
        alone,
        curves,
        metrics,
        labels,
        model: spec.clone(),
        fast_forward_cycles,
    })
}

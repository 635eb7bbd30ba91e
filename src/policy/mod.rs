//! GPU-sharing policies: how the applications of a workload share SMs.
//!
//! A [`Policy`] turns a workload into one or more [`Plan`]s — an initial engine
//! [`Placement`] plus a runtime controller that reconfigures the run through the engine's
//! hooks. Most policies give one plan; the oracle gives every candidate and the best run
//! wins. [`PolicySpec`] names every policy and its parameters (serde + CLI names) and its
//! [`PolicySpec::build`] is the registry. One file per family: [`baseline`] (Left-Over,
//! FCFS, Even, Spatial), [`warped_slicer`] (sampling + water filling or ILP), [`oracle`],
//! [`smra`] (Punyala et al.'s run-time SM reallocation, not in [`PolicySpec::NAMES`]);
//! [`partition`] holds the max-min solvers.

pub mod baseline;
pub mod oracle;
pub mod partition;
pub mod pattern;
pub mod smra;
pub mod warped_slicer;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::arch::{occupancy, GpuSpec, Launch};
use crate::engine::sm::Res;
use crate::engine::{self, AppSpec, Controller, Placement, RunConfig, RunMode, RunStats};
use crate::error::{Error, Result};
use partition::Need;
pub use smra::SmraParams;
pub use warped_slicer::{Scaling, Solver, WsParams};

/// What a policy works on: the model, the applications and the run mode.
pub struct Workload<'a> {
    pub spec: &'a GpuSpec,
    pub apps: &'a [AppSpec],
    pub mode: RunMode,
}

/// CTA footprint an application is planned with (see [`shape`]) and how many fit alone in
/// one SM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub need: Need,
    pub max_ctas: u32,
}

impl Workload<'_> {
    /// One [`Shape`] per application.
    pub fn shapes(&self) -> Result<Vec<Shape>> {
        self.apps.iter().map(|a| shape(self.spec, a)).collect()
    }
    /// An SM's capacity in the units of [`Need`].
    pub fn cap(&self) -> Need {
        sm_cap(self.spec)
    }
    pub fn sms(&self) -> usize {
        self.spec.sm.count as usize
    }
    /// The applications' indices in canonical order: by name, then position (see
    /// [`canonical_order`]).
    pub fn canonical(&self) -> Vec<usize> {
        canonical_order(self.apps)
    }
}

/// Indices of `apps` ordered by name (then position, for equal names). Policies that
/// treat applications as peers (SM blocks under Spatial, re-sharing when one finishes)
/// hand out resources in this order, so a workload listed in another order gets the same
/// placement and the same result; the engine's round-robin dispatch does the same.
pub fn canonical_order(apps: &[AppSpec]) -> Vec<usize> {
    let mut o: Vec<usize> = (0..apps.len()).collect();
    o.sort_by(|&a, &b| apps[a].name.cmp(&apps[b].name).then(a.cmp(&b)));
    o
}

/// The CTA footprint a policy plans with for `app`: the largest need of each resource
/// over its kernels, and the fewest CTAs per SM any of them allows. A CTA quota or
/// combination planned with it fits whichever of the application's kernels runs (planned
/// with the first kernel alone, a combination could let a later, larger kernel fill the
/// SMs and shut the co-runner out).
pub fn shape(spec: &GpuSpec, app: &AppSpec) -> Result<Shape> {
    if app.kernels.is_empty() {
        return Err(Error::Usage(format!(
            "application {} has no kernels",
            app.name
        )));
    }
    let mut need = [0u64; 5];
    let mut max_ctas = u32::MAX;
    for k in &app.kernels {
        let info = k.info();
        let occ = occupancy(
            spec,
            &Launch::new(info.threads_per_cta(), info.nregs, info.shmem),
        )?;
        for (n, x) in need
            .iter_mut()
            .zip(Res::of_cta(&occ, spec.sm.warp_size).to_array())
        {
            *n = (*n).max(x);
        }
        max_ctas = max_ctas.min(occ.ctas_per_sm);
    }
    // The combined footprint may fit fewer times than any single kernel's.
    for (c, n) in sm_cap(spec).iter().zip(need) {
        if let Some(fit) = c.checked_div(n) {
            max_ctas = max_ctas.min(fit as u32);
        }
    }
    Ok(Shape { need, max_ctas })
}

pub fn sm_cap(spec: &GpuSpec) -> Need {
    Res::sm_limits(spec).to_array()
}

/// A runtime controller that can also say what it decided.
pub trait PolicyControl: Controller + Send {
    /// Decisions taken, in order, as readable lines.
    fn log(&self) -> Vec<String> {
        Vec::new()
    }
    /// The partition finally chosen (`(T1,T2)`, `spatial`, ...), if the controller chose.
    fn chosen(&self) -> Option<(String, Option<Vec<u32>>)> {
        None
    }
}

/// One candidate run of a policy.
pub struct Plan {
    /// Partition label (`shared`, `spatial`, `(4,4)`, ...).
    pub label: String,
    pub ctas: Option<Vec<u32>>,
    pub placement: Placement,
    pub control: Box<dyn PolicyControl>,
}

/// A sharing policy.
pub trait Policy: Send + Sync {
    fn name(&self) -> String;
    /// The candidate runs; when there are several, the best (highest combined IPC) wins.
    fn plans(&self, w: &Workload) -> Result<Vec<Plan>>;
}

/// Every policy, with its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "policy")]
pub enum PolicySpec {
    LeftOver,
    Fcfs,
    Even,
    Spatial,
    WarpedSlicer(WsParams),
    /// Warped-Slicer's sampling with the exact max-min ILP instead of water filling.
    WsIlp(WsParams),
    Oracle {
        /// Only combinations to which no kernel can add a CTA (fewer runs).
        #[serde(default)]
        maximal_only: bool,
    },
    /// Punyala et al.'s run-time SM reallocation (Algorithm 1); not part of `all`.
    Smra(SmraParams),
}

impl PolicySpec {
    /// Policy names `all` runs, in order; [`PolicySpec::from_name`] also accepts `smra`.
    pub const NAMES: [&'static str; 7] = [
        "left-over",
        "fcfs",
        "even",
        "spatial",
        "warped-slicer",
        "ws-ilp",
        "oracle",
    ];

    /// The policy called `name`, with default parameters.
    pub fn from_name(name: &str) -> Result<PolicySpec> {
        Ok(match name {
            "left-over" => PolicySpec::LeftOver,
            "fcfs" => PolicySpec::Fcfs,
            "even" => PolicySpec::Even,
            "spatial" => PolicySpec::Spatial,
            "warped-slicer" => PolicySpec::WarpedSlicer(WsParams::default()),
            "ws-ilp" => PolicySpec::WsIlp(WsParams {
                solver: Solver::Ilp,
                ..WsParams::default()
            }),
            "oracle" => PolicySpec::Oracle {
                maximal_only: false,
            },
            "smra" => PolicySpec::Smra(SmraParams::default()),
            _ => {
                return Err(Error::Usage(format!(
                    "unknown policy `{name}`; expected one of {}, smra or `all`",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    /// A comma-separated list of names, or `all`.
    pub fn parse_list(list: &str) -> Result<Vec<PolicySpec>> {
        let names: Vec<&str> = if list.trim() == "all" {
            Self::NAMES.to_vec()
        } else {
            list.split(',').map(str::trim).collect()
        };
        if names.iter().any(|n| n.is_empty()) {
            return Err(Error::Usage(format!(
                "empty policy name in `{list}`; expected a comma-separated list such as left-over,even,warped-slicer"
            )));
        }
        names.into_iter().map(Self::from_name).collect()
    }

    pub fn name(&self) -> &'static str {
        match self {
            PolicySpec::LeftOver => "left-over",
            PolicySpec::Fcfs => "fcfs",
            PolicySpec::Even => "even",
            PolicySpec::Spatial => "spatial",
            PolicySpec::WarpedSlicer(_) => "warped-slicer",
            PolicySpec::WsIlp(_) => "ws-ilp",
            PolicySpec::Oracle { .. } => "oracle",
            PolicySpec::Smra(_) => "smra",
        }
    }

    /// The registry: the policy object for this spec.
    pub fn build(&self) -> Box<dyn Policy> {
        use baseline::{Baseline, Kind};
        match self {
            PolicySpec::LeftOver => Box::new(Baseline(Kind::LeftOver)),
            PolicySpec::Fcfs => Box::new(Baseline(Kind::Fcfs)),
            PolicySpec::Even => Box::new(Baseline(Kind::Even)),
            PolicySpec::Spatial => Box::new(Baseline(Kind::Spatial)),
            PolicySpec::WarpedSlicer(p) => Box::new(warped_slicer::WarpedSlicer {
                params: WsParams {
                    solver: Solver::WaterFill,
                    ..p.clone()
                },
                name: "warped-slicer",
            }),
            PolicySpec::WsIlp(p) => Box::new(warped_slicer::WarpedSlicer {
                params: WsParams {
                    solver: Solver::Ilp,
                    ..p.clone()
                },
                name: "ws-ilp",
            }),
            PolicySpec::Oracle { maximal_only } => Box::new(oracle::Oracle {
                maximal_only: *maximal_only,
                baselines: true,
            }),
            PolicySpec::Smra(p) => Box::new(smra::Smra(p.clone())),
        }
    }
}

/// What running a policy on a workload gave.
pub struct Outcome {
    pub policy: String,
    pub partition: String,
    pub ctas: Option<Vec<u32>>,
    pub stats: RunStats,
    pub runs: usize,
    pub log: Vec<String>,
}

/// Runs every plan of `policy` on `w` (in parallel) and keeps the best one (highest
/// combined IPC; the first on ties).
pub fn execute(policy: &dyn Policy, w: &Workload, max_cycles: u64) -> Result<Outcome> {
    let plans = policy.plans(w)?;
    let n = plans.len();
    if n == 0 {
        return Err(Error::Usage(format!(
            "policy {} has no feasible plan for this workload",
            policy.name()
        )));
    }
    let results: Vec<Result<Outcome>> = plans
        .into_par_iter()
        .map(|mut plan| {
            let cfg = RunConfig {
                mode: w.mode.clone(),
                placement: plan.placement,
                sample_every: 0,
                max_cycles,
            };
            let stats = engine::run(w.spec, w.apps, &cfg, plan.control.as_mut())?;
            let (partition, ctas) = plan.control.chosen().unwrap_or((plan.label, plan.ctas));
            Ok(Outcome {
                policy: policy.name(),
                partition,
                ctas,
                stats,
                runs: n,
                log: plan.control.log(),
            })
        })
        .collect();
    // A candidate plan that reached the cycle cap loses to every plan that finished (the
    // oracle's worst combinations can starve a kernel); the policy fails only when none
    // finished.
    let mut best: Option<Outcome> = None;
    let mut capped = Vec::new();
    for r in results {
        let o = match r {
            Ok(o) => o,
            Err(Error::CapHit(m)) => {
                capped.push(m);
                continue;
            }
            Err(e) => return Err(e),
        };
        let ipc = |o: &Outcome| o.stats.gpu.warp_insts as f64 / o.stats.cycles.max(1) as f64;
        if best.as_ref().is_none_or(|b| ipc(&o) > ipc(b)) {
            best = Some(o);
        }
    }
    match best {
        Some(mut o) => {
            if !capped.is_empty() {
                o.log.push(format!(
                    "{} of {n} candidate plans reached the cycle cap and were not chosen",
                    capped.len()
                ));
            }
            Ok(o)
        }
        None => Err(Error::CapHit(capped.swap_remove(0))),
    }
}

/// `(a,b,...)`.
pub fn label(ctas: &[u32]) -> String {
    format!(
        "({})",
        ctas.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// SM masks splitting the GPU's SMs into equal contiguous blocks among `live` apps (apps
/// not in `live` get no SM).
pub fn spatial_masks(nsm: usize, napps: usize, live: &[usize]) -> Vec<Vec<bool>> {
    let mut m = vec![vec![false; nsm]; napps];
    if live.is_empty() {
        return m;
    }
    for s in 0..nsm {
        m[live[s * live.len() / nsm]][s] = true;
    }
    m
}

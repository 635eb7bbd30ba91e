//! GPU-sharing policies: how the applications of a workload share SMs (and, for some, L2
//! and DRAM channels).
//!
//! A [`Policy`] turns a workload into one or more [`Plan`]s — an initial engine
//! [`Placement`] plus a runtime controller that reconfigures the run through the engine's
//! hooks. Most policies give one plan; the oracle gives every candidate and the best run
//! wins. [`PolicySpec`] names every policy with its parameters (serde and CLI names); the
//! `registry!` list below is the registry — one line per policy, with whether `all` runs
//! it, what a study prepares for it ([`Prep`]), the figure set it owns ([`FigureSet`])
//! ([`PolicySpec::ENTRIES`]) and how [`PolicySpec::build`] makes it. `study` and `report`
//! read these declarations instead of testing policy names.
//!
//! One module per family:
//! - research schemes: [`baseline`] (Left-Over, FCFS, Even, Spatial, SM counts, round
//!   robin), [`warped_slicer`] (sampling + water filling or ILP), [`oracle`], [`smra`]
//!   (Punyala et al.'s run-time SM reallocation), [`persistent`] (PT), [`sim`] (SiM),
//!   [`slate`] (Slate), [`ugpu`] (UGPU's slices of SMs and channels, BP, CD-Search, QoS);
//! - production sharing: [`exclusive`] (time slicing, sequential), [`mps`] (MPS, its SM
//!   partitions, green contexts), [`mig`] (Multi-Instance GPU);
//! - helpers: [`partition`] (the max-min solvers), [`pattern`] (Punyala's class-pattern
//!   ILP for queues).
//!
//! `gpumodel policies` lists them all with their parameters and defaults.

pub mod baseline;
pub mod exclusive;
pub mod mig;
pub mod mps;
pub mod oracle;
pub mod partition;
pub mod pattern;
pub mod persistent;
pub mod sim;
pub mod slate;
pub mod smra;
pub mod ugpu;
pub mod warped_slicer;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::arch::{occupancy, GpuSpec, Launch};
use crate::engine::sm::Res;
use crate::engine::{
    self, AppSpec, Controller, FastForward, Placement, RunConfig, RunMode, RunStats,
};
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

impl PolicyControl for crate::engine::NoControl {}

/// One candidate run of a policy.
pub struct Plan {
    /// The applications as this plan runs them (in persistent-thread form, say: SiM,
    /// Slate); `None`: as the workload gives them. Same count and order as the workload's.
    pub apps: Option<Vec<AppSpec>>,
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
    /// Why the policy cannot run this workload (model, applications, run mode), if it
    /// cannot; `--policies all` skips it and says why.
    fn applies(&self, _w: &Workload) -> std::result::Result<(), NotApplicable> {
        Ok(())
    }
}

/// Why a policy cannot run a workload (the model, the applications or the run mode);
/// `--policies all` skips the policy and says this.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotApplicable(pub String);

impl From<String> for NotApplicable {
    fn from(s: String) -> NotApplicable {
        NotApplicable(s)
    }
}

/// Shortest period, in core cycles, of anything that recurs as an engine event (a
/// controller's epoch, occupancy samples): shorter ones make a run crawl event by event.
pub const MIN_PERIOD: u64 = 100;

/// Why a controller's period `name` of `cycles` is too short, if it is ([`MIN_PERIOD`]).
pub fn check_period(name: &str, cycles: u64) -> std::result::Result<(), ParamError> {
    if cycles < MIN_PERIOD {
        return Err(ParamError(format!(
            "{name} must be at least {MIN_PERIOD} cycles, got {cycles}"
        )));
    }
    Ok(())
}

/// Policy parameters that do not make sense (a value out of range, an application that is
/// not in the workload); the message names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParamError(pub String);

impl From<String> for ParamError {
    fn from(s: String) -> ParamError {
        ParamError(s)
    }
}

/// What every policy's parameter type says about its own values (checked when a study
/// file or `--policy-param` is parsed, before any simulation).
pub trait Params {
    /// Why these values are invalid, if they are.
    fn check(&self) -> std::result::Result<(), ParamError> {
        Ok(())
    }
    /// Takes what the study prepared for the policy ([`Prep`]) where the values do not
    /// give it already (values a study file gives win).
    fn take_prepared(&mut self, _prepared: &Prepared) {}
}

impl Params for NoParams {}
impl Params for OracleParams {}
impl Params for SmCountsParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        match self.sms.iter().find(|(_, &c)| c == 0) {
            Some((n, _)) => Err(ParamError(format!("sms: application {n} is given 0 SMs"))),
            None => Ok(()),
        }
    }
}

/// A policy without parameters (its table in a study file or `--policy-param` must be
/// empty).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// The oracle's parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OracleParams {
    /// Only combinations to which no kernel can add a CTA (fewer runs).
    pub maximal_only: bool,
}

/// Per-application SM counts (Punyala's Profile-based baseline: each application gets the
/// SM count of its isolated profile). The study that profiles fills `sms`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmCountsParams {
    /// SMs per application name; an application not listed gets the whole GPU (scaled
    /// down with the others when the counts do not fit).
    pub sms: std::collections::BTreeMap<String, u32>,
    /// The label results carry (`profile-based` in the Punyala study).
    pub label: Option<String>,
}

/// What a study computes from the benchmarks' alone runs before the runs that need it.
/// A policy declares one for when the study runs it ([`Entry::prep`]); a figure set one
/// for when the study draws it ([`Entry::figure_prep`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prep {
    /// Nothing.
    None,
    /// SiM's profiles: each benchmark's remaining time per persistent-thread count, filled
    /// into `sim.profiles` ([`Prepared::profiles`]) and recorded as the study's curves.
    SimProfiles,
    /// Slate's class of each benchmark (from its FP32 and memory intensity), filled into
    /// `slate.classes` ([`Prepared::classes`]) and recorded as its alone run's label.
    SlateClasses,
    /// UGPU's engine class of each benchmark (compute- or memory-bound on an even split),
    /// recorded as its alone run's label.
    UgpuClasses,
}

/// A set of figures and tables `report` draws for a paper's study (`figures = NAME` in
/// a study file, NAME the policy that owns it; see [`Entry::figures`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FigureSet {
    /// Warped-Slicer §V (also what `report` draws when a study names no set).
    WarpedSlicer,
    /// SiM §5.
    Sim,
    /// Slate §5.
    Slate,
    /// UGPU §6.
    Ugpu,
}

/// One registry line's declarations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name in the CLI, study files and results.
    pub name: &'static str,
    /// Whether `--policies all` runs it.
    pub all: bool,
    /// What a study prepares when it runs the policy.
    pub prep: Prep,
    /// The figure set the policy owns, if any: a study file selects it with
    /// `figures = NAME`.
    pub figures: Option<FigureSet>,
    /// What a study prepares when it draws that figure set.
    pub figure_prep: Prep,
}

/// What the study's preparations ([`Prep`]) gave, handed to the policies that take it
/// ([`PolicySpec::take_prepared`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prepared {
    /// SiM profiles by `benchmark#kernel` ([`Prep::SimProfiles`]).
    pub profiles: std::collections::BTreeMap<String, Vec<u64>>,
    /// Slate classes by benchmark ([`Prep::SlateClasses`]).
    pub classes: std::collections::BTreeMap<String, String>,
}

/// The last of its arguments: a registry line's optional declaration or its default.
macro_rules! declared {
    ($default:expr) => {
        $default
    };
    ($default:expr, $given:expr) => {
        $given
    };
}

/// The registry. One line per policy: the [`PolicySpec`] variant and its parameter type,
/// the name (CLI, study files, results), whether `--policies all` runs it, what a study
/// prepares for it (`prep`, [`Prep`]), the figure set it owns (`figures`, [`FigureSet`])
/// and what drawing that set prepares (`figure_prep`), and how the policy object is built
/// from its parameters. Adding a policy is its own file plus one line here
/// (ARCHITECTURE.md walks through `slate`). [`names`] holds every name as a constant
/// named after its variant, for code that names policies (the figures that plot them).
macro_rules! registry {
    ($( $(#[$m:meta])* $variant:ident($params:ty) = $name:literal, all: $all:literal,
        $(prep: $prep:ident,)? $(figures: $fig:ident,)? $(figure_prep: $fprep:ident,)?
        build: |$p:ident| $build:expr; )*) => {
        /// Every policy, with its parameters (serde: a table whose `policy` key is the
        /// name, the other keys the parameters; unknown keys are errors).
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "policy")]
        pub enum PolicySpec {
            $( $(#[$m])* #[serde(rename = $name)] $variant($params), )*
        }

        /// Every policy's name, as a constant named after its [`PolicySpec`] variant.
        #[allow(non_upper_case_globals)]
        pub mod names {
            $( pub const $variant: &str = $name; )*
        }

        impl PolicySpec {
            /// Every policy's name and whether `all` runs it, in registry order.
            pub const REGISTRY: &'static [(&'static str, bool)] = &[$(($name, $all)),*];

            /// Every registry line's declarations, in registry order.
            pub const ENTRIES: &'static [Entry] = &[$(Entry {
                name: $name,
                all: $all,
                prep: declared!(Prep::None $(, Prep::$prep)?),
                figures: declared!(None $(, Some(FigureSet::$fig))?),
                figure_prep: declared!(Prep::None $(, Prep::$fprep)?),
            }),*];

            pub fn name(&self) -> &'static str {
                match self {
                    $( PolicySpec::$variant(_) => $name, )*
                }
            }

            /// Why the parameters are invalid, if they are ([`Params::check`]).
            pub fn check(&self) -> std::result::Result<(), ParamError> {
                match self {
                    $( PolicySpec::$variant(p) => Params::check(p), )*
                }
            }

            /// Takes what the study prepared ([`Params::take_prepared`]).
            pub fn take_prepared(&mut self, prepared: &Prepared) {
                match self {
                    $( PolicySpec::$variant(p) => Params::take_prepared(p, prepared), )*
                }
            }

            /// The registry: the policy object for this spec.
            pub fn build(&self) -> Box<dyn Policy> {
                match self {
                    $( PolicySpec::$variant($p) => $build, )*
                }
            }
        }
    };
}

registry! {
    LeftOver(NoParams) = "left-over", all: true,
        build: |_p| Box::new(baseline::Baseline(baseline::Kind::LeftOver));
    Fcfs(NoParams) = "fcfs", all: true,
        build: |_p| Box::new(baseline::Baseline(baseline::Kind::Fcfs));
    Even(NoParams) = "even", all: true,
        build: |_p| Box::new(baseline::Baseline(baseline::Kind::Even));
    Spatial(NoParams) = "spatial", all: true,
        build: |_p| Box::new(baseline::Baseline(baseline::Kind::Spatial));
    WarpedSlicer(WsParams) = "warped-slicer", all: true, figures: WarpedSlicer,
        build: |p| Box::new(warped_slicer::WarpedSlicer::new(p, Solver::WaterFill, "warped-slicer"));
    /// Warped-Slicer's sampling with the exact max-min ILP instead of water filling.
    WsIlp(WsParams) = "ws-ilp", all: true,
        build: |p| Box::new(warped_slicer::WarpedSlicer::new(p, Solver::Ilp, "ws-ilp"));
    Oracle(OracleParams) = "oracle", all: true,
        build: |p| Box::new(oracle::Oracle { maximal_only: p.maximal_only, baselines: true });
    /// Punyala et al.'s run-time SM reallocation (Algorithm 1).
    Smra(SmraParams) = "smra", all: true,
        build: |p| Box::new(smra::Smra(p.clone()));
    /// Fixed per-application SM counts (Punyala's Profile-based baseline).
    SmCounts(SmCountsParams) = "sm-counts", all: false,
        build: |p| Box::new(baseline::SmCounts(p.clone()));
    /// CTA dispatch alternating between kernels, nothing reserved (a dispatch order, not
    /// a paper's policy).
    RoundRobin(NoParams) = "round-robin", all: false,
        build: |_p| Box::new(baseline::Baseline(baseline::Kind::RoundRobin));
    /// CUDA MPS: the hardware's left-over concurrent dispatch of untransformed kernels
    /// (exactly `left-over`, the baseline's name in SiM and Slate, by default), with each
    /// client's `active_thread_percentage` turned into an SM limit.
    Mps(mps::MpsParams) = "mps", all: false,
        build: |p| Box::new(mps::Mps(p.clone()));
    /// MPS static SM partitions: SM counts per client, memory shared.
    MpsPartition(mps::MpsPartitionParams) = "mps-partition", all: false,
        build: |p| Box::new(mps::Partition { kind: mps::Kind2::MpsPartition, sms: p.sms.clone(), cc: String::new() });
    /// Green contexts: SM partitions inside one process, with the per-architecture
    /// minimum and alignment enforced; memory shared.
    GreenContext(mps::GreenParams) = "green-context", all: false,
        build: |p| Box::new(mps::Partition { kind: mps::Kind2::GreenContext, sms: p.sms.clone(), cc: p.compute_capability.clone() });
    /// Multi-Instance GPU: a layout of NVIDIA's profiles, each instance isolated in SMs,
    /// L2 and DRAM channels; applications in one instance share it as MPS clients.
    Mig(mig::MigParams) = "mig", all: false,
        build: |p| Box::new(mig::Mig(p.clone()));
    /// Time slicing between applications, each on the whole GPU (vanilla CUDA).
    TimeSlice(NoParams) = "time-slice", all: true,
        build: |_p| Box::new(exclusive::TimeSlice);
    /// One application after another, each on the whole GPU.
    Sequential(NoParams) = "sequential", all: true,
        build: |_p| Box::new(exclusive::Sequential);
    /// Persistent threads without a runtime service (SiM's PT baseline).
    Pt(persistent::PtParams) = "pt", all: true,
        build: |p| Box::new(persistent::Pt(p.clone()));
    /// SiM: persistent threads resized by a host service (greedy min-max remaining time).
    Sim(sim::SimParams) = "sim", all: true, prep: SimProfiles, figures: Sim,
        build: |p| Box::new(sim::Sim(p.clone()));
    /// Slate: complementary kernels co-run on SM ranges, resized on arrival and completion.
    Slate(slate::SlateParams) = "slate", all: true, prep: SlateClasses, figures: Slate,
        build: |p| Box::new(slate::Slate(p.clone()));
    /// UGPU's balanced partition (BP): equal slices of SMs and memory channels.
    Bp(NoParams) = "bp", all: false,
        build: |_p| Box::new(ugpu::Balanced::Bp);
    /// BP-BS: the first application's slice holds 3/4 of the SMs and channels.
    BpBs(NoParams) = "bp-bs", all: false,
        build: |_p| Box::new(ugpu::Balanced::BigSmall);
    /// BP-SB: the second application's slice holds 3/4 of the SMs and channels.
    BpSb(NoParams) = "bp-sb", all: false,
        build: |_p| Box::new(ugpu::Balanced::SmallBig);
    /// UGPU: demand-aware unbalanced slices, channels moved by PageMove.
    Ugpu(ugpu::UgpuParams) = "ugpu", all: false, figures: Ugpu, figure_prep: UgpuClasses,
        build: |p| Box::new(ugpu::Ugpu { params: p.clone(), migration: Some(engine::Migration::PageMove), qos: false });
    /// UGPU with traditional page migration through the crossbar and L2 (UGPU-Ori).
    UgpuOri(ugpu::UgpuParams) = "ugpu-ori", all: false,
        build: |p| Box::new(ugpu::Ugpu { params: p.clone(), migration: Some(engine::Migration::Copy), qos: false });
    /// UGPU with in-stack READ/WRITE page copies: the custom mapping without PageMove's
    /// crossbar and parallel mode (UGPU-Soft).
    UgpuSoft(ugpu::UgpuParams) = "ugpu-soft", all: false,
        build: |p| Box::new(ugpu::Ugpu { params: p.clone(), migration: Some(engine::Migration::Soft), qos: false });
    /// UGPU with slices from offline profiles and no run-time reallocation.
    UgpuOffline(ugpu::UgpuParams) = "ugpu-offline", all: false,
        build: |p| Box::new(ugpu::Ugpu { params: p.clone(), migration: None, qos: false });
    /// QoS-aware UGPU (§6.7): UGPU that keeps the high-priority application at
    /// `qos_target` of its alone progress.
    UgpuQos(ugpu::UgpuParams) = "ugpu-qos", all: false,
        build: |p| Box::new(ugpu::Ugpu { params: p.clone(), migration: Some(engine::Migration::PageMove), qos: true });
    /// BP (CD-Search): SMs move between BP slices by search; channels stay isolated.
    CdSearch(ugpu::CdSearchParams) = "cd-search", all: false,
        build: |p| Box::new(ugpu::CdSearch(p.clone()));
    /// MPS with QoS: the high-priority application gets 3/4 of the SMs; memory shared.
    MpsQos(ugpu::QosParams) = "mps-qos", all: false,
        build: |p| Box::new(ugpu::MpsQos(p.clone()));
    /// QoS-aware BP: the high-priority application's slice holds 3/4 of SMs and channels.
    BpQos(ugpu::QosParams) = "bp-qos", all: false,
        build: |p| Box::new(ugpu::BpQos(p.clone()));
}

impl PolicySpec {
    /// The policy called `name` with parameters `params` (the keys of its study-file table
    /// or of `--policy-param NAME.KEY=VALUE`); missing parameters take their defaults.
    pub fn parse(name: &str, params: &toml::Table) -> Result<PolicySpec> {
        if !Self::REGISTRY.iter().any(|(n, _)| *n == name) {
            return Err(Error::Usage(format!(
                "unknown policy `{name}`; expected one of {} or `all`",
                Self::REGISTRY
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let mut t = params.clone();
        if t.contains_key("policy") {
            return Err(Error::Usage(format!(
                "policy {name}: `policy` is not a parameter"
            )));
        }
        t.insert("policy".into(), toml::Value::String(name.into()));
        let spec = PolicySpec::deserialize(toml::Value::Table(t))
            .map_err(|e| Error::Usage(format!("parameters of policy {name}: {e}")))?;
        spec.check()
            .map_err(|e| Error::Usage(format!("parameters of policy {name}: {e}")))?;
        Ok(spec)
    }

    /// Why parameters that name applications (`sm-counts.sms`, `sim.profiles`,
    /// `slate.classes`, a QoS policy's `high`) name one that is not in `apps`, if one does.
    pub fn check_apps(&self, apps: &[&str]) -> std::result::Result<(), ParamError> {
        // (key, entry, the application it names)
        let named: Vec<(&str, &str, &str)> = match self {
            PolicySpec::SmCounts(p) => p.sms.keys().map(|k| ("sms", &k[..], &k[..])).collect(),
            PolicySpec::Sim(p) => p
                .profiles
                .keys()
                .map(|k| {
                    (
                        "profiles",
                        &k[..],
                        k.rsplit_once('#').map_or(&k[..], |x| x.0),
                    )
                })
                .collect(),
            PolicySpec::Slate(p) => p
                .classes
                .keys()
                .map(|k| ("classes", &k[..], &k[..]))
                .collect(),
            PolicySpec::Ugpu(p)
            | PolicySpec::UgpuOri(p)
            | PolicySpec::UgpuSoft(p)
            | PolicySpec::UgpuOffline(p)
            | PolicySpec::UgpuQos(p) => p.high.iter().map(|h| ("high", &h[..], &h[..])).collect(),
            PolicySpec::MpsQos(p) | PolicySpec::BpQos(p) => {
                p.high.iter().map(|h| ("high", &h[..], &h[..])).collect()
            }
            _ => Vec::new(),
        };
        match named.into_iter().find(|x| !apps.contains(&x.2)) {
            Some((key, entry, n)) => Err(ParamError(format!(
                "{key}: `{entry}` names application `{n}`, which is not among the applications"
            ))),
            None => Ok(()),
        }
    }

    /// Cycles each application runs alone for the policy's offline profiles, if it takes
    /// any (they must fit in the run's cycle cap).
    pub fn profile_cycles(&self) -> Option<u64> {
        match self {
            PolicySpec::UgpuOffline(p) | PolicySpec::UgpuQos(p) => Some(p.profile_cycles),
            PolicySpec::MpsQos(p) | PolicySpec::BpQos(p) => Some(p.profile_cycles),
            _ => None,
        }
    }

    /// [`PolicySpec::check_apps`] against the applications of a command-line run, and its
    /// offline profiles against the run's cycle cap (`--max-cycles`); errors name the
    /// policy and the key.
    pub fn check_run(&self, apps: &[&str], max_cycles: u64) -> Result<()> {
        let bad = |e: String| Error::Usage(format!("parameters of policy {}: {e}", self.name()));
        self.check_apps(apps)
            .map_err(|e| bad(format!("{e} ({})", apps.join(", "))))?;
        if let Some(c) = self.profile_cycles().filter(|&c| c > max_cycles) {
            return Err(bad(format!(
                "profile_cycles = {c} exceeds the cycle cap (max_cycles = {max_cycles}): the \
                 offline profiles must fit in it"
            )));
        }
        Ok(())
    }

    /// The registry line of the policy called `name`, if one is.
    pub fn entry(name: &str) -> Option<&'static Entry> {
        Self::ENTRIES.iter().find(|e| e.name == name)
    }

    /// The figure set called `name` (a study file's `figures`) and what drawing it
    /// prepares, if a policy owns one by that name.
    pub fn figure_set(name: &str) -> Option<(FigureSet, Prep)> {
        let e = Self::entry(name)?;
        Some((e.figures?, e.figure_prep))
    }

    /// The names of every figure set, in registry order.
    pub fn figure_set_names() -> Vec<&'static str> {
        Self::ENTRIES
            .iter()
            .filter(|e| e.figures.is_some())
            .map(|e| e.name)
            .collect()
    }

    /// The policy called `name`, with default parameters.
    pub fn from_name(name: &str) -> Result<PolicySpec> {
        Self::parse(name, &toml::Table::new())
    }

    /// The names `all` stands for, in registry order.
    pub fn all_names() -> Vec<&'static str> {
        Self::REGISTRY
            .iter()
            .filter(|(_, all)| *all)
            .map(|(n, _)| *n)
            .collect()
    }

    /// A comma-separated list of names, or `all`, each with its parameters from `params`
    /// (policy name → table).
    pub fn parse_list(list: &str) -> Result<Vec<PolicySpec>> {
        Self::parse_list_with(list, &Default::default())
    }

    pub fn parse_list_with(
        list: &str,
        params: &std::collections::BTreeMap<String, toml::Table>,
    ) -> Result<Vec<PolicySpec>> {
        let names: Vec<&str> = if list.trim() == "all" {
            Self::all_names()
        } else {
            list.split(',').map(str::trim).collect()
        };
        if names.iter().any(|n| n.is_empty()) {
            return Err(Error::Usage(format!(
                "empty policy name in `{list}`; expected a comma-separated list such as left-over,even,warped-slicer"
            )));
        }
        for k in params.keys() {
            if !names.contains(&k.as_str()) {
                return Err(Error::Usage(format!(
                    "parameters given for policy `{k}`, which is not among the policies run ({})",
                    names.join(", ")
                )));
            }
        }
        let empty = toml::Table::new();
        names
            .into_iter()
            .map(|n| Self::parse(n, params.get(n).unwrap_or(&empty)))
            .collect()
    }
}

/// Adds `from`'s entries whose keys `to` lacks.
fn fill_missing<V: Clone>(
    to: &mut std::collections::BTreeMap<String, V>,
    from: &std::collections::BTreeMap<String, V>,
) {
    for (k, v) in from {
        to.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// Parses `--policy-param NAME.KEY=VALUE` arguments (VALUE in TOML syntax; a bare word is
/// a string) into one parameter table per policy.
pub fn parse_params(args: &[String]) -> Result<std::collections::BTreeMap<String, toml::Table>> {
    let mut out: std::collections::BTreeMap<String, toml::Table> = Default::default();
    for a in args {
        let bad = || {
            Error::Usage(format!(
                "--policy-param `{a}`: expected POLICY.KEY=VALUE, e.g. warped-slicer.sample=5000"
            ))
        };
        if a.contains(['\n', '\r']) {
            return Err(Error::Usage(format!(
                "--policy-param `{}`: a line break inside one parameter; give each \
                 POLICY.KEY=VALUE as its own --policy-param",
                a.escape_debug()
            )));
        }
        let (lhs, v) = a.split_once('=').ok_or_else(bad)?;
        let (policy, key) = lhs.trim().split_once('.').ok_or_else(bad)?;
        if policy.is_empty() || key.is_empty() {
            return Err(bad());
        }
        let v = v.trim();
        let value = toml::from_str::<toml::Table>(&format!("x = {v}"))
            .ok()
            .and_then(|mut t| t.remove("x"))
            .unwrap_or_else(|| toml::Value::String(v.to_string()));
        out.entry(policy.to_string())
            .or_default()
            .insert(key.trim().to_string(), value);
    }
    Ok(out)
}

/// What running a policy on a workload gave.
pub struct Outcome {
    pub policy: String,
    pub partition: String,
    pub ctas: Option<Vec<u32>>,
    pub stats: RunStats,
    pub runs: usize,
    pub log: Vec<String>,
    /// Each application's persistent-thread form in the chosen plan (`None`: as given).
    pub persistent: Vec<Option<engine::Persistent>>,
}

/// Runs every plan of `policy` on `w` (in parallel) and keeps the best one (highest
/// combined IPC; the first on ties).
pub fn execute(policy: &dyn Policy, w: &Workload, max_cycles: u64) -> Result<Outcome> {
    execute_sampled(policy, w, max_cycles, 0)
}

/// [`execute`], taking occupancy samples every `sample_every` cycles (0: none).
pub fn execute_sampled(
    policy: &dyn Policy,
    w: &Workload,
    max_cycles: u64,
    sample_every: u64,
) -> Result<Outcome> {
    execute_with(policy, w, max_cycles, sample_every, None)
}

/// [`execute_sampled`] with steady-state fast-forward (`None`: off).
pub fn execute_with(
    policy: &dyn Policy,
    w: &Workload,
    max_cycles: u64,
    sample_every: u64,
    fast_forward: Option<FastForward>,
) -> Result<Outcome> {
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
                sample_every,
                max_cycles,
                fast_forward,
            };
            let apps = plan.apps.as_deref().unwrap_or(w.apps);
            if apps.len() != w.apps.len() {
                return Err(Error::Usage(format!(
                    "policy {}: a plan transformed {} applications into {}",
                    policy.name(),
                    w.apps.len(),
                    apps.len()
                )));
            }
            let stats = engine::run(w.spec, apps, &cfg, plan.control.as_mut())?;
            let persistent = apps.iter().map(|a| a.persistent).collect();
            let (partition, ctas) = plan.control.chosen().unwrap_or((plan.label, plan.ctas));
            Ok(Outcome {
                policy: policy.name(),
                partition,
                ctas,
                stats,
                runs: n,
                log: plan.control.log(),
                persistent,
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

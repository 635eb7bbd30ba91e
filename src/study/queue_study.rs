//! A queue study (`kind = "queue"` study file, Punyala et al. §IV end to end): classify
//! every application of the suite from its full alone run, measure the interference
//! matrix, build seeded waiting queues for each concurrency (N_G applications at a time,
//! queue of N_q) and class mix, and run each queue under each policy:
//!
//! * `spatial` (called `even` before: Punyala's Even baseline): arrival order, SMs split
//!   equally (the `spatial` policy);
//! * `profile-based` (Adriaens et al.): arrival order, each application its profiled SM
//!   count ([`profiled_sms`]) (the `sm-counts` policy);
//! * `ilp`: groups from the class-pattern ILP, SMs split equally;
//! * `ilp-smra`: the same groups, then SMRA at run time;
//! * `ilp-app`: the ILP with each application its own class (the per-application
//!   interference matrix), SMs split equally — exact matching, at the price of measuring
//!   every application pair.
//!
//! A queue policy is a grouping (arrival order or an ILP) and the [`PolicySpec`] each group
//! runs under. Groups are independent runs; the same (group, policy) met in several queues
//! or queue policies is run once. Every run is deterministic, so the results are too.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::interference::{measure, measure_apps};
use super::queue::{
    arrival_groups, ilp_groups, make_queue, profiled_sms, run_group, ClassMix, GroupRun, QueueRun,
};
use super::{load, Bench, Loaded, Mode, Setup};
use crate::arch::GpuSpec;
use crate::engine::{run_static, AppSpec, RunConfig};
use crate::error::{Error, Result};
use crate::metrics::{
    QueueApp, QueueCell, QueueStudyResults, SlowdownMatrix, QUEUE_KIND, SCHEMA_VERSION,
};
use crate::policy::pattern::Interference;
use crate::policy::{PolicySpec, SmCountsParams, SmraParams};
use crate::profile::class::punyala::{classify, PunyalaClass, PunyalaThresholds};
use crate::profile::metrics::{Metrics, Mix};

/// The classes, in the order of the matrices and mixes.
pub const CLASSES: [PunyalaClass; 4] = [
    PunyalaClass::M,
    PunyalaClass::MC,
    PunyalaClass::C,
    PunyalaClass::A,
];

/// A policy of a queue study.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueuePolicy {
    /// Punyala's Even: arrival groups, SMs split equally (the `spatial` policy).
    Spatial,
    ProfileBased,
    Ilp,
    IlpSmra,
    IlpApp,
}

impl QueuePolicy {
    pub fn name(self) -> &'static str {
        match self {
            QueuePolicy::Spatial => "spatial",
            QueuePolicy::ProfileBased => "profile-based",
            QueuePolicy::Ilp => "ilp",
            QueuePolicy::IlpSmra => "ilp-smra",
            QueuePolicy::IlpApp => "ilp-app",
        }
    }
    /// The policy each group of the queue runs under: SMRA with the study's parameters,
    /// the profiled SM counts, or equal SM blocks.
    pub fn sharing(self, smra: &SmraParams, profiled: &BTreeMap<String, u32>) -> PolicySpec {
        match self {
            QueuePolicy::ProfileBased => PolicySpec::SmCounts(SmCountsParams {
                sms: profiled.clone(),
                label: Some("profile-based".into()),
            }),
            QueuePolicy::IlpSmra => PolicySpec::Smra(smra.clone()),
            _ => PolicySpec::Spatial(Default::default()),
        }
    }
}

/// One concurrency level: groups of `size` from a queue of `queue` applications.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ways {
    pub size: usize,
    pub queue: usize,
}

/// The Profile-based baseline's isolated SM sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileParams {
    /// SM counts tried (each ≤ the GPU's).
    pub points: Vec<u32>,
    /// The smallest count reaching this fraction of the best IPC wins.
    pub knee: f64,
}

impl Default for ProfileParams {
    fn default() -> Self {
        ProfileParams {
            points: vec![6, 12, 18, 24, 30, 36, 42, 48, 54, 60],
            knee: 0.95,
        }
    }
}

/// Longest waiting queue a queue study may draw.
pub const MAX_QUEUE: usize = 1024;
/// Most applications in one group (one engine run).
pub const MAX_GROUP: usize = 16;
/// Most group runs a queue study may ask for (Σ over ways of queue / size, times mixes
/// and policies).
pub const MAX_GROUP_RUNS: u64 = 100_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueStudySpec {
    /// Must be `queue`.
    pub kind: String,
    pub name: String,
    /// Built-in model name or a model file.
    pub gpu: String,
    /// Each application's work is what it executes alone in this many cycles (0: its
    /// kernels once, to completion).
    pub window: u64,
    /// Window of the pair co-runs that measure interference (default: `window`, or 20,000
    /// cycles in completion mode).
    #[serde(default)]
    pub interference_window: Option<u64>,
    /// Seed of the queue generator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub policies: Vec<QueuePolicy>,
    /// The paper's ranking of the policies it evaluated, best first (throughput against
    /// the first policy): the summary sets ours beside it with Kendall's τ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paper_ranking: Vec<QueuePolicy>,
    /// `equal` or `<class>-oriented`.
    pub mixes: Vec<String>,
    pub ways: Vec<Ways>,
    #[serde(default)]
    pub thresholds: PunyalaThresholds,
    #[serde(default)]
    pub profile: ProfileParams,
    #[serde(default)]
    pub smra: SmraParams,
    /// `class` is the expected (published) class; the study uses the measured one.
    pub benches: Vec<Bench>,
    #[serde(default = "default_max_cycles")]
    pub max_cycles: u64,
    /// Steady-state fast-forward for the runs of the study, as in a study file: on with the
    /// engine's plain defaults when absent, `[fast_forward]` to set its keys,
    /// `fast_forward = false` to simulate every cycle. `--fast-forward` /
    /// `--no-fast-forward` override it.
    #[serde(
        default = "super::spec::ff_setting::on",
        with = "super::spec::ff_setting"
    )]
    pub fast_forward: Option<crate::engine::FastForward>,
}

fn default_seed() -> u64 {
    1
}

fn default_max_cycles() -> u64 {
    100_000_000
}

/// `equal`, `M-oriented`, ... (case-insensitive) as a mix over [`CLASSES`].
fn parse_mix(s: &str) -> std::result::Result<ClassMix, String> {
    let l = s.to_ascii_lowercase();
    if l == "equal" {
        return Ok(ClassMix::Equal);
    }
    let c = l.strip_suffix("-oriented").unwrap_or("");
    CLASSES
        .iter()
        .position(|k| k.name().eq_ignore_ascii_case(c))
        .map(ClassMix::Oriented)
        .ok_or_else(|| {
            format!("unknown class mix `{s}`; expected equal, M-oriented, MC-oriented, C-oriented or A-oriented")
        })
}

fn mix_name(m: ClassMix) -> String {
    match m {
        ClassMix::Equal => "equal".into(),
        ClassMix::Oriented(c) => format!("{}-oriented", CLASSES[c].name()),
    }
}

impl super::spec::StudyFile for QueueStudySpec {
    fn benches_mut(&mut self) -> &mut Vec<Bench> {
        &mut self.benches
    }
    fn gpu_mut(&mut self) -> &mut String {
        &mut self.gpu
    }
    fn check(&self) -> std::result::Result<(), super::spec::StudyFileError> {
        QueueStudySpec::check(self)
    }
}

impl QueueStudySpec {
    /// Reads and checks a queue study file; paths become relative to its folder.
    pub fn load(path: &Path) -> Result<QueueStudySpec> {
        super::spec::load_file(path)
    }

    /// Every value checked before any simulation: errors name the key and what is wrong.
    pub fn check(&self) -> std::result::Result<(), super::spec::StudyFileError> {
        self.problem().map_err(super::spec::StudyFileError)
    }

    fn problem(&self) -> std::result::Result<(), String> {
        if self.kind != QUEUE_KIND {
            return Err(format!("`kind` must be \"{QUEUE_KIND}\""));
        }
        if self.policies.is_empty() || self.mixes.is_empty() || self.ways.is_empty() {
            return Err("`policies`, `mixes` and `ways` must not be empty".into());
        }
        for m in &self.mixes {
            parse_mix(m)?;
        }
        for w in &self.ways {
            if w.size < 1 || w.queue < w.size {
                return Err(format!(
                    "ways: groups of {} from a queue of {}: need 1 ≤ size ≤ queue",
                    w.size, w.queue
                ));
            }
            // Bounds on the work and memory a study file can ask for: every group is an
            // engine run holding `size` applications, and the pattern ILP grows with the
            // queue.
            if w.queue > MAX_QUEUE || w.size > MAX_GROUP {
                return Err(format!(
                    "ways: groups of {} from a queue of {}: expected a queue of at most \
                     {MAX_QUEUE} and groups of at most {MAX_GROUP} applications",
                    w.size, w.queue
                ));
            }
        }
        // At most this many group runs in all (before deduplication).
        let runs: u64 = self
            .ways
            .iter()
            .map(|w| w.queue.div_ceil(w.size) as u64)
            .sum::<u64>()
            * (self.mixes.len() * self.policies.len()) as u64;
        if runs > MAX_GROUP_RUNS {
            return Err(format!(
                "ways x mixes x policies ask for up to {runs} group runs; expected at most \
                 {MAX_GROUP_RUNS} (shorten the queues or list fewer mixes or policies)"
            ));
        }
        if self.benches.is_empty() {
            return Err("`benches` is empty".into());
        }
        let mut names: Vec<&str> = self.benches.iter().map(|b| b.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("benchmark `{}` is listed twice", w[0]));
        }
        if self.profile.points.is_empty() || !(self.profile.knee > 0.0 && self.profile.knee <= 1.0)
        {
            return Err("profile: need SM points and 0 < knee ≤ 1".into());
        }
        self.check_repeats()?;
        let t = &self.thresholds;
        for (k, v) in [
            ("alpha", t.alpha),
            ("beta", t.beta),
            ("gamma", t.gamma),
            ("delta", t.delta),
            ("epsilon", t.epsilon),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "thresholds.{k} must be a finite number of at least 0, got {v}"
                ));
            }
        }
        if self.profile.points.contains(&0) {
            return Err("profile.points lists 0 SMs; expected positive SM counts".into());
        }
        if self.interference_window == Some(0) {
            return Err("`interference_window` must be positive".into());
        }
        crate::policy::Params::check(&self.smra).map_err(|e| format!("[smra]: {e}"))?;
        if let Some(f) = &self.fast_forward {
            f.check().map_err(|e| format!("[fast_forward] {e}"))?;
        }
        if self.max_cycles == 0 {
            return Err("max_cycles must be positive".into());
        }
        Ok(())
    }
}

impl QueueStudySpec {
    /// No list names a policy, mix, concurrency level or SM point twice (it would run, or
    /// be counted, twice).
    fn check_repeats(&self) -> std::result::Result<(), String> {
        fn twice<T: PartialEq>(l: &[T]) -> Option<&T> {
            l.iter()
                .enumerate()
                .find(|(i, x)| l[..*i].contains(x))
                .map(|x| x.1)
        }
        if let Some(p) = twice(&self.policies) {
            return Err(format!("policies lists `{}` twice", p.name()));
        }
        let mixes: Vec<String> = self.mixes.iter().map(|m| m.to_ascii_lowercase()).collect();
        if let Some(m) = twice(&mixes) {
            return Err(format!("mixes lists `{m}` twice"));
        }
        if let Some(w) = twice(&self.ways) {
            return Err(format!(
                "ways lists {{ size = {}, queue = {} }} twice",
                w.size, w.queue
            ));
        }
        if let Some(p) = twice(&self.profile.points) {
            return Err(format!("profile.points lists {p} twice"));
        }
        Ok(())
    }
}

/// Whether a study file is a queue study (`kind = "queue"`), without checking the rest.
pub fn is_queue_study(path: &Path) -> bool {
    crate::infile::read_to_string(path)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| {
            t.get("kind")
                .and_then(|k| k.as_str().map(|s| s == QUEUE_KIND))
        })
        .unwrap_or(false)
}

fn matrix(m: &Interference) -> SlowdownMatrix {
    SlowdownMatrix {
        labels: m.classes.clone(),
        s: m.s.clone(),
    }
}

/// Classifies each application from its full alone run (in parallel).
fn classify_all(
    spec: &GpuSpec,
    inputs: &[(String, AppSpec)],
    t: &PunyalaThresholds,
    max_cycles: u64,
    fast_forward: Option<crate::engine::FastForward>,
) -> Result<Vec<crate::profile::class::punyala::PunyalaLabel>> {
    inputs
        .par_iter()
        .map(|(_, app)| {
            let cfg = RunConfig {
                max_cycles,
                fast_forward,
                ..RunConfig::completion(1)
            };
            let stats = run_static(spec, std::slice::from_ref(app), &cfg)?;
            Ok(classify(&Metrics::new(spec, &stats, Mix::of(app)?), t))
        })
        .collect()
}

/// A queue's groups under one policy, and the ILP's objective.
type Groups = (Vec<Vec<String>>, Option<f64>);

fn groups_of(
    policy: QueuePolicy,
    queue: &[(String, usize)],
    ng: usize,
    classes: &Interference,
    apps: Option<&Interference>,
) -> Result<Groups> {
    let names = |g: Vec<Vec<(String, usize)>>| -> Vec<Vec<String>> {
        g.into_iter()
            .map(|g| g.into_iter().map(|(n, _)| n).collect())
            .collect()
    };
    Ok(match policy {
        QueuePolicy::Spatial | QueuePolicy::ProfileBased => {
            (names(arrival_groups(queue, ng)), None)
        }
        QueuePolicy::Ilp | QueuePolicy::IlpSmra => {
            let (g, obj) = ilp_groups(queue, ng, classes)?;
            (names(g), Some(obj))
        }
        QueuePolicy::IlpApp => {
            let m = apps.expect("the per-application matrix is measured for ilp-app");
            let idx = |n: &str| m.classes.iter().position(|x| x == n).unwrap_or(0);
            let q: Vec<(String, usize)> = queue.iter().map(|(n, _)| (n.clone(), idx(n))).collect();
            let (g, obj) = ilp_groups(&q, ng, m)?;
            (names(g), Some(obj))
        }
    })
}

/// Each benchmark's SM count from its SM-count profile (`[profile]`), when the study runs
/// the profile-based policy (empty otherwise).
fn profile_sm_counts(
    setup: &Setup,
    st: &QueueStudySpec,
    benches: &[Loaded],
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<BTreeMap<String, u32>> {
    let spec = setup.spec;
    let mut profiled = BTreeMap::new();
    if st.policies.contains(&QueuePolicy::ProfileBased) {
        progress("profiling SM counts", 0, benches.len());
        let points: Vec<u32> = st
            .profile
            .points
            .iter()
            .copied()
            .filter(|&p| p >= 1 && p <= spec.sm.count)
            .collect();
        let counts: Vec<u32> = benches
            .par_iter()
            .map(|b| profiled_sms(setup, &b.app, &points, st.profile.knee))
            .collect::<Result<_>>()?;
        for (b, c) in benches.iter().zip(counts) {
            profiled.insert(b.name.clone(), c);
        }
    }
    Ok(profiled)
}

/// One cell of a queue study before it runs: a queue and one policy's groups of it.
struct QueuePlan {
    ways: usize,
    mix: String,
    policy: QueuePolicy,
    queue: Vec<String>,
    groups: Vec<Vec<String>>,
    objective: Option<f64>,
}

/// Every (ways, mix) queue of the study and each policy's groups of it.
fn plan_queues(
    st: &QueueStudySpec,
    path: &Path,
    classes: &[String],
    benches: &[Loaded],
    class_m: &Interference,
    app_m: Option<&Interference>,
) -> Result<Vec<QueuePlan>> {
    // The queues and every policy's groups.
    let reps: Vec<Vec<String>> = classes
        .iter()
        .map(|c| {
            benches
                .iter()
                .filter(|b| &b.class == c)
                .map(|b| b.name.clone())
                .collect()
        })
        .collect();
    let mut plans = Vec::new();
    for w in &st.ways {
        for (mi, m) in st.mixes.iter().enumerate() {
            let mix = parse_mix(m).map_err(Error::Usage)?;
            let seed = st
                .seed
                .wrapping_mul(1000)
                .wrapping_add((w.size * 100 + mi) as u64);
            let queue = make_queue(&reps, w.queue, mix, seed).map_err(|e| {
                Error::Usage(format!(
                    "{}: {e} (measured classes: {})",
                    path.display(),
                    benches
                        .iter()
                        .map(|b| format!("{} {}", b.name, b.class))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            for &p in &st.policies {
                let (groups, objective) = groups_of(p, &queue, w.size, class_m, app_m)?;
                plans.push(QueuePlan {
                    ways: w.size,
                    mix: mix_name(mix),
                    policy: p,
                    queue: queue.iter().map(|(n, _)| n.clone()).collect(),
                    groups,
                    objective,
                });
            }
        }
    }
    Ok(plans)
}

/// The results' per-application rows: labels, alone figures, profiled SM counts.
fn queue_apps(
    benches: &[Loaded],
    labels: &[crate::profile::class::punyala::PunyalaLabel],
    st: &QueueStudySpec,
    profiled: &BTreeMap<String, u32>,
) -> Vec<QueueApp> {
    benches
        .iter()
        .zip(labels)
        .zip(&st.benches)
        .map(|((b, l), sb)| QueueApp {
            name: b.name.clone(),
            expected_class: sb.class.clone(),
            class: b.class.clone(),
            exact: l.exact,
            why: l.why.clone(),
            warp_insts: b.alone.warp_insts,
            alone_ipc: b.alone.ipc,
            profiled_sms: profiled.get(&b.name).copied(),
        })
        .collect()
}

/// Runs a queue study file end to end.
pub fn run_queue_study(
    path: &Path,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<QueueStudyResults> {
    run_queue_study_with(path, None, progress)
}

/// [`run_queue_study`] with fast-forward chosen on the command line: `Some(Some(_))` on,
/// `Some(None)` off, `None` as the study file says (`[fast_forward]`). It applies to the
/// classifying alone runs, the alone references, the interference windows, the SM-count
/// profiles and the queue runs.
pub fn run_queue_study_with(
    path: &Path,
    fast_forward: Option<Option<crate::engine::FastForward>>,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<QueueStudyResults> {
    let mut st = QueueStudySpec::load(path)?;
    let fast_forward = fast_forward.unwrap_or(st.fast_forward);
    // The results' copy of the study file says what ran.
    st.fast_forward = fast_forward;
    let spec = GpuSpec::resolve(&st.gpu)?;
    let opts = crate::trace::accel::ParseOptions::default();
    let inputs: Vec<(String, AppSpec)> = st
        .benches
        .iter()
        .map(|b| {
            let app = crate::trace::app::open_app(&b.path, &opts)?;
            Ok((b.name.clone(), AppSpec::new(b.name.clone(), app.kernels)))
        })
        .collect::<Result<_>>()?;

    progress("classifying", 0, inputs.len());
    let labels = classify_all(&spec, &inputs, &st.thresholds, st.max_cycles, fast_forward)?;
    let classes: Vec<String> = CLASSES.iter().map(|c| c.name().to_string()).collect();

    let mode = if st.window > 0 {
        Mode::Budget { window: st.window }
    } else {
        Mode::Completion
    };
    let stage = std::sync::Mutex::new("alone runs");
    let tick = |d: usize, t: usize| progress(stage.lock().map(|s| *s).unwrap_or(""), d, t);
    let setup = Setup {
        spec: &spec,
        mode,
        max_cycles: st.max_cycles,
        fast_forward,
        progress: &tick,
    };
    progress("alone runs", 0, inputs.len());
    let benches: Vec<Loaded> = load(
        &setup,
        inputs
            .iter()
            .zip(&labels)
            .map(|((n, a), l)| (n.clone(), l.class.name().to_string(), a.clone()))
            .collect(),
    )?;

    let use_apps = st.policies.contains(&QueuePolicy::IlpApp);
    let iw = st
        .interference_window
        .unwrap_or(if st.window > 0 { st.window } else { 20_000 });
    *stage.lock().expect("not poisoned") = "interference";
    progress("interference", 0, benches.len() * (benches.len() + 1) / 2);
    let (class_m, app_m) = if use_apps {
        let a = measure_apps(&setup, &benches, iw)?;
        (a.by_class(&classes)?, Some(a.full()?))
    } else {
        (measure(&setup, &benches, &classes, iw)?, None)
    };

    let profiled = profile_sm_counts(&setup, &st, &benches, progress)?;

    let plans = plan_queues(&st, path, &classes, &benches, &class_m, app_m.as_ref())?;

    // Each distinct (group, policy) once, in parallel (keyed by the policy's JSON, which
    // names it and every parameter).
    let sharing = |p: QueuePolicy| p.sharing(&st.smra, &profiled);
    let key = |p: QueuePolicy| serde_json::to_string(&sharing(p)).expect("serialisable");
    let mut jobs: BTreeMap<(Vec<String>, String), usize> = BTreeMap::new();
    let mut specs: BTreeMap<String, PolicySpec> = BTreeMap::new();
    for p in &plans {
        specs
            .entry(key(p.policy))
            .or_insert_with(|| sharing(p.policy));
        for g in &p.groups {
            let n = jobs.len();
            jobs.entry((g.clone(), key(p.policy))).or_insert(n);
        }
    }
    let mut list: Vec<(&(Vec<String>, String), usize)> =
        jobs.iter().map(|(k, &i)| (k, i)).collect();
    list.sort_by_key(|x| x.1);
    let done = AtomicUsize::new(0);
    progress("queue groups", 0, list.len());
    let runs: Vec<GroupRun> = list
        .par_iter()
        .map(|((g, how), _)| {
            let r = run_group(&setup, &benches, g, &specs[how]);
            progress(
                "queue groups",
                done.fetch_add(1, Ordering::Relaxed) + 1,
                list.len(),
            );
            r
        })
        .collect::<Result<_>>()?;

    let cells = plans
        .into_iter()
        .map(|p| {
            let rs: Vec<GroupRun> = p
                .groups
                .iter()
                .map(|g| runs[jobs[&(g.clone(), key(p.policy))]].clone())
                .collect();
            let q = QueueRun::of(&p.groups, &rs);
            QueueCell {
                ways: p.ways,
                mix: p.mix,
                policy: p.policy.name().into(),
                queue: p.queue,
                groups: p.groups,
                objective: p.objective,
                cycles: q.cycles,
                warp_insts: q.warp_insts,
                throughput: q.throughput,
                app_ipc: q.app_ipc,
            }
        })
        .collect();

    let apps = queue_apps(&benches, &labels, &st, &profiled);
    Ok(QueueStudyResults {
        schema_version: SCHEMA_VERSION,
        kind: QUEUE_KIND.into(),
        study: st.name.clone(),
        config: serde_json::to_value(&st)
            .map_err(|e| Error::internal(format!("cannot record the study file: {e}")))?,
        apps,
        classes,
        interference: matrix(&class_m),
        app_interference: app_m.as_ref().map(matrix),
        cells,
        model: spec,
    })
}

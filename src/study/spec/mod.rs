//! A study file (`study.toml`): the GPU model, the benchmarks, the run mode, the policies,
//! Warped-Slicer's parameters and the workload groups, with paths relative to the file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use std::collections::BTreeMap;

use crate::policy::PolicySpec;

mod check;

/// How a group's workloads are formed from its benchmark lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupKind {
    /// Every `a` with every `b`.
    Cross,
    /// Every unordered pair within `a`.
    Within,
    /// Every unordered pair within `a` with every `b` (three applications).
    PairPlusOne,
    /// Every unordered pair within `a`, each benchmark with itself included (Slate's 15
    /// pairings of five: 10 distinct pairs and 5 self-pairs).
    WithSelf,
    /// `count` distinct mixes drawn at random (seed `seed`): `take_a` different
    /// benchmarks of `a` and `take_b` of `b` each (UGPU §6.5: 4 compute-bound + 4
    /// memory-bound).
    Random,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub name: String,
    pub kind: GroupKind,
    pub a: Vec<String>,
    #[serde(default)]
    pub b: Vec<String>,
    /// Policies for this group (default: the study's); `["all"]` as in the study's list.
    #[serde(default)]
    pub policies: Option<Vec<String>>,
    /// `random` groups: benchmarks per mix from `a` and from `b`, how many mixes, and the
    /// generator's seed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub take_a: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub take_b: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: u32,
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub seed: u64,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn is_zero64(x: &u64) -> bool {
    *x == 0
}

/// Distinct combinations of `k` of `n` (saturating).
fn choose(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    (0..k).fold(1u64, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

impl Group {
    /// The group's workloads, each a list of benchmark names, in a fixed order.
    pub fn workloads(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        match self.kind {
            GroupKind::Cross => {
                for a in &self.a {
                    for b in &self.b {
                        out.push(vec![a.clone(), b.clone()]);
                    }
                }
            }
            GroupKind::WithSelf => {
                for i in 0..self.a.len() {
                    for j in i..self.a.len() {
                        out.push(vec![self.a[i].clone(), self.a[j].clone()]);
                    }
                }
            }
            GroupKind::Random => out = self.random_mixes(),
            GroupKind::Within | GroupKind::PairPlusOne => {
                for i in 0..self.a.len() {
                    for j in i + 1..self.a.len() {
                        let pair = vec![self.a[i].clone(), self.a[j].clone()];
                        if self.kind == GroupKind::Within {
                            out.push(pair);
                        } else {
                            for b in &self.b {
                                let mut t = pair.clone();
                                t.push(b.clone());
                                out.push(t);
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

impl Group {
    /// A `random` group's mixes: `count` distinct draws (at most as many as exist), each
    /// side from the distinct names of its list. The draws are bounded, so whatever the
    /// lists hold (repeated names, more mixes asked for than exist) this terminates.
    fn random_mixes(&self) -> Vec<Vec<String>> {
        let a = distinct(&self.a);
        let b = distinct(&self.b);
        let (ka, kb) = (self.take_a as usize, self.take_b as usize);
        let possible =
            choose(a.len() as u64, ka as u64).saturating_mul(choose(b.len() as u64, kb as u64));
        let want = (self.count as u64)
            .min(possible)
            .min(MAX_RANDOM_MIXES as u64) as usize;
        let mut rng = crate::study::queue::SplitMix(self.seed);
        let pick = |rng: &mut crate::study::queue::SplitMix, from: &[String], k: usize| {
            let mut idx: Vec<usize> = (0..from.len()).collect();
            // Partial Fisher-Yates, then the list's own order.
            for i in 0..k {
                let j = i + rng.below(idx.len() - i);
                idx.swap(i, j);
            }
            let mut chosen: Vec<usize> = idx[..k].to_vec();
            chosen.sort_unstable();
            chosen
                .into_iter()
                .map(|i| from[i].clone())
                .collect::<Vec<_>>()
        };
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        // Drawing every one of n mixes takes about n ln n draws; far more means a bug.
        let mut tries = (want as u64).saturating_mul(64).saturating_add(4096);
        while out.len() < want && tries > 0 {
            tries -= 1;
            let mut mix = pick(&mut rng, &a, ka);
            mix.extend(pick(&mut rng, &b, kb));
            if seen.insert(mix.clone()) {
                out.push(mix);
            }
        }
        out
    }
}

/// Most mixes a `random` group may ask for.
pub const MAX_RANDOM_MIXES: u32 = 10_000;

/// The names of `list` without repeats, in first-appearance order.
fn distinct(list: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in list {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// The first name `list` holds twice, if any.
fn repeated<T: PartialEq>(list: &[T]) -> Option<&T> {
    list.iter()
        .enumerate()
        .find(|(i, x)| list[..*i].contains(x))
        .map(|(_, x)| x)
}

/// One benchmark: a name, an input (any format `open_app` reads) and its class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bench {
    pub name: String,
    pub path: PathBuf,
    #[serde(default)]
    pub class: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    pub name: String,
    /// Built-in model name or a model file.
    pub gpu: String,
    /// Each benchmark's instruction budget is what it executes alone in this many cycles
    /// (Warped-Slicer §V; the paper used 2 M cycles).
    #[serde(default)]
    pub window: u64,
    /// Window of the alone runs at a fixed CTA count (Fig. 3a curves); 0: no curves.
    #[serde(default)]
    pub curve_window: u64,
    /// Policy names, or `["all"]` for every policy `--policies all` runs (see [`expand`]).
    pub policies: Vec<String>,
    /// The policy normalised figures divide by (default: `left-over`, else the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// The policy whose gains the summary's headlines give against every other.
    #[serde(default)]
    pub proposed: Option<String>,
    /// The paper's ranking of the policies it evaluated, best first, by its headline
    /// measure: the summary sets ours beside it with Kendall's τ over the common ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paper_ranking: Vec<String>,
    /// Parameters per policy name (`[params.warped-slicer]` `sample = 3000`), parsed by
    /// [`PolicySpec::parse`]; a policy without a table takes its defaults.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Table>,
    pub benches: Vec<Bench>,
    pub groups: Vec<Group>,
    /// Safety stop per run, in cycles.
    #[serde(default = "default_max_cycles")]
    pub max_cycles: u64,
    /// Run every application's kernels once (completion mode, SiM and Slate) instead of to
    /// an instruction budget; `window` is then unused.
    #[serde(default)]
    pub completion: bool,
    /// Every run lasts exactly `window` cycles, applications relaunched when they finish,
    /// and progress is IPC over the window against IPC alone over the same window (UGPU
    /// §5) — instead of Warped-Slicer's instruction budgets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_window: bool,
    /// Arrival orders each two-application workload runs in (completion mode):
    /// `together`, `a-first`, `b-first` (the other arrives once the first has run
    /// `arrival_fraction` of its alone time). Default: together.
    #[serde(default)]
    pub arrivals: Vec<Arrival>,
    #[serde(default = "default_arrival_fraction")]
    pub arrival_fraction: f64,
    /// Workload categories from the applications' measured issue-slot utilisation alone:
    /// `low-isu` when one is below this, else `high-isu` (SiM §4.4); default: the group.
    #[serde(default)]
    pub isu_split: Option<f64>,
    /// The policy whose makespan the `makespan_speedup` measure divides (SiM §4.4:
    /// `sequential`).
    #[serde(default)]
    pub makespan_reference: Option<String>,
    /// Policies each benchmark also runs alone under (transformation overheads).
    #[serde(default)]
    pub solo: Vec<String>,
    /// A policy parameter swept with each benchmark alone (Slate Fig. 5: task size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solo_sweep: Option<SoloSweep>,
    /// Model parameters swept (`[sweep]` `"dram.channels" = [16, 24, 32]`): the whole study
    /// runs once per point of the grid of every listed value (keys in sorted order, the
    /// last varying fastest), each point on the model with those `--set` overrides.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, toml::Value>,
    /// Figure set: `warped-slicer` (default), `sim` or `slate`.
    #[serde(default)]
    pub figures: Option<String>,
    /// The first grid dimension of every benchmark is multiplied by this (synthetic specs
    /// only; 1: as written). Paper-scale runs: kernels as long as the paper's window.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub grid_scale: u32,
    /// Steady-state fast-forward for every run of the study: on with the engine's plain
    /// defaults when absent, `[fast_forward]` to set its keys (those of
    /// `engine::FastForward`, any left out at their defaults), `fast_forward = false` to
    /// simulate every cycle. `--fast-forward` / `--no-fast-forward` override it.
    #[serde(default = "ff_setting::on", with = "ff_setting")]
    pub fast_forward: Option<crate::engine::FastForward>,
    /// Benchmarks run alone on every slice of a grid of SM and channel counts (UGPU
    /// Fig. 4; `[slice_grid]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_grid: Option<SliceGrid>,
    /// Output folder, relative to the study file (default: the study file's folder;
    /// `--out` overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<PathBuf>,
}

/// A study file's `fast_forward` (study and queue-study files): absent or `true` on with the
/// engine's plain defaults, a table on with those keys, `false` off. Written back as `false`
/// or the table, so a result's copy of its study file says what ran.
pub(crate) mod ff_setting {
    use std::fmt;

    use serde::de::{self, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::engine::FastForward;

    /// The default when the key is absent: on.
    pub fn on() -> Option<FastForward> {
        Some(FastForward::default())
    }

    struct Setting;

    impl<'de> Visitor<'de> for Setting {
        type Value = Option<FastForward>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("true, false or a [fast_forward] table")
        }

        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(if v { on() } else { None })
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            // The table's own errors (an unknown key, a wrong type) come through as they are.
            FastForward::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FastForward>, D::Error> {
        d.deserialize_any(Setting)
    }

    pub fn serialize<S: Serializer>(v: &Option<FastForward>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(f) => f.serialize(s),
            None => false.serialize(s),
        }
    }
}

/// A policy list as a study file gives it: `["all"]` stands for every policy
/// `--policies all` runs ([`PolicySpec::all_names`]; those that cannot run a workload are
/// skipped for it, as `analyze` skips them); anything else is the names themselves.
pub fn expand(list: &[String]) -> Vec<String> {
    if is_all(list) {
        PolicySpec::all_names()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        list.to_vec()
    }
}

/// Whether a policy list is `["all"]`.
pub fn is_all(list: &[String]) -> bool {
    matches!(list, [x] if x == "all")
}

/// Why a policy list is malformed (`all` among other names), if it is.
fn check_all(key: &str, list: &[String]) -> std::result::Result<(), String> {
    if list.len() > 1 && list.iter().any(|p| p == "all") {
        return Err(format!(
            "{key}: `all` stands for every policy `--policies all` runs: list it alone, \
             [\"all\"], or name the policies"
        ));
    }
    Ok(())
}

fn one() -> u32 {
    1
}

fn is_one(x: &u32) -> bool {
    *x == 1
}

/// When the applications of a two-application workload arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arrival {
    Together,
    AFirst,
    BFirst,
}

impl Arrival {
    /// Suffix of the workload name.
    pub fn suffix(self, a: &str, b: &str) -> String {
        match self {
            Arrival::Together => String::new(),
            Arrival::AFirst => format!(" ({a} first)"),
            Arrival::BFirst => format!(" ({b} first)"),
        }
    }
}

/// Slices to run benchmarks alone on: every `sms` × `channels` pair (channels in multiples
/// of the stacks).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceGrid {
    pub benches: Vec<String>,
    pub sms: Vec<u32>,
    pub channels: Vec<u32>,
}

impl SliceGrid {
    pub fn points(&self) -> usize {
        self.benches.len() * self.sms.len() * self.channels.len()
    }
}

/// One policy parameter swept over values, each benchmark alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoloSweep {
    pub policy: String,
    pub key: String,
    pub values: Vec<u32>,
}

fn default_arrival_fraction() -> f64 {
    0.25
}

fn default_max_cycles() -> u64 {
    100_000_000
}

/// A study file's value that does not make sense: the message names the key and what was
/// expected (bad input: [`load_file`] turns it into a usage error naming the file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StudyFileError(pub String);

/// What every study file has: benchmarks and a GPU, both located relative to the file.
pub(crate) trait StudyFile: serde::de::DeserializeOwned {
    fn benches_mut(&mut self) -> &mut Vec<Bench>;
    fn gpu_mut(&mut self) -> &mut String;
    fn check(&self) -> std::result::Result<(), StudyFileError>;
}

/// Reads and checks a study file; benchmark paths and a model file path become relative
/// to its folder (a built-in model name stays as is). Errors name the file.
pub(crate) fn load_file<T: StudyFile>(path: &Path) -> Result<T> {
    let text = crate::infile::read_to_string(path)?;
    let mut s: T =
        toml::from_str(&text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for b in s.benches_mut() {
        if b.path.is_relative() {
            b.path = dir.join(&b.path);
        }
    }
    let gpu = s.gpu_mut();
    if gpu.ends_with(".toml") && Path::new(gpu.as_str()).is_relative() {
        *gpu = dir.join(gpu.as_str()).to_string_lossy().into_owned();
    }
    s.check()
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    Ok(s)
}

impl StudyFile for StudySpec {
    fn benches_mut(&mut self) -> &mut Vec<Bench> {
        &mut self.benches
    }
    fn gpu_mut(&mut self) -> &mut String {
        &mut self.gpu
    }
    fn check(&self) -> std::result::Result<(), StudyFileError> {
        StudySpec::check(self)
    }
}

impl StudySpec {
    /// Reads and checks a study file; benchmark paths become relative to its folder.
    pub fn load(path: &Path) -> Result<StudySpec> {
        load_file(path)
    }

    /// How long the study's runs last.
    pub fn mode(&self) -> super::Mode {
        if self.completion {
            super::Mode::Completion
        } else if self.fixed_window {
            super::Mode::Window {
                window: self.window,
            }
        } else {
            super::Mode::Budget {
                window: self.window,
            }
        }
    }

    /// The policies of a group, with the study's parameters.
    pub fn policies_of(&self, g: &Group) -> Result<Vec<PolicySpec>> {
        self.group_policies(g)
            .iter()
            .map(|p| self.policy(p))
            .collect()
    }

    /// Whether any part of the study runs policy `name`: the study's or a group's list,
    /// the solo runs or the sweep.
    pub fn runs(&self, name: &str) -> bool {
        expand(&self.policies).iter().any(|p| p == name)
            || self.solo.iter().any(|p| p == name)
            || self.solo_sweep.as_ref().is_some_and(|s| s.policy == name)
            || self
                .groups
                .iter()
                .flat_map(|g| expand(g.policies.as_deref().unwrap_or_default()))
                .any(|p| p == name)
    }

    /// The swept policy with its parameter set to `v`.
    pub fn swept(&self, v: u32) -> Result<PolicySpec> {
        let s = self
            .solo_sweep
            .as_ref()
            .ok_or_else(|| Error::Usage("no solo_sweep".into()))?;
        let mut t = self.params.get(&s.policy).cloned().unwrap_or_default();
        t.insert(s.key.clone(), toml::Value::Integer(v as i64));
        PolicySpec::parse(&s.policy, &t)
    }

    /// The points of the model sweep, in a fixed order: every combination of the listed
    /// values (keys sorted, the last key varying fastest), each as `key=value` overrides.
    /// No `[sweep]`: one point without overrides.
    pub fn sweep_points(&self) -> std::result::Result<Vec<Vec<String>>, StudyFileError> {
        self.sweep_text().map_err(StudyFileError)
    }

    /// [`Self::sweep_points`], its message a plain string.
    fn sweep_text(&self) -> std::result::Result<Vec<Vec<String>>, String> {
        let mut points: Vec<Vec<String>> = vec![Vec::new()];
        for (key, v) in &self.sweep {
            let values = match v {
                toml::Value::Array(a) if !a.is_empty() => a,
                toml::Value::Array(_) => {
                    return Err(format!("sweep: `{key}` lists no value"));
                }
                other => {
                    let hint = if ["policy", "key", "values"].contains(&key.as_str()) {
                        " (a policy parameter swept with each benchmark alone is now \
                         `solo_sweep = { policy, key, values }`)"
                    } else {
                        ""
                    };
                    return Err(format!(
                        "sweep: `{key}` = {other} is not a list of values; expected e.g. \
                         \"dram.channels\" = [16, 24, 32]{hint}"
                    ));
                }
            };
            if let Some(x) = repeated(values) {
                return Err(format!(
                    "sweep: `{key}` lists {x} twice (the point would run twice into one folder)"
                ));
            }
            if key.split('.').count() < 2 {
                return Err(format!(
                    "sweep: `{key}` is not a dotted model key such as dram.channels or sm.count"
                ));
            }
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |x| {
                        let mut q = p.clone();
                        q.push(format!("{key}={x}"));
                        q
                    })
                })
                .collect();
        }
        const MAX_POINTS: usize = 4096;
        if points.len() > MAX_POINTS {
            return Err(format!(
                "sweep: {} points is more than {MAX_POINTS}; sweep fewer values",
                points.len()
            ));
        }
        Ok(points)
    }

    /// The policy `name` with its `[params.NAME]` table.
    pub fn policy(&self, name: &str) -> Result<PolicySpec> {
        let empty = toml::Table::new();
        PolicySpec::parse(name, self.params.get(name).unwrap_or(&empty))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_expand_in_a_fixed_order() {
        let g = |kind, a: &[&str], b: &[&str]| Group {
            name: "g".into(),
            kind,
            a: a.iter().map(|s| s.to_string()).collect(),
            b: b.iter().map(|s| s.to_string()).collect(),
            policies: None,
            take_a: 0,
            take_b: 0,
            count: 0,
            seed: 0,
        };
        assert_eq!(
            g(GroupKind::Cross, &["a", "b"], &["x"]).workloads().len(),
            2
        );
        assert_eq!(
            g(GroupKind::Within, &["a", "b", "c", "d"], &[])
                .workloads()
                .len(),
            6
        );
        let t = g(GroupKind::PairPlusOne, &["a", "b", "c"], &["x", "y"]).workloads();
        assert_eq!(t.len(), 6);
        assert_eq!(t[0], vec!["a", "b", "x"]);
    }

    #[test]
    fn random_groups_are_distinct_seeded_mixes() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut g = Group {
            name: "r".into(),
            kind: GroupKind::Random,
            a: names(&["c1", "c2", "c3", "c4", "c5"]),
            b: names(&["m1", "m2", "m3", "m4", "m5", "m6"]),
            policies: None,
            take_a: 2,
            take_b: 2,
            count: 30,
            seed: 7,
        };
        let w = g.workloads();
        assert_eq!(w.len(), 30);
        for (i, m) in w.iter().enumerate() {
            assert_eq!(m.len(), 4);
            assert!(m[0] < m[1] && m[2] < m[3], "each side in list order: {m:?}");
            assert!(m[..2].iter().all(|x| x.starts_with('c')));
            assert!(m[2..].iter().all(|x| x.starts_with('m')));
            assert!(!w[..i].contains(m), "duplicate mix {m:?}");
        }
        assert_eq!(g.workloads(), w, "same seed, same mixes");
        g.seed = 8;
        assert_ne!(g.workloads(), w);
        // Asking for more than exist gives every combination once: C(5,2) x C(6,2).
        g.count = 1000;
        assert_eq!(g.workloads().len(), 150);
    }

    #[test]
    fn random_groups_terminate_whatever_their_lists_hold() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut g = Group {
            name: "r".into(),
            kind: GroupKind::Random,
            a: names(&["hot", "hot", "hot"]),
            b: Vec::new(),
            policies: None,
            take_a: 2,
            take_b: 0,
            count: 3,
            seed: 1,
        };
        // One distinct name: no mix of two different benchmarks exists.
        assert!(g.workloads().is_empty());
        g.a = names(&["hot", "lbm", "hot"]);
        assert_eq!(g.workloads(), vec![names(&["hot", "lbm"])]);
        // Taking more than the list holds forms nothing, without a panic.
        g.take_a = 9;
        assert!(g.workloads().is_empty());
        g.take_a = 1;
        g.count = u32::MAX;
        assert_eq!(g.workloads().len(), 2);
    }

    #[test]
    fn policies_all_stands_for_what_the_cli_runs() {
        let text = |p: &str| {
            format!(
                "name = \"s\"\ngpu = \"fermi-ws\"\nwindow = 100\npolicies = {p}\n\
                 benches = []\n[[groups]]\nname = \"g\"\nkind = \"within\"\na = []\n\
                 policies = {p}\n"
            )
        };
        let s: StudySpec = toml::from_str(&text("[\"all\"]")).unwrap();
        let all: Vec<String> = PolicySpec::all_names()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(expand(&s.policies), all);
        let names = |v: Vec<PolicySpec>| v.iter().map(|p| p.name()).collect::<Vec<_>>();
        assert_eq!(
            names(s.policies_of(&s.groups[0]).unwrap()),
            PolicySpec::all_names()
        );
        assert!(s.runs("oracle") && !s.runs("mps"));
        let s: StudySpec = toml::from_str(&text("[\"all\", \"sim\"]")).unwrap();
        let e = s.check().unwrap_err();
        assert!(e.0.contains("list it alone"), "{e}");
    }

    #[test]
    fn fast_forward_is_on_unless_a_study_file_turns_it_off() {
        use crate::engine::FastForward;
        #[derive(Debug, Deserialize, Serialize)]
        struct F {
            #[serde(default = "ff_setting::on", with = "ff_setting")]
            fast_forward: Option<FastForward>,
        }
        let parse = |t: &str| toml::from_str::<F>(t).map(|f| f.fast_forward);
        let plain = FastForward::default();
        assert_eq!(parse("").unwrap(), Some(plain), "absent: on");
        assert_eq!(parse("fast_forward = true").unwrap(), Some(plain));
        assert_eq!(parse("fast_forward = false").unwrap(), None);
        let t = parse("[fast_forward]\nstride = 0\nage = true")
            .unwrap()
            .unwrap();
        assert_eq!((t.stride, t.age, t.window), (0, true, plain.window));
        assert_eq!(t.corun_stride, 64, "co-run jumps keep their own bound");
        let c = parse("[fast_forward]\ncorun_stride = 0").unwrap().unwrap();
        assert_eq!((c.stride, c.corun_stride), (plain.stride, 0));
        // Bad input names what is wrong.
        let e = parse("[fast_forward]\nstrid = 3").unwrap_err().to_string();
        assert!(e.contains("strid"), "{e}");
        let e = parse("fast_forward = 3").unwrap_err().to_string();
        assert!(e.contains("true, false or a [fast_forward] table"), "{e}");
        // Written back as it was read: off as `false`, on as the table.
        for f in [None, Some(plain), Some(t)] {
            let text = toml::to_string(&F { fast_forward: f }).unwrap();
            assert_eq!(parse(&text).unwrap(), f, "{text}");
            let json = serde_json::to_string(&F { fast_forward: f }).unwrap();
            let back: F = serde_json::from_str(&json).unwrap();
            assert_eq!(back.fast_forward, f, "{json}");
        }
    }
}

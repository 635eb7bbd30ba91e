//! `gpumodel advise`: which sharing mechanism to use for a set of applications on a GPU.
//!
//! This module owns the objective (`stp`, `antt`, `fairness`, `qos:APP=P`), the results
//! ([`AdviceResults`], `metrics.json`), the ranking and the recommendation with its reasons,
//! which are derived from the winner's resource shares ([`enumerate::Share`]) and the
//! measured figures (each application's alone DRAM intensity, its progress under the
//! winner against MPS at its defaults), never from canned text per mechanism. What is
//! compared is [`enumerate`]'s job (with [`migs`] for MIG); the runs themselves go through
//! the study machinery (alone references, parallel runs), driven by `cli::advise`.

pub mod candidate;
pub mod enumerate;
pub mod migs;
pub mod timeslice;

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::error::{Error, Result};
use crate::metrics::{AloneResult, PolicyRun};
use crate::policy::PolicySpec;
pub use enumerate::{enumerate, Candidate, Enumeration, Share, Skip};

/// Version of the `advise` metrics.json layout.
pub const ADVISE_SCHEMA_VERSION: u32 = 1;
/// Value of its `kind` field.
pub const ADVISE_KIND: &str = "advise";

/// What the recommendation optimises.
#[derive(Clone, Debug, PartialEq)]
pub enum Objective {
    /// Highest system throughput (Σ normalised progress).
    Stp,
    /// Lowest average normalised turnaround time.
    Antt,
    /// Highest minimum normalised progress.
    Fairness,
    /// Highest STP among configurations where `app` keeps at least `target` of its alone
    /// progress.
    Qos { app: String, target: f64 },
}

impl std::str::FromStr for Objective {
    type Err = Error;
    fn from_str(s: &str) -> Result<Objective> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "--objective `{s}`: {why}; expected stp, antt, fairness or qos:APP=TARGET (e.g. qos:lbm=0.8)"
            ))
        };
        match s.trim() {
            "stp" => return Ok(Objective::Stp),
            "antt" => return Ok(Objective::Antt),
            "fairness" => return Ok(Objective::Fairness),
            _ => {}
        }
        let rest = s
            .trim()
            .strip_prefix("qos:")
            .ok_or_else(|| bad("unknown objective"))?;
        let (app, t) = rest
            .split_once('=')
            .ok_or_else(|| bad("a QoS objective names APP=TARGET"))?;
        let target: f64 = t
            .trim()
            .parse()
            .map_err(|_| bad("the target is not a number"))?;
        if !(target > 0.0 && target <= 1.0) {
            return Err(bad(
                "the target is a fraction of alone progress, above 0 and at most 1",
            ));
        }
        if app.trim().is_empty() {
            return Err(bad("no application named"));
        }
        Ok(Objective::Qos {
            app: app.trim().to_string(),
            target,
        })
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Objective::Stp => f.write_str("stp"),
            Objective::Antt => f.write_str("antt"),
            Objective::Fairness => f.write_str("fairness"),
            Objective::Qos { app, target } => write!(f, "qos:{app}={target}"),
        }
    }
}

impl Objective {
    /// The QoS application's index among `names`, or an error naming the applications.
    pub fn qos_index(&self, names: &[String]) -> Result<Option<usize>> {
        let Objective::Qos { app, .. } = self else {
            return Ok(None);
        };
        names
            .iter()
            .position(|n| n == app)
            .map(Some)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--objective names application `{app}`, which is not among --apps ({})",
                    names.join(", ")
                ))
            })
    }

    /// The figure the ranking orders by: STP (also for QoS), ANTT or fairness.
    pub fn value(&self, run: &PolicyRun) -> f64 {
        match self {
            Objective::Stp | Objective::Qos { .. } => run.summary.stp,
            Objective::Antt => run.summary.antt,
            Objective::Fairness => run.summary.fairness,
        }
    }

    /// Whether lower values are better.
    pub fn lower_is_better(&self) -> bool {
        matches!(self, Objective::Antt)
    }
}

/// One simulated configuration with its rank and figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    /// 1 = recommended.
    pub rank: usize,
    pub mechanism: String,
    pub label: String,
    pub aliases: Vec<String>,
    pub policy: PolicySpec,
    pub share: Share,
    /// The ranked figure (STP, ANTT or fairness).
    pub objective: f64,
    /// Under a QoS objective: whether the application meets its target.
    pub meets_target: Option<bool>,
    pub run: PolicyRun,
}

impl ConfigResult {
    pub fn name(&self) -> String {
        enumerate::config_name(&self.mechanism, &self.label)
    }
}

/// The recommendation and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub config: String,
    pub mechanism: String,
    pub objective: f64,
    /// Under a QoS objective: whether any configuration met the target.
    pub target_met: Option<bool>,
    /// The reasons, one sentence each, derived from shares and measured figures.
    pub why: Vec<String>,
}

/// `advise`'s metrics.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdviceResults {
    pub schema_version: u32,
    pub kind: String,
    /// The effective configuration: applications, model, objective, mode, fast-forward,
    /// grid cap.
    pub config: serde_json::Value,
    pub model: GpuSpec,
    pub alone: Vec<AloneResult>,
    pub feasible: usize,
    pub simulated: usize,
    pub skipped: Vec<Skip>,
    /// Best first.
    pub configs: Vec<ConfigResult>,
    pub recommendation: Recommendation,
}

/// Orders the simulated configurations by `obj` (ties: enumeration order), those that starve
/// an application ([`starves`]) after all the others; under QoS the
/// ones meeting the target come first by STP, then the others by the application's
/// progress.
pub fn rank(
    obj: &Objective,
    qos: Option<usize>,
    cands: Vec<Candidate>,
    runs: Vec<PolicyRun>,
) -> Vec<ConfigResult> {
    let mut out: Vec<ConfigResult> = cands
        .into_iter()
        .zip(runs)
        .map(|(c, run)| {
            let meets_target = match (obj, qos) {
                (Objective::Qos { target, .. }, Some(i)) => {
                    Some(run.apps.get(i).is_some_and(|a| a.progress >= *target))
                }
                _ => None,
            };
            ConfigResult {
                rank: 0,
                mechanism: c.mechanism,
                label: c.label,
                aliases: c.aliases,
                policy: c.policy,
                share: c.share,
                objective: obj.value(&run),
                meets_target,
                run,
            }
        })
        .collect();
    let key = |c: &ConfigResult| -> (bool, bool, f64) {
        let serves_all = !starves(c);
        match qos {
            Some(i) if c.meets_target == Some(false) => (
                serves_all,
                false,
                c.run.apps.get(i).map_or(0.0, |a| a.progress),
            ),
            _ => (
                serves_all,
                true,
                if obj.lower_is_better() {
                    -c.objective
                } else {
                    c.objective
                },
            ),
        }
    };
    out.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        kb.0.cmp(&ka.0)
            .then(kb.1.cmp(&ka.1))
            .then(kb.2.partial_cmp(&ka.2).unwrap_or(Ordering::Equal))
    });
    for (i, c) in out.iter_mut().enumerate() {
        c.rank = i + 1;
    }
    out
}

/// Progress below which an application counts as starved in the window.
pub const STARVED: f64 = 0.02;

/// Whether a configuration leaves some application (almost) no progress in the window: it
/// ranks after every configuration that serves them all, whatever its objective (a sum
/// like STP can be high while one job waits the whole window).
pub fn starves(c: &ConfigResult) -> bool {
    c.run.apps.iter().any(|a| a.progress < STARVED)
}

/// The default MPS configuration (everything shared), if it was simulated.
pub fn baseline(configs: &[ConfigResult]) -> Option<&ConfigResult> {
    configs
        .iter()
        .find(|c| c.mechanism == "mps" && c.label.starts_with("100%"))
}

/// `a (shared with b, c)` lists.
fn with(names: &[String], who: &[usize]) -> String {
    who.iter()
        .map(|&i| names[i].as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the winner gives each application, and what it isolates.
fn isolation(w: &ConfigResult, names: &[String], spec: &GpuSpec) -> Vec<String> {
    let s = &w.share;
    if s.time_sliced {
        return vec![format!(
            "It isolates nothing in space and everything in time: one application at a time holds all {} SMs and {} channels for its slice.",
            spec.sm.count, spec.dram.channels
        )];
    }
    let sm_iso = s.sm_sharers.iter().all(Vec::is_empty);
    let ch_iso = s.channel_sharers.iter().all(Vec::is_empty);
    let what = match (sm_iso, ch_iso) {
        (true, true) => "It isolates SMs, L2 slices and DRAM channels between every pair of applications".to_string(),
        (true, false) => "It isolates SMs but shares the L2 and the DRAM channels".to_string(),
        (false, true) => "It shares SMs but isolates the L2 slices and DRAM channels".to_string(),
        (false, false) if s.channel_sharers.iter().any(Vec::is_empty) => {
            "It isolates some applications' L2 slices and DRAM channels, and shares SMs within groups".to_string()
        }
        (false, false) => "It shares SMs, the L2 and the DRAM channels".to_string(),
    };
    let dynamic = if s.dynamic {
        " (initial shares; the policy repartitions at run time)"
    } else {
        ""
    };
    let per: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(a, n)| {
            let mut t = format!("{n}: {} of {} SMs", s.sms[a], spec.sm.count);
            if !s.sm_sharers[a].is_empty() {
                t += &format!(" shared with {}", with(names, &s.sm_sharers[a]));
            }
            t += &format!(", {} of {} channels", s.channels[a], spec.dram.channels);
            if !s.channel_sharers[a].is_empty() {
                t += &format!(" shared with {}", with(names, &s.channel_sharers[a]));
            }
            t
        })
        .collect();
    vec![format!("{what}{dynamic}: {}.", per.join("; "))]
}

/// Alone DRAM intensity (L2 bytes per cycle over the DRAM peak) above which an
/// application counts as memory-heavy in the reasons.
pub const MEMORY_HEAVY: f64 = 0.1;

/// The memory-heaviest application's traffic under the winner.
fn hog_line(
    w: &ConfigResult,
    names: &[String],
    alone: &[AloneResult],
    spec: &GpuSpec,
) -> Option<String> {
    let (h, a) = alone
        .iter()
        .enumerate()
        .max_by(|x, y| x.1.mem_intensity.total_cmp(&y.1.mem_intensity))?;
    let s = &w.share;
    if a.mem_intensity < MEMORY_HEAVY {
        return Some(format!(
            "No application is memory-heavy (the heaviest, {}, moves {:.2} of the DRAM peak alone): SMs are the resource that matters here.",
            names[h], a.mem_intensity
        ));
    }
    let head = format!(
        "The memory-heaviest application is {} ({:.2} of the DRAM peak alone, L2 MPKI {:.1})",
        names[h], a.mem_intensity, a.l2_mpki
    );
    let tail = if s.time_sliced {
        "; time slicing keeps its traffic out of the others' turns".to_string()
    } else if s.channel_sharers[h].is_empty() {
        format!(
            "; the winner confines it to {} of {} channels and their L2 slices, so the others never queue behind its traffic",
            s.channels[h], spec.dram.channels
        )
    } else {
        format!(
            "; its traffic shares channels with {}",
            with(names, &s.channel_sharers[h])
        )
    };
    Some(head + &tail + ".")
}

/// Per-application progress under the winner against MPS at its defaults: the largest
/// gain and the largest loss.
fn against_baseline(w: &ConfigResult, b: &ConfigResult, names: &[String]) -> Option<String> {
    if w.name() == b.name() {
        return Some("The winner is MPS at its defaults itself: no partition does better.".into());
    }
    let d: Vec<(usize, f64, f64)> = w
        .run
        .apps
        .iter()
        .zip(&b.run.apps)
        .enumerate()
        .map(|(i, (x, y))| (i, x.progress, y.progress))
        .collect();
    let gain = d
        .iter()
        .max_by(|x, y| (x.1 - x.2).total_cmp(&(y.1 - y.2)))?;
    let loss = d
        .iter()
        .min_by(|x, y| (x.1 - x.2).total_cmp(&(y.1 - y.2)))?;
    let mut t = format!(
        "Against MPS at its defaults (everything shared): {} progresses {:.2} against {:.2}",
        names[gain.0], gain.1, gain.2
    );
    if loss.0 != gain.0 && loss.1 < loss.2 {
        t += &format!(
            ", at the cost of {} ({:.2} against {:.2})",
            names[loss.0], loss.1, loss.2
        );
    }
    Some(t + ".")
}

/// The recommendation (`configs` ranked, best first) and why.
pub fn recommend(
    obj: &Objective,
    qos: Option<usize>,
    configs: &[ConfigResult],
    alone: &[AloneResult],
    spec: &GpuSpec,
) -> Result<Recommendation> {
    let w = configs
        .first()
        .ok_or_else(|| Error::Usage("no configuration was simulated".into()))?;
    let names: Vec<String> = alone.iter().map(|a| a.name.clone()).collect();
    let mut why = Vec::new();
    let target_met = w.meets_target;
    match (obj, qos, target_met) {
        (Objective::Qos { app, target }, Some(i), Some(true)) => why.push(format!(
            "Of the {} configurations that keep {app} at {target} or more of its alone progress, {} has the highest STP ({:.3}; {app} at {:.3}).",
            configs.iter().filter(|c| c.meets_target == Some(true)).count(),
            w.name(),
            w.run.summary.stp,
            w.run.apps[i].progress
        )),
        (Objective::Qos { app, target }, Some(i), _) => why.push(format!(
            "No configuration keeps {app} at {target} of its alone progress; the closest is {}, with {app} at {:.3} (STP {:.3}).",
            w.name(),
            w.run.apps[i].progress,
            w.run.summary.stp
        )),
        _ => {
            let starved = configs.iter().filter(|c| starves(c)).count();
            if starved > 0 {
                why.push(format!(
                    "{starved} configurations that leave an application below {STARVED} of its alone progress in the window rank last, whatever their {obj}."
                ));
            }
            let next = configs
                .get(1)
                .map(|r| format!("; runner-up {} at {:.3}", r.name(), r.objective))
                .unwrap_or_default();
            why.push(format!(
                "{} ranks first of {} by {obj}: {:.3}{next}.",
                w.name(),
                configs.len(),
                w.objective
            ));
        }
    }
    why.extend(isolation(w, &names, spec));
    why.extend(hog_line(w, &names, alone, spec));
    if let Some(b) = baseline(configs) {
        why.extend(against_baseline(w, b, &names));
    }
    why.push(best_per_mechanism(configs, obj));
    Ok(Recommendation {
        config: w.name(),
        mechanism: w.mechanism.clone(),
        objective: w.objective,
        target_met,
        why,
    })
}

/// `Best of each mechanism: mig X 2.310, mps Y 2.250, ...` (in rank order).
fn best_per_mechanism(configs: &[ConfigResult], obj: &Objective) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut parts = Vec::new();
    for c in configs {
        if seen.contains(&c.mechanism.as_str()) {
            continue;
        }
        seen.push(&c.mechanism);
        let met = match c.meets_target {
            Some(false) => " (misses the target)",
            _ => "",
        };
        parts.push(format!("{} {:.3}{met}", c.name(), c.objective));
    }
    format!("Best of each mechanism by {obj}: {}.", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse() {
        assert_eq!("stp".parse::<Objective>().unwrap(), Objective::Stp);
        assert_eq!(
            "qos:lbm=0.8".parse::<Objective>().unwrap(),
            Objective::Qos {
                app: "lbm".into(),
                target: 0.8
            }
        );
        for bad in ["qos:lbm", "qos:=0.5", "qos:a=1.5", "qos:a=x", "speed"] {
            assert!(bad.parse::<Objective>().is_err(), "{bad}");
        }
    }
}

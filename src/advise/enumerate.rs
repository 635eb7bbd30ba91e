//! The configurations `advise` compares: every sharing mechanism's feasible settings for a
//! workload on a model, with the pruning that keeps the list simulable.
//!
//! Mechanisms: `time-slice`; `mps` at the default (every client at 100%) and on a grid of
//! active-thread percentages per client (25/50/75/100; sums may exceed 100, as on the
//! hardware); `mps-partition` SM splits on a grid of eighths of the GPU; `green-context`
//! splits on the same grid in the architecture's SM groups (minimum and alignment); `mig`
//! layouts of the model's profile table with every assignment of applications to
//! instances; and the research policies of the registry that run on the workload without
//! offline profiles. Pruning, each reported with its count and reason: MIG assignments that
//! differ only by swapping instances of one profile are one configuration; a MIG
//! configuration is dominated when another gives every group of applications at least as
//! many SMs and memory slices (instances are isolated, so a group's speed depends on its
//! own instance alone); configurations whose SM masks and channel sets are identical are
//! simulated once; a mechanism with more configurations than the grid cap keeps an evenly
//! spaced subset.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::engine::{AppSpec, RunMode};
use crate::error::Result;
use crate::policy::mps::{compute_capability, green_granularity, sm_limit, wrapped_masks};
use crate::policy::{PolicySpec, Workload};

pub use super::candidate::{config_name, Candidate, Share, Skip};

/// Active-thread percentage grids of MPS, finest first: the finest that fits the grid cap
/// is used.
pub const MPS_GRIDS: [&[u32]; 3] = [&[25, 50, 75, 100], &[33, 67, 100], &[50, 100]];
/// SM splits are in steps of 1/SPLIT_STEPS of the GPU.
pub const SPLIT_STEPS: u32 = 8;

/// The enumeration: what runs, how many were feasible, what was skipped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enumeration {
    pub candidates: Vec<Candidate>,
    /// Feasible configurations before pruning (each feasible research policy counts one).
    pub feasible: usize,
    pub skipped: Vec<Skip>,
}

/// Policies of the registry `advise` does not run, with the reason.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "left-over",
        "identical to mps at 100% (the same Left-Over dispatch)",
    ),
    (
        "oracle",
        "exhaustive search over CTA combinations (hundreds of runs per workload)",
    ),
    (
        "sequential",
        "runs one application after another: no sharing to choose",
    ),
    ("round-robin", "a dispatch order, not a sharing policy"),
    ("sm-counts", "needs SM counts from offline profiles"),
    (
        "ugpu",
        "needs offline profiles and epochs of millions of cycles",
    ),
    (
        "ugpu-ori",
        "needs offline profiles and epochs of millions of cycles",
    ),
    (
        "ugpu-soft",
        "needs offline profiles and epochs of millions of cycles",
    ),
    ("ugpu-offline", "needs offline profiles"),
    (
        "ugpu-qos",
        "needs offline profiles and a high-priority application",
    ),
    (
        "cd-search",
        "searches partitions over epochs of millions of cycles",
    ),
    (
        "mps-qos",
        "needs offline profiles and a high-priority application",
    ),
    (
        "bp-qos",
        "needs offline profiles and a high-priority application",
    ),
    ("bp-bs", "an unbalanced two-application variant of bp"),
    ("bp-sb", "an unbalanced two-application variant of bp"),
];

/// The mechanisms `advise` enumerates itself (not taken from the registry as research).
const PRODUCTION: &[&str] = &["mps", "mps-partition", "green-context", "mig", "time-slice"];

fn param(name: &str, key: &str, v: toml::Value) -> Result<PolicySpec> {
    let mut t = toml::Table::new();
    t.insert(key.into(), v);
    PolicySpec::parse(name, &t)
}

fn ints(v: &[u32]) -> toml::Value {
    toml::Value::Array(v.iter().map(|&x| toml::Value::Integer(x as i64)).collect())
}

/// The share of a policy from its first plan's initial placement.
fn planned_share(spec: &GpuSpec, w: &Workload, p: &PolicySpec, dynamic: bool) -> Result<Share> {
    let plans = p.build().plans(w)?;
    let Some(plan) = plans.first() else {
        return Ok(Share::of(
            spec,
            &vec![None; w.apps.len()],
            &vec![None; w.apps.len()],
            false,
            dynamic,
        ));
    };
    let pl = &plan.placement;
    let sms: Vec<Option<Vec<bool>>> = pl.apps.iter().map(|a| a.sms.clone()).collect();
    let ch: Vec<Option<Vec<u32>>> = pl.apps.iter().map(|a| a.channels.clone()).collect();
    Ok(Share::of(spec, &sms, &ch, pl.time_slicing, dynamic))
}

/// Compositions of `total` into `parts` positive integers, in lexicographic order.
fn compositions(total: u32, parts: usize) -> Vec<Vec<u32>> {
    if parts == 0 {
        return if total == 0 { vec![vec![]] } else { vec![] };
    }
    if parts == 1 {
        return if total >= 1 {
            vec![vec![total]]
        } else {
            vec![]
        };
    }
    let mut out = Vec::new();
    for first in 1..total {
        for mut rest in compositions(total - first, parts - 1) {
            rest.insert(0, first);
            out.push(rest);
        }
    }
    out
}

/// Every vector of `n` values from `grid`, first position slowest.
fn grid_vectors(grid: &[u32], n: usize) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    for _ in 0..n {
        out = out
            .into_iter()
            .flat_map(|v| {
                grid.iter().map(move |&g| {
                    let mut w = v.clone();
                    w.push(g);
                    w
                })
            })
            .collect();
    }
    out
}

fn slash(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join("/")
}

/// A static SM-mask candidate (MPS limits, partitions, green contexts): memory shared.
fn masked(
    spec: &GpuSpec,
    mechanism: &str,
    label: String,
    policy: PolicySpec,
    counts: &[u32],
) -> Candidate {
    let masks = wrapped_masks(spec.sm.count as usize, counts);
    let n = counts.len();
    Candidate {
        mechanism: mechanism.into(),
        label,
        policy,
        share: Share::of(
            spec,
            &masks.into_iter().map(Some).collect::<Vec<_>>(),
            &vec![None; n],
            false,
            false,
        ),
        aliases: Vec::new(),
    }
}

/// The MPS grid: percentages from the finest of [`MPS_GRIDS`] whose configurations fit
/// the grid cap (`None`: the coarsest, if none does), and a note when a finer one did not.
fn mps_grid(spec: &GpuSpec, n: usize, cap: usize) -> Result<(Vec<Candidate>, Option<Skip>)> {
    let size = |g: &[u32]| g.len().pow(n as u32) - 1;
    let grid = MPS_GRIDS
        .iter()
        .find(|g| size(g) <= cap.saturating_sub(1))
        .unwrap_or(&MPS_GRIDS[MPS_GRIDS.len() - 1]);
    let note = (grid.len() != MPS_GRIDS[0].len()).then(|| Skip {
        mechanism: "mps".into(),
        count: size(MPS_GRIDS[0]) - size(grid),
        reason: format!(
            "grid cap: percentages on the grid {} ({} configurations) instead of {} ({}; --grid-cap to raise)",
            slash(grid),
            size(grid),
            slash(MPS_GRIDS[0]),
            size(MPS_GRIDS[0])
        ),
        examples: Vec::new(),
    });
    let mut out = Vec::new();
    for pct in grid_vectors(grid, n) {
        if pct.iter().all(|&p| p == 100) {
            continue;
        }
        let counts: Vec<u32> = pct
            .iter()
            .map(|&p| {
                sm_limit(
                    p,
                    spec.sm.count,
                    crate::policy::mps::compute_capability(&spec.name),
                )
            })
            .collect();
        let p = param("mps", "active_thread_percentage", ints(&pct))?;
        out.push(masked(spec, "mps", format!("{}%", slash(&pct)), p, &counts));
    }
    Ok((out, note))
}

fn partition_grid(spec: &GpuSpec, n: usize) -> Result<Vec<Candidate>> {
    let steps = SPLIT_STEPS.max(n as u32);
    let mut out = Vec::new();
    for k in compositions(steps, n) {
        let counts: Vec<u32> = k.iter().map(|&x| x * spec.sm.count / steps).collect();
        if counts.contains(&0) {
            continue;
        }
        let p = param("mps-partition", "sms", ints(&counts))?;
        out.push(masked(
            spec,
            "mps-partition",
            format!("{}sm", slash(&counts)),
            p,
            &counts,
        ));
    }
    Ok(out)
}

/// Green-context splits, or why the model has none.
fn green_grid(spec: &GpuSpec, n: usize) -> Result<std::result::Result<Vec<Candidate>, String>> {
    let Some(cc) = compute_capability(&spec.name) else {
        return Ok(Err(format!(
            "model {} has no known compute capability",
            spec.name
        )));
    };
    let Some((min, align)) = green_granularity(cc) else {
        return Ok(Err(format!(
            "compute capability {}.{} has no green contexts",
            cc.0, cc.1
        )));
    };
    let units = spec.sm.count / align;
    let steps = SPLIT_STEPS.min(units);
    if (steps as usize) < n {
        return Ok(Err(format!(
            "{} SMs in groups of {align} do not split {n} ways",
            spec.sm.count
        )));
    }
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for k in compositions(steps, n) {
        let counts: Vec<u32> = k.iter().map(|&x| x * units / steps * align).collect();
        if counts.iter().any(|&c| c < min) || !seen.insert(counts.clone()) {
            continue;
        }
        let p = param("green-context", "sms", ints(&counts))?;
        out.push(masked(
            spec,
            "green-context",
            format!("{}sm", slash(&counts)),
            p,
            &counts,
        ));
    }
    Ok(Ok(out))
}

/// Enumerates every mechanism's configurations for `apps` on `spec` and prunes them
/// (module doc); `grid_cap`: most configurations kept per mechanism.
pub fn enumerate(
    spec: &GpuSpec,
    apps: &[AppSpec],
    mode: RunMode,
    grid_cap: usize,
) -> Result<Enumeration> {
    let n = apps.len();
    let names: Vec<String> = apps.iter().map(|a| a.name.clone()).collect();
    let w = Workload { spec, apps, mode };
    let mut skipped = Vec::new();
    let mut feasible = 0usize;
    let mut groups: Vec<Vec<Candidate>> = Vec::new();
    // Time slicing and MPS at its defaults.
    let ts = PolicySpec::from_name("time-slice")?;
    let mps0 = PolicySpec::from_name("mps")?;
    let one = |mech: &str, label: &str, p: PolicySpec, dynamic: bool| -> Result<Candidate> {
        Ok(Candidate {
            mechanism: mech.into(),
            label: label.into(),
            share: planned_share(spec, &w, &p, dynamic)?,
            policy: p,
            aliases: Vec::new(),
        })
    };
    groups.push(vec![one("time-slice", "", ts, false)?]);
    let mut mps = vec![one("mps", "100% (default)", mps0, false)?];
    let (grid, note) = mps_grid(spec, n, grid_cap)?;
    mps.extend(grid);
    // The finer grid's configurations are feasible too, only not simulated.
    feasible += note.as_ref().map_or(0, |s| s.count);
    skipped.extend(note);
    groups.push(mps);
    groups.push(partition_grid(spec, n)?);
    match green_grid(spec, n)? {
        Ok(g) => groups.push(g),
        Err(why) => skipped.push(Skip {
            mechanism: "green-context".into(),
            count: 0,
            reason: why,
            examples: Vec::new(),
        }),
    }
    feasible += groups.iter().map(Vec::len).sum::<usize>();
    let (mig, mig_feasible, mig_skips) = super::migs::mig_configs(spec, &names)?;
    feasible += mig_feasible;
    skipped.extend(mig_skips);
    groups.push(mig);
    let (research, r_skips) = research(spec, &w, &one)?;
    feasible += research.len();
    skipped.extend(r_skips);
    groups.push(research);
    let mut candidates = dedupe(groups.into_iter().flatten().collect(), &mut skipped);
    candidates = cap(candidates, grid_cap, &mut skipped);
    Ok(Enumeration {
        candidates,
        feasible,
        skipped: merge_skips(skipped),
    })
}

type Maker<'a> = dyn Fn(&str, &str, PolicySpec, bool) -> Result<Candidate> + 'a;

/// The registry's research policies that apply to the workload (each once, default
/// parameters); the others with the reason.
fn research(_spec: &GpuSpec, w: &Workload, one: &Maker) -> Result<(Vec<Candidate>, Vec<Skip>)> {
    let mut out = Vec::new();
    let mut skips = Vec::new();
    for (name, _) in PolicySpec::REGISTRY {
        if PRODUCTION.contains(name) {
            continue;
        }
        let why = match NOT_RUN.iter().find(|(n, _)| n == name) {
            Some((_, why)) => Some(why.to_string()),
            None => {
                let p = PolicySpec::from_name(name)?;
                match p.build().applies(w) {
                    Ok(()) => {
                        let dynamic = !matches!(*name, "even" | "spatial" | "bp" | "fcfs");
                        out.push(one("research", name, p, dynamic)?);
                        None
                    }
                    Err(e) => Some(e.0),
                }
            }
        };
        if let Some(reason) = why {
            skips.push(Skip {
                mechanism: "research".into(),
                count: 1,
                reason,
                examples: vec![name.to_string()],
            });
        }
    }
    Ok((out, skips))
}

/// Skips of one mechanism with the same reason as one entry.
fn merge_skips(skips: Vec<Skip>) -> Vec<Skip> {
    let mut out: Vec<Skip> = Vec::new();
    for s in skips {
        match out
            .iter_mut()
            .find(|o| o.mechanism == s.mechanism && o.reason == s.reason)
        {
            Some(o) => {
                o.count += s.count;
                o.examples.extend(s.examples);
            }
            None => out.push(s),
        }
    }
    out
}

/// SMs, channels, SM sharers and channel sharers per application.
type MaskKey = (Vec<u32>, Vec<u32>, Vec<Vec<usize>>, Vec<Vec<usize>>);

/// The key of a static configuration: its SM masks and channel sets, when every
/// application's are fixed for the whole run.
fn static_key(c: &Candidate) -> Option<MaskKey> {
    let fixed = matches!(
        c.mechanism.as_str(),
        "mps" | "mps-partition" | "green-context"
    ) && c.label != "100% (default)";
    fixed.then(|| {
        (
            c.share.sms.clone(),
            c.share.channels.clone(),
            c.share.sm_sharers.clone(),
            c.share.channel_sharers.clone(),
        )
    })
}

/// Drops configurations whose masks equal an earlier one's (the earlier one lists them
/// as aliases).
fn dedupe(cands: Vec<Candidate>, skipped: &mut Vec<Skip>) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut dups = Vec::new();
    for c in cands {
        // Masks are wrapped contiguous blocks from SM 0, so counts and sharers fix them.
        let key = static_key(&c).map(|k| format!("{k:?}"));
        match key.as_ref().and_then(|k| seen.get(k)) {
            Some(&i) => {
                dups.push(format!("{} = {}", c.name(), out[i].name()));
                out[i].aliases.push(c.name());
            }
            None => {
                if let Some(k) = key {
                    seen.insert(k, out.len());
                }
                out.push(c);
            }
        }
    }
    if !dups.is_empty() {
        skipped.push(Skip {
            mechanism: "any".into(),
            count: dups.len(),
            reason: "duplicate: the same SM masks and channels as a configuration simulated (MPS percentages summing to at most 100% are a static partition)".into(),
            examples: dups.into_iter().take(4).collect(),
        });
    }
    out
}

/// Keeps at most `cap` configurations per mechanism (evenly spaced in enumeration order;
/// the default MPS setting always stays).
fn cap(cands: Vec<Candidate>, cap: usize, skipped: &mut Vec<Skip>) -> Vec<Candidate> {
    let mut by: Vec<(String, Vec<Candidate>)> = Vec::new();
    for c in cands {
        match by.iter_mut().find(|(m, _)| *m == c.mechanism) {
            Some((_, v)) => v.push(c),
            None => by.push((c.mechanism.clone(), vec![c])),
        }
    }
    let cap = cap.max(1);
    let mut out = Vec::new();
    for (mech, v) in by {
        if v.len() <= cap {
            out.extend(v);
            continue;
        }
        let len = v.len();
        let keep: BTreeSet<usize> = (0..cap).map(|i| i * (len - 1) / (cap - 1).max(1)).collect();
        let mut dropped = Vec::new();
        for (i, c) in v.into_iter().enumerate() {
            if keep.contains(&i) {
                out.push(c);
            } else {
                dropped.push(c.name());
            }
        }
        skipped.push(Skip {
            mechanism: mech.clone(),
            count: dropped.len(),
            reason: format!("grid cap: {} of {len} {mech} configurations kept, evenly spaced (--grid-cap to raise)", len - dropped.len()),
            examples: dropped.into_iter().take(4).collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids() {
        assert_eq!(compositions(4, 2), vec![vec![1, 3], vec![2, 2], vec![3, 1]]);
        assert_eq!(compositions(8, 3).len(), 21);
        assert_eq!(grid_vectors(&[1, 2], 2).len(), 4);
    }
}

//! `sim`: adaptive simultaneous multi-tenancy (Ukarande & Kaeli's SiM, seed 002 §3). Every
//! kernel runs in persistent-thread form (as `pt`: one logical block per `atomicAdd`, the
//! §4.3 overheads of +23% registers and 8 B of shared memory per worker) and a host
//! service sets how many worker CTAs per SM each kernel runs with:
//! - offline, each kernel is profiled alone with 1, 2, ... workers per SM (Fig. 9) and the
//!   points that another point beats with fewer workers are pruned (§3.5);
//! - at a kernel's arrival, when a kernel starts its last logical block and when one
//!   finishes (§3.2), the service estimates every running kernel's remaining time with
//!   eq. 1 (`T_i^c × (TB_t − TB_e) / TB_t`, TB_e the logical blocks the kernel has
//!   completed: the growth of its application's `ctas_done` since the service first saw
//!   the kernel) and runs the greedy allocation of Algorithm 1:
//!   all kernels at their smallest point, then repeatedly the kernel with the longest
//!   remaining time moves to its next point while the combination fits one SM (Table 2's
//!   limits), else it is marked; the result goes to every SM (§3.8: one SM's sharing is
//!   extrapolated to all);
//! - fewer workers: the extra ones leave at their next task boundary (the preemption flag
//!   of Fig. 5); more: new workers are launched and queue at the block scheduler until
//!   resources free. The logical-block counter carries over, so no block is lost or run
//!   twice. A kernel that has started its last block keeps what it holds (§3.2).
//!
//! [`greedy`] is the allocation alone (tested against brute force); [`profile`] the
//! offline profile, which a study computes once per benchmark and passes in
//! [`SimParams::profiles`].

use crate::policy::NotApplicable;
use crate::policy::ParamError;
use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::partition::Need;
use super::persistent::{transform, transform_all};
use super::{sm_cap, Plan, Policy, PolicyControl, Workload};
use crate::arch::GpuSpec;
use crate::engine::{
    self, Action, AppSpec, Controller, Hook, Persistent, Placement, RunConfig, View,
};
use crate::error::{Error, Result};

/// SiM's parameters (defaults: the paper's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimParams {
    /// Logical blocks per `atomicAdd` (SiM: 1).
    pub task_blocks: u32,
    /// Registers per thread added by the transformation, percent (§4.3: 23).
    pub extra_regs_pct: u32,
    /// Shared memory per worker CTA added by the transformation, bytes (§4.3: 8).
    pub extra_shmem: u32,
    /// Offline profiles, `APP#K` (kernel K of application APP) → cycles alone with 1, 2,
    /// ... workers per SM. A kernel not listed is profiled when the policy plans.
    pub profiles: BTreeMap<String, Vec<u64>>,
}

impl Default for SimParams {
    fn default() -> SimParams {
        SimParams {
            task_blocks: 1,
            extra_regs_pct: 23,
            extra_shmem: 8,
            profiles: BTreeMap::new(),
        }
    }
}

impl super::Params for SimParams {
    fn take_prepared(&mut self, prepared: &super::Prepared) {
        super::fill_missing(&mut self.profiles, &prepared.profiles);
    }
    fn check(&self) -> std::result::Result<(), ParamError> {
        if self.task_blocks == 0 {
            return Err(ParamError("task_blocks must be at least 1".into()));
        }
        if self.extra_regs_pct > 1000 {
            return Err(ParamError(format!(
                "extra_regs_pct {} is out of range (0 to 1000)",
                self.extra_regs_pct
            )));
        }
        for (k, v) in &self.profiles {
            if v.is_empty() || v.contains(&0) {
                return Err(ParamError(format!(
                    "profiles.{k}: expected cycles (> 0) for 1, 2, ... workers per SM"
                )));
            }
        }
        Ok(())
    }
}

impl SimParams {
    fn persistent(&self) -> Persistent {
        Persistent {
            workers_per_sm: u32::MAX,
            task_blocks: self.task_blocks,
            extra_regs_pct: self.extra_regs_pct,
            extra_shmem: self.extra_shmem,
        }
    }
}

/// The key of kernel `k` of application `app` in [`SimParams::profiles`].
pub fn profile_key(app: &str, k: usize) -> String {
    format!("{app}#{k}")
}

/// `app` as SiM runs it (persistent form with SiM's overheads) and each kernel's worker
/// footprint.
pub fn transformed(spec: &GpuSpec, app: &AppSpec, p: &SimParams) -> Result<(AppSpec, Vec<Need>)> {
    transform(spec, app, p.persistent(), "sim")
}

/// Offline profile (§3.5, Fig. 9): cycles of kernel `k` of the transformed application
/// `app` alone on the whole GPU with 1, 2, ... up to its most workers per SM (in parallel).
pub fn profile(spec: &GpuSpec, app: &AppSpec, k: usize, max_cycles: u64) -> Result<Vec<u64>> {
    let p = app.persistent.ok_or_else(|| {
        Error::Usage(format!(
            "sim: {} is not in persistent-thread form",
            app.name
        ))
    })?;
    (1..=p.workers_per_sm)
        .into_par_iter()
        .map(|c| {
            let mut one = AppSpec::new(app.name.clone(), vec![app.kernels[k].clone()]);
            one.persistent = Some(Persistent {
                workers_per_sm: c,
                ..p
            });
            let mut cfg = RunConfig::completion(1);
            cfg.placement.spread_alone = false;
            cfg.max_cycles = max_cycles;
            let s = engine::run_static(spec, std::slice::from_ref(&one), &cfg).map_err(|e| {
                e.context(format_args!(
                    "sim profile of {} with {c} workers/SM",
                    app.name
                ))
            })?;
            Ok(s.apps[0].cycles.max(1))
        })
        .collect()
}

/// The profile points kept for decisions (§3.5): `(workers per SM, cycles)` in increasing
/// worker count, each strictly faster than every point with fewer workers; the others are
/// pruned (a point with fewer resources and at least the same performance exists).
pub fn prune(cycles: &[u64]) -> Vec<(u32, u64)> {
    let mut kept: Vec<(u32, u64)> = Vec::new();
    for (i, &t) in cycles.iter().enumerate() {
        if kept.last().is_none_or(|&(_, best)| t < best) {
            kept.push((i as u32 + 1, t));
        }
    }
    kept
}

/// A kernel as the allocator sees it: its points `(workers per SM, estimated remaining
/// time)`, workers increasing and time decreasing, and one worker's SM resources.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub points: Vec<(u32, f64)>,
    pub need: Need,
}

fn fits(ks: &[Choice], at: &[usize], cap: &Need, fixed: &Need) -> bool {
    (0..cap.len()).all(|r| {
        let used: u64 = ks
            .iter()
            .zip(at)
            .map(|(k, &i)| k.points[i].0 as u64 * k.need[r])
            .sum();
        fixed[r] + used <= cap[r]
    })
}

/// Algorithm 1: the point index per kernel, or `None` when even the smallest points do not
/// fit one SM beside `fixed` (SiM then launches every kernel with one worker per SM).
/// Kernels are taken longest remaining time first; ties by position (deterministic).
pub fn greedy(ks: &[Choice], cap: &Need, fixed: &Need) -> Option<Vec<usize>> {
    let mut at = vec![0usize; ks.len()];
    if ks.iter().any(|k| k.points.is_empty()) || !fits(ks, &at, cap, fixed) {
        return None;
    }
    let rem = |at: &[usize], k: usize| ks[k].points[at[k]].1;
    let sort = |order: &mut [usize], at: &[usize]| {
        order.sort_by(|&a, &b| rem(at, b).total_cmp(&rem(at, a)).then(a.cmp(&b)))
    };
    let mut order: Vec<usize> = (0..ks.len()).collect();
    sort(&mut order, &at);
    let mut marked = 0;
    while marked < ks.len() {
        let k = order[marked];
        if at[k] + 1 < ks[k].points.len() {
            at[k] += 1;
            if fits(ks, &at, cap, fixed) {
                sort(&mut order[marked..], &at);
            } else {
                at[k] -= 1;
                marked += 1;
            }
        } else {
            marked += 1;
        }
    }
    Some(at)
}

/// The largest remaining time of an allocation.
pub fn max_remaining(ks: &[Choice], at: &[usize]) -> f64 {
    ks.iter()
        .zip(at)
        .map(|(k, &i)| k.points[i].1)
        .fold(0.0, f64::max)
}

/// SiM as a policy.
pub struct Sim(pub SimParams);

impl Sim {
    fn prepare(&self, w: &Workload) -> std::result::Result<Vec<(AppSpec, Vec<Need>)>, String> {
        let why = "SiM runs kernels once with arrivals (completion mode, --completion)";
        transform_all(w, &self.0, self.0.persistent(), "sim", why)
    }
}

impl Policy for Sim {
    fn name(&self) -> String {
        "sim".into()
    }

    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        self.prepare(w).map(|_| ()).map_err(NotApplicable)
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let prepared = self
            .prepare(w)
            .map_err(|e| Error::Usage(format!("sim: {e}")))?;
        let mut kernels = Vec::new();
        let mut apps = Vec::new();
        for (app, needs) in prepared {
            let mut ks = Vec::new();
            for (k, need) in needs.into_iter().enumerate() {
                let key = profile_key(&app.name, k);
                let cycles = match self.0.profiles.get(&key) {
                    Some(c) => c.clone(),
                    None => profile(w.spec, &app, k, crate::engine::MAX_CYCLES)?,
                };
                ks.push(Profiled {
                    points: prune(&cycles),
                    need,
                });
            }
            kernels.push(ks);
            apps.push(app);
        }
        let current = apps
            .iter()
            .map(|a| a.persistent.map(|p| p.workers_per_sm).unwrap_or(0))
            .collect();
        Ok(vec![Plan {
            apps: Some(apps),
            label: "sim".into(),
            ctas: None,
            placement: Placement::left_over(w.apps.len()),
            control: Box::new(Service::new(kernels, sm_cap(w.spec), current)),
        }])
    }
}

/// A kernel's pruned profile and worker footprint.
struct Profiled {
    points: Vec<(u32, u64)>,
    need: Need,
}

/// The host-side service (§3.2, §3.6).
struct Service {
    /// Per application, per kernel.
    kernels: Vec<Vec<Profiled>>,
    cap: Need,
    /// Workers per SM each application was last told.
    current: Vec<u32>,
    log: Vec<String>,
    /// Per application, the kernel it ran at the last hook and its completed-block
    /// counter (`ctas_done`, one per logical block) when that kernel was first seen: TB_e
    /// is the counter's growth since.
    base: Vec<Option<(usize, u64)>>,
}

impl Service {
    fn new(kernels: Vec<Vec<Profiled>>, cap: Need, current: Vec<u32>) -> Service {
        let n = kernels.len();
        Service {
            kernels,
            cap,
            current,
            log: Vec::new(),
            base: vec![None; n],
        }
    }

    /// TB_e of application `a`'s running kernel `k`: logical blocks it has completed
    /// (started blocks still running are not executed yet).
    fn executed(&mut self, a: usize, k: usize, done: u64) -> u64 {
        match self.base[a] {
            Some((kk, at)) if kk == k => done.saturating_sub(at),
            _ => {
                self.base[a] = Some((k, done));
                0
            }
        }
    }
}

impl Controller for Service {
    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        let why = match hook {
            Hook::KernelArrival { .. } => "arrival",
            Hook::LastCtaDispatched { .. } => "last block started",
            Hook::KernelDeparture { .. } => "completion",
            _ => return,
        };
        if let Hook::KernelArrival { app, .. } = hook {
            // A new launch (also a relaunch of the same kernel index) starts at TB_e = 0.
            if let Some(b) = self.base.get_mut(app) {
                *b = None;
            }
        }
        let mut fixed: Need = [0; 5];
        let mut apps = Vec::new();
        let mut choices = Vec::new();
        for (a, v) in view.apps.iter().enumerate() {
            let Some(k) = v.kernel else { continue };
            let executed = self.executed(a, k, v.counters.ctas_done);
            let Some(prof) = self.kernels[a].get(k) else {
                continue;
            };
            if v.blocks_left == 0 {
                // Its last block has started: it keeps the workers it holds.
                let held = v.ctas.iter().copied().max().unwrap_or(0) as u64;
                for (f, n) in fixed.iter_mut().zip(prof.need) {
                    *f += held * n;
                }
                continue;
            }
            // Eq. 1: isolated time at c workers x (TB_t - TB_e) / TB_t, TB_e the blocks
            // executed (completed) so far.
            let total = v.blocks_total.max(1) as f64;
            let left = (total - (executed as f64).min(total)) / total;
            apps.push(a);
            choices.push(Choice {
                points: prof
                    .points
                    .iter()
                    .map(|&(c, t)| (c, t as f64 * left))
                    .collect(),
                need: prof.need,
            });
        }
        if apps.is_empty() {
            return;
        }
        let at = greedy(&choices, &self.cap, &fixed);
        let mut line = format!("{} ({why}):", view.now);
        for (i, &a) in apps.iter().enumerate() {
            let (c, est) = match &at {
                Some(at) => choices[i].points[at[i]],
                None => (1, choices[i].points[0].1),
            };
            line += &format!(" app{a}={c} workers/SM (est. {est:.0} cycles left)");
            if c != self.current[a] {
                self.current[a] = c;
                actions.push(Action::SetWorkers { app: a, per_sm: c });
            }
        }
        if at.is_none() {
            line += " [smallest points do not fit: one worker each]";
        }
        self.log.push(line);
    }
}

impl PolicyControl for Service {
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruning_keeps_strictly_faster_points() {
        assert_eq!(
            prune(&[100, 80, 85, 60, 60, 70, 50]),
            vec![(1, 100), (2, 80), (4, 60), (7, 50)]
        );
    }

    #[test]
    fn greedy_gives_the_longest_kernel_more_until_full() {
        let k = |p: &[(u32, f64)], t: u64| Choice {
            points: p.to_vec(),
            need: [t, 0, 0, 0, 1],
        };
        // One SM of 8 threads: kernel 0 is long and scales, kernel 1 is short.
        let ks = [
            k(&[(1, 100.0), (2, 55.0), (3, 40.0), (4, 35.0)], 2),
            k(&[(1, 30.0), (2, 20.0)], 2),
        ];
        let at = greedy(&ks, &[8, 99, 99, 99, 99], &[0; 5]).unwrap();
        assert_eq!(at, vec![2, 0]);
        // Nothing fits beside a kernel that holds the SM.
        assert_eq!(greedy(&ks, &[8, 99, 99, 99, 99], &[7, 0, 0, 0, 0]), None);
    }

    fn view(apps: &[(u32, u64)]) -> View {
        View {
            now: 1000,
            apps: apps
                .iter()
                .map(|&(left, done)| crate::engine::AppView {
                    counters: crate::engine::Counters {
                        ctas_done: done,
                        ..Default::default()
                    },
                    sms: vec![true],
                    ctas: vec![1],
                    sm_insts: vec![0],
                    kernel: Some(0),
                    blocks_left: left,
                    blocks_total: 100,
                    done: false,
                })
                .collect(),
        }
    }

    /// Eq. 1's TB_e is the blocks the kernel has *executed*: 60 of its 100 blocks have
    /// started but only 20 completed, so 80% of its isolated time is left (not 40%).
    #[test]
    fn eq1_counts_completed_blocks() {
        let prof = || Profiled {
            points: vec![(1, 1000)],
            need: [1, 0, 0, 0, 1],
        };
        let mut s = Service::new(vec![vec![prof()], vec![prof()]], [99; 5], vec![1, 1]);
        let mut acts = Vec::new();
        s.on_hook(
            Hook::KernelArrival { app: 0, kernel: 0 },
            &view(&[(100, 0), (100, 0)]),
            &mut acts,
        );
        assert!(
            s.log[0].contains("app0=1 workers/SM (est. 1000 cycles left)"),
            "{:?}",
            s.log
        );
        s.on_hook(
            Hook::KernelArrival { app: 1, kernel: 0 },
            &view(&[(40, 20), (100, 0)]),
            &mut acts,
        );
        assert!(
            s.log[1].contains("app0=1 workers/SM (est. 800 cycles left)"),
            "{:?}",
            s.log
        );
    }
}

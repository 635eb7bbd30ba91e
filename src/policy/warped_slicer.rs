//! Warped-Slicer (Xu et al., ISCA 2016, §IV–V): dynamic intra-SM partitioning.
//!
//! 1. **Sampling.** The SMs are split equally among the K live kernels; on its SMs kernel
//!    i runs 1, 2, …, N_i CTAs per SM (one count per SM, wrapping when there are more SMs
//!    than counts; in several rounds when there are fewer, §IV-A "time sharing one SM").
//!    After a warm-up (20 K cycles at the start) each round measures every SM's IPC over a
//!    5 K-cycle window.
//! 2. **Scaling** (eq. 3–4): `IPC_scaled = IPC_sampled · (1 + φ_mem · ψ)` with
//!    `ψ = CTA_i / CTA_avg − 1` and φ_mem the kernel's fraction of scheduler cycles stalled
//!    on long memory latency during the window.
//! 3. **Partition.** Water filling (Algorithm 1) — or the exact ILP — on the curves
//!    normalised to each kernel's best point gives CTAs per SM `T_i`, applied to every SM
//!    as a CTA quota (SMs change hands by draining). If some kernel would lose more than
//!    `(1/K)·120%` of its performance, the kernels fall back to Spatial.
//! 4. **Phases.** A kernel arriving (a new kernel of an application, or a new application)
//!    or finishing triggers a new sampling phase among the live kernels; a sustained IPC
//!    change (more than `resample_change` over `resample_epochs` epochs of `sample`
//!    cycles) re-samples only the kernels whose IPC changed, the others keeping their
//!    curves (§IV-B: only the changed kernel's vectors are rebuilt, then the partition is
//!    recomputed). A single live kernel gets the whole GPU.

use crate::policy::ParamError;
use serde::{Deserialize, Serialize};

use super::baseline::release_all;
use super::partition::{ilp, water_fill, Partition, Problem};
use super::{label, spatial_masks, Plan, Policy, PolicyControl, Shape, Workload};
use crate::engine::{
    Action, AppPlacement, Controller, DispatchOrder, Handover, Hook, Placement, View,
};
use crate::error::Result;

/// How sampled IPC is corrected for the bandwidth an SM got while sampling (eq. 3–4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scaling {
    /// `ψ = CTA_i / CTA_avg − 1`, eq. 4 as printed.
    #[default]
    Paper,
    /// `ψ = CTA_avg / CTA_i − 1`: the bandwidth ratio of eq. 3 when the memory system is
    /// saturated (an SM's share is proportional to its CTAs while sampling, equal for all
    /// SMs once every SM runs the same count).
    Saturated,
    /// No correction.
    None,
}

/// Which max-min solver turns the sampled curves into a partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Solver {
    #[default]
    WaterFill,
    Ilp,
}

/// Warped-Slicer's parameters (defaults: the paper's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WsParams {
    /// Cycles before the first sampling window (§V: 20 K).
    pub warmup: u64,
    /// Sampling window in cycles (§IV-A: 5 K).
    pub sample: u64,
    /// Cycles between two sampling rounds of one phase (a later phase, after a kernel
    /// arrives or leaves or a phase change, waits `warmup` for the layout to take effect).
    pub settle: u64,
    /// A kernel may lose at most `loss_factor / K` of its performance (§IV: 120%).
    pub loss_factor: f64,
    /// Relative change of an application's IPC against its IPC just after the partition
    /// took effect that counts as a phase change (the paper gives no number).
    pub resample_change: f64,
    /// Consecutive epochs of `sample` cycles the change must last (≥ one profile length).
    pub resample_epochs: u32,
    /// Most re-sampling phases per run after the first.
    pub max_resamples: u32,
    /// Set by the policy's name (`warped-slicer`: water filling, `ws-ilp`: the ILP).
    #[serde(skip)]
    pub solver: Solver,
    pub scaling: Scaling,
}

impl Default for WsParams {
    fn default() -> WsParams {
        WsParams {
            warmup: 20_000,
            sample: 5_000,
            settle: 1_000,
            loss_factor: 1.2,
            resample_change: 0.5,
            resample_epochs: 3,
            max_resamples: 4,
            solver: Solver::WaterFill,
            scaling: Scaling::Paper,
        }
    }
}

impl super::Params for WsParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        super::check_period("sample", self.sample)?;
        if !(self.loss_factor.is_finite() && self.loss_factor > 0.0) {
            return Err(ParamError(format!(
                "loss_factor must be a positive number, got {}",
                self.loss_factor
            )));
        }
        if !(self.resample_change.is_finite() && self.resample_change > 0.0) {
            return Err(ParamError(format!(
                "resample_change must be a positive number, got {}",
                self.resample_change
            )));
        }
        Ok(())
    }
}

pub struct WarpedSlicer {
    pub params: WsParams,
    pub name: &'static str,
}

impl WarpedSlicer {
    /// Warped-Slicer with `params`, solving the max-min problem with `solver`.
    pub fn new(params: &WsParams, solver: Solver, name: &'static str) -> WarpedSlicer {
        WarpedSlicer {
            params: WsParams {
                solver,
                ..params.clone()
            },
            name,
        }
    }
}

impl Policy for WarpedSlicer {
    fn name(&self) -> String {
        self.name.into()
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let shapes = w.shapes()?;
        let n = w.apps.len();
        let live: Vec<usize> = (0..n).filter(|&a| w.apps[a].arrival == 0).collect();
        let mut ctl = Control {
            p: self.params.clone(),
            shapes,
            cap: w.cap(),
            nsm: w.sms(),
            scheds: w.spec.sm.schedulers.max(1) as u64,
            phase: Phase::Idle,
            gen: 0,
            profiled: vec![None; n],
            done: vec![false; n],
            resamples: 0,
            log: Vec::new(),
            chosen: None,
            last_curves: vec![Vec::new(); n],
            keep: vec![false; n],
        };
        let mut placement = Placement::left_over(n);
        placement.order = DispatchOrder::RoundRobin;
        if live.len() >= 2 {
            let layout = ctl.layout(&live, 0);
            for (a, p) in placement.apps.iter_mut().enumerate() {
                *p = AppPlacement {
                    sms: Some(layout.masks[a].clone()),
                    cta_quota: Some(layout.quotas[a].clone()),
                    ..AppPlacement::default()
                };
            }
            ctl.phase = Phase::Sampling {
                live,
                round: 0,
                rounds: layout.rounds,
                snap: None,
                curves: vec![Vec::new(); n],
                pending_start: Some(self.params.warmup),
            };
        }
        Ok(vec![Plan {
            apps: None,
            // Replaced by the partition once one is chosen; a run that ends first stays here.
            label: "sampling only".into(),
            ctas: None,
            placement,
            control: Box::new(ctl),
        }])
    }
}

/// Per-SM instruction counts and long-memory stalls at the start of a window.
#[derive(Clone, Debug)]
struct Snap {
    at: u64,
    sm_insts: Vec<Vec<u64>>,
    long_mem: Vec<u64>,
    insts: Vec<u64>,
}

impl Snap {
    fn of(view: &View) -> Snap {
        Snap {
            at: view.now,
            sm_insts: view.apps.iter().map(|a| a.sm_insts.clone()).collect(),
            long_mem: view
                .apps
                .iter()
                .map(|a| a.counters.stalls.long_memory)
                .collect(),
            insts: view.apps.iter().map(|a| a.counters.warp_insts).collect(),
        }
    }
}

enum Phase {
    Idle,
    Sampling {
        live: Vec<usize>,
        round: u32,
        rounds: u32,
        snap: Option<Snap>,
        /// Per app: `(CTAs, scaled IPC)` measurements.
        curves: Vec<Vec<(u32, f64)>>,
        /// The next window starts at this cycle (requested as a sample hook).
        pending_start: Option<u64>,
    },
    Running {
        live: Vec<usize>,
        last: Snap,
        reference: Option<Vec<f64>>,
        strikes: u32,
        /// Epochs since the partition was applied (the first ones are its transition).
        epochs: u32,
        /// Per app: the CTAs per SM the partition allows it (`None`: its SM mask only).
        quota: Vec<Option<u32>>,
        /// The transition ended (no application holds more CTAs on an SM than the
        /// partition allows) by the last epoch: the next epoch's IPC is the reference.
        settled: bool,
    },
}

struct Layout {
    masks: Vec<Vec<bool>>,
    quotas: Vec<Vec<u32>>,
    rounds: u32,
}

struct Control {
    p: WsParams,
    shapes: Vec<Shape>,
    cap: super::Need,
    nsm: usize,
    scheds: u64,
    phase: Phase,
    /// Generation of sample requests: hooks of an abandoned phase are ignored.
    gen: u32,
    profiled: Vec<Option<usize>>,
    done: Vec<bool>,
    resamples: u32,
    log: Vec<String>,
    chosen: Option<(String, Option<Vec<u32>>)>,
    /// Per app: the curve its last partition used.
    last_curves: Vec<Vec<(u32, f64)>>,
    /// Per app: keep `last_curves` through the current sampling phase (a phase change
    /// re-samples only the kernels whose IPC changed).
    keep: Vec<bool>,
}

/// Fewest epochs after a partition is applied before its IPC is taken as the reference;
/// the reference also waits for the sampling layout's CTAs to drain (`settled`), which
/// takes as long as those CTAs live: one of a few resident CTAs can take tens of epochs.
const TRANSITION_EPOCHS: u32 = 2;

const START: u32 = 0;
const END: u32 = 1;

impl Control {
    /// Sampling layout of round `round`: SM group per live app, CTA count per SM.
    fn layout(&self, live: &[usize], round: u32) -> Layout {
        let n = self.shapes.len();
        let masks = spatial_masks(self.nsm, n, live);
        let mut quotas = vec![vec![0u32; self.nsm]; n];
        let mut rounds = 1;
        for &a in live {
            let sms: Vec<usize> = (0..self.nsm).filter(|&s| masks[a][s]).collect();
            let size = sms.len().max(1) as u32;
            let max = self.shapes[a].max_ctas.max(1);
            rounds = rounds.max(max.div_ceil(size));
            for (r, &s) in sms.iter().enumerate() {
                let c = round * size + r as u32;
                quotas[a][s] = c % max + 1;
            }
        }
        Layout {
            masks,
            quotas,
            rounds,
        }
    }

    fn request(&mut self, at: u64, kind: u32, actions: &mut Vec<Action>) {
        actions.push(Action::Sample {
            at,
            id: self.gen * 2 + kind,
        });
    }

    /// Starts a sampling phase among `live` (released GPU if fewer than two).
    fn start_sampling(
        &mut self,
        view: &View,
        live: Vec<usize>,
        delay: u64,
        actions: &mut Vec<Action>,
    ) {
        self.gen += 1;
        if live.len() < 2 {
            self.phase = Phase::Idle;
            self.log.push(format!(
                "{}: one kernel left, it gets the whole GPU",
                view.now
            ));
            release_all(view, actions);
            return;
        }
        let layout = self.layout(&live, 0);
        self.apply_layout(&layout, &live, actions);
        let at = view.now + delay;
        self.request(at, START, actions);
        self.phase = Phase::Sampling {
            live,
            round: 0,
            rounds: layout.rounds,
            snap: None,
            curves: vec![Vec::new(); self.shapes.len()],
            pending_start: Some(at),
        };
    }

    fn apply_layout(&self, l: &Layout, live: &[usize], actions: &mut Vec<Action>) {
        for &a in live {
            actions.push(Action::SetSms {
                app: a,
                sms: l.masks[a].clone(),
                handover: Handover::Drain,
            });
            actions.push(Action::SetQuota {
                app: a,
                quota: Some(l.quotas[a].clone()),
            });
        }
    }

    /// Ends a window: per-SM IPC scaled by eq. 3–4 into the app's curve points.
    fn measure(
        &self,
        snap: &Snap,
        view: &View,
        live: &[usize],
        round: u32,
        curves: &mut [Vec<(u32, f64)>],
    ) {
        let dt = view.now.saturating_sub(snap.at).max(1);
        let layout = self.layout(live, round);
        for &a in live {
            let sms: Vec<usize> = (0..self.nsm).filter(|&s| layout.masks[a][s]).collect();
            if sms.is_empty() {
                continue;
            }
            let slots = dt * self.scheds * sms.len() as u64;
            let phi = ((view.apps[a].counters.stalls.long_memory - snap.long_mem[a]) as f64
                / slots as f64)
                .clamp(0.0, 1.0);
            let avg =
                sms.iter().map(|&s| layout.quotas[a][s] as f64).sum::<f64>() / sms.len() as f64;
            for &s in &sms {
                let c = layout.quotas[a][s];
                let ipc = (view.apps[a].sm_insts[s] - snap.sm_insts[a][s]) as f64 / dt as f64;
                let psi = match self.p.scaling {
                    Scaling::Paper => c as f64 / avg - 1.0,
                    Scaling::Saturated => avg / c as f64 - 1.0,
                    Scaling::None => 0.0,
                };
                curves[a].push((c, ipc * (1.0 + phi * psi)));
            }
        }
    }

    /// Curves → partition → actions.
    fn decide(
        &mut self,
        view: &View,
        live: &[usize],
        curves: &[Vec<(u32, f64)>],
        actions: &mut Vec<Action>,
    ) {
        let mut curves = curves.to_vec();
        for &a in live {
            if std::mem::take(&mut self.keep[a]) && !self.last_curves[a].is_empty() {
                curves[a] = self.last_curves[a].clone();
            }
            self.last_curves[a] = curves[a].clone();
        }
        let perf: Vec<Vec<f64>> = live
            .iter()
            .map(|&a| perf_row(&curves[a], self.shapes[a].max_ctas))
            .collect();
        let need: Vec<_> = live.iter().map(|&a| self.shapes[a].need).collect();
        let choice = choose(&perf, &need, self.cap, &self.p);
        // The other solver on the same curves, for comparison in the log.
        let other = Problem {
            perf: perf.clone(),
            need: need.clone(),
            cap: self.cap,
        };
        let other = match self.p.solver {
            Solver::WaterFill => ilp(&other).map(|x| format!("ILP {}", label(&x.ctas))),
            Solver::Ilp => water_fill(&other).map(|x| format!("water filling {}", label(&x.ctas))),
        }
        .unwrap_or_else(|e| e.to_string());
        let curves_txt: Vec<String> = perf
            .iter()
            .map(|c| {
                format!(
                    "[{}]",
                    c.iter()
                        .map(|x| format!("{x:.2}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
            .collect();
        let solved = match choice {
            Choice::Spatial(why) => Err(why),
            Choice::Intra(p) => Ok(p),
        };
        if let Err(why) = &solved {
            self.log.push(format!(
                "{}: sampled IPC per CTA count {}; {why}: spatial ({other})",
                view.now,
                curves_txt.join(" ")
            ));
            let masks = spatial_masks(self.nsm, self.shapes.len(), live);
            for &a in live {
                actions.push(Action::SetSms {
                    app: a,
                    sms: masks[a].clone(),
                    handover: Handover::Drain,
                });
                actions.push(Action::SetQuota {
                    app: a,
                    quota: None,
                });
            }
            self.chosen = Some(("spatial".into(), None));
        } else if let Ok(part) = &solved {
            self.log.push(format!(
                "{}: sampled IPC per CTA count {}; partition {} ({other})",
                view.now,
                curves_txt.join(" "),
                label(&part.ctas)
            ));
            for (i, &a) in live.iter().enumerate() {
                actions.push(Action::SetSms {
                    app: a,
                    sms: vec![true; self.nsm],
                    handover: Handover::Drain,
                });
                actions.push(Action::SetQuota {
                    app: a,
                    quota: Some(vec![part.ctas[i]; self.nsm]),
                });
            }
            self.chosen = Some((label(&part.ctas), Some(part.ctas.clone())));
        }
        for &a in live {
            self.profiled[a] = view.apps[a].kernel;
        }
        let mut quota = vec![None; self.shapes.len()];
        if let Ok(part) = &solved {
            for (i, &a) in live.iter().enumerate() {
                quota[a] = Some(part.ctas[i]);
            }
        }
        self.phase = Phase::Running {
            live: live.to_vec(),
            last: Snap::of(view),
            reference: None,
            strikes: 0,
            epochs: 0,
            quota,
            settled: false,
        };
    }

    fn live(&self, view: &View) -> Vec<usize> {
        (0..view.apps.len())
            .filter(|&a| {
                !view.apps[a].done && (view.apps[a].kernel.is_some() || self.profiled[a].is_some())
            })
            .collect()
    }

    fn on_sample(&mut self, id: u32, view: &View, actions: &mut Vec<Action>) {
        if id / 2 != self.gen {
            return;
        }
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        let Phase::Sampling {
            live,
            round,
            rounds,
            snap,
            mut curves,
            ..
        } = phase
        else {
            self.phase = phase;
            return;
        };
        if id % 2 == START {
            let at = view.now + self.p.sample;
            self.request(at, END, actions);
            self.phase = Phase::Sampling {
                live,
                round,
                rounds,
                snap: Some(Snap::of(view)),
                curves,
                pending_start: None,
            };
            return;
        }
        if let Some(s) = &snap {
            self.measure(s, view, &live, round, &mut curves);
        }
        if round + 1 < rounds {
            let layout = self.layout(&live, round + 1);
            self.apply_layout(&layout, &live, actions);
            let at = view.now + self.p.settle;
            self.request(at, START, actions);
            self.phase = Phase::Sampling {
                live,
                round: round + 1,
                rounds,
                snap: None,
                curves,
                pending_start: Some(at),
            };
            return;
        }
        self.decide(view, &live, &curves, actions);
    }

    fn on_epoch(&mut self, view: &View, actions: &mut Vec<Action>) {
        let Phase::Running {
            live,
            last,
            reference,
            strikes,
            epochs,
            quota,
            settled,
        } = &mut self.phase
        else {
            return;
        };
        *epochs += 1;
        let dt = view.now.saturating_sub(last.at).max(1) as f64;
        let ipc: Vec<f64> = live
            .iter()
            .map(|&a| (view.apps[a].counters.warp_insts - last.insts[a]) as f64 / dt)
            .collect();
        *last = Snap::of(view);
        // The CTAs of the sampling layout drain during the first epochs: the reference is
        // the first whole epoch after that transition.
        if *epochs <= TRANSITION_EPOCHS || !*settled {
            *settled = *epochs >= TRANSITION_EPOCHS && drained(view, live, quota);
            return;
        }
        match reference {
            None => *reference = Some(ipc),
            Some(r) => {
                let changed: Vec<bool> = ipc
                    .iter()
                    .zip(r.iter())
                    .map(|(x, r)| *r > 0.0 && (x / r - 1.0).abs() > self.p.resample_change)
                    .collect();
                *strikes = if changed.contains(&true) {
                    *strikes + 1
                } else {
                    0
                };
                if *strikes >= self.p.resample_epochs && self.resamples < self.p.max_resamples {
                    self.resamples += 1;
                    let live = live.clone();
                    // §IV-B: only the kernels whose IPC changed are sampled again.
                    let mut names = Vec::new();
                    for (i, &a) in live.iter().enumerate() {
                        self.keep[a] = !changed[i];
                        if changed[i] {
                            names.push(format!("app {a}"));
                        }
                    }
                    self.log.push(format!(
                        "{}: sustained IPC change of {}: re-sampling it, the others keep their curves",
                        view.now,
                        names.join(", ")
                    ));
                    self.start_sampling(view, live, self.p.warmup.max(self.p.settle), actions);
                }
            }
        }
    }
}

/// Whether no live application holds more CTAs on an SM than the partition allows it
/// there (none outside its SM mask, at most its quota inside).
fn drained(view: &View, live: &[usize], quota: &[Option<u32>]) -> bool {
    live.iter().all(|&a| {
        let v = &view.apps[a];
        v.ctas.iter().enumerate().all(|(s, &c)| {
            let allowed = if v.sms.get(s).copied().unwrap_or(false) {
                quota[a].unwrap_or(u32::MAX)
            } else {
                0
            };
            c <= allowed
        })
    })
}

/// What the sampled curves lead to.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// CTAs per SM for each kernel, on every SM.
    Intra(Partition),
    /// Fall back to Spatial, and why.
    Spatial(String),
}

/// Partitions by the configured solver and applies the loss limit: when some kernel keeps
/// less than `1 − loss_factor / K` of its best performance, the kernels go Spatial.
/// A kernel's performance at 1..=`max_ctas` CTAs per SM from `(CTAs, performance)`
/// points: the mean of the points at each count, a missing count taking the one below it.
pub fn perf_row(points: &[(u32, f64)], max_ctas: u32) -> Vec<f64> {
    let max = max_ctas.max(1);
    let mut out: Vec<f64> = Vec::with_capacity(max as usize);
    for c in 1..=max {
        let v: Vec<f64> = points.iter().filter(|p| p.0 == c).map(|p| p.1).collect();
        let m = if v.is_empty() {
            out.last().copied().unwrap_or(0.0)
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        };
        out.push(m);
    }
    out
}

pub fn choose(perf: &[Vec<f64>], need: &[super::Need], cap: super::Need, p: &WsParams) -> Choice {
    let pb = Problem {
        perf: perf.to_vec(),
        need: need.to_vec(),
        cap,
    };
    let solved = match p.solver {
        Solver::WaterFill => water_fill(&pb),
        Solver::Ilp => ilp(&pb),
    };
    let limit = p.loss_factor / perf.len().max(1) as f64;
    match solved {
        Err(e) => Choice::Spatial(e.to_string()),
        Ok(part) if part.perf.iter().any(|x| 1.0 - x > limit + 1e-12) => Choice::Spatial(format!(
            "{} loses more than {:.0}%",
            label(&part.ctas),
            limit * 100.0
        )),
        Ok(part) => Choice::Intra(part),
    }
}

impl Controller for Control {
    fn epoch(&self) -> Option<u64> {
        Some(self.p.sample.max(1))
    }

    /// An epoch acts only on a change of more than `resample_change` lasting
    /// `resample_epochs` epochs (re-sampling), which a steady span excludes.
    fn epoch_passive(&self) -> bool {
        true
    }

    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        match hook {
            Hook::Start => {
                if let Phase::Sampling {
                    pending_start: Some(at),
                    ..
                } = self.phase
                {
                    self.request(at, START, actions);
                }
            }
            Hook::Sample { id } => self.on_sample(id, view, actions),
            Hook::Epoch => self.on_epoch(view, actions),
            Hook::KernelArrival { app, kernel } => {
                let sampling_now = matches!(self.phase, Phase::Sampling { .. });
                let known = match &self.phase {
                    Phase::Sampling { live, .. } => live.contains(&app),
                    _ => false,
                };
                // The first kernels are profiled by the initial sampling phase.
                if sampling_now && known && self.profiled[app].is_none() {
                    return;
                }
                if self.profiled[app] != Some(kernel) {
                    let live = self.live(view);
                    self.log.push(format!(
                        "{}: kernel {kernel} of app {app} arrived: re-sampling",
                        view.now
                    ));
                    self.profiled[app] = Some(kernel);
                    // §IV-B: a new kernel is profiled; the others keep their curves.
                    for &a in &live {
                        self.keep[a] = a != app;
                    }
                    self.start_sampling(view, live, self.p.warmup.max(self.p.settle), actions);
                }
            }
            _ => {}
        }
        let done: Vec<bool> = view.apps.iter().map(|a| a.done).collect();
        if done != self.done {
            self.done = done;
            let live = self.live(view);
            self.log.push(format!(
                "{}: an application finished; {} live",
                view.now,
                live.len()
            ));
            // The survivors' curves still hold (per-SM IPC against CTAs per SM): partition
            // again without sampling when every one has a curve.
            if live.len() >= 2 && live.iter().all(|&a| !self.last_curves[a].is_empty()) {
                self.gen += 1;
                let curves = self.last_curves.clone();
                self.decide(view, &live, &curves, actions);
                return;
            }
            self.start_sampling(view, live, self.p.warmup.max(self.p.settle), actions);
        }
    }
}

impl PolicyControl for Control {
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
    fn chosen(&self) -> Option<(String, Option<Vec<u32>>)> {
        self.chosen.clone()
    }
}

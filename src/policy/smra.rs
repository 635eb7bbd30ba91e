//! SMRA: the run-time SM Reallocation algorithm of Punyala et al. (§III-C, Algorithm 1).
//!
//! Every application starts with an equal contiguous block of SMs ([`spatial_masks`]).
//! Every `period` (T_C) core cycles the controller measures the device throughput over the
//! period just ended and scores each live application by its IPC and its DRAM bandwidth
//! utilisation ([`scores`]); [`decide`] then rolls the last move back if throughput fell,
//! or moves SMs from the highest- to the lowest-score application. SMs change hands by
//! [`Handover::Drain`] (the paper's third method: the donor's resident blocks finish first)
//! unless `handover` says `switch`.
//!
//! Where the paper is silent we chose, and each choice is documented where it is made: the
//! IPC threshold as a fraction of the application's share of the peak issue rate
//! ([`scores`]), one step per period instead of Algorithm 1's inner loop, and the optional
//! `block_after_rollback` ([`decide`]); every default is ours ([`SmraParams`]).
//!
//! When an application finishes, each of its SMs goes to the live application owning the
//! nearest SM (keeps blocks contiguous); with one application left it gets the whole GPU
//! ([`release_all`]). Measurement restarts (no `T_p`, no pending rollback, no blocked
//! pair). The reported split ([`PolicyControl::chosen`], e.g. `smra: 10/6`) is the last
//! allocation SMRA decided while applications shared the GPU.

use crate::policy::ParamError;
use serde::{Deserialize, Serialize};

use super::baseline::release_all;
use super::{spatial_masks, Plan, Policy, PolicyControl, Workload};
use crate::engine::{Action, Controller, Handover, Hook, Placement, View};
use crate::error::{Error, Result};

/// SMRA's parameters. The paper gives no numbers; every default is our choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmraParams {
    /// T_C: cycles between two decisions.
    pub period: u64,
    /// IPC_thr as a fraction of the application's share of the peak issue rate (our choice: 0.2
    /// separates the Warped-Slicer suite's memory-bound kernels, about 0.12 of peak per SM
    /// on Fermi-WS, from its compute-bound ones, 0.3 and more).
    pub ipc_thr: f64,
    /// BW_thr as a fraction of the model's peak DRAM bandwidth.
    pub bw_thr: f64,
    /// n_r: SMs moved per step.
    pub n_r: usize,
    /// R_min: fewest SMs an application keeps.
    pub r_min: usize,
    /// How a moved SM changes hands.
    pub handover: Handover,
    /// Block a (donor, receiver) pair after one rollback until the set of live applications
    /// changes. Not in Algorithm 1 (which only restores the previous allocation), so off by
    /// default.
    pub block_after_rollback: bool,
}

impl Default for SmraParams {
    fn default() -> SmraParams {
        SmraParams {
            period: 10_000,
            ipc_thr: 0.2,
            bw_thr: 0.5,
            n_r: 2,
            r_min: 2,
            handover: Handover::Drain,
            block_after_rollback: false,
        }
    }
}

impl super::Params for SmraParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        SmraParams::check(self).map_err(|e| ParamError(e.to_string()))
    }
}

impl SmraParams {
    fn check(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Usage(format!("smra: {what}")));
        super::check_period("period", self.period)
            .map_err(|e| Error::Usage(format!("smra: {e}")))?;
        if self.n_r == 0 {
            return bad("n_r must be at least 1 SM");
        }
        if !(self.ipc_thr.is_finite() && self.ipc_thr >= 0.0) {
            return bad("ipc_thr must be a non-negative number");
        }
        if !(self.bw_thr.is_finite() && self.bw_thr >= 0.0) {
            return bad("bw_thr must be a non-negative number");
        }
        Ok(())
    }
}

/// The SMRA policy: one plan, equal SM split, [`SmraControl`] at run time.
pub struct Smra(pub SmraParams);

impl Policy for Smra {
    fn name(&self) -> String {
        "smra".into()
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        self.0.check()?;
        let n = w.apps.len();
        let nsm = w.sms();
        let live: Vec<usize> = (0..n).collect();
        let masks = spatial_masks(nsm, n, &live);
        let mut placement = Placement::left_over(n);
        for (a, m) in placement.apps.iter_mut().zip(&masks) {
            a.sms = Some(m.clone());
        }
        let rates = Rates {
            issue_per_sm: (w.spec.sm.schedulers.max(1) * w.spec.sm.issue_width.max(1)) as f64,
            dram_bytes_per_cycle: w.spec.dram.peak_bytes_per_sec() as f64
                / w.spec.clocks.core.hz().max(1) as f64,
        };
        let names = w.apps.iter().map(|a| a.name.clone()).collect();
        Ok(vec![Plan {
            apps: None,
            label: "spatial".into(),
            ctas: None,
            placement,
            control: Box::new(SmraControl::new(self.0.clone(), rates, names, &masks)),
        }])
    }
}

/// Peak rates of the model, per core cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// Warp instructions one SM may issue per cycle.
    pub issue_per_sm: f64,
    /// DRAM bytes per core cycle over all channels.
    pub dram_bytes_per_cycle: f64,
}

/// What one period measured, per application (`None`: finished).
#[derive(Clone, Debug, PartialEq)]
pub struct Period {
    pub cycles: u64,
    pub insts: Vec<u64>,
    pub dram_bytes: Vec<u64>,
    /// SMs each application is given (R_i; 0 for finished ones).
    pub sms: Vec<usize>,
    /// SMs each application owns or still runs CTAs on (S_i, for the IPC threshold).
    pub busy: Vec<usize>,
    pub live: Vec<bool>,
}

impl Period {
    /// Device throughput T (warp instructions per cycle).
    pub fn throughput(&self) -> f64 {
        self.insts.iter().sum::<u64>() as f64 / self.cycles.max(1) as f64
    }
    pub fn ipc(&self, a: usize) -> f64 {
        self.insts.get(a).copied().unwrap_or(0) as f64 / self.cycles.max(1) as f64
    }
    fn is_live(&self, a: usize) -> bool {
        self.live.get(a).copied().unwrap_or(false)
    }
    /// Fraction of the peak DRAM bandwidth application `a` used.
    pub fn bw_util(&self, a: usize, r: &Rates) -> f64 {
        self.dram_bytes.get(a).copied().unwrap_or(0) as f64
            / (self.cycles.max(1) as f64 * r.dram_bytes_per_cycle.max(1e-9))
    }
}

/// `V[i]` of every application (0 for finished ones); scores reset every period:
///
/// * `+1` if `IPC_i < ipc_thr · S_i · peak issue rate of one SM` — the paper only says
///   `IPC < IPC_thr`; we make the threshold a fraction of the application's share of the
///   GPU's peak issue rate (`schedulers × issue_width` warp instructions per SM-cycle) so
///   that it does not depend on how many SMs the application holds. `S_i` counts the SMs
///   the application owns or still runs CTAs on (a drained SM keeps the donor's blocks);
/// * `+2` if `DRAM bytes_i / (period × peak DRAM bytes per core cycle) > bw_thr`.
///
/// The throughput the decision compares is `T = Σ warp instructions / period`.
pub fn scores(p: &SmraParams, r: &Rates, m: &Period) -> Vec<u32> {
    (0..m.insts.len())
        .map(|a| {
            if !m.is_live(a) {
                return 0;
            }
            let thr = p.ipc_thr * r.issue_per_sm * m.busy.get(a).copied().unwrap_or(0) as f64;
            u32::from(m.ipc(a) < thr) + 2 * u32::from(m.bw_util(a, r) > p.bw_thr)
        })
        .collect()
}

/// What SMRA does at the end of a period.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Nothing moves (the reason, for the log).
    Hold(String),
    /// `n` SMs move from `from` to `to`.
    Move { from: usize, to: usize, n: usize },
    /// The last move is undone.
    Rollback,
}

/// Algorithm 1 for one period: `t_prev` is the previous period's throughput, `moved` whether
/// SMs moved at the start of the period measured, `blocked` the pairs
/// (donor, receiver) rolled back since the live set last changed (always empty unless
/// `block_after_rollback`).
///
/// 1. if SMs moved at the start of the period just measured and `T < T_p` (the throughput
///    of the period before the move), the move is rolled back (the previous allocation is
///    restored). Algorithm 1 does nothing more (lines 24–25), so by default the same pair
///    may move again in a later period. With `block_after_rollback = true` (our option, not
///    the paper's) the (donor, receiver) pair is blocked until the set of live applications
///    changes, which stops a move from being retried and rolled back period after period —
///    but with two applications one noisy period then switches SMRA off;
/// 2. otherwise, if all live applications have the same score, nothing moves;
/// 3. otherwise `n_r` SMs (fewer when the donor would go below `r_min`) move from the
///    highest-score application (lowest index on ties, skipping donors at `r_min` and
///    blocked pairs, if any) to the lowest-score one.
///
/// Algorithm 1's inner `while T > T_p` loop moves again as long as throughput improves; we
/// take one step per period, so "keep moving while throughput improves" is "the next
/// period moves again unless step 1 rolls back". `T_p` is always the previous period's
/// throughput.
pub fn decide(
    p: &SmraParams,
    scores: &[u32],
    m: &Period,
    t_prev: Option<f64>,
    moved: bool,
    blocked: &[(usize, usize)],
) -> Step {
    let t = m.throughput();
    if moved && t_prev.is_some_and(|tp| t < tp) {
        return Step::Rollback;
    }
    let live: Vec<usize> = (0..scores.len()).filter(|&a| m.is_live(a)).collect();
    if live.len() < 2 {
        return Step::Hold("fewer than two live applications".into());
    }
    if live.iter().all(|&a| scores[a] == scores[live[0]]) {
        return Step::Hold("all scores equal".into());
    }
    // Highest score first (lowest index on ties) as donor; lowest score as receiver.
    let mut donors = live.clone();
    donors.sort_by_key(|&a| (std::cmp::Reverse(scores[a]), a));
    let mut receivers = live;
    receivers.sort_by_key(|&a| (scores[a], a));
    for &from in &donors {
        let spare = m.sms.get(from).map_or(0, |r| r.saturating_sub(p.r_min));
        if spare == 0 {
            continue;
        }
        let to = receivers
            .iter()
            .copied()
            .find(|&to| scores[to] < scores[from] && !blocked.contains(&(from, to)));
        if let Some(to) = to {
            return Step::Move {
                from,
                to,
                n: p.n_r.min(spare),
            };
        }
    }
    Step::Hold("no donor above r_min with a lower-score receiver".into())
}

/// Counters at the start of the running period.
#[derive(Clone, Debug)]
struct Snap {
    at: u64,
    insts: Vec<u64>,
    dram: Vec<u64>,
}

impl Snap {
    fn of(view: &View) -> Snap {
        Snap {
            at: view.now,
            insts: view.apps.iter().map(|a| a.counters.warp_insts).collect(),
            dram: view.apps.iter().map(|a| a.counters.dram_bytes).collect(),
        }
    }
}

/// A move that may still be rolled back.
struct Pending {
    from: usize,
    to: usize,
    /// Owner of every SM before the move.
    before: Vec<Option<usize>>,
}

/// SMRA's run-time controller (Algorithm 1).
pub struct SmraControl {
    p: SmraParams,
    rates: Rates,
    names: Vec<String>,
    /// Which application each SM is given to.
    owner: Vec<Option<usize>>,
    done: Vec<bool>,
    snap: Option<Snap>,
    t_prev: Option<f64>,
    /// The move applied at the start of the running period.
    pending: Option<Pending>,
    blocked: Vec<(usize, usize)>,
    /// SMs per application, last decided while applications shared the GPU.
    split: Vec<usize>,
    log: Vec<String>,
}

impl SmraControl {
    /// A controller starting from `masks` (one SM mask per application).
    pub fn new(p: SmraParams, rates: Rates, names: Vec<String>, masks: &[Vec<bool>]) -> Self {
        let nsm = masks.first().map_or(0, Vec::len);
        let owner: Vec<Option<usize>> = (0..nsm)
            .map(|s| {
                masks
                    .iter()
                    .position(|m| m.get(s).copied().unwrap_or(false))
            })
            .collect();
        let mut c = SmraControl {
            p,
            rates,
            done: vec![false; names.len()],
            names,
            owner,
            snap: None,
            t_prev: None,
            pending: None,
            blocked: Vec::new(),
            split: Vec::new(),
            log: Vec::new(),
        };
        c.split = c.counts();
        c
    }

    fn counts(&self) -> Vec<usize> {
        (0..self.names.len())
            .map(|a| self.owner.iter().filter(|o| **o == Some(a)).count())
            .collect()
    }

    fn split_label(&self, counts: &[usize]) -> String {
        counts
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join("/")
    }

    fn name(&self, a: usize) -> &str {
        self.names.get(a).map_or("?", String::as_str)
    }

    /// SetSms actions for every live application whose mask differs from `before`.
    fn apply(&self, before: &[Option<usize>], view: &View, actions: &mut Vec<Action>) {
        for (a, v) in view.apps.iter().enumerate() {
            if v.done {
                continue;
            }
            let changed = self
                .owner
                .iter()
                .zip(before)
                .any(|(n, o)| (*n == Some(a)) != (*o == Some(a)));
            if changed {
                actions.push(Action::SetSms {
                    app: a,
                    sms: self.owner.iter().map(|o| *o == Some(a)).collect(),
                    handover: self.p.handover,
                });
            }
        }
    }

    /// Moves `n` SMs of `from` to `to`: the donor's SMs nearest the receiver's block.
    fn move_sms(&mut self, from: usize, to: usize, n: usize) {
        let mine: Vec<usize> = (0..self.owner.len())
            .filter(|&s| self.owner[s] == Some(from))
            .collect();
        let theirs: Vec<usize> = (0..self.owner.len())
            .filter(|&s| self.owner[s] == Some(to))
            .collect();
        let centre = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
        let take: Vec<usize> = if centre(&theirs) < centre(&mine) {
            mine.iter().take(n).copied().collect()
        } else {
            mine.iter().rev().take(n).copied().collect()
        };
        for s in take {
            self.owner[s] = Some(to);
        }
    }

    /// An application finished: its SMs go to the live application owning the nearest SM.
    fn reshare(&mut self, view: &View, actions: &mut Vec<Action>) {
        let live: Vec<usize> = (0..self.done.len()).filter(|&a| !self.done[a]).collect();
        self.t_prev = None;
        self.pending = None;
        self.blocked.clear();
        self.snap = Some(Snap::of(view));
        if live.len() <= 1 {
            self.log.push(format!(
                "@{}: one application left: it gets the whole GPU",
                view.now
            ));
            release_all(view, actions);
            return;
        }
        let before = self.owner.clone();
        let held: Vec<usize> = (0..before.len())
            .filter(|&s| before[s].is_some_and(|a| !self.done[a]))
            .collect();
        for s in 0..before.len() {
            if before[s].is_some_and(|a| !self.done[a]) {
                continue;
            }
            let nearest = held.iter().min_by_key(|&&h| (h.abs_diff(s), h));
            self.owner[s] = nearest.and_then(|&h| before[h]).or(live.first().copied());
        }
        self.apply(&before, view, actions);
        self.log.push(format!(
            "@{}: an application finished; SMs re-shared: {}",
            view.now,
            self.split_label(&self.counts())
        ));
    }

    fn period_end(&mut self, view: &View, actions: &mut Vec<Action>) {
        let now = Snap::of(view);
        let Some(start) = self.snap.replace(now.clone()) else {
            return;
        };
        if now.at <= start.at {
            return;
        }
        let counts = self.counts();
        let m = Period {
            cycles: now.at - start.at,
            insts: now
                .insts
                .iter()
                .zip(&start.insts)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
            dram_bytes: now
                .dram
                .iter()
                .zip(&start.dram)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
            sms: counts.clone(),
            busy: view
                .apps
                .iter()
                .map(|a| {
                    a.sms
                        .iter()
                        .zip(&a.ctas)
                        .filter(|(m, c)| **m || **c > 0)
                        .count()
                })
                .collect(),
            live: self.done.iter().map(|d| !d).collect(),
        };
        let v = scores(&self.p, &self.rates, &m);
        let t = m.throughput();
        let moved = self.pending.is_some();
        let step = decide(&self.p, &v, &m, self.t_prev, moved, &self.blocked);
        let apps: Vec<String> = (0..v.len())
            .filter(|&a| m.live[a])
            .map(|a| {
                format!(
                    "{} {} SMs ipc {:.3} bw {:.2} V={}",
                    self.name(a),
                    counts[a],
                    m.ipc(a),
                    m.bw_util(a, &self.rates),
                    v[a]
                )
            })
            .collect();
        let tp = self.t_prev.map_or("-".to_string(), |x| format!("{x:.3}"));
        let head = format!("@{}: T {t:.3} (T_p {tp}); {}", view.now, apps.join("; "));
        let before = self.owner.clone();
        let pending = self.pending.take();
        let what = match (step, pending) {
            (
                Step::Rollback,
                Some(Pending {
                    from,
                    to,
                    before: prev,
                }),
            ) => {
                self.owner = prev;
                if self.p.block_after_rollback {
                    self.blocked.push((from, to));
                }
                format!(
                    "T < T_p: roll back the move {} -> {}: {}",
                    self.name(from),
                    self.name(to),
                    self.split_label(&self.counts())
                )
            }
            (Step::Move { from, to, n }, _) => {
                self.move_sms(from, to, n);
                self.pending = Some(Pending {
                    from,
                    to,
                    before: before.clone(),
                });
                format!(
                    "move {n} SMs {} -> {}: {}",
                    self.name(from),
                    self.name(to),
                    self.split_label(&self.counts())
                )
            }
            (Step::Hold(why), _) => format!("hold ({why})"),
            (Step::Rollback, None) => "hold (nothing to roll back)".into(),
        };
        self.log.push(format!("{head} => {what}"));
        self.apply(&before, view, actions);
        self.split = self.counts();
        self.t_prev = Some(t);
    }
}

impl Controller for SmraControl {
    fn epoch(&self) -> Option<u64> {
        Some(self.p.period.max(1))
    }

    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        if view.apps.len() != self.done.len() {
            return;
        }
        let now_done: Vec<bool> = view.apps.iter().map(|a| a.done).collect();
        if now_done != self.done {
            let was_shared = self.done.iter().filter(|d| !**d).count() >= 2;
            self.done = now_done;
            if was_shared {
                self.reshare(view, actions);
            }
            return;
        }
        if self.done.iter().filter(|d| !**d).count() < 2 {
            return;
        }
        match hook {
            Hook::Start => self.snap = Some(Snap::of(view)),
            Hook::Epoch => self.period_end(view, actions),
            _ => {
                if self.snap.is_none() {
                    self.snap = Some(Snap::of(view));
                }
            }
        }
    }
}

impl PolicyControl for SmraControl {
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
    fn chosen(&self) -> Option<(String, Option<Vec<u32>>)> {
        Some((format!("smra: {}", self.split_label(&self.split)), None))
    }
}

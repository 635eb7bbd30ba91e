//! Steady-state fast-forward: while every running application is in a steady state, whole
//! waves of CTAs are retired analytically instead of simulating millions of near-identical
//! cycles: long runs are several times faster. The rules, why they are what they are, and
//! the accuracy measured for them: docs/fast-forward.md (the numbers: BENCHMARKS.md).
//!
//! Where to look: this file holds the state, the measuring (`ff_window`, `ff_span`,
//! `ff_rate`) and the jump itself (`ff_jump`); `plan` chooses a jump (candidate waves per
//! application, what limits them, alignment of co-runners, the pre-ageing jump); `age`
//! holds aged mode's random walk, prefix credit and end-point correction; `hist` the
//! snapshots spans are found in; `pass` retires whole relaunches of an application running
//! alone in a window or budget run; `corun` skips the same time for several applications
//! relaunching side by side, calling the controller's epochs it crosses.
//!
//! In short:
//! - *Measuring*: every `window` cycles a probe (not a queued event: measuring alone changes
//!   nothing) snapshots each application's counters, launch, resident CTAs and next block;
//!   a hook or a change of running kernels or resident CTA counts starts afresh.
//! - *Steady*: a span whose two halves each saw `waves` waves of CTAs complete, resident
//!   counts unchanged, IPC, DRAM traffic, hit rates and stall and pipeline mixes within
//!   `tolerance`, and nothing pending that a jump would step over unseen.
//! - *The jump*: each application retires the next whole waves of its launch; their time is
//!   their exact warp instruction count over the measured IPC; co-runners skip equal time.
//!   It never crosses a launch's last wave, a change in the instruction stream, a budget or
//!   an event anchored in absolute time.
//! - *Time*: the engine's clock does not move; the run keeps an offset (`Engine::off`) added
//!   to every time it records. Integer arithmetic in fixed order: deterministic.
//! - *Aged jumps* (`--ff-age`): resident CTAs' phases move by the random walk the skipped
//!   waves would have made, and a jump's time is corrected by the next span's rate.

mod age;
mod corun;
mod hist;
mod pass;
mod plan;

use super::*;
use crate::engine::config::FastForward;
use crate::engine::sm::Cta;
use crate::engine::stats::{FfJump, FfStats, StallStack};
use crate::trace::synth::rng::{hash2, mix64, unit_f64};
use crate::trace::DynInst;
use hist::{History, Snap};
use plan::Plan;

/// Skipped blocks whose first warp is decoded for the mix check, and span blocks decoded
/// for the reference mix.
const MIX_SAMPLES: u32 = 32;
const REF_SAMPLES: u32 = 16;
/// Largest total-variation distance between a skipped block's unit mix and the span's.
const MIX_TOLERANCE: f64 = 0.1;
/// Co-running applications' skipped times agree within this fraction.
const ALIGN: f64 = 0.01;
/// Resident phases whose resultant is below this many times `sqrt(count)` count as out
/// of step already (uniform phases give about 0.89).
const SPREAD: f64 = 3.0;
/// Aged blocks need this many mean block durations after a jump before the next event.
const AGE_ROOM: f64 = 3.0;
/// Fewest waves in a jump that is preceded by a pre-ageing jump.
const PRE_AGE_MIN: usize = 16;

/// Fast-forward state of one run.
pub(super) struct FfState {
    pub(super) cfg: FastForward,
    /// Engine time of the next snapshot (the end of the current measurement window).
    /// Snapshots are not events in the queue: the queue's next event is how far an SM
    /// may run ahead, and a probe that shortened it would change what it measures.
    pub(super) next: u64,
    /// A hook ran since the last snapshot.
    pub(super) dirty: bool,
    /// Controller samples requested and not yet delivered.
    pub(super) samples_pending: u32,
    hist: History,
    /// Per application, (time, warp instructions so far, the CTA's duration) at each CTA
    /// completion since the history restarted.
    done: Vec<Vec<(u64, u64, u64)>>,
    /// Per SM, the prefixes (launch, CTA slot, millionths of each warp's stream) that
    /// the next block of that launch placed in that slot skips: the last jump's ageing.
    /// (Per slot, not per SM: a block started nearly at its end frees its slot at once,
    /// and would otherwise take the SM's other prefixes too, leaving its neighbours in
    /// step.)
    prefix: Vec<Vec<(u32, u32, u32)>>,
    /// Per application, the counter deltas of the last jump's span: skipped prefixes are
    /// credited at its ratios.
    ratios: Vec<Option<Counters>>,
    /// Per application, warp instructions of aged prefixes credited so far.
    prefixed: Vec<u64>,
    /// Per application, waves its state was aged beyond its time (by a pre-ageing jump).
    ahead: Vec<usize>,
    /// Per application, what its last jump left for its launch.
    jumped: Vec<Option<Jumped>>,
    /// The last jump, until the next steady span measures the rate it ended at.
    last: Option<Last>,
    /// Aged mode: the first snapshot since the history restarted at which every running
    /// launch's first wave had turned over, as its time and the start times of the CTAs
    /// then resident (launch, start): how far in step they were.
    base: Option<(u64, Vec<(u32, u64)>)>,
    /// Aged mode: progress samples of resident CTAs started whole, since the history
    /// restarted: (snapshot time, launch, cycles since the block started, fraction of its
    /// warp instructions issued). A prefix is placed by the progress curve they trace.
    prog: std::collections::VecDeque<ProgSample>,
    /// Aged mode: durations of the blocks started whole that completed since the
    /// history restarted, by (launch, block): a progress sample's time is a fraction of
    /// its own block's duration (of the mean, the blocks still resident late in their
    /// time would be the slow ones only).
    whole: std::collections::BTreeMap<(u32, u32), u64>,
    /// Idle scheduler cycles of the skipped time (added to the GPU's idle stalls).
    idle: u64,
    /// Per application, its state at the ends of its last passes over its kernels
    /// (launch-level jumps, `pass`).
    marks: Vec<Vec<pass::PassMark>>,
    /// Every application's warp instructions at each snapshot (absolute time) of a window
    /// run of several, since the last jump and at most [`TRACE`] snapshots back: a co-run
    /// jump to a window's end
    /// credits the application it is made for what its last pass did in the same time.
    trace: std::collections::VecDeque<(u64, Vec<u64>)>,
    /// Controller actions applied so far (a co-run regime ends at each).
    pub(super) acts: u64,
    /// Actions of a deferred epoch (below) whose event has come, for `run_hooks` to apply.
    pub(super) pending: Vec<crate::engine::config::Action>,
    /// Actions of an acting epoch that a co-run jump stopped short of (at a whole pass of
    /// the application it was made for, so that its phase there is the detailed run's):
    /// the epoch's event, in detail, applies them instead of calling the controller again.
    pub(super) deferred: Vec<crate::engine::config::Action>,
    /// The co-runner's pass a jump that would have stopped short of a window's end waits
    /// for (once a regime: `corun::Engine::ff_end_sooner`).
    waited: Option<corun::Waited>,
    pub(super) stats: FfStats,
}

/// One resident block's progress at a snapshot (aged mode).
struct ProgSample {
    /// The snapshot's time.
    t: u64,
    krun: u32,
    block: u32,
    /// Cycles since the block started.
    age: u64,
    /// Fraction of its warp instructions issued.
    frac: f32,
}

/// What an application's last jump left for the launch it jumped in.
#[derive(Clone, Copy)]
struct Jumped {
    /// The launch (a launch jumped once is not pre-aged again).
    krun: usize,
    /// Aged mode: the block from which a span may start, two waves past the jump, once
    /// the CTAs resident across it (blocks from before the skipped ones, sharing DRAM
    /// rows and L2 lines with none of the new ones) and the aged blocks that followed
    /// them have been replaced.
    settle: u32,
    /// Aged mode: the fraction of the duration-variance random walk the launch's slots
    /// were measured to follow in detail, from its first aged jump (`age::ff_drift`).
    drift: Option<f64>,
}

/// A jump awaiting its end-point correction: its length, the span it was measured over
/// (cycles, and the GPU's idle scheduler cycles in it), and each application's part.
struct Last {
    j: u64,
    dt: u64,
    idle: u64,
    apps: Vec<LastApp>,
}

/// One application's part of a [`Last`] jump.
struct LastApp {
    app: usize,
    /// The launch it ran.
    krun: usize,
    /// Warp instructions whose time the jump paid (the skipped blocks and the held-back
    /// ones standing for the aged prefixes), and the rate used (`insts / cycles`).
    skipped: u64,
    insts: u64,
    cycles: u64,
    /// Stall counters of the span (the time-proportional ones a correction rescales).
    stalls: StallStack,
}

impl FfState {
    pub(super) fn new(cfg: FastForward) -> FfState {
        FfState {
            next: cfg.window.max(1),
            cfg,
            dirty: false,
            samples_pending: 0,
            hist: History::new(),
            done: Vec::new(),
            prefix: Vec::new(),
            ratios: Vec::new(),
            last: None,
            base: None,
            prog: std::collections::VecDeque::new(),
            whole: std::collections::BTreeMap::new(),
            prefixed: Vec::new(),
            ahead: Vec::new(),
            jumped: Vec::new(),
            idle: 0,
            marks: Vec::new(),
            trace: std::collections::VecDeque::new(),
            acts: 0,
            pending: Vec::new(),
            deferred: Vec::new(),
            waited: None,
            stats: FfStats::default(),
        }
    }

    /// CTA `c` of application `app` completed at `t`, with `insts` warp instructions
    /// retired so far (those of aged prefixes are left out: rates are of simulated work).
    pub(super) fn completed(&mut self, app: usize, t: u64, insts: u64, c: &Cta) {
        let dur = t.saturating_sub(c.start);
        if self.cfg.age && !c.prefixed {
            self.whole.insert((c.krun, c.block), dur);
        }
        if self.done.len() <= app {
            self.done.resize(app + 1, Vec::new());
        }
        if self.prefixed.len() <= app {
            self.prefixed.resize(app + 1, 0);
        }
        self.done[app].push((t, insts - self.prefixed[app], dur));
    }

    /// The prefix (millionths) the next block of launch `k` placed in slot `slot` of SM
    /// `s` skips.
    pub(super) fn take_prefix(&mut self, s: usize, slot: usize, k: u32) -> u32 {
        let Some(q) = self.prefix.get_mut(s) else {
            return 0;
        };
        match q.iter().position(|&(x, c, _)| x == k && c as usize == slot) {
            Some(i) => q.remove(i).2,
            None => 0,
        }
    }

    /// What application `a`'s last jump left, if it jumped in launch `k`.
    fn jumped_in(&self, a: usize, k: usize) -> Option<Jumped> {
        self.jumped
            .get(a)
            .copied()
            .flatten()
            .filter(|j| j.krun == k)
    }

    fn restart(&mut self) {
        self.hist.clear();
        self.prog.clear();
        self.whole.clear();
        for d in &mut self.done {
            d.clear();
        }
    }
}

fn mul_div(x: u64, num: u64, den: u64) -> u64 {
    (x as u128 * num as u128 / den.max(1) as u128) as u64
}

fn rel(a: f64, b: f64) -> f64 {
    let m = a.abs().max(b.abs());
    if m < 1e-12 {
        0.0
    } else {
        (a - b).abs() / m
    }
}

/// Total-variation distance between two count vectors taken as distributions.
fn tv(a: &[u64], b: &[u64]) -> f64 {
    let (sa, sb) = (a.iter().sum::<u64>(), b.iter().sum::<u64>());
    if sa == 0 || sb == 0 {
        return if sa == sb { 0.0 } else { 1.0 };
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 / sa as f64 - y as f64 / sb as f64).abs())
        .sum::<f64>()
        / 2.0
}

fn stall_vec(c: &Counters) -> [u64; 5] {
    let s = &c.stalls;
    [s.short_raw, s.long_memory, s.unit_busy, s.barrier, s.idle]
}

/// `b - a`, field by field, for the counters the stability test and the jump use.
fn delta(a: &Counters, b: &Counters) -> Counters {
    let mut d = Counters {
        warp_insts: b.warp_insts - a.warp_insts,
        thread_insts: b.thread_insts - a.thread_insts,
        l1_accesses: b.l1_accesses - a.l1_accesses,
        l1_hits: b.l1_hits - a.l1_hits,
        l2_accesses: b.l2_accesses - a.l2_accesses,
        l2_hits: b.l2_hits - a.l2_hits,
        noc_bytes: b.noc_bytes - a.noc_bytes,
        dram_reads: b.dram_reads - a.dram_reads,
        dram_writes: b.dram_writes - a.dram_writes,
        dram_bytes: b.dram_bytes - a.dram_bytes,
        row_hits: b.row_hits - a.row_hits,
        ctas_done: b.ctas_done - a.ctas_done,
        warp_cycles: b.warp_cycles - a.warp_cycles,
        sp_flops: b.sp_flops - a.sp_flops,
        ..Counters::default()
    };
    for i in 0..9 {
        d.unit_busy[i] = b.unit_busy[i] - a.unit_busy[i];
    }
    let (x, y) = (&a.stalls, &b.stalls);
    d.stalls = StallStack {
        short_raw: y.short_raw - x.short_raw,
        long_memory: y.long_memory - x.long_memory,
        unit_busy: y.unit_busy - x.unit_busy,
        barrier: y.barrier - x.barrier,
        idle: y.idle - x.idle,
    };
    d
}

/// Snapshots of every application's progress kept for a co-run jump to a window's end
/// (8 M cycles at the default 2 000-cycle window).
const TRACE: usize = 4096;

/// Whether two halves of a span (counter deltas over `c1` and `c2` cycles) are alike.
fn steady(d1: &Counters, c1: u64, d2: &Counters, c2: u64, tol: f64) -> bool {
    steady_above(d1, c1, d2, c2, tol, 0.0)
}

/// [`steady`], with DRAM traffic alike also when the two rates differ by at most
/// `floor` bytes a cycle.
fn steady_above(d1: &Counters, c1: u64, d2: &Counters, c2: u64, tol: f64, floor: f64) -> bool {
    let per = |x: u64, c: u64| x as f64 / c.max(1) as f64;
    let hit = |h: u64, a: u64| if a == 0 { 0.0 } else { h as f64 / a as f64 };
    let (b1, b2) = (per(d1.dram_bytes, c1), per(d2.dram_bytes, c2));
    rel(per(d1.warp_insts, c1), per(d2.warp_insts, c2)) <= tol
        && (rel(b1, b2) <= tol || (b1 - b2).abs() <= floor)
        && (hit(d1.l1_hits, d1.l1_accesses) - hit(d2.l1_hits, d2.l1_accesses)).abs() <= tol
        && (hit(d1.l2_hits, d1.l2_accesses) - hit(d2.l2_hits, d2.l2_accesses)).abs() <= tol
        && tv(&stall_vec(d1), &stall_vec(d2)) <= 2.0 * tol
        && tv(&d1.unit_busy, &d2.unit_busy) <= tol
}

/// Events anchored in absolute time that a jump must not cross (they move when the
/// engine skips time). Occupancy samples (`next_tick`) are anchored too, but a jump takes the
/// ones it crosses itself.
fn anchored(e: &Ev) -> bool {
    matches!(
        e,
        Ev::Launch(_) | Ev::Epoch | Ev::Sample(_) | Ev::Slice | Ev::End
    )
}

/// [`anchored`], less a passive controller's epochs (`Controller::epoch_passive`), which
/// a jump crosses: they stay where they are in engine time.
fn blocking(e: &Ev, passive: bool) -> bool {
    anchored(e) && !(passive && *e == Ev::Epoch)
}

impl Engine<'_, '_> {
    /// Idle scheduler cycles fast-forward skipped.
    pub(super) fn ff_idle(&self) -> u64 {
        self.ff.as_ref().map_or(0, |f| f.idle)
    }

    fn ff_snap(&self, t: u64) -> Snap {
        let n = self.apps.len();
        Snap {
            t,
            ctr: self.ctr.clone(),
            krun: self.rt.iter().map(|r| r.krun).collect(),
            live: (0..n)
                .map(|a| self.rt[a].krun.map_or(0, |k| self.kruns[k].live))
                .collect(),
            next_block: (0..n)
                .map(|a| self.rt[a].krun.map_or(0, |k| self.kruns[k].next_block))
                .collect(),
            idle: self.sms.iter().map(|s| s.idle).sum(),
        }
    }

    /// The end of a measurement window: a snapshot, and a jump when the span is steady.
    pub(super) fn ff_window(&mut self, t: u64) -> Result<()> {
        let snap = self.ff_snap(t);
        let f = self.ff.as_ref().expect("snapshots only with fast-forward");
        let reset = f.dirty
            || f.hist
                .last()
                .is_some_and(|s| s.krun != snap.krun || s.live != snap.live);
        // Aged mode: the base is taken once every running launch's first wave has
        // turned over.
        let turned = || {
            (0..self.apps.len()).all(|a| {
                self.rt[a]
                    .krun
                    .is_none_or(|k| self.kruns[k].next_block >= 2 * self.kruns[k].live)
            })
        };
        let base = (f.cfg.age && (reset || f.base.is_none()) && turned()).then(|| {
            self.resident_ctas()
                .map(|c| (c.krun, c.start))
                .collect::<Vec<_>>()
        });
        let prog = f.cfg.age.then(|| self.ff_progress(t));
        // Progress snapshots serve co-run jumps to a window's end only.
        let traced = self.apps.len() > 1 && matches!(self.cfg.mode, RunMode::Window(_));
        let f = self.ff.as_mut().expect("snapshots only with fast-forward");
        f.dirty = false;
        if reset {
            f.restart();
            f.base = None;
        }
        if let Some(b) = base {
            f.base = Some((t, b));
        }
        let w = f.cfg.window.max(1);
        if traced {
            let mut insts = match f.trace.len() {
                TRACE.. => f.trace.pop_front().map(|x| x.1).unwrap_or_default(),
                _ => Vec::new(),
            };
            insts.clear();
            insts.extend(snap.ctr.iter().map(|c| c.warp_insts));
            f.trace.push_back((t + self.off, insts));
        }
        f.hist.push(snap, w, f.cfg.waves, &mut f.prog);
        f.prog.extend(prog.into_iter().flatten());
        f.next = t + w;
        if self.ff.as_ref().is_some_and(|f| f.last.is_some()) {
            let rates = self.ff_eligible(t).and_then(|running| {
                let span = self.ff_span(&running)?;
                running
                    .iter()
                    .map(|&a| self.ff_rate(a, span).map(|(i, c)| (a, i, c)))
                    .collect::<Option<Vec<_>>>()
            });
            if let Some(rates) = rates {
                self.ff_correct(t, &rates);
            }
        }
        if let Some(plan) = self.ff_plan(t)? {
            self.ff_jump(t, &plan);
        }
        Ok(())
    }

    /// Whether nothing forbids a jump now, and the running applications.
    fn ff_eligible(&self, t: u64) -> Option<Vec<usize>> {
        let f = self.ff.as_ref()?;
        if self.cfg.placement.time_slicing
            || self.context.is_some()
            || f.samples_pending > 0
            || !self.halts.is_empty()
            || self.paused.iter().any(|&p| p > t)
        {
            return None;
        }
        let mut running = Vec::new();
        for a in 0..self.apps.len() {
            if let Some(k) = self.rt[a].krun {
                let kr = &self.kruns[k];
                if self.apps[a].persistent.is_some() || !kr.saved.is_empty() || kr.live == 0 {
                    return None;
                }
                running.push(a);
            }
        }
        (!running.is_empty()).then_some(running)
    }

    /// Whether a span may start at snapshot `s` for application `a`: the launch's first
    /// wave has turned over (no cold start in it), and in aged mode so has the first wave
    /// after its last jump.
    fn ff_settled(&self, a: usize, s: usize, l: usize) -> bool {
        let Some(f) = self.ff.as_ref() else {
            return false;
        };
        let (h, wave) = (&f.hist, f.hist[l].live[a]);
        let next = h[s].next_block[a];
        next as u64 >= 2 * wave as u64
            && match h[s].krun[a].and_then(|k| f.jumped_in(a, k)) {
                Some(j) if f.cfg.age => next >= j.settle,
                _ => true,
            }
    }

    /// A steady span `(s, m, l)` of snapshot indices (start, middle, last), if any.
    fn ff_span(&self, running: &[usize]) -> Option<(usize, usize, usize)> {
        let f = self.ff.as_ref()?;
        let h = &f.hist;
        let l = h.len().checked_sub(1)?;
        let k = f.cfg.windows.max(2) as usize;
        let done = |a: usize, i: usize, j: usize| h[j].ctr[a].ctas_done - h[i].ctr[a].ctas_done;
        for s in (0..l).rev() {
            // (The history restarts whenever resident counts change.)
            if l - s < k {
                continue;
            }
            let m = s + (l - s) / 2;
            // The span starts once the launch's first wave has turned over (no cold
            // start in it), and each half sees a wave of completions.
            let halves = f.cfg.waves.max(1) as u64;
            if running.iter().all(|&a| {
                let wave = h[l].live[a] as u64;
                self.ff_settled(a, s, l)
                    && done(a, s, m) >= halves * wave
                    && done(a, m, l) >= halves * wave
            }) {
                let tol = f.cfg.tolerance;
                let ok = running.iter().all(|&a| {
                    let d1 = delta(&h[s].ctr[a], &h[m].ctr[a]);
                    let d2 = delta(&h[m].ctr[a], &h[l].ctr[a]);
                    steady(&d1, h[m].t - h[s].t, &d2, h[l].t - h[m].t, tol)
                });
                return ok.then_some((s, m, l));
            }
        }
        None
    }

    /// Application `a`'s rate over a steady span, as (warp instructions, cycles): between
    /// two CTA completions a whole number of waves apart, the last one and the earliest
    /// within the span (the same phase of the wave cycle, so a kernel whose CTAs run in
    /// lockstep waves is measured without bias).
    fn ff_rate(&self, a: usize, span: (usize, usize, usize)) -> Option<(u64, u64)> {
        let f = self.ff.as_ref()?;
        let (s, _, l) = span;
        let h = &f.hist;
        let wave = self.kruns[self.rt[a].krun?].live;
        let d = delta(&h[s].ctr[a], &h[l].ctr[a]);
        if d.warp_insts == 0 || wave == 0 {
            return None;
        }
        let done = f.done.get(a).map_or(&[][..], |v| &v[..]);
        let first = done.partition_point(|&(t, _, _)| t < h[s].t);
        let &(t1, i1, _) = done.last()?;
        let waves_seen = (done.len() - 1).saturating_sub(first) / wave as usize;
        if waves_seen == 0 {
            return None;
        }
        let (t0, i0, _) = done[done.len() - 1 - waves_seen * wave as usize];
        let (insts, cycles) = (i1 - i0, t1 - t0);
        (insts > 0 && cycles > 0).then_some((insts, cycles))
    }

    /// Applies a jump of `j` cycles at engine time `t`.
    fn ff_jump(&mut self, t: u64, plan: &Plan) {
        let Plan {
            parts,
            waves,
            j,
            why,
            span: (s, l),
            age,
            pre,
        } = plan;
        let (j, why) = (*j, *why);
        // Ageing first (it reads the resident CTAs and the span's durations): each
        // application's aged prefixes add up to about `m` blocks' work, which the jump
        // then leaves undispatched so that the skipped work stays what it measured.
        let nth = self.ff.as_ref().map_or(0, |f| f.stats.jumps.len() as u64);
        let (ts, tl) = {
            let f = self.ff.as_ref().expect("fast-forward");
            (f.hist[*s].t, f.hist[*l].t)
        };
        // Cycles between the jump's end and the next event the run stops or hooks at.
        let passive = self.ctl.epoch_passive();
        let rest = self
            .heap
            .earliest(|e| blocking(e, passive))
            .map_or(u64::MAX, |at| at.saturating_sub(t + j));
        let rest = match &self.cfg.mode {
            RunMode::Budget(_) if why == "budget" => 0,
            _ => rest,
        };
        let mut ages = Vec::new();
        for ((p, &n), &g) in parts.iter().zip(waves).zip(age) {
            let k = self.rt[p.app].krun.expect("running");
            let on = self.ff.as_ref().is_some_and(|f| f.cfg.age);
            let (walk, drift) = if on && g > 0 {
                self.ff_age(p.app, k, g, (ts, tl), nth, (t, rest))
            } else {
                (Vec::new(), None)
            };
            let whole = n as u32 * p.wave;
            let frac: f64 = walk.iter().map(|w| w.phase).sum();
            let back = (frac.round() as u32).min(whole.saturating_sub(1));
            let kr = &self.kruns[k];
            let held: u64 = (0..back)
                .map(|i| self.block_len(k, kr.next_block + whole - back + i))
                .sum();
            ages.push((k, walk, back, held, drift));
        }
        let f = self.ff.as_mut().expect("fast-forward");
        if f.ratios.len() < self.apps.len() {
            f.ratios.resize(self.apps.len(), None);
        }
        if f.prefix.len() < self.sms.len() {
            f.prefix.resize(self.sms.len(), Vec::new());
        }
        if f.ahead.len() < self.apps.len() {
            f.ahead.resize(self.apps.len(), 0);
            f.jumped.resize(self.apps.len(), None);
        }
        for ((p, &n), &g) in parts.iter().zip(waves).zip(age) {
            let a = p.app;
            f.ahead[a] = if *pre {
                g.saturating_sub(n)
            } else {
                f.ahead[a].saturating_sub(n)
            };
        }
        let mut ctas = vec![0u32; self.apps.len()];
        let mut insts = vec![0u64; self.apps.len()];
        let mut aged = vec![0u32; self.apps.len()];
        let mut held_back = vec![0u32; self.apps.len()];
        let (h0, hl) = (&f.hist[*s], &f.hist[*l]);
        let dt = hl.t - h0.t;
        let mut last = Last {
            j,
            dt,
            idle: hl.idle - h0.idle,
            apps: Vec::new(),
        };
        for ((p, &n), (k, walk, back, held, drift)) in parts.iter().zip(waves).zip(ages) {
            let a = p.app;
            let m = n as u32 * p.wave - back;
            let i = p.cum[n] - held;
            let d = delta(&h0.ctr[a], &hl.ctr[a]);
            for q in f.prefix.iter_mut() {
                q.retain(|&(x, _, _)| x as usize != k);
            }
            aged[a] = walk.len() as u32;
            held_back[a] = back;
            for w in walk {
                if w.ppm > 0 {
                    f.prefix[w.sm].push((k as u32, w.slot as u32, w.ppm));
                }
            }
            f.ratios[a] = Some(d.clone());
            last.apps.push(LastApp {
                app: a,
                krun: k,
                skipped: p.cum[n],
                insts: p.insts,
                cycles: p.cycles,
                stalls: d.stalls,
            });
            let by_t = |x: u64| mul_div(x, j, dt);
            let c = &mut self.ctr[a];
            credit_insts(c, &d, i);
            c.ctas_done += m as u64;
            c.stalls.short_raw += by_t(d.stalls.short_raw);
            c.stalls.long_memory += by_t(d.stalls.long_memory);
            c.stalls.unit_busy += by_t(d.stalls.unit_busy);
            c.stalls.barrier += by_t(d.stalls.barrier);
            c.stalls.idle += by_t(d.stalls.idle);
            self.kruns[k].next_block += m;
            // The drift measured at the launch's first aged jump is kept for its later ones.
            let kept = f.jumped_in(a, k).and_then(|j| j.drift);
            f.jumped[a] = Some(Jumped {
                krun: k,
                settle: self.kruns[k].next_block + 2 * self.kruns[k].live,
                drift: drift.or(kept),
            });
            ctas[a] = m;
            insts[a] = i;
        }
        f.idle += mul_div(hl.idle - h0.idle, j, dt);
        // A jump that ends where the stream changes, at the tail or at a budget has no
        // steady span of the same work after it to correct it by.
        f.last = (f.cfg.age && matches!(why, "event" | "align" | "age")).then_some(last);
        f.stats.cycles += j;
        f.stats.jumps.push(FfJump {
            at: t + self.off,
            cycles: j,
            ctas,
            warp_insts: insts,
            aged,
            held_back,
            ended_by: why.to_string(),
            passes: 0,
            corun: false,
            spread_bp: Vec::new(),
        });
        f.restart();
        // Occupancy samples in the skipped time see the resident warps of now (steady).
        for at in self.ff_ticks(t, j) {
            self.sample(at);
        }
        self.ff_shift(t, j);
    }

    /// The occupancy samples due in a jump of `j` cycles at engine time `t` (engine
    /// times, for the caller to take); the next one is then due where they left off.
    fn ff_ticks(&mut self, t: u64, j: u64) -> Vec<u64> {
        let every = self.cfg.sample_every.max(1);
        let mut due = Vec::new();
        while self.next_tick < t + j {
            due.push(self.next_tick);
            self.next_tick += every;
        }
        due
    }

    /// Records a jump of `j` cycles at engine time `t` in the offset: the window's end
    /// and the absolute-time events come `j` cycles sooner in engine time (all lie beyond
    /// the jump and its margin).
    fn ff_shift(&mut self, t: u64, j: u64) {
        if let Some(f) = self.ff.as_mut() {
            f.trace.clear();
        }
        self.off += j;
        self.end -= j;
        self.ff_retime(t, |at| at - j);
    }

    /// Moves everything anchored in absolute time, the blocking events and the next
    /// occupancy sample, to the engine time `f` gives it (never before `t`).
    fn ff_retime(&mut self, t: u64, f: impl Fn(u64) -> u64) {
        if self.next_tick != INF {
            self.next_tick = f(self.next_tick).max(t);
        }
        let passive = self.ctl.epoch_passive();
        self.heap
            .retime(t, |at, e| if blocking(&e, passive) { f(at) } else { at });
    }
}

/// Credits `n` warp instructions retired without simulation, and the counters that go
/// with instructions at the ratios of the span deltas `d`.
fn credit_insts(c: &mut Counters, d: &Counters, n: u64) {
    let by_i = |x: u64| mul_div(x, n, d.warp_insts);
    c.warp_insts += n;
    c.thread_insts += by_i(d.thread_insts);
    for u in 0..9 {
        c.unit_busy[u] += by_i(d.unit_busy[u]);
    }
    c.l1_accesses += by_i(d.l1_accesses);
    c.l1_hits += by_i(d.l1_hits);
    c.l2_accesses += by_i(d.l2_accesses);
    c.l2_hits += by_i(d.l2_hits);
    c.noc_bytes += by_i(d.noc_bytes);
    c.dram_reads += by_i(d.dram_reads);
    c.dram_writes += by_i(d.dram_writes);
    c.dram_bytes += by_i(d.dram_bytes);
    c.row_hits += by_i(d.row_hits);
    c.sp_flops += by_i(d.sp_flops);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_taken_only_by_its_own_slot() {
        // A block started near its end frees its slot at once; the slot's next block
        // must not take a neighbour's prefix (kept per SM, they did: slate/tr x40 stayed
        // in step after a fully randomising walk, +4.5%).
        let mut f = FfState::new(FastForward::default());
        f.prefix = vec![vec![(7, 0, 980_000), (7, 1, 150_000), (7, 2, 500_000)]];
        assert_eq!(f.take_prefix(0, 0, 7), 980_000);
        assert_eq!(f.take_prefix(0, 0, 7), 0, "slot 0 had one prefix");
        assert_eq!(
            f.take_prefix(0, 2, 3),
            0,
            "another launch's block takes none"
        );
        assert_eq!(f.take_prefix(0, 2, 7), 500_000);
        assert_eq!(f.take_prefix(0, 1, 7), 150_000);
        assert_eq!(f.take_prefix(1, 1, 7), 0, "an SM without prefixes");
    }
}

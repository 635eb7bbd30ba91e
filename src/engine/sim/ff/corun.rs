//! Co-run jumps: several applications resident at once, each relaunching its kernels
//! (a fixed window, a budget run, a controller's epochs) or one of them in a launch longer
//! than the others' passes, skip the same time together.
//!
//! A co-run's joint state never repeats exactly (fermi-ws hot's passes take 424 K cycles
//! beside lbm's 306 K: their phases drift), so the jump does not look for a repeating
//! joint pattern. Instead, once every active application is measured in the current
//! *regime* (the same applications active, no controller action since), the jump is made
//! at the end of a pass of one of them (`a`, whose state is then the cleanest: none of its
//! CTAs resident). Each active application is one of three parts:
//! - *relaunching*: two passes over its kernels that agree (pass time and instruction rate
//!   within `tolerance`, the other counters of the wave jumps' steady-state test within
//!   three times it: the co-runner's phase moves the memory system's share between
//!   passes), or, when they do not, its last two pairs of passes (a pass time that
//!   alternates with the co-runners' phase); it is credited at the mean of all its kept
//!   passes in the regime, an even number of them after a pairs test (more passes
//!   see more of the co-runners' phases), or, when `a`'s kept passes span longer and do
//!   not start at its first launch, at its rate over `a`'s span (the same cycles for
//!   every part: `ff_co_common`);
//! - *in one long launch* (not `a`): measured between `a`'s pass marks, over the fewest of
//!   `a`'s passes whose halves each saw `waves` waves of its CTAs complete, the halves
//!   alike as a relaunching part's passes must be; it retires whole blocks of its launch
//!   (never its last wave, nor past a change in the blocks' lengths or unit mix). Its
//!   pass marks survive such jumps (the pass they end holds the jump's time and blocks),
//!   so once two of its launches agree it is a relaunching part, and a jump may cross
//!   its launches (a plan too short for its pass takes it as a long launch again);
//! - *waiting*: a launch never given a block, and no work across `a`'s last two passes
//!   (left-over dispatch gave it no slot): credited nothing.
//!
//! No part may be measured from its first launch (the run's cold start) when a
//! non-passive controller's epoch falls inside the jump: the phase the jump leaves each
//! application in is what that epoch acts on.
//!
//! The jump's length `J` is whole passes of `a` (its state after the jump is a pass
//! boundary: a part pass credited beside it would run again in detail), within the room
//! before the next anchored event but a controller's epochs (minus two windows), every
//! budget (minus a pass of work), `corun_stride` times the longest measured span, the cap on
//! kernel records and a long launch's skippable blocks; at least the longest pass. When
//! the next anchored event is a fixed window's end, nothing else bounds the jump and the
//! part pass of `a` it leaves is at most half the tolerance of the window, the jump runs
//! to the end exactly and the run is over (`ended_by: "end"`): nothing runs after it, so
//! that part pass is credited what `a`'s last pass did in as many cycles (snapshots of
//! every application's progress are kept for it), and is not run again.
//!
//! A relaunching part is credited `J / P` of the work of its measured passes (`P`
//! cycles): the whole passes in `J` as kernel records (copies of its last pass's, later
//! by whole passes), the remainder as counters only. A long launch's part is credited the
//! whole blocks whose time at its measured rate is nearest `J`. Every application's state
//! is left where it is: resident CTAs, caches, DRAM queues and pending events stay as they
//! are, so the applications resume in the joint phase they had, not the one `J` later —
//! the phases drift in detail anyway, and the measured passes average over them. A
//! relaunching part's launch in flight across the jump has its start and instruction base
//! moved by the jump, so its record holds only what it ran in detail (a long launch's
//! record spans the jump, as a wave jump's does).
//!
//! A non-passive controller's epochs inside `J` are called in order with the view the
//! measured rates give at their time; the first that acts ends the jump, at the last
//! whole pass of the longest-pass co-runner before it, and its actions wait for its time
//! in detail (the phase that application has there is then the detailed run's). Its known
//! limits: docs/fast-forward.md, "Co-run jumps".
//!
//! Where to look, in file order: the parts (`CoPart`, `CoKind`) and the regime
//! (`ff_regime`); measuring each part is in [`measure`] (`ff_co_pass` relaunching,
//! `ff_co_common` over `a`'s span, `ff_co_launch` and `ff_co_blocks` a long launch); then
//! here the plan and its room (`ff_corun_plan`, `ff_corun_plan_as`,
//! `ff_cold_before_epoch`); controller epochs inside
//! the jump (`ff_corun_epochs`, `ff_defer_epoch`, `ff_co_view`); making the jump
//! (`ff_corun_jump` and its crediting helpers); then the free functions (`forget_passes`,
//! `credit_time`, `co_steady` and its constants).

use super::pass::{copy_pass, PassMark, CO_MARKS, MAX_RECORDS};
use super::*;
use crate::engine::config::{Action, Hook, View};

mod measure;

/// One application's part of a co-run jump.
pub(super) struct CoPart {
    app: usize,
    /// Counters over its measured span, and the span's cycles.
    d: Counters,
    span: u64,
    kind: CoKind,
    /// Its measured span starts at its first launch (the run's cold start).
    cold: bool,
    /// Warp instructions and cycles of the two halves of its measured span (at the mark
    /// nearest the middle), for the jump's `spread_bp`.
    halves: [(u64, u64); 2],
}

/// What a co-run part skips.
enum CoKind {
    /// Whole passes over its kernels (it relaunches), its last two alike: the last
    /// pass's kernel records (indices into the application's records), the absolute
    /// time that pass started, the mean length of its kept passes, and the idle
    /// scheduler cycles (`Engine::idle_cycles`) at the measured span's two ends.
    Pass {
        records: (usize, usize),
        last_start: u64,
        len: u64,
        idle: (u64, u64),
    },
    /// Whole blocks of launch `k`, which ran across the whole measured span (one long
    /// launch beside co-runners that relaunch): `from`, its next block at the span's
    /// start; `cum[i]`, the warp instructions of its next `i` blocks a jump may skip (the
    /// last wave and a change of phase excluded; empty until the room is known).
    Launch {
        k: usize,
        from: u32,
        wave: u32,
        cum: Vec<u64>,
    },
    /// Waiting: a launch that has never had a block dispatched, and an application that
    /// did no work across the measured span (left-over dispatch gave it no slot): it is
    /// credited nothing. (One that got a few blocks now and then is no waiting part:
    /// fermi-ws left-over blk + nn + dxt + mvp, dxt got 12 752 warp instructions in 5 M
    /// cycles in bursts more than two of blk's passes apart, and a jump that credited it
    /// nothing left it at 3 188.)
    Waiting,
}

/// What [`Engine::ff_corun_plan_as`] found.
enum Planned {
    Jump(CoPlan),
    /// No jump, whichever part each co-runner is taken as.
    None,
    /// Every part measured, but the plan refused (a part measured from the cold start
    /// before an epoch, or no room for the longest pass) with a co-runner besides `a`
    /// taken as relaunching: taken as a long launch's part instead, it may do.
    Refused,
    /// A jump that would stop short of the window's end, put off for a co-runner's pass
    /// that ends soon and reaches it (`ff_end_sooner`): what to wait for, when it is new.
    Wait(Option<Waited>),
}

/// A co-runner's pass a jump waits for (`ff_end_sooner`): in `regime`, the application
/// `app`, whose pass is expected to end before absolute time `until` (half a pass late).
#[derive(Clone, Copy)]
pub(super) struct Waited {
    regime: (u64, u64),
    app: usize,
    until: u64,
}

/// [`Planned::Refused`] if a co-runner besides `a` is among `parts` as relaunching (the
/// only kind another choice could change), else [`Planned::None`].
fn refused(parts: &[CoPart], a: usize) -> Planned {
    if parts.iter().any(|p| p.app != a && p.pass().is_some()) {
        Planned::Refused
    } else {
        Planned::None
    }
}

/// What ends a co-run jump that reaches the window's end.
const END: &str = "end";

/// Passes a relaunching co-runner is measured over.
const PASSES: u64 = CO_MARKS as u64 - 1;

impl CoPart {
    /// Cycles of one pass (the mean of the measured ones), for a part that relaunches.
    fn pass(&self) -> Option<u64> {
        match self.kind {
            CoKind::Pass { len, .. } => Some(len.max(1)),
            _ => None,
        }
    }

    /// How far its rates over the two halves of its measured span differ, in basis points
    /// of their mean (0 when a half is empty or it did no work).
    fn spread_bp(&self) -> u32 {
        let [(i1, c1), (i2, c2)] = self.halves;
        if c1 == 0 || c2 == 0 {
            return 0;
        }
        let (r1, r2) = (i1 as f64 / c1 as f64, i2 as f64 / c2 as f64);
        if r1 + r2 == 0.0 {
            return 0;
        }
        (20_000.0 * (r1 - r2).abs() / (r1 + r2)).round() as u32
    }

    /// Cycles the first `n` skippable blocks of a launch part take at its measured rate.
    fn blocks_time(&self, cum: &[u64], n: usize) -> u64 {
        mul_div(cum[n], self.span, self.d.warp_insts)
    }
}

/// A co-run jump: its length, each application's part and what limited it.
pub(super) struct CoPlan {
    j: u64,
    parts: Vec<CoPart>,
    why: &'static str,
}

impl CoPlan {
    /// Each of the `apps` applications' [`CoPart::spread_bp`] (0 for one with no part).
    fn spread_bp(&self, apps: usize) -> Vec<u32> {
        let mut v = vec![0; apps];
        for p in &self.parts {
            v[p.app] = p.spread_bp();
        }
        v
    }
}

impl Engine<'_, '_> {
    /// The current co-run regime: controller actions so far, and which applications are
    /// active (arrived by engine time `t`, not done).
    pub(super) fn ff_regime(&self, t: u64) -> (u64, u64) {
        let acts = self.ff.as_ref().map_or(0, |f| f.acts);
        let active = (0..self.apps.len().min(64))
            .filter(|&b| self.apps[b].arrival <= t + self.off && !self.rt[b].done)
            .fold(0u64, |m, b| m | 1 << b);
        (acts, active)
    }
}

impl Engine<'_, '_> {
    /// The co-run jump to make at engine time `t`, where application `a` just ended a
    /// pass, if every active application is steady in this regime and there is room.
    /// A co-runner in a long launch whose own passes also agree (their marks span the
    /// jumps that retired its blocks) is a relaunching part, and the jump is then at
    /// least its pass; when there is no room for that, it is taken as a long launch's
    /// part instead (gpgpusim-60sm SMRA hs beside spmv, 1.6 M-cycle launches: at 4.01 M
    /// of a 5 M-cycle window, a jump to the end rather than none).
    pub(super) fn ff_corun_plan(&mut self, a: usize, t: u64) -> Result<Option<CoPlan>> {
        let plan = match self.ff_corun_plan_as(a, t, false)? {
            Planned::Refused => self.ff_corun_plan_as(a, t, true)?,
            p => p,
        };
        Ok(match plan {
            Planned::Jump(p) => Some(p),
            Planned::Wait(w) => {
                if let (Some(f), Some(w)) = (self.ff.as_mut(), w) {
                    f.waited = Some(w);
                }
                None
            }
            _ => None,
        })
    }

    /// [`Self::ff_corun_plan`], each co-runner but `a` taken as a long launch's part
    /// before a relaunching one when `launch_first`.
    fn ff_corun_plan_as(&self, a: usize, t: u64, launch_first: bool) -> Result<Planned> {
        let Some(f) = self.ff.as_ref() else {
            return Ok(Planned::None);
        };
        // (While pages migrate on demand after a channel-set change, every access may
        // move one: the rates change until they are all moved, and a jump would freeze the
        // migration half done.)
        if matches!(self.cfg.mode, RunMode::Completion)
            || self.apps.len() > 64
            || self.mem.pages_moving()
            || self.ff_passes_forbidden(t)
        {
            return Ok(Planned::None);
        }
        let regime = self.ff_regime(t);
        let active: Vec<usize> = (0..self.apps.len())
            .filter(|&b| regime.1 >> b & 1 == 1)
            .collect();
        if active.len() < 2 || !active.contains(&a) {
            return Ok(Planned::None);
        }
        let tol = f.cfg.tolerance;
        let mut parts = Vec::with_capacity(active.len());
        for &b in &active {
            // Two passes of its own in this regime, alike; or (not `a`, which just
            // relaunched) one long launch across `a`'s measured passes.
            let launch = || {
                (b != a)
                    .then(|| self.ff_co_launch(a, b, t, regime))
                    .flatten()
            };
            let part = if launch_first && b != a {
                launch().or_else(|| self.ff_co_pass(b, regime, tol))
            } else {
                self.ff_co_pass(b, regime, tol).or_else(launch)
            };
            match part {
                Some(p) => parts.push(p),
                None => return Ok(Planned::None),
            }
        }
        self.ff_co_common(a, t, &mut parts);
        // Room: before the next anchored event (two windows kept), within `stride`
        // measured spans, within every budget (a pass of work kept).
        // (A controller's epochs inside the jump are called with the view the measured
        // rates give; the first that acts ends the jump: `ff_corun_epochs`.)
        let margin = 2 * f.cfg.window.max(1);
        let Some(next) = self.heap.earliest(|e| blocking(e, true)) else {
            return Ok(Planned::None);
        };
        // The window's end: nothing runs after it, so the jump may reach it exactly, `a`'s
        // part pass there credited as much as its last pass did in as many cycles, and not
        // run again. Only a short part: its phase against the co-runners' is that of `a`'s
        // last pass, not the window's end's (fermi-ws left-over mm + knn at 5 M cycles: a
        // part of 123 K cycles, 2.5% of the window, credited mm +3.0% where the detailed
        // tail from a pass boundary left +1.0%).
        let pass_a = parts.iter().find(|p| p.app == a).and_then(CoPart::pass);
        let to_end = next == self.end
            && match (self.ff_end_part(), pass_a) {
                (Some(part_max), Some(pa)) => next.saturating_sub(t) % pa <= part_max,
                _ => false,
            };
        let (mut room, mut why) = if to_end {
            (next.saturating_sub(t), END)
        } else {
            (next.saturating_sub(t).saturating_sub(margin), "event")
        };
        if self.ff_cold_before_epoch(&parts, t, room) {
            return Ok(refused(&parts, a));
        }
        let longest = parts.iter().map(|p| p.span).max().unwrap_or(0);
        let stride = f.cfg.corun_stride as u64;
        if stride > 0 && longest * stride <= room {
            (room, why) = (longest * stride, "stride");
        }
        for p in &parts {
            if let RunMode::Budget(b) = &self.cfg.mode {
                let per_pass = p.pass().map_or(p.d.warp_insts / PASSES, |q| {
                    mul_div(p.d.warp_insts, q, p.span)
                });
                let left = b[p.app]
                    .saturating_sub(self.ctr[p.app].warp_insts)
                    .saturating_sub(per_pass);
                let by_budget = mul_div(left, p.span, p.d.warp_insts);
                if by_budget < room {
                    (room, why) = (by_budget, "budget");
                }
            }
            // Kernel records: at most MAX_RECORDS per application.
            if let CoKind::Pass { records, .. } = &p.kind {
                let per_pass = (records.1 - records.0).max(1) as u64;
                let have = self.rt[p.app].kernels.len() as u64;
                let by_records =
                    MAX_RECORDS.saturating_sub(have) / per_pass * p.pass().unwrap_or(1);
                if by_records < room {
                    (room, why) = (by_records, "records");
                }
            }
        }
        // A long launch's part: the blocks it may skip bound the jump.
        let mut done = Vec::with_capacity(parts.len());
        for p in parts {
            let (p, short) = self.ff_co_blocks(p, room)?;
            if let (CoKind::Launch { cum, .. }, Some(w)) = (&p.kind, short) {
                let by_blocks = p.blocks_time(cum, cum.len() - 1);
                if by_blocks < room {
                    (room, why) = (by_blocks, w);
                }
            }
            done.push(p);
        }
        let parts = done;
        // Whole passes of `a`, whose pass ends here: its state after the jump is a pass
        // boundary, so a part pass credited beside it would be run again in detail (the
        // window's last part pass is often spent waiting for SMs under left-over
        // dispatch: fermi-ws hot + lbm + mm + knn credited hot 7.4 passes where 7 fit,
        // +2.9%).
        if let (Some(pa), false) = (pass_a, why == END) {
            room = room / pa * pa;
        }
        // At least the longest pass (and the longest span a launch part was measured
        // over): a shorter jump saves less than it costs in accuracy.
        let slowest = parts
            .iter()
            .map(|p| p.pass().unwrap_or(p.span / PASSES))
            .max()
            .unwrap_or(0);
        if room < slowest.max(1) {
            return Ok(refused(&parts, a));
        }
        if why != END && next == self.end {
            if let Some(w) = self.ff_wait(a, t, &parts, next.saturating_sub(t + room), regime) {
                return Ok(Planned::Wait(w));
            }
        }
        Ok(Planned::Jump(CoPlan {
            j: room,
            parts,
            why,
        }))
    }

    /// The longest part pass a co-run jump to a fixed window's end may credit (half the
    /// tolerance of the window), when the run is such a window (not cut by the cycle cap).
    fn ff_end_part(&self) -> Option<u64> {
        let f = self.ff.as_ref()?;
        match self.cfg.mode {
            RunMode::Window(w) if w <= self.cfg.max_cycles => {
                Some((f.cfg.tolerance / 2.0 * w as f64) as u64)
            }
            _ => None,
        }
    }

    /// Whether a jump at engine time `t` made for `a`, which would leave `tail` cycles
    /// before a fixed window's end to run in detail, waits for a co-runner's pass that
    /// reaches the end (once a regime; meanwhile the others' passes make no jump either):
    /// `Some(None)` while it waits, `Some(Some(..))` when it starts to.
    fn ff_wait(
        &self,
        a: usize,
        t: u64,
        parts: &[CoPart],
        tail: u64,
        regime: (u64, u64),
    ) -> Option<Option<Waited>> {
        match self.ff.as_ref()?.waited {
            Some(w) if w.regime == regime => (a != w.app && t + self.off < w.until).then_some(None),
            _ => self
                .ff_end_sooner(a, t, parts, tail)
                .map(|(app, until)| Some(Waited { regime, app, until })),
        }
    }

    /// The co-runner whose pass a jump at engine time `t` made for `a`, which would leave
    /// `tail` cycles before a fixed window's end to run in detail (more than the part pass
    /// a jump to the end may credit), should wait for, if any, and the absolute time by
    /// which that pass should have ended (half a pass late): the first whose next pass,
    /// at its measured length, ends within `tail` cycles and leaves the end at most a
    /// quarter of the tolerance of the window (and at least the tolerance of its pass)
    /// past a whole number of its passes, so that the jump made there runs to the end.
    /// (fermi-ws even mm + knn + dxt + mvp, 25 M cycles: the jump at mm's second pass,
    /// 2.13 M, stopped 0.52 M short of the end, 9.0x; knn's pass ends 0.14 M later, 28 K
    /// cycles past a whole number of its passes before the end.)
    fn ff_end_sooner(&self, a: usize, t: u64, parts: &[CoPart], tail: u64) -> Option<(usize, u64)> {
        let f = self.ff.as_ref()?;
        let part_max = self.ff_end_part()?;
        if tail <= part_max {
            return None;
        }
        parts
            .iter()
            .filter(|p| p.app != a)
            .filter_map(|p| Some((p.app, p.pass()?, f.marks.get(p.app)?.last()?.t)))
            .filter_map(|(app, pc, last)| {
                // (Marks are in absolute time; `t` and the end in engine time.)
                // (Not within the tolerance of its pass after a whole number: a pass a
                // little longer than measured would leave the end just before one. fermi-ws
                // even mm + knn + dxt + mvp, 10 M cycles: dxt's pass predicted 1 K cycles
                // past its whole passes ended 3 K before them.)
                let tc = (last + pc).checked_sub(self.off)?;
                let rem = self.end.saturating_sub(tc) % pc;
                let jitter = (f.cfg.tolerance * pc as f64) as u64;
                (tc > t && tc - t < tail && rem >= jitter && rem <= part_max / 2).then_some((
                    tc,
                    app,
                    last + pc + pc / 2,
                ))
            })
            .min()
            .map(|(_, app, until)| (app, until))
    }

    /// Whether a part in `parts` is measured from the run's cold start and a
    /// non-passive controller's epoch falls within `room` cycles of engine time `t`: the
    /// jump then waits for warm passes. The epoch may act on the phase the jump leaves
    /// each application in, and a pass from the cold start is off a warm one. (ugpu PVC + DXTC, 25 M cycles, 5 M epochs: seven of
    /// PVC's passes credited at 500 K, its first two, where in detail they took 505 K;
    /// at the reallocation its launch was 99% done instead of 92%, and PVC came out
    /// +6.0%; from warm passes, +2.8%.)
    fn ff_cold_before_epoch(&self, parts: &[CoPart], t: u64, room: u64) -> bool {
        parts.iter().any(|p| p.cold)
            && !self.ctl.epoch_passive()
            && self
                .heap
                .earliest(|x| *x == Ev::Epoch)
                .is_some_and(|e| e < t + room)
    }

    /// The controller's epochs that fall in a co-run jump of `plan.j` cycles at engine
    /// time `t` (none for a passive controller's, which the jump crosses and leaves in
    /// place): each is called with the view the measured rates give at its time. Returns
    /// the jump's length (up to the first epoch that acts), that epoch's actions, and
    /// the engine time (before the jump) the next epoch is due, if one was crossed.
    fn ff_corun_epochs(&mut self, t: u64, plan: &CoPlan) -> (u64, Vec<Action>, Option<u64>) {
        let mut acts = Vec::new();
        if self.ctl.epoch_passive() {
            return (plan.j, acts, None);
        }
        let Some(mut e) = self.heap.earliest(|x| *x == Ev::Epoch) else {
            return (plan.j, acts, None);
        };
        let mut crossed = false;
        while e < t + plan.j {
            crossed = true;
            // As the main loop does: the next epoch is asked for before the hook runs.
            let next = self.ctl.epoch().map_or(INF, |p| e + p.max(1));
            let view = self.ff_co_view(plan, t, e - t);
            self.ctl.on_hook(Hook::Epoch, &view, &mut acts);
            if !acts.is_empty() {
                return (e - t, acts, Some(next));
            }
            e = next;
        }
        (plan.j, acts, crossed.then_some(e))
    }

    /// The controller was called for an epoch inside a co-run jump and returned `acts`:
    /// its event is moved to engine time `at`, where it applies them without calling the
    /// controller again (`Ev::Epoch`, then `run_hooks`).
    fn ff_defer_epoch(&mut self, t: u64, at: u64, acts: Vec<Action>) {
        self.heap
            .retime(t, |x_at, x| if x == Ev::Epoch { at } else { x_at });
        self.ff.as_mut().expect("fast-forward").deferred = acts;
    }

    /// The controller view `dt` cycles into a co-run jump: every application's counters
    /// (and per-SM instruction counts) credited at its measured rate.
    fn ff_co_view(&self, plan: &CoPlan, t: u64, dt: u64) -> View {
        let mut v = self.view();
        v.now = t + self.off + dt;
        for p in &plan.parts {
            let av = &mut v.apps[p.app];
            let n = mul_div(p.d.warp_insts, dt, p.span);
            credit_insts(&mut av.counters, &p.d, n);
            credit_time(&mut av.counters, &p.d, dt, p.span);
            av.counters.ctas_done += mul_div(p.d.ctas_done, dt, p.span);
            spread(&mut av.sm_insts, n);
        }
        v
    }

    /// Makes the co-run jump `plan` at engine time `t`, at the end of a pass of `a`.
    pub(super) fn ff_corun_jump(&mut self, a: usize, t: u64, plan: &CoPlan) {
        let (je, acts, next_epoch) = self.ff_corun_epochs(t, plan);
        // An epoch that acts, `je` cycles on: the jump stops at the last whole pass of the
        // application with the longest pass before it, and the epoch's actions wait for
        // its time in detail (`deferred`). That application's launch is then as far along
        // at the epoch as in the detailed run, not frozen where the jump began: a drain
        // handover waits for its resident CTAs, young at a pass's start (ugpu LBM + DXTC
        // at 25 M cycles: LBM kept 40 SMs for 840 K cycles instead of 240 K, +7%).
        let (j, why) = if acts.is_empty() {
            (je, plan.why)
        } else {
            let p = plan
                .parts
                .iter()
                .filter_map(CoPart::pass)
                .max()
                .unwrap_or(1);
            (je / p * p, "epoch")
        };
        if j == 0 {
            // The acting epoch comes within the longest pass: no jump.
            self.ff_defer_epoch(t, t + je, acts);
            return;
        }
        let now = t + self.off;
        let apps = self.apps.len();
        let (mut ctas, mut insts) = (vec![0u32; apps], vec![0u64; apps]);
        let mut passes_a = 0;
        for p in &plan.parts {
            let b = p.app;
            match &p.kind {
                CoKind::Pass {
                    records,
                    last_start,
                    ..
                } => {
                    let pass = p.pass().unwrap_or(1);
                    let whole = j / pass;
                    if b == a {
                        passes_a = whole;
                    }
                    // At the window's end, `a`'s part pass: what its last pass did in
                    // as many cycles (a pass's progress is not even: under left-over
                    // dispatch it may start by waiting for SMs).
                    let part = (b == a && why == END)
                        .then(|| self.ff_pass_prefix(a, j - whole * pass))
                        .flatten();
                    let (n, thread) = match part {
                        Some(r) => {
                            let n = mul_div(p.d.warp_insts, whole * pass, p.span) + r;
                            (n, mul_div(p.d.thread_insts, n, p.d.warp_insts))
                        }
                        None => (
                            mul_div(p.d.warp_insts, j, p.span),
                            mul_div(p.d.thread_insts, j, p.span),
                        ),
                    };
                    credit_insts(&mut self.ctr[b], &p.d, n);
                    credit_time(&mut self.ctr[b], &p.d, j, p.span);
                    let done = mul_div(p.d.ctas_done, j, p.span);
                    self.ctr[b].ctas_done += done;
                    ctas[b] = u32::try_from(done).unwrap_or(u32::MAX);
                    insts[b] = n;
                    self.spread_sm_insts(b, n);
                    // The whole passes in the jump: the last pass's kernel records, from
                    // now on.
                    let r = &mut self.rt[b];
                    copy_pass(&mut r.kernels, *records, whole, now - last_start, pass);
                    let whole32 = u32::try_from(whole).unwrap_or(u32::MAX);
                    r.pass = r.pass.saturating_add(whole32);
                    r.passes = r.passes.saturating_add(whole32);
                    // A launch in flight keeps only what it runs in detail.
                    if let Some(k) = r.krun {
                        let kr = &mut self.kruns[k];
                        kr.arrival += j;
                        kr.start = kr.start.map(|s| s + j);
                        kr.insts0.0 += n;
                        kr.insts0.1 += thread;
                        kr.pass = kr.pass.saturating_add(whole32);
                    }
                }
                CoKind::Launch { k, cum, .. } => {
                    // The whole blocks whose time at the measured rate is nearest `j`
                    // (they are retired as a wave jump retires them: the launch's record
                    // spans the skipped time).
                    let n = (0..cum.len())
                        .min_by_key(|&i| p.blocks_time(cum, i).abs_diff(j))
                        .unwrap_or(0);
                    credit_insts(&mut self.ctr[b], &p.d, cum[n]);
                    credit_time(&mut self.ctr[b], &p.d, j, p.span);
                    let n32 = n as u32;
                    self.ctr[b].ctas_done += u64::from(n32);
                    self.kruns[*k].next_block += n32;
                    ctas[b] = n32;
                    insts[b] = cum[n];
                    self.spread_sm_insts(b, cum[n]);
                }
                CoKind::Waiting => {}
            }
        }
        // Idle scheduler cycles and occupancy samples: those of the longest measured
        // span of a relaunching part, at the same point of it.
        let (long, idle) = plan
            .parts
            .iter()
            .filter_map(|p| match p.kind {
                CoKind::Pass { idle, .. } => Some((p, idle.1 - idle.0)),
                _ => None,
            })
            .max_by_key(|(p, _)| p.span)
            .expect("a co-run jump is made at the end of a relaunching part's pass");
        let f = self.ff.as_mut().expect("fast-forward");
        f.idle += mul_div(idle, j, long.span);
        let lo = self.timeline.partition_point(|s| s.cycle < now - long.span);
        let pattern: Vec<Sample> = self.timeline[lo..].to_vec();
        self.ff_replay_samples(t, j, &pattern, now - long.span, long.span);
        let f = self.ff.as_mut().expect("fast-forward");
        f.record_pass_jump(FfJump {
            at: now,
            cycles: j,
            ctas,
            warp_insts: insts,
            aged: vec![0; apps],
            held_back: vec![0; apps],
            ended_by: why.to_string(),
            passes: passes_a,
            corun: true,
            spread_bp: plan.spread_bp(apps),
        });
        forget_passes(&mut f.marks, plan);
        self.ff_shift(t, j);
        if why == END {
            // At the window's end: the run is over.
            self.stop = true;
            return;
        }
        if !acts.is_empty() {
            // The acting epoch comes `je - j` cycles on, in detail.
            self.ff_defer_epoch(t, t + je - j, acts);
        } else if let Some(e) = next_epoch {
            // The epochs crossed were called; the next one is due where they left off.
            let due = if e == INF { INF } else { e - j };
            self.heap
                .retime(t, |at, x| if x == Ev::Epoch { due } else { at });
        }
        self.ff_mark(a, t);
    }

    /// Warp instructions application `a` retired in the first `r` cycles of its last
    /// pass (which just ended), interpolated between the snapshots of its progress;
    /// `None` when they do not reach back to that pass's start.
    fn ff_pass_prefix(&self, a: usize, r: u64) -> Option<u64> {
        let f = self.ff.as_ref()?;
        let m = f.marks.get(a)?;
        let l = m.len().checked_sub(1).filter(|&l| l > 0)?;
        let (s, e) = (&m[l - 1], &m[l]);
        let x = s.t + r;
        if x >= e.t {
            return Some(e.ctr.warp_insts - s.ctr.warp_insts);
        }
        if f.trace.front().is_none_or(|p| p.0 > s.t) {
            return None;
        }
        let inside = f
            .trace
            .iter()
            .filter(|p| p.0 > s.t && p.0 < e.t)
            .map(|p| (p.0, p.1.get(a).copied().unwrap_or(0)));
        let points: Vec<(u64, u64)> = std::iter::once((s.t, s.ctr.warp_insts))
            .chain(inside)
            .chain(std::iter::once((e.t, e.ctr.warp_insts)))
            .collect();
        let i = points.partition_point(|p| p.0 <= x);
        let ((t0, n0), (t1, n1)) = (points[i - 1], points[i]);
        let at = n0 + mul_div(n1.saturating_sub(n0), x - t0, t1 - t0);
        Some(at.saturating_sub(s.ctr.warp_insts))
    }

    /// Adds `n` skipped warp instructions of application `b` to the per-SM counts the
    /// controller view holds, spread as its instructions were so far.
    fn spread_sm_insts(&mut self, b: usize, n: u64) {
        let mut per: Vec<u64> = self.sms.iter().map(|s| s.app_insts[b]).collect();
        spread(&mut per, n);
        for (s, x) in self.sms.iter_mut().zip(per) {
            s.app_insts[b] = x;
        }
    }
}

/// After a co-run jump, every application's passes are measured afresh (their marks'
/// times predate the jump, and a relaunching part's next pass would span the whole
/// passes the jump credited beside its own), but a long launch's: the jump retired blocks
/// of that launch, so the pass it ends is a pass, the jump's time and blocks in it
/// (gpgpusim-60sm SMRA spmv beside hs: measured afresh in each 1.6 M-cycle launch, 230 K
/// cycles of each in detail).
fn forget_passes(marks: &mut [Vec<PassMark>], plan: &CoPlan) {
    for (b, m) in marks.iter_mut().enumerate() {
        let launch = plan
            .parts
            .iter()
            .any(|p| p.app == b && matches!(p.kind, CoKind::Launch { .. }));
        if !launch {
            m.clear();
        }
    }
}

/// Adds `n` to the counts `per`, in proportion to them (nothing if all are zero).
fn spread(per: &mut [u64], n: u64) {
    let total: u64 = per.iter().sum();
    if total == 0 {
        return;
    }
    for x in per.iter_mut() {
        *x += mul_div(n, *x, total);
    }
}

/// Credits the time-proportional counters (stall cycles) of `j` cycles at the rate of
/// `d` over `span` cycles.
fn credit_time(c: &mut Counters, d: &Counters, j: u64, span: u64) {
    let by_t = |x: u64| mul_div(x, j, span);
    let s = &mut c.stalls;
    s.short_raw += by_t(d.stalls.short_raw);
    s.long_memory += by_t(d.stalls.long_memory);
    s.unit_busy += by_t(d.stalls.unit_busy);
    s.barrier += by_t(d.stalls.barrier);
    s.idle += by_t(d.stalls.idle);
}

/// The steady-state test for a co-runner's passes: instruction rate within `tol`, as in
/// [`steady`], the rest within [`CO_SLACK`] times it. The co-runner's phase moves
/// how the memory system's share falls between the passes (fermi-ws hot beside lbm: DRAM
/// bytes per cycle 1.98, 2.10, 1.86, 2.08 in four passes, IPC 4.60, 4.56, 4.64, 4.48);
/// the jump credits the mean of two passes, so only the rate has to hold. DRAM traffic
/// that differs by at most [`DRAM_NOISE`] of the GPU's peak (`peak`, bytes a cycle) is
/// alike however large the relative change: fermi-ws dxt beside mvp moves 0.06 bytes a
/// cycle (0.04% of the peak), 11–36% more or less from pass to pass with mvp's phase
/// (0.01–0.02 bytes a cycle), and was not jumped for 2.5 M cycles while its passes'
/// time and rate agreed within 1%.
fn co_steady(d1: &Counters, c1: u64, d2: &Counters, c2: u64, tol: f64, peak: f64) -> bool {
    let per = |x: u64, c: u64| x as f64 / c.max(1) as f64;
    rel(per(d1.warp_insts, c1), per(d2.warp_insts, c2)) <= tol
        && steady_above(d1, c1, d2, c2, CO_SLACK * tol, DRAM_NOISE * peak)
}

/// A change of DRAM traffic between a co-runner's passes too small to be a change of its
/// state, as a fraction of the GPU's peak bandwidth. (At `tolerance` of the peak, 3%,
/// punyala bp beside gups on gpgpusim-60sm, 2.5% of the peak and its pass time moving
/// 1.21–1.29 M cycles with gups's phase, jumped after its first two passes and was
/// credited 2.8% too little; at a thousandth its DRAM test holds it back until 8.8 M
/// cycles, as before.)
const DRAM_NOISE: f64 = 1e-3;

/// How much looser than the rate the other counters of a co-runner's passes may differ.
const CO_SLACK: f64 = 3.0;

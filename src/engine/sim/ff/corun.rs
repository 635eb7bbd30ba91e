//! Co-run jumps: several applications resident at once, each relaunching its kernels
//! (a fixed window, a budget run, a controller's epochs), skip the same time together.
//!
//! A co-run's joint state never repeats exactly (fermi-ws hot's passes take 424 K cycles
//! beside lbm's 306 K: their phases drift), so the jump does not look for a repeating
//! joint pattern. Instead, once every active application has completed two passes over
//! its kernels in the current *regime* (the same applications active, no controller
//! action since; the first pass counts from the application's first launch) and they
//! agree (pass time and instruction rate within `tolerance`, the other counters of the
//! wave jumps' steady-state test within three times it: the co-runner's phase moves the
//! memory system's share between passes), the jump is made at the end of a pass of one
//! of them (`a`, whose state is then the cleanest: none of its CTAs resident). Its length
//! `J` is the room before the next anchored event but a controller's epochs (minus two
//! windows), within every budget (minus a pass of work), `stride` times the longest
//! measured span and the cap on kernel records; at least the longest pass.
//!
//! Every active application is credited `J / P` of the work it did in its measured
//! passes (`P` cycles): the whole passes in `J` as kernel records (copies of its last
//! pass's, later by whole passes), the remainder as counters only. Its state is left
//! where it is: resident CTAs, caches, DRAM queues and pending events stay as they are,
//! so the applications resume in the joint phase they had, not the one `J` later — the
//! phases drift in detail anyway, and the measured passes average over them. A launch in
//! flight across the jump has its start and instruction base moved by the jump, so its
//! record holds only what it ran in detail.
//!
//! A non-passive controller's epochs inside `J` are called in order with the view the
//! measured rates give at their time; the first that acts ends the jump, at the last
//! whole pass of the longest-pass co-runner before it, and its actions wait for its time
//! in detail (the phase that application has there is then the detailed run's). Its known
//! limits, and a variant tried and measured off: docs/fast-forward.md, "Co-run jumps".

use super::pass::{copy_pass, CO_MARKS, MAX_RECORDS};
use super::*;
use crate::engine::config::{Action, Hook, View};

/// One application's part of a co-run jump.
pub(super) struct CoPart {
    app: usize,
    /// Counters over its two measured passes, and their cycles.
    d: Counters,
    span: u64,
    /// Kernel records of the last pass (indices into the application's records), and
    /// the absolute time that pass started.
    records: (usize, usize),
    last_start: u64,
}

/// Passes a co-runner is measured over.
const PASSES: u64 = CO_MARKS as u64 - 1;

impl CoPart {
    /// Cycles of one pass (the mean of the measured ones).
    fn pass(&self) -> u64 {
        (self.span / PASSES).max(1)
    }
}

/// A co-run jump: its length, each application's part and what limited it.
pub(super) struct CoPlan {
    j: u64,
    parts: Vec<CoPart>,
    why: &'static str,
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

    /// The co-run jump to make at engine time `t`, where application `a` just ended a
    /// pass, if every active application is steady in this regime and there is room.
    pub(super) fn ff_corun_plan(&self, a: usize, t: u64) -> Option<CoPlan> {
        let f = self.ff.as_ref()?;
        // (While pages migrate on demand after a channel-set change, every access may
        // move one: the rates change until they are all moved, and a jump would freeze the
        // migration half done.)
        if matches!(self.cfg.mode, RunMode::Completion)
            || self.apps.len() > 64
            || self.mem.pages_moving()
            || self.ff_passes_forbidden(t)
        {
            return None;
        }
        let regime = self.ff_regime(t);
        let active: Vec<usize> = (0..self.apps.len())
            .filter(|&b| regime.1 >> b & 1 == 1)
            .collect();
        if active.len() < 2 || !active.contains(&a) {
            return None;
        }
        let tol = f.cfg.tolerance;
        let mut parts = Vec::with_capacity(active.len());
        for &b in &active {
            // Two passes of its own in this regime, alike.
            let m = f.marks.get(b)?;
            if m.len() < CO_MARKS || self.apps[b].persistent.is_some() {
                return None;
            }
            let m = &m[m.len() - CO_MARKS..];
            if m.iter().any(|k| k.regime != regime) {
                return None;
            }
            let (p1, p2) = (m[1].t - m[0].t, m[2].t - m[1].t);
            let (d1, d2) = (delta(&m[0].ctr, &m[1].ctr), delta(&m[1].ctr, &m[2].ctr));
            if p1 == 0
                || p2 == 0
                || d1.warp_insts == 0
                || d2.warp_insts == 0
                || rel(p1 as f64, p2 as f64) > tol
                || !co_steady(&d1, p1, &d2, p2, tol)
            {
                return None;
            }
            parts.push(CoPart {
                app: b,
                d: delta(&m[0].ctr, &m[2].ctr),
                span: m[2].t - m[0].t,
                records: (m[1].kernels, m[2].kernels),
                last_start: m[1].t,
            });
        }
        // Room: before the next anchored event (two windows kept), within `stride`
        // measured spans, within every budget (a pass of work kept).
        // (A controller's epochs inside the jump are called with the view the measured
        // rates give; the first that acts ends the jump: `ff_corun_epochs`.)
        let margin = 2 * f.cfg.window.max(1);
        let next = self.heap.earliest(|e| blocking(e, true))?;
        let mut room = next.saturating_sub(t).saturating_sub(margin);
        let mut why = "event";
        let longest = parts.iter().map(|p| p.span).max().unwrap_or(0);
        if f.cfg.stride > 0 && longest * f.cfg.stride as u64 <= room {
            (room, why) = (longest * f.cfg.stride as u64, "stride");
        }
        for p in &parts {
            if let RunMode::Budget(b) = &self.cfg.mode {
                let per_pass = p.d.warp_insts / PASSES;
                let left = b[p.app]
                    .saturating_sub(self.ctr[p.app].warp_insts)
                    .saturating_sub(per_pass);
                let by_budget = mul_div(left, p.span, p.d.warp_insts);
                if by_budget < room {
                    (room, why) = (by_budget, "budget");
                }
            }
            // Kernel records: at most MAX_RECORDS per application.
            let per_pass = (p.records.1 - p.records.0).max(1) as u64;
            let have = self.rt[p.app].kernels.len() as u64;
            let by_records = MAX_RECORDS.saturating_sub(have) / per_pass * p.pass();
            if by_records < room {
                (room, why) = (by_records, "records");
            }
        }
        // At least the longest pass: a shorter jump saves less than it costs in
        // accuracy.
        let slowest = parts.iter().map(CoPart::pass).max().unwrap_or(0);
        (room >= slowest.max(1)).then_some(CoPlan {
            j: room,
            parts,
            why,
        })
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
            let p = plan.parts.iter().map(CoPart::pass).max().unwrap_or(1);
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
            let whole = j / p.pass();
            if b == a {
                passes_a = whole;
            }
            let n = mul_div(p.d.warp_insts, j, p.span);
            let thread = mul_div(p.d.thread_insts, j, p.span);
            credit_insts(&mut self.ctr[b], &p.d, n);
            credit_time(&mut self.ctr[b], &p.d, j, p.span);
            let done = mul_div(p.d.ctas_done, j, p.span);
            self.ctr[b].ctas_done += done;
            ctas[b] = u32::try_from(done).unwrap_or(u32::MAX);
            insts[b] = n;
            self.spread_sm_insts(b, n);
            // The whole passes in the jump: the last pass's kernel records, from now on.
            let r = &mut self.rt[b];
            copy_pass(
                &mut r.kernels,
                p.records,
                whole,
                now - p.last_start,
                p.pass(),
            );
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
        // Idle scheduler cycles and occupancy samples: those of the longest measured
        // span, at the same point of it.
        let long = plan.parts.iter().max_by_key(|p| p.span).expect("parts");
        let f = self.ff.as_mut().expect("fast-forward");
        let m = &f.marks[long.app];
        let (m0, m2) = (&m[m.len() - CO_MARKS], &m[m.len() - 1]);
        f.idle += mul_div(m2.idle - m0.idle, j, long.span);
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
        });
        // Every application's passes are measured afresh: their marks' times predate
        // the jump.
        for m in &mut f.marks {
            m.clear();
        }
        self.ff_shift(t, j);
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
/// the jump credits the mean of two passes, so only the rate has to hold.
fn co_steady(d1: &Counters, c1: u64, d2: &Counters, c2: u64, tol: f64) -> bool {
    let per = |x: u64, c: u64| x as f64 / c.max(1) as f64;
    rel(per(d1.warp_insts, c1), per(d2.warp_insts, c2)) <= tol
        && steady(d1, c1, d2, c2, CO_SLACK * tol)
}

/// How much looser than the rate the other counters of a co-runner's passes may differ.
const CO_SLACK: f64 = 3.0;

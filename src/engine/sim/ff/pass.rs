//! Launch-level jumps: an application running alone in a window or budget run relaunches
//! its kernels over and over; once two consecutive passes over its kernel list took the
//! same time and did the same work, the passes that fit before the next anchored event
//! are retired whole, at the last pass's measured time and counters.
//!
//! A pass boundary is the cleanest state a jump can leave: none of the application's
//! CTAs are resident, so nothing is extrapolated but the count of identical passes; the
//! caches, DRAM queues and pending events stay those of the end of a pass, which is the
//! state every relaunch started from in detail. The partial pass the window's end cuts
//! (and the last whole pass of a budget) runs in detail.
//!
//! Only when both passes compared ran alone (every other application done, with nothing
//! running, since before the first of them) and the controller does not act on launch
//! hooks ([`Controller::launches_passive`]): the jump crosses the skipped launches'
//! arrival and departure hooks unseen.

use super::*;

/// An application's state at the end of one pass over its kernels (engine time of the
/// last kernel's end plus the offset: absolute cycles).
pub(super) struct PassMark {
    pub(super) t: u64,
    pub(super) ctr: Counters,
    /// Idle scheduler cycles of the GPU so far (skipped ones included).
    pub(super) idle: u64,
    /// Kernel records of the application so far.
    pub(super) kernels: usize,
    /// Occupancy samples so far.
    pub(super) samples: usize,
    /// Every other application was done and had nothing resident: the passes after
    /// this mark ran alone.
    pub(super) alone: bool,
    /// The co-run regime the mark was taken in ([`Engine::ff_regime`]): passes compared
    /// for a co-run jump all ran in the current one.
    pub(super) regime: (u64, u64),
    /// Every application's position at the mark: a co-runner in one long launch is
    /// measured between the marks of one that relaunches (`corun`).
    pub(super) pos: Vec<Pos>,
}

/// An application's position at another's pass mark: its counters, the launch it ran,
/// that launch's next block and resident CTAs.
pub(super) struct Pos {
    pub(super) ctr: Counters,
    pub(super) krun: Option<usize>,
    pub(super) next_block: u32,
    pub(super) live: u32,
}

impl FfState {
    /// Records a launch-level or co-run jump: the history restarts, and (as the jump
    /// skipped whole passes, not waves of one launch) no end-point correction awaits it.
    pub(super) fn record_pass_jump(&mut self, jump: FfJump) {
        self.stats.cycles += jump.cycles;
        self.stats.jumps.push(jump);
        self.restart();
        self.last = None;
    }

    /// `n` controller actions were applied at absolute time `now`: a new co-run regime
    /// starts. A pass mark taken at this very time (a first launch, before the start
    /// hook's actions) belongs to the new one: nothing ran under the old.
    pub(in crate::engine::sim) fn acted(&mut self, n: u64, now: u64) {
        if n == 0 {
            return;
        }
        self.acts += n;
        for m in self.marks.iter_mut().flat_map(|m| m.iter_mut()) {
            if m.t == now {
                m.regime.0 = self.acts;
            }
        }
    }
}

/// Passes kept per application: the last two passes are compared.
pub(super) const MARKS: usize = 3;
/// Passes kept per application for co-run jumps, which compare two (three were tried:
/// a slow drift over many passes is seen end to end, but fermi-ws hot's passes vary by
/// 3.5% with lbm's phase, so hot beside lbm jumped only after 2.5 M of a 5 M window).
pub(super) const CO_MARKS: usize = 3;
/// Passes kept per application: a co-runner in one long launch may be measured over
/// more of another's passes than two (enough for waves of its own CTAs to complete).
pub(super) const KEPT_MARKS: usize = 9;
/// Most kernel records (launches) an application may have after a launch-level jump.
pub(super) const MAX_RECORDS: u64 = 1 << 20;

impl Engine<'_, '_> {
    /// Application `a` finished a pass at engine time `t` and relaunches: records the
    /// pass, and when the last two passes agree skips as many more as fit.
    pub(in crate::engine::sim) fn ff_pass(&mut self, a: usize, t: u64) -> Result<()> {
        if self.ff.is_none() {
            return Ok(());
        }
        self.ff_mark(a, t);
        if let Some((n, p, why)) = self.ff_passes(a, t) {
            self.ff_skip_passes(a, t, (n, p), why);
        } else if let Some(plan) = self.ff_corun_plan(a, t)? {
            self.ff_corun_jump(a, t, &plan);
        }
        Ok(())
    }

    /// What a launch-level jump may not cross at engine time `t`, whoever runs: time
    /// slicing, a saved context, a sample in flight,
    /// an application halted or paused.
    pub(super) fn ff_passes_forbidden(&self, t: u64) -> bool {
        let Some(f) = self.ff.as_ref() else {
            return true;
        };
        self.cfg.placement.time_slicing
            || self.context.is_some()
            || f.samples_pending > 0
            || !self.halts.is_empty()
            || self.paused.iter().any(|&p| p > t)
    }

    /// Records application `a`'s state at the end of a pass, at engine time `t` (the
    /// last [`KEPT_MARKS`] are kept).
    pub(super) fn ff_mark(&mut self, a: usize, t: u64) {
        let alone = self.ff_alone(a);
        self.ff_push_mark(a, t, alone);
    }

    /// Application `a` launches its first kernel at engine time `t`: the start of its
    /// first pass is marked for co-run jumps (never for a jump alone, which compares
    /// warm passes only: the mark does not count as alone).
    pub(in crate::engine::sim) fn ff_first_launch(&mut self, a: usize, t: u64) {
        if self.ff.is_some() && self.rt[a].pass == 0 && self.rt[a].kernels.is_empty() {
            self.ff_push_mark(a, t, false);
        }
    }

    fn ff_push_mark(&mut self, a: usize, t: u64, alone: bool) {
        let mark = PassMark {
            t: t + self.off,
            ctr: self.ctr[a].clone(),
            idle: self.idle_cycles(),
            kernels: self.rt[a].kernels.len(),
            samples: self.timeline.len(),
            alone,
            regime: self.ff_regime(t),
            pos: (0..self.apps.len())
                .map(|b| {
                    let krun = self.rt[b].krun;
                    let kr = krun.map(|k| &self.kruns[k]);
                    Pos {
                        ctr: self.ctr[b].clone(),
                        krun,
                        next_block: kr.map_or(0, |k| k.next_block),
                        live: kr.map_or(0, |k| k.live),
                    }
                })
                .collect(),
        };
        let f = self.ff.as_mut().expect("fast-forward");
        if f.marks.len() <= a {
            f.marks.resize_with(a + 1, Vec::new);
        }
        let m = &mut f.marks[a];
        m.push(mark);
        if m.len() > KEPT_MARKS {
            m.remove(0);
        }
    }

    /// Whether every application but `a` is done, with nothing running (a budget run's
    /// survivor; never in a window run of several).
    fn ff_alone(&self, a: usize) -> bool {
        (0..self.apps.len()).all(|b| b == a || (self.rt[b].done && self.rt[b].krun.is_none()))
    }

    /// How many passes of application `a` to skip at engine time `t`, the length of one
    /// and what limits them, if the last two agree and nothing forbids it.
    fn ff_passes(&self, a: usize, t: u64) -> Option<(u64, u64, &'static str)> {
        let f = self.ff.as_ref()?;
        let m = f.marks.get(a)?;
        if m.len() < MARKS
            || !self.ctl.launches_passive()
            || self.ff_passes_forbidden(t)
            || self.apps[a].persistent.is_some()
            || !m[m.len() - MARKS].alone
        {
            return None;
        }
        let m = &m[m.len() - MARKS..];
        let (p1, p2) = (m[1].t - m[0].t, m[2].t - m[1].t);
        let (d1, d2) = (delta(&m[0].ctr, &m[1].ctr), delta(&m[1].ctr, &m[2].ctr));
        let tol = f.cfg.tolerance;
        if p1 == 0
            || p2 == 0
            || d2.warp_insts == 0
            || rel(p1 as f64, p2 as f64) > tol
            || !steady(&d1, p1, &d2, p2, tol)
        {
            return None;
        }
        // Two windows at least stay before the next anchored event (the window's end,
        // the cycle cap, an arrival, an epoch, a sample, a slice): the partial pass the
        // window cuts runs in detail.
        let passive = self.ctl.epoch_passive();
        let next = self.heap.earliest(|e| blocking(e, passive))?;
        let margin = 2 * f.cfg.window.max(1);
        let mut n = next.saturating_sub(t).saturating_sub(margin) / p2;
        let mut why = "event";
        if let RunMode::Budget(b) = &self.cfg.mode {
            // And a whole pass of the budget.
            let left = b[a].saturating_sub(self.ctr[a].warp_insts);
            let by_budget = left.saturating_sub(d2.warp_insts) / d2.warp_insts;
            if by_budget < n {
                (n, why) = (by_budget, "budget");
            }
        }
        // Every skipped launch gets its kernel record: at most MAX_RECORDS per
        // application (a window of millions of launches then goes on in detail rather
        // than exhausting memory), and the pass count stays a u32.
        let per_pass = (m[2].kernels - m[1].kernels).max(1) as u64;
        let have = self.rt[a].kernels.len() as u64;
        let by_records = (MAX_RECORDS.saturating_sub(have) / per_pass)
            .min(u64::from(u32::MAX - self.rt[a].passes));
        if by_records < n {
            (n, why) = (by_records, "records");
        }
        (n > 0).then_some((n, p2, why))
    }

    /// Retires `n` passes of application `a` (each `p` cycles, as the last one) at engine
    /// time `t`; `why`: what limited them.
    fn ff_skip_passes(&mut self, a: usize, t: u64, (n, p): (u64, u64), why: &str) {
        let j = n * p;
        let f = self.ff.as_mut().expect("fast-forward");
        let marks = std::mem::take(&mut f.marks[a]);
        let (m1, m2) = (&marks[marks.len() - 2], &marks[marks.len() - 1]);
        let mut d = delta(&m1.ctr, &m2.ctr);
        // Warp-cycles come with the occupancy samples below.
        d.warp_cycles = 0;
        f.idle += n * (m2.idle - m1.idle);
        let c = &mut self.ctr[a];
        for _ in 0..n {
            c.add(&d);
        }
        // Each skipped pass's kernels, as the last pass's, later by whole passes.
        let r = &mut self.rt[a];
        copy_pass(&mut r.kernels, (m1.kernels, m2.kernels), n, p, p);
        r.pass += n as u32;
        r.passes += n as u32;
        // Occupancy samples in the skipped time: the last pass's, at the same point of
        // the pass (the nearest one taken).
        let pass: Vec<Sample> = self.timeline[m1.samples..m2.samples].to_vec();
        self.ff_replay_samples(t, j, &pass, m1.t, p);
        let f = self.ff.as_mut().expect("fast-forward");
        let apps = self.apps.len();
        let mut ctas = vec![0u32; apps];
        let mut insts = vec![0u64; apps];
        ctas[a] = u32::try_from(n.saturating_mul(d.ctas_done)).unwrap_or(u32::MAX);
        insts[a] = n * d.warp_insts;
        f.record_pass_jump(FfJump {
            at: t + self.off,
            cycles: j,
            ctas,
            warp_insts: insts,
            aged: vec![0; apps],
            held_back: vec![0; apps],
            ended_by: why.to_string(),
            passes: n,
            corun: false,
            spread_bp: Vec::new(),
        });
        self.ff_shift(t, j);
        // The next pass is measured afresh, from this boundary.
        self.ff_mark(a, t);
    }
}

impl Engine<'_, '_> {
    /// Occupancy samples for a jump of `j` cycles at engine time `t`: each is the one of
    /// `pattern` nearest the same point of a `period` that starts at absolute `base`.
    pub(super) fn ff_replay_samples(
        &mut self,
        t: u64,
        j: u64,
        pattern: &[Sample],
        base: u64,
        period: u64,
    ) {
        for at in self.ff_ticks(t, j) {
            let want = base + (at - t) % period;
            if let Some(s) = pattern.iter().min_by_key(|s| s.cycle.abs_diff(want)) {
                self.push_sample(at, s.warps.clone(), s.sms.clone());
            }
        }
    }
}

/// Appends `n` copies of the kernel records `records[from..to]` (one pass), copy `k`
/// (from 1) numbered `k` passes later and moved `first + (k - 1) * period` cycles later.
pub(super) fn copy_pass(
    records: &mut Vec<KernelStats>,
    (from, to): (usize, usize),
    n: u64,
    first: u64,
    period: u64,
) {
    let last: Vec<KernelStats> = records[from..to].to_vec();
    for k in 1..=n {
        let shift = first + (k - 1) * period;
        for r in &last {
            let mut r = r.clone();
            r.pass += k as u32;
            r.arrival += shift;
            r.start += shift;
            r.end += shift;
            records.push(r);
        }
    }
}

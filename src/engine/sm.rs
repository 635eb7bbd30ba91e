//! One streaming multiprocessor: resident CTAs and warps of any number of kernels, the warp
//! schedulers (GTO or LRR) sharing their issue slots among all of them, the functional-unit
//! pipelines with their initiation intervals, and a register scoreboard per warp.
//!
//! The SM advances in its own time: it visits only cycles in which some warp can issue and
//! jumps over stall gaps arithmetically (the next time any warp's operands, pipeline and
//! context are ready). Memory beyond the L1 and CTA completion touch state shared with
//! other SMs, so those are issued only in global time order: the SM may run ahead of the
//! global clock by at most [`QUANTUM`] cycles while it issues SM-local work, never while it
//! waits for DRAM data whose arrival time is not yet known.

use std::sync::Arc;

use crate::arch::SchedPolicy;
use crate::engine::memsys::{LoadRef, MemSys};
use crate::engine::ops::{bank_degree, coalesce, Op, OpClass, NONE, NREG};
use crate::engine::stats::Counters;
use crate::error::DecodeError;
use crate::trace::{DynInst, KernelSource, WarpStream};

pub const INF: u64 = u64::MAX;
/// Pending loads with unknown data time per warp.
pub const MAX_LOADS: usize = 8;
/// How far an SM may run ahead of the global clock on SM-local work.
pub const QUANTUM: u64 = 128;

/// Stall reasons (indices into the stall stack).
pub const R_SHORT: u8 = 0;
pub const R_MEM: u8 = 1;
pub const R_UNIT: u8 = 2;
pub const R_BARRIER: u8 = 3;
pub const R_IDLE: u8 = 4;

/// SM resources a CTA holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Res {
    pub threads: u32,
    pub warps: u32,
    pub regs: u32,
    pub smem: u32,
    pub ctas: u32,
}

impl Res {
    pub fn add(&mut self, o: &Res) {
        self.threads += o.threads;
        self.warps += o.warps;
        self.regs += o.regs;
        self.smem += o.smem;
        self.ctas += o.ctas;
    }
    pub fn sub(&mut self, o: &Res) {
        self.threads -= o.threads;
        self.warps -= o.warps;
        self.regs -= o.regs;
        self.smem -= o.smem;
        self.ctas -= o.ctas;
    }
    /// `self + o` fits within `lim` scaled by `frac`.
    pub fn fits(&self, o: &Res, lim: &Res, frac: f64) -> bool {
        let f = |u: u32, a: u32, l: u32| {
            let cap = if frac >= 1.0 {
                l
            } else {
                (l as f64 * frac).floor() as u32
            };
            u + a <= cap
        };
        f(self.threads, o.threads, lim.threads)
            && f(self.warps, o.warps, lim.warps)
            && f(self.regs, o.regs, lim.regs)
            && f(self.smem, o.smem, lim.smem)
            && f(self.ctas, o.ctas, lim.ctas)
    }
}

#[derive(Clone, Copy, Debug)]
struct PendingLoad {
    outstanding: u16,
    ready: u64,
    dsts: [u16; 4],
    ndst: u8,
}

pub struct Warp<'a> {
    pub live: bool,
    pub app: u16,
    pub krun: u32,
    pub cta: u16,
    sched: u8,
    stream: Option<Box<dyn WarpStream + 'a>>,
    inst: DynInst,
    ops: Arc<[Op]>,
    ready: u64,
    mem_cause: bool,
    at_barrier: bool,
    regs: Box<[u64]>,
    mem_regs: [u64; 6],
    loads: [Option<PendingLoad>; MAX_LOADS],
    pub gen: u32,
    age: u64,
    last_issue: u64,
    /// Latest data time of loads issued so far (EXIT waits for it).
    loads_done: u64,
}

impl Warp<'_> {
    fn new() -> Self {
        Warp {
            live: false,
            app: 0,
            krun: 0,
            cta: 0,
            sched: 0,
            stream: None,
            inst: DynInst::default(),
            ops: Arc::from(Vec::new()),
            ready: INF,
            mem_cause: false,
            at_barrier: false,
            regs: vec![0u64; NREG].into_boxed_slice(),
            mem_regs: [0; 6],
            loads: [None; MAX_LOADS],
            gen: 0,
            age: 0,
            last_issue: 0,
            loads_done: 0,
        }
    }

    fn op(&self) -> &Op {
        &self.ops[self.inst.sidx as usize]
    }

    fn compute_ready(&mut self) {
        let op = self.ops[self.inst.sidx as usize];
        let mut r = self.last_issue + 1;
        let mut mem = false;
        for &s in &op.srcs[..op.nsrc as usize] {
            let x = self.regs[s as usize];
            if x > r {
                r = x;
                mem = self.mem_regs[(s / 64) as usize] >> (s % 64) & 1 == 1;
            }
        }
        for &d in &op.dsts[..op.ndst as usize] {
            if self.regs[d as usize] == INF {
                r = INF;
                mem = true;
            }
        }
        if op.class == OpClass::Exit {
            // A warp retires only when its loads have returned.
            if self.loads.iter().any(|l| l.is_some()) {
                r = INF;
                mem = true;
            } else if self.loads_done > r {
                r = self.loads_done;
                mem = true;
            }
        }
        self.ready = r;
        self.mem_cause = mem;
    }

    fn set_reg(&mut self, d: u16, t: u64, mem: bool) {
        self.regs[d as usize] = t;
        let (i, b) = ((d / 64) as usize, d % 64);
        if mem {
            self.mem_regs[i] |= 1 << b;
        } else {
            self.mem_regs[i] &= !(1 << b);
        }
    }
}

/// A resident CTA (or persistent worker).
#[derive(Clone, Debug, Default)]
pub struct Cta {
    pub live: bool,
    pub app: u16,
    pub krun: u32,
    /// Logical block running now.
    pub block: u32,
    pub warps: Vec<u16>,
    pub live_warps: u32,
    pub at_barrier: u32,
    /// Persistent workers: blocks left in the current task.
    pub task_left: u32,
    pub fp: Res,
}

/// The per-warp fields the schedulers scan, kept contiguous (16 bytes a warp).
#[derive(Clone, Copy, Debug, Default)]
struct Hot {
    ready: u64,
    age: u64,
    /// Bumped on every change: stale entries of the scheduler's heap are skipped.
    stamp: u32,
    app: u16,
    pipe: u8,
    /// Live and not waiting at a barrier.
    active: bool,
    /// Its next instruction needs a pending-load slot and none is free.
    blocked: bool,
}

struct Sched {
    /// Lower bound of the earliest cycle any of its warps can issue.
    min: u64,
    /// Warps whose operands are ready by `drained` (bit = slot / schedulers).
    ready: [u64; 4],
    /// Warps whose operands become ready later: (time, slot, stamp).
    later: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u16, u32)>>,
    drained: u64,
    /// Why the last failed pick found nothing: (reason, app).
    why: (u8, u16),
    warps: Vec<u16>,
    rr: usize,
    greedy: u16,
    /// Open stall episode: (first cycle, reason, app or NONE).
    stall: Option<(u64, u8, u16)>,
}

/// What an SM step ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOut {
    /// Continue at this time (global ordering or the run-ahead limit).
    Yield(u64),
    /// Nothing can issue until a load returns or work is dispatched.
    Sleep,
    /// The last warp of CTA slot `cta` finished at `t`.
    CtaDone { cta: u16, t: u64 },
}

/// Read-only context of a step.
pub struct StepEnv<'e> {
    /// Time of the earliest other pending event.
    pub top: u64,
    /// Hard end of the run.
    pub end: u64,
    pub policy: SchedPolicy,
    pub shared_latency: u64,
    pub banks: u32,
    /// Per application: no issue before this time (migration pauses).
    pub paused: &'e [u64],
    /// Time slicing: only this application's warps issue.
    pub context: Option<u16>,
    /// Some application is paused or time slicing is on (the slow path of the scan).
    pub restricted: bool,
}

pub struct Sm<'a> {
    pub id: usize,
    pub now: u64,
    resume: usize,
    warps: Vec<Warp<'a>>,
    hot: Vec<Hot>,
    pub ctas: Vec<Cta>,
    scheds: Vec<Sched>,
    pipe_free: Vec<u64>,
    /// Per scheduler, per unit kind: (first pipe, count).
    pipe_range: Vec<[(u16, u16); 9]>,
    /// Pending loads with unknown data time.
    pub unknown: u32,
    pub used: Res,
    pub app_used: Vec<Res>,
    /// Time of this SM's wake event in the global queue (INF: none).
    pub wake: u64,
    pub blocked_until: u64,
    /// Cycles before this have been simulated: the SM's clock may be moved back to here
    /// (not further) when an earlier event concerns it.
    pub floor: u64,
    next_age: u64,
    lines: Vec<(u64, u8, u32)>,
    pub idle: u64,
}

impl<'a> Sm<'a> {
    pub fn new(id: usize, spec: &crate::arch::GpuSpec, apps: usize, warp_slots: usize) -> Self {
        let s = spec.sm.schedulers.max(1) as usize;
        let mut pipe_free = Vec::new();
        let mut pipe_range = vec![[(0u16, 0u16); 9]; s];
        for k in crate::arch::UnitKind::ALL {
            let n = spec.units.get(k).count as usize;
            if n == 0 {
                continue;
            }
            if spec.sm.sub_cores && n.is_multiple_of(s) {
                let per = n / s;
                for r in pipe_range.iter_mut() {
                    r[k as usize] = (pipe_free.len() as u16, per as u16);
                    pipe_free.extend(std::iter::repeat_n(0, per));
                }
            } else {
                let start = pipe_free.len() as u16;
                pipe_free.extend(std::iter::repeat_n(0, n));
                for r in pipe_range.iter_mut() {
                    r[k as usize] = (start, n as u16);
                }
            }
        }
        Sm {
            id,
            now: 0,
            resume: 0,
            warps: (0..warp_slots).map(|_| Warp::new()).collect(),
            hot: vec![Hot::default(); warp_slots],
            ctas: vec![Cta::default(); spec.sm.max_ctas as usize * apps.max(1)],
            scheds: (0..s)
                .map(|_| Sched {
                    min: 0,
                    ready: [0; 4],
                    later: std::collections::BinaryHeap::new(),
                    drained: 0,
                    why: (R_IDLE, NONE),
                    warps: Vec::new(),
                    rr: 0,
                    greedy: NONE,
                    stall: None,
                })
                .collect(),
            pipe_free,
            pipe_range,
            unknown: 0,
            used: Res::default(),
            app_used: vec![Res::default(); apps],
            wake: INF,
            blocked_until: 0,
            floor: 0,
            next_age: 0,
            lines: Vec::with_capacity(64),
            idle: 0,
        }
    }

    /// Copies warp `id`'s scheduling state into the scan array and lowers its scheduler's
    /// bound. Called whenever a warp's readiness may have changed.
    fn sync(&mut self, id: u16) {
        let ns = self.scheds.len();
        let w = &self.warps[id as usize];
        let h = &mut self.hot[id as usize];
        h.active = w.live && !w.at_barrier;
        h.ready = w.ready;
        h.app = w.app;
        h.age = w.age;
        h.stamp = h.stamp.wrapping_add(1);
        if w.live {
            let op = w.op();
            h.pipe = op.pipe;
            h.blocked = matches!(op.class, OpClass::Load | OpClass::Atomic)
                && w.loads.iter().all(|l| l.is_some());
        } else {
            h.blocked = false;
        }
        let local = id as usize / ns;
        let (word, bit) = (local / 64, local % 64);
        let s = &mut self.scheds[w.sched as usize];
        s.ready[word] &= !(1u64 << bit);
        if h.active && !h.blocked && h.ready != INF {
            if h.ready <= s.drained {
                s.ready[word] |= 1 << bit;
            } else {
                s.later.push(std::cmp::Reverse((h.ready, id, h.stamp)));
            }
            s.min = s.min.min(h.ready);
        }
    }

    /// Forgets the schedulers' bounds (the set of warps allowed to issue changed).
    pub fn invalidate(&mut self) {
        for s in &mut self.scheds {
            s.min = 0;
        }
    }

    pub fn free_cta_slot(&self) -> Option<usize> {
        self.ctas.iter().position(|c| !c.live)
    }

    pub fn live_warps(&self) -> u32 {
        self.warps.iter().filter(|w| w.live).count() as u32
    }

    /// Resident warps per application.
    pub fn warps_by_app(&self, out: &mut [u32]) {
        for w in self.warps.iter().filter(|w| w.live) {
            if let Some(x) = out.get_mut(w.app as usize) {
                *x += 1;
            }
        }
    }

    /// Starts logical block `block` of `src` in CTA slot `slot` (already marked live with
    /// its footprint by the dispatcher); its warps may issue from `t`.
    pub fn start_block(
        &mut self,
        slot: usize,
        block: u32,
        src: &'a dyn KernelSource,
        ops: &Arc<[Op]>,
        t: u64,
    ) -> Result<(), DecodeError> {
        let nw = src.cta(block).warps;
        let mut ids = std::mem::take(&mut self.ctas[slot].warps);
        // Reuse the slot's warps (persistent workers) or take free ones.
        if ids.len() < nw as usize {
            let taken = ids.clone();
            let mut free = (0..self.warps.len())
                .filter(|&i| !self.warps[i].live && !taken.contains(&(i as u16)));
            while ids.len() < nw as usize {
                match free.next() {
                    Some(i) => ids.push(i as u16),
                    None => {
                        return Err(DecodeError(format!(
                            "SM {} has no free warp slot for a CTA of {} warps",
                            self.id, nw
                        )))
                    }
                }
            }
        }
        ids.truncate(nw as usize);
        let (app, krun) = (self.ctas[slot].app, self.ctas[slot].krun);
        let ns = self.scheds.len();
        let mut live = 0;
        for (wi, &id) in ids.iter().enumerate() {
            let w = &mut self.warps[id as usize];
            w.gen = w.gen.wrapping_add(1);
            w.app = app;
            w.krun = krun;
            w.cta = slot as u16;
            w.sched = (id as usize % ns) as u8;
            w.ops = ops.clone();
            w.regs.fill(0);
            w.mem_regs = [0; 6];
            w.loads = [None; MAX_LOADS];
            w.at_barrier = false;
            w.last_issue = t.saturating_sub(1);
            w.loads_done = 0;
            w.age = self.next_age;
            self.next_age += 1;
            let mut s = src.warp(block, wi as u32);
            if s.next_inst(&mut w.inst)? {
                w.stream = Some(s);
                w.live = true;
                w.compute_ready();
                w.ready = w.ready.max(t);
                self.scheds[w.sched as usize].warps.push(id);
                live += 1;
                self.sync(id);
            } else {
                w.stream = None;
            }
        }
        let c = &mut self.ctas[slot];
        c.block = block;
        c.warps = ids;
        c.live_warps = live;
        c.at_barrier = 0;
        Ok(())
    }

    /// Saved context bytes of CTA slot `slot` (registers + shared memory).
    pub fn context_bytes(&self, slot: usize) -> u64 {
        let c = &self.ctas[slot];
        c.fp.regs as u64 * 4 + c.fp.smem as u64
    }

    /// Removes every warp of CTA slot `slot` (preemption); the slot stays live for the
    /// caller to release.
    pub fn kill_cta(&mut self, slot: usize) {
        let ids = std::mem::take(&mut self.ctas[slot].warps);
        for &id in &ids {
            self.finish_warp(id);
        }
        self.ctas[slot].live_warps = 0;
    }

    fn finish_warp(&mut self, id: u16) {
        let w = &mut self.warps[id as usize];
        if !w.live {
            return;
        }
        w.live = false;
        w.stream = None;
        for l in w.loads.iter_mut() {
            if l.take().is_some() {
                self.unknown -= 1;
            }
        }
        let s = &mut self.scheds[w.sched as usize];
        if let Some(p) = s.warps.iter().position(|&x| x == id) {
            s.warps.remove(p);
        }
        if s.greedy == id {
            s.greedy = NONE;
        }
        self.sync(id);
    }

    /// A load's data arrives at `t`; returns the warp's new ready time if it changed.
    pub fn resolve(&mut self, r: LoadRef, t: u64) -> Option<u64> {
        let w = &mut self.warps[r.warp as usize];
        if !w.live || w.gen != r.gen {
            return None;
        }
        let p = w.loads[r.slot as usize].as_mut()?;
        p.outstanding -= 1;
        p.ready = p.ready.max(t);
        if p.outstanding > 0 {
            return None;
        }
        let p = w.loads[r.slot as usize].take().unwrap();

        for &d in &p.dsts[..p.ndst as usize] {
            w.set_reg(d, p.ready, true);
        }
        w.loads_done = w.loads_done.max(p.ready);
        self.unknown -= 1;
        let before = w.ready;
        w.compute_ready();
        let ready = w.ready;
        self.sync(r.warp);
        (ready != before || before != INF).then_some(ready)
    }

    #[inline]
    fn pipe_ready(&self, sched: usize, pipe: u8) -> u64 {
        let (s, n) = self.pipe_range[sched][pipe as usize];
        if n == 1 {
            return self.pipe_free[s as usize];
        }
        self.pipe_free[s as usize..(s + n) as usize]
            .iter()
            .copied()
            .min()
            .unwrap_or(INF)
    }

    fn take_pipe(&mut self, sched: usize, pipe: u8, until: u64) {
        let (s, n) = self.pipe_range[sched][pipe as usize];
        let r = &mut self.pipe_free[s as usize..(s + n) as usize];
        if let Some(m) = r.iter_mut().min_by_key(|x| **x) {
            *m = until;
        }
    }

    /// Earliest cycle warp `id` could issue, ignoring `t` (INF: waits on an event).
    #[inline]
    fn candidate(&self, s: usize, id: u16, env: &StepEnv) -> u64 {
        let h = &self.hot[id as usize];
        if !h.active || h.blocked {
            return INF;
        }
        let mut c = h.ready.max(self.pipe_ready(s, h.pipe));
        if env.restricted {
            if env.context.is_some_and(|x| x != h.app) {
                return INF;
            }
            if let Some(&p) = env.paused.get(h.app as usize) {
                c = c.max(p);
            }
        }
        c
    }

    /// The warp scheduler `s` issues at `t`, if any; otherwise records in the scheduler
    /// the earliest cycle one could. Only warps whose operands are ready are examined.
    fn pick(&mut self, s: usize, t: u64, env: &StepEnv) -> Option<u16> {
        let ns = self.scheds.len();
        // Move warps whose operands are ready by `t` into the ready set.
        {
            let sc = &mut self.scheds[s];
            while let Some(&std::cmp::Reverse((r, id, stamp))) = sc.later.peek() {
                if r > t {
                    break;
                }
                sc.later.pop();
                let h = &self.hot[id as usize];
                if h.stamp == stamp {
                    let local = id as usize / ns;
                    sc.ready[local / 64] |= 1 << (local % 64);
                }
            }
            sc.drained = sc.drained.max(t);
        }
        let greedy = match env.policy {
            SchedPolicy::Gto => self.scheds[s].greedy,
            SchedPolicy::Lrr => NONE,
        };
        if greedy != NONE && self.candidate(s, greedy, env) <= t {
            return Some(greedy);
        }
        let later = self.scheds[s].later.peek().map(|r| (r.0 .0, r.0 .1));
        let mut min = later.map(|l| l.0).unwrap_or(INF);
        let mut unit_wait: Option<(u64, u16)> = None;
        let mut best: Option<(u64, u16)> = None;
        let words = self.scheds[s].ready;
        let rr_local = match env.policy {
            SchedPolicy::Lrr => self.scheds[s].rr,
            SchedPolicy::Gto => 0,
        };
        for (wi, &word) in words.iter().enumerate() {
            let mut m = word;
            while m != 0 {
                let b = m.trailing_zeros() as usize;
                m &= m - 1;
                let local = wi * 64 + b;
                let id = (local * ns + s) as u16;
                let c = self.candidate(s, id, env);
                if c > t {
                    min = min.min(c);
                    if unit_wait.is_none_or(|u| c < u.0) {
                        unit_wait = Some((c, id));
                    }
                    continue;
                }
                // GTO: oldest ready warp; LRR: first ready warp after the last issued.
                let key = match env.policy {
                    SchedPolicy::Gto => self.hot[id as usize].age,
                    SchedPolicy::Lrr => ((local + 256 - rr_local) % 256) as u64,
                };
                if best.is_none_or(|(k, _)| key < k) {
                    best = Some((key, id));
                }
            }
        }
        if let Some((_, id)) = best {
            return Some(id);
        }
        self.scheds[s].min = min;
        // Why nothing issues: a ready warp waits for its unit, else the warp whose operands
        // come first waits for them, else everyone waits on memory or a barrier.
        let why = match (unit_wait, later) {
            (Some((c, id)), l) if l.is_none_or(|l| c <= l.0) => (R_UNIT, self.hot[id as usize].app),
            (_, Some((_, id))) => {
                let w = &self.warps[id as usize];
                (if w.mem_cause { R_MEM } else { R_SHORT }, w.app)
            }
            _ => self.stall_reason(s, t, env),
        };
        self.scheds[s].why = why;
        None
    }

    /// Why scheduler `s` cannot issue at `t`, and whose warp it is.
    fn stall_reason(&self, s: usize, t: u64, env: &StepEnv) -> (u8, u16) {
        let mut best: Option<(u64, u8, u16)> = None;
        for &id in &self.scheds[s].warps {
            let w = &self.warps[id as usize];
            let (when, why) = if w.at_barrier {
                (INF - 1, R_BARRIER)
            } else if w.ready == INF {
                (INF - 2, R_MEM)
            } else if w.ready > t {
                (w.ready, if w.mem_cause { R_MEM } else { R_SHORT })
            } else {
                let _ = env;
                (t, R_UNIT)
            };
            if best.is_none_or(|b| when < b.0) {
                best = Some((when, why, w.app));
            }
        }
        best.map(|b| (b.1, b.2)).unwrap_or((R_IDLE, NONE))
    }

    fn close_stall(&mut self, s: usize, t: u64, ctr: &mut [Counters]) {
        if let Some((start, why, app)) = self.scheds[s].stall.take() {
            let n = t.saturating_sub(start);
            if app == NONE {
                self.idle += n;
            } else if let Some(c) = ctr.get_mut(app as usize) {
                let st = &mut c.stalls;
                match why {
                    R_SHORT => st.short_raw += n,
                    R_MEM => st.long_memory += n,
                    R_UNIT => st.unit_busy += n,
                    R_BARRIER => st.barrier += n,
                    _ => st.idle += n,
                }
            }
        }
    }

    /// Closes every open stall episode at `t` (end of run).
    pub fn close_all(&mut self, t: u64, ctr: &mut [Counters]) {
        for s in 0..self.scheds.len() {
            self.close_stall(s, t, ctr);
        }
    }

    /// Earliest time any warp could issue (INF: none without an external event).
    fn next_time(&self) -> u64 {
        self.scheds.iter().map(|s| s.min).min().unwrap_or(INF)
    }

    /// Runs the SM from its current time as far as allowed.
    pub fn step(
        &mut self,
        env: &StepEnv,
        mem: &mut MemSys,
        ctr: &mut [Counters],
    ) -> Result<StepOut, DecodeError> {
        loop {
            let t = self.now.max(self.blocked_until);
            self.now = t;
            if t >= env.end {
                return Ok(StepOut::Yield(t));
            }
            if t > env.top.saturating_add(QUANTUM) || (t > env.top && self.unknown > 0) {
                return Ok(StepOut::Yield(t));
            }
            let mut issued = false;
            let ns = self.scheds.len();
            let mut s = self.resume;
            while s < ns {
                let skip = self.scheds[s].min > t;
                let picked = if skip { None } else { self.pick(s, t, env) };
                let Some(id) = picked else {
                    let sc = &mut self.scheds[s];
                    if sc.stall.is_none() {
                        sc.stall = Some((t, sc.why.0, sc.why.1));
                    }
                    s += 1;
                    continue;
                };
                let class = self.warps[id as usize].op().class;
                if class.is_global() && t > env.top {
                    self.resume = s;
                    self.floor = t;
                    return Ok(StepOut::Yield(t));
                }
                self.close_stall(s, t, ctr);
                issued = true;
                let done = self.issue(id, t, env, mem, ctr)?;
                let sc = &mut self.scheds[s];
                sc.greedy = id;
                sc.rr = (id as usize / ns + 1) % 256;
                if let Some(cta) = done {
                    self.resume = s + 1;
                    self.floor = t;
                    return Ok(StepOut::CtaDone { cta, t });
                }
                s += 1;
            }
            self.resume = 0;
            self.floor = t + 1;
            if issued {
                self.now = t + 1;
                continue;
            }
            let next = self.next_time();
            if next == INF {
                self.now = t + 1;
                return Ok(StepOut::Sleep);
            }
            self.now = next.max(t + 1);
        }
    }

    /// Issues the next instruction of warp `id` at `t`. Returns the CTA slot if this
    /// completed its CTA.
    fn issue(
        &mut self,
        id: u16,
        t: u64,
        env: &StepEnv,
        mem: &mut MemSys,
        ctr: &mut [Counters],
    ) -> Result<Option<u16>, DecodeError> {
        let sm = self.id;
        let w = &mut self.warps[id as usize];
        let op = *w.op();

        let app = w.app as usize;
        let c = &mut ctr[app];
        c.warp_insts += 1;
        c.thread_insts += w.inst.mask.count_ones() as u64;
        w.last_issue = t;
        let mut occ = 1u64;
        match op.class {
            OpClass::Alu | OpClass::Fixed => {
                for &d in &op.dsts[..op.ndst as usize] {
                    w.set_reg(d, t + op.lat as u64, false);
                }
            }
            OpClass::SharedLoad | OpClass::SharedStore => {
                let deg = bank_degree(w.inst.addrs(), op.width, env.banks) as u64;
                occ = deg;
                let ready = t + env.shared_latency + deg - 1;
                for &d in &op.dsts[..op.ndst as usize] {
                    w.set_reg(d, ready, false);
                }
            }
            OpClass::Load | OpClass::Store | OpClass::Atomic | OpClass::Reduce => {
                let mut lines = std::mem::take(&mut self.lines);
                coalesce(
                    w.inst.addrs(),
                    op.width,
                    mem.line_bytes(),
                    mem.sector_bytes(),
                    &mut lines,
                );
                occ = lines.len().max(1) as u64;
                let slot = w.loads.iter().position(|l| l.is_none()).unwrap_or(0);
                let r = LoadRef {
                    sm: sm as u16,
                    warp: id,
                    slot: slot as u8,
                    gen: w.gen,
                };
                let mut known = t + 1;
                let mut unknown = 0u16;
                for (i, &(line, sect, lanes)) in lines.iter().enumerate() {
                    let ti = t + i as u64;
                    let got = match op.class {
                        OpClass::Load => mem.load(sm, app, line, sect, ti, op.bypass_l1, r, c),
                        OpClass::Store => {
                            mem.store(sm, app, line, sect, ti, c);
                            Some(ti)
                        }
                        OpClass::Atomic => mem.atomic(sm, app, line, sect, lanes, ti, Some(r), c),
                        _ => {
                            mem.atomic(sm, app, line, sect, lanes, ti, None, c);
                            Some(ti)
                        }
                    };
                    match got {
                        Some(x) => known = known.max(x),
                        None => unknown += 1,
                    }
                }
                self.lines = lines;
                if matches!(op.class, OpClass::Load | OpClass::Atomic) {
                    if unknown > 0 {
                        w.loads[slot] = Some(PendingLoad {
                            outstanding: unknown,
                            ready: known,
                            dsts: op.dsts,
                            ndst: op.ndst,
                        });
                        for &d in &op.dsts[..op.ndst as usize] {
                            w.set_reg(d, INF, true);
                        }
                        self.unknown += 1;
                    } else {
                        for &d in &op.dsts[..op.ndst as usize] {
                            w.set_reg(d, known, true);
                        }
                    }
                    w.loads_done = w.loads_done.max(known);
                }
            }
            OpClass::Barrier => {
                w.at_barrier = true;
                let cta = w.cta as usize;
                self.ctas[cta].at_barrier += 1;
            }
            OpClass::Exit => {}
        }
        c.unit_busy[op.unit as usize] += op.init as u64 * occ;
        self.take_pipe(
            self.warps[id as usize].sched as usize,
            op.pipe,
            t + op.init as u64 * occ,
        );
        let w = &mut self.warps[id as usize];
        let cta = w.cta as usize;
        // A warp ends with its stream. A predicated EXIT in the middle (some lanes leave,
        // the others go on, as traces of bounds-checked kernels show) does not end it.
        let more = match w.stream.as_mut() {
            Some(s) => s.next_inst(&mut w.inst)?,
            None => false,
        };
        if more {
            w.compute_ready();
            self.sync(id);
            if op.class == OpClass::Barrier {
                return Ok(self.check_barrier(cta, t));
            }
            return Ok(None);
        }
        self.finish_warp(id);
        let c = &mut self.ctas[cta];
        c.live_warps -= 1;
        if c.live_warps == 0 {
            return Ok(Some(cta as u16));
        }
        Ok(self.check_barrier(cta, t))
    }

    fn check_barrier(&mut self, cta: usize, t: u64) -> Option<u16> {
        let c = &self.ctas[cta];
        if c.at_barrier == 0 || c.at_barrier < c.live_warps {
            return None;
        }
        let ids = c.warps.clone();
        for id in ids {
            let w = &mut self.warps[id as usize];
            if w.live && w.at_barrier {
                w.at_barrier = false;
                w.compute_ready();
                w.ready = w.ready.max(t + 1);
                self.sync(id);
            }
        }
        self.ctas[cta].at_barrier = 0;
        None
    }
}

/// A preempted CTA: its warps with their progress, waiting to be restored on some SM.
pub struct SavedCta<'a> {
    pub block: u32,
    pub fp: Res,
    pub task_left: u32,
    warps: Vec<Warp<'a>>,
}

impl SavedCta<'_> {
    /// Context bytes moved to save or restore it (registers + shared memory).
    pub fn bytes(&self) -> u64 {
        self.fp.regs as u64 * 4 + self.fp.smem as u64
    }
}

impl<'a> Sm<'a> {
    /// Takes CTA slot `slot`'s warps out of the SM (context switch) at `t`. Loads still in
    /// flight are treated as complete by the time the context is restored.
    pub fn save_cta(&mut self, slot: usize, t: u64) -> SavedCta<'a> {
        let ids = std::mem::take(&mut self.ctas[slot].warps);
        let mut warps = Vec::with_capacity(ids.len());
        for id in ids {
            if !self.warps[id as usize].live {
                continue;
            }
            // Detach from the scheduler, then move the warp out.
            let s = self.warps[id as usize].sched as usize;
            let sc = &mut self.scheds[s];
            if let Some(p) = sc.warps.iter().position(|&x| x == id) {
                sc.warps.remove(p);
            }
            if sc.greedy == id {
                sc.greedy = NONE;
            }
            let mut w = std::mem::replace(&mut self.warps[id as usize], Warp::new());
            self.warps[id as usize].gen = w.gen.wrapping_add(1);
            self.sync(id);
            for i in 0..MAX_LOADS {
                if let Some(p) = w.loads[i].take() {
                    self.unknown -= 1;
                    for &d in &p.dsts[..p.ndst as usize] {
                        w.set_reg(d, t, true);
                    }
                }
            }
            warps.push(w);
        }
        let c = &mut self.ctas[slot];
        c.live_warps = 0;
        c.at_barrier = 0;
        SavedCta {
            block: c.block,
            fp: c.fp,
            task_left: c.task_left,
            warps,
        }
    }

    /// Puts a saved CTA into slot `slot` (already marked live by the dispatcher); its warps
    /// resume at `t` at the earliest.
    pub fn restore_cta(
        &mut self,
        slot: usize,
        saved: SavedCta<'a>,
        t: u64,
    ) -> Result<(), DecodeError> {
        let ns = self.scheds.len();
        let mut ids = Vec::with_capacity(saved.warps.len());
        let mut barrier = 0;
        for mut w in saved.warps {
            let id = self.warps.iter().position(|x| !x.live).ok_or_else(|| {
                DecodeError(format!(
                    "SM {} has no free warp slot to restore a CTA",
                    self.id
                ))
            })?;
            let old_gen = self.warps[id].gen;
            w.gen = old_gen.wrapping_add(1);
            w.cta = slot as u16;
            w.sched = (id % ns) as u8;
            w.age = self.next_age;
            self.next_age += 1;
            w.last_issue = w.last_issue.min(t);
            w.ready = if w.ready == INF { INF } else { w.ready.max(t) };
            if w.at_barrier {
                barrier += 1;
            }
            w.compute_ready();
            w.ready = w.ready.max(t);
            self.scheds[w.sched as usize].warps.push(id as u16);
            self.warps[id] = w;
            self.sync(id as u16);
            ids.push(id as u16);
        }
        let c = &mut self.ctas[slot];
        c.block = saved.block;
        c.task_left = saved.task_left;
        c.live_warps = ids.len() as u32;
        c.at_barrier = barrier;
        c.warps = ids;
        Ok(())
    }
}

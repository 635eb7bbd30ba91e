//! The event loop of one run: a small global queue of *components'* next-event times (SMs,
//! DRAM channels, kernel launches, epochs, samples, time slices), the CTA dispatcher with
//! every placement constraint, kernel and application life cycles, controller hooks and
//! reconfiguration (`control`), CTA placement (`dispatch`) and the final statistics
//! (`finish`).
//!
//! Ordering is fixed: events pop by (time, sequence number), SMs are visited in index order,
//! kernels in arrival order. Nothing depends on hash order or threads, so a run is
//! bit-for-bit reproducible.
//!
//! Where to look: this file holds the engine's state (`Engine`, per-kernel `KRun`,
//! per-application `AppRt`), its construction (`Engine::new`), the event loop
//! (`Engine::run`: pop, step an SM, drain memory, probe); `lifecycle` the CTA and kernel
//! life cycle (`launch`, `cta_done`, `retire`, `kernel_done`), `queue` the event queue,
//! `dispatch` CTA placement, `control` controller hooks and reconfiguration, `ff`
//! fast-forward, `finish` the statistics.

use std::sync::Arc;

use crate::arch::{alone_resident_ctas, l1_split, occupancy, GpuSpec, Launch};
use crate::engine::config::{
    Action, AppSpec, AppView, Controller, DispatchOrder, Handover, Hook, Placement, RunConfig,
    RunMode, View,
};
use crate::engine::memsys::{Chain, MemSys, Step};
use crate::engine::ops::{self, Op};
use crate::engine::sm::{Res, SavedCta, Sm, StepEnv, StepOut, Storage, INF};
use crate::engine::stats::{
    rates, AppStats, Counters, KernelStats, ReconfigEvent, RunStats, Sample, SCHEMA_VERSION,
};
use crate::error::{Error, Result};
use crate::trace::KernelSource;

mod control;
mod dispatch;
mod ff;
mod finish;
mod lifecycle;
mod queue;

/// The cache line of kernel launch `k`'s logical-block counter (persistent workers): far
/// above any trace address, one line per launch.
fn counter_line(k: usize) -> u64 {
    (1 << 44) + k as u64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Sm(u32),
    Chan(u32),
    /// An SM's load/store unit may let a load held for an L1 MSHR go.
    Lsu(u32),
    Launch(u32),
    Dispatch,
    Epoch,
    Sample(u32),
    Slice,
    /// A persistent worker's exit test returned (its final atomic): SM and slot.
    Exit(u32, u32),
    /// A block without instructions completes: SM and slot.
    Empty(u32, u32),
    End,
}

struct KRun<'a> {
    app: usize,
    kidx: usize,
    pass: u32,
    src: &'a dyn KernelSource,
    ops: Arc<[Op]>,
    fp: Res,
    ctas_per_sm: u32,
    next_block: u32,
    blocks: u32,
    live: u32,
    arrival: u64,
    start: Option<u64>,
    insts0: (u64, u64),
    saved: Vec<SavedCta<'a>>,
    last_fired: bool,
    done: bool,
    /// SMs that ran a CTA of this launch (one bit each): only their L1s are flushed
    /// when it ends.
    ran_on: Vec<u64>,
}

impl KRun<'_> {
    fn has_work(&self) -> bool {
        !self.done && (self.next_block < self.blocks || !self.saved.is_empty())
    }
    /// A logical block not yet started.
    fn has_block(&self) -> bool {
        self.next_block < self.blocks
    }
}

type KernelPrep = (Arc<[Op]>, Res, u32);

struct AppRt {
    next_kernel: usize,
    pass: u32,
    krun: Option<usize>,
    done: bool,
    start: Option<u64>,
    end: Option<u64>,
    passes: u32,
    sms: Vec<bool>,
    quota: Option<Vec<u32>>,
    fraction: f64,
    workers: u32,
    kernels: Vec<KernelStats>,
}

/// One simulation.
pub struct Engine<'a, 'c> {
    spec: &'a GpuSpec,
    apps: &'a [AppSpec],
    cfg: RunConfig,
    ctl: &'c mut dyn Controller,
    sms: Vec<Sm<'a>>,
    mem: MemSys,
    ctr: Vec<Counters>,
    heap: queue::EventQueue<Ev>,
    kruns: Vec<KRun<'a>>,
    rt: Vec<AppRt>,
    /// Per application and kernel: decoded ops, CTA footprint, CTAs per SM.
    ops: Vec<Vec<KernelPrep>>,
    limits: Res,
    paused: Vec<u64>,
    context: Option<u16>,
    now: u64,
    end: u64,
    stop: bool,
    events: u64,
    rr: Vec<usize>,
    /// Where the next dispatch round starts (see `dispatch_all`), and which running
    /// kernel takes the first turn in round-robin dispatch.
    next_sm: usize,
    next_kernel: usize,
    hooks: Vec<Hook>,
    /// Applications that reached their budget and are to be halted.
    halts: Vec<usize>,
    /// Applications whose next kernel waits for a free hardware queue: at most
    /// `launch.max_concurrent_kernels` kernels run at once; the others launch in arrival
    /// order as running kernels end.
    launch_wait: std::collections::VecDeque<usize>,
    timeline: Vec<Sample>,
    /// Engine time of the next occupancy sample (`INF`: none). Samples, like
    /// fast-forward's snapshots, are probes kept outside the event queue: the queue's next
    /// event bounds how far an SM runs ahead, and a probe in it would change the run.
    next_tick: u64,
    reconfigs: Vec<ReconfigEvent>,
    pull_latency: u64,
    /// Time slicing: when the current slice ends.
    slice_end: u64,
    /// The run reached `max_cycles` (not a fixed window's end) with work left.
    capped: bool,
    /// Cycles fast-forward skipped so far: absolute time is engine time plus this (0 when
    /// fast-forward is off). Every time the run records is absolute.
    off: u64,
    ff: Option<Box<ff::FfState>>,
}

/// Runs `apps` on `spec` under `cfg`, with `ctl` called at hooks.
pub fn run(
    spec: &GpuSpec,
    apps: &[AppSpec],
    cfg: &RunConfig,
    ctl: &mut dyn Controller,
) -> Result<RunStats> {
    let mut e = Engine::new(spec, apps, cfg.clone(), ctl)?;
    e.run()?;
    if e.capped {
        return Err(e.cap_hit());
    }
    Ok(e.finish())
}

fn bad(msg: String) -> Error {
    Error::Usage(msg)
}

/// Each application's kernels prepared for the engine (decoded ops, CTA footprint, CTAs
/// per SM), and the most shared memory one SM's resident CTAs of any kernel take.
fn prepare_kernels(spec: &GpuSpec, apps: &[AppSpec]) -> Result<(Vec<Vec<KernelPrep>>, u64)> {
    let mut ops = Vec::with_capacity(apps.len());
    let mut max_smem = 0u64;
    for a in apps {
        if a.kernels.is_empty() {
            return Err(bad(format!("application {} has no kernels", a.name)));
        }
        let mut v = Vec::new();
        for k in &a.kernels {
            let info = k.info();
            if k.num_ctas() == 0 {
                // Relaunched in a budget or window run it would spin without progress.
                return Err(bad(format!(
                    "kernel {} of {} has no thread blocks; expected a grid of at least one block",
                    info.name, a.name
                )));
            }
            let o = ops::build(k.statics(), spec, &info.name)?;
            let (nregs, shmem) = match a.persistent {
                Some(p) => p.footprint(info.nregs, info.shmem),
                None => (info.nregs, info.shmem),
            };
            let occ = occupancy(spec, &Launch::new(info.threads_per_cta(), nregs, shmem))
                .map_err(|e| bad(format!("kernel {} of {}: {e}", info.name, a.name)))?;
            let fp = Res::of_cta(&occ, spec.sm.warp_size);
            max_smem = max_smem.max(occ.smem_per_cta as u64 * occ.ctas_per_sm as u64);
            v.push((Arc::from(o), fp, occ.ctas_per_sm));
        }
        ops.push(v);
    }
    Ok((ops, max_smem))
}

/// Each application's run-time state at the start, from its placement (an SM mask or
/// quota of the wrong size, a fraction outside (0, 1], a bad channel set: bad input).
fn app_runtimes(
    apps: &[AppSpec],
    placement: &Placement,
    mem: &mut MemSys,
    nsm: usize,
) -> Result<Vec<AppRt>> {
    let mut rt = Vec::with_capacity(apps.len());
    for (i, p) in placement.apps.iter().enumerate() {
        let sms = match &p.sms {
            Some(m) if m.len() != nsm => {
                return Err(bad(format!(
                    "SM mask of {} has {} entries, the GPU has {nsm} SMs",
                    apps[i].name,
                    m.len()
                )))
            }
            Some(m) => m.clone(),
            None => vec![true; nsm],
        };
        if let Some(q) = &p.cta_quota {
            if q.len() != nsm {
                return Err(bad(format!(
                    "CTA quota of {} needs {nsm} entries",
                    apps[i].name
                )));
            }
        }
        if let Some(f) = p.fraction {
            if !(f > 0.0 && f <= 1.0) {
                return Err(bad(format!(
                    "resource fraction {f} of {} is not in (0, 1]",
                    apps[i].name
                )));
            }
        }
        if let Some(ch) = &p.channels {
            mem.set_channels(i, ch.clone())
                .map_err(|e| bad(format!("{}: {e}", apps[i].name)))?;
        }
        rt.push(AppRt {
            next_kernel: 0,
            pass: 0,
            krun: None,
            done: false,
            start: None,
            end: None,
            passes: 0,
            sms,
            quota: p.cta_quota.clone(),
            fraction: p.fraction.unwrap_or(1.0),
            workers: apps[i].persistent.map(|p| p.workers_per_sm).unwrap_or(0),
            kernels: Vec::new(),
        });
    }
    Ok(rt)
}

impl<'a, 'c> Engine<'a, 'c> {
    /// A warp stream of kernel run `k` that failed to decode mid-run: bad input naming the
    /// file it is read from, the kernel and the application.
    pub(super) fn corrupt(&self, k: Option<usize>, e: crate::error::DecodeError) -> Error {
        match k.and_then(|k| self.kruns.get(k)) {
            Some(kr) => Error::input(
                kr.src.input(),
                None,
                format!(
                    "kernel {} of application {}: corrupt trace data found while simulating: {}",
                    kr.src.info().name,
                    self.apps[kr.app].name,
                    e.0
                ),
            ),
            None => bad(format!("while simulating: {e}")),
        }
    }

    fn new(
        spec: &'a GpuSpec,
        apps: &'a [AppSpec],
        cfg: RunConfig,
        ctl: &'c mut dyn Controller,
    ) -> Result<Self> {
        if apps.is_empty() {
            return Err(bad("a run needs at least one application".into()));
        }
        let n = apps.len();
        let nsm = spec.sm.count as usize;
        // The state this run will hold, estimated and checked against the memory budget
        // before anything is allocated.
        let slots = spec.sm.max_warps as u64
            * if cfg.placement.time_slicing {
                n as u64
            } else {
                1
            };
        crate::engine::footprint::check(spec, n as u64, slots)?;
        if cfg.placement.apps.len() != n {
            return Err(bad(format!(
                "placement has {} entries for {} applications",
                cfg.placement.apps.len(),
                n
            )));
        }
        if let RunMode::Budget(b) = &cfg.mode {
            if b.len() != n {
                return Err(bad(format!(
                    "{} instruction budgets for {n} applications",
                    b.len()
                )));
            }
        }
        let (ops, max_smem) = prepare_kernels(spec, apps)?;
        let split = l1_split(spec, max_smem.min(spec.sm.shared.per_sm.0))
            .map_err(|e| bad(e.to_string()))?;
        let mut mem = MemSys::new(spec, split.l1d_assoc, n);
        let rt = app_runtimes(apps, &cfg.placement, &mut mem, nsm)?;
        if cfg.placement.time_slicing {
            if let Some(a) = apps.iter().find(|a| a.persistent.is_some()) {
                return Err(bad(format!(
                    "{} is in persistent-thread form, which time slicing does not support (run it untransformed)",
                    a.name
                )));
            }
        }
        let slots = spec.sm.max_warps as usize * if cfg.placement.time_slicing { n } else { 1 };
        if slots > 256 * spec.sm.schedulers.max(1) as usize {
            return Err(bad(format!(
                "{slots} warp slots per SM ({n} time-sliced contexts) exceed the engine's limit of {} per SM",
                256 * spec.sm.schedulers.max(1)
            )));
        }
        let contiguous = cfg.placement.contiguous;
        let sms = (0..nsm)
            .map(|i| {
                let mut sm = Sm::new(i, spec, n, slots);
                if contiguous {
                    sm.storage = Some(Storage::new(
                        spec.sm.registers.per_sm,
                        spec.sm.shared.per_sm.0 as u32,
                    ));
                }
                sm
            })
            .collect();
        let limits = Res::sm_limits(spec);
        let pull_latency =
            mem.lat.l1_hit + 2 * mem.lat.noc + mem.lat.l2 + spec.l2.atomic_initiation.0;
        let end = match cfg.mode {
            RunMode::Window(w) => w.min(cfg.max_cycles),
            _ => cfg.max_cycles,
        };
        Ok(Engine {
            spec,
            apps,
            ctl,
            sms,
            mem,
            ctr: vec![Counters::default(); n],
            heap: queue::EventQueue::new(),
            kruns: Vec::new(),
            rt,
            ops,
            limits,
            paused: vec![0; n],
            context: None,
            now: 0,
            end,
            stop: false,
            events: 0,
            rr: vec![0; nsm],
            next_sm: 0,
            next_kernel: 0,
            hooks: Vec::new(),
            halts: Vec::new(),
            launch_wait: std::collections::VecDeque::new(),
            timeline: Vec::new(),
            next_tick: INF,
            reconfigs: Vec::new(),
            pull_latency,
            slice_end: 0,
            capped: false,
            off: 0,
            ff: cfg.fast_forward.map(|c| Box::new(ff::FfState::new(c))),
            cfg,
        })
    }

    #[inline]
    fn push(&mut self, t: u64, ev: Ev) {
        self.heap.push(t, ev);
    }

    fn wake_sm(&mut self, s: usize, t: u64) {
        let t = t.max(self.now);
        let sm = &mut self.sms[s];
        if t < sm.now {
            // Something earlier than the SM's clock concerns it: go back, but never into
            // cycles already simulated.
            sm.now = t.max(sm.floor);
        }
        let t = t.max(sm.now);
        if t < self.sms[s].wake {
            self.sms[s].wake = t;
            self.push(t, Ev::Sm(s as u32));
        }
    }

    fn run(&mut self) -> Result<()> {
        for (i, a) in self.apps.iter().enumerate() {
            self.push(a.arrival, Ev::Launch(i as u32));
        }
        if let Some(e) = self.ctl.epoch() {
            if e > 0 {
                self.push(e, Ev::Epoch);
            }
        }
        if self.cfg.sample_every > 0 {
            self.next_tick = 0;
        }
        if self.cfg.placement.time_slicing && self.apps.len() > 1 {
            self.context = Some(self.arrival_order()[0] as u16);
            let slice = self.slice_cycles();
            self.slice_end = slice;
            self.push(slice, Ev::Slice);
        }
        self.push(self.end, Ev::End);
        self.hooks.push(Hook::Start);
        self.run_hooks()?;
        while !self.stop {
            // Probes due before the next event are taken first, outside the queue.
            let due = self.next_tick.min(self.ff.as_ref().map_or(INF, |f| f.next));
            let Some((t, ev)) = self.heap.pop_until(due) else {
                if due == INF || self.heap.is_empty() {
                    break;
                }
                self.probe(due)?;
                if self.all_done() {
                    break;
                }
                continue;
            };
            self.now = t;
            self.events += 1;
            match ev {
                Ev::Sm(s) => {
                    let s = s as usize;
                    if self.sms[s].wake != t {
                        continue;
                    }
                    self.sms[s].wake = INF;
                    self.sms[s].now = self.sms[s].now.max(t);
                    self.step_sm(s)?;
                }
                Ev::Chan(c) => {
                    self.mem.run_channel(c as usize, t, &mut self.ctr);
                    self.drain_mem();
                }
                Ev::Lsu(sm) => {
                    self.mem.release_held(sm as usize, t, &mut self.ctr);
                    self.drain_mem();
                }
                Ev::Launch(a) => self.launch(a as usize, t)?,
                Ev::Dispatch => self.dispatch_all(t)?,
                Ev::Epoch => {
                    match self.ff.as_mut().filter(|f| !f.deferred.is_empty()) {
                        // The controller was called for this epoch inside a co-run jump.
                        Some(f) => f.pending = std::mem::take(&mut f.deferred),
                        None => self.hooks.push(Hook::Epoch),
                    }
                    if let Some(e) = self.ctl.epoch() {
                        self.push(t + e.max(1), Ev::Epoch);
                    }
                }
                Ev::Sample(id) => {
                    if let Some(f) = &mut self.ff {
                        f.samples_pending -= 1;
                    }
                    self.hooks.push(Hook::Sample { id })
                }
                Ev::Slice => {
                    // Stale when the context already changed early (its owner went idle).
                    if t >= self.slice_end {
                        self.switch_context(t)?;
                    }
                }
                Ev::Exit(sm, slot) => self.worker_exit(sm as usize, slot as usize, t)?,
                Ev::Empty(sm, slot) => self.empty_done(sm as usize, slot as usize, t)?,
                Ev::End => {
                    self.stop = true;
                    // A fixed window ends here by design; any other mode ends here only
                    // when something did not finish in `max_cycles`.
                    self.capped = !matches!(self.cfg.mode, RunMode::Window(w) if w <= self.cfg.max_cycles)
                        && !self.all_done();
                }
            }
            self.halt_finished(t)?;
            self.run_hooks()?;
            if self.all_done() {
                break;
            }
        }
        self.now = self.now.min(self.end);
        Ok(())
    }

    /// Takes the probe due at `due`, before the queue's next event: an occupancy sample,
    /// else a fast-forward snapshot (and its jump). SMs may have run a little past `due`
    /// (the next event bounds how far).
    fn probe(&mut self, due: u64) -> Result<()> {
        self.now = self.now.max(due);
        if self.next_tick == due {
            self.sample(due);
            self.next_tick = due + self.cfg.sample_every;
            return Ok(());
        }
        self.ff_window(due)?;
        self.halt_finished(due)?;
        self.run_hooks()
    }

    /// Budget mode: applications that reached their budget stop now; their CTAs are
    /// dropped (no context is kept) and their resources go to the others.
    fn halt_finished(&mut self, t: u64) -> Result<()> {
        if self.halts.is_empty() {
            return Ok(());
        }
        for app in std::mem::take(&mut self.halts) {
            for s in 0..self.sms.len() {
                let slots: Vec<usize> = (0..self.sms[s].ctas.len())
                    .filter(|&c| {
                        self.sms[s].ctas[c].live && self.sms[s].ctas[c].app as usize == app
                    })
                    .collect();
                for slot in slots {
                    let k = self.sms[s].ctas[slot].krun as usize;
                    let t_sm = t.max(self.sms[s].now);
                    drop(self.sms[s].save_cta(slot, t_sm));
                    self.kruns[k].live -= 1;
                    self.release(s, slot);
                }
            }
            if let Some(k) = self.rt[app].krun {
                let kr = &mut self.kruns[k];
                kr.saved.clear();
                kr.next_block = kr.blocks;
                if kr.live == 0 {
                    self.kernel_done(k, t)?;
                }
            }
        }
        self.yield_idle_context(t)?;
        self.dispatch_all(t)
    }

    /// The error of a run that reached its cycle cap: which applications were still
    /// running, and how far each had got.
    fn cap_hit(&self) -> Error {
        let left: Vec<String> = (0..self.apps.len())
            .filter(|&a| !self.rt[a].done)
            .map(|a| {
                let got = self.ctr[a].warp_insts;
                let of = match &self.cfg.mode {
                    RunMode::Budget(b) => format!(" of a budget of {}", b[a]),
                    _ => String::new(),
                };
                format!(
                    "{} ({got} warp instructions{of}, {} kernel launches finished)",
                    self.apps[a].name,
                    self.rt[a].kernels.len()
                )
            })
            .collect();
        Error::CapHit(format!(
            "the run reached its cycle cap of {} cycles with {} still running: {}",
            self.cfg.max_cycles,
            if left.len() == 1 {
                "an application"
            } else {
                "applications"
            },
            left.join(", ")
        ))
    }

    fn all_done(&self) -> bool {
        match self.cfg.mode {
            RunMode::Window(_) => false,
            _ => self.rt.iter().all(|r| r.done),
        }
    }

    fn step_sm(&mut self, s: usize) -> Result<()> {
        loop {
            let top = self.heap.peek_time().unwrap_or(INF);
            let env = StepEnv {
                top,
                data_horizon: top.saturating_add(self.mem.lat.noc.max(1)),
                end: self.end,
                policy: self.spec.sm.scheduler,
                shared_latency: self.spec.sm.shared.latency.0,
                banks: self.spec.sm.shared.banks,
                paused: &self.paused,
                context: self.context,
                restricted: self.context.is_some() || self.paused.iter().any(|&p| p > self.now),
            };
            let out = self.sms[s]
                .step(&env, &mut self.mem, &mut self.ctr)
                .map_err(|e| {
                    let k = self.sms[s].fault.map(|k| k as usize);
                    self.corrupt(k, e)
                })?;
            self.drain_mem();
            self.check_budgets(self.sms[s].now);
            match out {
                StepOut::Yield(t) => {
                    if t < self.end {
                        self.wake_sm(s, t);
                    }
                    return Ok(());
                }
                StepOut::Sleep => return Ok(()),
                StepOut::CtaDone { cta, t } => {
                    self.cta_done(s, cta as usize, t)?;
                    if !self.heap.is_empty() && self.sms[s].wake != INF {
                        // A dispatch scheduled a wake; continue from there.
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Hands memory-system results to the SMs and schedules channel events.
    fn drain_mem(&mut self) {
        // The buffers are emptied in place, keeping their capacity (no allocation per
        // drain).
        for &(t, c) in &self.mem.chan_events {
            self.heap.push(t, Ev::Chan(c));
        }
        self.mem.chan_events.clear();
        for &(t, sm) in &self.mem.lsu_events {
            self.heap.push(t, Ev::Lsu(sm));
        }
        self.mem.lsu_events.clear();
        if self.mem.resolved.is_empty() {
            return;
        }
        // (Resolving a load pushes nothing to `resolved`.)
        for i in 0..self.mem.resolved.len() {
            let (r, t) = self.mem.resolved[i];
            if let Some(ready) = self.sms[r.sm as usize].resolve(r, t) {
                self.wake_sm(r.sm as usize, ready);
            }
        }
        self.mem.resolved.clear();
    }

    fn check_budgets(&mut self, t: u64) {
        if let RunMode::Budget(b) = &self.cfg.mode {
            for (i, r) in self.rt.iter_mut().enumerate() {
                if !r.done && self.ctr[i].warp_insts >= b[i] {
                    r.done = true;
                    r.end = Some(t + self.off);
                    self.halts.push(i);
                }
            }
        }
    }
}

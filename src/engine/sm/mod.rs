//! One streaming multiprocessor: resident CTAs and warps of any number of kernels, the warp
//! schedulers (GTO or LRR) sharing their issue slots among all of them, the functional-unit
//! pipelines with their initiation intervals, and a register scoreboard per warp.
//!
//! The SM advances in its own time: it visits only cycles in which some warp can issue and
//! jumps over stall gaps arithmetically (the next time any warp's operands, pipeline and
//! context are ready). Memory beyond the L1 and CTA completion touch state shared with
//! other SMs, so those are issued only in global time order: the SM may run ahead of the
//! global clock by at most [`QUANTUM`] cycles while it issues SM-local work; while it waits
//! for DRAM data whose arrival time is not yet known, only as far as that data cannot
//! arrive (`StepEnv::data_horizon`).
//!
//! Here: the SM, CTA start (its warp slots: `free_warp_block`), the cycle loop (`step`)
//! and instruction issue (global memory instructions in `global`, `issue_global`: coalescing, L1
//! banks, then `MemSys`). Warp state is in `warp` (moving a warp to its next instruction,
//! with the lookahead of instructions without addresses: `Warp::advance`; the aligned
//! warp-slot block rule, `first_free_block`), the schedulers in `sched`, the operand collector in
//! `collector`, context save/restore in `context`.

use std::sync::Arc;

use crate::arch::SchedPolicy;
use crate::engine::memsys::{Atomic, LoadRef, MemSys};
use crate::engine::ops::{bank_degree, Op, OpClass, NONE, NREG};
use crate::engine::stats::Counters;
use crate::error::DecodeError;
use crate::trace::KernelSource;

mod collector;
mod context;
mod global;
mod sched;
mod storage;
mod warp;
mod wheel;

use collector::{Collector, Dispatched, PendingMem};
pub use context::SavedCta;
use sched::{Hot, Pool, Sched};
pub use storage::{Offsets, Storage};
pub use warp::{Cta, Res};
use warp::{PendingLoad, Warp};
use wheel::Wheel;

pub const INF: u64 = u64::MAX;
/// Pending loads with unknown data time per warp (at most 8: a warp keeps them in a byte
/// of occupancy bits).
pub const MAX_LOADS: usize = 8;
const _: () = assert!(MAX_LOADS <= 8);
/// How far an SM may run ahead of the global clock on SM-local work.
pub const QUANTUM: u64 = 128;

/// Stall reasons (indices into the stall stack).
pub const R_SHORT: u8 = 0;
pub const R_MEM: u8 = 1;
pub const R_UNIT: u8 = 2;
pub const R_BARRIER: u8 = 3;
pub const R_IDLE: u8 = 4;

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
    /// Data of a load still waiting on DRAM cannot arrive before this: it is resolved by an
    /// event at `top` or later and then crosses the reply network (`top` + the network's
    /// latency). Until then pending loads cannot change which warps issue, so the SM may
    /// run ahead on SM-local work.
    pub data_horizon: u64,
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
    /// The kernel run whose warp stream failed to decode, for the engine's error.
    pub fault: Option<u32>,
    resume: usize,
    warps: Vec<Warp<'a>>,
    pub ctas: Vec<Cta>,
    scheds: Vec<Sched>,
    /// Per pipeline: the time it is next free. A pool's pipes are interchangeable, so only
    /// the multiset of their times matters: each pool keeps its times in ascending order
    /// as a ring (see [`Pool`]).
    pipe_free: Vec<u64>,
    /// Per pool of interchangeable pipelines (a unit kind's pipes that the same schedulers
    /// use): where its pipes' times lie in `pipe_free`.
    pools: Vec<Pool>,
    /// Per pool: the earliest free time of its pipes (INF without pipes), kept up to date
    /// by `take_pipe`. One entry per possible pool index, so that the scan reads it without
    /// a bounds check.
    pool_free: Box<[u64; 256]>,
    /// Per scheduler, per unit kind: its pool.
    pool_of: Vec<[u8; 16]>,
    /// Per pool: the schedulers that issue into it (bit = scheduler; at most 16).
    pool_scheds: Vec<u32>,
    /// Per warp slot: its scheduler (slot % schedulers), which holds the slot's scan entry,
    /// and its index there (slot / schedulers).
    place: Box<[(u8, u16)]>,
    /// Pending loads with unknown data time.
    pub unknown: u32,
    pub used: Res,
    pub app_used: Vec<Res>,
    /// Warp instructions issued here per application (per-SM sampling, Warped-Slicer).
    pub app_insts: Vec<u64>,
    /// Contiguous register/shared-memory allocation (FCFS placement); `None`: resources
    /// are fungible counts.
    pub storage: Option<Storage>,
    /// Time of this SM's wake event in the global queue (INF: none).
    pub wake: u64,
    pub blocked_until: u64,
    /// Cycles before this have been simulated: the SM's clock may be moved back to here
    /// (not further) when an earlier event concerns it.
    pub floor: u64,
    next_age: u64,
    lines: Vec<(u64, u8, u32)>,
    /// Scratch: per line of an atomic, the lane operations its slice serialises.
    serial: Vec<u32>,
    /// Per line of the store being issued: the sectors it writes only in part (filled only
    /// when the L2 fetches such sectors).
    partial: Vec<u8>,
    pub idle: u64,
    /// Instructions one warp may issue in a cycle (`sm.issue_width`), and whether those
    /// issued together must go to different units (`sm.issue_different_units_only`).
    issue_width: u32,
    dual_different_units: bool,
    /// `sm.rotate_issue_priority`: scheduler `t mod schedulers` issues first in cycle `t`.
    rotate_issue: bool,
    /// The operand collector (`sm.operand_collector`), when the model simulates it, and
    /// its scratch lists (dispatches decided, instruction registers emptied).
    oc: Option<Box<Collector>>,
    oc_out: Vec<Dispatched>,
    oc_freed: Vec<(u8, u64)>,
    /// `sm.operand_collector.memory`: memory instructions pass the collector. The ones
    /// in it, by the tag the collector holds (with the free tags), wait there for the
    /// load/store unit: their access runs when it takes them.
    oc_mem: bool,
    oc_pending: Vec<Option<PendingMem>>,
    oc_pending_free: Vec<u16>,
    /// `sm.exit_waits_for_stores`.
    store_acks: bool,
    /// `sm.cta_warp_blocks`.
    warp_blocks: bool,
}

/// Bytes one SM of `warp_slots` warp slots, `schedulers` schedulers and `cta_slots` CTA
/// slots holds at most once its warps have run (each warp's register scoreboard is
/// allocated at its first CTA, as many entries as the kernel names registers: at most
/// [`NREG`]): `(warp state, scheduler state, CTA slots)`, for the memory estimate made
/// before an engine is built.
pub fn state_bytes(warp_slots: u64, schedulers: u64, cta_slots: u64) -> (u64, u64, u64) {
    use std::mem::size_of;
    let warp = (size_of::<Warp>() + NREG * 8 + size_of::<(u8, u16)>()) as u64;
    // A scheduler's scan entries and its timing wheel (a ring of slots of warp bits).
    let sched = (size_of::<Sched>() + size_of::<[Hot; 256]>()) as u64 + wheel::RING_BYTES;
    let cta = (size_of::<Cta>() + 2 * 64) as u64;
    (warp_slots * warp, schedulers * sched, cta_slots * cta)
}

/// Bytes of one SM's operand collector with `register_banks` banks (its write-back
/// rings; the rest is small), for the memory estimate.
pub fn collector_bytes(register_banks: u64) -> u64 {
    register_banks * (collector::WR_WORDS * std::mem::size_of::<(u64, u64)>()) as u64
}

/// A shared-memory access of warp `w` (its current instruction, `op`) at `t`: its
/// destinations are ready after the shared latency and its bank conflicts; returns the
/// cycles it holds the unit (the conflict degree).
fn shared_access(w: &mut Warp, op: &Op, t: u64, env: &StepEnv) -> u64 {
    let deg = bank_degree(w.inst.addrs(), w.inst.stride, op.width, env.banks) as u64;
    let ready = t + env.shared_latency + deg - 1;
    for &d in &op.dsts[..op.ndst as usize] {
        w.set_reg(d, ready, false);
    }
    deg
}

/// A pool's index in `Sm::pool_of` (9 unit kinds × schedulers: far below 256).
fn pool_index(i: usize) -> u8 {
    u8::try_from(i).expect("at most 256 pipeline pools per SM")
}

impl<'a> Sm<'a> {
    pub fn new(id: usize, spec: &crate::arch::GpuSpec, apps: usize, warp_slots: usize) -> Self {
        let s = spec.sm.schedulers.max(1) as usize;
        // Pool 0 has no pipes (unit kinds a model lacks); a unit kind's pipes form one pool
        // shared by all schedulers, or one per scheduler on sub-core models.
        let mut pipe_free = Vec::new();
        let mut pools = vec![Pool::new(0, 0)];
        let mut pool_of = vec![[0u8; 16]; s];
        let oc_mem = spec.sm.operand_collector.as_ref().is_some_and(|c| c.memory);
        let mut mem_pools = Vec::new();
        for k in crate::arch::UnitKind::ALL {
            let n = spec.units.get(k).count as usize;
            if n == 0 {
                continue;
            }
            if oc_mem && k == crate::arch::UnitKind::Mem {
                // Memory instructions in the collector: each scheduler has its own
                // instruction register and collector units for them (one pool each, on
                // sub-core models), and every pool shares the load/store units' pipes.
                let first = pipe_free.len();
                let per_sched = spec.sm.sub_cores;
                for r in pool_of.iter_mut() {
                    if per_sched || mem_pools.is_empty() {
                        mem_pools.push(pool_index(pools.len()));
                        pools.push(Pool::new(first, n.min(2)));
                    }
                    r[k as usize] = *mem_pools.last().expect("pushed above");
                }
                pipe_free.extend(std::iter::repeat_n(0, n.min(2)));
                continue;
            }
            if spec.sm.sub_cores && n.is_multiple_of(s) {
                let per = n / s;
                for r in pool_of.iter_mut() {
                    r[k as usize] = pool_index(pools.len());
                    pools.push(Pool::new(pipe_free.len(), per));
                    pipe_free.extend(std::iter::repeat_n(0, per));
                }
            } else {
                for r in pool_of.iter_mut() {
                    r[k as usize] = pool_index(pools.len());
                }
                pools.push(Pool::new(pipe_free.len(), n));
                pipe_free.extend(std::iter::repeat_n(0, n));
            }
        }
        let mut pool_scheds = vec![0u32; pools.len()];
        for (sc, r) in pool_of.iter().enumerate() {
            for &p in r {
                pool_scheds[p as usize] |= 1 << sc;
            }
        }
        let mut pool_free = Box::new([INF; 256]);
        for (f, p) in pool_free.iter_mut().zip(&pools) {
            *f = if p.count == 0 { INF } else { 0 };
        }
        let oc = spec.sm.operand_collector.as_ref().map(|c| {
            // Each pool's collector group: its scheduler's on sub-core models, where
            // pools are per scheduler; otherwise one group for the SM, whose pools all
            // schedulers share (pool 0 has no pipes).
            let groups = if spec.sm.sub_cores { s } else { 1 };
            let mut group_of = vec![0; pools.len()];
            let mut rank_of = vec![0; pools.len()];
            for (sc, r) in pool_of.iter().enumerate() {
                for (kind, &p) in r.iter().enumerate().take(collector::RANK.len()) {
                    group_of[p as usize] = if spec.sm.sub_cores { sc } else { 0 };
                    rank_of[p as usize] = collector::RANK[kind];
                }
            }
            Box::new(Collector::new(
                c,
                spec.sm.pipeline_latency.0 as u32,
                groups,
                group_of,
                rank_of,
                mem_pools.clone(),
            ))
        });
        Sm {
            oc,
            store_acks: spec.sm.exit_waits_for_stores,
            warp_blocks: spec.sm.cta_warp_blocks,
            oc_out: Vec::new(),
            oc_freed: Vec::new(),
            oc_mem,
            oc_pending: Vec::new(),
            oc_pending_free: Vec::new(),
            id,
            now: 0,
            fault: None,
            resume: 0,
            warps: (0..warp_slots).map(|_| Warp::new()).collect(),
            ctas: vec![Cta::default(); spec.sm.max_ctas as usize * apps.max(1)],
            scheds: (0..s)
                .map(|_| Sched {
                    hot: Box::new([Hot::default(); 256]),
                    min: 0,
                    ready: [0; 4],
                    words: warp_slots.div_ceil(s).div_ceil(64),
                    later: Wheel::new(warp_slots.div_ceil(s)),
                    why: (R_IDLE, NONE),
                    warps: Vec::new(),
                    rr: 0,
                    greedy: NONE,
                    stall: None,
                })
                .collect(),
            pipe_free,
            pools,
            pool_free,
            pool_of,
            pool_scheds,
            place: (0..warp_slots)
                .map(|i| ((i % s) as u8, (i / s) as u16))
                .collect(),
            unknown: 0,
            used: Res::default(),
            app_used: vec![Res::default(); apps],
            app_insts: vec![0; apps],
            storage: None,
            wake: INF,
            blocked_until: 0,
            floor: 0,
            next_age: 0,
            lines: Vec::with_capacity(64),
            serial: Vec::new(),
            partial: Vec::new(),
            idle: 0,
            issue_width: spec.sm.issue_width.max(1),
            dual_different_units: spec.sm.issue_different_units_only,
            rotate_issue: spec.sm.rotate_issue_priority,
        }
    }

    pub fn free_cta_slot(&self) -> Option<usize> {
        self.ctas.iter().position(|c| !c.live)
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
    ) -> Result<u32, DecodeError> {
        self.start_block_from(slot, block, src, ops, t, 0)
            .map(|(live, _)| live)
    }

    /// [`Sm::start_block`], with every warp starting `skip_ppm` millionths of the way into
    /// its stream (fast-forward's ageing: the skipped prefix is retired analytically).
    /// All warps pass the same number of barriers in their prefixes (that of warp 0's) and
    /// stop before the next one, and every warp keeps at least its last instruction.
    /// Returns the live warps and the warp instructions skipped.
    pub fn start_block_from(
        &mut self,
        slot: usize,
        block: u32,
        src: &'a dyn KernelSource,
        ops: &Arc<[Op]>,
        t: u64,
        skip_ppm: u32,
    ) -> Result<(u32, u64), DecodeError> {
        let barriers = if skip_ppm > 0 && src.cta(block).warps > 0 {
            let want = prefix_len(src.warp_len(block, 0), skip_ppm);
            let mut s = src.warp(block, 0);
            let mut d = crate::trace::DynInst::default();
            let mut n = 0u32;
            for _ in 0..want {
                if !s.next_inst(&mut d)? {
                    break;
                }
                if ops.get(d.sidx as usize).map(|o| o.class) == Some(OpClass::Barrier) {
                    n += 1;
                }
            }
            n
        } else {
            0
        };
        let mut skipped = 0u64;
        let nw = src.cta(block).warps;
        let mut ids = std::mem::take(&mut self.ctas[slot].warps);
        // Reuse the slot's warps (persistent workers) or take free ones. A warp of the
        // slot's last block that finished early may have been taken by a CTA placed since:
        // only the slot's warps still free are reused.
        ids.retain(|&i| !self.warps[i as usize].live);
        if self.warp_blocks {
            if let Some(b) = self.free_warp_block(nw as usize, slot) {
                ids.clear();
                ids.extend((b..b + nw as usize).map(|i| i as u16));
            }
        }
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
            // (Entries past the kernel's `sb_len`, left by an earlier kernel, are never
            // read: its ops name none of them.)
            let sb = ops.first().map_or(0, |o| o.sb_len as usize);
            if w.regs.len() < sb {
                w.regs = vec![0u64; sb].into_boxed_slice();
            } else {
                w.regs[..sb].fill(0);
            }
            w.mem_regs = [0; 6];
            w.clear_loads();
            w.at_barrier = false;
            w.last_issue = t.saturating_sub(1);
            w.loads_done = 0;
            w.issued = 0;
            w.age = self.next_age;
            self.next_age += 1;
            let mut s = src.warp(block, wi as u32);
            (w.ahead_i, w.ahead_n) = (0, 0);
            let mut more = s.next_inst(&mut w.inst)?;
            if skip_ppm > 0 && more {
                let len = src.warp_len(block, wi as u32);
                let want = prefix_len(len, skip_ppm);
                let (mut n, mut passed) = (0u64, 0u32);
                while more && n + 1 < len {
                    let bar =
                        ops.get(w.inst.sidx as usize).map(|o| o.class) == Some(OpClass::Barrier);
                    if passed == barriers && (n >= want || bar) {
                        break;
                    }
                    passed += bar as u32;
                    n += 1;
                    more = s.next_inst(&mut w.inst)?;
                }
                skipped += n;
            }
            if more {
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
        c.start = t;
        c.prefixed = skip_ppm > 0;
        c.swapped = false;
        c.warps = ids;
        c.live_warps = live;
        c.at_barrier = 0;
        Ok((live, skipped))
    }

    /// The first aligned block of `n` warp slots that no running CTA but `slot`'s holds
    /// (`sm.cta_warp_blocks`), if any.
    fn free_warp_block(&self, n: usize, slot: usize) -> Option<usize> {
        let len = self.warps.len();
        let mut held = vec![false; len];
        for (i, c) in self.ctas.iter().enumerate() {
            if i != slot && c.live {
                for &w in &c.warps {
                    held[w as usize] = true;
                }
            }
        }
        for (h, w) in held.iter_mut().zip(&self.warps) {
            *h |= w.live;
        }
        warp::first_free_block(&held, n)
    }

    /// Warp instructions the block in CTA slot `slot` has issued since it started (its
    /// warps still on that slot; an aged start's skipped prefix left out).
    pub fn cta_issued(&self, slot: usize) -> u64 {
        self.ctas[slot]
            .warps
            .iter()
            .map(|&i| &self.warps[i as usize])
            .filter(|w| w.cta as usize == slot)
            .map(|w| w.issued as u64)
            .sum()
    }

    fn finish_warp(&mut self, id: u16) {
        let w = &mut self.warps[id as usize];
        if !w.live {
            return;
        }
        w.live = false;
        w.stream = None;
        self.unknown -= w.load_bits.count_ones();
        w.clear_loads();
        let s = &mut self.scheds[w.sched as usize];
        if let Some(p) = s.warps.iter().position(|&x| x == id) {
            s.warps.remove(p);
        }
        if s.greedy == self.place[id as usize].1 {
            s.greedy = NONE;
        }
        self.sync(id);
    }

    /// A load's data arrives at `t`; returns when the warp can next issue, if that is known.
    pub fn resolve(&mut self, r: LoadRef, t: u64) -> Option<u64> {
        let w = &mut self.warps[r.warp as usize];
        if !w.live || w.gen != r.gen {
            return None;
        }
        let p = w.loads[r.slot as usize].as_mut()?;
        // The run-ahead bound (`StepEnv::data_horizon`): a live load's data never lands in
        // cycles this SM has already simulated. (Loads of dropped CTAs may; they are gone.)
        debug_assert!(
            t >= self.floor,
            "SM {}: load data at {t} < floor {}",
            self.id,
            self.floor
        );
        p.outstanding -= 1;
        p.ready = p.ready.max(t);
        if p.outstanding > 0 {
            return None;
        }
        let p = w.take_load(r.slot as usize).unwrap();

        for &d in &p.dsts[..p.ndst as usize] {
            w.set_reg(d, p.ready, true);
        }
        w.loads_done = w.loads_done.max(p.ready);
        self.unknown -= 1;
        w.compute_ready();
        let ready = w.ready;
        self.sync(r.warp);
        (ready != INF).then_some(ready)
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
            if t > env.top.saturating_add(QUANTUM) || (t >= env.data_horizon && self.unknown > 0) {
                return Ok(StepOut::Yield(t));
            }
            if self.oc.is_some() {
                // A memory instruction the load/store unit may take runs its access: not
                // ahead of the global clock.
                if self.oc_pending.len() > self.oc_pending_free.len() && t > env.top {
                    return Ok(StepOut::Yield(t));
                }
                self.oc_advance(t, env, mem, ctr);
            }
            let mut issued = false;
            let ns = self.scheds.len();
            // Scheduler `first` issues first in this cycle (`sm.rotate_issue_priority`);
            // `k` counts the schedulers visited.
            let first = if self.rotate_issue {
                t as usize % ns
            } else {
                0
            };
            let mut k = self.resume;
            while k < ns {
                // (`first + k` is below `2 ns`: a subtraction, not a division, per visit.)
                let s = if first + k >= ns {
                    first + k - ns
                } else {
                    first + k
                };
                let skip = self.scheds[s].min > t;
                let picked = if skip { None } else { self.pick(s, t, env) };
                let Some(local) = picked else {
                    let sc = &mut self.scheds[s];
                    if sc.stall.is_none() {
                        sc.stall = Some((t, sc.why.0, sc.why.1));
                    }
                    k += 1;
                    continue;
                };
                let id = (local as usize * ns + s) as u16;
                // The warp's scan entry holds the pool of the instruction it issues.
                let h = self.scheds[s].hot[local as usize % 256];
                if h.global && t > env.top {
                    self.resume = k;
                    self.floor = t;
                    return Ok(StepOut::Yield(t));
                }
                self.close_stall(s, t, ctr);
                issued = true;
                let mut done = self.issue(id, h.pool, t, env, mem, ctr)?;
                // Dual issue: the same warp's next instructions in the same cycle, while
                // each is ready, its pipe is free and (if required) its unit differs.
                let mut pipes = [h.pool, 0, 0, 0];
                let mut n = 1;
                while done.is_none() && n < self.issue_width.min(4) as usize {
                    let Some(pool) = self.co_issue(id, local, s, t, env, &pipes[..n]) else {
                        break;
                    };
                    done = self.issue(id, pool, t, env, mem, ctr)?;
                    pipes[n] = pool;
                    n += 1;
                }
                let sc = &mut self.scheds[s];
                sc.greedy = local;
                if env.policy == SchedPolicy::Lrr {
                    sc.rr = (local as usize + 1) % 256;
                }
                if let Some(cta) = done {
                    self.resume = k + 1;
                    self.floor = t;
                    return Ok(StepOut::CtaDone { cta, t });
                }
                k += 1;
            }
            self.resume = 0;
            self.floor = t + 1;
            if issued {
                self.now = t + 1;
                continue;
            }
            let next = self.next_time().min(self.oc_next());
            if next == INF {
                self.now = t + 1;
                return Ok(StepOut::Sleep);
            }
            self.now = next.max(t + 1);
        }
    }

    /// Whether warp `id` (local index `local` of scheduler `s`), having issued at `t` to
    /// the pools in `issued`, may issue its next instruction in the same cycle, and to
    /// which pool: its operands ready by `t`, its pipe free, not blocked, not touching
    /// shared state ahead of the global clock, and, with `issue_different_units_only`,
    /// to a unit not used yet this cycle.
    fn co_issue(
        &self,
        id: u16,
        local: u16,
        s: usize,
        t: u64,
        env: &StepEnv,
        issued: &[u8],
    ) -> Option<u8> {
        let h = &self.scheds[s].hot[local as usize % 256];
        let w = &self.warps[id as usize];
        if !h.active || h.blocked || (h.global && t > env.top) {
            return None;
        }
        if self.dual_different_units && issued.contains(&h.pool) {
            return None;
        }
        let mut c = w.ready_after(t).0.max(self.pool_free[h.pool as usize]);
        if env.restricted {
            if env.context.is_some_and(|x| x != h.app) {
                return None;
            }
            if let Some(&p) = env.paused.get(h.app as usize) {
                c = c.max(p);
            }
        }
        (c <= t).then_some(h.pool)
    }

    /// Issues the next instruction of warp `id`, which needs a pipe of pool `pool`, at `t`.
    /// Returns the CTA slot if this completed its CTA.
    fn issue(
        &mut self,
        id: u16,
        pool: u8,
        t: u64,
        env: &StepEnv,
        mem: &mut MemSys,
        ctr: &mut [Counters],
    ) -> Result<Option<u16>, DecodeError> {
        let w = &mut self.warps[id as usize];
        let op = *w.op();
        // Arithmetic passes the operand collector, when simulated: its destinations wait
        // for the dispatch it decides, and the scheduler for its instruction register.
        // (The option first: off in every bundled model, it spares the class test.)
        let collect_mem = self.oc_mem
            && matches!(
                op.class,
                OpClass::Load
                    | OpClass::Store
                    | OpClass::Atomic
                    | OpClass::Reduce
                    | OpClass::SharedLoad
                    | OpClass::SharedStore
            );
        let collect = (op.class == OpClass::Alu && self.oc.is_some()) || collect_mem;

        let app = w.app as usize;
        self.app_insts[app] += 1;
        let c = &mut ctr[app];
        c.warp_insts += 1;
        let lanes = w.active_lanes() as u64;
        c.thread_insts += lanes;
        c.sp_flops += op.flops as u64 * lanes;
        w.last_issue = t;
        let mut occ = 1u64;
        let mut held = 0u64;
        let mut tag = NONE;
        match op.class {
            // (Arithmetic first: `collect_mem` holds only for load/store-unit classes, so
            // its guard is tested for those alone.)
            OpClass::Alu | OpClass::Fixed => {
                let ready = if collect { INF } else { t + op.lat as u64 };
                for &d in &op.dsts[..op.ndst as usize] {
                    w.set_reg(d, ready, false);
                }
            }
            _ if collect_mem => tag = self.defer_mem(id, &op),
            OpClass::SharedLoad | OpClass::SharedStore => occ = shared_access(w, &op, t, env),
            OpClass::Load | OpClass::Store | OpClass::Atomic | OpClass::Reduce => {
                (occ, held) = self.issue_global(id, &op, t, mem, ctr);
            }
            OpClass::Barrier => {
                w.at_barrier = true;
                let cta = w.cta as usize;
                self.ctas[cta].at_barrier += 1;
            }
            OpClass::Exit => {}
        }
        if !collect_mem {
            ctr[app].unit_busy[op.unit as usize] += op.init as u64 * occ;
        }
        if collect {
            let gen = self.warps[id as usize].gen;
            if let Some(oc) = self.oc.as_deref_mut() {
                oc.issue(id, gen, pool, &op, t, tag);
            }
            // The scheduler waits for the instruction register, not the unit.
            self.pool_free[pool as usize] = INF;
        } else {
            self.take_pipe(pool, (t + op.init as u64 * occ).max(held));
        }
        let w = &mut self.warps[id as usize];
        let cta = w.cta as usize;
        w.issued = w.issued.wrapping_add(1);
        // A warp ends with its stream. A predicated EXIT in the middle (some lanes leave,
        // the others go on, as traces of bounds-checked kernels show) does not end it.
        let more = match w.advance() {
            Ok(m) => m,
            Err(e) => {
                self.fault = Some(w.krun);
                return Err(e);
            }
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

/// Instructions in the first `ppm` millionths of a stream of `len`.
fn prefix_len(len: u64, ppm: u32) -> u64 {
    (len as u128 * ppm as u128 / 1_000_000) as u64
}

/// [`MemSys::atomic`] of one line of an atomic or reduction, kept out of line: atomics are
/// rare on the issue path.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn atomic_access(
    mem: &mut MemSys,
    sm: usize,
    app: usize,
    line: u64,
    sect: u8,
    atomic: Atomic,
    t: u64,
    w: Option<LoadRef>,
    ctr: &mut Counters,
) -> Option<u64> {
    mem.atomic(sm, app, line, sect, atomic, t, w, ctr)
}

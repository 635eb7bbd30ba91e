//! The operand collector of an SM (`sm.operand_collector`): the stages between a
//! scheduler issuing an arithmetic instruction and its unit accepting it, as GPGPU-Sim
//! models them.
//!
//! Per scheduler and unit kind there is one instruction register (GPGPU-Sim's ID_OC) and
//! one dispatch register (OC_EX); per *group* a few collector units, shared by all unit
//! kinds, and a few register banks. A group is a scheduler on sub-core SMs (GPGPU-Sim's
//! `-gpgpu_sub_core_model 1`) and the whole SM otherwise, where a unit kind's pipes, and so
//! its instruction and dispatch registers, are shared by the schedulers (an approximation:
//! GPGPU-Sim gives each scheduler a slot in them). Time runs in *steps*, `port_throughput` per cycle: in
//! each step, in this order, (1) each unit kind whose dispatch register is empty takes the
//! collected instruction of the **lowest-numbered** collector unit that holds one (a fixed
//! priority, as GPGPU-Sim's dispatch scan has within a sub-core: under a steady supply the
//! higher unit can wait for a long time, and its warp with it), (2) each bank serves one
//! read, (3) unit kind by unit kind in GPGPU-Sim's port order ([`RANK`]), the oldest
//! waiting instruction of the kind moves to the lowest free collector unit of its group —
//! and if its group has none, that kind moves nothing more in this step, in any group
//! ("oldest" is issue order; within a cycle, the order the schedulers issued in, which
//! rotates with `sm.rotate_issue_priority`). Reads start the step after allocation, and
//! an instruction is dispatchable the step after its last read (the step after its
//! allocation if it reads nothing); two sources in one bank take
//! turns (warp `w`'s register `r` is in bank `(r + 1 + w) mod banks-per-scheduler`, each
//! distinct source read once). A dispatched instruction's result is written back into the
//! bank of its destination register two cycles after its unit's latency from the unit
//! taking it (GPGPU-Sim: to EX_WB, then `writeback`; with `sm.pipeline_latency = 5` the
//! cycle a dependent instruction may issue, whatever the fitted value): the write holds that bank
//! for the cycle's first step (GPGPU-Sim's `writeback` runs before the cycle's collector
//! steps and has priority over reads), and a second write to the bank in that cycle is
//! dropped, as GPGPU-Sim ignores its failed `writeback`. Loads' write-backs are not booked
//! (memory instructions do not pass the collector here). The unit accepts a dispatched
//! instruction at the next cycle
//! at the earliest, when a pipe is free; the scheduler may issue the next instruction of a
//! kind in the cycle its instruction register empties. Uncontended: issue at `t`, accepted
//! at `t + 3`, the result usable `pipeline_latency - 3` cycles after the unit's latency.
//!
//! The collector is event driven, like the rest of the SM: an instruction waiting in it
//! leaves its destination registers unknown (`INF`) until its dispatch is decided, and
//! [`Sm::oc_advance`] decides everything up to the SM's current cycle before it issues.
//! Decisions at a step depend only on instructions issued in earlier cycles, so they can
//! be made once the SM's clock reaches that step's cycle. Only steps that can do something
//! are run: a dispatch, or an allocation by a kind whose oldest waiting instruction has a
//! free unit in its group (a younger one of the kind never allocates past it). The SM
//! still wakes at the steps a looser test finds, as before, so results are unchanged.

use super::{Counters, MemSys, Op, Sm, StepEnv, INF};
use crate::engine::ops::NONE;

mod memory;
pub(in crate::engine::sm) use memory::PendingMem;

/// Steps ahead that a write-back can be booked (a multiple of 64; with
/// `sm.operand_collector.write_back_conflicts`): results ready farther ahead than this (no
/// unit of any bundled model is that slow) take no bank step.
pub(super) const WR_RING: usize = 256;
/// Words of one bank's write-back ring: a bit per step, in blocks of 64 steps, each word
/// tagged with the block it holds. The [`WR_RING`] steps from the one being run span at
/// most `WR_RING / 64 + 1` blocks, which this many words keep apart.
pub(super) const WR_WORDS: usize = 2 * WR_RING / 64;

/// Unit kinds in GPGPU-Sim's allocation order (its input ports list the instruction
/// registers SP, SFU, MEM, tensor, DP, INT, then the specialised units), by `UnitKind`
/// index: int, fp32, fp64, sfu, tensor, branch, tex, uniform, mem.
pub(super) const RANK: [u8; 9] = [5, 0, 4, 1, 3, 6, 7, 8, 2];
/// Cycles from issue to the unit when nothing waits (issue, collect, dispatch): part of
/// `sm.pipeline_latency`.
pub(super) const STAGES: u32 = 3;

/// An instruction held in an instruction register or a collector unit: what the
/// collector needs of its [`Op`]. (When it may move on is kept beside it, in
/// [`Waiting::from`] and `Collector::due`, so that the scans read only dense arrays.)
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    gen: u32,
    /// The op's latency and initiation interval.
    lat: u32,
    init: u32,
    warp: u16,
    /// Its scoreboard destinations, and the register its result is written back to in
    /// the banks (`Op::wb_reg`).
    dsts: [u16; 4],
    wb_reg: u16,
    /// Its distinct sources in the register banks (registers below 256), in source
    /// order: each is read once.
    reads: [u8; 6],
    nreads: u8,
    ndst: u8,
    /// A memory instruction's entry in the SM's table of instructions waiting for the
    /// load/store unit (`NONE`: arithmetic), and its issue order in the collector.
    tag: u16,
    age: u32,
}

impl Held {
    fn new(warp: u16, gen: u32, op: &Op) -> Held {
        Held {
            gen,
            lat: op.lat,
            init: op.init,
            warp,
            dsts: op.dsts,
            wb_reg: op.wb_reg,
            reads: op.reads,
            nreads: op.nreads,
            ndst: op.ndst,
            tag: NONE,
            age: 0,
        }
    }
}

/// An instruction register that holds an instruction (an entry of `Collector::waiting`).
#[derive(Clone, Copy, Debug)]
struct Waiting {
    /// The first step its instruction may take a collector unit.
    from: u64,
    /// Its pool's unit kind's rank in the allocation order, and the pool.
    rank: u8,
    pool: u8,
}

pub(super) struct Collector {
    /// Collector units and banks per group (below: "scheduler"); steps per cycle.
    units: usize,
    banks: u64,
    /// `banks - 1` when `banks` is a power of two (a bank is then a mask away), else 0.
    bank_mask: u64,
    ports: u64,
    /// `sm.pipeline_latency`: an op's latency less this is its unit's.
    pipeline_latency: u32,
    /// `sm.operand_collector.write_back_conflicts`: write-backs are booked in `bank_wr`,
    /// which is empty exactly when this is false. (A flag rather than `bank_wr.is_empty()`:
    /// that check in the reads' loop and the dispatch cost 0.4% of fma_ilp4's
    /// instructions.)
    write_backs: bool,
    /// Per scheduler × collector unit: the instruction it holds, if its bit in `occ` is
    /// set (otherwise a stale value).
    cu: Vec<Held>,
    /// Per collector unit, if occupied: the first step its instruction may be dispatched
    /// (the step after its last read), and its pool. (Apart from `cu`: the dispatch scan
    /// and [`Collector::compute_next`] read only these.)
    due: Vec<u64>,
    upool: Vec<u8>,
    /// Bit `i` of word `i / 64`: `cu[i]` holds an instruction (so the scans visit only
    /// the occupied units).
    occ: Vec<u64>,
    /// The first step at which an occupied collector unit may be dispatched: the least
    /// `due.max(ex_free[pool])` over them (INF: none). Units and `ex_free` change only in
    /// [`Collector::run_step`], which keeps this, so [`Collector::compute_next`] does not
    /// scan the units, and a step before it skips the dispatch scan (every unit there
    /// would be passed over).
    dispatch_at: u64,
    /// Per group: its occupied collector units (an entry for every possible group: no
    /// bounds check in the scans).
    busy: Box<[u32; 256]>,
    /// Per scheduler × bank: its next free read step.
    bank_next: Vec<u64>,
    /// Per scheduler × bank, a ring of [`WR_WORDS`] words of (block, bits): bit `x mod
    /// 64` of word `(x / 64) mod WR_WORDS` is set when a write-back holds step `x` and
    /// the word's block is `x / 64`. Stored ring position by ring position (every bank's
    /// word for one block side by side, `bank_wr[(x / 64 mod WR_WORDS) · banks + bank]`),
    /// so the steps being run touch a few lines of it, not one per bank. GPGPU-Sim's
    /// write-back takes its destination's bank for the first read step of the cycle the
    /// result is written (writes have priority over reads); reads skip those steps.
    /// Bookings are made at most [`WR_RING`] steps past the step being run, so a word is
    /// taken for a new block only once every step of its old one is past, and a bit names
    /// one step. (Bits rather than a step per
    /// entry: 2 KiB per SM, touched a word at a time, instead of 32 KiB swept through the
    /// cache every 256 steps.)
    bank_wr: Vec<(u64, u64)>,
    /// Per pipeline pool: the instruction waiting in its instruction register, if the pool
    /// is in `waiting` (otherwise a stale value).
    idoc: Vec<Held>,
    /// Per pipeline pool: the first step its dispatch register is empty. (This and the two
    /// below have an entry for every possible pool index, so that indexing by a `u8` pool
    /// needs no bounds check: the scans read them for every occupied unit.)
    ex_free: Box<[u64; 256]>,
    /// Per pipeline pool: its collector group.
    group_of: Box<[u8; 256]>,
    /// Per pipeline pool: its unit kind's rank in the allocation order.
    rank_of: Box<[u8; 256]>,
    /// Steps before this have been run.
    stepped: u64,
    /// The pools whose instruction register holds an instruction, sorted by rank and,
    /// within a rank, by issue order (oldest first).
    waiting: Vec<Waiting>,
    /// When the next step that does something may come, and the SM's wake-up step, neither
    /// before `stepped` (INF: nothing held; `None`: to be recomputed). The
    /// wake-up step counts every waiting instruction whose group has a free unit as able
    /// to allocate, even behind an older one of its kind that blocks it. The steps between
    /// the two do nothing and are not run; the SM still wakes at them, as it did when they
    /// were run, so that its memory requests interleave with the other SMs' exactly as
    /// before (a later wake-up reorders them: BENCHMARKS.md, "The collector's idle steps").
    next: Option<(u64, u64)>,
    /// Scratch of the allocation: the waiting instructions eligible in a step, as
    /// (rank, pool), in the order of `waiting`.
    eligible: Vec<(u8, u8)>,
    /// Per pipeline pool: it issues to the SM's load/store unit (`sm.operand_collector.memory`),
    /// which every such pool shares; and those pools. Issue order of the instructions taken.
    is_mem: Box<[bool; 256]>,
    mem_pools: Vec<u8>,
    seq: u32,
    /// Per memory pool: the instruction in its dispatch register (GPGPU-Sim's `OC_EX_MEM`
    /// slot of the scheduler) and the first step the load/store unit may take it (INF:
    /// empty); the first step the unit is free.
    exmem: Vec<Held>,
    exmem_from: Box<[u64; 256]>,
    lsu_free: u64,
}

/// A dispatch decided by the collector: the warp's destinations are ready at `ready` (a
/// memory instruction, taken by the load/store unit, names none: the SM set them when it
/// ran the access).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dispatched {
    pub(super) warp: u16,
    pub(super) gen: u32,
    pub(super) ready: u64,
    pub(super) dsts: [u16; 4],
    pub(super) ndst: u8,
}

impl Collector {
    pub(super) fn new(
        oc: &crate::arch::OperandCollector,
        pipeline_latency: u32,
        groups: usize,
        group_of: Vec<usize>,
        rank_of: Vec<u8>,
        mem_pools: Vec<u8>,
    ) -> Self {
        let s = groups.max(1);
        let units = (oc.units as usize / s).max(1);
        let banks = (oc.register_banks as u64 / s as u64).max(1);
        let pools = group_of.len();
        Collector {
            units,
            banks,
            bank_mask: if banks.is_power_of_two() {
                banks - 1
            } else {
                0
            },
            ports: oc.port_throughput.max(1) as u64,
            pipeline_latency,
            write_backs: oc.write_back_conflicts,
            cu: vec![Held::default(); s * units],
            due: vec![0; s * units],
            upool: vec![0; s * units],
            occ: vec![0; (s * units).div_ceil(64)],
            dispatch_at: INF,
            busy: Box::new([0; 256]),
            bank_next: vec![0; s * banks as usize],
            bank_wr: if oc.write_back_conflicts {
                vec![(u64::MAX, 0); s * banks as usize * WR_WORDS]
            } else {
                Vec::new()
            },
            idoc: vec![Held::default(); pools],
            ex_free: Box::new([0; 256]),
            group_of: Box::new(std::array::from_fn(|p| {
                group_of.get(p).map_or(0, |&g| {
                    u8::try_from(g).expect("collector groups per SM fit 8 bits")
                })
            })),
            rank_of: Box::new(std::array::from_fn(|p| {
                rank_of.get(p).copied().unwrap_or(0)
            })),
            stepped: 0,
            waiting: Vec::new(),
            next: Some((INF, INF)),
            eligible: Vec::new(),
            is_mem: Box::new(std::array::from_fn(|p| mem_pools.contains(&(p as u8)))),
            mem_pools,
            seq: 0,
            exmem: vec![Held::default(); pools],
            exmem_from: Box::new([INF; 256]),
            lsu_free: 0,
        }
    }

    /// Takes an instruction issued at cycle `t` into pool `pool`'s instruction register
    /// (which must be empty: the scheduler waits for it); `tag`: a memory instruction's
    /// entry in the SM's table (`NONE` for arithmetic).
    #[inline(always)]
    pub(super) fn issue(&mut self, warp: u16, gen: u32, pool: u8, op: &Op, t: u64, tag: u16) {
        debug_assert!(self.waiting.iter().all(|w| w.pool != pool));
        let mut h = Held::new(warp, gen, op);
        h.tag = tag;
        h.age = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.idoc[pool as usize] = h;
        let from = (t + 1).saturating_mul(self.ports);
        // Oldest first when instructions compete for a collector unit: the newest of its
        // rank goes after the others.
        let rank = self.rank_of[pool as usize];
        self.waiting.push(Waiting { from, rank, pool });
        let w = &mut self.waiting[..];
        let mut i = w.len() - 1;
        while i > 0 && w[i - 1].rank > rank {
            w.swap(i - 1, i);
            i -= 1;
        }
        let first_of_kind = i == 0 || w[i - 1].rank != rank;
        // The new instruction may take a collector unit from its `from` on, if its group
        // has a free one and no older one of its kind waits (what `compute_next` would
        // find; `from` is not before `stepped`).
        if self.has_free_unit(self.group_of[pool as usize] as usize) {
            if let Some((n, w)) = self.next {
                let n = if first_of_kind { n.min(from) } else { n };
                self.next = Some((n, w.min(from)));
            }
        }
    }

    /// Group `s` has a free collector unit.
    #[inline]
    fn has_free_unit(&self, s: usize) -> bool {
        (self.busy[s % 256] as usize) < self.units
    }

    /// The lowest free collector unit of group `s` (its index in `cu`).
    #[inline]
    fn free_unit(&self, s: usize) -> Option<usize> {
        if !self.has_free_unit(s) {
            return None;
        }
        let first = s * self.units;
        (first..first + self.units).find(|&i| self.occ[i / 64] >> (i % 64) & 1 == 0)
    }

    /// Moves the instruction of pool `p`'s instruction register, dispatchable from step
    /// `due`, into collector unit `i` (free) of group `s`.
    #[inline]
    fn fill(&mut self, s: usize, i: usize, p: usize, due: u64) {
        self.cu[i] = self.idoc[p];
        self.due[i] = due;
        self.upool[i] = p as u8;
        self.dispatch_at = self.dispatch_at.min(due.max(self.ex_free[p % 256]));
        self.occ[i / 64] |= 1 << (i % 64);
        self.busy[s % 256] += 1;
    }

    /// Empties collector unit `i` (occupied) of group `s`.
    #[inline]
    fn empty(&mut self, s: usize, i: usize) {
        self.occ[i / 64] &= !(1 << (i % 64));
        self.busy[s % 256] -= 1;
    }

    /// The next step at which something can happen (INF: nothing held).
    fn next_step(&mut self) -> u64 {
        self.next_pair().0
    }

    /// The SM's wake-up step (see [`Collector::next`]).
    #[inline]
    fn next_wake(&mut self) -> u64 {
        self.next_pair().1
    }

    #[inline]
    fn next_pair(&mut self) -> (u64, u64) {
        match self.next {
            Some(p) => p,
            None => {
                let p = self.compute_next();
                self.next = Some(p);
                p
            }
        }
    }

    /// Steps before `end` that were not run did nothing: the collector is decided through
    /// `end`, as if each had been run. (The next step that does something is at or after
    /// `end` already; the wake-up step moves to `end` if it was before.)
    fn decided_through(&mut self, end: u64) {
        self.stepped = self.stepped.max(end);
        if let Some((n, w)) = self.next {
            self.next = Some((n, w.max(end)));
        }
    }

    /// The next step that does something and the SM's wake-up step (see
    /// [`Collector::next`]).
    #[inline]
    fn compute_next(&self) -> (u64, u64) {
        let mut n = self.dispatch_at;
        if !self.mem_pools.is_empty() {
            n = n.min(self.lsu_next());
        }
        // Allocation: a kind allocates in a step only if its oldest eligible instruction
        // finds a free unit in its group, and its oldest waiting one is its oldest
        // eligible from its `from` on (a younger one was issued no earlier). So only each
        // kind's first waiting instruction can open a step; if its group has no free unit,
        // the kind waits for a dispatch, itself a step (above).
        let mut w = n;
        let mut prev = None;
        for x in &self.waiting {
            if self.has_free_unit(self.group_of[x.pool as usize] as usize) {
                w = w.min(x.from);
                if prev != Some(x.rank) {
                    n = n.min(x.from);
                }
            }
            prev = Some(x.rank);
        }
        // A step is run once: an instruction register held up by another scheduler's
        // (see `run_step`) is tried again at the next.
        // (INF stays INF: it is `u64::MAX`.)
        (n.max(self.stepped), w.max(self.stepped))
    }

    /// The least `due.max(ex_free[pool])` over the occupied collector units (INF: none):
    /// [`Collector::dispatch_at`] anew.
    fn units_min(&self) -> u64 {
        let mut n = INF;
        for (wi, &word) in self.occ.iter().enumerate() {
            let mut m = word;
            while m != 0 {
                let i = wi * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                n = n.min(self.due[i].max(self.ex_free[self.upool[i] as usize]));
            }
        }
        n
    }

    /// The first cycle at which the collector may change something (INF: never).
    pub(super) fn next_cycle(&mut self) -> u64 {
        let n = self.next_wake();
        if n == INF {
            INF
        } else {
            n / self.ports
        }
    }

    /// The bank of register `r` of warp `w` in group `s`, as an index into the per-bank
    /// arrays: GPGPU-Sim's `register_bank`, with the trace's registers counted from 1.
    #[inline]
    fn bank(&self, s: usize, r: u64, w: u16) -> usize {
        let x = r + 1 + w as u64;
        let b = if self.bank_mask != 0 {
            x & self.bank_mask
        } else {
            x % self.banks
        };
        s * self.banks as usize + b as usize
    }

    /// The word of bank `b`'s write-back ring for `step`, its block and `step`'s bit.
    #[inline]
    fn wr_word(&self, b: usize, step: u64) -> (usize, u64, u64) {
        let block = step / 64;
        let banks = self.bank_next.len();
        (
            block as usize % WR_WORDS * banks + b,
            block,
            1 << (step % 64),
        )
    }

    /// A write-back holds step `step` of bank `b`.
    #[inline]
    fn wr_held(&self, b: usize, step: u64) -> bool {
        let (i, block, m) = self.wr_word(b, step);
        let (held, bits) = self.bank_wr[i];
        held == block && bits & m != 0
    }

    /// Books step `step` of bank `b` for a write-back (at most [`WR_RING`] steps past the
    /// step being run).
    #[inline]
    fn wr_book(&mut self, b: usize, step: u64) {
        let (i, block, m) = self.wr_word(b, step);
        let w = &mut self.bank_wr[i];
        if w.0 != block {
            *w = (block, 0);
        }
        w.1 |= m;
    }

    /// Books the write-back of a result written at `cycle` into bank `b`: the first step
    /// of that cycle, unless another write-back holds it already (GPGPU-Sim then skips the
    /// write: its `writeback` result is ignored). Where reads are already booked past that
    /// step, the write takes the bank's next free step instead (it delays later reads by
    /// one step, as a write with priority would). `st` is the current step.
    fn book_write(&mut self, b: usize, cycle: u64, st: u64) {
        let step = cycle.saturating_mul(self.ports);
        if step >= st + WR_RING as u64 || self.wr_held(b, step) {
            return;
        }
        let mut at = step.max(self.bank_next[b]);
        while self.wr_held(b, at) {
            at += 1;
        }
        if at < st + WR_RING as u64 {
            self.wr_book(b, at);
        }
    }

    /// Runs step `st`: dispatches (`accept(pool, earliest, init)` returns the cycle the unit
    /// accepts and occupies its pipe; the result is ready `pipeline_latency` less the
    /// collector's [`STAGES`] cycles after the unit's latency), then allocations.
    /// Dispatches go to `out`; each pool whose instruction register emptied is pushed to
    /// `freed`.
    #[inline(always)]
    fn run_step(
        &mut self,
        st: u64,
        accept: &mut impl FnMut(u8, u64, u32, u16) -> (u64, u64),
        out: &mut Vec<Dispatched>,
        freed: &mut Vec<(u8, u64)>,
    ) {
        self.stepped = st + 1;
        self.next = None;
        let cycle = st / self.ports;
        if !self.mem_pools.is_empty() && self.lsu_step(st, cycle, accept, out) {
            self.dispatch_at = self.dispatch_at.min(st);
        }
        if st >= self.dispatch_at {
            self.dispatch(st, cycle, accept, out);
            self.dispatch_at = self.units_min();
        }
        self.allocate(st, cycle, freed);
    }

    /// (1) Dispatch at step `st` (of `cycle`; see [`Collector::run_step`]).
    #[inline(always)]
    fn dispatch(
        &mut self,
        st: u64,
        cycle: u64,
        accept: &mut impl FnMut(u8, u64, u32, u16) -> (u64, u64),
        out: &mut Vec<Dispatched>,
    ) {
        // Per pool, the lowest collector unit holding a collected instruction
        // of it, if its dispatch register is empty (units in index order: scheduler by
        // scheduler, unit by unit).
        for wi in 0..self.occ.len() {
            let mut m = self.occ[wi];
            while m != 0 {
                let i = wi * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                let pool = self.upool[i];
                if self.due[i] > st || self.ex_free[pool as usize] > st {
                    continue;
                }
                if self.is_mem[pool as usize] {
                    // Into the scheduler's memory dispatch register, for the load/store
                    // unit from the next cycle on.
                    self.exmem[pool as usize] = self.cu[i];
                    self.exmem_from[pool as usize] = (cycle + 1).saturating_mul(self.ports);
                    self.ex_free[pool as usize] = INF;
                    self.empty(i / self.units, i);
                    continue;
                }
                let h = &self.cu[i];
                let (at, _) = accept(pool, cycle + 1, h.init, NONE);
                let (lat, wb_reg) = (h.lat, h.wb_reg);
                let d = Dispatched {
                    warp: h.warp,
                    gen: h.gen,
                    ready: at + lat.saturating_sub(STAGES) as u64,
                    dsts: h.dsts,
                    ndst: h.ndst,
                };
                out.push(d);
                // GPGPU-Sim writes the result back 2 cycles after its unit's latency from
                // the unit taking it (to EX_WB, then `writeback`), whatever the fitted
                // `sm.pipeline_latency` says about when it is usable.
                if self.write_backs && wb_reg != NONE {
                    let b = self.bank(self.group_of[pool as usize] as usize, wb_reg as u64, d.warp);
                    let written = at + lat.saturating_sub(self.pipeline_latency) as u64 + 2;
                    self.book_write(b, written, st);
                }
                self.ex_free[pool as usize] = at.saturating_mul(self.ports);
                self.empty(i / self.units, i);
            }
        }
    }

    /// The load/store unit, when free at step `st` (of `cycle`), takes the oldest memory
    /// instruction waiting in a scheduler's dispatch register (GPGPU-Sim's LD/ST unit takes
    /// the oldest of `OC_EX_MEM`; the units take before the collector dispatches in a
    /// cycle, so the register can be refilled in the same step). `accept` runs its access
    /// and returns when the unit took it and when it is free again. Returns whether it took
    /// one.
    fn lsu_step(
        &mut self,
        st: u64,
        cycle: u64,
        accept: &mut impl FnMut(u8, u64, u32, u16) -> (u64, u64),
        out: &mut Vec<Dispatched>,
    ) -> bool {
        if self.lsu_free > st {
            return false;
        }
        let mut best: Option<u8> = None;
        for &p in &self.mem_pools {
            if self.exmem_from[p as usize] > st {
                continue;
            }
            let older = |b: u8| {
                self.exmem[p as usize]
                    .age
                    .wrapping_sub(self.exmem[b as usize].age)
                    > u32::MAX / 2
            };
            if best.is_none_or(older) {
                best = Some(p);
            }
        }
        let Some(p) = best else {
            return false;
        };
        let h = self.exmem[p as usize];
        let (_, free) = accept(p, cycle, h.init, h.tag);
        out.push(Dispatched {
            warp: h.warp,
            gen: h.gen,
            ready: 0,
            dsts: h.dsts,
            ndst: 0,
        });
        self.lsu_free = free.saturating_mul(self.ports);
        self.exmem_from[p as usize] = INF;
        self.ex_free[p as usize] = st;
        true
    }

    /// The first step at which the load/store unit may take an instruction (INF: none
    /// waits for it).
    fn lsu_next(&self) -> u64 {
        let from = self
            .mem_pools
            .iter()
            .map(|&p| self.exmem_from[p as usize])
            .min()
            .unwrap_or(INF);
        if from == INF {
            INF
        } else {
            from.max(self.lsu_free)
        }
    }

    /// (3) Allocation at step `st` (of `cycle`). GPGPU-Sim's input ports each take, unit
    /// kind by unit kind in a fixed order, the oldest waiting instruction of that kind from
    /// any scheduler, into a free collector unit of that instruction's scheduler; when there
    /// is none, that kind allocates nothing more in this step, for every scheduler. Round
    /// after round, while some kind allocates: so in round `j` each kind not yet blocked
    /// takes its `j`-th oldest eligible instruction, and the instructions are visited in
    /// the order (round, rank) of their position in the list sorted by (rank, age).
    #[inline(always)]
    fn allocate(&mut self, st: u64, cycle: u64, freed: &mut Vec<(u8, u64)>) {
        if self.waiting.is_empty() {
            return;
        }
        let mut eligible = std::mem::take(&mut self.eligible);
        eligible.clear();
        // (Sorted by rank and age, as `waiting` is.) `mixed`: of more than one kind.
        let mut mixed = false;
        for x in &self.waiting {
            if x.from <= st {
                mixed |= eligible.first().is_some_and(|e: &(u8, u8)| e.0 != x.rank);
                eligible.push((x.rank, x.pool));
            }
        }
        // Pools whose instruction took a unit (bit = pool), left out of `waiting` after.
        let mut taken = [0u64; 4];
        let mut any = false;
        if !mixed {
            // One kind: round `j` takes its `j`-th oldest, until one finds no unit.
            for &(_, p) in &eligible {
                let p = p as usize;
                if !self.take_unit(p, st, cycle, freed) {
                    break;
                }
                taken[p / 64 % 4] |= 1 << (p % 64);
                any = true;
            }
        } else {
            any = self.allocate_rounds(&eligible, st, cycle, freed, &mut taken);
        }
        if any {
            self.waiting
                .retain(|x| taken[x.pool as usize / 64 % 4] >> (x.pool % 64) & 1 == 0);
        }
        self.eligible = eligible;
    }

    /// The rounds of [`Collector::allocate`] over `eligible` (sorted by rank and age, of
    /// several kinds); marks the pools that took a unit in `taken` and returns whether any
    /// did. (Kept out of line: the one-kind path of [`Collector::allocate`] is the common one.)
    #[inline(never)]
    fn allocate_rounds(
        &mut self,
        eligible: &[(u8, u8)],
        st: u64,
        cycle: u64,
        freed: &mut Vec<(u8, u64)>,
        taken: &mut [u64; 4],
    ) -> bool {
        let mut blocked = 0u32;
        let mut round = 0;
        loop {
            let mut any = false;
            let mut i = 0;
            while i < eligible.len() {
                let rank = eligible[i].0;
                let mut e = i + 1;
                while e < eligible.len() && eligible[e].0 == rank {
                    e += 1;
                }
                if round < e - i && blocked >> rank & 1 == 0 {
                    let p = eligible[i + round].1 as usize;
                    if self.take_unit(p, st, cycle, freed) {
                        taken[p / 64 % 4] |= 1 << (p % 64);
                        any = true;
                    } else {
                        blocked |= 1 << rank;
                    }
                }
                i = e;
            }
            if !any {
                return round > 0;
            }
            round += 1;
        }
    }

    /// Moves the instruction in pool `p`'s instruction register to the lowest free
    /// collector unit of its group, if there is one, and starts its reads.
    #[inline(always)]
    fn take_unit(&mut self, p: usize, st: u64, cycle: u64, freed: &mut Vec<(u8, u64)>) -> bool {
        let s = self.group_of[p % 256] as usize;
        let Some(i) = self.free_unit(s) else {
            return false;
        };
        self.take_unit_at(p, s, i, st, cycle, freed);
        true
    }

    /// [`Collector::take_unit`] into unit `i` (free) of group `s`.
    fn take_unit_at(
        &mut self,
        p: usize,
        s: usize,
        i: usize,
        st: u64,
        cycle: u64,
        freed: &mut Vec<(u8, u64)>,
    ) {
        let (reads, nreads, warp) = {
            let h = &self.idoc[p];
            (h.reads, h.nreads, h.warp)
        };
        // (2) Its reads, from the next step on, in the scheduler's banks.
        let mut last = st;
        for &r in &reads[..nreads as usize] {
            let b = self.bank(s, r as u64, warp);
            let mut slot = self.bank_next[b].max(st + 1);
            // Steps held by write-backs are skipped.
            while self.write_backs && self.wr_held(b, slot) {
                slot += 1;
            }
            self.bank_next[b] = slot + 1;
            last = last.max(slot);
        }
        // Dispatchable the step after its last read, or, with nothing to read (a branch),
        // the step after it took the unit: GPGPU-Sim's dispatch scan of the next step finds
        // it ready.
        self.fill(s, i, p, last + 1);
        freed.push((p as u8, cycle));
    }
}

impl Sm<'_> {
    /// Decides every collector step up to the end of cycle `t` and applies the results:
    /// dispatched instructions' destinations become ready, emptied instruction registers
    /// let their schedulers issue again.
    pub(super) fn oc_advance(
        &mut self,
        t: u64,
        env: &StepEnv,
        mem: &mut MemSys,
        ctr: &mut [Counters],
    ) {
        let Some(oc) = self.oc.as_deref_mut() else {
            return;
        };
        let end = t.saturating_add(1).saturating_mul(oc.ports);
        // (The wake-up step is never after the next step that does something.)
        if oc.next_wake() >= end {
            return;
        }
        let Some(mut oc) = self.oc.take() else { return };
        let mut out = std::mem::take(&mut self.oc_out);
        let mut freed = std::mem::take(&mut self.oc_freed);
        loop {
            let st = oc.next_step();
            if st >= end {
                break;
            }
            // (`pool_free` keeps the instruction register's time, not the pipe's.)
            let mut accept = |pool: u8, earliest: u64, init: u32, tag: u16| {
                if tag != NONE {
                    return self.lsu_accept(pool, earliest, tag, env, mem, ctr);
                }
                let p = &mut self.pools[pool as usize];
                let at = earliest.max(p.earliest(&self.pipe_free));
                p.take(&mut self.pipe_free, at + init as u64);
                (at, at)
            };
            oc.run_step(st, &mut accept, &mut out, &mut freed);
        }
        oc.decided_through(end);
        for (pool, cycle) in freed.drain(..) {
            self.pool_free[pool as usize] = cycle;
            // Every scheduler that issues into the pool may issue again (one on sub-core
            // SMs; all of them where the schedulers share the unit kind's pipes).
            let mut m = self.pool_scheds[pool as usize];
            while m != 0 {
                let sc = m.trailing_zeros() as usize;
                m &= m - 1;
                let min = &mut self.scheds[sc].min;
                *min = (*min).min(cycle);
            }
        }
        self.oc = Some(oc);
        for d in out.drain(..) {
            let w = &mut self.warps[d.warp as usize];
            if !w.live || w.gen != d.gen {
                continue;
            }
            for &r in &d.dsts[..d.ndst as usize] {
                w.set_reg(r, d.ready, false);
            }
            let before = (w.ready, w.mem_cause);
            w.compute_ready();
            if (w.ready, w.mem_cause) != before {
                self.sync(d.warp);
            } else {
                // The warp's next instruction names none of these registers: its scan
                // entry stands, and only the scheduler's bound is lowered, as `sync` would.
                self.lower_bound(d.warp);
            }
        }
        self.oc_out = out;
        self.oc_freed = freed;
    }

    /// The first cycle at which the collector may change something (INF: none).
    pub(super) fn oc_next(&mut self) -> u64 {
        self.oc.as_deref_mut().map_or(INF, |o| o.next_cycle())
    }
}

#[cfg(test)]
mod tests;

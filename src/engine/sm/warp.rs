//! A warp's state on an SM — stream cursor, scoreboard, pending loads — and the resource
//! footprint (`Res`) and bookkeeping (`Cta`) of a resident CTA.

use std::sync::Arc;

use super::{INF, MAX_LOADS};
use crate::engine::ops::{Op, OpClass};
use crate::error::DecodeError;
use crate::trace::{DynInst, WarpStream};

/// Instructions without addresses a warp slot decodes ahead ([`Warp::advance`]).
pub(super) const AHEAD: usize = 8;

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
    /// The footprint of one CTA of a kernel with occupancy `occ`.
    pub fn of_cta(occ: &crate::arch::Occupancy, warp_size: u32) -> Res {
        Res {
            threads: occ.warps_per_cta * warp_size,
            warps: occ.warps_per_cta,
            regs: occ.regs_per_cta,
            smem: occ.smem_per_cta,
            ctas: 1,
        }
    }
    /// What one SM of `spec` holds.
    pub fn sm_limits(spec: &crate::arch::GpuSpec) -> Res {
        Res {
            threads: spec.sm.max_threads,
            warps: spec.sm.max_warps,
            regs: spec.sm.registers.per_sm,
            smem: spec.sm.shared.per_sm.0 as u32,
            ctas: spec.sm.max_ctas,
        }
    }
    /// `[threads, warps, registers, shared memory, CTA slots]`.
    pub fn to_array(&self) -> [u64; 5] {
        [
            self.threads as u64,
            self.warps as u64,
            self.regs as u64,
            self.smem as u64,
            self.ctas as u64,
        ]
    }
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
pub(super) struct PendingLoad {
    pub(super) outstanding: u16,
    pub(super) ready: u64,
    pub(super) dsts: [u16; 4],
    pub(super) ndst: u8,
}

/// A warp slot. Laid out in declaration order (`repr(C)`, cache-line aligned): what every
/// issue reads and writes comes first, the current instruction's addresses and the
/// pending-load slots last, so an issue touches two or three lines of the slot instead of
/// fields scattered over its eleven (the SMs' warps do not stay in cache between visits).
#[repr(C, align(64))]
pub struct Warp<'a> {
    pub(super) ops: Arc<[Op]>,
    pub(super) regs: Box<[u64]>,
    pub(super) stream: Option<Box<dyn WarpStream + 'a>>,
    pub(super) ready: u64,
    pub(super) age: u64,
    pub(super) last_issue: u64,
    /// Latest data time of loads issued so far (EXIT waits for it).
    pub(super) loads_done: u64,
    /// The active-lane mask of the last instruction issued and its lane count (consecutive
    /// instructions mostly share their mask: no popcount per issue).
    pub(super) lanes: (u32, u32),
    pub gen: u32,
    /// Instructions issued since its block started (an aged start's skipped prefix left
    /// out): fast-forward samples CTA progress from it.
    pub(super) issued: u32,
    pub krun: u32,
    pub app: u16,
    pub cta: u16,
    pub live: bool,
    pub(super) sched: u8,
    pub(super) mem_cause: bool,
    pub(super) at_barrier: bool,
    /// Bit `i` set: `loads[i]` is occupied (kept by `put_load` / `take_load`).
    pub(super) load_bits: u8,
    /// Memory instructions of the warp waiting in the operand collector for the load/store
    /// unit (`sm.operand_collector.memory`): EXIT waits for them too.
    pub(super) oc_mem: u8,
    /// The instructions without addresses decoded ahead of `inst`: `ahead[ahead_i..ahead_n]`
    /// come next, before the stream's (see [`Warp::advance`]).
    pub(super) ahead_i: u8,
    pub(super) ahead_n: u8,
    pub(super) mem_regs: [u64; 6],
    pub(super) ahead: [(u32, u32); AHEAD],
    pub(super) inst: DynInst,
    pub(super) loads: [Option<PendingLoad>; MAX_LOADS],
}

impl Warp<'_> {
    pub(super) fn new() -> Self {
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
            // Allocated when the slot first runs a CTA (`Sm::start_block`): a slot that
            // never does costs nothing.
            regs: Box::default(),
            mem_regs: [0; 6],
            loads: [None; MAX_LOADS],
            load_bits: 0,
            oc_mem: 0,
            ahead_i: 0,
            ahead_n: 0,
            ahead: [(0, 0); AHEAD],
            gen: 0,
            age: 0,
            last_issue: 0,
            issued: 0,
            lanes: (0, 0),
            loads_done: 0,
        }
    }

    /// Moves `inst` to the warp's next instruction; `Ok(false)` at the end of its stream.
    /// Instructions without addresses are decoded [`AHEAD`] at a time into the slot, so an
    /// issue touches the stream's state and bytes (which the other SMs' visits have pushed
    /// out of the host's caches) once per batch instead of once per instruction; `inst`
    /// holds exactly what the stream's `next_inst` would have written.
    #[inline]
    pub(super) fn advance(&mut self) -> Result<bool, DecodeError> {
        if self.ahead_i < self.ahead_n {
            let (sidx, mask) = self.ahead[self.ahead_i as usize % AHEAD];
            self.ahead_i += 1;
            self.inst.sidx = sidx;
            self.inst.mask = mask;
            self.inst.n = 0;
            return Ok(true);
        }
        let Some(s) = self.stream.as_mut() else {
            return Ok(false);
        };
        let more = s.next_inst(&mut self.inst)?;
        if more && self.inst.n == 0 {
            self.ahead_n = s.next_plain(&mut self.ahead) as u8;
            self.ahead_i = 0;
        }
        Ok(more)
    }

    pub(super) fn op(&self) -> &Op {
        &self.ops[self.inst.sidx as usize]
    }

    #[inline(always)]
    pub(super) fn compute_ready(&mut self) {
        let (r, mem) = self.ready_after(self.last_issue + 1);
        self.ready = r;
        self.mem_cause = mem;
    }

    /// When the next instruction's operands are ready, no earlier than `floor` (INF:
    /// waiting on a load of unknown time), and whether memory is the cause.
    #[inline(always)]
    pub(super) fn ready_after(&self, floor: u64) -> (u64, bool) {
        let op = &self.ops[self.inst.sidx as usize];
        let mut r = floor;
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
                // A load of unknown time, or an instruction waiting in the operand
                // collector (not memory).
                r = INF;
                mem = self.mem_regs[(d / 64) as usize] >> (d % 64) & 1 == 1;
            }
        }
        if op.class == OpClass::Exit {
            // A warp retires only when its loads have returned (and, under
            // `sm.exit_waits_for_stores`, its stores are acknowledged).
            if self.load_bits != 0 || self.oc_mem != 0 {
                r = INF;
                mem = true;
            } else if self.loads_done > r {
                r = self.loads_done;
                mem = true;
            }
        }
        (r, mem)
    }

    /// Every pending-load slot is occupied.
    #[inline]
    pub(super) fn loads_full(&self) -> bool {
        self.load_bits as u32 == (1u32 << MAX_LOADS) - 1
    }

    /// The first free pending-load slot (0 when all are taken).
    #[inline]
    pub(super) fn free_load_slot(&self) -> usize {
        let f = (!self.load_bits).trailing_zeros() as usize;
        if f < MAX_LOADS {
            f
        } else {
            0
        }
    }

    pub(super) fn put_load(&mut self, slot: usize, p: PendingLoad) {
        self.loads[slot] = Some(p);
        self.load_bits |= 1 << slot;
    }

    pub(super) fn take_load(&mut self, slot: usize) -> Option<PendingLoad> {
        self.load_bits &= !(1 << slot);
        self.loads[slot].take()
    }

    /// Empties every pending-load slot.
    pub(super) fn clear_loads(&mut self) {
        self.loads = [None; MAX_LOADS];
        self.load_bits = 0;
        self.oc_mem = 0;
    }

    /// Active lanes of the current instruction.
    #[inline]
    pub(super) fn active_lanes(&mut self) -> u32 {
        let m = self.inst.mask;
        if m != self.lanes.0 {
            self.lanes = (m, m.count_ones());
        }
        self.lanes.1
    }

    pub(super) fn set_reg(&mut self, d: u16, t: u64, mem: bool) {
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
    /// When that block started (engine time).
    pub start: u64,
    pub warps: Vec<u16>,
    pub live_warps: u32,
    pub at_barrier: u32,
    /// Persistent workers: blocks left in the current task.
    pub task_left: u32,
    /// Persistent workers: the exit test (a last atomic) is in flight.
    pub exiting: bool,
    /// A block without instructions: it completes at its start ([`Cta::block`]).
    pub empty: bool,
    /// The block started part-way into its warps' streams (an aged fast-forward start).
    pub prefixed: bool,
    pub fp: Res,
    /// Where its storage lives under contiguous allocation.
    pub offs: super::Offsets,
    /// Time slicing: its context is in its save area (saved when its context was switched
    /// out, not read back yet). A block that has not run since it started has nothing
    /// there, and its context's next turn reads nothing back for it.
    pub swapped: bool,
}

/// The first block of `n` consecutive free slots of `held` that starts at a multiple of `n`
/// (GPGPU-Sim's `find_available_hwtid` steps by the CTA's size), if any.
pub(super) fn first_free_block(held: &[bool], n: usize) -> Option<usize> {
    let n = n.max(1);
    (0..held.len())
        .step_by(n)
        .find(|&b| b + n <= held.len() && !held[b..b + n].iter().any(|&h| h))
}

#[cfg(test)]
mod block_tests {
    use super::first_free_block;

    #[test]
    fn a_cta_takes_an_aligned_block_not_the_lowest_free_slots() {
        // 16 slots; a running CTA of 8 warps in slots 0..8 whose even warps finished (its
        // slots stay held until the CTA exits): a 4-warp CTA takes 8..12, not 0, 2, 4, 6.
        let mut held = vec![false; 16];
        held[..8].fill(true);
        assert_eq!(first_free_block(&held, 4), Some(8));
        // Blocks are aligned to the CTA's size: a free run 2..6 does not take a 4-warp CTA.
        let mut held = vec![true; 8];
        held[2..6].fill(false);
        assert_eq!(first_free_block(&held, 4), None);
        assert_eq!(first_free_block(&held, 2), Some(2));
        // A size that does not divide the slots: the last partial block is never taken.
        assert_eq!(first_free_block(&[false; 7], 3), Some(0));
        assert_eq!(
            first_free_block(&[true, true, true, false, false, false, false], 3),
            Some(3)
        );
        assert_eq!(
            first_free_block(&[true, true, true, true, true, true, false], 3),
            None
        );
    }
}

//! Memory instructions in the operand collector (`sm.operand_collector.memory`): what the
//! SM keeps of one while it waits for the load/store unit, and the access it runs when the
//! unit takes it. The collector itself only moves its tag (`Held::tag`).

use super::super::{Counters, MemSys, Op, Sm, StepEnv, INF};
use super::STAGES;
use crate::engine::ops::{OpClass, NONE};

/// A memory instruction issued into the operand collector, kept until the load/store unit
/// takes it: its warp (and generation), its op, its addresses and the pending-load slot
/// reserved for it.
pub(in crate::engine::sm) struct PendingMem {
    warp: u16,
    gen: u32,
    op: Op,
    inst: crate::trace::DynInst,
    slot: Option<u8>,
}

impl Sm<'_> {
    /// Issues memory instruction `op` of warp `id` into the collector
    /// (`sm.operand_collector.memory`): keeps its addresses until the load/store unit takes
    /// it, reserves a pending-load slot for a load, and holds its destinations and the
    /// warp's EXIT until then. Returns its tag.
    pub(in crate::engine::sm) fn defer_mem(&mut self, id: u16, op: &Op) -> u16 {
        let w = &mut self.warps[id as usize];
        let slot = if matches!(op.class, OpClass::Load | OpClass::Atomic) {
            let s = w.free_load_slot();
            w.load_bits |= 1 << s;
            Some(s as u8)
        } else {
            None
        };
        let is_global = !matches!(op.class, OpClass::SharedLoad | OpClass::SharedStore);
        for &d in &op.dsts[..op.ndst as usize] {
            w.set_reg(d, INF, is_global);
        }
        w.oc_mem += 1;
        let e = PendingMem {
            warp: id,
            gen: w.gen,
            op: *op,
            inst: w.inst.clone(),
            slot,
        };
        match self.oc_pending_free.pop() {
            Some(tag) => {
                self.oc_pending[tag as usize] = Some(e);
                tag
            }
            None => {
                self.oc_pending.push(Some(e));
                u16::try_from(self.oc_pending.len() - 1)
                    .ok()
                    .filter(|&t| t != NONE)
                    .expect("memory instructions in one SM's collector fit 16 bits")
            }
        }
    }

    /// The load/store unit takes memory instruction `tag` of pool `pool` at `earliest` at
    /// the earliest: its access runs [`STAGES`] cycles before (the engine's memory times
    /// count from issue, where an uncontended instruction is), and the unit stays busy
    /// for its occupancy or until a request it held is sent. Returns when it took it and
    /// when it is free again (cycles).
    pub(in crate::engine::sm) fn lsu_accept(
        &mut self,
        pool: u8,
        earliest: u64,
        tag: u16,
        env: &StepEnv,
        mem: &mut MemSys,
        ctr: &mut [Counters],
    ) -> (u64, u64) {
        let e = self.oc_pending[tag as usize]
            .take()
            .expect("a collected memory instruction has its entry");
        self.oc_pending_free.push(tag);
        let at = earliest.max(self.pools[pool as usize].earliest(&self.pipe_free));
        let id = e.warp;
        let w = &mut self.warps[id as usize];
        if !w.live || w.gen != e.gen {
            // Its warp was saved or ended meanwhile: nothing runs.
            return (at, at);
        }
        w.oc_mem -= 1;
        if let Some(s) = e.slot {
            w.load_bits &= !(1 << s);
        }
        let op = e.op;
        let app = w.app as usize;
        let tm = at.saturating_sub(STAGES as u64);
        let mut inst = e.inst;
        std::mem::swap(&mut w.inst, &mut inst);
        let (occ, held) = match op.class {
            OpClass::SharedLoad | OpClass::SharedStore => {
                (super::super::shared_access(w, &op, tm, env), 0)
            }
            _ => self.issue_global(id, &op, tm, mem, ctr),
        };
        std::mem::swap(&mut self.warps[id as usize].inst, &mut inst);
        ctr[app].unit_busy[op.unit as usize] += op.init as u64 * occ;
        let free = (tm + op.init as u64 * occ).max(held) + STAGES as u64;
        self.pools[pool as usize].take(&mut self.pipe_free, free);
        (at, free)
    }
}

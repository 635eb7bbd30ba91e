//! Issue of a global memory instruction (load, store, atomic, reduction): its lanes'
//! addresses coalesced into lines and sectors, each sent to the memory system through the
//! L1's banks where it uses them, and the warp's destinations set to the data's time or
//! left waiting on a reply of unknown time.

use super::{atomic_access, PendingLoad, Sm, INF};
use crate::engine::memsys::{Atomic, LoadRef, MemSys};
use crate::engine::ops::{coalesce, partial_sectors, same_address_lanes, Op, OpClass};
use crate::engine::stats::Counters;

impl Sm<'_> {
    /// [`Self::issue`] of a global memory instruction (load, store, atomic, reduction) of
    /// warp `id` at `t`: its accesses, coalesced into lines, go to the memory system (through
    /// the L1's banks where they use it) and its destinations wait for the data. Returns
    /// the cycles it occupies its unit and when the unit is free again at the earliest.
    #[inline(always)]
    pub(super) fn issue_global(
        &mut self,
        id: u16,
        op: &Op,
        t: u64,
        mem: &mut MemSys,
        ctr: &mut [Counters],
    ) -> (u64, u64) {
        let sm = self.id;
        let store_acks = self.store_acks;
        let w = &mut self.warps[id as usize];
        let app = w.app as usize;
        let mut lines = std::mem::take(&mut self.lines);
        coalesce(
            w.inst.addrs(),
            op.width,
            mem.line_bytes(),
            mem.sector_bytes(),
            &mut lines,
        );
        let slot = w.free_load_slot();
        let r = LoadRef {
            sm: sm as u16,
            warp: id,
            slot: slot as u8,
            gen: w.gen,
        };
        let mut known = t + 1;
        let mut unknown = 0u16;
        // Accesses through the L1 enter its banks' pipelines, one a bank a cycle,
        // in order up to the first bank conflict (GPGPU-Sim's `l1_latency_queue`);
        // the others leave one a cycle.
        let banked = match op.class {
            OpClass::Load => !op.bypass_l1,
            OpClass::Store => true,
            _ => false,
        };
        let partial = op.class == OpClass::Store && mem.fetches_partial_writes();
        if partial {
            partial_sectors(
                w.inst.addrs(),
                op.width,
                mem.line_bytes(),
                mem.sector_bytes(),
                &lines,
                &mut self.partial,
            );
        }
        if matches!(op.class, OpClass::Atomic | OpClass::Reduce) {
            same_address_lanes(
                w.inst.addrs(),
                mem.line_bytes(),
                mem.sector_bytes(),
                &lines,
                &mut self.serial,
            );
        }
        let (mut cyc, mut used) = (0u64, 0u64);
        for (i, &(line, sect, lanes)) in lines.iter().enumerate() {
            if banked {
                let b = 1u64 << mem.l1_bank(line, sect);
                if used & b != 0 {
                    cyc += 1;
                    used = 0;
                }
                used |= b;
            } else {
                cyc = i as u64;
            }
            let ti = t + cyc;
            let got = match op.class {
                OpClass::Load => mem.load(sm, app, line, sect, ti, op.bypass_l1, r, ctr),
                OpClass::Store => {
                    let part = if partial { self.partial[i] } else { 0 };
                    let ack = mem.store(sm, app, line, sect, part, ti, &mut ctr[app]);
                    if store_acks {
                        w.loads_done = w.loads_done.max(ack);
                    }
                    Some(ti)
                }
                OpClass::Atomic => {
                    let a = Atomic {
                        lanes,
                        serial: self.serial[i],
                    };
                    atomic_access(mem, sm, app, line, sect, a, ti, Some(r), &mut ctr[app])
                }
                _ => {
                    let a = Atomic {
                        lanes,
                        serial: self.serial[i],
                    };
                    atomic_access(mem, sm, app, line, sect, a, ti, None, &mut ctr[app]);
                    Some(ti)
                }
            };
            match got {
                Some(x) => known = known.max(x),
                None => unknown += 1,
            }
        }
        self.lines = lines;
        let occ = cyc + 1;
        // A request that waited for a miss-queue entry held the unit: the SM's next
        // memory instruction issues no earlier.
        let held = mem.lsu_free(sm);
        if matches!(op.class, OpClass::Load | OpClass::Atomic) {
            if unknown > 0 {
                w.put_load(
                    slot,
                    PendingLoad {
                        outstanding: unknown,
                        ready: known,
                        dsts: op.dsts,
                        ndst: op.ndst,
                    },
                );
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
        (occ, held)
    }
}

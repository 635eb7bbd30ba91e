//! Context save and restore of resident CTAs: what an SM handover by context switch and
//! GPU time slicing move through memory. A saved CTA's registers and shared memory are
//! written to its application's save area (`MemSys::save_line`, by SM and CTA slot) as
//! line writes through the memory system (`MemSys::bulk_write`), and read back from there
//! when it is restored, on whichever SM (`MemSys::bulk_read`).

use super::*;

/// A preempted CTA: its warps with their progress, waiting to be restored on some SM.
pub struct SavedCta<'a> {
    pub block: u32,
    pub fp: Res,
    pub task_left: u32,
    /// First line of the save area its context was written to (set by the engine).
    pub line: u64,
    /// When the save's last store was acknowledged (set by the engine): its restore
    /// cannot start before.
    pub saved_by: u64,
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
            // A warp of this CTA that finished early left its slot free, and a CTA placed
            // since may have taken it: only the live warps that are still this CTA's move.
            let w = &self.warps[id as usize];
            if !w.live || w.cta as usize != slot {
                continue;
            }
            // Detach from the scheduler, then move the warp out.
            let s = self.warps[id as usize].sched as usize;
            let sc = &mut self.scheds[s];
            if let Some(p) = sc.warps.iter().position(|&x| x == id) {
                sc.warps.remove(p);
            }
            if sc.greedy == self.place[id as usize].1 {
                sc.greedy = NONE;
            }
            let mut w = std::mem::replace(&mut self.warps[id as usize], Warp::new());
            self.warps[id as usize].gen = w.gen.wrapping_add(1);
            self.warps[id as usize].sched = s as u8;
            self.sync(id);
            for i in 0..MAX_LOADS {
                if let Some(p) = w.take_load(i) {
                    self.unknown -= 1;
                    for &d in &p.dsts[..p.ndst as usize] {
                        w.set_reg(d, t, true);
                    }
                }
            }
            // Memory instructions waiting in the collector for the load/store unit are
            // dropped with it (their pending-load slots were only reserved).
            w.clear_loads();
            // Instructions still in the operand collector (their dispatch, decided later,
            // is dropped for the saved warp) complete by the restore as well.
            for r in w.regs.iter_mut() {
                if *r == INF {
                    *r = t;
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
            line: 0,
            saved_by: 0,
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

    /// Saved context bytes of CTA slot `slot` (registers + shared memory).
    pub fn context_bytes(&self, slot: usize) -> u64 {
        let c = &self.ctas[slot];
        c.fp.regs as u64 * 4 + c.fp.smem as u64
    }
}

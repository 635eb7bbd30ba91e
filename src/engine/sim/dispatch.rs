//! CTA dispatch: which kernel places its next CTA (or persistent worker, or saved
//! context) on which SM, under SM masks, CTA quotas, resource fractions, the alone-run
//! spreading rule and time-sliced contexts; and releasing a CTA's resources.

use super::*;

impl Engine<'_, '_> {
    /// Places CTAs on every SM, one per SM per round, until nothing more fits.
    pub(super) fn dispatch_all(&mut self, t: u64) -> Result<()> {
        loop {
            let mut any = false;
            for s in 0..self.sms.len() {
                if self.place_one(s, t)? {
                    any = true;
                }
            }
            if !any {
                return Ok(());
            }
        }
    }

    pub(super) fn dispatch_sm(&mut self, s: usize, t: u64) -> Result<()> {
        while self.place_one(s, t)? {}
        Ok(())
    }

    pub(super) fn can_place(&self, k: usize, s: usize) -> bool {
        let kr = &self.kruns[k];
        if !kr.has_work() {
            return false;
        }
        let app = kr.app;
        let r = &self.rt[app];
        if !r.sms[s] {
            return false;
        }
        let sm = &self.sms[s];
        let mine = sm
            .ctas
            .iter()
            .filter(|c| c.live && c.app as usize == app)
            .count() as u32;
        if let Some(q) = &r.quota {
            if mine >= q[s] {
                return false;
            }
        }
        if self.apps[app].persistent.is_some() && mine >= r.workers {
            return false;
        }
        if self.cfg.placement.spread_alone && self.running().count() == 1 {
            // Spread over the SMs the application may use, not the whole GPU.
            let sms = r.sms.iter().filter(|x| **x).count() as u32;
            let cap = alone_resident_ctas(kr.ctas_per_sm, kr.blocks as u64, sms.max(1));
            if mine >= cap {
                return false;
            }
        }
        if sm.free_cta_slot().is_none() {
            return false;
        }
        let used = if self.cfg.placement.time_slicing {
            &sm.app_used[app]
        } else {
            &sm.used
        };
        if !used.fits(&kr.fp, &self.limits, 1.0) {
            return false;
        }
        if sm.storage.as_ref().is_some_and(|st| !st.fits(&kr.fp)) {
            return false;
        }
        r.fraction >= 1.0 || sm.app_used[app].fits(&kr.fp, &self.limits, r.fraction)
    }

    /// Places one CTA on SM `s` if some kernel may; returns whether it did.
    pub(super) fn place_one(&mut self, s: usize, t: u64) -> Result<bool> {
        let cands: Vec<usize> = self.running().collect();
        if cands.is_empty() {
            return Ok(false);
        }
        let n = cands.len();
        let start = match self.cfg.placement.order {
            DispatchOrder::LeftOver => 0,
            DispatchOrder::RoundRobin => self.rr[s] % n,
        };
        let mut chosen = None;
        for i in 0..n {
            let k = cands[(start + i) % n];
            if self.can_place(k, s) {
                chosen = Some(k);
                break;
            }
        }
        let Some(k) = chosen else {
            return Ok(false);
        };
        if let Some(i) = cands.iter().position(|&c| c == k) {
            self.rr[s] = i + 1;
        }
        let slot = self.sms[s].free_cta_slot().unwrap();
        let kr = &mut self.kruns[k];
        let app = kr.app;
        let fp = kr.fp;
        kr.live += 1;
        if kr.start.is_none() {
            kr.start = Some(t);
        }
        let r = &mut self.rt[app];
        if r.start.is_none() {
            r.start = Some(t);
        }
        let sm = &mut self.sms[s];
        sm.used.add(&fp);
        sm.app_used[app].add(&fp);
        let c = &mut sm.ctas[slot];
        c.live = true;
        c.app = app as u16;
        c.krun = k as u32;
        c.fp = fp;
        c.task_left = 0;
        if let Some(st) = &mut sm.storage {
            c.offs = st.alloc(&fp).expect("can_place checked the ranges");
        }
        let persistent = self.apps[app].persistent;
        let kr = &mut self.kruns[k];
        if let Some(saved) = kr.saved.pop() {
            let restore = self.spec.reconfig.context_switch_overhead.0
                + saved
                    .bytes()
                    .div_ceil(self.spec.reconfig.context_save_bandwidth.0.max(1));
            self.ctr[app].dram_bytes += saved.bytes();
            self.sms[s]
                .restore_cta(slot, saved, t + restore)
                .map_err(|e| bad(e.to_string()))?;
        } else {
            let block = kr.next_block;
            kr.next_block += 1;
            let src = kr.src;
            let ops = kr.ops.clone();
            let mut start = t + self.spec.launch.cta_latency.0;
            if let Some(p) = persistent {
                // A worker pulls its first task with an atomic.
                start += self.pull_latency;
                self.sms[s].ctas[slot].task_left = p.task_blocks.max(1) - 1;
            }
            self.sms[s]
                .start_block(slot, block, src, &ops, start)
                .map_err(|e| bad(e.to_string()))?;
        }
        let kr = &mut self.kruns[k];
        if kr.next_block >= kr.blocks && kr.saved.is_empty() && !kr.last_fired {
            kr.last_fired = true;
            self.hooks.push(Hook::LastCtaDispatched {
                app,
                kernel: kr.kidx,
            });
        }
        self.wake_sm(s, t);
        Ok(true)
    }

    pub(super) fn release(&mut self, s: usize, slot: usize) {
        let sm = &mut self.sms[s];
        let c = &mut sm.ctas[slot];
        let fp = c.fp;
        let app = c.app as usize;
        c.live = false;
        c.warps.clear();
        let offs = c.offs;
        if let Some(st) = &mut sm.storage {
            st.free(offs);
        }
        sm.used.sub(&fp);
        sm.app_used[app].sub(&fp);
    }
}

//! CTA dispatch: which kernel places its next CTA (or persistent worker, or saved
//! context) on which SM, under SM masks, CTA quotas, resource fractions, the alone-run
//! spreading rule and time-sliced contexts; and releasing a CTA's resources.

use super::*;

impl Engine<'_, '_> {
    /// Places CTAs on every SM, one per SM per round, until nothing more fits. Each round
    /// visits the least loaded SMs (fewest resident warps) first, equal loads from the SM
    /// after the last one that took a CTA on (GPGPU-Sim's rotating
    /// `m_last_cluster_issue`). On an idle GPU that is plain breadth-first order; a kernel
    /// that arrives later, or relaunches, goes to the emptiest SMs instead of piling onto
    /// SM 0 beside whatever runs there, so placement does not depend on which application
    /// is listed first.
    pub(super) fn dispatch_all(&mut self, t: u64) -> Result<()> {
        if self.cfg.placement.order == DispatchOrder::RoundRobin {
            return self.dispatch_turns(t);
        }
        let n = self.sms.len();
        let mut order: Vec<usize> = Vec::with_capacity(n);
        loop {
            let mut any = false;
            let start = self.next_sm;
            order.clear();
            order.extend((0..n).map(|i| (start + i) % n));
            // Stable: equal loads keep the rotation order.
            order.sort_by_key(|&s| self.sms[s].used.warps);
            for &s in &order {
                if self.place_one(s, t)? {
                    any = true;
                    self.next_sm = (s + 1) % n;
                }
            }
            if !any {
                return Ok(());
            }
        }
    }

    /// The running kernels in the order the dispatcher considers them. Left-Over: the
    /// applications' arrival order (listing order among equal arrival times), which is
    /// their priority: one that arrived first is served first wherever it is listed.
    /// Round-robin: by application name (then position, for equal names): applications
    /// that take turns have no order of their own, so listing them differently changes
    /// nothing.
    fn turn_order(&self) -> Vec<usize> {
        let mut c: Vec<usize> = self.running().collect();
        match self.cfg.placement.order {
            DispatchOrder::RoundRobin => c.sort_by(|&a, &b| {
                let (x, y) = (self.kruns[a].app, self.kruns[b].app);
                self.apps[x].name.cmp(&self.apps[y].name).then(x.cmp(&y))
            }),
            DispatchOrder::LeftOver => c.sort_by_key(|&k| {
                let a = self.kruns[k].app;
                (self.apps[a].arrival, a)
            }),
        }
        c
    }

    /// Round-robin dispatch over the whole GPU: the kernels take turns, one CTA each, and
    /// each puts its CTA on the SM that holds fewest of its application's CTAs (then the
    /// least loaded, then the next in rotation). Every kernel spreads as it would alone
    /// whatever the others do, so the listing order of the applications changes nothing
    /// but who picks first among equal SMs.
    fn dispatch_turns(&mut self, t: u64) -> Result<()> {
        let n = self.sms.len();
        loop {
            let cands = self.turn_order();
            let nk = cands.len();
            let mut any = false;
            for i in 0..nk {
                let k = cands[(self.next_kernel + i) % nk.max(1)];
                let app = self.kruns[k].app;
                let start = self.next_sm;
                let best = (0..n)
                    .map(|j| (start + j) % n)
                    .filter(|&s| self.can_place(k, s))
                    .min_by_key(|&s| {
                        let sm = &self.sms[s];
                        (sm.app_used[app].ctas, sm.used.warps)
                    });
                if let Some(s) = best {
                    self.place_kernel(k, s, t)?;
                    self.next_sm = (s + 1) % n;
                    any = true;
                }
            }
            if nk > 0 {
                self.next_kernel = (self.next_kernel + 1) % nk;
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
        // (Resident CTAs of the application here: its footprint counts one per CTA.)
        let mine = sm.app_used[app].ctas;
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
        let cands = self.turn_order();
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
        self.place_kernel(k, s, t)?;
        Ok(true)
    }

    /// Places the next CTA (or saved context, or persistent worker) of kernel run `k` on
    /// SM `s`, which `can_place` allowed.
    fn place_kernel(&mut self, k: usize, s: usize, t: u64) -> Result<()> {
        let pos = self.turn_order().iter().position(|&c| c == k);
        if let Some(i) = pos {
            self.rr[s] = i + 1;
        }
        let slot = self.sms[s].free_cta_slot().unwrap();
        let kr = &mut self.kruns[k];
        let app = kr.app;
        let fp = kr.fp;
        kr.live += 1;
        kr.ran_on[s / 64] |= 1 << (s % 64);
        if kr.start.is_none() {
            kr.start = Some(t + self.off);
        }
        let r = &mut self.rt[app];
        if r.start.is_none() {
            r.start = Some(t + self.off);
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
        c.exiting = false;
        if let Some(st) = &mut sm.storage {
            c.offs = st.alloc(&fp).expect("can_place checked the ranges");
        }
        let persistent = self.apps[app].persistent;
        let kr = &mut self.kruns[k];
        if let Some(saved) = kr.saved.pop() {
            // The restore handler starts after the fixed overhead and reads the context
            // back through the memory system; the warps resume once the last line is in.
            let r = &self.spec.reconfig;
            let seg = [(saved.line, saved.bytes())];
            let ready = self.mem.bulk_read(
                s,
                app,
                &seg,
                r.context_save_bandwidth.0,
                (t + r.context_switch_overhead.0).max(saved.saved_by),
                &mut self.ctr[app],
            );
            self.sms[s]
                .restore_cta(slot, saved, ready)
                .map_err(|e| bad(e.to_string()))?;
        } else {
            let block = kr.next_block;
            kr.next_block += 1;
            let src = kr.src;
            let ops = kr.ops.clone();
            let mut start = t + self.spec.launch.cta_latency.0;
            if let Some(p) = persistent {
                // A worker pulls its first task with an atomic once it is running.
                start = self.pull(s, k, start);
                self.sms[s].ctas[slot].task_left = p.task_blocks.max(1) - 1;
            }
            let skip = self
                .ff
                .as_mut()
                .map_or(0, |f| f.take_prefix(s, slot, k as u32));
            let (live, skipped) = self.sms[s]
                .start_block_from(slot, block, src, &ops, start, skip)
                .map_err(|e| self.corrupt(Some(k), e))?;
            if skipped > 0 {
                self.ff_credit_prefix(app, skipped);
            }
            self.empty_block(s, slot, start, live);
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
        Ok(())
    }

    pub(super) fn release(&mut self, s: usize, slot: usize) {
        let sm = &mut self.sms[s];
        let c = &mut sm.ctas[slot];
        let fp = c.fp;
        let app = c.app as usize;
        c.live = false;
        c.exiting = false;
        c.empty = false;
        c.warps.clear();
        let offs = c.offs;
        if let Some(st) = &mut sm.storage {
            st.free(offs);
        }
        sm.used.sub(&fp);
        sm.app_used[app].sub(&fp);
    }
}

//! The kernel and CTA life cycle of a run: a kernel launch (`launch`), a CTA's end and
//! what it frees (`cta_done`, the empty and persistent-worker blocks of `empty_done` and
//! `worker_exit`, logical blocks pulled by `pull`), a launch's retirement (`retire`) and its
//! end, which relaunches or finishes its application (`kernel_done`).

use super::*;
use crate::engine::memsys::Atomic;

impl<'a> Engine<'a, '_> {
    pub(super) fn launch(&mut self, app: usize, t: u64) -> Result<()> {
        let a = &self.apps[app];
        let r = &self.rt[app];
        if r.krun.is_some() || (r.done && matches!(self.cfg.mode, RunMode::Budget(_))) {
            return Ok(());
        }
        let limit = self.spec.launch.max_concurrent_kernels.max(1) as usize;
        if self.running().count() >= limit {
            if !self.launch_wait.contains(&app) {
                self.launch_wait.push_back(app);
            }
            return Ok(());
        }
        self.ff_first_launch(app, t);
        let r = &mut self.rt[app];
        let kidx = r.next_kernel;
        let src: &'a dyn KernelSource = a.kernels[kidx].as_ref();
        let (ops, fp, cps) = self.ops[app][kidx].clone();
        let id = self.kruns.len();
        self.kruns.push(KRun {
            app,
            kidx,
            pass: r.pass,
            src,
            ops,
            fp,
            ctas_per_sm: cps,
            next_block: 0,
            blocks: src.num_ctas(),
            live: 0,
            arrival: t + self.off,
            start: None,
            insts0: (self.ctr[app].warp_insts, self.ctr[app].thread_insts),
            saved: Vec::new(),
            last_fired: false,
            done: false,
            ran_on: vec![0; self.sms.len().div_ceil(64)],
        });
        r.krun = Some(id);
        if self.apps[app].persistent.is_some() {
            // The host resets the launch's block counter: the write leaves it in the L2.
            self.mem
                .store(0, app, counter_line(id), 1, 0, t, &mut self.ctr[app]);
        }
        self.hooks.push(Hook::KernelArrival { app, kernel: kidx });
        // Dispatch once every kernel arriving at this cycle is known.
        self.push(t, Ev::Dispatch);
        self.yield_idle_context(t)
    }

    pub(super) fn running(&self) -> impl Iterator<Item = usize> + '_ {
        self.rt.iter().filter_map(|r| r.krun)
    }

    pub(super) fn cta_done(&mut self, s: usize, slot: usize, t: u64) -> Result<()> {
        self.now = self.now.max(t);

        let k = self.sms[s].ctas[slot].krun as usize;
        let app = self.kruns[k].app;
        self.ctr[app].ctas_done += 1;
        if let Some(f) = &mut self.ff {
            f.completed(app, t, self.ctr[app].warp_insts, &self.sms[s].ctas[slot]);
        }
        if let Some(p) = self.apps[app].persistent {
            let mine = self.sms[s].app_used[app].ctas;
            let stay = self.rt[app].sms[s] && mine <= self.rt[app].workers;
            let task_left = self.sms[s].ctas[slot].task_left;
            // Next logical block: within the task, or (between tasks, when not preempted)
            // through another atomic pull.
            if self.kruns[k].has_block() && (task_left > 0 || stay) {
                let mut start = t + 1;
                if task_left > 0 {
                    self.sms[s].ctas[slot].task_left -= 1;
                } else {
                    start = self.pull(s, k, t + 1);
                    self.sms[s].ctas[slot].task_left = p.task_blocks.max(1) - 1;
                }
                let kr = &mut self.kruns[k];
                let block = kr.next_block;
                kr.next_block += 1;
                let src = kr.src;
                let ops = kr.ops.clone();
                let last = kr.next_block >= kr.blocks && !kr.last_fired;
                if last {
                    kr.last_fired = true;
                    let kidx = kr.kidx;
                    self.hooks
                        .push(Hook::LastCtaDispatched { app, kernel: kidx });
                }
                let live = self.sms[s]
                    .start_block(slot, block, src, &ops, start)
                    .map_err(|e| bad(e.to_string()))?;
                self.empty_block(s, slot, start, live);
                self.wake_sm(s, start);
                return Ok(());
            }
            if stay && !self.kruns[k].has_block() {
                // The exit test: the worker's next atomic finds the counter past the grid;
                // it leaves when that answer is back.
                let back = self.pull(s, k, t + 1);
                self.sms[s].ctas[slot].exiting = true;
                self.push(back, Ev::Exit(s as u32, slot as u32));
                return Ok(());
            }
        }
        self.retire(s, slot, k, t)
    }

    /// A block that has no instruction to issue completes when it starts (it would
    /// otherwise hold its slot forever).
    pub(super) fn empty_block(&mut self, s: usize, slot: usize, start: u64, live: u32) {
        if live == 0 {
            self.sms[s].ctas[slot].empty = true;
            self.push(start, Ev::Empty(s as u32, slot as u32));
        }
    }

    /// The completion of an empty block (unless its slot was dropped meanwhile).
    pub(super) fn empty_done(&mut self, s: usize, slot: usize, t: u64) -> Result<()> {
        let c = &mut self.sms[s].ctas[slot];
        if !(c.live && c.empty) {
            return Ok(());
        }
        c.empty = false;
        self.cta_done(s, slot, t)
    }

    /// A worker whose exit test came back leaves (unless its CTA was dropped meanwhile).
    pub(super) fn worker_exit(&mut self, s: usize, slot: usize, t: u64) -> Result<()> {
        let c = &mut self.sms[s].ctas[slot];
        if !(c.live && c.exiting) {
            return Ok(());
        }
        c.exiting = false;
        let k = c.krun as usize;
        self.retire(s, slot, k, t)
    }

    /// A worker's `atomicAdd` on its kernel launch's logical-block counter, issued from SM
    /// `s` at `t`: it crosses the NoC to the L2 slice holding the counter and is serialised
    /// in that slice's atomic unit with every other atomic there. Returns when the old
    /// value is back at the SM. The counter is written when the kernel is launched (the
    /// host's reset), so it is normally in the L2; should it have been evicted, the reply
    /// waits the unloaded miss latency (the DRAM read itself is simulated).
    pub(super) fn pull(&mut self, s: usize, k: usize, t: u64) -> u64 {
        let app = self.kruns[k].app;
        let line = counter_line(k);
        match self
            .mem
            .atomic(s, app, line, 1, Atomic::ONE, t, None, &mut self.ctr[app])
        {
            Some(back) => back,
            None => t + self.pull_latency + self.mem.lat.dram_extra,
        }
    }

    /// A CTA (or worker) leaves SM `s`: its resources are freed, and the kernel ends when
    /// it was the last.
    fn retire(&mut self, s: usize, slot: usize, k: usize, t: u64) -> Result<()> {
        self.release(s, slot);
        let kr = &mut self.kruns[k];
        kr.live -= 1;
        if !kr.has_work() && kr.live == 0 {
            self.kernel_done(k, t)?;
            self.yield_idle_context(t)?;
            self.dispatch_all(t)?;
        } else {
            self.dispatch_sm(s, t)?;
        }
        Ok(())
    }

    pub(super) fn kernel_done(&mut self, k: usize, t: u64) -> Result<()> {
        let ks = self.kernel_stats(k, t + self.off);
        let kr = &mut self.kruns[k];
        kr.done = true;
        let app = kr.app;
        let kidx = kr.kidx;
        self.rt[app].kernels.push(ks);
        self.hooks.push(Hook::KernelDeparture { app, kernel: kidx });
        if self.spec.l1d.flush_at_kernel_end {
            // The SMs that ran the kernel flush their L1 (the others hold none of its
            // lines).
            for s in 0..self.sms.len() {
                if self.kruns[k].ran_on[s / 64] >> (s % 64) & 1 == 1 {
                    self.mem.flush_l1(s, t);
                }
            }
        }
        let napps = self.apps[app].kernels.len();
        // A hardware queue is free: the longest-waiting launch takes it.
        if let Some(w) = self.launch_wait.pop_front() {
            self.push(t, Ev::Launch(w as u32));
        }
        let r = &mut self.rt[app];
        r.krun = None;
        r.next_kernel += 1;
        if r.next_kernel >= napps {
            r.passes += 1;
            let relaunch = match self.cfg.mode {
                RunMode::Completion => {
                    r.done = true;
                    r.end = Some(t + self.off);
                    false
                }
                RunMode::Budget(_) => !r.done,
                RunMode::Window(_) => true,
            };
            let r = &mut self.rt[app];
            if !relaunch {
                return Ok(());
            }
            r.next_kernel = 0;
            r.pass += 1;
        }
        // At least a cycle between one launch of the application and the next: a kernel
        // can take no time (a CTA whose only instruction issues in its first cycle), and
        // relaunching such a kernel at the same cycle forever would never move time on.
        let lat = self.spec.launch.kernel_latency.0.max(1);
        if self.rt[app].next_kernel == 0 {
            // A pass ended: fast-forward may retire whole passes like it.
            self.ff_pass(app, t)?;
        }
        self.push(t + lat, Ev::Launch(app as u32));
        Ok(())
    }
}

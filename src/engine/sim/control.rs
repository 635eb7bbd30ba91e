//! Runtime control: controller hooks and the reconfiguration actions they return (SM
//! handover by draining or context switch, quotas, fractions, channel sets with page
//! migration, persistent-worker counts), and time slicing between contexts.

use super::*;

impl Engine<'_, '_> {
    /// Length of a time slice in core cycles.
    pub(super) fn slice_cycles(&self) -> u64 {
        self.spec
            .clocks
            .core
            .cycles_in(self.spec.reconfig.time_slice)
            .max(1)
    }

    pub(super) fn switch_context(&mut self, t: u64) -> Result<()> {
        // Contexts take turns in arrival order (listing order among equal arrival
        // times), so listing the applications differently changes nothing.
        let order = self.arrival_order();
        let n = order.len();
        let cur = self.context.map_or(order[0], |c| c as usize);
        let at = order.iter().position(|&a| a == cur).unwrap_or(0);
        let next = (1..=n)
            .map(|i| order[(at + i) % n])
            .find(|&a| self.rt[a].krun.is_some() && !self.rt[a].done);
        let slice = self.slice_cycles();
        // The next slice starts when the switch is over: a context gets a whole slice of
        // execution, so a switch that costs more than a slice cannot livelock the GPU.
        let mut resume = t;
        if let Some(nx) = next {
            if nx != cur {
                // Preempting a context with resident blocks pays the switch's fixed cost
                // (`slice_switch_overhead`); one that has nothing resident (its kernel
                // ended within its slice) hands over for `context_switch_overhead`.
                let busy = self
                    .sms
                    .iter()
                    .any(|sm| sm.ctas.iter().any(|c| c.live && c.app as usize == cur));
                let fixed = if busy {
                    self.slice_switch_overhead()
                } else {
                    self.spec.reconfig.context_switch_overhead.0
                };
                let chains: Vec<Chain> = (0..self.sms.len())
                    .map(|s| self.switch_chain(s, cur, nx, t + fixed))
                    .collect();
                let bw = self.spec.reconfig.context_save_bandwidth.0;
                let done = self.mem.bulk(&chains, bw, &mut self.ctr);
                for sm in &mut self.sms {
                    for c in sm.ctas.iter_mut().filter(|c| c.live) {
                        if c.app as usize == cur {
                            c.swapped = true;
                        } else if c.app as usize == nx {
                            c.swapped = false;
                        }
                    }
                }
                for (s, done) in done.into_iter().enumerate() {
                    let sm = &mut self.sms[s];
                    sm.blocked_until = sm.blocked_until.max(done);
                    resume = resume.max(sm.blocked_until);
                }
                self.context = Some(nx as u16);
                self.ctr[nx].slice_switches += 1;
                self.ctr[nx].slice_switch_cycles += resume - t;
                for sm in &mut self.sms {
                    sm.invalidate();
                }
                self.reconfigs.push(ReconfigEvent {
                    cycle: t + self.off,
                    what: format!(
                        "time slice: {} -> {}",
                        self.apps[cur].name, self.apps[nx].name
                    ),
                });
                for s in 0..self.sms.len() {
                    let b = self.sms[s].blocked_until;
                    self.wake_sm(s, b);
                }
            }
        }
        if self.rt.iter().any(|r| !r.done) {
            self.slice_end = resume + slice;
            self.push(resume + slice, Ev::Slice);
        }
        Ok(())
    }

    /// A time-slice switch on SM `s` from context `cur` to `nx`, its fixed part over at
    /// `t`: the resident CTAs of `cur` are saved to their save areas (line writes
    /// through the memory system, acknowledged), then those of `nx` are read back from
    /// theirs. Every SM switches at once, so [`MemSys::bulk`] interleaves their lines;
    /// an SM is free again when its chain is done (`t` plus the overhead when nothing
    /// moves).
    fn switch_chain(&self, s: usize, cur: usize, nx: usize, t: u64) -> Chain {
        // Out: every resident block of `cur`; back: those of `nx` whose context was saved.
        let segs = |app: usize, saved: bool| -> Vec<(u64, u64)> {
            (0..self.sms[s].ctas.len())
                .filter(|&c| {
                    let x = &self.sms[s].ctas[c];
                    x.live && x.app as usize == app && x.swapped == saved
                })
                .map(|c| {
                    (
                        self.mem.save_line(self.save_key(app), s, c),
                        self.sms[s].context_bytes(c),
                    )
                })
                .collect()
        };
        Chain {
            sm: s,
            start: t,
            steps: vec![
                Step {
                    app: cur,
                    write: true,
                    segs: segs(cur, false),
                },
                Step {
                    app: nx,
                    write: false,
                    segs: segs(nx, true),
                },
            ],
        }
    }

    /// Fixed cost of a time-slice switch in core cycles (`reconfig.slice_switch_overhead`,
    /// else `context_switch_overhead`).
    fn slice_switch_overhead(&self) -> u64 {
        let r = &self.spec.reconfig;
        r.slice_switch_overhead
            .map_or(r.context_switch_overhead.0, |t| {
                self.spec.clocks.core.cycles_in(t)
            })
    }

    /// The applications in arrival order, listing order among equal arrival times.
    /// Which save area `app`'s contexts use: its place in the arrival order, so that the
    /// listing order of applications arriving at different times moves no address
    /// (the arrival-order invariant, ARCHITECTURE.md).
    fn save_key(&self, app: usize) -> usize {
        self.arrival_order()
            .iter()
            .position(|&a| a == app)
            .unwrap_or(app)
    }

    pub(super) fn arrival_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.apps.len()).collect();
        order.sort_by_key(|&a| (self.apps[a].arrival, a));
        order
    }

    /// Time slicing: a context whose application has no work — finished, or not arrived
    /// yet — gives the GPU up at once instead of holding it to the end of its slice. The
    /// gap between two kernels of one application is not idleness: its next kernel is
    /// already queued in its stream (launches are asynchronous), so it keeps its slice.
    pub(super) fn yield_idle_context(&mut self, t: u64) -> Result<()> {
        if let Some(c) = self.context {
            let owner = &self.rt[c as usize];
            let idle = owner.krun.is_none() && (owner.done || self.apps[c as usize].arrival > t);
            if idle && self.rt.iter().any(|r| r.krun.is_some()) {
                self.switch_context(t)?;
            }
        }
        Ok(())
    }

    pub(super) fn view(&self) -> View {
        View {
            now: self.now + self.off,
            apps: (0..self.apps.len())
                .map(|a| {
                    let r = &self.rt[a];
                    let kr = r.krun.map(|k| &self.kruns[k]);
                    AppView {
                        counters: self.ctr[a].clone(),
                        sms: r.sms.clone(),
                        ctas: self.sms.iter().map(|sm| sm.app_used[a].ctas).collect(),
                        sm_insts: self.sms.iter().map(|sm| sm.app_insts[a]).collect(),
                        kernel: kr.map(|k| k.kidx),
                        blocks_left: kr.map(|k| k.blocks - k.next_block).unwrap_or(0),
                        blocks_total: kr.map(|k| k.blocks).unwrap_or(0),
                        done: r.done,
                    }
                })
                .collect(),
        }
    }

    pub(super) fn run_hooks(&mut self) -> Result<()> {
        if let Some(f) = self.ff.as_mut().filter(|f| !f.pending.is_empty()) {
            // An epoch the controller was called for inside a co-run jump acted, and its
            // event has come: its actions take effect now, at its time.
            let acts = std::mem::take(&mut f.pending);
            f.dirty = true;
            f.acted(placing(&acts), self.now + self.off);
            self.apply_all(acts)?;
        }
        while !self.hooks.is_empty() {
            let hooks = std::mem::take(&mut self.hooks);
            for h in hooks {
                let view = self.view();
                let mut acts = Vec::new();
                let passive = h == Hook::Epoch && self.ctl.epoch_passive();
                self.ctl.on_hook(h, &view, &mut acts);
                if let Some(f) = &mut self.ff {
                    // A hook breaks a steady span (fast-forward measures afresh), except
                    // a passive epoch that changed nothing.
                    if !(passive && acts.is_empty()) {
                        f.dirty = true;
                    }
                    // Any action but a sample request starts a new co-run regime (pass
                    // marks before it are not compared with those after).
                    f.acted(placing(&acts), self.now + self.off);
                }
                self.apply_all(acts)?;
            }
        }
        Ok(())
    }

    /// Applies one hook's actions. All take effect before CTAs are placed again: the
    /// application whose action comes first gets no first pick of what the others'
    /// actions free.
    fn apply_all(&mut self, acts: Vec<Action>) -> Result<()> {
        let mut dispatch = false;
        for a in acts {
            dispatch |= self.apply(a)?;
        }
        if dispatch {
            self.dispatch_all(self.now)?;
        }
        Ok(())
    }

    /// Applies one action; returns whether CTA placement may have changed (the caller
    /// dispatches once all of a hook's actions are applied).
    pub(super) fn apply(&mut self, a: Action) -> Result<bool> {
        let t = self.now;
        let nsm = self.sms.len();
        let napps = self.apps.len();
        let check = |app: usize| -> Result<()> {
            if app >= napps {
                return Err(Error::internal(format!(
                    "the controller named application {app}, there are {napps}"
                )));
            }
            Ok(())
        };
        match a {
            Action::SetSms { app, sms, handover } => {
                check(app)?;
                self.set_sms(app, sms, handover)?;
                Ok(true)
            }
            Action::SetQuota { app, quota } => {
                check(app)?;
                if quota.as_ref().is_some_and(|q| q.len() != nsm) {
                    return Err(Error::internal(format!(
                        "the controller gave a CTA quota of {} entries for {nsm} SMs",
                        quota.as_ref().map_or(0, |q| q.len())
                    )));
                }
                self.rt[app].quota = quota;
                Ok(true)
            }
            Action::SetFraction { app, fraction } => {
                check(app)?;
                self.rt[app].fraction = fraction.unwrap_or(1.0).clamp(1e-6, 1.0);
                Ok(true)
            }
            Action::SetChannels {
                app,
                channels,
                migration,
            } => {
                check(app)?;
                self.set_channels(app, channels, migration)?;
                Ok(false)
            }
            Action::SetWorkers { app, per_sm } => {
                check(app)?;
                self.rt[app].workers = per_sm;
                Ok(true)
            }
            Action::Sample { at, id } => {
                // The controller speaks absolute time; the queue holds engine time.
                self.push(at.saturating_sub(self.off).max(t), Ev::Sample(id));
                if let Some(f) = &mut self.ff {
                    f.samples_pending += 1;
                }
                Ok(false)
            }
            Action::Stop => {
                self.stop = true;
                Ok(false)
            }
        }
    }

    /// [`Action::SetSms`]: `app` keeps the SMs set in `sms`; with a context switch, its
    /// CTAs on the SMs it loses are saved ([`Self::save_ctas`]).
    fn set_sms(&mut self, app: usize, sms: Vec<bool>, handover: Handover) -> Result<()> {
        let t = self.now;
        let nsm = self.sms.len();
        if sms.len() != nsm {
            return Err(Error::internal(format!(
                "the controller gave application {} an SM mask of {} entries for {nsm} SMs",
                self.apps[app].name,
                sms.len()
            )));
        }
        let gave = sms
            .iter()
            .zip(&self.rt[app].sms)
            .filter(|(n, o)| !**n && **o)
            .count();
        self.reconfigs.push(ReconfigEvent {
            cycle: t + self.off,
            what: format!(
                "{}: {} SMs ({:?}, {} taken away)",
                self.apps[app].name,
                sms.iter().filter(|x| **x).count(),
                handover,
                gave
            ),
        });
        if handover == Handover::Switch {
            let lose: Vec<usize> = (0..nsm)
                .filter(|&s| !sms[s] && self.rt[app].sms[s])
                .collect();
            self.save_ctas(app, &lose, t);
        }
        self.rt[app].sms = sms;
        Ok(())
    }

    /// Context switch of `app` off the SMs `lose` at `t`: its CTAs there are saved
    /// through the memory system, every SM at once ([`MemSys::bulk`]; an SM is free once
    /// its trap handler's last store is acknowledged), and wait in their kernel runs to be
    /// restored.
    fn save_ctas(&mut self, app: usize, lose: &[usize], t: u64) {
        let r = &self.spec.reconfig;
        let (start, bw) = (t + r.context_switch_overhead.0, r.context_save_bandwidth.0);
        let mut saved = Vec::with_capacity(lose.len());
        let mut chains = Vec::with_capacity(lose.len());
        for &s in lose {
            let slots: Vec<usize> = (0..self.sms[s].ctas.len())
                .filter(|&c| {
                    let x = &self.sms[s].ctas[c];
                    // (A worker whose exit test is in flight leaves anyway.)
                    x.live && x.app as usize == app && !x.exiting
                })
                .collect();
            let mut here = Vec::with_capacity(slots.len());
            for slot in slots {
                let k = self.sms[s].ctas[slot].krun as usize;
                let mut c = self.sms[s].save_cta(slot, t);
                c.line = self.mem.save_line(self.save_key(app), s, slot);
                here.push((k, c));
                self.kruns[k].live -= 1;
                self.release(s, slot);
            }
            let segs: Vec<(u64, u64)> = here.iter().map(|(_, c)| (c.line, c.bytes())).collect();
            if segs.iter().any(|x| x.1 > 0) {
                // The trap handler starts after the fixed overhead; the SM is free, and
                // the contexts can be read back, once its last store is acknowledged.
                chains.push(Chain {
                    sm: s,
                    start,
                    steps: vec![Step {
                        app,
                        write: true,
                        segs,
                    }],
                });
                saved.push((s, Some(chains.len() - 1), here));
            } else {
                saved.push((s, None, here));
            }
        }
        let done = self.mem.bulk(&chains, bw, &mut self.ctr);
        for (s, chain, here) in saved {
            if let Some(i) = chain {
                let d = done[i];
                self.ctr[app].switch_sm_cycles += d - t;
                let sm = &mut self.sms[s];
                sm.blocked_until = sm.blocked_until.max(d);
            }
            for (k, mut c) in here {
                if let Some(i) = chain {
                    c.saved_by = done[i];
                }
                self.kruns[k].saved.push(c);
            }
        }
    }

    /// [`Action::SetChannels`]: `app` moves to `channels`, its pages migrating by
    /// `migration`; it pauses for what the migration costs it.
    fn set_channels(
        &mut self,
        app: usize,
        channels: Vec<u32>,
        migration: crate::engine::config::Migration,
    ) -> Result<()> {
        let t = self.now;
        let m = self
            .mem
            .migrate(
                app,
                channels.clone(),
                migration,
                t,
                self.spec,
                &mut self.ctr[app],
            )
            .map_err(|e| {
                Error::internal(format!(
                    "the controller moved application {} to an impossible channel set: {e}",
                    self.apps[app].name
                ))
            })?;
        self.reconfigs.push(ReconfigEvent {
            cycle: t + self.off,
            what: format!(
                "{}: {} channels ({:?}, {} pages {}, paused {} cycles)",
                self.apps[app].name,
                channels.len(),
                migration,
                m.pages,
                if m.on_demand {
                    "to move on demand"
                } else {
                    "moved"
                },
                m.pause
            ),
        });
        let pause = m.pause;
        self.ctr[app].migration_pause_cycles += pause;
        if pause > 0 {
            self.paused[app] = self.paused[app].max(t + pause);
            for s in 0..self.sms.len() {
                self.wake_sm(s, t + pause);
            }
        }
        Ok(())
    }
}

/// Actions that change what runs where (all but sample requests, which change nothing
/// until the controller answers them).
fn placing(acts: &[Action]) -> u64 {
    acts.iter()
        .filter(|a| !matches!(a, Action::Sample { .. }))
        .count() as u64
}

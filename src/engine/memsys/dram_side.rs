//! The DRAM side of the memory hierarchy: an L2 miss or write-back becomes a channel
//! request (`dram_read`, `writeback`, `push_dram`), each channel's scheduling decisions run
//! as engine events (`wake_channel`, `schedule`, `run_channel`), and a finished access
//! resolves its L2 fill and every load waiting on it (`complete`). A backed-up channel
//! delays its slices' inputs (`backpressure`).

use super::*;

impl MemSys {
    /// Head-of-line delay at an L2 slice whose channel is backed up: the channel's
    /// scheduler queue and its slices' miss and L2-to-DRAM queues are finite, so once the
    /// backlog exceeds them the slice's input stalls until the channel has drained the
    /// excess.
    pub(super) fn backpressure(&self, channel: u32) -> u64 {
        let ch = &self.chans[channel as usize];
        let excess = ch.queued().saturating_sub(self.queue_cap);
        if excess == 0 {
            return 0;
        }
        self.to_core(excess as u64 * ch.config().timing.burst)
    }

    pub(super) fn accesses_for(&self, sectors: u8) -> u32 {
        let bytes = sectors.count_ones() as u64 * self.sector_bytes;
        bytes.div_ceil(self.access_bytes).max(1) as u32
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn dram_read(
        &mut self,
        app: usize,
        sid: u32,
        at: At,
        sectors: u8,
        loc: Location,
        t: u64,
        in_l2: bool,
        ctr: &mut Counters,
    ) -> u32 {
        let k = self.accesses_for(sectors);
        let g = self.l2fills.insert(L2Fill {
            app: app as u16,
            slice: sid,
            line: at.line,
            key: at.key,
            in_l2,
            remaining: k,
            done: 0,
            waiters: SmallVec::new(),
        });
        ctr.dram_reads += k as u64;
        ctr.dram_bytes += k as u64 * self.access_bytes;
        if in_l2 {
            self.unresolved[sid as usize] += 1;
        }
        self.push_dram(loc, g as u64, false, k, t + self.lat.dram_extra);
        g
    }

    /// Queues `bursts` accesses to `loc` arriving at core time `t` (one channel request).
    pub(super) fn push_dram(
        &mut self,
        loc: Location,
        id: u64,
        is_write: bool,
        bursts: u32,
        t: u64,
    ) {
        let c = loc.channel as usize;
        if self.later.any(c) {
            self.release_later(c, self.to_dram(t));
        }
        let arrival = self.to_dram(t).max(self.last_arrival[c]);
        self.last_arrival[c] = arrival;

        self.chans[c].push(DramRequest {
            id,
            bank: loc.bank,
            row: loc.row,
            is_write,
            bursts: bursts.min(u16::MAX as u32) as u16,
            arrival,
        });
        self.wake_channel(c);
    }

    /// Schedules channel `c`'s next event: its next decision, or the arrival of a request
    /// queued ahead of time (`memsys/bulk.rs`), whichever is first.
    fn wake_channel(&mut self, c: usize) {
        let d = self.chans[c].next_decision();
        let d = match self.later.next(c) {
            Some(a) => Some(d.map_or(a, |d| d.min(a))),
            None => d,
        };
        if let Some(d) = d {
            self.schedule(c, d);
        }
    }

    /// Schedules channel `c`'s decision at DRAM cycle `d` unless one is due earlier.
    #[inline]
    pub(super) fn schedule(&mut self, c: usize, d: u64) {
        let t = self.to_core(d);
        if t < self.chan_sched[c] {
            self.chan_sched[c] = t;
            self.chan_events.push((t, c as u32));
        }
    }

    /// The DRAM write of the `dirty` sectors of `app`'s `line` leaving its slice at `t`
    /// (none when no sector is dirty).
    pub(super) fn writeback(
        &mut self,
        app: usize,
        line: u64,
        dirty: u8,
        t: u64,
        ctr: &mut Counters,
    ) {
        self.write_dram(app, line, dirty, t, ctr, Self::push_dram);
    }

    /// [`Self::writeback`] with the channel request queued by `push`: [`Self::push_dram`]
    /// now, or bulk traffic's queue of requests generated ahead of time.
    #[inline]
    pub(super) fn write_dram(
        &mut self,
        app: usize,
        line: u64,
        dirty: u8,
        t: u64,
        ctr: &mut Counters,
        push: impl Fn(&mut Self, Location, u64, bool, u32, u64),
    ) {
        if dirty == 0 {
            return;
        }
        let (_, loc) = self.slice_of(app, line);
        let k = self.accesses_for(dirty);
        ctr.dram_writes += k as u64;
        ctr.dram_bytes += k as u64 * self.access_bytes;
        push(
            self,
            loc,
            WRITE_FLAG | app as u64,
            true,
            k,
            t + self.lat.dram_extra,
        );
    }

    /// Runs channel `c`'s scheduling decisions due by `now`; completed reads resolve their
    /// fills (pushing to [`Self::resolved`]). `ctrs` are per-application counters.
    pub fn run_channel(&mut self, c: usize, now: u64, ctrs: &mut [Counters]) {
        self.chan_sched[c] = u64::MAX;
        let dnow = self.to_dram(now);
        if self.later.any(c) {
            self.release_later(c, dnow);
        }
        while let Some(d) = self.chans[c].next_decision() {
            if d > dnow {
                // The channel's next decision, after everything the loop pushed to it.
                self.wake_channel(c);
                return;
            }
            let Some(comp) = self.chans[c].issue_next() else {
                break;
            };
            self.complete(comp, ctrs);
        }
        self.wake_channel(c);
    }

    fn complete(&mut self, comp: Completion, ctrs: &mut [Counters]) {
        if comp.id & WRITE_FLAG != 0 {
            let app = (comp.id & !WRITE_FLAG) as usize;
            if comp.row_hit {
                if let Some(c) = ctrs.get_mut(app) {
                    c.row_hits += 1;
                }
            }
            return;
        }
        let g = comp.id as u32;
        // (The data reaches the slice when it leaves the channel's return queue.)
        let done = self.to_core(comp.left);
        let Some(f) = self.l2fills.get_mut(g) else {
            return;
        };
        f.remaining -= 1;
        f.done = f.done.max(done);
        let finished = f.remaining == 0;
        // (Read from the fill itself: looking the app up through a waiter's L1 fill costs
        // two more cache misses per DRAM access.)
        if comp.row_hit {
            if let Some(c) = ctrs.get_mut(f.app as usize) {
                c.row_hits += 1;
            }
        }
        if !finished {
            return;
        }
        let f = self.l2fills.remove(g).unwrap();
        if f.in_l2 {
            let at = At {
                line: f.line,
                key: f.key,
            };
            self.l2[f.slice as usize].resolve(at, g, f.done);
        }
        for &w in &f.waiters {
            self.finish_fill(w, f.done);
        }
        if f.in_l2 {
            self.unresolved[f.slice as usize] -= 1;
            self.drain(f.slice, ctrs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffering between an L2 slice's input and its channel's banks is GPGPU-Sim's:
    /// the channel's scheduler queue (`dram.queue`) and, per slice, its miss queue and its
    /// L2-to-DRAM queue (`l2.miss_queue`, `l2.dram_queue`). A backlog that fits costs the
    /// slices' inputs nothing; each burst beyond it holds them for one burst time.
    #[test]
    fn a_channel_backlog_beyond_its_queues_holds_the_slice_inputs() {
        for dq in [0u32, 64] {
            let spec = GpuSpec::builtin("qv100")
                .unwrap()
                .with_overrides(&[format!("l2.dram_queue={dq}")])
                .unwrap();
            let mut m = MemSys::new(&spec, 4, 1);
            let l2 = &spec.l2;
            let cap =
                spec.dram.queue as u64 + l2.slices_per_channel as u64 * (l2.miss_queue + dq) as u64;
            let loc = m.locate(0, 0);
            let c = loc.channel;
            let burst = m.chans[c as usize].config().timing.burst;
            // Requests arriving far ahead: none is served while the backlog is read.
            for i in 0..cap {
                m.push_dram(loc, i, false, 1, 1 << 40);
            }
            assert_eq!(m.backpressure(c), 0, "l2.dram_queue={dq}: a full buffer");
            for i in 0..3 {
                m.push_dram(loc, cap + i, false, 1, 1 << 40);
            }
            assert_eq!(
                m.backpressure(c),
                m.to_core(3 * burst),
                "l2.dram_queue={dq}"
            );
        }
    }
}

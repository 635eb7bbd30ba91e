//! The input of an L2 slice when the slice cannot take a request. A read that finds no
//! free MSHR, a line whose fill already has its maximum of merged requests, or a set whose
//! every way awaits a fill is retried rather than sent around the L2 (as Accel-Sim's L2
//! retries a reservation failure), and the requests behind it wait with it (head-of-line
//! blocking). A retry happens at the next known fill time of the slice; when every fill it
//! could wait for is still unresolved in DRAM, the request is parked in
//! [`MemSys::deferred`] and retried when one resolves.

use super::*;

/// An L2 access held at its slice's input (see [`MemSys::deferred`]).
#[derive(Clone, Copy)]
pub(super) struct Deferred {
    /// Its L1-side fill record (carries the SM, the waiters and the reply size).
    pub(super) fill: u32,
    pub(super) app: u16,
    pub(super) line: u64,
    pub(super) sectors: u8,
    /// When it reached the slice.
    pub(super) arrive: u64,
}

impl MemSys {
    /// Reads `line` in slice `sid` at `t`, retrying a stalled access at each later known
    /// fill time of the slice (its input is blocked meanwhile). `None`: it stalls until a
    /// fill whose time is not known yet.
    pub(super) fn l2_read(
        &mut self,
        sid: u32,
        line: u64,
        sectors: u8,
        t: u64,
    ) -> Option<(u64, Read)> {
        let s = sid as usize;
        let mut t = t;
        loop {
            match self.l2[s].read(line, sectors, t) {
                Read::Stall => {
                    t = self.l2[s].next_fill_after(t)?;
                    self.slice_free[s] = self.slice_free[s].max(t);
                }
                r => return Some((t, r)),
            }
        }
    }

    /// Parks a request at slice `sid`'s input behind those already held there; `fill` is
    /// its L1-side fill record, `t` when it reached the slice.
    pub(super) fn defer(
        &mut self,
        sid: u32,
        fill: u32,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
    ) {
        self.deferred[sid as usize].push_back(Deferred {
            fill,
            app: app as u16,
            line,
            sectors,
            arrive: t,
        });
    }

    /// Retries the requests held at slice `sid`'s input, oldest first, until one stalls
    /// again on a fill of unknown time.
    pub(super) fn drain(&mut self, sid: u32, ctrs: &mut [Counters]) {
        let s = sid as usize;
        while let Some(&d) = self.deferred[s].front() {
            let t = d.arrive.max(self.slice_free[s]);
            let app = d.app as usize;
            let Some((t, read)) = self.l2_read(sid, d.line, d.sectors, t) else {
                if self.unresolved[s] > 0 {
                    return;
                }
                self.deferred[s].pop_front();
                let (_, loc) = self.slice_of(app, d.line);
                let mut scratch = Counters::default();
                let ctr = ctrs.get_mut(app).unwrap_or(&mut scratch);
                let g = self.dram_read(app, sid, d.line, d.sectors, loc, t, false, ctr);
                self.l2fills.get_mut(g).unwrap().waiters.push(d.fill);
                continue;
            };
            self.deferred[s].pop_front();
            self.slice_free[s] = self.slice_free[s].max(t);
            // (Counted like the accesses: per lane for atomics, per sector otherwise.)
            let hits = match self.fills.get_mut(d.fill).map(|f| f.atomic_lanes) {
                Some(lanes) if lanes > 0 => lanes as u64,
                _ => d.sectors.count_ones() as u64,
            };
            let mut scratch = Counters::default();
            let ctr = ctrs.get_mut(app).unwrap_or(&mut scratch);
            match read {
                Read::Hit => {
                    ctr.l2_hits += hits;
                    self.finish_fill(d.fill, t);
                }
                Read::Merged { ready, tag } => {
                    if ready == UNKNOWN {
                        if let Some(g) = self.l2fills.get_mut(tag) {
                            g.waiters.push(d.fill);
                            continue;
                        }
                    }
                    ctr.l2_hits += hits;
                    let ready = if ready == UNKNOWN { t } else { ready.max(t) };
                    self.finish_fill(d.fill, ready);
                }
                Read::Miss { fetch, evicted } => {
                    if let Some((el, dirty)) = evicted {
                        self.writeback(app, el, dirty, t, ctr);
                    }
                    let (_, loc) = self.slice_of(app, d.line);
                    let g = self.dram_read(app, sid, d.line, fetch, loc, t, true, ctr);
                    self.l2[s].set_fill(d.line, UNKNOWN, g);
                    self.l2fills.get_mut(g).unwrap().waiters.push(d.fill);
                }
                Read::Stall => unreachable!("l2_read retries stalls"),
            }
        }
    }
}

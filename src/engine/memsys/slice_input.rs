//! The input of an L2 slice when the slice cannot take a request. A read that finds no
//! free MSHR, a line whose fill already has its maximum of merged requests, or a set whose
//! every way awaits a fill is retried rather than sent around the L2 (as Accel-Sim's L2
//! retries a reservation failure), and the requests behind it wait with it (head-of-line
//! blocking). A retry happens at the next known fill time of the slice; when every fill it
//! could wait for is still unresolved in DRAM, the request is parked in
//! [`MemSys::deferred`] and retried when one resolves. A read that stalls until a fetch of
//! unknown time resolves (its line's fetch at its merge limit, or every way of its set
//! awaiting one) skips its retries at the known fill times, which would all stall too
//! ([`Cache::stall_through_known`]); a held request whose stall still stands
//! ([`MemSys::held`], [`Cache::stalls_again`]) is not read again. Parked requests, once
//! served, hold the slice's port for their sectors like any other read
//! (`l2.held_reads_take_port`), so they leave one port width a cycle, not all at once.

use super::*;
use crate::mem::map::Location;

/// An L2 access held at its slice's input (see [`MemSys::deferred`]).
#[derive(Clone, Copy)]
pub(super) struct Deferred {
    /// Its L1-side fill record (carries the SM, the waiters and the reply size).
    pub(super) fill: u32,
    pub(super) app: u16,
    pub(super) sectors: u8,
    /// When it reached the slice.
    pub(super) arrive: u64,
}

impl MemSys {
    /// Reads `line` in slice `sid` at `t`, retrying a stalled access at each later known
    /// fill time of the slice (its input is blocked meanwhile). `None`: it stalls until a
    /// fill whose time is not known yet.
    pub(super) fn l2_read(&mut self, sid: u32, at: At, sectors: u8, t: u64) -> Option<(u64, Read)> {
        let s = sid as usize;
        let mut t = t;
        loop {
            match self.l2[s].read(at, sectors, t) {
                Read::Stall if self.l2[s].stalled_on_unknown() => {
                    self.stall_blocked(s, t);
                    return None;
                }
                Read::Stall => {
                    t = self.l2[s].next_fill_after(t)?;
                    self.slice_free[s] = self.slice_free[s].max(t);
                }
                r => return Some((t, r)),
            }
        }
    }

    /// The retries of a read that stalled at `t` until a fill of unknown time resolves
    /// ([`Cache::stalled_on_unknown`]), at each later known fill time of the slice (its
    /// input blocked meanwhile): they all stall too.
    fn stall_blocked(&mut self, s: usize, t: u64) {
        if let Some(last) = self.l2[s].stall_through_known(t) {
            self.slice_free[s] = self.slice_free[s].max(last);
        }
    }

    /// Where an L2 read that the slice took at `t` leaves its requester: `Ok(t)`, its data
    /// is at the slice at `t`; `Err(g)`, it waits on the DRAM fill `g` (a miss starts it).
    /// `hits` is what a hit adds to the application's L2 hits.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take(
        &mut self,
        loc: Location,
        app: usize,
        at: At,
        t: u64,
        read: Read,
        hits: u64,
        ctr: &mut Counters,
    ) -> Result<u64, u32> {
        let sid = self.slice_id(&loc);
        let ready = match read {
            Read::Hit => t,
            Read::Merged { ready, tag } => {
                if ready != UNKNOWN {
                    ready.max(t)
                } else if self.l2fills.get_mut(tag).is_some() {
                    return Err(tag);
                } else {
                    // (The fill resolved meanwhile: the data is there.)
                    t
                }
            }
            Read::Miss { fetch, evicted } => {
                if let Some((el, dirty)) = evicted {
                    self.writeback(app, el, dirty, t, ctr);
                }
                let g = self.dram_read(app, sid, at, fetch, loc, t, true, ctr);
                self.l2[sid as usize].set_fill(at, UNKNOWN, g);
                return Err(g);
            }
            Read::Stall => unreachable!("l2_read retries stalls"),
        };
        ctr.l2_hits += hits;
        Ok(ready)
    }

    /// Sends a read that the slice cannot hold for lack of anything in flight to free it
    /// straight to DRAM, without allocating it; `fill` waits for it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fetch_around(
        &mut self,
        fill: u32,
        app: usize,
        loc: Location,
        line: u64,
        sectors: u8,
        t: u64,
        ctr: &mut Counters,
    ) {
        let sid = self.slice_id(&loc);
        let at = self.l2_at(line, &loc);
        let g = self.dram_read(app, sid, at, sectors, loc, t, false, ctr);
        self.l2fills.get_mut(g).unwrap().waiters.push(fill);
    }

    /// Parks a request at slice `sid`'s input behind those already held there; `fill` is
    /// its L1-side fill record, `t` when it reached the slice.
    pub(super) fn defer(&mut self, sid: u32, fill: u32, app: usize, sectors: u8, t: u64) {
        self.deferred[sid as usize].push_back(Deferred {
            fill,
            app: app as u16,
            sectors,
            arrive: t,
        });
    }

    /// Removes the first request held at slice `s`'s input.
    fn pop_held(&mut self, s: usize) {
        self.deferred[s].pop_front();
        self.held[s] = Stall::Other;
    }

    /// Retries the requests held at slice `sid`'s input, oldest first, until one stalls
    /// again on a fill of unknown time.
    pub(super) fn drain(&mut self, sid: u32, ctrs: &mut [Counters]) {
        let s = sid as usize;
        while let Some(&d) = self.deferred[s].front() {
            // (The fill record lives until the request is answered.)
            let Some((line, lanes)) = self.fills.get_mut(d.fill).map(|f| (f.line, f.atomic_lanes))
            else {
                self.pop_held(s);
                continue;
            };
            let t = d.arrive.max(self.slice_free[s]);
            let app = d.app as usize;
            let held = self.held[s];
            // (Located only when read: the common outcome above needs neither.)
            let mut located = None;
            let read = if held != Stall::Other && self.l2[s].stalls_again(held, line, d.sectors) {
                // Still stalled on the same fill of unknown time: the most common outcome,
                // known without reading.
                self.stall_blocked(s, t);
                None
            } else {
                let loc = self.slice_of(app, line).1;
                let at = self.l2_at(line, &loc);
                located = Some((loc, at));
                let read = self.l2_read(sid, at, d.sectors, t);
                if read.is_none() {
                    self.held[s] = self.l2[s].last_stall();
                }
                read
            };
            if read.is_none() && self.unresolved[s] > 0 {
                return;
            }
            let (loc, at) = match located {
                Some(l) => l,
                None => {
                    let loc = self.slice_of(app, line).1;
                    (loc, self.l2_at(line, &loc))
                }
            };
            let mut scratch;
            let ctr = match ctrs.get_mut(app) {
                Some(c) => c,
                None => {
                    scratch = Counters::default();
                    &mut scratch
                }
            };
            let Some((t, read)) = read else {
                self.pop_held(s);
                self.fetch_around(d.fill, app, loc, line, d.sectors, t, ctr);
                continue;
            };
            self.pop_held(s);
            // Served now, it holds the slice's port for its sectors like any other read,
            // so the reads held behind it are served one port-width a cycle after it.
            // (Through `slice_free`, not the port's calendar: a held read is served at its
            // fill's time, computed ahead of the present.)
            let busy = if self.held_take_port {
                self.port_cycles(d.sectors.count_ones() as u64)
            } else {
                0
            };
            self.slice_free[s] = self.slice_free[s].max(t + busy);
            // Counted like the accesses: per lane for atomics, per sector otherwise.
            let hits = if lanes > 0 {
                lanes as u64
            } else {
                d.sectors.count_ones() as u64
            };
            match self.take(loc, app, at, t, read, hits, ctr) {
                Ok(ready) => self.finish_fill(d.fill, ready),
                Err(g) => self.l2fills.get_mut(g).unwrap().waiters.push(d.fill),
            }
        }
    }
}

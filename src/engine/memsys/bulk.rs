//! Bulk traffic that no warp issues: the context save and restore of preempted CTAs (the
//! trap handler's stores and loads of registers and shared memory, through the SM's port,
//! the request crossbar, the L2 and DRAM) and the page copies of eager migration (DRAM
//! reads on the source channel and writes on the destination). It owns the save region's
//! addresses and the per-channel queue of DRAM requests generated ahead of time, which
//! enter their channel only once simulated time reaches their arrival, so co-runners'
//! requests pushed meanwhile are not held behind them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::*;

/// First line of the context-save regions: far above any trace address and the
/// persistent-worker counter lines (`1 << 44`).
const SAVE_BASE: u64 = 1 << 45;
/// Lines per CTA slot's save area (2 MiB at 128-byte lines: more than any SM's
/// registers plus shared memory), per SM, per application.
const SLOT_SHIFT: u32 = 14;
const SM_SHIFT: u32 = 22;
const APP_SHIFT: u32 = 36;
/// Id of a DRAM request nothing waits for and no application's counters count (page
/// copies of eager migration): its completion is dropped.
const NOBODY: u64 = WRITE_FLAG | u32::MAX as u64;

/// DRAM requests generated ahead of time, per channel: (arrival in DRAM cycles, order of
/// generation, request).
#[derive(Default)]
pub(super) struct Later {
    q: Vec<BinaryHeap<Reverse<(u64, u64, Req)>>>,
    seq: u64,
}

/// A queued-ahead request: bank, row, write, bursts, id.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Req(u32, u32, bool, u32, u64);

impl Later {
    pub(super) fn new(channels: usize) -> Later {
        Later {
            q: (0..channels).map(|_| BinaryHeap::new()).collect(),
            seq: 0,
        }
    }

    /// Whether channel `c` has requests waiting to enter it.
    #[inline]
    pub(super) fn any(&self, c: usize) -> bool {
        !self.q[c].is_empty()
    }

    /// Arrival (DRAM cycles) of channel `c`'s next waiting request.
    pub(super) fn next(&self, c: usize) -> Option<u64> {
        self.q[c].peek().map(|Reverse((a, _, _))| *a)
    }
}

impl MemSys {
    /// First line of the save area of CTA slot `slot` of SM `sm` for `app` (a fixed
    /// place per application, SM and slot, so a saved CTA is read back from where it was
    /// written wherever it is restored).
    pub fn save_line(&self, app: usize, sm: usize, slot: usize) -> u64 {
        SAVE_BASE
            + ((app as u64) << APP_SHIFT)
            + ((sm as u64) << SM_SHIFT)
            + ((slot as u64) << SLOT_SHIFT)
    }

    /// Bytes sent over the request crossbar and accesses to the L2 slices so far (all
    /// sources): what a test of bulk traffic compares before and after.
    pub fn bulk_traffic(&self) -> (u64, u64) {
        (
            self.req.bytes,
            self.l2.iter().map(|c| c.stats.accesses).sum(),
        )
    }

    /// Lines of `bytes` of context.
    pub fn lines_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.line_bytes)
    }

    /// The mask of every sector of a line.
    fn full_line(&self) -> u8 {
        let n = (self.line_bytes / self.sector_bytes.max(1)).clamp(1, 8);
        (((1u32 << n) - 1) & 0xff) as u8
    }

    /// When line `i` of a transfer starting at `t` leaves SM `sm`'s port, which moves `bw`
    /// bytes a cycle.
    fn port_time(&self, t: u64, i: u64, bw: u64) -> u64 {
        t + (i * self.line_bytes).div_ceil(bw.max(1))
    }

    /// Walks `app`'s segments `(first line, bytes)` sent by SM `sm` from `t` on: whole
    /// lines one after another through its port at `bw` bytes a cycle, each crossing the
    /// request crossbar (`req_bytes` a line) to its L2 slice and queueing there like any
    /// request; counts the application's NoC bytes (request and reply, `reply_bytes`) and
    /// L2 accesses of every line. Calls `at_l2(self, line, slice, location, time at the
    /// slice, time its page is ready (0: not migrating), ctr)`, which returns when that
    /// line's reply is back at the SM; returns the last of them (`t` with no lines).
    #[allow(clippy::too_many_arguments)]
    fn bulk_lines(
        &mut self,
        sm: usize,
        app: usize,
        segs: &[(u64, u64)],
        bw: u64,
        t: u64,
        (req_bytes, reply_bytes): (u64, u64),
        ctr: &mut Counters,
        mut at_l2: impl FnMut(&mut Self, u64, u32, Location, u64, u64, &mut Counters) -> u64,
    ) -> u64 {
        let n = self.full_line().count_ones() as u64;
        let mut i = 0;
        let mut done = t;
        for &(first, b) in segs {
            for line in first..first + self.lines_of(b) {
                let s = self.port_time(t, i, bw);
                i += 1;
                let (sid, loc) = self.slice_of(app, line);
                ctr.noc_bytes += req_bytes + reply_bytes;
                ctr.l2_accesses += n;
                let arrive = self.req.send(sm, sid as usize, req_bytes, s);
                let tl = self.at_slice(sid, loc.channel, n, arrive);
                let hold = self.page_ready(app, line, tl, ctr);
                done = done.max(at_l2(self, line, sid, loc, tl, hold, ctr));
            }
        }
        done
    }

    /// A context save: `app`'s segments `(first line, bytes)` written by SM `sm` from `t`
    /// on, whole lines one after another through its port at `bw` bytes a cycle, each
    /// crossing the request crossbar to its L2 slice (queueing at the slice like any
    /// request), written there (the write-back L2 allocates, and an evicted dirty line is
    /// written to DRAM; a write-through L2 sends it on) and acknowledged over the reply
    /// crossbar. Returns when the last acknowledgement is back at the SM: the trap
    /// handler's stores must have completed before the context is released. Counts the
    /// application's NoC bytes, L2 accesses and hits, and DRAM writes.
    pub fn bulk_write(
        &mut self,
        sm: usize,
        app: usize,
        segs: &[(u64, u64)],
        bw: u64,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let mask = self.full_line();
        let bytes = HEADER + mask.count_ones() as u64 * self.sector_bytes;
        let at_l2 = |m: &mut Self, line, sid: u32, _, tl, hold: u64, ctr: &mut Counters| {
            m.write_l2(app, sid, line, mask, tl, ctr, Self::push_later);
            m.rep.send(sid as usize, sm, HEADER, tl.max(hold))
        };
        self.bulk_lines(sm, app, segs, bw, t, (bytes, HEADER), ctr, at_l2)
    }

    /// A context restore: `app`'s segments read back by SM `sm` from `t` on, requests
    /// leaving at the port's rate (`bw` bytes a cycle), each crossing the request crossbar
    /// to its L2 slice; a line still in the L2 returns from there, a missing one is read
    /// from DRAM (a real request in its channel's queue; the L2 way it takes is released at
    /// once). Returns when the last line's data is back at the SM over the reply crossbar.
    ///
    /// A DRAM read's time is decided later by its channel's scheduler; the restore takes it
    /// as the request's arrival plus the data of the requests queued ahead of it on that
    /// channel plus a row miss (tRP + tRCD + CL) and its bursts. (The request itself is
    /// scheduled by the channel, so what co-runners see is exact; the restore's own end
    /// is this estimate.)
    pub fn bulk_read(
        &mut self,
        sm: usize,
        app: usize,
        segs: &[(u64, u64)],
        bw: u64,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let mask = self.full_line();
        let n = mask.count_ones() as u64;
        let data = HEADER + n * self.sector_bytes;
        let at_l2 = |m: &mut Self, line, sid: u32, loc, tl: u64, hold: u64, ctr: &mut Counters| {
            let ready = match m.l2[sid as usize].read(line, mask, tl) {
                Read::Hit => {
                    ctr.l2_hits += n;
                    tl
                }
                Read::Merged { ready, .. } if ready != UNKNOWN => {
                    ctr.l2_hits += n;
                    ready.max(tl)
                }
                Read::Miss { .. } => {
                    // The way is released at once (no MSHR held until an estimated
                    // time: the restore's lines are read once and not reused).
                    m.l2[sid as usize].set_fill(line, tl, 0);
                    m.read_later(app, loc, mask, tl, ctr)
                }
                // Merged into a fill of unknown time, or every way awaiting a fill:
                // read from DRAM around the L2.
                _ => m.read_later(app, loc, mask, tl, ctr),
            };
            m.rep.send(sid as usize, sm, data, ready.max(hold))
        };
        self.bulk_lines(sm, app, segs, bw, t, (HEADER, data), ctr, at_l2)
    }

    /// A DRAM read of `sectors` at `loc` for `app` reaching the channel after the slice at
    /// `t`, queued ahead of time; returns its estimated data time (see [`Self::bulk_read`]).
    fn read_later(
        &mut self,
        app: usize,
        loc: Location,
        sectors: u8,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let k = self.accesses_for(sectors);
        ctr.dram_reads += k as u64;
        ctr.dram_bytes += k as u64 * self.access_bytes;
        let at = t + self.lat.dram_extra;
        let c = loc.channel as usize;
        let tm = self.chans[c].config().timing;
        let ahead = (self.chans[c].queued() + self.later.q[c].len()) as u64;
        let est = self.to_dram(at) + (ahead + k as u64) * tm.burst + tm.t_rp + tm.t_rcd + tm.t_cl;
        self.push_later(loc, WRITE_FLAG | app as u64, false, k, at);
        self.to_core(est)
    }

    /// Queues a request to `loc` that reaches its channel at core time `t`, possibly
    /// ahead of the requests the engine pushes before simulated time gets there.
    fn push_later(&mut self, loc: Location, id: u64, is_write: bool, bursts: u32, t: u64) {
        let c = loc.channel as usize;
        let arrival = self.to_dram(t);
        let seq = self.later.seq;
        self.later.seq += 1;
        let r = Req(loc.bank, loc.row, is_write, bursts.min(u16::MAX as u32), id);
        self.later.q[c].push(Reverse((arrival, seq, r)));
        let first = self.later.next(c).unwrap_or(arrival);
        self.schedule(c, first);
    }

    /// Moves channel `c`'s requests queued ahead of time whose arrival is at most `until`
    /// (DRAM cycles) into the channel (called before a push at `until` and when the
    /// channel runs; the channel's next event covers the next one: `wake_channel`).
    pub(super) fn release_later(&mut self, c: usize, until: u64) {
        while let Some(a) = self.later.next(c) {
            if a > until {
                return;
            }
            let Reverse((a, _, Req(bank, row, is_write, bursts, id))) =
                self.later.q[c].pop().unwrap();
            let arrival = a.max(self.last_arrival[c]);
            self.last_arrival[c] = arrival;
            self.chans[c].push(DramRequest {
                id,
                bank,
                row,
                is_write,
                bursts: bursts as u16,
                arrival,
            });
        }
    }

    /// Eager migration's page copies as DRAM traffic: for each `(from, to)` channel pair of
    /// `moved` pages (byte addresses `pages[j] * page_bytes`), every line of page `j` is
    /// read on the source channel (bank and row from `old`) from core time `start(j)` on
    /// and written on the destination (from `new`) from `start(j) + half`. The requests
    /// enter the channels' queues and banks like any other, so co-runners mapped to those
    /// channels wait behind them; nobody waits for them (the migrating application's pause
    /// is the mode's per-page cost).
    pub(super) fn copy_pages(
        &mut self,
        pages: &[u64],
        old: &ChannelSet,
        new: &ChannelSet,
        start: impl Fn(u64) -> u64,
        half: u64,
    ) {
        let lines = (self.page_bytes / self.line_bytes).max(1);
        let k = self.accesses_for(self.full_line());
        for (j, &p) in pages.iter().enumerate() {
            let t = start(j as u64);
            for l in 0..lines {
                let addr = p * self.page_bytes + l * self.line_bytes;
                let src = self.map.locate(addr, old);
                self.push_later(src, NOBODY, false, k, t);
            }
            for l in 0..lines {
                let addr = p * self.page_bytes + l * self.line_bytes;
                let dst = self.map.locate(addr, new);
                self.push_later(dst, NOBODY, true, k, t + half);
            }
        }
    }
}

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
/// Distinct skews of the SMs' save areas: at most this many interleave chunks, and half
/// a slot's region, into it (the other half holds any SM's context).
const SKEWS: u64 = 256;
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

/// One SM's bulk transfers for [`MemSys::bulk`]: its steps, one after another, from
/// `start` on.
#[derive(Clone, Debug, Default)]
pub struct Chain {
    pub sm: usize,
    pub start: u64,
    pub steps: Vec<Step>,
}

/// A step of a [`Chain`]: `app`'s segments `(first line, bytes)`, written (a context save)
/// or read back (a restore).
#[derive(Clone, Debug)]
pub struct Step {
    pub app: usize,
    pub write: bool,
    pub segs: Vec<(u64, u64)>,
}

/// Where a [`Chain`] is in [`MemSys::bulk`]: its step, the segment and line within it,
/// the lines the step has sent (its port time), when the step started, its latest reply.
#[derive(Clone, Copy, Default)]
struct Cursor {
    step: usize,
    seg: usize,
    line: u64,
    sent: u64,
    start: u64,
    last: u64,
}

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
    /// written wherever it is restored). Each SM's areas start `sm` interleave chunks into
    /// their power-of-two region: otherwise the SMs of a switch, sending their lines in
    /// step, would all address the same channel and slice at the same moment (the regions
    /// differ only in bits the channel hash does not fold), a hot spot of the layout, not
    /// of the hardware.
    pub fn save_line(&self, app: usize, sm: usize, slot: usize) -> u64 {
        let chunk = (self.map.config().interleave / self.line_bytes).max(1);
        SAVE_BASE
            + ((app as u64) << APP_SHIFT)
            + ((sm as u64) << SM_SHIFT)
            + ((slot as u64) << SLOT_SHIFT)
            + ((sm as u64 % SKEWS) * chunk) % (1 << (SLOT_SHIFT - 1))
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

    /// One line of a bulk transfer leaving SM `sm`'s port at `s`: it crosses the request
    /// crossbar to its L2 slice (`req_bytes`: the line for a write, a header for a read)
    /// and queues there like any request. A write is written into the L2 (the write-back
    /// L2 allocates, and an evicted dirty line is written to DRAM; a write-through L2
    /// sends it on) and acknowledged over the reply crossbar; a read returns from the L2
    /// or, missing, from DRAM (a real request in its channel's queue; the L2 way it takes
    /// is released at once), its data over the reply crossbar. Counts `app`'s NoC bytes
    /// (request and reply) and L2 accesses. Returns when the reply is back at the SM.
    fn bulk_line(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        s: u64,
        write: bool,
        ctr: &mut Counters,
    ) -> u64 {
        let mask = self.full_line();
        let n = mask.count_ones() as u64;
        let data = HEADER + n * self.sector_bytes;
        let (req_bytes, reply_bytes) = if write {
            (data, HEADER)
        } else {
            (HEADER, data)
        };
        let (sid, loc) = self.slice_of(app, line);
        ctr.noc_bytes += req_bytes + reply_bytes;
        ctr.l2_accesses += n;
        let arrive = self.req.send(sm, sid as usize, req_bytes, s);
        let tl = self.at_slice(sid, loc.channel, n, arrive);
        let hold = self.page_ready(app, line, tl, ctr);
        if write {
            let at = self.l2_at(line, &loc);
            self.write_l2(app, sid, at, mask, tl, ctr, Self::push_later);
            return self
                .rep
                .send_ahead(sid as usize, sm, HEADER, tl, tl.max(hold));
        }
        let at = self.l2_at(line, &loc);
        let ready = match self.l2[sid as usize].read(at, mask, tl) {
            Read::Hit => {
                ctr.l2_hits += n;
                tl
            }
            Read::Merged { ready, .. } if ready != UNKNOWN => {
                ctr.l2_hits += n;
                ready.max(tl)
            }
            Read::Miss { .. } => {
                // The way is released at once (no MSHR held until an estimated time: the
                // restore's lines are read once and not reused).
                self.l2[sid as usize].set_fill(at, tl, 0);
                self.read_later(app, loc, mask, tl, ctr)
            }
            // Merged into a fill of unknown time, or every way awaiting a fill: read from
            // DRAM around the L2.
            _ => self.read_later(app, loc, mask, tl, ctr),
        };
        self.rep
            .send_ahead(sid as usize, sm, data, tl, ready.max(hold))
    }

    /// Bulk transfers of several SMs at once, each SM's [`Chain`] of steps one after
    /// another (a step starts when the previous one's last reply is back), every SM's
    /// lines leaving its port at `bw` bytes a cycle. The lines of all SMs are taken in
    /// the order they leave their ports, so SMs saving at the same time share the
    /// crossbar, the slices and the channels as they would, rather than one SM's whole
    /// transfer being booked ahead of the next one's. `ctrs[app]` counts each step's
    /// traffic. Returns, per chain, when its last step is done (its start with no lines).
    pub fn bulk(&mut self, chains: &[Chain], bw: u64, ctrs: &mut [Counters]) -> Vec<u64> {
        let mut at: Vec<Cursor> = chains
            .iter()
            .map(|c| Cursor {
                start: c.start,
                last: c.start,
                ..Cursor::default()
            })
            .collect();
        let mut heap = BinaryHeap::new();
        for (k, c) in chains.iter().enumerate() {
            if self.skip_empty(c, &mut at[k]) {
                heap.push(Reverse((self.port_time(c.start, 0, bw), k)));
            }
        }
        while let Some(Reverse((s, k))) = heap.pop() {
            let (c, a) = (&chains[k], &mut at[k]);
            let st = &c.steps[a.step];
            let line = st.segs[a.seg].0 + a.line;
            let r = self.bulk_line(c.sm, st.app, line, s, st.write, &mut ctrs[st.app]);
            a.last = a.last.max(r);
            a.line += 1;
            a.sent += 1;
            if a.line >= self.lines_of(st.segs[a.seg].1) {
                a.seg += 1;
                a.line = 0;
            }
            if a.seg >= st.segs.len() {
                // The step is over: the next starts at its last reply.
                *a = Cursor {
                    step: a.step + 1,
                    start: a.last,
                    last: a.last,
                    ..Cursor::default()
                };
            }
            if self.skip_empty(c, a) {
                heap.push(Reverse((self.port_time(a.start, a.sent, bw), k)));
            }
        }
        // A finished chain's last reply is when it is done (its start with no lines).
        at.iter().map(|a| a.last).collect()
    }

    /// Moves chain `c`'s cursor past empty segments and steps; whether a line is left.
    fn skip_empty(&self, c: &Chain, a: &mut Cursor) -> bool {
        while a.step < c.steps.len() {
            let st = &c.steps[a.step];
            while a.seg < st.segs.len() && self.lines_of(st.segs[a.seg].1) == 0 {
                a.seg += 1;
            }
            if a.seg < st.segs.len() {
                return true;
            }
            *a = Cursor {
                step: a.step + 1,
                start: a.start,
                last: a.last,
                ..Cursor::default()
            };
        }
        false
    }

    /// A context save by one SM: `app`'s segments `(first line, bytes)` written from `t`
    /// on (see [`Self::bulk_line`]). Returns when the last acknowledgement is back at the
    /// SM: the trap handler's stores must have completed before the context is released.
    /// Counts the application's NoC bytes, L2 accesses and hits, and DRAM writes.
    pub fn bulk_write(
        &mut self,
        sm: usize,
        app: usize,
        segs: &[(u64, u64)],
        bw: u64,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        self.bulk_one(sm, app, segs, true, bw, t, ctr)
    }

    /// A context restore by one SM: `app`'s segments read back from `t` on (see
    /// [`Self::bulk_line`]). Returns when the last line's data is back at the SM.
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
        self.bulk_one(sm, app, segs, false, bw, t, ctr)
    }

    #[allow(clippy::too_many_arguments)]
    fn bulk_one(
        &mut self,
        sm: usize,
        app: usize,
        segs: &[(u64, u64)],
        write: bool,
        bw: u64,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let lines: Vec<u64> = segs
            .iter()
            .flat_map(|&(first, b)| first..first + self.lines_of(b))
            .collect();
        let mut done = t;
        for (i, line) in lines.into_iter().enumerate() {
            let s = self.port_time(t, i as u64, bw);
            done = done.max(self.bulk_line(sm, app, line, s, write, ctr));
        }
        done
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

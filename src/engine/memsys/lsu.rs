//! The SMs' load/store units when a full L1 MSHR file holds them
//! (`l1d.on_mshr_full = "stall"`): a load that misses while every MSHR is busy waits at its
//! SM's unit, and the SM's later loads wait behind it (the unit is in order). The first
//! held load is let go by an engine event ([`MemSys::lsu_events`]) at the first time an MSHR
//! is free; when every fill in flight still waits on DRAM with no known time, the
//! resolution of one ([`MemSys::finish_fill`]) schedules it. Handling held loads at their
//! own time, not when the fill resolves, keeps them from overtaking other SMs' requests
//! at the L2 inputs.
//!
//! The unit also holds for the L1 miss queue (`l1d.miss_queue`, GPGPU-Sim's
//! `m_miss_queue`): every request that leaves the SM through the L1 (a read miss, a
//! write-through store) takes an entry until the crossbar's input buffer takes it
//! ([`MemSys::inject`], one a cycle); a request that finds the queue full holds the unit,
//! and so every later access of the SM, until an entry frees (GPGPU-Sim's reservation fail
//! `MISS_QUEUE_FULL`). Atomics and loads that bypass the L1 go to the crossbar directly.

use super::*;
use crate::mem::noc::Credits;

/// A load held at its SM's load/store unit.
#[derive(Clone, Copy)]
pub(super) struct HeldLoad {
    app: u32,
    line: u64,
    sectors: u8,
    t: u64,
    w: LoadRef,
}

/// Per-SM state of the load/store units.
pub(super) struct Lsu {
    /// Whether a miss that finds every MSHR busy holds the unit (else it goes around the
    /// L1).
    pub(super) hold: bool,
    /// L1 MSHRs per SM.
    pub(super) mshrs: u32,
    /// Per SM: held loads, oldest first.
    held: Vec<VecDeque<HeldLoad>>,
    /// Per SM: when the unit last let a held load go; the SM's later loads go no earlier.
    free: Vec<u64>,
    /// Per SM: the time of its pending release event (`u64::MAX`: none).
    wake: Vec<u64>,
    /// Per SM: its L1 miss queue, known by when each entry left for the crossbar.
    mq: Vec<Credits>,
    /// Per SM: when the last request left its miss queue (one leaves a cycle).
    mq_last: Vec<u64>,
    /// Requests that found their SM's miss queue full, and the cycles they held the unit.
    pub(super) mq_full: u64,
    pub(super) mq_wait: u64,
}

impl Lsu {
    pub(super) fn new(hold: bool, mshrs: u32, miss_queue: u32, sms: usize) -> Lsu {
        Lsu {
            hold,
            mshrs,
            held: vec![VecDeque::new(); sms],
            free: vec![0; sms],
            wake: vec![u64::MAX; sms],
            mq: vec![Credits::new(miss_queue); sms],
            mq_last: vec![0; sms],
            mq_full: 0,
            mq_wait: 0,
        }
    }

    /// Whether `sm` has loads held.
    pub(super) fn holds(&self, sm: usize) -> bool {
        !self.held[sm].is_empty()
    }
}

impl MemSys {
    /// When `sm`'s load/store unit next takes an access (a request that waited for a
    /// miss-queue entry holds it until then).
    #[inline]
    pub fn lsu_free(&self, sm: usize) -> u64 {
        self.lsu.free[sm]
    }

    /// Requests that found their SM's L1 miss queue full, and the cycles they held the
    /// load/store unit in all.
    pub fn miss_queue_waits(&self) -> (u64, u64) {
        (self.lsu.mq_full, self.lsu.mq_wait)
    }

    /// Sends a request of `bytes` from `sm` to slice `sid` at `t`; returns its arrival.
    /// Through the L1 (`mq`), it first takes an entry of the SM's miss queue (waiting, and
    /// holding the unit, while the queue is full) and leaves it for the crossbar's input
    /// buffer, one a cycle.
    pub(super) fn inject(&mut self, sm: usize, sid: u32, bytes: u64, t: u64, mq: bool) -> u64 {
        if !mq || !self.lsu.mq[sm].bounded() {
            return self.req.send(sm, sid as usize, bytes, t);
        }
        let e = t.max(self.lsu.mq[sm].room(1));
        let hop = self
            .req
            .hop(sm, sid as usize, bytes, e.max(self.lsu.mq_last[sm] + 1));
        self.lsu.mq[sm].push(1, hop.enter);
        self.lsu.mq_last[sm] = self.lsu.mq_last[sm].max(hop.enter);
        if e > t {
            self.lsu.mq_full += 1;
            self.lsu.mq_wait += e - t;
            self.lsu.free[sm] = self.lsu.free[sm].max(e);
        }
        hop.arrive
    }

    /// [`MemSys::load`] through an in-order unit that a full MSHR file holds.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn load_in_order(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
        w: LoadRef,
        ctrs: &mut [Counters],
    ) -> Option<u64> {
        let t = t.max(self.lsu.free[sm]);
        if !self.lsu.holds(sm) {
            if let Some(got) = self.load_l1(sm, app, line, sectors, t, w, &mut ctrs[app]) {
                return got;
            }
        }
        // Behind a held load, or no MSHR free: held at the load/store unit.
        self.lsu.held[sm].push_back(HeldLoad {
            app: app as u32,
            line,
            sectors,
            t,
            w,
        });
        self.schedule_release(sm, t);
        None
    }

    /// Schedules the release of the first load held at `sm`'s unit for when an MSHR of its
    /// L1 is next free after `t`, if that time is known (else a fill's resolution calls this
    /// again).
    pub(super) fn schedule_release(&mut self, sm: usize, t: u64) {
        let Some(h) = self.lsu.held[sm].front() else {
            return;
        };
        let t = t.max(h.t).max(self.lsu.free[sm]);
        let at = if self.l1[sm].mshrs_in_use(t) < self.lsu.mshrs {
            Some(t)
        } else {
            self.l1[sm].next_fill_after(t)
        };
        if let Some(at) = at.filter(|&at| at < self.lsu.wake[sm]) {
            self.lsu.wake[sm] = at;
            self.lsu_events.push((at, sm as u32));
        }
    }

    /// The release event of `sm`'s unit at `now`: lets the held loads go, oldest first,
    /// while an MSHR is free, and schedules the next release. Stale events (superseded by
    /// an earlier one) do nothing.
    pub fn release_held(&mut self, sm: usize, now: u64, ctrs: &mut [Counters]) {
        if self.lsu.wake[sm] != now {
            return;
        }
        self.lsu.wake[sm] = u64::MAX;
        while let Some(&h) = self.lsu.held[sm].front() {
            let t = now.max(h.t).max(self.lsu.free[sm]);
            if self.l1[sm].mshrs_in_use(t) >= self.lsu.mshrs {
                break;
            }
            self.lsu.held[sm].pop_front();
            self.lsu.free[sm] = t;
            let (app, ctr) = (h.app as usize, &mut ctrs[h.app as usize]);
            if let Some(ready) = self.load_l1_or_around(sm, app, h.line, h.sectors, t, h.w, ctr) {
                self.resolved.push((h.w, ready));
            }
        }
        self.schedule_release(sm, now);
    }
}

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
//! With `l1d.request_unit = "sector"` a request takes an entry per sector (and the L1 an
//! MSHR per sector, [`crate::mem::cache::Cache::set_sector_mshrs`]).
//!
//! Optionally (`l1d.bank_queue`, off in every bundled model: models/CALIBRATION.md) each L1
//! bank has GPGPU-Sim's latency queue in front of it: an access waiting for a miss-queue
//! entry holds only its banks' heads, the accesses behind it in those banks wait, and the
//! unit stalls only when an access finds a bank's queue full ([`MemSys::bank_enter`]).

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
    /// Requests that found their SM's miss queue full, and the cycles they held the unit
    /// (with bank queues: the cycles they held their banks).
    pub(super) mq_full: u64,
    pub(super) mq_wait: u64,
    /// Miss-queue entries a request takes per sector (else one a request).
    per_sector: bool,
    /// Stages of each bank's latency queue (0: none).
    depth: usize,
    /// L1 banks.
    banks: usize,
    /// Per SM and bank, a ring of `depth` times the last accesses left the bank's head
    /// (plus one; 0: empty), in the frame of [`MemSys::load`]'s times (an access that never
    /// waits leaves at the time it arrived).
    ring: Vec<u64>,
    /// Per SM and bank, the ring slot of the oldest entry.
    rpos: Vec<u32>,
    /// When the request just sent through the miss queue got its entries (0: none).
    got: u64,
    /// Accesses that found their bank's queue full, and the cycles they held the unit.
    pub(super) bank_full: u64,
    pub(super) bank_wait: u64,
}

/// Where an access sits in its banks' latency queues: the banks (a bit each) and the time
/// it reaches their heads.
#[derive(Clone, Copy)]
pub(super) struct BankSlot {
    banks: u64,
    pub(super) head: u64,
}

impl Lsu {
    pub(super) fn new(
        hold: bool,
        miss_queue: u32,
        per_sector: bool,
        (banks, depth): (u32, u32),
        sms: usize,
    ) -> Lsu {
        let (banks, depth) = (banks.max(1) as usize, depth as usize);
        Lsu {
            per_sector,
            depth,
            banks,
            ring: vec![0; if depth > 0 { sms * banks * depth } else { 0 }],
            rpos: vec![0; if depth > 0 { sms * banks } else { 0 }],
            got: 0,
            bank_full: 0,
            bank_wait: 0,
            hold,
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

    /// Whether the L1 banks have latency queues.
    #[inline]
    pub(super) fn banked(&self) -> bool {
        self.depth > 0
    }

    /// The latest and the oldest leave time (plus one) among the last `depth` accesses to
    /// bank `q` (a flat SM × bank index).
    #[inline]
    fn bank_times(&self, q: usize) -> (u64, u64) {
        let base = q * self.depth;
        let p = self.rpos[q] as usize;
        let newest = if p == 0 { self.depth - 1 } else { p - 1 };
        (self.ring[base + newest], self.ring[base + p])
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

    /// Accesses that found their L1 bank's latency queue full, and the cycles they held
    /// the load/store unit in all.
    pub fn bank_waits(&self) -> (u64, u64) {
        (self.lsu.bank_full, self.lsu.bank_wait)
    }

    /// Sends a request of `bytes` for `sectors` sectors from `sm` to slice `sid` at `t`;
    /// returns its arrival. Through the L1 (`mq`), it first takes its entries of the SM's
    /// miss queue (one, or one a sector with `l1d.miss_queue_entry = "sector"`), waiting
    /// while the queue is full, and they leave for the crossbar's input buffer one a cycle
    /// (the request enters it with its last). The wait holds the whole unit, or with bank
    /// queues only the request's banks ([`MemSys::bank_leave`]).
    pub(super) fn inject(
        &mut self,
        sm: usize,
        sid: u32,
        bytes: u64,
        sectors: u64,
        t: u64,
        mq: bool,
    ) -> u64 {
        if !mq || !self.lsu.mq[sm].bounded() {
            return self.req.send(sm, sid as usize, bytes, t);
        }
        let k = if self.lsu.per_sector {
            sectors.max(1)
        } else {
            1
        };
        let e = t.max(self.lsu.mq[sm].room(k));
        let hop = self
            .req
            .hop(sm, sid as usize, bytes, e.max(self.lsu.mq_last[sm] + k));
        self.lsu.mq[sm].push(k, hop.enter);
        self.lsu.mq_last[sm] = self.lsu.mq_last[sm].max(hop.enter);
        if e > t {
            self.lsu.mq_full += 1;
            self.lsu.mq_wait += e - t;
            // The request left the L1's lookup `l1d.miss_latency` after it entered: what
            // it holds is the entry of accesses that leave behind it.
            let held = e.saturating_sub(self.lat.l1_miss);
            if self.lsu.banked() {
                self.lsu.got = held;
            } else {
                self.lsu.free[sm] = self.lsu.free[sm].max(held);
            }
        }
        hop.arrive
    }

    /// An access to `sectors` of `line` reaching `sm`'s L1 banks at `t` (bank queues on):
    /// it enters its banks' queues once each has room (the unit stalls until then: no later
    /// access of the SM enters earlier) and reaches their heads one a cycle after the
    /// access ahead. Returns its slot; the caller does the L1 access at `slot.head` and
    /// then calls [`MemSys::bank_leave`].
    pub(super) fn bank_enter(&mut self, sm: usize, line: u64, sectors: u8, t: u64) -> BankSlot {
        let per_line = (self.line_bytes / self.sector_bytes.max(1)).max(1);
        let nb = self.lsu.banks;
        let mut banks = 0u64;
        for s in 0..per_line.min(8) {
            if sectors & (1 << s) != 0 {
                banks |= 1 << ((line * per_line + s) % nb as u64);
            }
        }
        let depth = self.lsu.depth as u64;
        let (mut enter, mut head) = (t, t);
        let mut m = banks;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            let (newest, oldest) = self.lsu.bank_times(sm * nb + b);
            // Full when the access `depth` places back has not left (times are plus one).
            if oldest > 0 {
                enter = enter.max(oldest - 1 + depth);
            }
            if newest > 0 {
                head = head.max(newest);
            }
        }
        if enter > t {
            self.lsu.bank_full += 1;
            self.lsu.bank_wait += enter - t;
            self.lsu.free[sm] = self.lsu.free[sm].max(enter);
        }
        self.lsu.got = 0;
        BankSlot {
            banks,
            head: head.max(enter),
        }
    }

    /// The access of `slot` leaves its banks' heads: when it was served, or later when its
    /// miss waited for a miss-queue entry ([`MemSys::inject`]).
    pub(super) fn bank_leave(&mut self, sm: usize, slot: BankSlot) {
        let leave = slot.head.max(self.lsu.got);
        self.lsu.got = 0;
        let nb = self.lsu.banks;
        let mut m = slot.banks;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            let q = sm * nb + b;
            let p = self.lsu.rpos[q] as usize;
            self.lsu.ring[q * self.lsu.depth + p] = leave + 1;
            self.lsu.rpos[q] = if p + 1 == self.lsu.depth {
                0
            } else {
                p as u32 + 1
            };
        }
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
            if let Some(got) = self.load_l1(sm, app, line, sectors, t, t, w, &mut ctrs[app]) {
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
        let at = if !self.l1[sm].mshrs_short(t, h.sectors) {
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
            if self.l1[sm].mshrs_short(t, h.sectors) {
                break;
            }
            self.lsu.held[sm].pop_front();
            self.lsu.free[sm] = t;
            let (app, ctr) = (h.app as usize, &mut ctrs[h.app as usize]);
            let ready = self.load_l1_or_around(sm, app, h.line, h.sectors, t, h.t, h.w, ctr);
            if let Some(ready) = ready {
                self.resolved.push((h.w, ready));
            }
        }
        self.schedule_release(sm, now);
    }
}

//! The warp schedulers of an SM: each keeps the warps whose operands are ready (a bitmask)
//! and those that will be (a [`Wheel`] of ready times), picks per GTO or LRR among the ready
//! ones whose pipeline is free, bounds its next possible issue cycle, and attributes the
//! cycles in which it issues nothing to a stall reason.

use super::wheel::Wheel;
use super::*;

/// The per-warp fields the schedulers scan, kept contiguous (24 bytes a warp) in the
/// warp's scheduler, by local index.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Hot {
    pub(super) ready: u64,
    pub(super) age: u64,
    /// Its scheduler's wheel holds a live entry for it at `ready` (older entries of the
    /// warp left in the wheel are stale and skipped).
    pub(super) pending: bool,
    pub(super) app: u16,
    /// The pipeline pool its next instruction needs (`Sm::pool_of`).
    pub(super) pool: u8,
    /// Live and not waiting at a barrier.
    pub(super) active: bool,
    /// Its next instruction needs a pending-load slot and none is free.
    pub(super) blocked: bool,
    /// Its next instruction touches state shared between SMs (`OpClass::is_global`).
    pub(super) global: bool,
}

/// A pool of interchangeable pipelines: their free times are `pipe_free[first..first +
/// count]`; with more than two, in ascending order from index `head` on, cyclically (two
/// are compared directly). Taking a pipe replaces the
/// earliest time (at `head`) with a later one; when that is the latest (the usual case, as
/// time moves forward), the head slot takes it and `head` moves on.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pool {
    pub(super) first: u16,
    pub(super) count: u16,
    pub(super) head: u16,
}

impl Pool {
    /// The earliest free time of its pipes (INF without pipes).
    pub(super) fn earliest(&self, pipe_free: &[u64]) -> u64 {
        let (s, n) = (self.first as usize, self.count as usize);
        match n {
            0 => INF,
            1 => pipe_free[s],
            2 => pipe_free[s].min(pipe_free[s + 1]),
            _ => pipe_free[s + self.head as usize],
        }
    }

    /// Occupies its earliest-free pipe until `until`; returns its new earliest free time
    /// (INF without pipes).
    pub(super) fn take(&mut self, pipe_free: &mut [u64], until: u64) -> u64 {
        let (s, n) = (self.first as usize, self.count as usize);
        match n {
            0 => INF,
            1 => {
                pipe_free[s] = until;
                until
            }
            2 => {
                let r = &mut pipe_free[s..s + 2];
                let m = (r[1] < r[0]) as usize;
                r[m] = until;
                r[0].min(r[1])
            }
            _ => {
                let r = &mut pipe_free[s..s + n];
                let head = self.head as usize;
                // The latest time sits just before the head, cyclically.
                let last = if head == 0 { n - 1 } else { head - 1 };
                if until >= r[last] {
                    // The latest: it takes the head slot, which becomes the ring's end.
                    r[head] = until;
                    let next = if head + 1 == n { 0 } else { head + 1 };
                    self.head = next as u16;
                    r[next]
                } else {
                    // Insertion: the times after the head that are earlier than `until`
                    // move one place towards it. (`head + k` for `k < n` wraps at most
                    // once: no division.)
                    let at = |k: usize| {
                        if head + k >= n {
                            head + k - n
                        } else {
                            head + k
                        }
                    };
                    let mut k = 1;
                    while r[at(k)] < until {
                        r[at(k - 1)] = r[at(k)];
                        k += 1;
                    }
                    r[at(k - 1)] = until;
                    r[head]
                }
            }
        }
    }

    pub(super) fn new(first: usize, count: usize) -> Pool {
        Pool {
            first: u16::try_from(first).expect("pipelines per SM fit 16 bits"),
            count: u16::try_from(count).expect("pipelines per SM fit 16 bits"),
            head: 0,
        }
    }
}

pub(super) struct Sched {
    /// Scan entries by local warp index (slot / schedulers, below 256: a fixed array needs
    /// no bounds checks).
    pub(super) hot: Box<[Hot; 256]>,
    /// Lower bound of the earliest cycle any of its warps can issue.
    pub(super) min: u64,
    /// Warps whose operands are ready by the last time `later` was drained (bit = slot /
    /// schedulers).
    pub(super) ready: [u64; 4],
    /// How many words of `ready` its warps use (local indices below `64 * words`).
    pub(super) words: usize,
    /// Warps whose operands become ready later, by time (local indices).
    pub(super) later: Wheel,
    /// Why the last failed pick found nothing: (reason, app).
    pub(super) why: (u8, u16),
    pub(super) warps: Vec<u16>,
    /// LRR: the local index after the last warp issued (kept only under LRR).
    pub(super) rr: usize,
    /// GTO: the local index of the warp issued last (`NONE`: none).
    pub(super) greedy: u16,
    /// Open stall episode: (first cycle, reason, app or NONE).
    pub(super) stall: Option<(u64, u8, u16)>,
}

impl Sm<'_> {
    /// Copies warp `id`'s scheduling state into the scan array and lowers its scheduler's
    /// bound. Called whenever a warp's readiness may have changed.
    #[inline(always)]
    pub(super) fn sync(&mut self, id: u16) {
        let w = &self.warps[id as usize];
        let (hs, local) = self.place[id as usize];
        let local = local as usize;
        let s = &mut self.scheds[hs as usize];
        // (`% 256`: a no-op for local indices that spares the bounds check.)
        let h = &mut s.hot[local % 256];
        h.active = w.live && !w.at_barrier;
        h.ready = w.ready;
        h.app = w.app;
        h.age = w.age;
        h.pending = false;
        // (`% 4`: likewise.)
        let (word, bit) = (local / 64 % 4, local % 64);
        if !w.live {
            h.blocked = false;
            h.global = false;
            // The ready set of the slot's scheduler loses it. (Not `w.sched`: the idle
            // warp that `save_cta` leaves in a slot says scheduler 0 whatever the slot's,
            // and clearing scheduler 0's bit there unscheduled a live warp of another
            // application for good — the budget-mode starvation of issue 21.)
            s.ready[word] &= !(1u64 << bit);
            return;
        }
        let op = w.op();
        // (`% 16`: a no-op for unit kinds, which are below 9, that spares the bounds check.)
        h.pool = self.pool_of[hs as usize][op.pipe as usize % 16];
        h.blocked = matches!(op.class, OpClass::Load | OpClass::Atomic) && w.loads_full();
        h.global = op.class.is_global();
        s.ready[word] &= !(1u64 << bit);
        if h.active && !h.blocked && h.ready != INF {
            if s.later.push_later(h.ready, local as u16) {
                h.pending = true;
            } else {
                s.ready[word] |= 1 << bit;
            }
            s.min = s.min.min(h.ready);
        }
    }

    /// What [`Self::sync`] does to scheduler bounds when warp `id`'s scan entry is already
    /// current: lowers its scheduler's bound to the warp's ready time if it may issue.
    #[inline]
    pub(super) fn lower_bound(&mut self, id: u16) {
        let (hs, local) = self.place[id as usize];
        let s = &mut self.scheds[hs as usize];
        let h = &s.hot[local as usize % 256];
        if h.active && !h.blocked && h.ready != INF {
            s.min = s.min.min(h.ready);
        }
    }

    /// Forgets the schedulers' bounds (the set of warps allowed to issue changed).
    pub fn invalidate(&mut self) {
        for s in &mut self.scheds {
            s.min = 0;
        }
    }

    /// Occupies the earliest-free pipe of pool `pool` until `until` and refreshes the
    /// pool's earliest free time.
    pub(super) fn take_pipe(&mut self, pool: u8, until: u64) {
        let free = self.pools[pool as usize].take(&mut self.pipe_free, until);
        if self.pools[pool as usize].count > 0 {
            self.pool_free[pool as usize] = free;
        }
    }

    /// Earliest cycle the warp of scan entry `h` could issue, ignoring `t` (INF: waits on
    /// an event).
    #[inline]
    pub(super) fn candidate(&self, h: &Hot, env: &StepEnv) -> u64 {
        if !h.active || h.blocked {
            return INF;
        }
        let mut c = h.ready.max(self.pool_free[h.pool as usize]);
        if env.restricted {
            if env.context.is_some_and(|x| x != h.app) {
                return INF;
            }
            if let Some(&p) = env.paused.get(h.app as usize) {
                c = c.max(p);
            }
        }
        c
    }

    /// The local index of the warp scheduler `s` issues at `t`, if any; otherwise records
    /// in the scheduler the earliest cycle one could. Only warps whose operands are ready
    /// are examined.
    pub(super) fn pick(&mut self, s: usize, t: u64, env: &StepEnv) -> Option<u16> {
        let ns = self.scheds.len();
        // Move warps whose operands are ready by `t` into the ready set.
        {
            let sc = &mut self.scheds[s];
            let hot = &mut sc.hot;
            let ready = &mut sc.ready;
            sc.later.drain(t, |when, local| {
                let h = &mut hot[local as usize % 256];
                // Only the warp's live entry counts (its time is the warp's ready time).
                if h.pending && h.ready == when {
                    h.pending = false;
                    ready[local as usize / 64 % 4] |= 1 << (local % 64);
                }
            });
        }
        let greedy = match env.policy {
            SchedPolicy::Gto => self.scheds[s].greedy,
            SchedPolicy::Lrr => NONE,
        };
        if greedy != NONE && self.candidate(&self.scheds[s].hot[greedy as usize % 256], env) <= t {
            return Some(greedy);
        }
        // Scan the ready set. Its warps are active, not blocked and ready by the last drain
        // (a warp leaves the set whenever its state changes), so only their pipe and, when
        // restricted, their application's context and pause can hold them back.
        let mut wait = INF;
        let mut unit_wait: Option<(u64, usize)> = None;
        let mut best: Option<(u64, u16)> = None;
        let sc = &self.scheds[s];
        let words = &sc.ready[..sc.words];
        let free = &self.pool_free;
        // The earliest cycle the ready warp `local` could issue; records it as a waiting
        // warp when that is after `t` (the lowest local index among the earliest, as an
        // ascending scan keeps the first it meets).
        let mut cand = |local: usize| {
            let h = &sc.hot[local];
            let c = if env.restricted {
                self.candidate(h, env)
            } else {
                h.ready.max(free[h.pool as usize])
            };
            if c > t {
                wait = wait.min(c);
                if unit_wait.is_none_or(|u| (c, local) < u) {
                    unit_wait = Some((c, local));
                }
            }
            c
        };
        match env.policy {
            // LRR: the first ready warp at or after `rr`, cyclically: scan in that order
            // and stop at the first that can issue.
            SchedPolicy::Lrr => {
                let rr = sc.rr % 256;
                let (rw, rb) = (rr / 64, rr % 64);
                // Bits at or after `rr`, then the wrapped part.
                'scan: for pass in 0..2 {
                    for (wi, &word) in words.iter().enumerate() {
                        let mut m = match (pass, wi.cmp(&rw)) {
                            (0, std::cmp::Ordering::Less) | (1, std::cmp::Ordering::Greater) => 0,
                            (0, std::cmp::Ordering::Equal) => word & (u64::MAX << rb),
                            (1, std::cmp::Ordering::Equal) => word & !(u64::MAX << rb),
                            _ => word,
                        };
                        while m != 0 {
                            let b = m.trailing_zeros() as usize;
                            m &= m - 1;
                            let local = (wi * 64 + b) % 256;
                            if cand(local) <= t {
                                best = Some((0, local as u16));
                                break 'scan;
                            }
                        }
                    }
                }
            }
            // GTO: the oldest ready warp.
            SchedPolicy::Gto => {
                for (wi, &word) in words.iter().enumerate() {
                    let mut m = word;
                    while m != 0 {
                        let b = m.trailing_zeros() as usize;
                        m &= m - 1;
                        let local = (wi * 64 + b) % 256;
                        if cand(local) > t {
                            continue;
                        }
                        let key = sc.hot[local].age;
                        if best.is_none_or(|(k, _)| key < k) {
                            best = Some((key, local as u16));
                        }
                    }
                }
            }
        }
        if let Some((_, id)) = best {
            return Some(id);
        }
        let later = self.scheds[s]
            .later
            .peek()
            .map(|(t, local)| (t, (local as usize * ns + s) as u16));
        self.scheds[s].min = later.map_or(INF, |l| l.0).min(wait);
        // Why nothing issues: a ready warp waits for its unit, else the warp whose operands
        // come first waits for them, else everyone waits on memory or a barrier.
        let why = match (unit_wait, later) {
            (Some((c, local)), l) if l.is_none_or(|l| c <= l.0) => {
                (R_UNIT, self.scheds[s].hot[local].app)
            }
            (_, Some((_, id))) => {
                let w = &self.warps[id as usize];
                (if w.mem_cause { R_MEM } else { R_SHORT }, w.app)
            }
            _ => self.stall_reason(s, t, env),
        };
        self.scheds[s].why = why;
        None
    }

    /// Why scheduler `s` cannot issue at `t`, and whose warp it is.
    pub(super) fn stall_reason(&self, s: usize, t: u64, env: &StepEnv) -> (u8, u16) {
        let mut best: Option<(u64, u8, u16)> = None;
        for &id in &self.scheds[s].warps {
            let w = &self.warps[id as usize];
            let (when, why) = if w.at_barrier {
                (INF - 1, R_BARRIER)
            } else if w.ready == INF {
                (INF - 2, R_MEM)
            } else if w.ready > t {
                (w.ready, if w.mem_cause { R_MEM } else { R_SHORT })
            } else {
                let _ = env;
                (t, R_UNIT)
            };
            if best.is_none_or(|b| when < b.0) {
                best = Some((when, why, w.app));
            }
        }
        best.map(|b| (b.1, b.2)).unwrap_or((R_IDLE, NONE))
    }

    pub(super) fn close_stall(&mut self, s: usize, t: u64, ctr: &mut [Counters]) {
        if let Some((start, why, app)) = self.scheds[s].stall.take() {
            let n = t.saturating_sub(start);
            if app == NONE {
                self.idle += n;
            } else if let Some(c) = ctr.get_mut(app as usize) {
                let st = &mut c.stalls;
                match why {
                    R_SHORT => st.short_raw += n,
                    R_MEM => st.long_memory += n,
                    R_UNIT => st.unit_busy += n,
                    R_BARRIER => st.barrier += n,
                    _ => st.idle += n,
                }
            }
        }
    }

    /// Closes every open stall episode at `t` (end of run).
    pub fn close_all(&mut self, t: u64, ctr: &mut [Counters]) {
        for s in 0..self.scheds.len() {
            self.close_stall(s, t, ctr);
        }
    }

    /// Earliest time any warp could issue (INF: none without an external event).
    pub(super) fn next_time(&self) -> u64 {
        self.scheds.iter().map(|s| s.min).min().unwrap_or(INF)
    }
}

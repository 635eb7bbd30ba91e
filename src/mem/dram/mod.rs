//! One DRAM channel: banks in bank groups with open rows, an FR-FCFS request queue, and the
//! JEDEC-style timing constraints, evaluated arithmetically (each bank and the channel keep
//! the times at which their next commands are allowed; nothing ticks).
//!
//! Times are DRAM command-clock cycles. The caller converts to and from core cycles.
//!
//! Also modelled, arithmetically like the rest: all-bank refresh (every tREFI all banks
//! close for tRFC; an access whose data would not be through when a window starts waits
//! for it, then finds its row closed; the memory system staggers its channels' windows
//! over the interval), the command buses (one command a cycle on each; ACT
//! and PRE share the column commands' bus without `dual_bus`: a command takes the first
//! free cycle of its bus at or after the time its constraints allow), and a bounded return
//! queue (a read holds an entry from its column command until it leaves for the L2 at the
//! L2 side's rate; with none free nothing issues). The refresh windows are in `refresh`,
//! the command buses, command log and return queue in `bus`, the queues, the window and the
//! banks' candidates in `window`; this file keeps the banks' timing and the scheduler.
//!
//! Scheduling: the channel makes one decision at a time at its `cursor`. Among requests
//! that have arrived by then it takes the oldest row hit, else the oldest request (FR-FCFS),
//! computes its PRE/ACT/column command times from the constraints, commits them, and
//! reports when its data burst ends. The caller must have pushed every request that
//! arrives at or before [`Channel::next_decision`] before calling [`Channel::issue_next`].
//!
//! How the window and the per-bank candidates are kept so that a decision reads no queue:
//! the doc of [`Channel`].
//!
//! Where to look, in file order: the request and timing types, then `Channel`: `push`,
//! the FR-FCFS decision (`issue_next`, split into `choose`, `take_burst`, `column`), row
//! commands (`activate`, `prepare`) and the bounds kept per group. The window (`admit`,
//! `enter`, `sync*`) is `dram/window.rs`; all-bank refresh `dram/refresh.rs`; the command
//! buses, the command log and the return queue `dram/bus.rs`; the timing-definition tests
//! `dram/tests.rs`.

use std::collections::VecDeque;

mod bus;
mod refresh;
mod window;
use window::{first_hit, for_each_bit};

pub use bus::Command;
use bus::{CmdBus, ReturnQueue};
pub use refresh::Refresh;

/// Timing parameters in DRAM command-clock cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramTiming {
    pub t_rcd: u64,
    pub t_rp: u64,
    pub t_ras: u64,
    pub t_rc: u64,
    pub t_cl: u64,
    pub t_wl: u64,
    /// Column-to-column, different / same bank group.
    pub t_ccd_s: u64,
    pub t_ccd_l: u64,
    /// Activate-to-activate, different / same bank group.
    pub t_rrd_s: u64,
    pub t_rrd_l: u64,
    pub t_faw: u64,
    /// Write data end to read command, different / same bank group.
    pub t_wtr_s: u64,
    pub t_wtr_l: u64,
    /// Read to precharge.
    pub t_rtp: u64,
    /// Write recovery: write data end to precharge.
    pub t_wr: u64,
    /// Data-bus cycles one access occupies (burst length / 2 for DDR).
    pub burst: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramChannelConfig {
    pub timing: DramTiming,
    pub banks: u32,
    pub bank_groups: u32,
    /// Requests the scheduler can see at once.
    pub queue_depth: usize,
    /// All-bank refresh (none: not modelled).
    pub refresh: Option<Refresh>,
    /// Separate row (ACT/PRE) and column (RD/WR) command buses; with one shared bus a
    /// command-clock cycle carries one command of either kind.
    pub dual_bus: bool,
    /// Read accesses the return queue holds (0: unbounded). The DRAM data bus cannot stall,
    /// so a read issues only with a free entry: it holds one from its column command until
    /// it leaves for the L2 (see [`Channel::returning`]).
    pub return_queue: usize,
    /// Cycles between two accesses leaving the return queue (the L2 side's rate).
    pub return_gap: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramRequest {
    pub id: u64,
    pub bank: u32,
    pub row: u32,
    pub is_write: bool,
    /// Accesses (data bursts) to the row, scheduled one by one exactly as that many
    /// requests pushed back to back would be; each completes separately (0 counts as 1).
    pub bursts: u16,
    /// Arrival time at the channel.
    pub arrival: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub id: u64,
    /// When the column command issued.
    pub issued: u64,
    /// When the data burst ends (read data returned / write data written).
    pub done: u64,
    /// When a read leaves the return queue for the L2 (`done` without a bounded return
    /// queue, and for writes). It holds its entry from `issued` until then.
    pub left: u64,
    pub row_hit: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    /// Accesses to a precharged (closed) bank.
    pub row_empty: u64,
    /// Accesses that had to close another row first.
    pub row_conflicts: u64,
    /// Data-bus busy cycles.
    pub busy: u64,
    /// Refresh windows applied.
    pub refreshes: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    open_row: Option<u32>,
    /// Earliest next ACT (after tRP of a precharge and tRC of the last ACT).
    next_act: u64,
    /// Earliest column command (tRCD after ACT).
    next_col: u64,
    /// Earliest PRE (tRAS after ACT, tRTP after a read, tWR after write data).
    next_pre: u64,
    /// The request this row was opened for, until it is served (its access is a miss).
    opened_for: Option<u64>,
    /// Index in the bank's queue of the first request in the window to `open_row` (its
    /// oldest row hit, arrived or not), kept up to date on every change of the window's
    /// part of the queue or of the row.
    hit: Option<u32>,
    /// How many of the bank's queued requests are in the window (a prefix of its queue).
    visible: u32,
    /// Bank group (precomputed: the division is slow on the hot path).
    group: u32,
}

/// What the FR-FCFS selection needs of a bank's two possible candidates in the window,
/// its queue's front (index 0) and its first hit (index 1), kept apart from the banks so
/// that the per-decision scan reads one compact array and no queue. [`Channel::sync`] (or
/// the part of it concerned) refreshes it whenever the bank's part of the window, hit
/// index, open row or timing changes.
///
/// The front is the candidate only while no hit has arrived, and a front that hits is the
/// first hit and arrives with it, so the front is always taken as a miss.
#[derive(Clone, Copy, Debug)]
struct Cand {
    /// `u64::MAX` for no such request (it never arrives).
    arrival: [u64; 2],
    /// The bank's own bound on the column command: for a miss the earliest ACT the bank
    /// itself allows (`next_act`, and `next_pre` + tRP if a row is open) plus tRCD; for a
    /// hit `next_col`. The scheduler maxes in the constraints shared by all banks.
    own: [u64; 2],
    seq: [u64; 2],
    /// What selects the scheduler's per-decision bounds (see [`Bounds`]):
    /// `group << 2 | hit * 2 + is_write`.
    class: [u32; 2],
}

impl Cand {
    const NONE: Cand = Cand {
        arrival: [u64::MAX; 2],
        own: [0; 2],
        seq: [u64::MAX; 2],
        class: [0; 2],
    };
}

/// A bound that differs between one bank group and the others.
#[derive(Clone, Copy, Debug)]
struct GroupBound {
    group: u32,
    same: u64,
    other: u64,
}

impl GroupBound {
    /// No bound (before the first command of its kind).
    const NONE: GroupBound = GroupBound {
        group: u32::MAX,
        same: 0,
        other: 0,
    };

    /// The bound in group `g`.
    #[inline]
    fn of(&self, g: u32) -> u64 {
        if g == self.group {
            self.same
        } else {
            self.other
        }
    }
}

/// Per decision, the bounds on a candidate's column command from the constraints shared
/// by all banks (see [`Channel::shared_bounds`]).
struct Bounds {
    /// By `hit * 2 + is_write`: from the decision time and the bus direction.
    dir: [u64; 4],
    /// By group: from tCCD after the last column command, and from tRRD after the last
    /// ACT plus tRCD (for misses only).
    ccd: GroupBound,
    rrd: GroupBound,
    /// By group, for reads: from tWTR after the last write's data.
    wtr: GroupBound,
}

impl Bounds {
    /// The shared bound for a candidate of class `group << 2 | hit * 2 + is_write`.
    #[inline]
    fn of(&self, class: u32) -> u64 {
        let g = class >> 2;
        let rrd = if class & 2 == 0 { self.rrd.of(g) } else { 0 };
        let wtr = if class & 1 == 0 { self.wtr.of(g) } else { 0 };
        self.dir[class as usize & 3]
            .max(self.ccd.of(g))
            .max(rrd)
            .max(wtr)
    }
}

/// One DRAM channel: its banks, request queue, window and scheduler state.
///
/// A request of several bursts (a line's sectors) is one queue entry whose sequence number
/// is that of its next burst: serving a burst decrements its count in place, and the entry
/// is in the window from its first burst on (its next burst is the only one served, and
/// the window's edge moves on by one burst per burst served). So it is scheduled exactly as
/// that many single-burst requests pushed back to back, at a fraction of the queue work.
///
/// Data structure: every queued request sits in one arrival-ordered queue per bank. The
/// window — the `queue_depth` oldest queued bursts — is the set of bursts whose sequence
/// number is below `Channel::limit`, derived from the counts; each bank's requests in it
/// are a prefix of its queue (`Bank::visible` long), and a FIFO of the other requests'
/// (sequence number, bank) (`backlog`) says which request the window takes in next, so
/// admitting a burst moves nothing. Each bank keeps the index of its first request in the
/// window to the open row (`Bank::hit`) and a compact `Cand` with what the scheduler
/// needs of its two possible candidates (front and first hit: arrival, sequence number,
/// the bank's own bound on the column command, a class). Both are updated on every change
/// to the bank's part of the window or its timing (`Channel::sync_queue` when its requests
/// change, only the sequence numbers when a served entry stays with its next burst, and
/// `Channel::sync_timing` after an ACT or column command), so a decision reads no queue:
/// it works out the few bounds shared by all banks once (`Channel::shared_bounds`; the
/// tCCD and tRRD bounds by group are kept as each command issues) and makes one pass over
/// the `Cand`s of the banks with requests in the window (bitmask `busy`;
/// `Channel::select`), skipping a candidate whose own bound is already past the best. A
/// second bitmask (`prep`) limits the early row opening (`Channel::prepare`) to the banks
/// that can need it. The `#[cfg(test)]` checks compare each candidate and column time with
/// their definitions (`Channel::candidate_by_scan`, `Channel::column_time`), and the
/// window's bookkeeping and every bank's `Cand` with theirs (`Channel::check_window`).
pub struct Channel {
    cfg: DramChannelConfig,
    banks: Vec<Bank>,
    /// The queued requests per bank in arrival order, tagged with the sequence number of
    /// their next burst; the first `Bank::visible` of them are in the window.
    queues: Vec<VecDeque<(u64, DramRequest)>>,
    /// Per bank: its candidates' data for the scheduler (see [`Cand`]).
    cands: Vec<Cand>,
    /// Bit `b` set: bank `b` has no row opened for a request yet and a front that arrives
    /// before its first hit, if any (only such banks can need [`Channel::prepare`]).
    prep: Vec<u64>,
    /// Bit `b` set: bank `b` has requests in the window (`Bank::visible > 0`).
    busy: Vec<u64>,
    /// The oldest request in the window: (sequence number, arrival).
    head: Option<(u64, u64)>,
    /// (Sequence number, bank) of the queued requests not in the window yet, in arrival
    /// order (the window has taken in none of their bursts).
    backlog: VecDeque<(u64, u32)>,
    /// Arrival of the last pushed request (arrivals must not decrease; see [`Self::push`]).
    last_push: u64,
    len: usize,
    next_seq: u64,
    cursor: u64,
    bus_free: u64,
    /// Bus time booked ahead by [`Self::occupy`], as (from, cycles), applied to `bus_free`
    /// at the first decision at or after `from` (earliest first).
    occupancy: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64)>>,
    /// The earliest next column command by group, from tCCD after the last one.
    ccd: GroupBound,
    /// Times of the last four ACTs (tFAW window).
    acts: [u64; 4],
    act_pos: usize,
    /// The earliest next ACT by group, from tRRD after the last one.
    rrd: GroupBound,
    /// The last column command's and ACT's (time, group), for the tests' definitions.
    #[cfg(test)]
    last_col: Option<(u64, u32)>,
    #[cfg(test)]
    last_act: Option<(u64, u32)>,
    /// For reads by group: tWTR (short or long) after the last write burst's end.
    wtr: GroupBound,
    /// The last write's data end and group, for the tests' definitions.
    #[cfg(test)]
    last_write: Option<(u64, u32)>,
    pub stats: ChannelStats,
    #[cfg(test)]
    act_log: Vec<u64>,
    /// Start of the next refresh window not yet applied (`u64::MAX`: no refresh).
    ref_next: u64,
    /// The command buses: `[column, row]`, or one shared bus (index 0) without `dual_bus`.
    cmd: Vec<CmdBus>,
    /// Every command issued, when recording (see [`Self::record_commands`]).
    log: Option<Vec<(u64, Command)>>,
    /// The return queue (see [`ReturnQueue`]).
    ret: ReturnQueue,
}

impl Channel {
    pub fn new(cfg: DramChannelConfig) -> Channel {
        Channel {
            banks: (0..cfg.banks.max(1))
                .map(|b| Bank {
                    group: b / (cfg.banks / cfg.bank_groups.max(1)).max(1),
                    ..Bank::default()
                })
                .collect(),
            queues: vec![VecDeque::new(); cfg.banks.max(1) as usize],
            cands: vec![Cand::NONE; cfg.banks.max(1) as usize],
            prep: vec![0; (cfg.banks.max(1) as usize).div_ceil(64)],
            busy: vec![0; (cfg.banks.max(1) as usize).div_ceil(64)],
            head: None,
            backlog: VecDeque::new(),
            last_push: 0,
            len: 0,
            next_seq: 0,
            cfg,
            cursor: 0,
            bus_free: 0,
            occupancy: std::collections::BinaryHeap::new(),
            ccd: GroupBound::NONE,
            acts: [0; 4],
            act_pos: 0,
            rrd: GroupBound::NONE,
            #[cfg(test)]
            last_col: None,
            #[cfg(test)]
            last_act: None,
            wtr: GroupBound::NONE,
            #[cfg(test)]
            last_write: None,
            stats: ChannelStats::default(),
            #[cfg(test)]
            act_log: Vec::new(),
            ref_next: Refresh::first(cfg.refresh),
            cmd: vec![CmdBus::new(); if cfg.dual_bus { 2 } else { 1 }],
            log: None,
            ret: ReturnQueue::new(cfg.return_queue, cfg.return_gap),
        }
    }

    /// Holds the channel's next decision until `t` (a full return queue: the data of
    /// another read would have nowhere to go).
    pub fn hold_until(&mut self, t: u64) {
        self.cursor = self.cursor.max(t);
    }

    pub fn config(&self) -> &DramChannelConfig {
        &self.cfg
    }

    /// Bank group of `bank` (precomputed per bank: the division is slow on the hot path).
    #[inline]
    fn group(&self, bank: u32) -> u32 {
        match self.banks.get(bank as usize) {
            Some(b) => b.group,
            None => bank / (self.cfg.banks / self.cfg.bank_groups.max(1)).max(1),
        }
    }

    /// True when the scheduler queue has room.
    pub fn can_accept(&self) -> bool {
        self.len < self.cfg.queue_depth.max(1)
    }

    pub fn queued(&self) -> usize {
        self.len
    }

    /// Sequence numbers below this are in the window: the `queue_depth` oldest queued
    /// bursts. (Bursts are served only from the window, so every burst from here to
    /// `next_seq` is queued.)
    #[inline]
    fn limit(&self) -> u64 {
        self.next_seq - self.len.saturating_sub(self.cfg.queue_depth.max(1)) as u64
    }

    /// Adds a request (arrival times must not decrease between pushes).
    pub fn push(&mut self, r: DramRequest) {
        debug_assert!(
            r.arrival >= self.last_push,
            "DRAM arrivals went back in time"
        );
        // (The scheduler takes a request's bank group from the queue it sits in.)
        debug_assert!((r.bank as usize) < self.banks.len(), "no bank {}", r.bank);
        self.last_push = r.arrival;
        let r = DramRequest {
            bursts: r.bursts.max(1),
            ..r
        };
        let (s, b) = (self.next_seq, (r.bank as usize).min(self.queues.len() - 1));
        self.next_seq += r.bursts as u64;
        self.len += r.bursts as usize;
        self.queues[b].push_back((s, r));
        // The window takes its first burst at once if it has room (then no request waits
        // behind it: the backlog is empty).
        if s < self.limit() {
            self.enter(b);
        } else {
            self.backlog.push_back((s, b as u32));
        }
    }

    /// The FR-FCFS choice at `now` (`bounds` from [`Self::shared_bounds`]): (column time,
    /// bank, 1 if the bank's first hit else 0 for its front). Each bank offers one
    /// candidate: its first hit once that has arrived, else its front once that has arrived
    /// (see `candidate`); its column time is the bank's own bound maxed with the shared
    /// ones (see [`Cand`]). The earliest wins, the oldest on ties.
    #[inline]
    fn select(&self, now: u64, bounds: &Bounds) -> Option<(u64, usize, usize)> {
        let (mut best_col, mut best_seq, mut best) = (u64::MAX, u64::MAX, usize::MAX);
        // (Banks without requests in the window have no front: it would never arrive.)
        for_each_bit(&self.busy, |bi| {
            let c = &self.cands[bi];
            if c.arrival[0] > now {
                return;
            }
            let h = (c.arrival[1] <= now) as usize;
            let (own, class) = (c.own[h], c.class[h]);
            #[cfg(test)]
            self.check_candidate(bi, now, h, own.max(bounds.of(class)));
            // (Its column time is at least its own bound: past the best one, it loses.)
            if own > best_col {
                return;
            }
            let col = own.max(bounds.of(class));
            let seq = c.seq[h];
            if col < best_col || (col == best_col && seq < best_seq) {
                (best_col, best_seq, best) = (col, seq, bi << 1 | h);
            }
        });
        (best != usize::MAX).then_some((best_col, best >> 1, best & 1))
    }

    /// The bounds on a candidate's column command at `now` from the constraints shared by
    /// all banks: from `now` (+ tRCD after a miss's ACT) and the bus direction (a read
    /// waits out the write-to-read turnaround, and every access needs its data slot on the
    /// bus; counting both here keeps reads and writes in batches instead of switching
    /// direction on every request), and by bank group, from tCCD after the last column
    /// command and, for a miss, tRRD after the last ACT (both differ only between the same
    /// and another group; 0 when there was none).
    fn shared_bounds(&self, now: u64) -> Bounds {
        let t = self.cfg.timing;
        let read = self.bus_free.saturating_sub(t.t_cl);
        let write = self.bus_free.saturating_sub(t.t_wl);
        let miss = now + t.t_rcd;
        Bounds {
            dir: [
                miss.max(read),
                miss.max(write),
                now.max(read),
                now.max(write),
            ],
            ccd: self.ccd,
            rrd: GroupBound {
                same: self.rrd.same + t.t_rcd,
                other: self.rrd.other + t.t_rcd,
                ..self.rrd
            },
            wtr: self.wtr,
        }
    }

    /// Keeps the data bus busy for `cycles` from `from` on (page migration traffic that is
    /// not modelled request by request). A booking ahead of the channel's decisions takes
    /// the bus when the decisions reach `from` (or after the burst then in flight), not
    /// before: the requests served meanwhile go first. (Applied at once, a migration
    /// queued a few thousand cycles ahead closed the bus from the present until its end,
    /// and a stream of them kept a channel's own traffic off it.)
    pub fn occupy(&mut self, from: u64, cycles: u64) {
        self.occupancy.push(std::cmp::Reverse((from, cycles)));
        self.stats.busy += cycles;
    }

    /// Applies the bookings of [`Self::occupy`] that have begun by `now`, in order.
    #[inline]
    fn apply_occupancy(&mut self, now: u64) {
        while let Some(&std::cmp::Reverse((from, cycles))) = self.occupancy.peek() {
            if from > now {
                break;
            }
            self.occupancy.pop();
            self.bus_free = self.bus_free.max(from) + cycles;
        }
    }

    /// When the next scheduling decision happens, if anything is queued.
    ///
    /// Nothing issues while the return queue is full (GPGPU-Sim's channel stops moving
    /// data then, writes included).
    pub fn next_decision(&self) -> Option<u64> {
        self.head
            .map(|(_, a)| self.cursor.max(a).max(self.ret.free_at()))
    }

    /// Schedules one request (FR-FCFS) and returns its completion.
    pub fn issue_next(&mut self) -> Option<Completion> {
        let now = self.next_decision()?;
        self.cursor = now;
        self.apply_occupancy(now);
        self.ret.drop_left(now);
        // Refresh windows that have begun by now close every bank.
        self.refresh_until(now);
        let (best_col, bi, h) = self.choose(now)?;
        let (seq, r, stays) = self.take_burst(bi, h)?;
        // (Bank `bi`'s own bounds are refreshed once its timing is updated, below.)
        self.len -= 1;
        self.admit();
        let g = self.banks[bi].group;
        // A hit's column time is the one the selection computed (nothing it depends on has
        // changed since); a miss's follows its ACT.
        let col = if self.banks[bi].open_row != Some(r.row) {
            self.activate(bi as u32, r.row, r.id, now);
            self.column_time(bi, g, r.is_write, now)
        } else {
            #[cfg(test)]
            assert_eq!(best_col, self.column_time(bi, g, r.is_write, now));
            best_col
        };
        let (col, done, row_hit) = self.column(bi, g, &r, col);
        // A read leaves the return queue after its data is in, one per `return_gap`.
        let left = self.ret.leave(done, r.is_write);
        self.sync_timing(bi);
        self.prepare(now);
        // (After every bank's `Cand` is current again.) An entry that stays is still the
        // oldest if it was: its next burst is the next sequence number.
        if self.head.is_some_and(|(h, _)| h == seq) {
            self.head = if stays {
                Some((seq + 1, r.arrival))
            } else {
                self.oldest()
            };
        }
        #[cfg(test)]
        self.check_window();
        // The next decision is taken no earlier than this command: requests arriving
        // meanwhile compete with the rest of the queue (no head-of-line blocking).
        self.cursor = self.cursor.max(col);
        Some(Completion {
            id: r.id,
            issued: col,
            done,
            left,
            row_hit,
        })
    }

    /// First-ready, first-come-first-served at `now`: the visible request whose column
    /// command can issue earliest (row hits first, then banks that can open their row
    /// soonest), the oldest on ties. Only the `queue_depth` oldest requests are visible.
    /// Each bank offers one candidate: its oldest visible row hit, else its oldest
    /// request. Returns its column time, bank and whether it is the bank's hit (`h == 1`).
    #[inline]
    fn choose(&mut self, now: u64) -> Option<(u64, usize, usize)> {
        loop {
            let bounds = self.shared_bounds(now);
            let (best_col, bi, h) = self.select(now, &bounds)?;
            // An access whose data would not be through before the next refresh window
            // starts waits for it (the refresh closes its row: it is then a miss after it).
            if !self.crosses_refresh(best_col, bi, h, now) {
                return Some((best_col, bi, h));
            }
            self.refresh();
        }
    }

    /// Takes the next burst of bank `bi`'s candidate (its hit if `h == 1`) off its queue:
    /// a request with bursts left stays with its next one, else it leaves the queue and
    /// the window. Returns its sequence number, the request as it was, and whether it
    /// stays.
    #[inline]
    fn take_burst(&mut self, bi: usize, h: usize) -> Option<(u64, DramRequest, bool)> {
        let bank = &mut self.banks[bi];
        let i = if h == 1 { bank.hit? as usize } else { 0 };
        let e = self.queues[bi].get_mut(i)?;
        let (seq, r) = *e;
        // Whether the entry stays queued with its next burst.
        let stays = r.bursts > 1;
        if stays {
            // The next burst takes its place (and keeps the bank's hit index): the bank's
            // candidates are the same entries, one burst on.
            e.0 += 1;
            e.1.bursts -= 1;
            let c = &mut self.cands[bi];
            if i == 0 {
                c.seq[0] += 1;
            }
            if bank.hit == Some(i as u32) {
                c.seq[1] += 1;
            }
        } else {
            self.queues[bi].remove(i);
            bank.visible -= 1;
            // Keep the bank's first-hit index: entries behind `i` moved up by one, and the
            // next hit after a served hit is found by scanning on from where it was.
            bank.hit = match bank.hit {
                Some(h) if h as usize > i => Some(h - 1),
                Some(h) if h as usize == i => {
                    first_hit(&self.queues[bi], bank.open_row, i, bank.visible)
                }
                h => h,
            };
            self.sync_queue(bi);
        }
        Some((seq, r, stays))
    }

    /// Issues `r`'s column command to bank `bi` (group `g`) at the first free command-bus
    /// cycle from `col` on and commits its timing: the data bus, tCCD, tWTR after a write,
    /// the bank's earliest precharge, and the statistics. Returns the command's cycle, when
    /// its data burst ends, and whether it was a row hit.
    #[inline]
    fn column(&mut self, bi: usize, g: u32, r: &DramRequest, col: u64) -> (u64, u64, bool) {
        let t = self.cfg.timing;
        let (lat, burst, t_wr, t_rtp, t_ccd_l, t_ccd_s) = (
            if r.is_write { t.t_wl } else { t.t_cl },
            t.burst,
            t.t_wr,
            t.t_rtp,
            t.t_ccd_l,
            t.t_ccd_s,
        );
        let col = self.command(
            if r.is_write {
                Command::Write
            } else {
                Command::Read
            },
            col,
        );
        let bank = &mut self.banks[bi];
        let row_hit = bank.opened_for != Some(r.id);
        if row_hit {
            self.stats.row_hits += 1;
        }
        bank.opened_for = None;
        let done = col + lat + burst;
        self.bus_free = done;
        self.stats.busy += burst;
        self.ccd = GroupBound {
            group: g,
            same: col + t_ccd_l,
            other: col + t_ccd_s,
        };
        #[cfg(test)]
        {
            self.last_col = Some((col, g));
        }
        bank.next_col = col;
        if r.is_write {
            self.wtr = GroupBound {
                group: g,
                same: done + t.t_wtr_l,
                other: done + t.t_wtr_s,
            };
            #[cfg(test)]
            {
                self.last_write = Some((done, g));
            }
            bank.next_pre = bank.next_pre.max(done + t_wr);
            self.stats.writes += 1;
        } else {
            bank.next_pre = bank.next_pre.max(col + t_rtp);
            self.stats.reads += 1;
        }
        (col, done, row_hit)
    }

    /// When a column command to `bank` (in group `g`) can issue at `now`.
    fn column_time(&self, bank: usize, g: u32, is_write: bool, now: u64) -> u64 {
        let t = &self.cfg.timing;
        let mut col = self.banks[bank].next_col.max(now).max(self.ccd.of(g));
        if !is_write {
            col = col.max(self.wtr.of(g));
        }
        let lat = if is_write { t.t_wl } else { t.t_cl };
        // The data burst needs the bus: delay the command until its data slot is free.
        col.max(self.bus_free.saturating_sub(lat))
    }

    /// When an ACT to `bank` could issue at `now` (as [`Self::activate`] computes it,
    /// before its command-bus slot).
    fn act_time(&self, bank: usize, now: u64) -> u64 {
        let t = &self.cfg.timing;
        let b = &self.banks[bank];
        let mut act = now.max(b.next_act);
        if b.open_row.is_some() {
            act = act.max(now.max(b.next_pre) + t.t_rp);
        }
        act.max(self.rrd.of(b.group))
            .max(self.acts[self.act_pos] + t.t_faw)
    }

    /// Precharges/activates `bank` to `row` as early as the constraints allow after `now`.
    fn activate(&mut self, bank: u32, row: u32, for_id: u64, now: u64) {
        let t = self.cfg.timing;
        let g = self.group(bank);
        let b = self.banks[bank as usize];
        let mut act = now.max(b.next_act);
        if b.open_row.is_some() {
            let pre = self.command(Command::Pre, now.max(b.next_pre));
            act = act.max(pre + t.t_rp);
            self.stats.row_conflicts += 1;
        } else {
            self.stats.row_empty += 1;
        }
        act = act.max(self.rrd.of(g));
        // The fourth-previous ACT opens the tFAW window.
        act = act.max(self.acts[self.act_pos] + t.t_faw);
        let act = self.command(Command::Act, act);
        self.acts[self.act_pos] = act;
        self.act_pos = (self.act_pos + 1) % 4;
        self.rrd = GroupBound {
            group: g,
            same: act + t.t_rrd_l,
            other: act + t.t_rrd_s,
        };
        #[cfg(test)]
        {
            self.last_act = Some((act, g));
        }
        #[cfg(test)]
        self.act_log.push(act);
        let b = &mut self.banks[bank as usize];
        let hit = first_hit(&self.queues[bank as usize], Some(row), 0, b.visible);
        b.open_row = Some(row);
        b.opened_for = Some(for_id);
        b.hit = hit;
        b.next_act = act + t.t_rc;
        b.next_pre = act + t.t_ras;
        b.next_col = act + t.t_rcd;
        self.sync(bank as usize);
    }

    /// Bank-level parallelism: a bank with no queued hit but a queued miss gets its row
    /// opened now, in the shadow of other banks' data transfers.
    fn prepare(&mut self, now: u64) {
        // Only banks in `prep` can qualify (see `sync`).
        for w in 0..self.prep.len() {
            let mut m = self.prep[w];
            while m != 0 {
                let bi = w * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                // Candidate (see `candidate`) an arrived front that is no hit: open its row.
                let c = &self.cands[bi];
                if c.arrival[0] > now || c.arrival[1] <= now {
                    continue;
                }
                if self.opens_into_refresh(bi, now) {
                    // (Its row would be closed by the refresh before it is used.)
                    continue;
                }
                let (_, r) = self.queues[bi][0];
                self.activate(bi as u32, r.row, r.id, now);
            }
        }
    }
}

#[cfg(test)]
mod tests;

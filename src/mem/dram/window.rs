//! The scheduler's queue of a DRAM channel: each bank's requests in arrival order, the
//! window of the `queue_depth` oldest bursts that FR-FCFS chooses from (a request beyond it
//! waits in the backlog and is admitted in sequence order as bursts are served), and each
//! bank's candidates ([`Cand`]: its oldest request and its oldest row hit, with their
//! timing) kept current as requests enter, leave and rows open. Tests check the cached
//! candidates against a scan of the queues.

use std::collections::VecDeque;

use super::*;

impl Channel {
    /// Takes the backlog's front request into the window once the window reaches its first
    /// burst (after a burst is served, the window grows by at most one burst).
    pub(super) fn admit(&mut self) {
        if let Some(&(s, b)) = self.backlog.front() {
            if s < self.limit() {
                self.backlog.pop_front();
                self.enter(b as usize);
            }
        }
    }

    /// Takes the first of bank `b`'s queued requests outside the window into the window
    /// (admission is in sequence order, so it stands behind the bank's part of the window).
    pub(super) fn enter(&mut self, b: usize) {
        let bank = &mut self.banks[b];
        let i = bank.visible;
        bank.visible += 1;
        let (s, r) = self.queues[b][i as usize];
        // The bank's candidates change only with a new front or a new first hit.
        let mut changed = i == 0;
        if bank.hit.is_none() && bank.open_row == Some(r.row) {
            bank.hit = Some(i);
            changed = true;
        }
        if changed {
            self.sync(b);
        }
        // Admitted requests are younger than the whole window.
        self.head = self.head.or(Some((s, r.arrival)));
    }

    /// The oldest queued request's (sequence number, arrival), found by a scan of the
    /// busy banks' fronts in their [`Cand`]s (`head` caches it; the `Cand`s must be
    /// current).
    pub(super) fn oldest(&self) -> Option<(u64, u64)> {
        let mut best = (u64::MAX, u64::MAX);
        for_each_bit(&self.busy, |b| {
            let c = &self.cands[b];
            if c.seq[0] < best.0 {
                best = (c.seq[0], c.arrival[0]);
            }
        });
        (best.0 != u64::MAX).then_some(best)
    }

    /// Refreshes bank `b`'s [`Cand`] from its part of the window, hit index and timing,
    /// and its bits in `prep` and `busy`.
    #[inline]
    pub(super) fn sync(&mut self, b: usize) {
        self.sync_queue(b);
        self.sync_timing(b);
    }

    /// The part of [`Self::sync`] that depends on the bank's part of the window and its hit
    /// index: which requests its candidates are, and its bit in `busy`.
    #[inline]
    pub(super) fn sync_queue(&mut self, b: usize) {
        let q = &self.queues[b];
        let bank = &self.banks[b];
        let c = &mut self.cands[b];
        let class = bank.group << 2;
        // (A missing candidate never arrives; its other fields are not read.)
        (c.arrival[0], c.seq[0]) = (u64::MAX, u64::MAX);
        if let Some((seq, r)) = q.front().filter(|_| bank.visible > 0) {
            c.arrival[0] = r.arrival;
            c.seq[0] = *seq;
            c.class[0] = class | r.is_write as u32;
        }
        c.arrival[1] = u64::MAX;
        if let Some((seq, r)) = bank.hit.and_then(|h| q.get(h as usize)) {
            c.arrival[1] = r.arrival;
            c.seq[1] = *seq;
            c.class[1] = class | 2 | r.is_write as u32;
        }
        let (w, bit) = (b / 64, 1u64 << (b % 64));
        self.busy[w] = self.busy[w] & !bit | if bank.visible > 0 { bit } else { 0 };
    }

    /// The part of [`Self::sync`] that depends on the bank's timing, open row and the
    /// candidates' arrivals: the bank's own bounds, and its bit in `prep`.
    #[inline]
    pub(super) fn sync_timing(&mut self, b: usize) {
        let t = &self.cfg.timing;
        let bank = &self.banks[b];
        let c = &mut self.cands[b];
        let mut act = bank.next_act;
        if bank.open_row.is_some() {
            act = act.max(bank.next_pre + t.t_rp);
        }
        c.own = [act + t.t_rcd, bank.next_col];
        // `prepare` may have to open a row for this bank once its front has arrived
        // before its first hit (also when it has none).
        let prep = bank.opened_for.is_none() && c.arrival[1] > c.arrival[0];
        let (w, bit) = (b / 64, 1u64 << (b % 64));
        self.prep[w] = self.prep[w] & !bit | if prep { bit } else { 0 };
    }

    /// Bank `bi`'s candidate: index of its oldest arrived row hit in the window, else of
    /// its oldest request if that has arrived. Arrivals do not decrease along a queue, so
    /// the first hit (cached in [`Bank::hit`]) is the oldest arrived one if it has arrived.
    /// (The scheduler works on the banks' [`Cand`]s; tests check the two agree.)
    #[cfg(test)]
    fn candidate(&self, bi: usize, now: u64) -> Option<usize> {
        let q = &self.queues[bi];
        let (_, r0) = q.front().filter(|_| self.banks[bi].visible > 0)?;
        if r0.arrival > now {
            return None;
        }
        let c = match self.banks[bi].hit {
            Some(h) if q[h as usize].1.arrival <= now => h as usize,
            _ => 0,
        };
        #[cfg(test)]
        assert_eq!(Some(c), self.candidate_by_scan(bi, now), "stale hit cache");
        Some(c)
    }

    /// Checks the scheduler's view of bank `bi` at `now` (candidate `h` of its [`Cand`],
    /// column time `col`) against the definitions: [`Self::candidate`] and the timing.
    #[cfg(test)]
    pub(super) fn check_candidate(&self, bi: usize, now: u64, h: usize, col: u64) {
        let i = self.candidate(bi, now).expect("a candidate");
        assert_eq!(
            i,
            if h == 1 {
                self.banks[bi].hit.unwrap() as usize
            } else {
                0
            }
        );
        let t = self.cfg.timing;
        let (_, r) = self.queues[bi][i];
        let b = &self.banks[bi];
        let g = self.group(r.bank);
        let mut want = if b.open_row == Some(r.row) {
            b.next_col.max(now)
        } else {
            let mut act = now.max(b.next_act);
            if b.open_row.is_some() {
                act = act.max(b.next_pre + t.t_rp);
            }
            if let Some((la, lg)) = self.last_act {
                act = act.max(la + if lg == g { t.t_rrd_l } else { t.t_rrd_s });
            }
            act + t.t_rcd
        };
        assert_eq!(b.open_row == Some(r.row), h == 1);
        if let Some((lc, lg)) = self.last_col {
            want = want.max(lc + if lg == g { t.t_ccd_l } else { t.t_ccd_s });
        }
        let lat = if r.is_write {
            t.t_wl
        } else {
            if let Some((we, wg)) = self.last_write {
                want = want.max(we + if wg == g { t.t_wtr_l } else { t.t_wtr_s });
            }
            t.t_cl
        };
        want = want.max(self.bus_free.saturating_sub(lat));
        assert_eq!(col, want, "column time of bank {bi}'s candidate");
    }

    /// [`Self::candidate`] by a scan of the queue (the definition; tests check the cache).
    #[cfg(test)]
    fn candidate_by_scan(&self, bi: usize, now: u64) -> Option<usize> {
        let q = &self.queues[bi];
        let limit = self.limit();
        let (s0, r0) = q.front()?;
        if *s0 >= limit || r0.arrival > now {
            return None;
        }
        if let Some(row) = self.banks[bi].open_row {
            for (i, (s, r)) in q.iter().enumerate() {
                if *s >= limit || r.arrival > now {
                    break;
                }
                if r.row == row {
                    return Some(i);
                }
            }
        }
        Some(0)
    }

    /// Checks the window's bookkeeping against its definition, the `queue_depth` oldest
    /// queued bursts (those below [`Self::limit`]): each bank's part of it, its busy bit,
    /// the backlog and the cached oldest request; and every bank's [`Cand`] and bits
    /// against a fresh [`Self::sync`].
    #[cfg(test)]
    pub(super) fn check_window(&mut self) {
        let limit = self.limit();
        let mut bursts = 0;
        for (b, q) in self.queues.iter().enumerate() {
            let in_window = q.iter().filter(|(s, _)| *s < limit).count();
            assert_eq!(
                in_window, self.banks[b].visible as usize,
                "bank {b}'s window"
            );
            for (s, r) in q.iter().take(in_window) {
                bursts += (limit - s).min(r.bursts as u64);
            }
            let busy = self.busy[b / 64] >> (b % 64) & 1 == 1;
            assert_eq!(busy, in_window > 0, "bank {b}'s busy bit");
        }
        assert_eq!(bursts as usize, self.len.min(self.cfg.queue_depth.max(1)));
        let mut waiting: Vec<_> = (self.queues.iter().enumerate())
            .flat_map(|(b, q)| q.iter().map(move |(s, _)| (*s, b as u32)))
            .filter(|(s, _)| *s >= limit)
            .collect();
        waiting.sort_unstable();
        assert!(self.backlog.iter().copied().eq(waiting), "backlog");
        let oldest = (self.queues.iter())
            .filter_map(|q| q.front())
            .min_by_key(|(s, _)| *s)
            .map(|(s, r)| (*s, r.arrival));
        assert_eq!(self.head, oldest, "oldest request");
        // Every bank's `Cand` and bits are current (`sync` leaves a missing candidate's
        // other fields as they were).
        for b in 0..self.cands.len() {
            let bits = |ch: &Channel| {
                (
                    ch.prep[b / 64] >> (b % 64) & 1,
                    ch.busy[b / 64] >> (b % 64) & 1,
                )
            };
            let (c, was) = (self.cands[b], bits(self));
            self.sync(b);
            let n = &self.cands[b];
            assert_eq!(
                (c.arrival, c.seq[0], was),
                (n.arrival, n.seq[0], bits(self)),
                "bank {b}"
            );
            for h in 0..2 {
                if n.arrival[h] != u64::MAX {
                    assert_eq!(
                        (c.own[h], c.seq[h], c.class[h]),
                        (n.own[h], n.seq[h], n.class[h]),
                        "bank {b}"
                    );
                }
            }
        }
    }
}

/// Index of the first request in `q` at or after `from` and before `to` to `row`.
pub(super) fn first_hit(
    q: &VecDeque<(u64, DramRequest)>,
    row: Option<u32>,
    from: usize,
    to: u32,
) -> Option<u32> {
    let row = row?;
    q.range(from..to as usize)
        .position(|(_, r)| r.row == row)
        .map(|p| (from + p) as u32)
}

/// Calls `f` with the index of every set bit of `mask`, in increasing order.
#[inline]
pub(super) fn for_each_bit(mask: &[u64], mut f: impl FnMut(usize)) {
    for (w, &m) in mask.iter().enumerate() {
        let mut m = m;
        while m != 0 {
            f(w * 64 + m.trailing_zeros() as usize);
            m &= m - 1;
        }
    }
}

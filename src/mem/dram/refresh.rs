//! All-bank refresh of a DRAM channel: every tREFI all banks close for tRFC, the channels
//! of one memory system staggered over the interval. It owns the
//! refresh parameters ([`Refresh`]), applying the windows that have begun, and the two
//! checks the scheduler makes against the next window: an access whose data would not be
//! through when it starts waits for it, and no row is opened early only to be closed by
//! it.

use super::Channel;

/// All-bank refresh: every `t_refi` cycles (the first at `t_refi`) all banks are closed
/// and take no ACT or column command for `t_rfc` cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refresh {
    pub t_refi: u64,
    pub t_rfc: u64,
}

impl Refresh {
    /// Start of the first refresh window of `r` (`u64::MAX`: no refresh).
    pub(super) fn first(r: Option<Refresh>) -> u64 {
        r.map_or(u64::MAX, |r| r.t_refi.max(1))
    }
}

impl Channel {
    /// Staggers this channel's refresh: channel `index` of `count` starts its windows
    /// `index * tREFI / count` cycles after the others' phase, so the channels of one GPU
    /// refresh in turn rather than all at once (a controller spreads refreshes over its
    /// channels; windows in lockstep would black out the whole memory every tREFI and make a
    /// latency-bound access stream resonate with them). Call once, before the first access
    /// (it moves the first window that [`Refresh::first`] set).
    pub fn stagger_refresh(&mut self, index: usize, count: usize) {
        if let Some(r) = self.cfg.refresh {
            self.ref_next += r.t_refi.max(1) * index as u64 / count.max(1) as u64;
        }
    }

    /// Applies every refresh window that has begun by `now`.
    #[inline]
    pub(super) fn refresh_until(&mut self, now: u64) {
        while now >= self.ref_next {
            self.refresh();
        }
    }

    /// Applies the refresh window that starts at `ref_next`: every bank is closed and
    /// takes its next ACT after the window (and after its precharge). Then the next window.
    pub(super) fn refresh(&mut self) {
        let Some(r) = self.cfg.refresh else {
            return;
        };
        let end = self.ref_next + r.t_rfc;
        let t_rp = self.cfg.timing.t_rp;
        for b in 0..self.banks.len() {
            let bank = &mut self.banks[b];
            if bank.open_row.is_some() {
                bank.next_act = bank.next_act.max(bank.next_pre + t_rp);
            }
            bank.next_act = bank.next_act.max(end);
            bank.open_row = None;
            bank.opened_for = None;
            bank.hit = None;
            self.sync(b);
        }
        self.stats.refreshes += 1;
        self.ref_next += r.t_refi.max(1);
    }

    /// Whether the access chosen at `now` (`select`'s column time `col`, bank `bi`, its
    /// hit if `h == 1`) would still be moving data when the next refresh window starts
    /// (`false` without refresh).
    #[inline]
    pub(super) fn crosses_refresh(&self, col: u64, bi: usize, h: usize, now: u64) -> bool {
        if self.ref_next == u64::MAX {
            return false;
        }
        let t = &self.cfg.timing;
        let i = if h == 1 {
            self.banks[bi].hit.map_or(0, |x| x as usize)
        } else {
            0
        };
        let Some((_, r)) = self.queues[bi].get(i) else {
            return false;
        };
        let mut col = col;
        if self.banks[bi].open_row != Some(r.row) {
            col = col.max(self.act_time(bi, now) + Self::CMD_SLACK + t.t_rcd);
        }
        let lat = if r.is_write { t.t_wl } else { t.t_cl };
        col + Self::CMD_SLACK + lat + t.burst > self.ref_next
    }

    /// Whether a row opened in bank `bi` at `now` would be closed by the next refresh
    /// window before a column command could use it (`false` without refresh).
    #[inline]
    pub(super) fn opens_into_refresh(&self, bi: usize, now: u64) -> bool {
        self.ref_next != u64::MAX
            && self.act_time(bi, now) + Self::CMD_SLACK + self.cfg.timing.t_rcd >= self.ref_next
    }
}

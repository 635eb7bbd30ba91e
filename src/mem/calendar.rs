//! A bandwidth reservation calendar: how much of a resource (a crossbar port, an atomic
//! unit) each upcoming cycle has left. Unlike a single next-free time, it accepts
//! reservations out of time order — a reply whose data is ready far in the future does not
//! hold up an earlier one — which is what an event-driven model that computes some
//! completion times ahead needs. Old cycles are recycled as time moves on.

/// Per-cycle capacity over a sliding window of `window` cycles.
#[derive(Clone, Debug)]
pub struct Calendar {
    cap: u32,
    /// Units taken per cycle of the window; allocated by the first reservation (a port
    /// that is never used costs no memory).
    used: Vec<u32>,
    /// Cycles in the window (a power of two).
    window: usize,
    base: u64,
    /// Every cycle in `[full.0, full.1)` is at capacity: a reservation starting there
    /// skips to `full.1` instead of visiting each cycle (a congested port's backlog).
    full: (u64, u64),
}

impl Calendar {
    /// `cap` units per cycle; the window must cover the furthest reservation ahead.
    pub fn new(cap: u32, window: usize) -> Calendar {
        Calendar {
            cap: cap.max(1),
            used: Vec::new(),
            window: window.next_power_of_two().max(64),
            base: 0,
            full: (0, 0),
        }
    }

    fn slot(&self, t: u64) -> usize {
        (t as usize) & (self.used.len() - 1)
    }

    fn advance(&mut self, now: u64) {
        let len = self.used.len() as u64;
        if now < self.base + len / 2 {
            return;
        }
        let new_base = now - len / 4;
        if new_base - self.base >= len {
            self.used.iter_mut().for_each(|u| *u = 0);
        } else {
            for t in self.base..new_base {
                let i = self.slot(t);
                self.used[i] = 0;
            }
        }
        self.base = new_base;
        // Recycled cycles lie before `base` or beyond the old window's end (after `full`).
        self.full.0 = self.full.0.max(new_base);
    }

    /// Records that cycles `[start, end)` are at capacity.
    fn note_full(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let (a, b) = self.full;
        self.full = if a < b && start <= b && a <= end {
            (a.min(start), b.max(end))
        } else {
            (start, end)
        };
    }

    /// Reserves `units` from cycle `now` on (in the earliest cycles with room) and returns
    /// the cycle after the last one used.
    pub fn reserve(&mut self, now: u64, units: u32) -> u64 {
        if self.used.is_empty() {
            self.used = vec![0; self.window];
        }
        self.advance(now);
        let len = self.used.len() as u64;
        let mut t = now.max(self.base);
        if self.full.0 <= t && t < self.full.1 {
            t = self.full.1;
        }
        let start = t;
        let mut left = units.max(1);
        loop {
            if t >= self.base + len {
                // Beyond the window: serialise after it (never expected in practice).
                return t + left.div_ceil(self.cap) as u64;
            }
            let i = self.slot(t);
            let free = self.cap - self.used[i];
            let take = free.min(left);
            self.used[i] += take;
            left -= take;
            t += 1;
            if left == 0 {
                // Every cycle visited before the last one was filled up.
                let end = if self.used[i] == self.cap { t } else { t - 1 };
                self.note_full(start, end);
                return t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_reservations_queue() {
        let mut c = Calendar::new(1, 256);
        assert_eq!(c.reserve(10, 1), 11);
        assert_eq!(c.reserve(10, 1), 12);
        assert_eq!(c.reserve(10, 3), 15);
    }

    #[test]
    fn a_late_reservation_does_not_block_an_earlier_one() {
        let mut c = Calendar::new(1, 4096);
        assert_eq!(c.reserve(1000, 1), 1001);
        assert_eq!(c.reserve(100, 1), 101);
        assert_eq!(c.reserve(1000, 1), 1002);
    }

    /// The skip over full cycles gives the same answers as visiting every cycle.
    #[test]
    fn skipping_full_cycles_matches_a_plain_scan() {
        fn plain(
            used: &mut std::collections::HashMap<u64, u32>,
            cap: u32,
            now: u64,
            units: u32,
        ) -> u64 {
            let (mut t, mut left) = (now, units.max(1));
            loop {
                let u = used.entry(t).or_insert(0);
                let take = (cap - *u).min(left);
                *u += take;
                left -= take;
                t += 1;
                if left == 0 {
                    return t;
                }
            }
        }
        for cap in [1u32, 3, 40] {
            let mut c = Calendar::new(cap, 1024);
            let mut reference = std::collections::HashMap::new();
            let mut rng = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15);
            let mut now = 0u64;
            for _ in 0..20_000 {
                let x = rng.next_u64();
                now += x % 4;
                let at = now + (x >> 8) % 64;
                // Up to two cycles' worth (below the arrival rate on average, so the backlog
                // stays within the window): runs of full cycles form and are skipped.
                let units = 1 + ((x >> 20) % (2 * cap as u64)) as u32;
                assert_eq!(c.reserve(at, units), plain(&mut reference, cap, at, units));
            }
        }
    }

    #[test]
    fn capacity_per_cycle_and_recycling() {
        let mut c = Calendar::new(40, 64);
        assert_eq!(c.reserve(0, 40), 1);
        assert_eq!(c.reserve(0, 8), 2);
        // Far later: old cycles are recycled.
        for k in 0..1000u64 {
            assert_eq!(c.reserve(1000 + k * 100, 40), 1001 + k * 100);
        }
    }
}

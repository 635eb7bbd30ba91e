//! A bandwidth reservation calendar: how much of a resource (a crossbar port, an atomic
//! unit) each upcoming cycle has left. Unlike a single next-free time, it accepts
//! reservations out of time order — a reply whose data is ready far in the future does not
//! hold up an earlier one — which is what an event-driven model that computes some
//! completion times ahead needs. Old cycles are recycled as time moves on.
//!
//! A cycle's use never exceeds the capacity, so it is kept in the narrowest integer that
//! holds the capacity (`Cells`: one byte a cycle for every bundled port), which keeps a
//! port's window small to allocate, zero and cache.
//!
//! A reservation computed far ahead of the present (an atomic's reply behind a long
//! atomic-unit backlog, a reply held until a migrating page is ready) must not drag the
//! window with it: [`Calendar::reserve_ahead`] is told the present, moves the window only
//! to it, and keeps what falls past the window's end in a sparse overflow that joins the
//! window as it moves. (Moving the window to the far reservation instead would clamp every
//! later reservation of the present to the new window's start: a stall that no resource
//! causes.)

use std::collections::BTreeMap;

/// Per-cycle capacity over a sliding window of `window` cycles.
#[derive(Clone, Debug)]
pub struct Calendar {
    cap: u32,
    /// Units taken per cycle of the window; allocated by the first reservation (a port
    /// that is never used costs no memory).
    used: Cells,
    /// One bit per cell of `used`: set when the cell is at capacity.
    full_bits: Vec<u64>,
    /// Bit `k` clear: every cell of block `k` (cells `64k .. 64k + 64`) of `used` is zero.
    /// Recycling clears only the marked blocks, so an idle stretch of time costs nothing.
    dirty: Vec<u64>,
    /// Cycles in the window (a power of two).
    window: usize,
    base: u64,
    /// A reservation from this cycle on first recycles old cycles (or, 0 before the first
    /// reservation, allocates the window): one comparison covers both.
    recycle_at: u64,
    /// Every cycle in `[full.0, full.1)` is at capacity: a reservation starting there
    /// skips to `full.1` instead of visiting each cycle (a congested port's backlog).
    full: (u64, u64),
    /// Units taken in cycles past the window's end (cycle → units, at most `cap`), moved
    /// into the window when it reaches them.
    far: BTreeMap<u64, u32>,
}

/// The window's cells, in the narrowest type that holds the capacity.
#[derive(Clone, Debug)]
enum Cells {
    /// Not allocated yet.
    None,
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

/// An unsigned cell type (values never exceed the calendar's capacity, which fits).
trait Cell: Copy + Default {
    fn get(self) -> u32;
    fn of(v: u32) -> Self;
}

macro_rules! cell {
    ($t:ty) => {
        impl Cell for $t {
            #[inline]
            fn get(self) -> u32 {
                self as u32
            }
            #[inline]
            fn of(v: u32) -> $t {
                v as $t
            }
        }
    };
}
cell!(u8);
cell!(u16);
cell!(u32);

/// Where a reservation's units went (see [`take`]).
enum Taken {
    /// All in the window: `next` is the cycle after the last one used, `last_full`
    /// whether that cycle is now at capacity.
    Done { next: u64, last_full: bool },
    /// The window ended at cycle `at` with `left` units still to place.
    Beyond { at: u64, left: u32 },
}

/// Takes `units` from cycle `t` on, in the earliest cycles with room, from the window
/// `used` (indexed by cycle modulo its length) that ends before `window_end`; `full` has a
/// bit set per cell at capacity (runs of them are skipped a word at a time: a congested
/// port's booked stretch is not visited cycle by cycle).
#[inline]
fn take<C: Cell>(
    used: &mut [C],
    full: &mut [u64],
    cap: u32,
    window_end: u64,
    mut t: u64,
    units: u32,
) -> Taken {
    let mask = used.len() - 1;
    let mut left = units;
    loop {
        if t >= window_end {
            return Taken::Beyond { at: t, left };
        }
        let i = t as usize & mask;
        let w = full[i >> 6] >> (i & 63);
        if w & 1 != 0 {
            // (Bits past the word's end shift in as zeros: the run stops there.)
            t += (!w).trailing_zeros() as u64;
            continue;
        }
        let cell = &mut used[i];
        let u = cell.get();
        let take = (cap - u).min(left);
        *cell = C::of(u + take);
        if u + take == cap {
            full[i >> 6] |= 1 << (i & 63);
        }
        left -= take;
        t += 1;
        if left == 0 {
            return Taken::Done {
                next: t,
                last_full: u + take == cap,
            };
        }
    }
}

impl Calendar {
    /// `cap` units per cycle; the window must cover the furthest reservation ahead.
    pub fn new(cap: u32, window: usize) -> Calendar {
        Calendar {
            cap: cap.max(1),
            used: Cells::None,
            full_bits: Vec::new(),
            dirty: Vec::new(),
            window: window.next_power_of_two().max(64),
            base: 0,
            recycle_at: 0,
            full: (0, 0),
            far: BTreeMap::new(),
        }
    }

    /// How far past the present a reservation may start and still be placed as one of the
    /// present ([`Self::reserve`], which moves the window to it): an eighth of the window,
    /// so that the window's start stays at least that far behind the present.
    pub fn ahead_limit(&self) -> u64 {
        self.window as u64 / 8
    }

    fn slot(&self, t: u64) -> usize {
        (t as usize) & (self.window - 1)
    }

    /// Allocates the window at the first reservation and recycles the cycles that `now`
    /// leaves behind.
    #[cold]
    #[inline(never)]
    fn advance(&mut self, now: u64) {
        if matches!(self.used, Cells::None) {
            self.allocate();
        }
        let len = self.window as u64;
        self.recycle_at = self.base + len / 2;
        if now < self.recycle_at {
            return;
        }
        let new_base = now - len / 4;
        // The recycled cycles are the whole window, or one run of cells, or two where it
        // wraps.
        let (a, b) = (self.slot(self.base), self.slot(new_base));
        if new_base - self.base >= len {
            self.clear(0, self.window);
        } else if a < b {
            self.clear(a, b);
        } else {
            self.clear(a, self.window);
            self.clear(0, b);
        }
        self.base = new_base;
        self.recycle_at = new_base + len / 2;
        // Recycled cycles lie before `base` or beyond the old window's end (after `full`).
        self.full.0 = self.full.0.max(new_base);
        if !self.far.is_empty() {
            self.take_in_far();
        }
    }

    /// Moves the overflow's cycles that the window now covers into it (their cells were
    /// just recycled, so they hold nothing else) and drops those before its start.
    fn take_in_far(&mut self) {
        let end = self.base + self.window as u64;
        while let Some((&c, &u)) = self.far.first_key_value() {
            if c >= end {
                break;
            }
            self.far.pop_first();
            if c < self.base {
                continue;
            }
            let i = self.slot(c);
            match &mut self.used {
                Cells::None => unreachable!("allocated before the window moves"),
                Cells::U8(v) => v[i] = u as u8,
                Cells::U16(v) => v[i] = u as u16,
                Cells::U32(v) => v[i] = u,
            }
            if u == self.cap {
                self.full_bits[i >> 6] |= 1 << (i & 63);
            }
            self.mark(c, c + 1);
        }
    }

    /// Takes `units` from cycle `t` on (past the window's end) in the overflow; returns the
    /// cycle after the last one used.
    #[cold]
    #[inline(never)]
    fn take_far(&mut self, mut t: u64, units: u32) -> u64 {
        let mut left = units;
        loop {
            let e = self.far.entry(t).or_insert(0);
            let take = (self.cap - *e).min(left);
            *e += take;
            left -= take;
            t += 1;
            if left == 0 {
                return t;
            }
        }
    }

    /// Zeroes cells `[a, b)`, visiting only blocks marked dirty.
    fn clear(&mut self, a: usize, b: usize) {
        if a >= b {
            return;
        }
        let (ka, kb) = (a / 64, (b - 1) / 64);
        for wi in ka / 64..=kb / 64 {
            let lo = if wi == ka / 64 { ka % 64 } else { 0 };
            let hi = if wi == kb / 64 { kb % 64 } else { 63 };
            let mut m = self.dirty[wi] & (u64::MAX << lo) & (u64::MAX >> (63 - hi));
            while m != 0 {
                let k = wi * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                let (s, e) = (a.max(k * 64), b.min(k * 64 + 64));
                match &mut self.used {
                    Cells::None => {}
                    Cells::U8(v) => v[s..e].fill(0),
                    Cells::U16(v) => v[s..e].fill(0),
                    Cells::U32(v) => v[s..e].fill(0),
                }
                // (Cells `s..e` lie in one 64-cell block: one word of `full_bits`.)
                let lo = s % 64;
                let n = e - s;
                let m = if n == 64 {
                    u64::MAX
                } else {
                    ((1u64 << n) - 1) << lo
                };
                self.full_bits[k] &= !m;
                if e - s == 64 {
                    self.dirty[wi] &= !(1 << (k % 64));
                }
            }
        }
    }

    /// Marks the blocks of cycles `[from, to)` dirty (blocks are aligned to 64 cycles, as
    /// the window is a multiple of 64).
    #[inline]
    fn mark(&mut self, from: u64, to: u64) {
        if from < to && from >> 6 == (to - 1) >> 6 {
            // One block (the usual case).
            let k = self.slot(from) / 64;
            self.dirty[k / 64] |= 1 << (k % 64);
            return;
        }
        let mut c = from;
        while c < to {
            let k = self.slot(c) / 64;
            self.dirty[k / 64] |= 1 << (k % 64);
            c = (c | 63) + 1;
        }
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
    #[inline(always)]
    pub fn reserve(&mut self, now: u64, units: u32) -> u64 {
        if now >= self.recycle_at {
            self.advance(now);
        }
        self.place(now, units)
    }

    /// [`Self::reserve`] of a reservation computed ahead of time: it starts at `at`, the
    /// present being `present`. Up to [`Self::ahead_limit`] past the present it is an
    /// ordinary reservation at `at`; further ahead the window moves only to `present`, and
    /// what lies past its end waits in the overflow.
    pub fn reserve_ahead(&mut self, present: u64, at: u64, units: u32) -> u64 {
        if at <= present.saturating_add(self.ahead_limit()) {
            return self.reserve(at, units);
        }
        if present >= self.recycle_at {
            self.advance(present);
        }
        self.place(at, units)
    }

    /// Places `units` from cycle `now` on in the window as it stands (and the overflow past
    /// its end); returns the cycle after the last one used.
    #[inline(always)]
    fn place(&mut self, now: u64, units: u32) -> u64 {
        let mut t = now.max(self.base);
        if self.full.0 <= t && t < self.full.1 {
            t = self.full.1;
        }
        let start = t;
        let (cap, window_end, units) = (self.cap, self.base + self.window as u64, units.max(1));
        let fb = &mut self.full_bits;
        let taken = match &mut self.used {
            Cells::U8(v) => take(v, fb, cap, window_end, t, units),
            Cells::U16(v) => take(v, fb, cap, window_end, t, units),
            Cells::U32(v) => take(v, fb, cap, window_end, t, units),
            Cells::None => unreachable!("allocated above"),
        };
        match taken {
            Taken::Done { next, last_full } => {
                self.mark(start, next);
                // Every cycle visited before the last one was filled up.
                self.note_full(start, if last_full { next } else { next - 1 });
                next
            }
            Taken::Beyond { at, left } => {
                // Past the window's end: the rest in the overflow.
                self.mark(start, at);
                self.take_far(at, left)
            }
        }
    }

    /// Allocates the window (at the first reservation), one cell a cycle in the narrowest
    /// type that holds the capacity.
    fn allocate(&mut self) {
        let n = self.window;
        self.used = if self.cap <= u8::MAX as u32 {
            Cells::U8(vec![0; n])
        } else if self.cap <= u16::MAX as u32 {
            Cells::U16(vec![0; n])
        } else {
            Cells::U32(vec![0; n])
        };
        self.dirty = vec![0; n.div_ceil(64 * 64)];
        self.full_bits = vec![0; n.div_ceil(64)];
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

    /// A reply computed far ahead of the present (an atomic unit's backlog) takes its
    /// cycles there, and reservations of the present still start at the present: the
    /// window is not dragged to the far one (before, the present's reservations were held
    /// until a quarter window before it).
    #[test]
    fn a_far_reservation_does_not_move_the_present() {
        let mut c = Calendar::new(1, 4096);
        assert_eq!(c.reserve(100, 1), 101);
        assert_eq!(c.reserve_ahead(100, 50_000, 4), 50_004);
        assert_eq!(c.reserve_ahead(101, 101, 1), 102);
        assert_eq!(c.reserve(102, 1), 103);
        // The far cycles stay taken, once the window reaches them too.
        for now in (200..50_000).step_by(1000) {
            c.reserve(now, 1);
        }
        assert_eq!(c.reserve(50_000, 1), 50_005);
        // Near the present (within `ahead_limit`) a reservation ahead is an ordinary one.
        let mut d = Calendar::new(1, 4096);
        assert_eq!(
            d.reserve_ahead(100, 100 + d.ahead_limit(), 1),
            101 + d.ahead_limit()
        );
    }

    /// Drives a calendar of `cap` units over `window` cycles with `steps` reservations
    /// drawn by `draw(x, &mut now)` from a seeded stream (`(present, at, units)`) and
    /// checks each against [`plain`].
    fn against_plain(
        cap: u32,
        window: usize,
        seed: u64,
        steps: usize,
        draw: impl Fn(u64, &mut u64) -> (u64, u64, u32),
    ) {
        let mut c = Calendar::new(cap, window);
        let mut reference = std::collections::HashMap::new();
        let mut rng = crate::testing::XorShift(seed);
        let mut now = 0u64;
        for _ in 0..steps {
            let (present, at, units) = draw(rng.next_u64(), &mut now);
            assert_eq!(
                c.reserve_ahead(present, at, units),
                plain(&mut reference, cap, at, units)
            );
        }
    }

    /// A backlog longer than the window (a FIFO server, e.g. an atomic unit, loaded past
    /// its window) serialises exactly: what does not fit waits in the overflow, in order.
    #[test]
    fn a_backlog_past_the_window_serialises_exactly() {
        for cap in [1u32, 3, 32] {
            against_plain(cap, 256, 0x1234_5678_9abc_def1, 5_000, |x, now| {
                *now += x % 3;
                // Four cycles' worth a call on average: the backlog outgrows the window.
                let units = 1 + ((x >> 8) % (8 * cap as u64)) as u32;
                (*now, *now, units)
            });
        }
    }

    /// Far reservations mixed with the present's, against keeping every cycle forever.
    #[test]
    fn reservations_ahead_match_a_plain_scan() {
        for cap in [1u32, 2, 40] {
            against_plain(cap, 512, 0x0dd_ba11_cafe_f00d, 20_000, |x, now| {
                *now += x % 4;
                let at = if x.is_multiple_of(5) {
                    *now + (x >> 12) % 20_000
                } else {
                    *now
                };
                (*now, at, 1 + ((x >> 40) % cap as u64) as u32)
            });
        }
    }

    /// The reference: `units` taken from `now` on, in the earliest cycles with room, each
    /// cycle's use kept forever (no window); returns the cycle after the last one used.
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

    /// The skip over full cycles gives the same answers as visiting every cycle.
    #[test]
    fn skipping_full_cycles_matches_a_plain_scan() {
        for cap in [1u32, 3, 40, 255, 256, 300, 70_000] {
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

    /// Sparse traffic with idle stretches of every length (recycling clears only the
    /// blocks that were used; a stale cell would show up as an early port being busy).
    #[test]
    fn recycling_after_idle_stretches_matches_a_plain_scan() {
        for (cap, window) in [
            (1u32, 64usize),
            (2, 256),
            (32, 16384),
            (1000, 256),
            (1 << 20, 64),
        ] {
            let mut c = Calendar::new(cap, window);
            let mut reference = std::collections::HashMap::<u64, u32>::new();
            let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1d);
            let mut now = 0u64;
            for _ in 0..20_000 {
                let x = rng.next_u64();
                now += match x % 8 {
                    0 => (x >> 3) % (3 * window as u64),
                    1 => (x >> 3) % (window as u64 / 2),
                    _ => x % 3,
                };
                let at = now + (x >> 12) % 16;
                let units = 1 + ((x >> 24) % (2 * cap as u64)) as u32;
                let want = plain(&mut reference, cap, at, units);
                assert_eq!(c.reserve(at, units), want, "window {window}, at {at}");
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

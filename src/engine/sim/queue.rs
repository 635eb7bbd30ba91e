//! The global event queue: events pop by (time, sequence number), the sequence being the
//! push order. Near events (within [`SPAN`] cycles of the last popped time, the usual SM
//! wakes and channel decisions) sit in a timing wheel of FIFO buckets, one cycle each;
//! the rest (far timers, and any event pushed for a time already passed) in a heap. Popping
//! takes the smaller head of the two, so the order is exactly that of one heap of
//! (time, sequence) — at a fraction of the cost per event.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::engine::ring::RingMask;

type Occ = RingMask<16>;
/// Cycles the wheel covers.
const SPAN: u64 = Occ::SLOTS;

pub(super) struct EventQueue<E> {
    /// Per slot (time mod SPAN): (sequence, event), all of one time, in push order.
    slots: Vec<VecDeque<(u64, E)>>,
    /// Bit `k`: slot `k` is non-empty.
    occ: Occ,
    /// The earliest time with a non-empty slot (`u64::MAX`: none).
    near: u64,
    near_len: usize,
    far: BinaryHeap<Reverse<(u64, u64, E)>>,
    /// The last popped time: slots hold times in `base .. base + SPAN`.
    base: u64,
    seq: u64,
}

impl<E: Ord + Copy> EventQueue<E> {
    pub(super) fn new() -> Self {
        EventQueue {
            slots: (0..SPAN).map(|_| VecDeque::new()).collect(),
            occ: Occ::new(),
            near: u64::MAX,
            near_len: 0,
            far: BinaryHeap::new(),
            base: 0,
            seq: 0,
        }
    }

    #[inline]
    pub(super) fn push(&mut self, t: u64, ev: E) {
        self.seq += 1;
        if t < self.base || t - self.base >= SPAN {
            self.far.push(Reverse((t, self.seq, ev)));
            return;
        }
        let k = Occ::slot(t);
        self.slots[k].push_back((self.seq, ev));
        self.occ.set(k);
        self.near = self.near.min(t);
        self.near_len += 1;
    }

    /// (time, sequence) of the next event.
    #[inline]
    fn head(&self) -> Option<(u64, u64, bool)> {
        let near = (self.near != u64::MAX).then(|| {
            let s = self.slots[Occ::slot(self.near)].front();
            (self.near, s.map_or(u64::MAX, |e| e.0), true)
        });
        let far = self.far.peek().map(|r| (r.0 .0, r.0 .1, false));
        match (near, far) {
            (Some(a), Some(b)) => Some(if (a.0, a.1) < (b.0, b.1) { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Time of the next event.
    #[inline]
    pub(super) fn peek_time(&self) -> Option<u64> {
        self.head().map(|h| h.0)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.near_len == 0 && self.far.is_empty()
    }

    pub(super) fn pop(&mut self) -> Option<(u64, E)> {
        self.pop_until(u64::MAX)
    }

    /// The next event, if its time is at most `limit` (the engine's probes due at
    /// `limit` come after the events of that time).
    #[inline(always)]
    pub(super) fn pop_until(&mut self, limit: u64) -> Option<(u64, E)> {
        let (t, _, from_wheel) = self.head().filter(|h| h.0 <= limit)?;
        let ev = if from_wheel {
            let k = Occ::slot(t);
            let (_, ev) = self.slots[k].pop_front()?;
            self.near_len -= 1;
            if self.slots[k].is_empty() {
                self.occ.clear(k);
                self.near = self.occ.first_from(t);
            }
            ev
        } else {
            self.far.pop()?.0 .2
        };
        self.base = self.base.max(t);
        Some((t, ev))
    }
}

impl<E: Ord + Copy> EventQueue<E> {
    /// The earliest time of a pending event that `f` selects (a pass over the queue).
    pub(super) fn earliest(&self, f: impl Fn(&E) -> bool) -> Option<u64> {
        // Slot `k` holds the one time in `base .. base + SPAN` that maps to it.
        let lo = Occ::slot(self.base);
        let near = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, q)| q.iter().any(|(_, e)| f(e)))
            .map(|(k, _)| self.base + ((k + SPAN as usize - lo) % SPAN as usize) as u64);
        let far = self.far.iter().filter(|r| f(&r.0 .2)).map(|r| r.0 .0);
        near.chain(far).min()
    }

    /// Every pending event, in pop order, each moved to the time `f` gives it (which must
    /// not be before `now`); the queue restarts at `now`. Events keep their relative order
    /// where their new times are equal. For fast-forward jumps, which are rare: it costs a
    /// pass over the queue.
    pub(super) fn retime(&mut self, now: u64, mut f: impl FnMut(u64, E) -> u64) {
        let mut all = Vec::with_capacity(self.near_len + self.far.len());
        while let Some((t, e)) = self.pop() {
            all.push((f(t, e).max(now), e));
        }
        self.base = now;
        self.near = u64::MAX;
        for (t, e) in all {
            self.push(t, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same pops as a plain heap of (time, sequence, event), late pushes included.
    #[test]
    fn pops_like_a_heap() {
        let mut q = EventQueue::new();
        let mut h: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut rng = crate::testing::XorShift(0x1234_5678_9abc_def1u64);
        let mut next = || rng.next_u64();
        let mut now = 0u64;
        for i in 0..50_000u32 {
            if next() % 3 != 0 {
                let t = match next() % 10 {
                    0 => now + next() % 10_000,
                    1 => now.saturating_sub(next() % 50),
                    _ => now + next() % 200,
                };
                seq += 1;
                q.push(t, i);
                h.push(Reverse((t, seq, i)));
            } else {
                assert_eq!(q.peek_time(), h.peek().map(|r| r.0 .0));
                let got = q.pop();
                let want = h.pop().map(|r| (r.0 .0, r.0 .2));
                assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t;
                }
            }
            assert_eq!(q.is_empty(), h.is_empty());
        }
        while let Some(r) = h.pop() {
            assert_eq!(q.pop(), Some((r.0 .0, r.0 .2)));
        }
        assert!(q.pop().is_none());
    }
}

//! Occupancy bits of a timing wheel: a ring of `64 · W` one-cycle slots, slot `k` holding
//! the times `≡ k (mod 64 · W)`. Shared by the schedulers' ready-time wheels
//! (`sm::wheel`) and the global event queue (`sim::queue`).

/// Which slots of a ring of `64 · W` slots are non-empty.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingMask<const W: usize>([u64; W]);

impl<const W: usize> RingMask<W> {
    /// Slots in the ring (a power of two when `W` is).
    pub(crate) const SLOTS: u64 = 64 * W as u64;

    pub(crate) fn new() -> Self {
        RingMask([0; W])
    }

    /// The slot of time `t`.
    #[inline]
    pub(crate) fn slot(t: u64) -> usize {
        (t % Self::SLOTS) as usize
    }

    #[inline]
    pub(crate) fn set(&mut self, k: usize) {
        self.0[k / 64] |= 1 << (k % 64);
    }

    #[inline]
    pub(crate) fn clear(&mut self, k: usize) {
        self.0[k / 64] &= !(1 << (k % 64));
    }

    /// The earliest time at or after `from` whose slot is set, given that every set slot
    /// holds times in `from .. from + SLOTS`; `u64::MAX` when none is set.
    #[inline]
    pub(crate) fn first_from(&self, from: u64) -> u64 {
        let start = Self::slot(from);
        // Slots from `start` to the end, then from 0 (the wrapped part).
        match self.first_at(start).or_else(|| self.first_at(0)) {
            Some(k) => from + ((k as u64 + Self::SLOTS - start as u64) % Self::SLOTS),
            None => u64::MAX,
        }
    }

    /// The first set slot at or after `from` (no wrap).
    #[inline]
    fn first_at(&self, from: usize) -> Option<usize> {
        let mut wi = from / 64;
        let mut m = *self.0.get(wi)? & (u64::MAX << (from % 64));
        loop {
            if m != 0 {
                return Some(wi * 64 + m.trailing_zeros() as usize);
            }
            wi += 1;
            m = *self.0.get(wi)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_from_wraps_around_the_ring() {
        let mut r = RingMask::<2>::new();
        assert_eq!(r.first_from(5), u64::MAX);
        r.set(RingMask::<2>::slot(1000 + 3));
        r.set(RingMask::<2>::slot(1000 + 120));
        assert_eq!(r.first_from(1000), 1003);
        assert_eq!(r.first_from(1004), 1120);
        r.clear(RingMask::<2>::slot(1003));
        r.clear(RingMask::<2>::slot(1120));
        r.set(RingMask::<2>::slot(1127));
        assert_eq!(r.first_from(1010), 1127);
    }
}

//! A warp scheduler's calendar of warps whose operands become ready later: a timing wheel
//! of [`SPAN`] one-cycle slots, each a bitmask of scheduler-local warp indices, and a heap
//! for the rare times beyond the wheel. Pushing and draining cost a few bit operations
//! instead of a heap's sift.
//!
//! Entries are never withdrawn: a warp re-synced before its time leaves its old entry
//! behind, and whoever drains checks each entry against the warp's current state. Stale
//! entries still count for [`Wheel::peek`], which returns the earliest (time, lowest local
//! index) over all entries — exactly what a heap of (time, warp) holding them would.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::ring::RingMask;

type Occ = RingMask<1>;
/// Slots of the wheel (cycles it covers ahead of its base).
pub const SPAN: u64 = Occ::SLOTS;

/// The wheel of a scheduler with up to 64 warps (one bitmask word per slot: 512 bytes, eight
/// cache lines, of which a visit of the SM touches the one or two its near times fall in) or
/// up to 256 (four words). 64 slots cover the ready times of arithmetic (the longest unit
/// latency of a bundled model is 200 cycles, which goes to the heap); a wider wheel of 256
/// slots spread each scheduler's pushes over 32 lines and missed the host's caches more
/// (BENCHMARKS.md, thirty-seventh session).
pub enum Wheel {
    Narrow(Ring<1>),
    Wide(Ring<4>),
}

impl Wheel {
    /// A wheel for local warp indices below `locals` (at most 256).
    pub fn new(locals: usize) -> Self {
        if locals <= 64 {
            Wheel::Narrow(Ring::new())
        } else {
            Wheel::Wide(Ring::new())
        }
    }

    /// Adds local warp `l` at `time` if that is after the last drained time (its base);
    /// returns whether it did (if not, the warp is ready already).
    #[inline(always)]
    pub fn push_later(&mut self, time: u64, l: u16) -> bool {
        match self {
            Wheel::Narrow(r) => r.push_later(time, l),
            Wheel::Wide(r) => r.push_later(time, l),
        }
    }

    /// The earliest entry: (time, lowest local index at that time).
    #[inline]
    pub fn peek(&self) -> Option<(u64, u16)> {
        match self {
            Wheel::Narrow(r) => r.peek(),
            Wheel::Wide(r) => r.peek(),
        }
    }

    /// Removes every entry at or before `t`, calling `f(time, local)` for each, and moves
    /// the base to `t` (if later).
    #[inline]
    pub fn drain(&mut self, t: u64, f: impl FnMut(u64, u16)) {
        match self {
            Wheel::Narrow(r) => r.drain(t, f),
            Wheel::Wide(r) => r.drain(t, f),
        }
    }
}

/// Bytes of a wheel's slots at its widest (four words a slot), for memory estimates.
pub const RING_BYTES: u64 = SPAN * 4 * 8;

/// A wheel whose slots hold `W` bitmask words (local indices below `64 * W`).
pub struct Ring<const W: usize> {
    /// Per slot (time mod SPAN): bitmask of local warp indices.
    slots: Box<[[u64; W]; SPAN as usize]>,
    /// Bit `k`: slot `k` is non-empty.
    occ: Occ,
    /// Entries at `base + SPAN` or later when pushed: (time, local index).
    far: BinaryHeap<Reverse<(u64, u16)>>,
    /// Every entry's time is after this (the last drained time).
    base: u64,
    /// The earliest time of an entry in the slots (`u64::MAX`: none).
    near: u64,
}

impl<const W: usize> Ring<W> {
    fn new() -> Self {
        Ring {
            slots: Box::new([[0u64; W]; SPAN as usize]),
            occ: Occ::new(),
            far: BinaryHeap::new(),
            base: 0,
            near: u64::MAX,
        }
    }

    #[inline(always)]
    fn push_later(&mut self, time: u64, l: u16) -> bool {
        if time <= self.base {
            return false;
        }
        self.push(time, l);
        true
    }

    #[inline(always)]
    fn push(&mut self, time: u64, l: u16) {
        debug_assert!(time > self.base);
        debug_assert!((l as usize) < 64 * W);
        if time - self.base >= SPAN {
            self.far.push(Reverse((time, l)));
            return;
        }
        let k = Occ::slot(time);
        // (`% W`: a no-op below `64 * W` that spares the bounds check.)
        self.slots[k][l as usize / 64 % W] |= 1 << (l % 64);
        self.occ.set(k);
        self.near = self.near.min(time);
    }

    #[inline]
    fn peek(&self) -> Option<(u64, u16)> {
        let near = (self.near != u64::MAX).then(|| {
            let s = &self.slots[Occ::slot(self.near)];
            let w = s.iter().position(|&x| x != 0).unwrap_or(0);
            (self.near, (w * 64 + s[w].trailing_zeros() as usize) as u16)
        });
        let far = self.far.peek().map(|r| r.0);
        match (near, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    #[inline]
    fn drain(&mut self, t: u64, mut f: impl FnMut(u64, u16)) {
        if t <= self.base {
            return;
        }
        while self.near <= t {
            let when = self.near;
            let k = Occ::slot(when);
            let bits = std::mem::replace(&mut self.slots[k], [0; W]);
            self.occ.clear(k);
            for (w, &word) in bits.iter().enumerate() {
                let mut m = word;
                while m != 0 {
                    let b = m.trailing_zeros() as usize;
                    m &= m - 1;
                    f(when, (w * 64 + b) as u16);
                }
            }
            self.near = self.occ.first_from(when + 1);
        }
        while let Some(&Reverse((when, l))) = self.far.peek() {
            if when > t {
                break;
            }
            self.far.pop();
            f(when, l);
        }
        self.base = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wheel against a plain sorted list of its entries: same peeks, same drains.
    #[test]
    fn matches_a_sorted_list() {
        for locals in [256u64, 100, 24] {
            matches_a_sorted_list_with(locals);
        }
    }

    fn matches_a_sorted_list_with(locals: u64) {
        let mut w = Wheel::new(locals as usize);
        let mut list: Vec<(u64, u16)> = Vec::new();
        let mut rng = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15u64);
        let mut next = || rng.next_u64();
        let mut now = 0u64;
        for _ in 0..20_000 {
            match next() % 4 {
                0 | 1 => {
                    // Mostly near times, some beyond the wheel.
                    let ahead = if next() % 8 == 0 {
                        1 + next() % 2000
                    } else {
                        1 + next() % 300
                    };
                    let l = (next() % locals) as u16;
                    assert!(w.push_later(now + ahead, l));
                    list.push((now + ahead, l));
                }
                2 => {
                    let to = now + next() % 400;
                    let mut got = Vec::new();
                    w.drain(to, |t, l| got.push((t, l)));
                    got.sort_unstable();
                    got.dedup();
                    let mut want: Vec<_> = list.iter().copied().filter(|e| e.0 <= to).collect();
                    want.sort_unstable();
                    want.dedup();
                    assert_eq!(got, want);
                    list.retain(|e| e.0 > to);
                    now = now.max(to);
                }
                _ => {
                    assert_eq!(w.peek(), list.iter().copied().min());
                }
            }
        }
    }
}

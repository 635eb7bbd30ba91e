//! How a [`Cache`](super::Cache) finds the way that holds a line and chooses a victim.
//!
//! Both structures keep the replacement order of the plain rule: an empty way first (the
//! lowest-numbered one), else the least recently touched way; never a way with a fetch in
//! flight. Every touch stamps its way with the cache's access clock, and no two touches
//! share a stamp, so "least recently touched" is "smallest stamp".
//!
//! * [`Scan`] (up to [`BIG_WAYS`] ways, the L2 slices and the small L1s): a set is looked
//!   up by comparing an 8-bit fingerprint of each way's tag, eight ways at a time (one
//!   64-bit word, compared bytewise with integer arithmetic), and confirming a matching
//!   way's full tag. Replacement order is a
//!   doubly linked list per set, least recently touched first: a touch moves its way to
//!   the tail, the victim is the first way from the head with no fetch in flight. Empty
//!   ways sit at the head in way order (a way only becomes empty at a flush, which
//!   rebuilds the lists).
//! * [`Big`] (the unified L1 of 256 ways): a hash map from tag to way, free ways per set
//!   and a lazy LRU queue per set (touches append; stale entries are skipped).

use std::collections::VecDeque;

use super::Way;

/// Caches with more ways than this use the [`Big`] index.
pub(super) const BIG_WAYS: u32 = 32;

/// End of a replacement list.
const NIL: u8 = u8::MAX;

/// Fingerprints per word.
const LANES: usize = 8;

/// The low seven bits of every byte of a word.
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

pub(super) enum Index {
    Scan(Scan),
    Big(Big),
}

impl Index {
    pub(super) fn new(sets: usize, assoc: usize) -> Index {
        if assoc > BIG_WAYS as usize {
            Index::Big(Big::new(sets, assoc))
        } else {
            Index::Scan(Scan::new(sets, assoc))
        }
    }
}

/// Fingerprint lookup and linked-list LRU for sets of up to [`BIG_WAYS`] ways.
pub(super) struct Scan {
    assoc: usize,
    /// Fingerprint words per set: `assoc` / [`LANES`], rounded up.
    stride: usize,
    /// Byte `j % 8` of a set's word `j / 8`: [`print`] of way `j`'s tag; 0 for an empty way
    /// and for the bytes past the last way (no tag's fingerprint is 0).
    prints: Vec<u64>,
    /// Per way: the next and the previous way of its set's list (indices within the set;
    /// [`NIL`] at the ends).
    next: Vec<u8>,
    prev: Vec<u8>,
    /// Per set: the first (next victim) and the last (most recently touched) way.
    ends: Vec<(u8, u8)>,
}

/// A tag's 8-bit fingerprint (the top byte of a multiplicative hash), never 0.
#[inline]
fn print(tag: u64) -> u8 {
    ((tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).max(1)
}

/// The high bit of every byte of `word` that equals `fp`, the other bits clear.
#[inline]
fn bytes_equal(word: u64, fp: u8) -> u64 {
    let x = word ^ (fp as u64 * 0x0101_0101_0101_0101);
    // Bit 7 of a byte of `(x & LOW7) + LOW7` is set iff its low seven bits are not all
    // zero (no carry leaves the byte); or-ing `x` adds its own bit 7.
    !(((x & LOW7) + LOW7) | x | LOW7)
}

impl Scan {
    fn new(sets: usize, assoc: usize) -> Scan {
        let mut next = vec![NIL; sets * assoc];
        let mut prev = vec![NIL; sets * assoc];
        for set in 0..sets {
            for j in 0..assoc {
                if j + 1 < assoc {
                    next[set * assoc + j] = (j + 1) as u8;
                }
                if j > 0 {
                    prev[set * assoc + j] = (j - 1) as u8;
                }
            }
        }
        let stride = assoc.div_ceil(LANES);
        Scan {
            assoc,
            stride,
            prints: vec![0; sets * stride],
            next,
            prev,
            ends: vec![(0, (assoc - 1) as u8); sets],
        }
    }

    /// The way of `set` that holds `tag`.
    #[inline(always)]
    pub(super) fn find(&self, ways: &[Way], set: usize, tag: u64) -> Option<usize> {
        let fp = print(tag);
        let row = &self.prints[set * self.stride..(set + 1) * self.stride];
        for (k, &word) in row.iter().enumerate() {
            let mut m = bytes_equal(word, fp);
            while m != 0 {
                let i = set * self.assoc + k * LANES + (m.trailing_zeros() / 8) as usize;
                if ways[i].tag == tag {
                    return Some(i);
                }
                m &= m - 1;
            }
        }
        None
    }

    /// Sets way `j` of `set`'s fingerprint byte.
    #[inline]
    fn set_print(&mut self, set: usize, j: usize, fp: u8) {
        let word = &mut self.prints[set * self.stride + j / LANES];
        let shift = 8 * (j % LANES);
        *word = (*word & !(0xff << shift)) | (fp as u64) << shift;
    }

    pub(super) fn assoc(&self) -> usize {
        self.assoc
    }

    /// Whether way `i` of `set` is the tail of its list (most recently touched).
    #[inline]
    pub(super) fn is_last(&self, set: usize, i: usize) -> bool {
        self.ends[set].1 as usize == i - set * self.assoc
    }

    /// Moves way `i` of `set` to the tail of its list (most recently touched).
    #[inline]
    pub(super) fn touch(&mut self, set: usize, i: usize) {
        let base = set * self.assoc;
        let j = (i - base) as u8;
        let (mut head, tail) = self.ends[set];
        if tail == j {
            return;
        }
        // `j` is not the tail, so it has a next way, and the tail is another way.
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            head = n;
        } else {
            self.next[base + p as usize] = n;
        }
        self.prev[base + n as usize] = p;
        self.prev[i] = tail;
        self.next[i] = NIL;
        self.next[base + tail as usize] = j;
        self.ends[set] = (head, j);
    }

    /// The first way of `set`'s list with no fetch in flight.
    #[inline]
    pub(super) fn victim(&self, ways: &[Way], set: usize) -> Option<usize> {
        let base = set * self.assoc;
        let mut j = self.ends[set].0;
        while j != NIL {
            let i = base + j as usize;
            if ways[i].pend == 0 {
                return Some(i);
            }
            j = self.next[i];
        }
        None
    }

    /// Way `i` of `set` now holds `tag`.
    #[inline]
    pub(super) fn install(&mut self, set: usize, i: usize, tag: u64) {
        self.set_print(set, i - set * self.assoc, print(tag));
    }

    /// After a flush emptied ways: empty ways first in way order, then the rest by stamp.
    fn rebuild(&mut self, ways: &[Way]) {
        let mut order: Vec<(bool, u64, usize)> = Vec::with_capacity(self.assoc);
        for set in 0..self.ends.len() {
            let base = set * self.assoc;
            order.clear();
            for (j, w) in ways[base..base + self.assoc].iter().enumerate() {
                self.set_print(set, j, if w.tag == 0 { 0 } else { print(w.tag) });
                order.push((w.tag != 0, if w.tag == 0 { 0 } else { w.stamp }, j));
            }
            order.sort_unstable();
            for (k, &(_, _, j)) in order.iter().enumerate() {
                self.prev[base + j] = if k > 0 { order[k - 1].2 as u8 } else { NIL };
                self.next[base + j] = order.get(k + 1).map_or(NIL, |o| o.2 as u8);
            }
            self.ends[set] = (order[0].2 as u8, order[self.assoc - 1].2 as u8);
        }
    }
}

/// Tag index, free ways and a lazy LRU queue per set, so lookups and replacement do not
/// scan hundreds of ways.
pub(super) struct Big {
    assoc: usize,
    map: rustc_hash::FxHashMap<u64, u32>,
    free: Vec<Vec<u32>>,
    /// Per set: (way, stamp) in touch order; entries whose stamp is stale are skipped.
    lru: Vec<VecDeque<(u32, u64)>>,
}

impl Big {
    fn new(sets: usize, assoc: usize) -> Big {
        Big {
            assoc,
            // Sized for every way at once: it never grows (rehashing) while the cache fills.
            map: rustc_hash::FxHashMap::with_capacity_and_hasher(sets * assoc, Default::default()),
            free: (0..sets)
                .map(|set| (0..assoc).rev().map(|w| (set * assoc + w) as u32).collect())
                .collect(),
            lru: vec![VecDeque::new(); sets],
        }
    }

    #[inline]
    pub(super) fn find(&self, tag: u64) -> Option<usize> {
        self.map.get(&tag).map(|&i| i as usize)
    }

    /// Way `i` of `set` was touched (its stamp is now `stamp`).
    pub(super) fn touch(&mut self, ways: &[Way], set: usize, i: usize, stamp: u64) {
        let q = &mut self.lru[set];
        q.push_back((i as u32, stamp));
        if q.len() > 8 * self.assoc {
            // Compact: keep the live entries in stamp order.
            let mut live: Vec<(u64, u32)> = (set * self.assoc..(set + 1) * self.assoc)
                .filter(|&j| ways[j].tag != 0)
                .map(|j| (ways[j].stamp, j as u32))
                .collect();
            live.sort_unstable();
            q.clear();
            q.extend(live.into_iter().map(|(st, j)| (j, st)));
        }
    }

    pub(super) fn victim(&mut self, ways: &[Way], set: usize) -> Option<usize> {
        if let Some(f) = self.free[set].pop() {
            return Some(f as usize);
        }
        let mut held = Vec::new();
        let mut found = None;
        while let Some((i, st)) = self.lru[set].pop_front() {
            let w = &ways[i as usize];
            if w.tag == 0 || w.stamp != st {
                continue;
            }
            if w.pend != 0 {
                held.push((i, st));
                continue;
            }
            found = Some(i as usize);
            break;
        }
        for h in held.into_iter().rev() {
            self.lru[set].push_front(h);
        }
        found
    }

    /// Way `i` now holds `tag` instead of `old` (0: it was empty).
    pub(super) fn install(&mut self, i: usize, old: u64, tag: u64) {
        if old != 0 {
            self.map.remove(&old);
        }
        self.map.insert(tag, i as u32);
    }

    fn rebuild(&mut self, ways: &[Way]) {
        self.map.clear();
        for (set, (free, lru)) in self.free.iter_mut().zip(self.lru.iter_mut()).enumerate() {
            free.clear();
            lru.clear();
            for i in (set * self.assoc..(set + 1) * self.assoc).rev() {
                let w = &ways[i];
                if w.tag == 0 {
                    free.push(i as u32);
                } else {
                    self.map.insert(w.tag, i as u32);
                    lru.push_back((i as u32, w.stamp));
                }
            }
        }
    }
}

impl Index {
    /// Panics unless every set's replacement list holds each of its ways once, in stamp
    /// order after the empty ways, with `prev` mirroring `next` (tests).
    #[cfg(test)]
    pub(super) fn check(&self, ways: &[Way]) {
        let Index::Scan(s) = self else { return };
        for (set, &(head, tail)) in s.ends.iter().enumerate() {
            let base = set * s.assoc;
            let (mut j, mut prev, mut seen) = (head, NIL, Vec::new());
            while j != NIL {
                assert_eq!(s.prev[base + j as usize], prev, "set {set}");
                seen.push(j as usize);
                (prev, j) = (j, s.next[base + j as usize]);
            }
            assert_eq!(prev, tail, "set {set}");
            let keys: Vec<u64> = seen
                .iter()
                .map(|&j| ((ways[base + j].tag != 0) as u64) << 63 | ways[base + j].stamp)
                .collect();
            assert!(
                keys.windows(2).all(|k| k[0] < k[1] || k == [0, 0]),
                "set {set}"
            );
            seen.sort_unstable();
            assert_eq!(seen, (0..s.assoc).collect::<Vec<_>>(), "set {set}");
        }
    }

    /// Re-derives the index from `ways` after a flush emptied some of them.
    pub(super) fn rebuild(&mut self, ways: &[Way]) {
        match self {
            Index::Scan(s) => s.rebuild(ways),
            Index::Big(b) => b.rebuild(ways),
        }
    }
}

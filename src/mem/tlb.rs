//! Address-translation structures: a set-associative, LRU translation lookaside buffer
//! ([`Tlb`], used for the per-SM L1 TLBs and the shared L2 TLB) whose entries carry the time
//! their translation becomes valid (a lookup that finds an entry still being walked waits
//! for that walk: concurrent misses to one page merge onto it), and the page-table walkers
//! ([`Walkers`]): a fixed number of walks in flight, a walk that finds every walker busy
//! starting when the earliest one is free. Time is integer core cycles; replacement uses an
//! access counter, so everything is deterministic. The wiring (what a walk reads, where its
//! latency goes) is `engine::memsys::translate`.

/// A key no entry holds (an empty way).
const EMPTY: u64 = u64::MAX;

/// One way of a set.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Translation key (application and virtual page, see [`key`]); [`EMPTY`] if none.
    key: u64,
    /// Core time the translation is valid from (its walk's end).
    ready: u64,
    /// Last use, in lookups and insertions of this TLB (LRU: the smallest is evicted).
    stamp: u64,
}

/// The key of `app`'s virtual page `vpage` (pages below 2^48, applications below 2^15).
#[inline]
pub fn key(app: usize, vpage: u64) -> u64 {
    ((app as u64) << 48) | (vpage & ((1 << 48) - 1))
}

/// A set-associative TLB with LRU replacement.
#[derive(Clone, Debug)]
pub struct Tlb {
    sets: u64,
    ways: usize,
    entries: Vec<Entry>,
    clock: u64,
}

impl Tlb {
    /// `entries` translations in sets of `ways` (`ways == entries`: fully associative).
    /// `entries` must be a positive multiple of `ways`.
    pub fn new(entries: u32, ways: u32) -> Tlb {
        let ways = ways.clamp(1, entries.max(1));
        let sets = (entries.max(1) / ways).max(1);
        Tlb {
            sets: sets as u64,
            ways: ways as usize,
            entries: vec![
                Entry {
                    key: EMPTY,
                    ready: 0,
                    stamp: 0,
                };
                (sets * ways) as usize
            ],
            clock: 0,
        }
    }

    /// Translations it holds at most.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Index of `key`'s set's first way.
    #[inline]
    fn set_start(&self, key: u64) -> usize {
        // The page's low bits select the set; the application's id is folded in so two
        // applications' page 0 do not always collide.
        let h = (key ^ (key >> 48).wrapping_mul(0x9E37_79B9)) % self.sets;
        h as usize * self.ways
    }

    #[inline]
    fn set(&mut self, key: u64) -> &mut [Entry] {
        let s = self.set_start(key);
        let w = self.ways;
        &mut self.entries[s..s + w]
    }

    /// Whether `key` has an entry (its walk may still be in flight); changes nothing.
    pub fn contains(&self, key: u64) -> bool {
        let s = self.set_start(key);
        self.entries[s..s + self.ways].iter().any(|e| e.key == key)
    }

    /// Looks `key` up: the time its translation is valid from when present (now the most
    /// recently used of its set), `None` on a miss (nothing changes).
    #[inline]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        self.clock += 1;
        let c = self.clock;
        let e = self.set(key).iter_mut().find(|e| e.key == key)?;
        e.stamp = c;
        Some(e.ready)
    }

    /// Installs `key` valid from `ready` (replacing its set's least recently used entry,
    /// an empty one first), or updates it when present. Returns the evicted key.
    pub fn insert(&mut self, key: u64, ready: u64) -> Option<u64> {
        self.clock += 1;
        let c = self.clock;
        let set = self.set(key);
        if let Some(e) = set.iter_mut().find(|e| e.key == key) {
            e.ready = ready;
            e.stamp = c;
            return None;
        }
        // Empty ways have stamp 0 (or the stamp of an invalidated entry): prefer them.
        let v = set
            .iter_mut()
            .min_by_key(|e| (e.key != EMPTY, e.stamp))
            .expect("a set has at least one way");
        let old = (v.key != EMPTY).then_some(v.key);
        *v = Entry {
            key,
            ready,
            stamp: c,
        };
        old
    }

    /// Drops `key`'s translation if present; returns whether it was.
    pub fn invalidate(&mut self, key: u64) -> bool {
        match self.set(key).iter_mut().find(|e| e.key == key) {
            Some(e) => {
                e.key = EMPTY;
                true
            }
            None => false,
        }
    }
}

/// The page-table walkers: at most `n` walks in flight.
#[derive(Clone, Debug)]
pub struct Walkers {
    /// Per walker: when its current walk ends.
    free: Vec<u64>,
}

impl Walkers {
    pub fn new(n: u32) -> Walkers {
        Walkers {
            free: vec![0; n.max(1) as usize],
        }
    }

    /// A walk wanting to start at `t`: the walker it gets (the one free earliest; the
    /// lowest index on a tie) and when it starts (`t`, or when that walker is free).
    /// [`Self::finish`] must follow with its end.
    #[inline]
    pub fn begin(&self, t: u64) -> (usize, u64) {
        let (i, &f) = self
            .free
            .iter()
            .enumerate()
            .min_by_key(|&(i, &f)| (f, i))
            .expect("at least one walker");
        (i, t.max(f))
    }

    /// Walker `i`'s walk ends at `end`.
    #[inline]
    pub fn finish(&mut self, i: usize, end: u64) {
        self.free[i] = self.free[i].max(end);
    }

    pub fn count(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used_of_a_set() {
        // Fully associative, 4 entries.
        let mut t = Tlb::new(4, 4);
        for p in 0..4 {
            assert_eq!(t.lookup(key(0, p)), None);
            assert_eq!(t.insert(key(0, p), p), None);
        }
        // Touch 0: 1 is now the least recently used.
        assert_eq!(t.lookup(key(0, 0)), Some(0));
        assert_eq!(t.insert(key(0, 9), 5), Some(key(0, 1)));
        assert_eq!(t.lookup(key(0, 1)), None);
        assert_eq!(t.lookup(key(0, 9)), Some(5));
        assert!(t.invalidate(key(0, 9)));
        assert_eq!(t.lookup(key(0, 9)), None);
        // The invalidated way is reused before any valid one.
        assert_eq!(t.insert(key(0, 7), 0), None);
    }

    #[test]
    fn a_working_set_within_reach_misses_only_cold() {
        for (entries, ways) in [(16, 16), (64, 8), (32, 4)] {
            let mut t = Tlb::new(entries, ways);
            let mut misses = 0;
            for round in 0..10 {
                // Consecutive pages spread evenly over the sets.
                for p in 0..entries as u64 {
                    if t.lookup(key(1, p)).is_none() {
                        misses += 1;
                        t.insert(key(1, p), round);
                    }
                }
            }
            assert_eq!(misses, entries, "{entries} entries, {ways} ways");
            // One more page than the capacity, cycled: LRU misses every time.
            let mut t = Tlb::new(entries, entries);
            let mut misses = 0;
            for _ in 0..3 {
                for p in 0..=entries as u64 {
                    if t.lookup(key(1, p)).is_none() {
                        misses += 1;
                        t.insert(key(1, p), 0);
                    }
                }
            }
            assert_eq!(misses, 3 * (entries + 1));
        }
    }

    #[test]
    fn applications_do_not_share_translations() {
        let mut t = Tlb::new(8, 2);
        t.insert(key(0, 3), 10);
        assert_eq!(t.lookup(key(1, 3)), None);
        assert_eq!(t.lookup(key(0, 3)), Some(10));
    }

    #[test]
    fn never_more_walks_in_flight_than_walkers() {
        // Deterministic pseudo-random starts and durations; check every instant.
        for n in [1u32, 2, 5] {
            let mut w = Walkers::new(n);
            let mut spans = Vec::new();
            let mut x = 12345u64;
            for _ in 0..300 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let t = x % 2000;
                let dur = 1 + (x >> 20) % 200;
                let (i, start) = w.begin(t);
                assert!(start >= t);
                w.finish(i, start + dur);
                spans.push((start, start + dur));
            }
            let end = spans.iter().map(|s| s.1).max().unwrap();
            for c in 0..end {
                let live = spans.iter().filter(|s| s.0 <= c && c < s.1).count();
                assert!(live <= n as usize, "{live} walks at {c} with {n} walkers");
            }
        }
    }
}

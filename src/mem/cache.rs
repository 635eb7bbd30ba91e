//! A sectored, set-associative, LRU cache whose lines remember *when* their data arrives:
//! the state behind the L1D and the L2 slices.
//!
//! Lines are `line_bytes` long and split into sectors; validity and dirtiness are kept per
//! sector. A read miss allocates the line (evicting the LRU way that has no fetch in flight)
//! and marks the missing sectors *pending* — that is the MSHR. A later access to pending
//! sectors merges into it (up to `mshr_merge` requests) and completes when the fill does.
//! A fill time is either known when the miss is sent (the caller computed it arithmetically)
//! or learnt later ([`Cache::resolve`]); fills with a known time retire lazily, so the cache
//! never needs a clock of its own. The caller owns time and passes `now` to every call.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Fill time not known yet (the data is still in DRAM).
pub const UNKNOWN: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetIndex {
    /// `line % sets`.
    Linear,
    /// XOR of the line-address bit fields folded onto the index (spreads power-of-two
    /// strides, like GPGPU-Sim's hashed/IPoly indexing).
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    pub sets: u32,
    pub ways: u32,
    pub line_bytes: u32,
    pub sector_bytes: u32,
    /// Lines that may have a fetch in flight at once.
    pub mshrs: u32,
    /// Requests that may merge into one in-flight fetch.
    pub mshr_merge: u32,
    pub index: SetIndex,
    /// Write-back (L2) keeps dirty sectors; write-through (L1) sends every write down.
    pub write_back: bool,
}

impl CacheConfig {
    pub fn sectors_per_line(&self) -> u32 {
        (self.line_bytes / self.sector_bytes.max(1)).clamp(1, 8)
    }
    pub fn capacity(&self) -> u64 {
        self.sets as u64 * self.ways as u64 * self.line_bytes as u64
    }
}

/// What a read did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// Every requested sector present.
    Hit,
    /// Every requested sector is present or being fetched; the data is there at `ready`
    /// ([`UNKNOWN`]: when fill `tag` is resolved).
    Merged { ready: u64, tag: u32 },
    /// `fetch` sectors must be fetched; the caller reports when with [`Cache::set_fill`] or
    /// [`Cache::resolve`]. `evicted` is a line pushed out with its dirty sectors.
    Miss {
        fetch: u8,
        evicted: Option<(u64, u8)>,
    },
    /// No MSHR, merge slot or evictable way: retry later.
    Stall,
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Absorbed (write-back cache, line present or allocated); `present`: the written
    /// sectors that were already valid (the others are write misses, as Accel-Sim counts
    /// them with lazy fetch on read).
    Absorbed {
        evicted: Option<(u64, u8)>,
        present: u8,
    },
    /// Sent down (write-through).
    Through,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheStats {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    pub merged: u64,
    pub stalls: u64,
    pub evictions: u64,
    pub writebacks: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Way {
    /// Line address + 1; 0 = empty.
    tag: u64,
    valid: u8,
    dirty: u8,
    /// Sectors being fetched.
    pend: u8,
    merged: u16,
    /// When the pending sectors arrive ([`UNKNOWN`] until resolved).
    pend_ready: u64,
    /// Caller's id for an unknown fill.
    pend_tag: u32,
    stamp: u64,
}

pub struct Cache {
    cfg: CacheConfig,
    ways: Vec<Way>,
    /// `ways[i].tag` for every way, kept contiguous: a set's lookup scans 8 bytes a way
    /// instead of whole `Way`s.
    tags: Vec<u64>,
    /// Every way's replacement key, kept contiguous for the victim scan (see
    /// [`Cache::rekey`]): `u64::MAX` while a fetch is in flight (never evicted), else
    /// occupied << 63 | stamp, so the smallest key is an empty way or else the LRU one.
    keys: Vec<u64>,
    clock: u64,
    /// Lines with a fetch in flight.
    outstanding: u32,
    /// Known fill times of in-flight fetches: (time, way index, line tag).
    known: BinaryHeap<Reverse<(u64, u32, u64)>>,
    /// Index for highly associative caches (the unified L1 has 256 ways).
    big: Option<Big>,
    pub stats: CacheStats,
}

/// Tag index, free ways and a lazy LRU queue per set, so lookups and replacement do not
/// scan hundreds of ways.
struct Big {
    map: rustc_hash::FxHashMap<u64, u32>,
    free: Vec<Vec<u32>>,
    /// Per set: (way, stamp) in touch order; entries whose stamp is stale are skipped.
    lru: Vec<std::collections::VecDeque<(u32, u64)>>,
}

const BIG_WAYS: u32 = 32;

impl Cache {
    pub fn new(cfg: CacheConfig) -> Cache {
        let sets = cfg.sets.max(1) as usize;
        let ways = cfg.ways.max(1);
        let big = (ways > BIG_WAYS).then(|| Big {
            map: Default::default(),
            free: (0..sets)
                .map(|set| (0..ways).rev().map(|w| set as u32 * ways + w).collect())
                .collect(),
            lru: vec![std::collections::VecDeque::new(); sets],
        });
        Cache {
            ways: vec![Way::default(); sets * ways as usize],
            tags: vec![0; sets * ways as usize],
            keys: vec![0; sets * ways as usize],
            cfg,
            clock: 0,
            outstanding: 0,
            known: BinaryHeap::new(),
            big,
            stats: CacheStats::default(),
        }
    }

    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    fn set_of(&self, line: u64) -> usize {
        let sets = self.cfg.sets.max(1) as u64;
        let idx = match self.cfg.index {
            SetIndex::Linear => line,
            SetIndex::Xor => {
                let bits = (64 - (sets - 1).leading_zeros()).max(1);
                let mut x = 0;
                let mut l = line;
                while l != 0 {
                    x ^= l & ((1u64 << bits) - 1);
                    l >>= bits;
                }
                x
            }
        };
        if sets.is_power_of_two() {
            (idx & (sets - 1)) as usize
        } else {
            (idx % sets) as usize
        }
    }

    fn find(&self, line: u64) -> (usize, Option<usize>) {
        let w = self.cfg.ways.max(1) as usize;
        let base = self.set_of(line) * w;
        let tag = line + 1;
        if let Some(b) = &self.big {
            return (base, b.map.get(&tag).map(|&i| i as usize));
        }
        let hit = self.tags[base..base + w].iter().position(|&x| x == tag);
        (base, hit.map(|h| base + h))
    }

    /// Retires every fetch whose data has arrived by `now`.
    fn retire(&mut self, now: u64) {
        while let Some(&Reverse((t, i, tag))) = self.known.peek() {
            if t > now {
                break;
            }
            self.known.pop();
            let w = &mut self.ways[i as usize];
            if w.tag == tag && w.pend != 0 && w.pend_ready == t {
                w.valid |= w.pend;
                w.pend = 0;
                w.merged = 0;
                self.outstanding -= 1;
                self.rekey(i as usize);
            }
        }
    }

    /// The first known fill time after `t` (when a stalled access can next succeed), if
    /// any fetch in flight has a known time.
    pub fn next_fill_after(&self, t: u64) -> Option<u64> {
        // (A read at `t` retired every fill up to `t`, so the heap's minimum is later.)
        self.known
            .peek()
            .map(|Reverse((k, _, _))| *k)
            .filter(|&k| k > t)
    }

    /// Lines with a fetch in flight at `now`.
    pub fn mshrs_in_use(&mut self, now: u64) -> u32 {
        self.retire(now);
        self.outstanding
    }

    /// Reads `sectors` (bit i = sector i) of `line` (address / line_bytes) at `now`.
    pub fn read(&mut self, line: u64, sectors: u8, now: u64) -> Read {
        self.retire(now);
        self.stats.accesses += 1;
        self.clock += 1;
        let (base, hit) = self.find(line);
        if let Some(i) = hit {
            let merge_limit = self.cfg.mshr_merge as u16;
            self.touch(i);
            let w = &mut self.ways[i];
            if w.valid & sectors == sectors {
                self.stats.hits += 1;
                return Read::Hit;
            }
            if (w.valid | w.pend) & sectors == sectors {
                if w.merged >= merge_limit {
                    self.stats.stalls += 1;
                    return Read::Stall;
                }
                w.merged += 1;
                self.stats.merged += 1;
                return Read::Merged {
                    ready: w.pend_ready,
                    tag: w.pend_tag,
                };
            }
            // Sectors another fetch of this line is not bringing are fetched beside it, under
            // the line's MSHR; the line's fill time stays that of one of the two fetches.
            let fetch = sectors & !(w.valid | w.pend);
            if w.pend == 0 {
                if self.outstanding >= self.cfg.mshrs {
                    self.stats.stalls += 1;
                    return Read::Stall;
                }
                self.outstanding += 1;
                let w = &mut self.ways[i];
                w.pend_ready = UNKNOWN;
                w.merged = 0;
            }
            self.ways[i].pend |= fetch;
            self.rekey(i);
            self.stats.misses += 1;
            return Read::Miss {
                fetch,
                evicted: None,
            };
        }
        if self.outstanding >= self.cfg.mshrs {
            self.stats.stalls += 1;
            return Read::Stall;
        }
        let Some(v) = self.victim(base) else {
            self.stats.stalls += 1;
            return Read::Stall;
        };
        let evicted = self.evict(v);
        self.install(
            v,
            Way {
                tag: line + 1,
                pend: sectors,
                pend_ready: UNKNOWN,
                stamp: self.clock,
                ..Way::default()
            },
        );
        self.outstanding += 1;
        self.stats.misses += 1;
        Read::Miss {
            fetch: sectors,
            evicted,
        }
    }

    /// Marks way `i` most recently used.
    fn touch(&mut self, i: usize) {
        self.ways[i].stamp = self.clock;
        self.rekey(i);
        if let Some(b) = &mut self.big {
            let ways = self.cfg.ways.max(1) as usize;
            let set = i / ways;
            let q = &mut b.lru[set];
            q.push_back((i as u32, self.clock));
            if q.len() > 8 * ways {
                // Compact: keep the live entries in stamp order.
                let mut live: Vec<(u64, u32)> = (set * ways..(set + 1) * ways)
                    .filter(|&j| self.ways[j].tag != 0)
                    .map(|j| (self.ways[j].stamp, j as u32))
                    .collect();
                live.sort_unstable();
                q.clear();
                q.extend(live.into_iter().map(|(st, j)| (j, st)));
            }
        }
    }

    /// Installs `line` in victim way `v` (already evicted) and indexes it.
    fn install(&mut self, v: usize, way: Way) {
        let old = self.ways[v].tag;
        if let Some(b) = &mut self.big {
            if old != 0 {
                b.map.remove(&old);
            }
            b.map.insert(way.tag, v as u32);
        }
        self.tags[v] = way.tag;
        self.ways[v] = way;
        self.touch(v);
    }

    fn victim(&mut self, base: usize) -> Option<usize> {
        let ways = self.cfg.ways.max(1) as usize;
        if let Some(b) = &mut self.big {
            let set = base / ways;
            if let Some(f) = b.free[set].pop() {
                return Some(f as usize);
            }
            let mut held = Vec::new();
            let mut found = None;
            while let Some((i, st)) = b.lru[set].pop_front() {
                let w = &self.ways[i as usize];
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
                b.lru[set].push_front(h);
            }
            return found;
        }
        // An empty way first, else the least recently used; never one with a fetch in
        // flight (its key is the maximum, which no other key reaches: stamps stay below
        // 2^63 - 1); the first way with the smallest key wins.
        let mut best = None;
        let mut best_key = u64::MAX;
        for (i, &key) in self.keys[base..base + ways].iter().enumerate() {
            if key < best_key {
                best_key = key;
                best = Some(base + i);
            }
        }
        best
    }

    /// Refreshes way `i`'s replacement key from its state (after any change of its tag,
    /// stamp or pending sectors).
    #[inline]
    fn rekey(&mut self, i: usize) {
        let w = &self.ways[i];
        self.keys[i] = if w.pend != 0 {
            u64::MAX
        } else {
            ((w.tag != 0) as u64) << 63 | w.stamp
        };
    }

    fn evict(&mut self, v: usize) -> Option<(u64, u8)> {
        let old = self.ways[v];
        if old.tag == 0 {
            return None;
        }
        self.stats.evictions += 1;
        if old.dirty != 0 {
            self.stats.writebacks += 1;
        }
        Some((old.tag - 1, old.dirty))
    }

    /// Writes `sectors` of `line` at `now`. Write-through caches update a present line and
    /// send the write down; write-back caches allocate without fetching (the written sectors
    /// become valid and dirty).
    pub fn write(&mut self, line: u64, sectors: u8, now: u64) -> Write {
        self.retire(now);
        self.stats.accesses += 1;
        self.clock += 1;
        let (base, hit) = self.find(line);
        if !self.cfg.write_back {
            if let Some(i) = hit {
                self.ways[i].valid |= sectors;
                self.touch(i);
            }
            self.stats.misses += 1;
            return Write::Through;
        }
        if let Some(i) = hit {
            self.touch(i);
            let w = &mut self.ways[i];
            let present = sectors & w.valid;
            w.valid |= sectors;
            w.dirty |= sectors;
            self.stats.hits += 1;
            return Write::Absorbed {
                evicted: None,
                present,
            };
        }
        self.stats.misses += 1;
        let evicted = match self.victim(base) {
            Some(v) => {
                let e = self.evict(v);
                self.install(
                    v,
                    Way {
                        tag: line + 1,
                        valid: sectors,
                        dirty: sectors,
                        stamp: self.clock,
                        ..Way::default()
                    },
                );
                e
            }
            // Every way is waiting for a fill: the write goes around the cache.
            None => Some((line, sectors)),
        };
        Write::Absorbed {
            evicted,
            present: 0,
        }
    }

    /// Records when the fetch started by the last `Miss` of `line` completes (`ready`), or
    /// ([`UNKNOWN`]) the caller's `tag` to resolve it later.
    pub fn set_fill(&mut self, line: u64, ready: u64, tag: u32) {
        let (_, hit) = self.find(line);
        if let Some(i) = hit {
            let w = &mut self.ways[i];
            if w.pend != 0 && w.pend_ready == UNKNOWN {
                w.pend_ready = ready;
                w.pend_tag = tag;
                if ready != UNKNOWN {
                    self.known.push(Reverse((ready, i as u32, w.tag)));
                }
            }
        }
    }

    /// The fetch of `line` registered under `tag` completes at `ready`.
    pub fn resolve(&mut self, line: u64, tag: u32, ready: u64) {
        self.set_fill_if(line, tag, ready);
    }

    fn set_fill_if(&mut self, line: u64, tag: u32, ready: u64) {
        let (_, hit) = self.find(line);
        if let Some(i) = hit {
            let w = &mut self.ways[i];
            if w.pend != 0 && w.pend_ready == UNKNOWN && w.pend_tag == tag {
                w.pend_ready = ready;
                self.known.push(Reverse((ready, i as u32, w.tag)));
            }
        }
    }

    /// Drops every line at `now` (the L1 is flushed at kernel end); dirty sectors are
    /// returned. Lines whose fetch is still in flight stay (their fill is awaited).
    pub fn flush(&mut self, now: u64) -> Vec<(u64, u8)> {
        self.retire(now);
        let mut wb = Vec::new();
        for ((w, tag), key) in self.ways.iter_mut().zip(&mut self.tags).zip(&mut self.keys) {
            if w.tag != 0 && w.dirty != 0 {
                wb.push((w.tag - 1, w.dirty));
                self.stats.writebacks += 1;
            }
            if w.pend == 0 {
                *w = Way::default();
                *tag = 0;
                *key = 0;
            } else {
                w.valid = 0;
                w.dirty = 0;
            }
        }
        if let Some(b) = &mut self.big {
            let ways = self.cfg.ways.max(1) as usize;
            b.map.clear();
            for (set, (free, lru)) in b.free.iter_mut().zip(b.lru.iter_mut()).enumerate() {
                free.clear();
                lru.clear();
                for i in (set * ways..(set + 1) * ways).rev() {
                    let w = &self.ways[i];
                    if w.tag == 0 {
                        free.push(i as u32);
                    } else {
                        b.map.insert(w.tag, i as u32);
                        lru.push_back((i as u32, w.stamp));
                    }
                }
            }
        }
        wb
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(ways: u32, write_back: bool) -> CacheConfig {
        CacheConfig {
            sets: 4,
            ways,
            line_bytes: 128,
            sector_bytes: 32,
            mshrs: 4,
            mshr_merge: 2,
            index: SetIndex::Linear,
            write_back,
        }
    }

    #[test]
    fn miss_then_merge_then_hit_after_fill_time() {
        let mut c = Cache::new(small(2, false));
        assert!(matches!(
            c.read(7, 0b1111, 0),
            Read::Miss { fetch: 0b1111, .. }
        ));
        c.set_fill(7, 100, 0);
        assert_eq!(c.read(7, 0b0011, 10), Read::Merged { ready: 100, tag: 0 });
        assert_eq!(c.read(7, 0b0001, 99), Read::Merged { ready: 100, tag: 0 });
        // Merge limit 2 reached.
        assert_eq!(c.read(7, 0b0001, 99), Read::Stall);
        assert_eq!(c.read(7, 0b0001, 100), Read::Hit);
        assert_eq!(c.mshrs_in_use(100), 0);
    }

    #[test]
    fn unknown_fill_is_resolved_later() {
        let mut c = Cache::new(small(2, false));
        assert!(matches!(c.read(3, 1, 0), Read::Miss { .. }));
        c.set_fill(3, UNKNOWN, 42);
        assert_eq!(
            c.read(3, 1, 5),
            Read::Merged {
                ready: UNKNOWN,
                tag: 42
            }
        );
        c.resolve(3, 42, 300);
        assert_eq!(
            c.read(3, 1, 299),
            Read::Merged {
                ready: 300,
                tag: 42
            }
        );
        assert_eq!(c.read(3, 1, 300), Read::Hit);
    }

    #[test]
    fn mshr_limit_stalls() {
        let mut c = Cache::new(small(4, false));
        for l in 0..4 {
            assert!(matches!(c.read(l, 1, 0), Read::Miss { .. }));
            c.set_fill(l, 50, 0);
        }
        assert_eq!(c.read(9, 1, 10), Read::Stall);
        assert!(matches!(c.read(9, 1, 50), Read::Miss { .. }));
    }

    #[test]
    fn other_sectors_of_a_line_in_flight_are_fetched_beside_it() {
        // One MSHR: the line's first fetch holds it; a request for other sectors of the same
        // line fetches only those, under the same MSHR, instead of stalling.
        let mut c = Cache::new(CacheConfig {
            mshrs: 1,
            ..small(2, false)
        });
        assert!(matches!(
            c.read(5, 0b0011, 0),
            Read::Miss { fetch: 0b0011, .. }
        ));
        c.set_fill(5, UNKNOWN, 1);
        assert_eq!(
            c.read(5, 0b0110, 3),
            Read::Miss {
                fetch: 0b0100,
                evicted: None
            }
        );
        assert_eq!(c.mshrs_in_use(3), 1);
        // Another line still finds no MSHR.
        assert_eq!(c.read(6, 1, 4), Read::Stall);
        // The line's fill brings all three sectors and frees the MSHR.
        c.resolve(5, 1, 40);
        assert_eq!(c.next_fill_after(4), Some(40));
        assert_eq!(c.read(5, 0b0111, 40), Read::Hit);
        assert_eq!(c.mshrs_in_use(40), 0);
    }

    #[test]
    fn lru_eviction_and_sectors() {
        let mut c = Cache::new(small(2, false));
        for (i, l) in [0u64, 4, 8].iter().enumerate() {
            let r = c.read(*l, 1, i as u64 * 10);
            c.set_fill(*l, i as u64 * 10 + 1, 0);
            if i == 2 {
                assert_eq!(
                    r,
                    Read::Miss {
                        fetch: 1,
                        evicted: Some((0, 0))
                    }
                );
            }
        }
        // Line 4 present with sector 0 only: sector 1 is a miss for that sector alone.
        assert_eq!(
            c.read(4, 0b11, 100),
            Read::Miss {
                fetch: 0b10,
                evicted: None
            }
        );
    }

    #[test]
    fn write_back_allocates_dirty_and_reports_eviction() {
        let mut c = Cache::new(small(1, true));
        assert_eq!(
            c.write(0, 0b1, 0),
            Write::Absorbed {
                evicted: None,
                present: 0
            }
        );
        assert_eq!(
            c.write(4, 0b10, 1),
            Write::Absorbed {
                evicted: Some((0, 0b1)),
                present: 0
            }
        );
        assert_eq!(c.read(4, 0b10, 2), Read::Hit);
        // Rewriting a valid sector is a hit; a new sector of a present line is not.
        assert_eq!(
            c.write(4, 0b110, 2),
            Write::Absorbed {
                evicted: None,
                present: 0b10
            }
        );
        assert_eq!(c.flush(3), vec![(4, 0b110)]);
    }

    /// The indexed path (more than 32 ways) behaves like the scanned one: LRU order,
    /// pending ways never evicted, flush keeps fills in flight.
    #[test]
    fn highly_associative_cache_is_lru() {
        let mut c = Cache::new(CacheConfig {
            sets: 1,
            ways: 64,
            ..small(1, true)
        });
        for l in 0..64u64 {
            assert_eq!(
                c.write(l, 1, l),
                Write::Absorbed {
                    evicted: None,
                    present: 0
                }
            );
        }
        // Touch line 0 so line 1 is the LRU.
        assert_eq!(c.read(0, 1, 100), Read::Hit);
        assert_eq!(
            c.write(99, 1, 101),
            Write::Absorbed {
                evicted: Some((1, 1)),
                present: 0
            }
        );
        assert!(matches!(
            c.read(500, 0b10, 102),
            Read::Miss {
                evicted: Some((2, 1)),
                ..
            }
        ));
        // The pending line survives a flush; the rest is gone.
        c.flush(103);
        assert!(matches!(c.read(500, 0b10, 104), Read::Merged { .. }));
        assert!(matches!(
            c.read(0, 1, 105),
            Read::Miss { evicted: None, .. }
        ));
    }

    /// The replacement keys kept beside the ways always match the ways' state, so the
    /// victim scan over the keys picks what a scan of the ways themselves picks (an empty
    /// way first, else the least recently used, never one with a fetch in flight), through
    /// random reads, writes, fills, resolutions and flushes.
    #[test]
    fn replacement_keys_track_the_ways() {
        fn scan(c: &Cache, base: usize) -> Option<usize> {
            let ways = c.cfg.ways as usize;
            let mut best: Option<(u64, usize)> = None;
            for (i, w) in c.ways[base..base + ways].iter().enumerate() {
                let key = ((w.tag != 0) as u64) << 63 | w.stamp;
                if w.pend == 0 && best.is_none_or(|b| key < b.0) {
                    best = Some((key, base + i));
                }
            }
            best.map(|b| b.1)
        }
        for write_back in [true, false] {
            let mut c = Cache::new(CacheConfig {
                ways: 8,
                mshrs: 12,
                ..small(8, write_back)
            });
            let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1d);
            let mut now = 0u64;
            for step in 0..20_000 {
                let x = rng.next_u64();
                now += x % 3;
                let line = (x >> 8) % 48;
                let sectors = 1 + ((x >> 16) % 15) as u8;
                match (x >> 24) % 16 {
                    0..=6 => {
                        c.read(line, sectors, now);
                    }
                    7..=10 => {
                        c.write(line, sectors, now);
                    }
                    11..=12 => c.set_fill(line, now + (x >> 32) % 200, 0),
                    13 => c.set_fill(line, UNKNOWN, (x >> 40) as u32 % 4),
                    14 => c.resolve(line, (x >> 40) as u32 % 4, now + (x >> 32) % 50),
                    _ => {
                        if step % 64 == 0 {
                            c.flush(now);
                        }
                    }
                }
                for (i, w) in c.ways.iter().enumerate() {
                    let want = if w.pend != 0 {
                        u64::MAX
                    } else {
                        ((w.tag != 0) as u64) << 63 | w.stamp
                    };
                    assert_eq!(c.keys[i], want, "way {i} after step {step}");
                }
                for set in 0..4 {
                    let base = set * 8;
                    assert_eq!(
                        c.victim(base),
                        scan(&c, base),
                        "set {set} after step {step}"
                    );
                }
            }
        }
    }

    #[test]
    fn write_through_sends_down() {
        let mut c = Cache::new(small(1, false));
        assert_eq!(c.write(0, 1, 0), Write::Through);
        assert_eq!(c.stats.misses, 1);
    }
}

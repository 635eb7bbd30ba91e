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
//!
//! Lookup and replacement live in `index`: a fingerprint scan and a linked LRU list per
//! set for ordinary associativity, a hash index for the highly associative unified L1.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

mod index;

use index::Index;

/// Fill time not known yet (the data is still in DRAM).
pub const UNKNOWN: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetIndex {
    /// `line % sets`.
    Linear,
    /// XOR of the line-address bit fields folded onto the index (spreads power-of-two
    /// strides).
    Xor,
    /// GPGPU-Sim's IPoly hash of the line address ([`crate::mem::ipoly`]); needs a
    /// power-of-two set count up to 256 (the model's validation checks it).
    Ipoly,
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
    /// An L2 slice sees only the lines its channel and slice were chosen for: with
    /// `(lines, parts)`, the set index is computed on the line address with that choice
    /// removed (chunks of `lines` lines, dealt over `parts` slices), as GPGPU-Sim indexes
    /// the L2 with the partition bits taken out. Otherwise the hash of the channel choice
    /// and that of the set index would be correlated and a slice would use few of its sets.
    pub strip: Option<(u32, u32)>,
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

/// Why a read stalled (see [`Cache::last_stall`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// No MSHR free, or its line's fetch has all its merged requests and a known time.
    Other,
    /// Its line, in this way, awaits a fetch of no known time that has all its merged
    /// requests.
    UnknownFill(u32),
    /// Every way of this set awaits a fetch.
    FullSet(u32),
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
    /// The access clock at the way's last touch (0 while empty).
    stamp: u64,
}

pub struct Cache {
    cfg: CacheConfig,
    ways: Vec<Way>,
    /// Sets (`cfg.sets`, at least 1), and whether that is a power of two.
    sets: u64,
    sets_pow2: bool,
    /// Width of the address fields that [`SetIndex::Xor`] folds onto the set index.
    fold_bits: u32,
    /// The IPoly hash onto the sets ([`SetIndex::Ipoly`]).
    ipoly: Option<crate::mem::ipoly::Ipoly>,
    /// Counts accesses; a touched way is stamped with it.
    clock: u64,
    /// Lines with a fetch in flight.
    outstanding: u32,
    /// Known fill times of in-flight fetches: (time, way index). A way's fetch stays in
    /// flight until its entry is taken (its way can be neither evicted nor refilled
    /// meanwhile), so the entries taken at one time can be retired in any order.
    known: BinaryHeap<Reverse<(u64, u32)>>,
    /// Why the last read that stalled stalled (see [`Cache::stalled_on_unknown`]).
    last_stall: Stall,
    /// Finds a line's way and chooses victims (see [`index`]).
    index: Index,
    /// The way of the last read miss, which the caller's `set_fill` names next: tried
    /// before a lookup (a line is in one way at most, so a way whose tag matches is the
    /// answer).
    last_miss: usize,
    /// No line has been installed since the cache was made or last flushed: a flush has
    /// nothing to do (kernels that relaunch every few cycles flush every L1 each time).
    clean: bool,
    pub stats: CacheStats,
}

impl Cache {
    pub fn new(cfg: CacheConfig) -> Cache {
        let sets = cfg.sets.max(1) as u64;
        let assoc = cfg.ways.max(1) as usize;
        Cache {
            ways: vec![Way::default(); sets as usize * assoc],
            sets,
            sets_pow2: sets.is_power_of_two(),
            fold_bits: (64 - (sets - 1).leading_zeros()).max(1),
            ipoly: match cfg.index {
                SetIndex::Ipoly => crate::mem::ipoly::Ipoly::new(sets),
                _ => None,
            },
            cfg,
            clock: 0,
            outstanding: 0,
            known: BinaryHeap::new(),
            last_stall: Stall::Other,
            index: Index::new(sets as usize, assoc),
            last_miss: 0,
            clean: true,
            stats: CacheStats::default(),
        }
    }

    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    #[inline]
    fn set_of(&self, line: u64) -> usize {
        let line = match self.cfg.strip {
            None => line,
            Some((lines, parts)) => {
                let (lines, parts) = (lines.max(1) as u64, parts.max(1) as u64);
                line / lines / parts * lines + line % lines
            }
        };
        let idx = match self.cfg.index {
            SetIndex::Linear => line,
            SetIndex::Xor => xor_fold(line, self.fold_bits),
            SetIndex::Ipoly => match &self.ipoly {
                Some(h) => return h.hash(line) as usize,
                None => xor_fold(line, self.fold_bits),
            },
        };
        if self.sets_pow2 {
            (idx & (self.sets - 1)) as usize
        } else {
            (idx % self.sets) as usize
        }
    }

    /// `line`'s set and, if present, its way.
    #[inline(always)]
    fn find(&self, line: u64) -> (usize, Option<usize>) {
        let set = self.set_of(line);
        let tag = line + 1;
        let hit = match &self.index {
            Index::Scan(s) => s.find(&self.ways, set, tag),
            Index::Big(b) => b.find(tag),
        };
        (set, hit)
    }

    /// Retires every fetch whose data has arrived by `now`.
    #[inline]
    fn retire(&mut self, now: u64) {
        if self.known.peek().is_some_and(|Reverse((t, _))| *t <= now) {
            self.retire_due(now);
        }
    }

    fn retire_due(&mut self, now: u64) {
        while let Some(&Reverse((t, i))) = self.known.peek() {
            if t > now {
                break;
            }
            self.known.pop();
            let w = &mut self.ways[i as usize];
            if w.pend != 0 && w.pend_ready == t {
                w.valid |= w.pend;
                w.pend = 0;
                w.merged = 0;
                self.outstanding -= 1;
            }
        }
    }

    /// The first known fill time after `t` (when a stalled access can next succeed), if
    /// any fetch in flight has a known time.
    pub fn next_fill_after(&self, t: u64) -> Option<u64> {
        // (A read at `t` retired every fill up to `t`, so the heap's minimum is later.)
        self.known
            .peek()
            .map(|Reverse((k, _))| *k)
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
        let (set, hit) = self.find(line);
        if let Some(i) = hit {
            let merge_limit = self.cfg.mshr_merge as u16;
            self.touch(set, i);
            let w = &mut self.ways[i];
            if w.valid & sectors == sectors {
                self.stats.hits += 1;
                return Read::Hit;
            }
            if (w.valid | w.pend) & sectors == sectors {
                if w.merged >= merge_limit {
                    self.stats.stalls += 1;
                    self.last_stall = if w.pend_ready == UNKNOWN {
                        Stall::UnknownFill(i as u32)
                    } else {
                        Stall::Other
                    };
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
                    self.last_stall = Stall::Other;
                    return Read::Stall;
                }
                self.outstanding += 1;
                w.pend_ready = UNKNOWN;
                w.merged = 0;
            }
            w.pend |= fetch;
            self.last_miss = i;
            self.stats.misses += 1;
            return Read::Miss {
                fetch,
                evicted: None,
            };
        }
        if self.outstanding >= self.cfg.mshrs {
            self.stats.stalls += 1;
            self.last_stall = Stall::Other;
            return Read::Stall;
        }
        let Some(v) = self.victim(set) else {
            self.stats.stalls += 1;
            self.last_stall = Stall::FullSet(set as u32);
            return Read::Stall;
        };
        let evicted = self.evict(v);
        self.install(
            set,
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
        self.last_miss = v;
        self.stats.misses += 1;
        Read::Miss {
            fetch: sectors,
            evicted,
        }
    }

    /// Marks way `i` of `set` most recently used.
    #[inline]
    fn touch(&mut self, set: usize, i: usize) {
        self.ways[i].stamp = self.clock;
        match &mut self.index {
            Index::Scan(s) => s.touch(set, i),
            Index::Big(b) => b.touch(&self.ways, set, i, self.clock),
        }
    }

    /// Installs a line in victim way `v` of `set` (already evicted) and indexes it.
    fn install(&mut self, set: usize, v: usize, way: Way) {
        match &mut self.index {
            Index::Scan(s) => s.install(set, v, way.tag),
            Index::Big(b) => b.install(v, self.ways[v].tag, way.tag),
        }
        self.ways[v] = way;
        self.clean = false;
        self.touch(set, v);
    }

    #[inline]
    fn victim(&mut self, set: usize) -> Option<usize> {
        match &mut self.index {
            Index::Scan(s) => s.victim(&self.ways, set),
            Index::Big(b) => b.victim(&self.ways, set),
        }
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
        let (set, hit) = self.find(line);
        if !self.cfg.write_back {
            if let Some(i) = hit {
                self.ways[i].valid |= sectors;
                self.touch(set, i);
            }
            self.stats.misses += 1;
            return Write::Through;
        }
        if let Some(i) = hit {
            self.touch(set, i);
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
        let evicted = match self.victim(set) {
            Some(v) => {
                let e = self.evict(v);
                self.install(
                    set,
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

    /// `line`'s way, trying way `hint` first.
    #[inline]
    fn find_from(&self, hint: usize, line: u64) -> Option<usize> {
        if self.ways.get(hint).is_some_and(|w| w.tag == line + 1) {
            Some(hint)
        } else {
            self.find(line).1
        }
    }

    /// Records when the fetch started by the last `Miss` of `line` completes (`ready`), or
    /// ([`UNKNOWN`]) the caller's `tag` to resolve it later.
    pub fn set_fill(&mut self, line: u64, ready: u64, tag: u32) {
        if let Some(i) = self.find_from(self.last_miss, line) {
            let w = &mut self.ways[i];
            if w.pend != 0 && w.pend_ready == UNKNOWN {
                w.pend_ready = ready;
                w.pend_tag = tag;
                if ready != UNKNOWN {
                    self.known.push(Reverse((ready, i as u32)));
                }
            }
        }
    }

    /// The fetch of `line` registered under `tag` completes at `ready`.
    pub fn resolve(&mut self, line: u64, tag: u32, ready: u64) {
        if let Some(i) = self.find(line).1 {
            let w = &mut self.ways[i];
            if w.pend != 0 && w.pend_ready == UNKNOWN && w.pend_tag == tag {
                w.pend_ready = ready;
                self.known.push(Reverse((ready, i as u32)));
            }
        }
    }

    /// Whether every way of `set` awaits a fetch whose time is not known yet.
    fn set_awaits_unknown(&self, set: usize) -> bool {
        let assoc = self.cfg.ways.max(1) as usize;
        self.ways[set * assoc..(set + 1) * assoc]
            .iter()
            .all(|w| w.pend != 0 && w.pend_ready == UNKNOWN)
    }

    /// Whether the last read that stalled stalls until a fetch whose time is not known yet
    /// is resolved (retrying it at a known fill time changes nothing but retirement): its
    /// line's fetch has all its merged requests, or every way of its set awaits such a
    /// fetch.
    #[inline]
    pub fn stalled_on_unknown(&self) -> bool {
        match self.last_stall {
            Stall::Other => false,
            Stall::UnknownFill(_) => true,
            Stall::FullSet(set) => self.set_awaits_unknown(set as usize),
        }
    }

    /// Why the last read that stalled stalled.
    #[inline]
    pub fn last_stall(&self) -> Stall {
        self.last_stall
    }

    /// Whether a read of `sectors` of `line`, whose last read stalled as `stall`, would
    /// stall again now until a fetch of unknown time resolves, touching nothing but its
    /// own way, which is already its set's most recently touched (so that the read, and
    /// its retries at known fill times, change nothing but retirement).
    pub fn stalls_again(&self, stall: Stall, line: u64, sectors: u8) -> bool {
        match stall {
            Stall::Other => false,
            Stall::UnknownFill(i) => {
                let w = &self.ways[i as usize];
                let Index::Scan(scan) = &self.index else {
                    return false;
                };
                w.tag == line + 1
                    && w.pend != 0
                    && w.pend_ready == UNKNOWN
                    && w.merged >= self.cfg.mshr_merge as u16
                    && w.valid & sectors != sectors
                    && scan.is_last(i as usize / scan.assoc(), i as usize)
            }
            Stall::FullSet(set) => self.set_awaits_unknown(set as usize),
        }
    }

    /// What retrying a read that stalled at `t` on a fetch of unknown time
    /// ([`Cache::stalled_on_unknown`]) at every later known fill time
    /// ([`Cache::next_fill_after`]) until there is none leaves: every fill up to the last of
    /// those times retired. Returns that last time (`None`: no known fill after `t`). (The
    /// retries are not counted in [`Cache::stats`].)
    pub fn stall_through_known(&mut self, t: u64) -> Option<u64> {
        let last = self.known.iter().map(|r| r.0 .0).max().filter(|&k| k > t);
        self.retire(last.unwrap_or(t));
        last
    }

    /// Drops every line at `now` (the L1 is flushed at kernel end); dirty sectors are
    /// returned. Lines whose fetch is still in flight stay (their fill is awaited).
    pub fn flush(&mut self, now: u64) -> Vec<(u64, u8)> {
        if self.clean {
            return Vec::new();
        }
        self.retire(now);
        let mut wb = Vec::new();
        for w in &mut self.ways {
            if w.tag != 0 && w.dirty != 0 {
                wb.push((w.tag - 1, w.dirty));
                self.stats.writebacks += 1;
            }
            if w.pend == 0 {
                *w = Way::default();
            } else {
                w.valid = 0;
                w.dirty = 0;
            }
        }
        self.index.rebuild(&self.ways);
        // Lines still awaiting their fill keep their way (invalid); the next flush must
        // look at them again.
        self.clean = self.outstanding == 0;
        wb
    }
}

/// The XOR of `line`'s `bits`-wide fields (`bits` < 64): each step folds the value onto
/// itself at twice the previous distance, so the low field accumulates every field in
/// log2(64 / bits) steps.
#[inline]
fn xor_fold(line: u64, bits: u32) -> u64 {
    let mut x = line;
    let mut s = bits;
    while s < 64 {
        x ^= x >> s;
        s *= 2;
    }
    x & ((1u64 << bits) - 1)
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
            strip: None,
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

    /// A read stalled on fetches of unknown time: `stall_through_known` leaves what
    /// retrying it at every later known fill time leaves, and `stalls_again` holds until
    /// the fetch it waits on is resolved.
    #[test]
    fn stalls_on_unknown_fills_skip_their_retries() {
        let cfg = CacheConfig {
            mshrs: 8,
            ..small(2, false)
        };
        let build = || {
            let mut c = Cache::new(cfg);
            // Set 0: both ways await fetches of unknown time; set 1: fills at 100 and 200.
            for (line, ready, tag) in [(0, UNKNOWN, 1), (4, UNKNOWN, 2), (1, 100, 0), (5, 200, 0)] {
                assert!(matches!(c.read(line, 1, 0), Read::Miss { .. }));
                c.set_fill(line, ready, tag);
            }
            assert_eq!(c.read(8, 1, 10), Read::Stall);
            assert!(c.stalled_on_unknown());
            c
        };
        let mut stepped = build();
        let mut t = 10;
        while let Some(next) = stepped.next_fill_after(t) {
            t = next;
            assert_eq!(stepped.read(8, 1, t), Read::Stall);
        }
        let mut skipped = build();
        assert_eq!(skipped.stall_through_known(10), Some(t));
        assert_eq!(t, 200);
        assert_eq!(skipped.mshrs_in_use(0), stepped.mshrs_in_use(0));
        assert_eq!(skipped.read(1, 1, 0), stepped.read(1, 1, 0));
        assert_eq!(skipped.next_fill_after(0), None);

        let mut c = build();
        let full_set = c.last_stall();
        assert!(c.stalls_again(full_set, 8, 1));
        // Line 0's fetch takes two merged requests; a third stalls on its unknown time.
        assert!(matches!(c.read(0, 1, 20), Read::Merged { .. }));
        assert!(matches!(c.read(0, 1, 21), Read::Merged { .. }));
        assert_eq!(c.read(0, 1, 22), Read::Stall);
        let merge_limit = c.last_stall();
        assert!(c.stalled_on_unknown() && c.stalls_again(merge_limit, 0, 1));
        // Another way of the set touched: the retry would move line 0 back to the tail.
        assert!(matches!(c.read(4, 1, 23), Read::Merged { .. }));
        assert!(!c.stalls_again(merge_limit, 0, 1));
        assert_eq!(c.read(0, 1, 24), Read::Stall);
        assert!(c.stalls_again(merge_limit, 0, 1));
        c.resolve(0, 1, 500);
        assert!(!c.stalls_again(merge_limit, 0, 1));
        assert!(!c.stalls_again(full_set, 8, 1));
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

    /// The replacement lists and the fingerprint index always agree with the ways' state:
    /// the victim is what a scan of the ways themselves picks (an empty way first, else the
    /// least recently used, never one with a fetch in flight) and a lookup finds what a
    /// scan of the tags finds, through random reads, writes, fills, resolutions and
    /// flushes.
    #[test]
    fn index_tracks_the_ways() {
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
        for (ways, write_back) in [(8, true), (8, false), (6, true), (13, false)] {
            let mut c = Cache::new(CacheConfig {
                ways,
                mshrs: 12,
                ..small(ways, write_back)
            });
            let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1d);
            let mut now = 0u64;
            for step in 0..20_000 {
                let x = rng.next_u64();
                now += x % 3;
                let line = (x >> 8) % (6 * ways as u64);
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
                c.index.check(&c.ways);
                for set in 0..4 {
                    let base = set * ways as usize;
                    assert_eq!(c.victim(set), scan(&c, base), "set {set} after step {step}");
                }
                for l in 0..6 * ways as u64 {
                    let want = c.ways.iter().position(|w| w.tag == l + 1);
                    assert_eq!(c.find(l).1, want, "line {l} after step {step}");
                }
            }
        }
    }

    /// The doubling XOR fold equals the field-by-field fold it replaces.
    #[test]
    fn xor_fold_matches_field_by_field() {
        fn plain(line: u64, bits: u32) -> u64 {
            let (mut x, mut l) = (0, line);
            while l != 0 {
                x ^= l & ((1u64 << bits) - 1);
                l >>= bits;
            }
            x
        }
        let mut rng = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let line = rng.next_u64() >> (rng.next_u64() % 64);
            for bits in 1..=32 {
                assert_eq!(xor_fold(line, bits), plain(line, bits), "{line:#x} {bits}");
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

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

/// A line, and the address its set index is computed on (the L2 passes the line's
/// offset within its slice, [`crate::mem::map::Location::part`], in lines; a plain line
/// number is its own key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    pub line: u64,
    pub key: u64,
}

impl From<u64> for At {
    #[inline(always)]
    fn from(line: u64) -> At {
        At { line, key: line }
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

/// Bytes a cache of `sets` x `ways` lines holds: each way's state and its index entry
/// (fingerprint and list links, or for highly associative sets a tag-map entry, a free-list
/// slot and an LRU entry), for the memory estimate made before an engine is built.
pub fn state_bytes(sets: u64, ways: u64) -> u64 {
    let per_way = std::mem::size_of::<Way>() as u64
        + if ways > index::BIG_WAYS as u64 {
            // FxHashMap entry (u64, u32) with its control byte at load ~7/8, a u32 free
            // slot, an LRU (u32, u64) entry.
            24 + 4 + 16
        } else {
            3
        };
    sets * ways * per_way
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
    /// MSHR entries in use: lines with a fetch in flight, or their sectors with
    /// [`Cache::set_sector_mshrs`].
    outstanding: u32,
    /// An MSHR entry per sector fetched (GPGPU-Sim's sectored caches), not per line.
    sector_mshrs: bool,
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
            sector_mshrs: false,
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

    /// Counts an MSHR entry per sector fetched instead of one per line (`mshrs` then
    /// bounds the sectors in flight, as GPGPU-Sim's `mshr_addr` on a sectored cache does).
    pub fn set_sector_mshrs(&mut self, on: bool) {
        self.sector_mshrs = on;
    }

    /// MSHR entries a fetch of `sectors` takes.
    #[inline(always)]
    fn mshr_cost(&self, sectors: u8) -> u32 {
        if self.sector_mshrs {
            sectors.count_ones().max(1)
        } else {
            1
        }
    }

    /// Whether a fetch of `sectors` would find too few MSHR entries free at `now`.
    pub fn mshrs_short(&mut self, now: u64, sectors: u8) -> bool {
        self.retire(now);
        self.outstanding + self.mshr_cost(sectors) > self.cfg.mshrs
    }

    #[inline]
    fn set_of(&self, key: u64) -> usize {
        let line = match self.cfg.strip {
            None => key,
            Some((lines, parts)) => {
                let (lines, parts) = (lines.max(1) as u64, parts.max(1) as u64);
                key / lines / parts * lines + key % lines
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

    /// `line`'s set (from `key`, see [`At`]) and, if present, its way.
    #[inline(always)]
    fn find(&self, line: u64, key: u64) -> (usize, Option<usize>) {
        let set = self.set_of(key);
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
                let cost = if self.sector_mshrs {
                    w.pend.count_ones().max(1)
                } else {
                    1
                };
                w.valid |= w.pend;
                w.pend = 0;
                w.merged = 0;
                self.outstanding -= cost;
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
    pub fn read(&mut self, at: impl Into<At>, sectors: u8, now: u64) -> Read {
        let At { line, key } = at.into();
        self.retire(now);
        self.stats.accesses += 1;
        self.clock += 1;
        let (set, hit) = self.find(line, key);
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
            let cost = if self.sector_mshrs {
                fetch.count_ones().max(1)
            } else {
                1
            };
            let w = &mut self.ways[i];
            if w.pend == 0 || self.sector_mshrs {
                if self.outstanding + cost > self.cfg.mshrs {
                    self.stats.stalls += 1;
                    self.last_stall = Stall::Other;
                    return Read::Stall;
                }
                self.outstanding += cost;
            }
            let w = &mut self.ways[i];
            if w.pend == 0 {
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
        let cost = self.mshr_cost(sectors);
        if self.outstanding + cost > self.cfg.mshrs {
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
        self.outstanding += cost;
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
    pub fn write(&mut self, at: impl Into<At>, sectors: u8, now: u64) -> Write {
        let At { line, key } = at.into();
        self.retire(now);
        self.stats.accesses += 1;
        self.clock += 1;
        let (set, hit) = self.find(line, key);
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
    fn find_from(&self, hint: usize, line: u64, key: u64) -> Option<usize> {
        if self.ways.get(hint).is_some_and(|w| w.tag == line + 1) {
            Some(hint)
        } else {
            self.find(line, key).1
        }
    }

    /// Records when the fetch started by the last `Miss` of `line` completes (`ready`), or
    /// ([`UNKNOWN`]) the caller's `tag` to resolve it later.
    pub fn set_fill(&mut self, at: impl Into<At>, ready: u64, tag: u32) {
        let At { line, key } = at.into();
        if let Some(i) = self.find_from(self.last_miss, line, key) {
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
    pub fn resolve(&mut self, at: impl Into<At>, tag: u32, ready: u64) {
        let At { line, key } = at.into();
        if let Some(i) = self.find(line, key).1 {
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
mod tests;

//! A sectored, set-associative, LRU cache with MSHRs: the state machine behind the L1D and
//! the L2 slices. It decides hit / miss / merge / stall and what to evict; the caller owns
//! time (it sends misses down and calls [`Cache::fill`] when data returns).
//!
//! Lines are `line_bytes` long and split into sectors; validity and dirtiness are kept per
//! sector. A miss allocates the line (evicting the LRU way) and an MSHR that later accesses
//! to the same line merge into, up to `mshr_merge` requests each.

use rustc_hash::FxHashMap;

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
    pub mshrs: u32,
    pub mshr_merge: u32,
    pub index: SetIndex,
    /// Write-back (L2) keeps dirty sectors; write-through (L1) sends every write down.
    pub write_back: bool,
    /// Allocate a line on a write miss.
    pub write_allocate: bool,
}

impl CacheConfig {
    pub fn sectors_per_line(&self) -> u32 {
        (self.line_bytes / self.sector_bytes).clamp(1, 8)
    }
    pub fn capacity(&self) -> u64 {
        self.sets as u64 * self.ways as u64 * self.line_bytes as u64
    }
}

/// What an access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every requested sector present.
    Hit,
    /// Sent down: `sectors` must be fetched for `line`. `evicted` is a line pushed out, with
    /// its dirty sectors (write-back caches only write those back).
    Miss {
        sectors: u8,
        evicted: Option<(u64, u8)>,
    },
    /// Merged into an outstanding miss of the same line; completes with its fill.
    Merged,
    /// No MSHR (or merge slot) free: retry later.
    Stall,
    /// A write that goes down without allocating (write-through / no-allocate).
    WriteThrough,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
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
    line: u64,
    valid: u8,
    dirty: u8,
    /// LRU stamp (larger = more recent); 0 = empty.
    stamp: u64,
}

#[derive(Clone, Copy, Debug)]
struct Mshr {
    pending: u8,
    merged: u32,
}

pub struct Cache {
    cfg: CacheConfig,
    ways: Vec<Way>,
    clock: u64,
    mshrs: FxHashMap<u64, Mshr>,
    pub stats: CacheStats,
}

impl Cache {
    pub fn new(cfg: CacheConfig) -> Cache {
        Cache {
            ways: vec![Way::default(); (cfg.sets.max(1) * cfg.ways.max(1)) as usize],
            cfg,
            clock: 0,
            mshrs: FxHashMap::default(),
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
                let bits = 64 - (sets - 1).leading_zeros().min(63);
                let mut x = 0;
                let mut l = line;
                while l != 0 {
                    x ^= l & ((1 << bits) - 1);
                    l >>= bits.max(1);
                }
                x
            }
        };
        (idx % sets) as usize
    }

    fn find(&self, line: u64) -> (usize, Option<usize>) {
        let set = self.set_of(line);
        let w = self.cfg.ways.max(1) as usize;
        let base = set * w;
        let hit = (base..base + w).find(|&i| self.ways[i].stamp != 0 && self.ways[i].line == line);
        (base, hit)
    }

    /// Outstanding misses.
    pub fn mshrs_in_use(&self) -> usize {
        self.mshrs.len()
    }

    /// Looks up `sectors` (bit i = sector i) of `line` (address / line_bytes).
    pub fn access(&mut self, line: u64, sectors: u8, is_write: bool) -> Outcome {
        self.stats.accesses += 1;
        self.clock += 1;
        let (base, hit) = self.find(line);
        if is_write && !self.cfg.write_allocate {
            // Write-through, no allocate: update a present line, send the write down.
            if let Some(i) = hit {
                self.ways[i].stamp = self.clock;
                self.ways[i].valid |= sectors;
            }
            self.stats.misses += 1;
            return Outcome::WriteThrough;
        }
        if let Some(i) = hit {
            let present = self.ways[i].valid & sectors;
            if is_write {
                // Writes need no fetch: the written sectors become valid (and dirty).
                self.ways[i].valid |= sectors;
                if self.cfg.write_back {
                    self.ways[i].dirty |= sectors;
                }
                self.ways[i].stamp = self.clock;
                self.stats.hits += 1;
                return if self.cfg.write_back {
                    Outcome::Hit
                } else {
                    Outcome::WriteThrough
                };
            }
            if present == sectors {
                self.ways[i].stamp = self.clock;
                self.stats.hits += 1;
                return Outcome::Hit;
            }
        }
        if let Some(m) = self.mshrs.get_mut(&line) {
            if m.merged < self.cfg.mshr_merge && (m.pending & sectors) == sectors {
                m.merged += 1;
                self.stats.merged += 1;
                return Outcome::Merged;
            }
            self.stats.stalls += 1;
            return Outcome::Stall;
        }
        if self.mshrs.len() >= self.cfg.mshrs as usize {
            self.stats.stalls += 1;
            return Outcome::Stall;
        }
        self.stats.misses += 1;
        let (i, evicted) = match hit {
            Some(i) => (i, None),
            None => {
                let w = self.cfg.ways.max(1) as usize;
                // LRU victim among ways without an outstanding miss.
                let victim = (base..base + w)
                    .filter(|&i| {
                        self.ways[i].stamp == 0 || !self.mshrs.contains_key(&self.ways[i].line)
                    })
                    .min_by_key(|&i| self.ways[i].stamp);
                let Some(v) = victim else {
                    self.stats.misses -= 1;
                    self.stats.stalls += 1;
                    return Outcome::Stall;
                };
                let old = self.ways[v];
                let ev = (old.stamp != 0).then(|| {
                    self.stats.evictions += 1;
                    if old.dirty != 0 {
                        self.stats.writebacks += 1;
                    }
                    (old.line, old.dirty)
                });
                self.ways[v] = Way {
                    line,
                    valid: 0,
                    dirty: 0,
                    stamp: self.clock,
                };
                (v, ev)
            }
        };
        let missing = if is_write {
            0
        } else {
            sectors & !self.ways[i].valid
        };
        if is_write {
            self.ways[i].valid |= sectors;
            if self.cfg.write_back {
                self.ways[i].dirty |= sectors;
            }
        }
        self.ways[i].stamp = self.clock;
        if missing == 0 {
            return Outcome::Miss {
                sectors: 0,
                evicted,
            };
        }
        self.mshrs.insert(
            line,
            Mshr {
                pending: missing,
                merged: 0,
            },
        );
        Outcome::Miss {
            sectors: missing,
            evicted,
        }
    }

    /// Data for `line` arrived: its pending sectors become valid and the MSHR is freed.
    /// Returns how many merged requests complete with it.
    pub fn fill(&mut self, line: u64) -> u32 {
        let Some(m) = self.mshrs.remove(&line) else {
            return 0;
        };
        let (_, hit) = self.find(line);
        if let Some(i) = hit {
            self.ways[i].valid |= m.pending;
        }
        m.merged
    }

    /// Drops every line (the L1 is flushed at kernel end); dirty sectors are counted as
    /// write-backs and returned.
    pub fn flush(&mut self) -> Vec<(u64, u8)> {
        let mut wb = Vec::new();
        for w in &mut self.ways {
            if w.stamp != 0 && w.dirty != 0 {
                wb.push((w.line, w.dirty));
                self.stats.writebacks += 1;
            }
            *w = Way::default();
        }
        wb
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(ways: u32) -> CacheConfig {
        CacheConfig {
            sets: 4,
            ways,
            line_bytes: 128,
            sector_bytes: 32,
            mshrs: 4,
            mshr_merge: 2,
            index: SetIndex::Linear,
            write_back: true,
            write_allocate: true,
        }
    }

    #[test]
    fn miss_fill_hit_and_sectors() {
        let mut c = Cache::new(small(2));
        assert_eq!(
            c.access(10, 0b0001, false),
            Outcome::Miss {
                sectors: 0b0001,
                evicted: None
            }
        );
        assert_eq!(c.access(10, 0b0001, false), Outcome::Merged);
        assert_eq!(c.fill(10), 1);
        assert_eq!(c.access(10, 0b0001, false), Outcome::Hit);
        // Another sector of the same line is a sector miss that fetches only that sector.
        assert_eq!(
            c.access(10, 0b0110, false),
            Outcome::Miss {
                sectors: 0b0110,
                evicted: None
            }
        );
    }

    #[test]
    fn lru_eviction_order() {
        let mut c = Cache::new(small(2));
        // Lines 0, 4, 8 map to set 0 (4 sets, linear).
        for l in [0, 4] {
            c.access(l, 1, false);
            c.fill(l);
        }
        c.access(0, 1, false); // 0 is now most recent
        match c.access(8, 1, false) {
            Outcome::Miss {
                evicted: Some((4, 0)),
                ..
            } => {}
            o => panic!("expected line 4 evicted, got {o:?}"),
        }
    }

    #[test]
    fn mshr_limits_stall() {
        let mut c = Cache::new(small(8));
        for l in 0..4 {
            assert!(matches!(c.access(l, 1, false), Outcome::Miss { .. }));
        }
        assert_eq!(c.access(9, 1, false), Outcome::Stall);
        c.fill(0);
        assert!(matches!(c.access(9, 1, false), Outcome::Miss { .. }));
        // Merge limit: 2 merges then stall.
        assert_eq!(c.access(9, 1, false), Outcome::Merged);
        assert_eq!(c.access(9, 1, false), Outcome::Merged);
        assert_eq!(c.access(9, 1, false), Outcome::Stall);
    }

    #[test]
    fn write_back_dirty_lines() {
        let mut c = Cache::new(small(1));
        assert!(matches!(
            c.access(0, 0b1111, true),
            Outcome::Miss {
                sectors: 0,
                evicted: None
            }
        ));
        match c.access(4, 1, false) {
            Outcome::Miss {
                evicted: Some((0, 0b1111)),
                ..
            } => {}
            o => panic!("{o:?}"),
        }
        assert_eq!(c.stats.writebacks, 1);
        let mut wt = Cache::new(CacheConfig {
            write_back: false,
            write_allocate: false,
            ..small(1)
        });
        assert_eq!(wt.access(0, 1, true), Outcome::WriteThrough);
    }

    #[test]
    fn working_set_that_fits_hits_after_warmup() {
        let cfg = CacheConfig {
            sets: 64,
            ways: 4,
            mshrs: 1024,
            index: SetIndex::Xor,
            ..small(4)
        };
        let mut c = Cache::new(cfg);
        let lines = cfg.capacity() / 128;
        for round in 0..3 {
            for l in 0..lines {
                // A strided pattern: XOR indexing must still spread it over all sets.
                let line = l * 64;
                if let Outcome::Miss { .. } = c.access(line, 1, false) {
                    c.fill(line);
                }
            }
            if round == 0 {
                assert_eq!(c.stats.misses, lines);
            }
        }
        let rate = c.stats.hits as f64 / c.stats.accesses as f64;
        assert!(rate > 0.6, "hit rate {rate}");
    }
}

//! Address translation of global accesses (`[translation]` of the model): each SM's L1 TLB,
//! the shared L2 TLB and the page-table walkers of [`crate::mem::tlb`], wired into the
//! memory system. [`MemSys::translate`] runs first in `load`, `store` and `atomic`: it
//! returns when the access's translation is known, and the access is issued then.
//!
//! An L1 TLB hit adds `l1_latency`; a miss waits for its SM's miss port, which takes one
//! miss every `l1_miss_interval` cycles (the per-SM translation throughput measured on a
//! GH100, `reports/hw/`), then looks up the L2 TLB (`l2_latency` more); an L2
//! TLB miss walks the page table: `walk_levels` dependent reads of one sector each, sent
//! through the request crossbar to their L2 slice like any read (and to DRAM on an L2
//! miss), from a page-table region reserved per application whose addresses follow from
//! (application, virtual page): level `l` reads the 8-byte entry of the page's index at
//! that level (9 bits a level), so upper levels are shared by neighbouring pages. Walks in
//! flight are bounded by `walkers`; the walk's translation is installed in both TLBs at
//! once with the time it completes, so later misses to the same page wait for that walk
//! (they merge) instead of walking again. The walk's last read brings the entries of
//! `walk_fill` consecutive pages (the walked page's aligned group): all of them enter the L2
//! TLB with the walk's end, so a neighbour's miss waits for that walk instead of walking.
//! With `walk_cache`, the walkers keep every upper-level line they have read (with the
//! time it arrived): a later walk reads only the last level from memory.
//! A miss that finds no valid translation in the L2 TLB (it walks, or waits for a walk)
//! holds its SM's miss port `l2_miss_interval` cycles instead of `l1_miss_interval` (both
//! measured on a GH100, `reports/hw/README.md`, "Cold translation").
//!
//! A walk read that misses the L2 is sent to DRAM for real (its traffic and its L2 fill
//! are modelled), but the walk does not wait for that fill's scheduled time, which is not
//! known yet: its time is the unloaded L2-miss round trip (`miss_estimate`). Page tables
//! are a few hundred lines per application and stay in the L2, so only cold walks take
//! that estimate.

use super::*;
use crate::mem::tlb::{key, Tlb, Walkers};
use std::collections::HashMap;

/// Where the reserved page-table region starts (bytes; above any footprint a trace uses).
pub(super) const PT_BASE: u64 = 1 << 52;
/// Bytes of page-table address space per level.
const PT_LEVEL: u64 = 1 << 44;
/// Index bits per page-table level (4 KiB tables of 8-byte entries).
const LEVEL_BITS: u32 = 9;

/// The translation state of one run (absent when `translation.enabled = false`).
pub(super) struct Translation {
    /// log2 of the page size (a power of two).
    page_shift: u32,
    l1_lat: u64,
    l2_lat: u64,
    miss_interval: u64,
    /// Port hold of a miss without a valid L2 TLB translation (`l2_miss_interval`, or
    /// `miss_interval` when that is 0).
    cold_interval: u64,
    /// Pages one walk installs in the L2 TLB (`walk_fill`).
    fill: u64,
    /// `walk_cache`: the upper-level lines read so far and when each arrived (looked up by
    /// line only, never iterated, so the hash order cannot reach a result).
    upper: Option<HashMap<u64, u64>>,
    levels: u32,
    /// Core cycles a walk read that misses the L2 is charged (unloaded round trip).
    miss_estimate: u64,
    l1: Vec<Tlb>,
    l2: Tlb,
    walkers: Walkers,
    /// Per SM: the key last looked up in its L1 TLB and its ready time (the most recently
    /// used entry of its set: a repeat needs no lookup).
    last: Vec<(u64, u64)>,
    /// Per SM: when its L1 TLB miss port takes the next miss.
    port: Vec<u64>,
}

impl Translation {
    pub(super) fn new(spec: &GpuSpec, sms: usize, miss_estimate: u64) -> Option<Translation> {
        let t = &spec.translation;
        t.enabled.then(|| Translation {
            page_shift: t.page_size.0.max(1).trailing_zeros(),
            l1_lat: t.l1_latency.0,
            l2_lat: t.l2_latency.0,
            miss_interval: t.l1_miss_interval.0,
            cold_interval: if t.l2_miss_interval.0 == 0 {
                t.l1_miss_interval.0
            } else {
                t.l2_miss_interval.0
            },
            fill: t.walk_fill.max(1) as u64,
            upper: t.walk_cache.then(HashMap::new),
            levels: t.walk_levels.max(1),
            miss_estimate,
            l1: (0..sms)
                .map(|_| Tlb::new(t.l1_entries, t.l1_assoc))
                .collect(),
            l2: Tlb::new(t.l2_entries, t.l2_assoc),
            walkers: Walkers::new(t.walkers),
            last: vec![(u64::MAX, 0); sms],
            port: vec![0; sms],
        })
    }
}

impl MemSys {
    /// When the translation of `app`'s `line`, accessed by `sm` at `t`, is known: the time
    /// the access is issued to the L1/L2 (`t` itself without translation).
    #[inline]
    pub(super) fn translate(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let Some(tr) = self.tlb.as_mut() else {
            return t;
        };
        let k = key(app, (line * self.line_bytes) >> tr.page_shift);
        ctr.tlb_l1_accesses += 1;
        let (lk, ready) = tr.last[sm];
        if lk == k {
            return (t + tr.l1_lat).max(ready);
        }
        if let Some(ready) = tr.l1[sm].lookup(k) {
            tr.last[sm] = (k, ready);
            return (t + tr.l1_lat).max(ready);
        }
        self.translate_miss(sm, app, k, t, ctr)
    }

    /// An L1 TLB miss: the L2 TLB, and a walk when it misses too.
    fn translate_miss(&mut self, sm: usize, app: usize, k: u64, t: u64, ctr: &mut Counters) -> u64 {
        let tr = self.tlb.as_mut().expect("translation on");
        ctr.tlb_l1_misses += 1;
        ctr.tlb_l2_accesses += 1;
        let start = (t + tr.l1_lat).max(tr.port[sm]);
        let at_l2 = start + tr.l2_lat;
        let (ready, valid) = match tr.l2.lookup(k) {
            Some(r) => (at_l2.max(r), r <= at_l2),
            None => {
                ctr.tlb_l2_misses += 1;
                ctr.walks += 1;
                let (w, start) = tr.walkers.begin(at_l2);
                let vpage = k & ((1 << 48) - 1);
                let end = self.walk(sm, app, vpage, start, ctr);
                let tr = self.tlb.as_mut().expect("translation on");
                tr.walkers.finish(w, end);
                // The walked page's group arrives with its last read; the walked page goes
                // in last, the most recently used of them.
                let first = vpage / tr.fill * tr.fill;
                for p in (first..first + tr.fill).filter(|&p| p != vpage) {
                    let kp = key(app, p);
                    if !tr.l2.contains(kp) {
                        tr.l2.insert(kp, end);
                    }
                }
                tr.l2.insert(k, end);
                (end, false)
            }
        };
        let tr = self.tlb.as_mut().expect("translation on");
        tr.port[sm] = start
            + if valid {
                tr.miss_interval
            } else {
                tr.cold_interval
            };
        tr.l1[sm].insert(k, ready);
        tr.last[sm] = (k, ready);
        ready
    }

    /// The page-table reads of a walk of `app`'s `vpage` started at `t` by `sm`'s request;
    /// returns when the last one is back.
    fn walk(&mut self, sm: usize, app: usize, vpage: u64, t: u64, ctr: &mut Counters) -> u64 {
        // (The walk cache is taken out for the walk: its reads do not translate.)
        let (levels, estimate, mut upper) = {
            let tr = self.tlb.as_mut().expect("translation on");
            (tr.levels, tr.miss_estimate, tr.upper.take())
        };
        let mut now = t;
        for l in 0..levels {
            let line = self.pt_line(vpage, l, levels);
            let cached = upper.as_mut().filter(|_| l + 1 < levels);
            if let Some(&ready) = cached.as_ref().and_then(|u| u.get(&line)) {
                now = now.max(ready);
                continue;
            }
            now = match self.fetch(sm, app, line, 1, now, Atomic::NONE, false, false, ctr) {
                Ok(ready) => ready,
                // Waits on DRAM: the unloaded round trip (see the module doc).
                Err(_) => now + estimate,
            };
            if let Some(u) = cached {
                u.insert(line, now);
            }
        }
        self.tlb.as_mut().expect("translation on").upper = upper;
        now
    }

    /// The line holding level `l`'s entry (of `levels`, the root first) for `vpage`.
    fn pt_line(&self, vpage: u64, l: u32, levels: u32) -> u64 {
        let shift = LEVEL_BITS * (levels - 1 - l);
        let index = if shift >= 64 { 0 } else { vpage >> shift };
        (PT_BASE + l as u64 * PT_LEVEL + index * 8) / self.line_bytes
    }

    /// Drops every TLB's translation of `app`'s page holding byte `addr` (its mapping
    /// changed: the next access walks).
    pub(super) fn shoot_down(&mut self, app: usize, addr: u64) {
        let Some(tr) = self.tlb.as_mut() else {
            return;
        };
        let k = key(app, addr >> tr.page_shift);
        tr.l2.invalidate(k);
        for l1 in &mut tr.l1 {
            l1.invalidate(k);
        }
        for last in &mut tr.last {
            if last.0 == k {
                *last = (u64::MAX, 0);
            }
        }
    }
}
